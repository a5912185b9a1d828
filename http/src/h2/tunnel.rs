//! A stream that carries another protocol after an extended CONNECT (RFC
//! 8441): a WebSocket over HTTP/2 is relayed to an HTTP/1.1 upstream as
//! its bytes, the client's side read from DATA frames and written into
//! them, within the stream's windows as any body is.

use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::task::Poll;

use bytes::BytesMut;

use super::wire::Wire;
use super::Conn;

pub struct Tunnel {
    conn: Rc<Conn>,
    key: usize,
    id: u32,
}

fn gone() -> io::Error {
    io::ErrorKind::ConnectionReset.into()
}

impl Tunnel {
    pub(crate) fn new(conn: Rc<Conn>, key: usize, id: u32) -> Tunnel {
        Tunnel { conn, key, id }
    }

    fn wire(&self) -> Wire<'_> {
        Wire::tunnel_end(&self.conn, self.key, self.id)
    }

    /// What the client sent next; `Ok(0)` once it ended its side.
    pub async fn read(&self, buf: &mut BytesMut) -> io::Result<usize> {
        poll_fn(|cx| {
            let mut st = self.conn.st.borrow_mut();
            let Some(s) = st.stream(self.key, self.id) else {
                return Poll::Ready(Err(gone()));
            };
            if !s.body.is_empty() {
                let n = s.body.len();
                buf.extend_from_slice(&s.body);
                s.body.clear();
                st.out_ready();
                st.credit_stream(self.key, n as u32);
                return Poll::Ready(Ok(n));
            }
            if s.reset.is_some() {
                return Poll::Ready(Err(gone()));
            }
            if s.remote_ended {
                return Poll::Ready(Ok(0));
            }
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Sends what the windows take of `buf` (waiting for credit first),
    /// advancing it.
    pub async fn send_some(&self, buf: &mut BytesMut) -> io::Result<()> {
        let w = self.wire();
        let n = w
            .send_some(buf)
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
        let _ = buf.split_to(n);
        Ok(())
    }

    /// The relay's end of this direction: END_STREAM.
    pub fn shutdown_write(&self) -> io::Result<()> {
        self.wire().finish_stream();
        Ok(())
    }
}
