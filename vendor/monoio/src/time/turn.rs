//! ringside's patch to monoio: the time of the loop's turn.
//!
//! A server asks the time several times per request (deadlines, log
//! durations, cache freshness); each ask is a `clock_gettime`, about 15%
//! of ringside's user time per static request (perf, 26 B files). As
//! nginx caches its time per event-loop iteration, [`turn_now`] reads the
//! clock once per turn of this thread's runtime and hands out that time
//! until the runtime parks or starts another round of tasks. A turn is
//! short (the tasks that were ready), so the time lags by at most that.

use std::{cell::Cell, time::Instant};

thread_local! {
    static NOW: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The time as of this turn of the thread's runtime: read on the turn's
/// first ask and kept for the rest of it. Outside a runtime, the clock's.
#[inline]
pub fn turn_now() -> Instant {
    if !crate::runtime::CURRENT.is_set() {
        return Instant::now();
    }
    NOW.with(|n| match n.get() {
        Some(t) => t,
        None => {
            let t = Instant::now();
            n.set(Some(t));
            t
        }
    })
}

/// A new turn: the next ask reads the clock.
#[inline]
pub(crate) fn new_turn() {
    NOW.with(|n| n.set(None));
}
