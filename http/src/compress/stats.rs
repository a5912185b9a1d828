//! Each core's compression counters, readable from the metrics endpoint's
//! thread without a lock (one writer, the core), as `h2::stats` does.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::semantics::negotiation::Coding;

/// One core's compression counters since start.
#[derive(Debug, Default)]
pub struct CompressStats {
    /// Bodies compressed (cached or streamed), by coding: gzip, br, zstd.
    pub gzip: AtomicU64,
    pub br: AtomicU64,
    pub zstd: AtomicU64,
    /// Bytes into and out of the compressors.
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<CompressStats>>> = const { RefCell::new(None) };
}

/// Makes `stats` the counters of this thread's (the core's) compressions.
pub fn set_current(stats: Arc<CompressStats>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(stats));
}

fn add(which: fn(&CompressStats) -> &AtomicU64, n: u64) {
    CURRENT.with(|c| {
        if let Some(s) = &*c.borrow() {
            let a = which(s);
            a.store(a.load(Relaxed) + n, Relaxed);
        }
    });
}

pub(crate) fn count(c: Coding) {
    add(
        match c {
            Coding::Gzip => |s| &s.gzip,
            Coding::Br => |s| &s.br,
            Coding::Zstd => |s| &s.zstd,
        },
        1,
    );
}

pub(crate) fn input(n: u64) {
    add(|s| &s.bytes_in, n);
}

pub(crate) fn output(n: u64) {
    add(|s| &s.bytes_out, n);
}
