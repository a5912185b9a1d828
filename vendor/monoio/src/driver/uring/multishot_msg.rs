//! ringside's patch to monoio: a UDP socket read by one multishot RECVMSG
//! into a provided buffer ring of its own (the datagram ring).
//!
//! Each datagram that arrives takes one buffer of the ring and posts one
//! completion, reaped by the loop's one `io_uring_enter`: no readiness
//! wait and no `recvmsg(2)` of the reader's. The kernel writes the
//! datagram after an `io_uring_recvmsg_out` header and the sender's
//! address ([`io_uring::types::RecvMsgOut`] reads them back).
//!
//! The datagram ring is apart from the stream ring (`multishot.rs`)
//! because its buffers must hold a whole datagram with its header, where
//! a stream's bytes may span buffers. The reader is expected to take every
//! completion at once (a QUIC endpoint does), so a receive is never paused
//! for holding buffers; an empty ring ends the receive with ENOBUFS, the
//! datagrams wait in the socket, and the reader reads them the plain way
//! and re-arms ([`RecvMsgMulti::take_starved`]).

use std::{
    cell::{Cell, UnsafeCell},
    io,
    os::fd::RawFd,
    rc::Rc,
    task::{Context, Poll},
};

use io_uring::{cqueue, opcode, types};

use super::{
    lifecycle::Lifecycle,
    multishot::{current_uring, push_cancel, BufRing, Config, MultiState, MSG_BGID},
    UringInner,
};

thread_local! {
    static CONFIG: Cell<Option<Config>> = const { Cell::new(None) };
}

/// Makes multishot RECVMSG available to this thread's io_uring driver, with
/// a datagram ring as `cfg` says (made at the first [`RecvMsgMulti::new`]).
pub fn enable(cfg: Config) {
    CONFIG.with(|c| c.set(Some(cfg)));
}

/// A socket's multishot RECVMSG. Made unarmed; [`RecvMsgMulti::arm`] arms
/// it.
pub struct RecvMsgMulti {
    driver: Rc<UnsafeCell<UringInner>>,
    /// The state, boxed in the slab entry, which lives until this handle
    /// drops (the driver removes only orphaned entries).
    st: *mut MultiState,
    index: usize,
    fd: RawFd,
    /// What the kernel reads for the sizes of the name and control fields
    /// it lays out in each buffer; boxed so that its address holds.
    hdr: Box<libc::msghdr>,
    starved: Cell<bool>,
}

/// One completion taken by [`RecvMsgMulti::next`].
pub enum Next {
    /// Nothing queued.
    Empty,
    /// A datagram was handed over (or one too big for a buffer dropped).
    Taken,
}

