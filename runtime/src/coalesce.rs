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
//! Only what the kernel will complete counts. A request waiting in one
//! of the core's own queues (for a FastCGI connection, for a stream an
//! HTTP/2 server has no room for yet) holds a [`Queued`] guard and is
//! left out: nothing of it will come from the ring, so parking for its
//! completion only parks. In front of a 4-child php-fpm with 50 clients,
//! 46 requests queue behind 4 that are in flight; counting all 50, each
//! park waited for 25 completions that could not come and ran out its
//! whole stretched wait (up to 1 ms) for the 4 that did: 3,049 req/s
//! where nginx served 21,282.
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
//! [`STRETCH`]th of the time a short one takes here (the lower quartile
//! of their times, tracked as they end), never past [`MAX_STRETCHED_US`].
//! A wait that short of the requests' own time cannot add much to it, and
//! the batch it buys is larger. The quartile, not the mean: long-lived
//! requests (WebSockets, long polls, gRPC streams) among short ones would
//! stretch a mean, and with it every short request's waits. The case is
//! many streams multiplexed on few connections (an HTTP/2 client and an
//! HTTP/2 upstream, 1,000 requests in flight on 101 connections): half of
//! what is in progress never completes in one wait, so every park ran its
//! full 100 us and each upstream read carried four responses. Measured (1
//! worker, `h2load -c100 -m10` to an nginx h2c origin, 3 rounds, server
//! CPU per request): 100 us 10.1-12.3 us at 63-70k req/s; 400 us 8.6-11.0
//! at 65-72k; 800 us no better; 1.6 ms fewer requests (the wait then
//! bounds the rate). There the quartile runs 4 to 12 ms, so the wait 125
//! to 385 us: 8.41 us a request against HAProxy's 14.92 in one run, where
//! the fixed wait had measured 10.5-14 us. Where a quarter of the
//! requests take less than 32 times `coalesce_wait` (3.2 ms by default),
//! waits are exactly as before.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Requests in progress below which a worker parks for one event.
pub const MIN_BUSY: usize = 4;

/// The stretched wait is this fraction of a short request's time.
pub const STRETCH: u32 = 32;

/// The longest a stretched wait may be.
pub const MAX_STRETCHED_US: u32 = 1_000;

/// How far one request moves the quartile: up by this fraction, down by
/// three times it, which settles where a quarter of the requests are
/// shorter. Small, because requests end in batches of alike ones: at 1/32
/// the quartile of a steady HTTP/2 benchmark swung between 5 and 20 ms;
/// from 1 us it still reaches 14 ms within about 1,200 requests.
const STEP: f32 = 1.0 / 128.0;

/// The quartile stays within 1 us and the time past which every wait is
/// stretched its most.
const LONGEST_COUNTED_US: f32 = (STRETCH * MAX_STRETCHED_US) as f32;

thread_local! {
    /// Zero on backends other than io_uring: the hot path then stops at
    /// one thread-local read.
    static MAX_WAIT_US: Cell<u32> = const { Cell::new(0) };
    /// The lower quartile of the requests' times on this core, in
    /// microseconds.
    static QUARTILE: Cell<f32> = const { Cell::new(1.0) };
    /// Requests in progress that wait in one of this core's own queues.
    static QUEUED: Cell<usize> = const { Cell::new(0) };
}

/// Held by a request while it waits in one of this core's own queues,
/// where no completion of the ring's will end its wait (only another
/// request's end, on this core): the coalesced wait leaves it out of what
/// it waits for.
#[must_use = "the request counts as queued only while the guard lives"]
pub struct Queued(());

impl Queued {
    pub fn new() -> Queued {
        QUEUED.with(|q| q.set(q.get() + 1));
        busy_changed(crate::shutdown::busy());
        Queued(())
    }
}

impl Default for Queued {
    fn default() -> Queued {
        Queued::new()
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        QUEUED.with(|q| q.set(q.get() - 1));
        busy_changed(crate::shutdown::busy());
    }
}

