//! One HTTP/2 stream as the neutral [`Exchange`](crate::Exchange) writes
//! to it: the request body read from DATA frames (their flow-control
//! credit given back as it is taken), and the response as a HEADERS frame
//! and DATA frames sent within the client's windows.
//!
//! What each body path costs: a buffered response (`Exchange::send`) is
//! copied once into the frame. A file body is read from the page cache
//! into 64 KiB pieces (a copy; HTTP/2 frames every piece, so the kernel
//! cannot send a file into a stream), and a proxied body is read from the
//! upstream socket the same way: HTTP/2 has no zero-copy body path.

use std::io;

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use ringside_runtime::link::Link;
use ringside_runtime::net::TcpStream;

use super::flood::Watch;
use crate::error::{Error, Kind};
use crate::message::{Framing, HeaderLine};

/// The most a file or proxied body is read ahead of the client's window.
const PIECE: usize = 64 * 1024;

pub(crate) struct Wire<'a> {
    pub link: &'a Link,
    watch: &'a Watch,
    recv: RecvStream,
    respond: Option<SendResponse<Bytes>>,
    send: Option<SendStream<Bytes>>,
    is_head: bool,
    /// Body bytes still to come of a sized response.
    left: Option<u64>,
    /// Request body bytes taken so far, against `max_body`.
    received: u64,
    expect_continue: bool,
    sent_continue: bool,
}

fn gone(what: &'static str, e: h2::Error) -> Error {
    Error::client_gone(what, h2_io(e))
}

fn h2_io(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e
            .into_io()
            .unwrap_or_else(|| io::ErrorKind::BrokenPipe.into());
    }
    io::Error::new(io::ErrorKind::ConnectionReset, e)
}

impl<'a> Wire<'a> {
    pub(crate) fn new(
        link: &'a Link,
        watch: &'a Watch,
        recv: RecvStream,
        respond: SendResponse<Bytes>,
        is_head: bool,
        expect_continue: bool,
    ) -> Self {
        Wire {
            link,
            watch,
            recv,
            respond: Some(respond),
            send: None,
            is_head,
            left: None,
            received: 0,
            expect_continue,
            sent_continue: false,
        }
    }

    pub fn expects_continue(&self) -> bool {
        self.expect_continue && !self.sent_continue
    }

    /// The next piece of the request body, `None` at its end.
    pub async fn read_body(&mut self, responded: bool) -> Result<Option<Bytes>, Error> {
        if self.recv.is_end_stream() {
            return Ok(None);
        }
        if self.expects_continue() && !responded {
            self.sent_continue = true;
            if let Some(r) = self.respond.as_mut() {
                let head = http::Response::builder().status(100).body(()).unwrap();
                r.send_informational(head)
                    .map_err(|e| gone("sending 100 Continue", e))?;
            }
        }
        let t = self.link.cfg.timeouts.body_read;
        let next = ringside_runtime::task::timeout(t, self.recv.data()).await;
        let piece = match next {
            Err(_) => return Err(Error::new(Kind::ClientTimeout, "request body too slow")),
            Ok(None) => return Ok(None),
            Ok(Some(Err(e))) => return Err(gone("reading the body", e)),
            Ok(Some(Ok(b))) => b,
        };
        let _ = self.recv.flow_control().release_capacity(piece.len());
        self.received += piece.len() as u64;
        if self.received > self.link.cfg.limits.max_body {
            return Err(Error::new(Kind::BodyTooLarge, "request body over max_body"));
        }
        Ok(Some(piece))
    }