impl RecvMsgMulti {
    /// A multishot RECVMSG for the UDP socket `fd`, when this thread runs
    /// io_uring, [`enable`] was called, and the kernel took the datagram
    /// ring; otherwise the error says why.
    pub fn new(fd: RawFd) -> io::Result<RecvMsgMulti> {
        let cfg = CONFIG
            .with(|c| c.get())
            .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "not enabled"))?;
        let this = current_uring()
            .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "not io_uring"))?;
        // SAFETY: single-threaded; no other borrow of the driver is live.
        let inner = unsafe { &mut *this.get() };
        if inner.msg_bufs.is_none() {
            inner.msg_bufs = Some(BufRing::new(&inner.uring, cfg, MSG_BGID)?);
        }
        let mut st = Box::new(MultiState::new(true, usize::MAX));
        let ptr: *mut MultiState = &mut *st;
        let index = inner.ops.slab.insert(Lifecycle::Multi(st));
        // SAFETY: a zeroed msghdr is valid; only the two lengths are read.
        let mut hdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        Ok(RecvMsgMulti {
            driver: this,
            st: ptr,
            index,
            fd,
            hdr,
            starved: Cell::new(false),
        })
    }

    #[allow(clippy::mut_from_ref)]
    fn st(&self) -> &mut MultiState {
        // SAFETY: see the field; single-threaded, and no reference to the
        // state outlives a call of ours.
        unsafe { &mut *self.st }
    }

    #[allow(clippy::mut_from_ref)]
    fn inner(&self) -> &mut UringInner {
        // SAFETY: single-threaded; no other borrow of the driver is live
        // while a method of ours runs.
        unsafe { &mut *self.driver.get() }
    }

    /// Whether a receive is in the kernel.
    pub fn armed(&self) -> bool {
        self.st().armed
    }

    /// True once after the ring ran dry under this receive: the caller
    /// reads the socket the plain way until it would block, then re-arms.
    pub fn take_starved(&self) -> bool {
        self.starved.replace(false)
    }

    /// Arms the receive unless it is armed (submitted with the loop's next
    /// `io_uring_enter`).
    pub fn arm(&self) {
        let st = self.st();
        if st.armed {
            return;
        }
        let sqe = opcode::RecvMsgMulti::new(types::Fd(self.fd), &*self.hdr, MSG_BGID)
            .build()
            .user_data(self.index as u64);
        let inner = self.inner();
        // SAFETY: the receive writes only into the ring's buffers, which
        // live as long as the driver, and reads `hdr`, which lives as long
        // as this handle (and a dropped handle's receive is cancelled).
        unsafe {
            if inner.uring.submission().push(&sqe).is_err() {
                let _ = inner.submit();
                let _ = inner.uring.submission().push(&sqe);
            }
        }
        st.armed = true;
    }

    /// Ready when a completion is queued or the receive ended; else keeps
    /// the waker.
    pub fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let st = self.st();
        if !st.queue.is_empty() || !st.armed {
            return Poll::Ready(());
        }
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Takes the first queued completion: a datagram goes to `f` with its
    /// sender's address (a `sockaddr_in` or `sockaddr_in6`, as bytes), and
    /// its buffer goes back to the ring after. A datagram cut to fit a
    /// buffer is dropped, as a network drops what exceeds its MTU. An
    /// error the receive ended with is returned once.
    pub fn next(&self, f: impl FnOnce(&[u8], &[u8])) -> io::Result<Next> {
        let st = self.st();
        let Some((res, flags)) = st.queue.pop_front() else {
            return Ok(Next::Empty);
        };
        let inner = self.inner();
        let bid = cqueue::buffer_select(flags);
        let ring = inner.msg_bufs.as_mut();
        if res < 0 {
            if let (Some(bid), Some(b)) = (bid, ring) {
                b.recycle(bid);
            }
            return match -res {
                libc::ENOBUFS => {
                    self.starved.set(true);
                    Ok(Next::Taken)
                }
                libc::ECANCELED => Ok(Next::Taken),
                e => Err(io::Error::from_raw_os_error(e)),
            };
        }
        let (Some(bid), Some(b)) = (bid, ring) else {
            return Ok(Next::Taken);
        };
        if let Ok(out) = types::RecvMsgOut::parse(b.bytes(bid, res as usize), &self.hdr) {
            if !out.is_payload_truncated() && !out.is_name_data_truncated() {
                f(out.payload_data(), out.name_data());
            }
        }
        b.recycle(bid);
        Ok(Next::Taken)
    }
}

impl Drop for RecvMsgMulti {
    fn drop(&mut self) {
        let st = self.st();
        let inner = self.inner();
        for (_, flags) in st.queue.drain(..) {
            if let (Some(bid), Some(b)) = (cqueue::buffer_select(flags), inner.msg_bufs.as_mut()) {
                b.recycle(bid);
            }
        }
        if st.armed {
            // The entry stays until the receive's last completion.
            st.orphan = true;
            st.waker = None;
            if !st.cancelling {
                push_cancel(inner, self.index);
            }
        } else if let Some(r) = inner.ops.slab.get(self.index) {
            r.remove();
        }
    }
}
