//! ringside's patch to monoio: multishot receive into a provided buffer ring.
//!
//! Upstream monoio reads a socket with one RECV per call, each with a buffer
//! of its own pinned while it waits. A server that wants no buffer held by
//! an idle connection then waits with a POLL and reads with `recv(2)`: one
//! SQE and one system call per read. Here a connection arms one multishot
//! RECV once; the kernel picks a buffer from this thread's provided buffer
//! ring (`IORING_REGISTER_PBUF_RING`) only when bytes arrive and posts a
//! completion per arrival, with no system call of the reader's. The reader
//! copies the bytes out and gives the buffer straight back, so the ring's
//! buffers are the only receive memory and an idle connection holds none.
//!
//! Backpressure, never loss:
//! - a connection that stops reading stops receiving: once it holds
//!   [`HOLD_MAX`] buffers its receive is cancelled, and it re-arms when it
//!   reads again; the kernel keeps the bytes in the socket meanwhile;
//! - an empty ring ends a receive with ENOBUFS (the bytes stay in the
//!   socket); the owner then reads once the plain way and re-arms.
//!
//! While a receive is armed, or its completions are still queued, the owner
//! must not read the socket any other way (the order of bytes would break).
//! [`RecvMulti::idle`] says when it may.

use std::{
    cell::UnsafeCell,
    collections::VecDeque,
    io,
    os::fd::RawFd,
    rc::Rc,
    sync::atomic::{AtomicU16, Ordering},
    task::{Context, Poll, Waker},
};

use io_uring::{cqueue, opcode, types, types::BufRingEntry};

use super::{lifecycle::Lifecycle, UringInner};
use crate::driver::{Inner, CURRENT};

/// The buffer group id of the thread's ring.
const BGID: u16 = 0x5253;
/// The buffer group id of the thread's datagram ring (`multishot_msg`).
pub(crate) const MSG_BGID: u16 = 0x5254;
/// Buffers a connection may hold unread before its receive is paused.
pub const HOLD_MAX: usize = 4;

/// What the thread's ring is made of, and whether multishot receive is on.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Buffers in the ring (a power of two, at most 32768).
    pub entries: u16,
    /// Bytes per buffer.
    pub size: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            entries: 256,
            size: 4096,
        }
    }
}

/// This thread's provided buffer ring.
pub(crate) struct BufRing {
    ring: *mut BufRingEntry,
    ring_layout: std::alloc::Layout,
    bufs: Box<[u8]>,
    size: usize,
    mask: u16,
    tail: u16,
    /// Buffers the kernel filled and not yet given back.
    pub(crate) out: usize,
    /// Receives ended by an empty ring (ENOBUFS).
    dry: u64,
    /// Receives paused because their owner held [`HOLD_MAX`] buffers.
    paused: u64,
}

impl BufRing {
    pub(crate) fn new(uring: &io_uring::IoUring, cfg: Config, bgid: u16) -> io::Result<BufRing> {
        let entries = cfg.entries;
        if entries == 0 || !entries.is_power_of_two() || entries > 32768 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "buffer ring entries must be a power of two up to 32768",
            ));
        }
        let ring_layout = std::alloc::Layout::from_size_align(
            entries as usize * std::mem::size_of::<BufRingEntry>(),
            4096,
        )
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a non-zero size; zeroed so the tail starts at 0.
        let ring = unsafe { std::alloc::alloc_zeroed(ring_layout) } as *mut BufRingEntry;
        if ring.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let size = cfg.size as usize;
        let mut r = BufRing {
            ring,
            ring_layout,
            bufs: vec![0u8; entries as usize * size].into_boxed_slice(),
            size,
            mask: entries - 1,
            tail: 0,
            out: 0,
            dry: 0,
            paused: 0,
        };
        // SAFETY: the ring memory lives as long as `r`, which the driver
        // drops only after the io_uring itself (see `UringInner`'s fields).
        unsafe {
            uring
                .submitter()
                .register_buf_ring(ring as u64, entries, bgid)?;
        }
        for bid in 0..entries {
            r.put(bid);
        }
        r.publish();
        Ok(r)
    }

    fn put(&mut self, bid: u16) {
        let addr = self.bufs.as_ptr() as u64 + u64::from(bid) * self.size as u64;
        // SAFETY: the index is masked into the ring.
        let e = unsafe { &mut *self.ring.add((self.tail & self.mask) as usize) };
        e.set_addr(addr);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail shares the first entry's reserved field; the
        // kernel reads it with acquire semantics.
        unsafe {
            let tail = BufRingEntry::tail(self.ring) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// Gives buffer `bid` back to the kernel.
    pub(crate) fn recycle(&mut self, bid: u16) {
        self.put(bid);
        self.publish();
        self.out -= 1;
    }

    pub(crate) fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * self.size;
        &self.bufs[at..at + len.min(self.size)]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ring as *mut u8, self.ring_layout) };
    }
}

