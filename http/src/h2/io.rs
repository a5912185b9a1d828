//! The connection task's socket side: reads land in the core's one
//! scratch buffer and are acted on there, frame by frame, and what the
//! connection and its streams wrote in a turn leaves in one send at its
//! end ([`Io::push`]), so the frames of every stream served in one turn
//! share a system call.
//!
//! An idle connection holds neither buffer: only a frame cut in two by a
//! read is kept (copied out of the scratch buffer), and the output buffer
//! goes back to the core's pool once its bytes are sent.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf, BytesMut};

use super::recv::{Found, Reader};
use super::state::WRITE_HIGH;
use super::{Conn, PREFACE};

const READ_CHUNK: usize = 16 * 1024;
/// Output buffers kept per core, beyond which a finished one is freed.
const POOLED: usize = 64;
/// Of those, how many may be large (up to `LARGE`): a file body's batches
/// fill one, and allocating it afresh for each response would cost more
/// than the batching saves.
const LARGE_POOLED: usize = 2;
const LARGE: usize = 2 * 1024 * 1024;

thread_local! {
    static SCRATCH: RefCell<BytesMut> = RefCell::new(BytesMut::new());
    static POOL: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn pooled() -> BytesMut {
    POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

pub(crate) fn unpool(mut b: BytesMut) {
    b.clear();
    let cap = b.capacity();
    if cap == 0 || cap > LARGE {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let large = |b: &BytesMut| b.capacity() > 4 * WRITE_HIGH;
        if p.len() < POOLED && (!large(&b) || p.iter().filter(|b| large(b)).count() < LARGE_POOLED)
        {
            p.push(b);
        }
    });
}

type Wait = Pin<Box<dyn Future<Output = io::Result<()>>>>;
type Send = Pin<Box<dyn Future<Output = (io::Result<()>, BytesMut)>>>;

pub(crate) struct Io {
    conn: Rc<Conn>,
    /// Read, not yet acted on: the scratch buffer while a read's frames
    /// are taken, else only the part of a frame a read cut off.
    rbuf: BytesMut,
    /// Whether `rbuf` is the core's scratch buffer now.
    scratch: bool,
    /// `rbuf` holds what HTTP/1's side read, not yet acted on.
    fresh: bool,
    reading: Option<Wait>,
    /// The send under way, which owns the bytes it sends; new frames
    /// collect in the state's output meanwhile.
    sending: Option<Send>,
}

impl Io {
    pub(crate) fn new(conn: Rc<Conn>, first: BytesMut) -> Io {
        Io {
            conn,
            fresh: !first.is_empty(),
            rbuf: first,
            scratch: false,
            reading: None,
            sending: None,
        }
    }

    /// Reads what the kernel has; Ready(Ok) when bytes were added,
    /// Ready(Err) at EOF or an error, Pending when it has none.
    pub(crate) fn read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if std::mem::take(&mut self.fresh) {
            return Poll::Ready(Ok(()));
        }
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
            if self.rbuf.is_empty() && !self.scratch {
                self.rbuf = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
                self.rbuf.clear();
                self.scratch = true;
            }
            if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK {
                self.rbuf.reserve(READ_CHUNK);
            }
            match self.conn.link.stream.try_read(&mut self.rbuf) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.settle();
                    let link = self.conn.link.clone();
                    self.reading = Some(Box::pin(async move { link.stream.readable().await }));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Whether the client's preface came: `None` while too few bytes did.
    pub(crate) fn preface(&mut self) -> Option<bool> {
        let n = self.rbuf.len().min(PREFACE.len());
        if self.rbuf[..n] != PREFACE[..n] {
            return Some(false);
        }
        if n < PREFACE.len() {
            return None;
        }
        self.rbuf.advance(PREFACE.len());
        Some(true)
    }

    /// Acts on every whole frame read.
    pub(crate) fn frames(
        &mut self,
        reader: &mut Reader,
        limits: &crate::Limits,
        found: &mut Found,
    ) {
        let mut st = self.conn.st.borrow_mut();
        let used = reader.frames(&mut st, &self.rbuf, limits, found);
        self.rbuf.advance(used);
    }

    /// The scratch buffer goes back to the core; a frame cut in two is
    /// kept in a buffer of the connection's own.
    fn settle(&mut self) {
        if !self.scratch && self.rbuf.capacity() <= 2 * self.rbuf.len().max(1024) {
            return;
        }
        let rest = if self.rbuf.is_empty() {
            BytesMut::new()
        } else {
            BytesMut::from(&self.rbuf[..])
        };
        let mut old = std::mem::replace(&mut self.rbuf, rest);
        if std::mem::replace(&mut self.scratch, false) {
            old.clear();
            SCRATCH.with(|c| *c.borrow_mut() = old);
        }
    }

    /// Moves the send under way on, then starts one for what collected.
    /// Ready when nothing is left unsent.
    pub(crate) fn push(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let link = self.conn.link.clone();
        loop {
            if let Some(s) = self.sending.as_mut() {
                let (r, mut rest) = match s.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(out) => out,
                };
                self.sending = None;
                self.conn.writing.set(false);
                self.conn.rearm();
                if let Err(e) = r {
                    return Poll::Ready(Err(if link.expired() {
                        io::ErrorKind::TimedOut.into()
                    } else {
                        e
                    }));
                }
                let mut st = self.conn.st.borrow_mut();
                if !rest.is_empty() {
                    rest.extend_from_slice(&st.out);
                    unpool(std::mem::replace(&mut st.out, rest));
                } else {
                    unpool(rest);
                }
                if st.out.len() < WRITE_HIGH {
                    st.wake_room();
                }
            }
            let mut st = self.conn.st.borrow_mut();
            if st.out.is_empty() && !link.stream.write_pending() {
                unpool(std::mem::take(&mut st.out));
                st.wake_room();
                return Poll::Ready(Ok(()));
            }
            match link.stream.try_write(&mut st.out) {
                Ok(()) if st.out.is_empty() && !link.stream.write_pending() => {
                    unpool(std::mem::take(&mut st.out));
                    st.wake_room();
                    return Poll::Ready(Ok(()));
                }
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            let mut buf = std::mem::take(&mut st.out);
            drop(st);
            self.conn.writing.set(true);
            link.watch(Instant::now() + link.cfg.timeouts.send, true);
            let l = link.clone();
            self.sending = Some(Box::pin(async move {
                while !buf.is_empty() || l.stream.write_pending() {
                    if let Err(e) = l.stream.send_some(&mut buf).await {
                        return (Err(e), buf);
                    }
                }
                (Ok(()), buf)
            }));
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        self.settle();
    }
}
