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
//!
//! Where requests take long on this core, the wait grows with them: to
//! [`STRETCH`]th of their average time here (a moving average kept as
//! they end), never past [`MAX_STRETCHED_US`]. A wait that short of the
//! requests' own time cannot add much to it, and the batch it buys is
//! larger. The case is many streams multiplexed on few connections (an
//! HTTP/2 client and an HTTP/2 upstream, 1,000 requests in flight on 101
//! connections): half of what is in progress never completes in one
//! wait, so every park ran its full 100 us and each upstream read carried
//! four responses. Measured (1 worker, `h2load -c100 -m10` to an nginx h2c
//! origin, 3 rounds, server CPU per request): 100 us 10.1-12.3 us at
//! 63-70k req/s; 400 us 8.6-11.0 at 65-72k; 800 us no better; 1.6 ms fewer
//! requests (the wait then bounds the rate). Requests of 14 ms there make
//! the stretched wait about 440 us. Requests shorter than 32 times
//! `coalesce_wait` (3.2 ms by default) wait exactly as before.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Requests in progress below which a worker parks for one event.
pub const MIN_BUSY: usize = 4;

/// The stretched wait is this fraction of the average request's time.
pub const STRETCH: u32 = 32;

/// The longest a stretched wait may be.
pub const MAX_STRETCHED_US: u32 = 1_000;

/// The moving average weighs each new request this fraction (1/2^N).
const AVERAGE_SHIFT: u32 = 5;

/// Requests longer than this count as this long.
const LONGEST_COUNTED_US: u64 = STRETCH as u64 * MAX_STRETCHED_US as u64;

thread_local! {
    /// Zero on backends other than io_uring: the hot path then stops at
    /// one thread-local read.
    static MAX_WAIT_US: Cell<u32> = const { Cell::new(0) };
    /// The moving average of a request's time on this core, in
    /// microseconds times 2^AVERAGE_SHIFT.
    static AVERAGE: Cell<u64> = const { Cell::new(0) };
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

/// The wait for `busy` requests in progress, when requests take
/// `average_us` here: (completions, microseconds).
pub fn policy(busy: usize, wait_us: u32, average_us: u32) -> (u32, u32) {
    if wait_us == 0 || busy < MIN_BUSY {
        return (1, 0);
    }
    let stretched = (average_us / STRETCH).min(MAX_STRETCHED_US);
    (
        (busy / 2).min(u32::MAX as usize) as u32,
        wait_us.max(stretched),
    )
}

/// The moving average after a request of `took_us`.
pub fn averaged(average: u64, took_us: u64) -> u64 {
    average - (average >> AVERAGE_SHIFT) + took_us
}

/// When a request began, where waits are coalesced (else no clock is read).
#[inline]
pub(crate) fn request_began() -> Option<Instant> {
    (MAX_WAIT_US.with(Cell::get) != 0).then(crate::clock::now)
}

/// A request that began at `began` ended.
#[inline]
pub(crate) fn request_ended(began: Option<Instant>) {
    if let Some(began) = began {
        let took = crate::clock::now().saturating_duration_since(began);
        // A request past the longest stretch counts as that long: a
        // long-lived stream (a WebSocket, a gRPC stream) moves the average
        // by at most a millisecond, not its whole life.
        let took_us = took.as_micros().min(LONGEST_COUNTED_US as u128) as u64;
        AVERAGE.with(|a| a.set(averaged(a.get(), took_us)));
    }
}

/// Called as the number of requests in progress on this worker changes.
#[inline]
pub(crate) fn busy_changed(busy: usize) {
    let max = MAX_WAIT_US.with(Cell::get);
    if max != 0 {
        let average = AVERAGE.with(Cell::get) >> AVERAGE_SHIFT;
        apply(policy(busy, max, average.min(u32::MAX as u64) as u32));
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
        assert_eq!(policy(100, 0, 0), (1, 0), "off");
        assert_eq!(policy(0, 200, 0), (1, 0));
        assert_eq!(
            policy(MIN_BUSY - 1, 200, 0),
            (1, 0),
            "a few clients never wait"
        );
        assert_eq!(policy(MIN_BUSY, 200, 0), (2, 200));
        assert_eq!(policy(50, 200, 0), (25, 200));
    }

    #[test]
    fn long_requests_stretch_the_wait_within_its_bound() {
        // Shorter than 32 waits: the configured wait.
        assert_eq!(policy(1000, 100, 3_000), (500, 100));
        assert_eq!(policy(1000, 100, 14_000), (500, 14_000 / STRETCH));
        assert_eq!(policy(1000, 100, 1_000_000), (500, MAX_STRETCHED_US));
        // A configured wait above the bound is kept; off stays off.
        assert_eq!(policy(1000, 5_000, 1_000_000), (500, 5_000));
        assert_eq!(policy(1000, 0, 1_000_000), (1, 0));
        assert_eq!(policy(MIN_BUSY - 1, 100, 1_000_000), (1, 0));
    }

    #[test]
    fn the_average_follows_request_times() {
        let mut a = 0;
        for _ in 0..400 {
            a = averaged(a, 10_000);
        }
        assert!(
            (a >> AVERAGE_SHIFT).abs_diff(10_000) <= 1,
            "{}",
            a >> AVERAGE_SHIFT
        );
        for _ in 0..400 {
            a = averaged(a, 200);
        }
        assert!(
            (a >> AVERAGE_SHIFT).abs_diff(200) <= 1,
            "{}",
            a >> AVERAGE_SHIFT
        );
    }

    #[test]
    fn a_long_lived_stream_moves_the_average_by_its_bounded_share() {
        AVERAGE.with(|a| a.set(200 << AVERAGE_SHIFT));
        let hour_ago = std::time::Instant::now() - Duration::from_secs(3600);
        request_ended(Some(hour_ago));
        let after = AVERAGE.with(Cell::get) >> AVERAGE_SHIFT;
        // 200 less its share, and the longest counted's share.
        let expected = 200 - 200 / 32 + LONGEST_COUNTED_US / 32;
        assert!(after.abs_diff(expected) <= 1, "{after} against {expected}");
    }
}