/// One multishot receive's state, in the driver's op slab.
pub(crate) struct MultiState {
    pub(crate) queue: VecDeque<(i32, u32)>,
    /// Bytes of the front completion's buffer already handed out.
    taken: usize,
    pub(crate) waker: Option<Waker>,
    /// A RECV is in the kernel (its last completion, without MORE, has not
    /// come yet).
    pub(crate) armed: bool,
    /// A cancel is on its way (the owner holds too many buffers).
    pub(crate) cancelling: bool,
    /// The owner is gone: buffers go straight back, the entry goes at the
    /// last completion.
    pub(crate) orphan: bool,
    /// Its buffers come from the datagram ring, not the stream one.
    pub(crate) datagrams: bool,
    /// Completions it may hold unread before its receive is paused.
    pub(crate) hold: usize,
}

impl MultiState {
    pub(crate) fn new(datagrams: bool, hold: usize) -> MultiState {
        MultiState {
            queue: VecDeque::new(),
            taken: 0,
            waker: None,
            armed: false,
            cancelling: false,
            orphan: false,
            datagrams,
            hold,
        }
    }
}

/// Handles a completion if `index` is a multishot receive's (true), and
/// notes a cancel to send when its owner holds too many buffers.
pub(crate) fn complete(
    ops: &mut super::Ops,
    stream_bufs: &mut Option<BufRing>,
    msg_bufs: &mut Option<BufRing>,
    cancels: &mut Vec<usize>,
    index: usize,
    res: i32,
    flags: u32,
) -> bool {
    let Some(mut r) = ops.slab.get(index) else {
        return false;
    };
    let Lifecycle::Multi(st) = &mut *r else {
        return false;
    };
    let bufs = if st.datagrams { msg_bufs } else { stream_bufs };
    let more = cqueue::more(flags);
    let bid = cqueue::buffer_select(flags);
    if let Some(b) = bufs.as_mut() {
        b.out += usize::from(bid.is_some());
        b.dry += u64::from(res == -libc::ENOBUFS);
    }
    if !more {
        st.armed = false;
        st.cancelling = false;
    }
    if st.orphan {
        if let (Some(bid), Some(b)) = (bid, bufs.as_mut()) {
            b.recycle(bid);
        }
        if !more {
            r.remove();
        }
        return true;
    }
    st.queue.push_back((res, flags));
    if more && !st.cancelling && st.queue.len() >= st.hold {
        st.cancelling = true;
        cancels.push(index);
        if let Some(b) = bufs.as_mut() {
            b.paused += 1;
        }
    }
    if let Some(w) = st.waker.take() {
        w.wake();
    }
    true
}

/// Whether op `index` is a receive still armed with a cancel wanted.
pub(crate) fn still_cancelling(ops: &mut super::Ops, index: usize) -> bool {
    match ops.slab.get(index) {
        Some(mut r) => matches!(&mut *r, Lifecycle::Multi(st) if st.armed && st.cancelling),
        None => false,
    }
}

