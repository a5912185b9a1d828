//! Counters a worker keeps about its connections, readable from other
//! threads (the metrics endpoint) without a lock.
//!
//! Each counter has one writer, the worker's own thread, so an update is a
//! plain load and store rather than a locked read-modify-write; readers on
//! other threads see a recent value, which is all a scrape needs.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A worker's connection counters.
#[derive(Debug, Default)]
pub struct WorkerStats {
    open: AtomicU64,
    accepted: AtomicU64,
    limit_reached: AtomicU64,
    tls_full: AtomicU64,
    tls_resumed: AtomicU64,
    tls_failed: AtomicU64,
    spare_pipes: AtomicU64,
    cached_files: AtomicU64,
    buffer_bytes: AtomicU64,
    /// The receive ring's figures (see [`WorkerStats::recv_ring`]).
    ring: [AtomicU64; 4],
}

impl WorkerStats {
    /// Client connections open now.
    pub fn open(&self) -> u64 {
        self.open.load(Relaxed)
    }

    /// Client connections accepted since start.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Relaxed)
    }

    /// Times this worker stopped accepting at `max_connections`.
    pub fn limit_reached(&self) -> u64 {
        self.limit_reached.load(Relaxed)
    }

    /// Empty pipes this worker keeps for splice (gauge; at most
    /// [`SPARE_PIPES_MAX`]), each two descriptors.
    pub fn spare_pipes(&self) -> u64 {
        self.spare_pipes.load(Relaxed)
    }

    /// Files this worker's static cache holds open (gauge; at most the
    /// config's `cache_max_open` per cache).
    pub fn cached_files(&self) -> u64 {
        self.cached_files.load(Relaxed)
    }

    /// Bytes of the request buffers this worker owns, in use or pooled
    /// (gauge). Pools are bounded by count and keep what a burst made, so
    /// this is the high-water mark of concurrent requests: memory kept by
    /// design, not leaked.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes.load(Relaxed)
    }

    /// The multishot receive ring (`recv_multi`): buffers in it (0: none,
    /// receives the plain way), buffers held now, receives ended by an
    /// empty ring, and receives paused for a connection holding too many,
    /// as of the worker's last sweep (every 100 ms).
    pub fn recv_ring(&self) -> [u64; 4] {
        [0, 1, 2, 3].map(|i| self.ring[i].load(Relaxed))
    }

    /// Client TLS handshakes: (full, resumed, failed) since start.
    pub fn tls_handshakes(&self) -> (u64, u64, u64) {
        (
            self.tls_full.load(Relaxed),
            self.tls_resumed.load(Relaxed),
            self.tls_failed.load(Relaxed),
        )
    }
}

/// The most spare pipes a worker keeps.
pub const SPARE_PIPES_MAX: usize = 16;

thread_local! {
    static CURRENT: RefCell<Option<Arc<WorkerStats>>> = const { RefCell::new(None) };
}

/// Makes `stats` this thread's counters.
pub(crate) fn set_current(stats: Arc<WorkerStats>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(stats));
}

#[inline]
fn bump(f: impl FnOnce(&WorkerStats)) {
    CURRENT.with(|c| {
        if let Some(s) = &*c.borrow() {
            f(s)
        }
    });
}

pub(crate) fn conn_opened() {
    bump(|s| {
        s.open.store(s.open.load(Relaxed) + 1, Relaxed);
        s.accepted.store(s.accepted.load(Relaxed) + 1, Relaxed);
    });
}

/// Client connections this thread's worker holds open (0 off a worker).
pub(crate) fn open_here() -> u64 {
    CURRENT.with(|c| c.borrow().as_ref().map_or(0, |s| s.open()))
}

pub(crate) fn conn_closed() {
    bump(|s| {
        s.open
            .store(s.open.load(Relaxed).saturating_sub(1), Relaxed)
    });
}

pub(crate) fn conn_limit_reached() {
    bump(|s| {
        s.limit_reached
            .store(s.limit_reached.load(Relaxed) + 1, Relaxed)
    });
}

/// Counts a client TLS handshake that ended with `r` on `stream`.
pub(crate) fn tls_handshake(r: &std::io::Result<()>, stream: &crate::net::TcpStream) {
    let resumed = r.is_ok() && stream.tls_resumed();
    bump(|s| {
        let c = match (r.is_ok(), resumed) {
            (false, _) => &s.tls_failed,
            (true, true) => &s.tls_resumed,
            (true, false) => &s.tls_full,
        };
        c.store(c.load(Relaxed) + 1, Relaxed);
    });
}

/// The worker's pool of spare pipes now holds `n`.
#[cfg_attr(not(rt_monoio), allow(dead_code))]
pub(crate) fn spare_pipes(n: usize) {
    bump(|s| s.spare_pipes.store(n as u64, Relaxed));
}

/// Publishes this worker's receive ring figures.
pub(crate) fn publish_ring() {
    let now = crate::recv_multi::ring_stats();
    bump(|s| {
        for (a, v) in s.ring.iter().zip(now) {
            a.store(v, Relaxed);
        }
    });
}

/// A static cache on this thread's worker opened (`delta` > 0) or let go
/// of (`delta` < 0) files it keeps open.
pub fn cached_files(delta: i64) {
    add(|s| &s.cached_files, delta);
}

/// A request buffer of `bytes` was made (`made`) or freed on this worker.
#[inline]
pub fn buffers(bytes: usize, made: bool) {
    add(
        |s| &s.buffer_bytes,
        if made { bytes as i64 } else { -(bytes as i64) },
    );
}

/// Adds `delta` to one of this worker's gauges, never below 0.
#[inline]
fn add(gauge: fn(&WorkerStats) -> &AtomicU64, delta: i64) {
    bump(|s| {
        let g = gauge(s);
        g.store(g.load(Relaxed).saturating_add_signed(delta), Relaxed)
    });
}
