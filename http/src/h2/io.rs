//! The client's socket as the h2 codec reads and writes it: tokio's
//! `AsyncRead` and `AsyncWrite` over the engine's own readiness waits, so
//! the codec runs on each core's runtime (io_uring, epoll or glommio) with
//! no tokio runtime anywhere.
//!
//! Reads take what the kernel has in one `recv` and pass it through the
//! flood watch ([`super::flood`]) on the way. Writes collect in one buffer
//! and go out at the codec's flush, so the frames of every stream served
//! in one turn of the core leave in one `send`.

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
const WRITE_HIGH: usize = 64 * 1024;
const READ_CHUNK: usize = 16 * 1024;

type Wait = Pin<Box<dyn Future<Output = io::Result<()>>>>;
type Send = Pin<Box<dyn Future<Output = (io::Result<()>, BytesMut)>>>;

pub(crate) struct Io {
    link: Rc<Link>,
    /// Read from the socket, not yet handed to the codec (at first, what
    /// the HTTP/1 side read while it recognised the preface).
    rbuf: BytesMut,
    reading: Option<Wait>,
    wbuf: BytesMut,
    /// The send under way, which owns the bytes it sends; new writes
    /// collect in `wbuf` meanwhile.
    sending: Option<Send>,
    pub(crate) watch: Rc<Watch>,
    sent: Sent,
}

impl Io {
    pub(crate) fn new(link: Rc<Link>, first: BytesMut, watch: Rc<Watch>) -> Io {
        let mut rbuf = first;
        if let Some(cut) = watch.inbound(&rbuf) {
            rbuf.truncate(cut);
        }
        if rbuf.capacity() < READ_CHUNK {
            rbuf.reserve(READ_CHUNK - rbuf.len());
        }
        Io {
            link,
            rbuf,
            reading: None,
            wbuf: BytesMut::new(),
            sending: None,
            watch,
            sent: Sent::default(),
        }
    }

    fn fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
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
            if self.rbuf.capacity() - self.rbuf.len() < 1024 {
                self.rbuf.reserve(READ_CHUNK);
            }
            let before = self.rbuf.len();
            match self.link.stream.try_read(&mut self.rbuf) {
                Ok(_) => {
                    if let Some(cut) = self.watch.inbound(&self.rbuf[before..]) {
                        // What follows the offending frame is never read.
                        self.rbuf.truncate(before + cut);
                    }
                    return Poll::Ready(Ok(self.rbuf.len() - before));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let link = self.link.clone();
                    self.reading = Some(Box::pin(async move { link.stream.readable().await }));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Moves the send under way on, then starts one for what collected.
    /// Ready when nothing is left unsent.
    fn push(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
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
                    self.wbuf = rest;
                } else if self.wbuf.is_empty() {
                    rest.clear();
                    self.wbuf = rest;
                }
            }
            if self.wbuf.is_empty() && !self.link.stream.write_pending() {
                return Poll::Ready(Ok(()));
            }
            self.watch.sent();
            match self.link.stream.try_write(&mut self.wbuf) {
                Ok(()) if self.wbuf.is_empty() && !self.link.stream.write_pending() => {
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
            match me.fill(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(0)) if me.watch.reach() => {
                    if me.watch.first_stop() {
                        cx.waker().wake_by_ref();
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(_)) => {}
            }
        }
        let n = me.rbuf.len().min(out.remaining());
        out.put_slice(&me.rbuf[..n]);
        me.rbuf.advance(n);
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
        if me.wbuf.len() >= WRITE_HIGH {
            match me.push(cx) {
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending if me.wbuf.len() >= WRITE_HIGH => return Poll::Pending,
                _ => {}
            }
        }
        me.sent.bytes(data);
        me.wbuf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().push(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        match me.push(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(me.link.stream.shutdown_write()),
            other => other,
        }
    }
}