/// Pushes an AsyncCancel for op `index`, submitting first if the queue is
/// full.
pub(crate) fn push_cancel(inner: &mut UringInner, index: usize) {
    let cancel = opcode::AsyncCancel::new(index as u64)
        .build()
        .user_data(super::CANCEL_USERDATA);
    // SAFETY: the entry refers to no memory of ours.
    unsafe {
        if inner.uring.submission().push(&cancel).is_err() {
            let _ = inner.submit();
            let _ = inner.uring.submission().push(&cancel);
        }
    }
}

thread_local! {
    static CONFIG: std::cell::Cell<Option<Config>> = const { std::cell::Cell::new(None) };
}

/// Turns multishot receive on for this thread's io_uring driver, with a
/// ring as `cfg` says (made at the first [`RecvMulti::new`]). Off until
/// called.
pub fn enable(cfg: Config) {
    CONFIG.with(|c| c.set(Some(cfg)));
}

/// Turns it off for streams made from now on.
pub fn disable() {
    CONFIG.with(|c| c.set(None));
}

/// This thread's io_uring driver, when it runs one.
pub(crate) fn current_uring() -> Option<Rc<UnsafeCell<UringInner>>> {
    if !CURRENT.is_set() {
        return None;
    }
    CURRENT.with(|inner| match inner {
        Inner::Uring(this) => Some(this.clone()),
        #[allow(unreachable_patterns)]
        _ => None,
    })
}