/// Requests of this core that wait in one of its own queues.
pub fn queued() -> usize {
    QUEUED.with(Cell::get)
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

/// The wait for `busy` requests in progress, when a quarter of the
/// requests here take less than `short_us`: (completions, microseconds).
pub fn policy(busy: usize, wait_us: u32, short_us: u32) -> (u32, u32) {
    if wait_us == 0 || busy < MIN_BUSY {
        return (1, 0);
    }
    let stretched = (short_us / STRETCH).min(MAX_STRETCHED_US);
    (
        (busy / 2).min(u32::MAX as usize) as u32,
        wait_us.max(stretched),
    )
}

/// The quartile after a request of `took_us`.
pub fn tracked(quartile: f32, took_us: f32) -> f32 {
    let q = if took_us < quartile {
        quartile * (1.0 - 3.0 * STEP)
    } else {
        quartile * (1.0 + STEP)
    };
    q.clamp(1.0, LONGEST_COUNTED_US)
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
        let took_us = took.as_secs_f32() * 1e6;
        QUARTILE.with(|q| q.set(tracked(q.get(), took_us)));
    }
}

/// Called as the number of requests in progress on this worker changes,
/// or the number of them that wait in its queues.
#[inline]
pub(crate) fn busy_changed(busy: usize) {
    if let Some(wait) = wait_for(busy) {
        apply(wait);
    }
}

/// The wait for this core with `busy` requests in progress; `None` where
/// waits are not coalesced.
#[inline]
fn wait_for(busy: usize) -> Option<(u32, u32)> {
    let max = MAX_WAIT_US.with(Cell::get);
    (max != 0).then(|| {
        let short = QUARTILE.with(Cell::get) as u32;
        // A queued request is among the busy ones: its connection is
        // inside a request.
        let in_flight = busy.saturating_sub(QUEUED.with(Cell::get));
        policy(in_flight, max, short)
    })
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
    fn the_quartile_settles_among_the_shortest_quarter() {
        let mut q = 1.0;
        // A request in four takes 1 ms, the rest 5 to 7 ms.
        let times = [1_000.0, 5_000.0, 6_000.0, 7_000.0];
        for t in times.iter().cycle().take(4_000) {
            q = tracked(q, *t);
        }
        assert!((1_000.0..=5_000.0 * (1.0 + STEP)).contains(&q), "{q}");
        // All alike: it follows them, within a step or two.
        for _ in 0..2_000 {
            q = tracked(q, 14_000.0);
        }
        assert!((q / 14_000.0 - 1.0).abs() < 3.0 * STEP, "{q}");
        for _ in 0..2_000 {
            q = tracked(q, 200.0);
        }
        assert!((q / 200.0 - 1.0).abs() < 3.0 * STEP, "{q}");
    }

    #[test]
    fn long_lived_requests_among_short_ones_do_not_stretch_the_wait() {
        // Half of the requests are hour-long streams, half take 1 ms.
        let mut q = 1.0;
        for i in 0..4_000 {
            let t = if i % 2 == 0 { 3_600e6 } else { 1_000.0 };
            q = tracked(q, t);
        }
        assert!(q < 1_500.0, "{q}");
        assert_eq!(policy(100, 100, q as u32), (50, 100));
        // All of them long: the most the wait stretches.
        for _ in 0..2_000 {
            q = tracked(q, 3_600e6);
        }
        assert_eq!(q, LONGEST_COUNTED_US);
        assert_eq!(policy(100, 100, q as u32), (50, MAX_STRETCHED_US));
    }

    #[test]
    fn requests_in_the_cores_own_queues_are_not_waited_for() {
        MAX_WAIT_US.with(|m| m.set(100));
        QUARTILE.with(|q| q.set(1.0));
        // 50 requests, 46 of them queued behind a 4-child FastCGI pool:
        // the park waits for 2 of the 4 in flight, not 25 of 50.
        assert_eq!(wait_for(50), Some((25, 100)));
        let waiting: Vec<Queued> = (0..46).map(|_| Queued::new()).collect();
        assert_eq!(queued(), 46);
        assert_eq!(wait_for(50), Some((2, 100)));
        // With fewer than MIN_BUSY in flight, one completion ends a park.
        let one_more = Queued::new();
        assert_eq!(wait_for(50), Some((1, 0)));
        drop(one_more);
        drop(waiting);
        assert_eq!(queued(), 0);
        assert_eq!(wait_for(50), Some((25, 100)));
        MAX_WAIT_US.with(|m| m.set(0));
        assert_eq!(wait_for(50), None, "off");
    }

    #[test]
    fn an_ended_request_moves_this_cores_quartile() {
        QUARTILE.with(|q| q.set(1_000.0));
        request_ended(Some(std::time::Instant::now() - Duration::from_secs(3600)));
        assert_eq!(QUARTILE.with(Cell::get), 1_000.0 * (1.0 + STEP));
        request_ended(None);
        assert_eq!(
            QUARTILE.with(Cell::get),
            1_000.0 * (1.0 + STEP),
            "no clock, no change"
        );
    }
}
