//! ringside's patch to monoio: coalesced waits.
//!
//! Upstream monoio parks with `io_uring_enter(min_complete = 1)`, so under
//! DEFER_TASKRUN the thread wakes for every completion. A thread that is
//! mostly waiting on many slow peers (a proxy in front of php-fpm) then
//! pays a context switch, and its peers a wake-up, per event. [`set_wait`]
//! lets the owner of the thread ask for up to `nr` completions or
//! `min_wait_us` microseconds, whichever comes first (Linux 6.12's
//! `min_wait_usec` in `io_uring_getevents_arg`; after that time the wait
//! ends at the first completion, so nothing waits longer than it would
//! have plus `min_wait_us`). Kernels without it refuse the argument with
//! EINVAL; the thread then parks as upstream does.
//!
//! What the park submits and completes at once (a send or a write with
//! room in the socket, a close) is not among the completions it waits
//! for: those post their completions as the park submits them, and
//! counted, they ended a park at once, only for the next to wait. In
//! front of a 4-child php-fpm (2 completions asked for of the 4 requests
//! in flight), the sends of each batch ended a park at once: 1.38
//! io_uring_enter calls a request.

use std::{cell::Cell, io, os::fd::AsRawFd};

use io_uring::IoUring;

thread_local! {
    static WAIT: Cell<(u32, u32)> = const { Cell::new((1, 0)) };
    static REFUSED: Cell<bool> = const { Cell::new(false) };
    /// Ops pushed since the last submission that complete as submitted.
    static AT_ONCE: Cell<u32> = const { Cell::new(0) };
}

/// An op that completes as it is submitted was pushed.
#[inline]
pub(crate) fn pushed_at_once() {
    AT_ONCE.with(|n| n.set(n.get().saturating_add(1)));
}

/// What was pushed is submitted (outside a coalesced wait).
#[inline]
pub(crate) fn submitted() {
    AT_ONCE.with(|n| n.set(0));
}

/// This thread's next parks wait for `nr` completions or `min_wait_us`,
/// whichever comes first; `nr <= 1` or `min_wait_us == 0` waits for one.
pub fn set_wait(nr: u32, min_wait_us: u32) {
    WAIT.with(|w| w.set((nr, min_wait_us)));
}

/// False once the kernel refused a coalesced wait on this thread.
pub fn supported() -> bool {
    !REFUSED.with(Cell::get)
}

/// The wait asked for, when it is more than one completion.
pub(crate) fn policy() -> Option<(u32, u32)> {
    let (nr, us) = WAIT.with(Cell::get);
    (nr > 1 && us > 0 && supported()).then_some((nr, us))
}

/// `struct io_uring_getevents_arg` (Linux 6.12: `pad` became
/// `min_wait_usec`).
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_EXT_ARG: u32 = 1 << 3;

/// Submits what is queued and waits as [`policy`] says, or until
/// `timeout`. `Ok(false)` when the kernel refused the argument: the caller
/// parks the usual way.
pub(crate) fn enter(
    uring: &mut IoUring,
    (nr, us): (u32, u32),
    timeout: Option<&io_uring::types::Timespec>,
) -> io::Result<bool> {
    let to_submit = uring.submission().len() as u32;
    let nr = nr.saturating_add(AT_ONCE.with(|n| n.replace(0)));
    let arg = GeteventsArg {
        sigmask: 0,
        sigmask_sz: 0,
        min_wait_usec: us,
        ts: timeout.map_or(0, |t| t as *const _ as u64),
    };
    // SAFETY: the ring's own fd, and an argument that outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            uring.as_raw_fd(),
            to_submit,
            nr,
            IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
            &arg as *const GeteventsArg,
            std::mem::size_of::<GeteventsArg>(),
        )
    };
    if r >= 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ETIME) | Some(libc::EINTR) => Ok(true),
        Some(libc::EINVAL) => {
            REFUSED.with(|r| r.set(true));
            Ok(false)
        }
        _ => Err(e),
    }
}
