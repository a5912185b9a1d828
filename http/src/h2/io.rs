//! The client's socket as the h2 codec reads and writes it: tokio's
//! `AsyncRead` and `AsyncWrite` over the engine's own readiness waits, so
//! the codec runs on each core's runtime (io_uring, epoll or glommio) with
//! no tokio runtime anywhere.
//!
//! Reads take what the kernel has in one `recv` and pass it through the
//! flood watch ([`super::flood`]) on the way. Writes collect in one buffer
//! ([`Out`]) that the connection task sends at the end of each of its
//! turns, not at the codec's flushes (it flushes before every DATA frame
//! it queues): the frames of every stream served in one turn leave in one
//! `send`, and a large body in sends of up to [`WRITE_HIGH`].
//!
//! An idle connection holds neither buffer: reads land in the core's one
//! scratch buffer (only what the codec could not take stays behind), and
//! a write buffer goes back to the core's pool once its bytes are sent.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf, BytesMut};
use ringside_runtime::link::Link;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::flood::Watch;
use super::stats::Sent;

/// Above this many unsent bytes, the codec's writes wait for the socket.
pub(crate) const WRITE_HIGH: usize = 64 * 1024;
const READ_CHUNK: usize = 16 * 1024;

/// Write buffers kept per core, beyond which a finished one is freed.
const POOLED: usize = 64;

