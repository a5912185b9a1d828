//! The time as of this turn of the worker's loop.
//!
//! A request asks the time several times (its deadlines, its log duration,
//! the file cache's freshness); each ask of the clock is a
//! `clock_gettime`, which perf put at 15% of the user time of a static
//! request. Like nginx's cached time, [`now`] reads the clock once per turn
//! of the loop (the monoio patch `vendor/monoio/src/time/turn.rs`): all
//! the tasks that run between two waits share it. It lags the clock by at
//! most the turn, which deadlines of milliseconds and more do not notice.
//! Code that measures short spans (send and receive pacing, the FastCGI
//! service times that size its concurrency) keeps reading the clock.

use std::time::Instant;

/// The time as of this turn of the loop (outside a monoio runtime, and on
/// glommio, the clock's).
#[inline]
pub fn now() -> Instant {
    #[cfg(rt_monoio)]
    {
        monoio::time::turn_now()
    }
    #[cfg(not(rt_monoio))]
    {
        Instant::now()
    }
}