/// Makes the driver's ring as `cfg` says unless it has one; a ring the
/// kernel refuses turns the feature off for the thread.
fn ensure_ring(this: &Rc<UnsafeCell<UringInner>>, cfg: Config) -> io::Result<()> {
    // SAFETY: single-threaded; no other borrow of the driver is live.
    let inner = unsafe { &mut *this.get() };
    if inner.bufs.is_none() {
        match BufRing::new(&inner.uring, cfg, BGID) {
            Ok(b) => inner.bufs = Some(b),
            Err(e) => {
                disable();
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Makes this thread's ring now (inside the runtime) instead of at the
/// first receive, so that the owner can say at start whether it has one.
/// An error (not enabled, not io_uring, a kernel without buffer rings)
/// leaves the feature off.
pub fn prepare() -> io::Result<()> {
    let Some(cfg) = CONFIG.with(|c| c.get()) else {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "not enabled"));
    };
    let Some(this) = current_uring() else {
        disable();
        return Err(io::Error::new(io::ErrorKind::Unsupported, "not io_uring"));
    };
    ensure_ring(&this, cfg)
}

/// What this thread's ring holds and has been through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Buffers in the ring (0: no ring, receives the plain way).
    pub entries: u64,
    /// Buffers filled and not yet given back (held by connections, or in
    /// completions not yet read).
    pub out: u64,
    /// Receives ended by an empty ring.
    pub dry: u64,
    /// Receives paused for their owner holding too many buffers.
    pub paused: u64,
}

/// This thread's ring figures (all 0 without one).
pub fn stats() -> RingStats {
    let Some(this) = current_uring() else {
        return RingStats::default();
    };
    // SAFETY: single-threaded; no other borrow of the driver is live.
    let inner = unsafe { &*this.get() };
    inner.bufs.as_ref().map_or(RingStats::default(), |b| RingStats {
        entries: u64::from(b.mask) + 1,
        out: b.out as u64,
        dry: b.dry,
        paused: b.paused,
    })
}

/// A socket's multishot receive. Made unarmed; [`RecvMulti::arm`] arms it.
pub struct RecvMulti {
    driver: Rc<UnsafeCell<UringInner>>,
    /// The state, boxed in the slab entry: the entry lives until this
    /// handle drops (the driver removes only orphaned entries).
    st: *mut MultiState,
    index: usize,
    fd: RawFd,
    /// The ring ran dry: the next wait is a plain poll, then it re-arms.
    starved: std::cell::Cell<bool>,
}

impl RecvMulti {
    /// A multishot receive for `fd`, when this thread runs io_uring and
    /// [`enable`] was called and the kernel took the buffer ring; `None`
    /// otherwise (the caller reads the plain way). A ring the kernel
    /// refuses turns the feature off for the thread.
    pub fn new(fd: RawFd) -> Option<RecvMulti> {
        let cfg = CONFIG.with(|c| c.get())?;
        let this = current_uring()?;
        ensure_ring(&this, cfg).ok()?;
        let mut st = Box::new(MultiState::new(false, HOLD_MAX));
        let ptr: *mut MultiState = &mut *st;
        // SAFETY: single-threaded; no other borrow of the driver is live.
        let index = unsafe { &mut *this.get() }
            .ops
            .slab
            .insert(Lifecycle::Multi(st));
        Some(RecvMulti {
            driver: this,
            st: ptr,
            index,
            fd,
            starved: std::cell::Cell::new(false),
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

    /// Whether the socket may be read the plain way: no receive armed and
    /// nothing of one left unread.
    pub fn idle(&self) -> bool {
        let st = self.st();
        !st.armed && st.queue.is_empty()
    }

    /// Whether received bytes (or an end) wait to be taken.
    pub fn has_data(&self) -> bool {
        !self.st().queue.is_empty()
    }

    /// True once after the ring ran dry under this receive: the caller
    /// then waits and reads the plain way once before re-arming.
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
        let sqe = opcode::RecvMulti::new(types::Fd(self.fd), BGID)
            .build()
            .user_data(self.index as u64);
        let inner = self.inner();
        // SAFETY: the receive writes only into the ring's buffers, which
        // live as long as the driver.
        unsafe {
            if inner.uring.submission().push(&sqe).is_err() {
                let _ = inner.submit();
                let _ = inner.uring.submission().push(&sqe);
            }
        }
        st.armed = true;
    }

    /// Ready when something was received (or the receive ended); else
    /// keeps the waker.
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

    /// Hands what was received to `sink`, chunk by chunk, giving each
    /// buffer back once all of it was taken, up to `limit` bytes (as
    /// `recv(2)` fills a buffer's spare room and no more, so a reader's
    /// buffer does not grow with what queued; `0`: no limit).
    /// `Ok(n)`: n bytes, `Ok(0)`: the peer's end; `WouldBlock`: nothing
    /// (see [`RecvMulti::idle`]); another error: the receive failed as
    /// `recv(2)` would have.
    pub fn try_read(&self, limit: usize, mut sink: impl FnMut(&[u8])) -> io::Result<usize> {
        let st = self.st();
        let inner = self.inner();
        let mut n = 0usize;
        while let Some(&(res, flags)) = st.queue.front() {
            if res <= 0 && n > 0 {
                break; // an end or an error after data: the next call's
            }
            let bid = cqueue::buffer_select(flags);
            if res > 0 {
                let room = if limit == 0 { usize::MAX } else { limit - n };
                if room == 0 {
                    break;
                }
                let (Some(bid), Some(b)) = (bid, inner.bufs.as_mut()) else {
                    st.queue.pop_front();
                    continue;
                };
                let chunk = &b.bytes(bid, res as usize)[st.taken..];
                let take = chunk.len().min(room);
                sink(&chunk[..take]);
                n += take;
                if take < chunk.len() {
                    st.taken += take;
                    break; // the rest of this buffer is the next call's
                }
                st.taken = 0;
                st.queue.pop_front();
                b.recycle(bid);
                continue;
            }
            st.queue.pop_front();
            if let (Some(bid), Some(b)) = (bid, inner.bufs.as_mut()) {
                b.recycle(bid);
            }
            match -res {
                0 => return Ok(0),
                libc::ENOBUFS => self.starved.set(true),
                libc::ECANCELED => {}
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
        if n > 0 {
            Ok(n)
        } else {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }
}

impl Drop for RecvMulti {
    fn drop(&mut self) {
        let st = self.st();
        let inner = self.inner();
        for (_, flags) in st.queue.drain(..) {
            if let (Some(bid), Some(b)) = (cqueue::buffer_select(flags), inner.bufs.as_mut()) {
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
