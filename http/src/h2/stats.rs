//! Each core's HTTP/2 counters, readable from the metrics endpoint's
//! thread without a lock: one writer (the core), plain loads and stores.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// One core's HTTP/2 counters since start.
#[derive(Debug, Default)]
pub struct Http2Stats {
    pub connections: AtomicU64,
    pub streams: AtomicU64,
    pub resets_sent: AtomicU64,
    pub resets_received: AtomicU64,
    pub goaways_sent: AtomicU64,
    pub goaways_received: AtomicU64,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Http2Stats>>> = const { RefCell::new(None) };
}

/// Makes `stats` the counters of this thread's (the core's) connections.
pub fn set_current(stats: Arc<Http2Stats>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(stats));
}

/// Adds `n` to the counter `which` picks, if this thread has counters.
pub(crate) fn add(which: fn(&Http2Stats) -> &AtomicU64, n: u64) {
    if n == 0 {
        return;
    }
    CURRENT.with(|c| {
        if let Some(s) = &*c.borrow() {
            let a = which(s);
            a.store(a.load(Relaxed) + n, Relaxed);
        }
    });
}
