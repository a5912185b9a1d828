//! Coalesced waits on io_uring: fewer wake-ups for a core that is mostly
//! waiting on slow peers.
//!
//! A worker that parks for one completion at a time wakes once per event.
//! In front of php-fpm at 18k requests/s that is about two wake-ups per
//! request, and each costs this core a context switch and, through the
//! sends that follow one by one, a remote wake-up of the reader on the
//! other side (perf: ~50% of the front end's CPU in `sock_def_readable`
//! and `finish_task_switch`). With `coalesce_wait` set, a worker with at
//! least [`MIN_BUSY`] requests in progress parks until half of them have an
//! event or the wait has passed, then handles the batch in one go (the
//! monoio patch in `vendor/monoio/src/driver/uring/coalesce.rs`).
//!
//! The cost could be latency: a request may wait up to `coalesce_wait`
//! longer at a step. So it only applies when several requests are in
//! progress, where a batch fills quickly: a lone client (nothing else in
//! progress) is never held back, and a static file answered within one
//! turn of the loop is never in progress while the worker parks.
//!
//! Measured (1 worker, /hello.php on a 16-child php-fpm, wrk, medians of
//! 3; front-end CPU per request):
//! - -c50: off 33.8 us at 15.9k req/s; 100us 22.0 at 24.5k; 200us 19.4 at
//!   23.9k (nginx with kept connections: 34.8 at 14.9k). Latency falls
//!   too (200us: median 2.0 ms against 3.0, p99 3.5 against 5.9): the
//!   peers on the other core are woken less often and get more done.
//! - -c1 and -c4: the same req/s and median latency on or off.
//! - Proxying to a fast origin at 100k req/s, completions already arrive in
//!   batches and it changes nothing.
//!
//! Hence on by default at 100 us, which keeps most of the gain.

use std::cell::Cell;
use std::time::Duration;

/// Requests in progress below which a worker parks for one event.
pub const MIN_BUSY: usize = 4;

thread_local! {
    /// Zero on backends other than io_uring: the hot path then stops at
    /// one thread-local read.
    static MAX_WAIT_US: Cell<u32> = const { Cell::new(0) };
}

/// Sets this worker's longest coalesced wait (zero: off). Call after
/// [`crate::backend::set_current`]: only io_uring parks this way.
pub(crate) fn configure(max_wait: Duration) {
    let uring = crate::backend::current() == crate::backend::Backend::IoUring;
    let us = if uring {
        max_wait.as_micros().min(u32::MAX as u128) as u32
    } else {
        0
    };
    MAX_WAIT_US.with(|m| m.set(us));
}

/// The wait for `busy` requests in progress: (completions, microseconds).
pub fn policy(busy: usize, max_wait_us: u32) -> (u32, u32) {
    if max_wait_us == 0 || busy < MIN_BUSY {
        return (1, 0);
    }
    ((busy / 2).min(u32::MAX as usize) as u32, max_wait_us)
}

/// Called as the number of requests in progress on this worker changes.
#[inline]
pub(crate) fn busy_changed(busy: usize) {
    let max = MAX_WAIT_US.with(Cell::get);
    if max != 0 {
        apply(policy(busy, max));
    }
}

#[cfg(feature = "io-uring")]
fn apply((nr, us): (u32, u32)) {
    monoio::coalesce::set_wait(nr, us);
}

#[cfg(not(feature = "io-uring"))]
fn apply(_: (u32, u32)) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_half_of_what_is_in_progress_once_there_are_enough() {
        assert_eq!(policy(100, 0), (1, 0), "off");
        assert_eq!(policy(0, 200), (1, 0));
        assert_eq!(
            policy(MIN_BUSY - 1, 200),
            (1, 0),
            "a few clients never wait"
        );
        assert_eq!(policy(MIN_BUSY, 200), (2, 200));
        assert_eq!(policy(50, 200), (25, 200));
    }
}