thread_local! {
    static SCRATCH: RefCell<BytesMut> = RefCell::new(BytesMut::new());
    static POOL: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

fn pooled() -> BytesMut {
    POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

fn unpool(mut b: BytesMut) {
    b.clear();
    if b.capacity() == 0 || b.capacity() > 4 * WRITE_HIGH {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < POOLED {
            p.push(b);
        }
    });
}

type Wait = Pin<Box<dyn Future<Output = io::Result<()>>>>;
type Send = Pin<Box<dyn Future<Output = (io::Result<()>, BytesMut)>>>;

pub(crate) struct Io {
    link: Rc<Link>,
    /// Read from the socket, not yet handed to the codec (at first, what
    /// the HTTP/1 side read while it recognised the preface).
    rbuf: BytesMut,
    reading: Option<Wait>,
    out: Rc<RefCell<Out>>,
    pub(crate) watch: Rc<Watch>,
    sent: Sent,
}

/// What the codec wrote, not yet sent; shared with the connection task,
/// which sends it at the end of each turn.
pub(crate) struct Out {
    link: Rc<Link>,
    wbuf: BytesMut,
    /// The send under way, which owns the bytes it sends; new writes
    /// collect in `wbuf` meanwhile.
    sending: Option<Send>,
    watch: Rc<Watch>,
}

impl Io {
    pub(crate) fn new(link: Rc<Link>, first: BytesMut, watch: Rc<Watch>) -> Io {
        let mut rbuf = first;
        if let Some(cut) = watch.inbound(&rbuf) {
            rbuf.truncate(cut);
        }
        let out = Rc::new(RefCell::new(Out {
            link: link.clone(),
            wbuf: BytesMut::new(),
            sending: None,
            watch: watch.clone(),
        }));
        Io {
            link,
            rbuf,
            reading: None,
            out,
            watch,
            sent: Sent::default(),
        }
    }

    /// The write half, for the connection task to push.
    pub(crate) fn out(&self) -> Rc<RefCell<Out>> {
        self.out.clone()
    }

    fn out_mut(&self) -> RefMut<'_, Out> {
        self.out.borrow_mut()
    }

    /// Reads what the kernel has into `out`, through the core's scratch
    /// buffer; what `out` has no room for waits in `rbuf`.
    fn fill(&mut self, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<usize>> {
        loop {
            if let Some(w) = self.reading.as_mut() {
                match w.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(r) => {
                        self.reading = None;
                        r?;
                    }
                }
            }
            let mut buf = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
            buf.clear();
            if buf.capacity() < READ_CHUNK {
                buf.reserve(READ_CHUNK);
            }
            let read = self.link.stream.try_read(&mut buf);
            if read.is_ok() {
                if let Some(cut) = self.watch.inbound(&buf) {
                    // What follows the offending frame is never read.
                    buf.truncate(cut);
                }
                let n = buf.len().min(out.remaining());
                out.put_slice(&buf[..n]);
                self.rbuf.extend_from_slice(&buf[n..]);
            }
            let got = buf.len();
            SCRATCH.with(|s| *s.borrow_mut() = buf);
            match read {
                Ok(_) => return Poll::Ready(Ok(got)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let link = self.link.clone();
                    self.reading = Some(Box::pin(async move { link.stream.readable().await }));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Out {
    /// Moves the send under way on, then starts one for what collected.
    /// Ready when nothing is left unsent.
    pub(crate) fn push(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if let Some(s) = self.sending.as_mut() {
                let (r, mut rest) = match s.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(out) => out,
                };
                self.sending = None;
                self.watch.set_writing(false);
                self.watch.rearm(&self.link);
                if let Err(e) = r {
                    return Poll::Ready(Err(if self.link.expired() {
                        io::ErrorKind::TimedOut.into()
                    } else {
                        e
                    }));
                }
                if !rest.is_empty() {
                    rest.extend_from_slice(&self.wbuf);
                    unpool(std::mem::replace(&mut self.wbuf, rest));
                } else {
                    unpool(rest);
                }
            }
            if self.wbuf.is_empty() && !self.link.stream.write_pending() {
                unpool(std::mem::take(&mut self.wbuf));
                return Poll::Ready(Ok(()));
            }
            self.watch.sent();
            match self.link.stream.try_write(&mut self.wbuf) {
                Ok(()) if self.wbuf.is_empty() && !self.link.stream.write_pending() => {
                    unpool(std::mem::take(&mut self.wbuf));
                    return Poll::Ready(Ok(()));
                }
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            let link = self.link.clone();
            let mut buf = std::mem::take(&mut self.wbuf);
            self.watch.set_writing(true);
            self.link
                .watch(Instant::now() + link.cfg.timeouts.send, true);
            self.sending = Some(Box::pin(async move {
                while !buf.is_empty() || link.stream.write_pending() {
                    if let Err(e) = link.stream.send_some(&mut buf).await {
                        return (Err(e), buf);
                    }
                }
                (Ok(()), buf)
            }));
        }
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.rbuf.is_empty() && me.watch.reach() {
            // The codec read every frame before the one that ends the
            // connection (a flood past its budget, or a frame error): read
            // nothing more, and let the connection task send its GOAWAY.
            if me.watch.first_stop() {
                cx.waker().wake_by_ref();
            }
            return Poll::Pending;
        }
        if me.rbuf.is_empty() {
            return match me.fill(cx, out) {
                Poll::Ready(Ok(0)) if me.watch.reach() => {
                    if me.watch.first_stop() {
                        cx.waker().wake_by_ref();
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => Poll::Ready(r.map(drop)),
                Poll::Pending => Poll::Pending,
            };
        }
        let n = me.rbuf.len().min(out.remaining());
        out.put_slice(&me.rbuf[..n]);
        me.rbuf.advance(n);
        if me.rbuf.is_empty() {
            me.rbuf = BytesMut::new();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let mut out = me.out.borrow_mut();
        if out.wbuf.len() >= WRITE_HIGH {
            match out.push(cx) {
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending if out.wbuf.len() >= WRITE_HIGH => return Poll::Pending,
                _ => {}
            }
        }
        me.sent.bytes(data);
        if out.wbuf.capacity() == 0 {
            out.wbuf = pooled();
        }
        out.wbuf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    /// Ready at once below [`WRITE_HIGH`]: the bytes leave at the end of
    /// the connection task's turn ([`Out::push`]), with whatever else the
    /// codec writes in it.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut out = self.out_mut();
        if out.wbuf.len() < WRITE_HIGH {
            return Poll::Ready(Ok(()));
        }
        match out.push(cx) {
            Poll::Pending if out.wbuf.len() < WRITE_HIGH => Poll::Ready(Ok(())),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut out = self.out_mut();
        match out.push(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(self.link.stream.shutdown_write()),
            other => other,
        }
    }
}