    pub fn write_head<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        added: Option<&HeaderLine>,
        framing: Framing,
    ) {
        let mut b = http::Response::builder().status(status);
        let map = b.headers_mut().expect("a fresh builder");
        for (name, value) in headers {
            put(map, name, value);
        }
        if let Some(l) = added {
            put(map, &l.name, &l.value);
        }
        crate::date::with_date(|d| put(map, b"date", d));
        map.insert(
            http::header::SERVER,
            http::HeaderValue::from_static("ringside"),
        );
        let ends = match framing {
            Framing::Length(n) => {
                map.insert(http::header::CONTENT_LENGTH, n.into());
                self.left = Some(n);
                n == 0 || self.is_head
            }
            Framing::Stream => self.is_head,
            Framing::None => true,
        };
        let head = b.body(()).expect("a response of valid parts");
        let Some(mut respond) = self.respond.take() else {
            return;
        };
        match respond.send_response(head, ends) {
            Ok(s) if !ends => self.send = Some(s),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "response head not sent"),
        }
    }

    pub async fn write_interim<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<(), Error> {
        if status == 100 {
            if self.sent_continue {
                return Ok(());
            }
            self.sent_continue = true;
        }
        let mut b = http::Response::builder().status(status);
        let map = b.headers_mut().expect("a fresh builder");
        for (name, value) in headers {
            put(map, name, value);
        }
        let head = b.body(()).expect("a response of valid parts");
        match self.respond.as_mut() {
            Some(r) => r
                .send_informational(head)
                .map_err(|e| gone("sending an interim response", e)),
            None => Ok(()),
        }
    }

    /// The body of a response buffered whole: sent at once, the codec
    /// holding what the window does not take yet.
    pub fn buffer_body(&mut self, body: &[u8]) {
        if let Some(s) = self.send.as_mut() {
            if let Err(e) = s.send_data(Bytes::copy_from_slice(body), true) {
                tracing::debug!(error = %e, "body not sent");
            }
            self.send = None;
            self.watch.served();
        }
    }

    /// Sends `data` within the client's windows, waiting for credit where
    /// it has none; the send timeout bounds each wait, so a client that
    /// never opens its window loses the stream as a slow reader loses an
    /// HTTP/1.1 connection.
    async fn send_data(&mut self, mut data: Bytes, end: bool) -> Result<(), Error> {
        let Some(s) = self.send.as_mut() else {
            return Ok(());
        };
        let t = self.link.cfg.timeouts.send;
        while !data.is_empty() {
            s.reserve_capacity(data.len());
            let credit = std::future::poll_fn(|cx| s.poll_capacity(cx));
            let n = match ringside_runtime::task::timeout(t, credit).await {
                Err(_) => {
                    s.send_reset(h2::Reason::CANCEL);
                    self.send = None;
                    return Err(Error::client_gone(
                        "sending the response",
                        io::ErrorKind::TimedOut.into(),
                    ));
                }
                Ok(None) => {
                    return Err(Error::client_gone(
                        "sending the response",
                        io::ErrorKind::BrokenPipe.into(),
                    ))
                }
                Ok(Some(Err(e))) => return Err(gone("sending the response", e)),
                Ok(Some(Ok(n))) => n,
            };
            if n == 0 {
                continue;
            }
            let piece = data.split_to(n.min(data.len()));
            s.send_data(piece, end && data.is_empty())
                .map_err(|e| gone("sending the response", e))?;
        }
        if end {
            self.send = None;
            self.watch.served();
        }
        Ok(())
    }

    /// Counts body bytes against a sized response: whether they end it.
    fn last(&mut self, n: u64) -> bool {
        match self.left.as_mut() {
            Some(left) => {
                *left = left.saturating_sub(n);
                *left == 0
            }
            None => false,
        }
    }

    pub async fn write_sized(&mut self, data: &[u8]) -> Result<(), Error> {
        let end = self.last(data.len() as u64);
        self.send_data(Bytes::copy_from_slice(data), end).await
    }

    pub async fn write_stream(&mut self, data: &[u8]) -> Result<(), Error> {
        self.send_data(Bytes::copy_from_slice(data), false).await
    }

    pub fn finish_stream(&mut self) {
        if let Some(mut s) = self.send.take() {
            let _ = s.send_data(Bytes::new(), true);
            self.watch.served();
        }
    }

    pub async fn write_file(
        &mut self,
        file: &std::fs::File,
        mut offset: u64,
        mut len: u64,
    ) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        while len > 0 {
            let n = (len as usize).min(PIECE);
            let mut buf = BytesMut::zeroed(n);
            let got = file
                .read_at(&mut buf, offset)
                .map_err(|e| Error::internal("reading a file").because(e))?;
            if got == 0 {
                return Err(Error::internal("file shorter than its length"));
            }
            buf.truncate(got);
            offset += got as u64;
            len -= got as u64;
            let end = self.last(got as u64);
            self.send_data(buf.freeze(), end).await?;
        }
        Ok(())
    }

    /// Moves `len` bytes from `from` into the stream, a piece at a time.
    pub async fn splice_from(
        &mut self,
        from: &TcpStream,
        mut len: u64,
        on_progress: &dyn Fn(),
    ) -> io::Result<()> {
        while len > 0 {
            let mut buf = BytesMut::with_capacity((len as usize).min(PIECE));
            let n = from.read(&mut buf).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.truncate((len as usize).min(buf.len()));
            len -= buf.len() as u64;
            on_progress();
            let end = self.last(buf.len() as u64);
            self.send_data(buf.freeze(), end)
                .await
                .map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e.to_string()))?;
        }
        Ok(())
    }

    /// A refused request: its status and a short page, then the stream
    /// ends (the connection goes on). Returns the body's length.
    pub fn write_refusal(&mut self, status: u16) -> u64 {
        let mut page = BytesMut::new();
        crate::h1::encode::put_u64(&mut page, u64::from(status));
        page.extend_from_slice(b" ");
        page.extend_from_slice(crate::status::reason(status).as_bytes());
        page.extend_from_slice(b"\n");
        let len = page.len() as u64;
        let ct: (&[u8], &[u8]) = (b"content-type", b"text/plain; charset=utf-8");
        self.write_head(status, std::iter::once(ct), None, Framing::Length(len));
        self.buffer_body(&page);
        len
    }

    /// Ends a stream whose response cannot be finished, so that it never
    /// passes for complete.
    pub fn reset(&mut self) {
        if let Some(s) = self.send.as_mut() {
            s.send_reset(h2::Reason::INTERNAL_ERROR);
        } else if let Some(r) = self.respond.as_mut() {
            r.send_reset(h2::Reason::INTERNAL_ERROR);
        }
        self.send = None;
        self.respond = None;
    }
}

/// Adds a field from a handler's (name, value) bytes; names are lowercased
/// as HTTP/2 wants, and a field the codec would refuse is left out.
fn put(map: &mut http::HeaderMap, name: &[u8], value: &[u8]) {
    let Ok(name) = http::HeaderName::from_bytes(name) else {
        return;
    };
    if crate::hop::is_hop_by_hop(name.as_str().as_bytes()) {
        return;
    }
    if let Ok(v) = http::HeaderValue::from_bytes(value) {
        map.append(name, v);
    }
}
