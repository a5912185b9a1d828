//! A client connection's own task: reads what the server sends and acts
//! on it (`recv`), and sends what the streams wrote, in one send per
//! turn. It ends when the connection fails, or when it is retired or the
//! server said GOAWAY and no stream is left.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf, BytesMut};
use ringside_runtime::net::TcpStream;

use super::state::{CState, Lost, WRITE_HIGH};
use super::{recv, ClientConn};
use crate::h2::frame::{self, Reason};

const READ_CHUNK: usize = 16 * 1024;

type Wait = Pin<Box<dyn Future<Output = io::Result<()>>>>;
type Send = Pin<Box<dyn Future<Output = (io::Result<()>, BytesMut)>>>;

struct Io {
    sock: Rc<TcpStream>,
    rbuf: BytesMut,
    reading: Option<Wait>,
    sending: Option<Send>,
}

pub(super) async fn run(conn: Rc<ClientConn>, sock: TcpStream) {
    {
        let mut st = conn.st.borrow_mut();
        st.connected = true;
        st.wake_waiters();
    }
    let mut io = Io {
        sock: Rc::new(sock),
        rbuf: BytesMut::new(),
        reading: None,
        sending: None,
    };
    poll_fn(|cx| turn(&conn, &mut io, cx)).await;
    let mut st = conn.st.borrow_mut();
    if st.failed.is_none() {
        st.fail(Lost::Closed);
    }
    // The last frames (a GOAWAY) go if the socket takes them at once.
    if !st.out.is_empty() {
        let _ = io.sock.try_write(&mut st.out);
    }
    st.out = BytesMut::new();
}

fn turn(conn: &ClientConn, io: &mut Io, cx: &mut Context<'_>) -> Poll<()> {
    conn.st.borrow_mut().task = Some(cx.waker().clone());
    loop {
        if conn.st.borrow().failed.is_some() {
            break;
        }
        match read(io, cx) {
            Poll::Pending => break,
            Poll::Ready(Err(e)) => {
                let mut st = conn.st.borrow_mut();
                let why = if e.kind() == io::ErrorKind::UnexpectedEof {
                    // A server that closes after its GOAWAY ends nothing
                    // it had not said it would.
                    Lost::Io(io::ErrorKind::UnexpectedEof)
                } else {
                    Lost::Io(e.kind())
                };
                tracing::debug!(?why, goaway = ?st.goaway, streams = st.streams.len(), "HTTP/2 upstream connection lost");
                st.fail(why);
                break;
            }
            Poll::Ready(Ok(())) => {
                let mut st = conn.st.borrow_mut();
                let used = recv::frames(&mut st, &io.rbuf);
                io.rbuf.advance(used);
            }
        }
    }
    let pushed = push(conn, io, cx);
    let st = conn.st.borrow();
    if let Poll::Ready(Err(e)) = pushed {
        drop(st);
        conn.st.borrow_mut().fail(Lost::Io(e.kind()));
        return Poll::Ready(());
    }
    if st.failed.is_some() {
        return Poll::Ready(());
    }
    let done = (st.retired || st.goaway.is_some()) && st.streams.is_empty();
    if done {
        drop(st);
        let mut st = conn.st.borrow_mut();
        if st.goaway.is_none() {
            frame::put_goaway(&mut st.out, 0, Reason::NO_ERROR, b"");
        }
        return Poll::Ready(());
    }
    Poll::Pending
}

/// Reads what the kernel has: Ready(Ok) when bytes were added.
fn read(io: &mut Io, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    loop {
        if let Some(w) = io.reading.as_mut() {
            match w.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => {
                    io.reading = None;
                    r?;
                }
            }
        }
        if io.rbuf.capacity() - io.rbuf.len() < READ_CHUNK {
            io.rbuf.reserve(READ_CHUNK);
        }
        match io.sock.try_read(&mut io.rbuf) {
            Ok(0) => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
            Ok(_) => return Poll::Ready(Ok(())),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let sock = io.sock.clone();
                io.reading = Some(Box::pin(async move { sock.readable().await }));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
}

/// Moves the send under way on, then starts one for what collected.
fn push(conn: &ClientConn, io: &mut Io, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    loop {
        if let Some(s) = io.sending.as_mut() {
            let (r, mut rest) = match s.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(out) => out,
            };
            io.sending = None;
            let mut st = conn.st.borrow_mut();
            st.writing_since = None;
            r?;
            if !rest.is_empty() {
                rest.extend_from_slice(&st.out);
                st.out = rest;
            } else {
                rest.clear();
                if st.out.is_empty() {
                    st.out = rest;
                }
            }
            room(&mut st);
        }
        let mut st = conn.st.borrow_mut();
        if st.out.is_empty() && !io.sock.write_pending() {
            room(&mut st);
            return Poll::Ready(Ok(()));
        }
        match io.sock.try_write(&mut st.out) {
            Ok(()) if st.out.is_empty() && !io.sock.write_pending() => {
                room(&mut st);
                return Poll::Ready(Ok(()));
            }
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
        let mut buf = std::mem::take(&mut st.out);
        st.writing_since = Some(Instant::now());
        room(&mut st);
        drop(st);
        let sock = io.sock.clone();
        io.sending = Some(Box::pin(async move {
            while !buf.is_empty() || sock.write_pending() {
                if let Err(e) = sock.send_some(&mut buf).await {
                    return (Err(e), buf);
                }
            }
            (Ok(()), buf)
        }));
    }
}

/// Writers waiting for the output to shrink may go on.
fn room(st: &mut CState) {
    if st.out.len() < WRITE_HIGH {
        st.wake_waiters();
    }
}
