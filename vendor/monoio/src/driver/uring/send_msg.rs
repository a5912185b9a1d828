//! ringside's patch to monoio: UDP datagrams sent by SENDMSG through the
//! ring, each with its own buffer, submitted with the loop's one
//! `io_uring_enter` (with the other connections' sends and the wait) in
//! place of a `sendmsg(2)` each.
//!
//! A sender owns a fixed set of slots: a buffer, the `msghdr` that names
//! it, the destination and a GSO control message, boxed so that their
//! addresses hold while the kernel reads them. A slot is in flight from
//! its submission to its completion; the caller fills a free one and
//! submits it, and when none is free sends the plain way (the slots bound
//! what a core holds in flight). Each slot's completion lands in an
//! op-slab entry of the multishot kind ([`MultiState`]), which records the
//! result without waking anyone; the next use of the slot reads it.

use std::{cell::UnsafeCell, io, os::fd::RawFd, rc::Rc};

use io_uring::{opcode, types};

use super::{
    lifecycle::Lifecycle,
    multishot::{current_uring, MultiState},
    UringInner,
};

/// What the kernel reads of a slot while it is in flight.
struct SlotMem {
    hdr: libc::msghdr,
    iov: libc::iovec,
    name: libc::sockaddr_storage,
    control: [u64; 4],
    buf: Vec<u8>,
}

struct Slot {
    st: *mut MultiState,
    index: usize,
    mem: Box<SlotMem>,
}

/// A UDP socket's sends through the ring.
pub struct SendMsgRing {
    driver: Rc<UnsafeCell<UringInner>>,
    fd: RawFd,
    slots: Vec<Slot>,
    /// Where the search for a free slot starts (the oldest submitted).
    next: usize,
}

impl SendMsgRing {
    /// `slots` sends in flight at most, each of up to `capacity` bytes,
    /// when this thread runs io_uring; otherwise the error says why.
    pub fn new(fd: RawFd, slots: usize, capacity: usize) -> io::Result<SendMsgRing> {
        let this = current_uring()
            .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "not io_uring"))?;
        // SAFETY: single-threaded; no other borrow of the driver is live.
        let inner = unsafe { &mut *this.get() };
        let slots = (0..slots)
            .map(|_| {
                let mut st = Box::new(MultiState::new(true, usize::MAX));
                let ptr: *mut MultiState = &mut *st;
                let index = inner.ops.slab.insert(Lifecycle::Multi(st));
                Slot {
                    st: ptr,
                    index,
                    // SAFETY: all-zero msghdr, iovec and sockaddr are valid.
                    mem: Box::new(SlotMem {
                        hdr: unsafe { std::mem::zeroed() },
                        iov: unsafe { std::mem::zeroed() },
                        name: unsafe { std::mem::zeroed() },
                        control: [0; 4],
                        buf: Vec::with_capacity(capacity),
                    }),
                }
            })
            .collect();
        Ok(SendMsgRing {
            driver: this,
            fd,
            slots,
            next: 0,
        })
    }

    #[allow(clippy::mut_from_ref)]
    fn st(slot: &Slot) -> &mut MultiState {
        // SAFETY: the state lives in the slab entry until this sender drops
        // (or, in flight then, until its completion); single-threaded.
        unsafe { &mut *slot.st }
    }

    /// A free slot: its index, and the error its last send ended with, if
    /// any. `None`: every slot is in flight.
    pub fn free(&mut self) -> Option<(usize, Option<io::Error>)> {
        let n = self.slots.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let st = Self::st(&self.slots[i]);
            if st.armed {
                continue;
            }
            let mut err = None;
            for (res, _) in st.queue.drain(..) {
                if res < 0 {
                    err = Some(io::Error::from_raw_os_error(-res));
                }
            }
            return Some((i, err));
        }
        None
    }

    /// Slot `i`'s buffer, to be filled (free slots only).
    pub fn buf(&mut self, i: usize) -> &mut Vec<u8> {
        &mut self.slots[i].mem.buf
    }

    /// Sends slot `i`'s buffer to `name` (a `sockaddr_in` or `sockaddr_in6`
    /// as bytes), cut into datagrams of `segment` bytes by the kernel (GSO)
    /// where given. Submitted with the loop's next `io_uring_enter`; false
    /// if the submission queue would take nothing (the caller sends the
    /// buffer the plain way).
    pub fn submit(&mut self, i: usize, name: &[u8], segment: Option<u16>) -> bool {
        let slot = &mut self.slots[i];
        let m = &mut *slot.mem;
        let len = name.len().min(std::mem::size_of::<libc::sockaddr_storage>());
        // SAFETY: copying at most the storage's size into it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                name.as_ptr(),
                (&mut m.name as *mut libc::sockaddr_storage).cast::<u8>(),
                len,
            )
        };
        m.iov = libc::iovec {
            iov_base: m.buf.as_mut_ptr().cast(),
            iov_len: m.buf.len(),
        };
        // SAFETY: all-zero is a valid msghdr; every pointer set below
        // points into the boxed slot, which outlives the send.
        m.hdr = unsafe { std::mem::zeroed() };
        m.hdr.msg_name = (&mut m.name as *mut libc::sockaddr_storage).cast();
        m.hdr.msg_namelen = len as libc::socklen_t;
        m.hdr.msg_iov = &mut m.iov;
        m.hdr.msg_iovlen = 1;
        if let Some(seg) = segment.filter(|&s| usize::from(s) < m.buf.len()) {
            // SAFETY: the control buffer (32 bytes) holds one u16 message.
            unsafe {
                let space = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
                m.hdr.msg_control = m.control.as_mut_ptr().cast();
                m.hdr.msg_controllen = space as _;
                let c = libc::CMSG_FIRSTHDR(&m.hdr);
                (*c).cmsg_level = libc::SOL_UDP;
                (*c).cmsg_type = libc::UDP_SEGMENT;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg);
            }
        }
        let sqe = opcode::SendMsg::new(types::Fd(self.fd), &m.hdr)
            .build()
            .user_data(slot.index as u64);
        // SAFETY: single-threaded; no other borrow of the driver is live.
        let inner = unsafe { &mut *self.driver.get() };
        // SAFETY: the entry points into the boxed slot, kept until the
        // completion (a sender dropped before then leaks its slot).
        let pushed = unsafe {
            inner.uring.submission().push(&sqe).is_ok() || {
                let _ = inner.submit();
                inner.uring.submission().push(&sqe).is_ok()
            }
        };
        Self::st(slot).armed = pushed;
        self.next = (i + 1) % self.slots.len();
        pushed
    }
}

impl Drop for SendMsgRing {
    fn drop(&mut self) {
        // SAFETY: single-threaded; no other borrow of the driver is live.
        let inner = unsafe { &mut *self.driver.get() };
        for slot in self.slots.drain(..) {
            let st = Self::st(&slot);
            if st.armed {
                // The kernel may still read the slot: it stays allocated,
                // and the driver removes the entry at the completion.
                st.orphan = true;
                std::mem::forget(slot.mem);
            } else if let Some(r) = inner.ops.slab.get(slot.index) {
                r.remove();
            }
        }
    }
}
