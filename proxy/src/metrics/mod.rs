//! Metrics: counters each core keeps for itself, summed only when scraped.
//!
//! Every counter has a single writer, the core that owns it, so an update is
//! a plain load and store of an atomic (no locked instruction, no shared
//! cache line between cores); the admin thread reads them with relaxed
//! loads. The lock in [`CoreStats`] is taken only when a handler is built
//! (start and reload) and when the admin thread scrapes, never per request.
//!
//! Counters outlive reloads: a rebuilt handler finds its route's and
//! server's counters again by their labels, so a reload does not reset
//! `_total` series.

pub mod admin;
mod pools;
mod process;
mod quic;
pub mod render;
pub(crate) mod text;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ringside_runtime::stats::WorkerStats;

use crate::upstream::failure::Reason;
use crate::upstream::shared::Shared;

/// A counter or gauge written by one thread only.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }

    #[inline]
    pub fn sub(&self, n: u64) {
        self.0
            .store(self.0.load(Relaxed).saturating_sub(n), Relaxed);
    }

    #[inline]
    pub fn set(&self, v: u64) {
        self.0.store(v, Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// Upper bounds of the latency histogram's buckets, in microseconds: 1,
/// 2.5, 5 per decade from 25 µs, since a cached static file is answered in
/// tens of microseconds and a lowest bound of 250 µs held every one of them.
pub const LATENCY_BOUNDS_US: [u64; 18] = [
    25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// What a route's requests did.
#[derive(Debug, Default)]
pub struct RouteStats {
    /// By status class: 1xx..5xx.
    pub by_class: [Counter; 5],
    pub body_bytes: Counter,
    pub head_bytes: Counter,
    /// Non-cumulative per bucket; the last is above every bound.
    pub latency: [Counter; LATENCY_BOUNDS_US.len() + 1],
    pub latency_sum_us: Counter,
    /// Requests a `[[rate_limit]]` refused.
    pub limited: Counter,
}

impl RouteStats {
    #[inline]
    pub fn record(&self, status: u16, body: u64, head: usize, elapsed: Duration) {
        let class = (status / 100).clamp(1, 5) as usize - 1;
        self.by_class[class].add(1);
        self.body_bytes.add(body);
        self.head_bytes.add(head as u64);
        let us = elapsed.as_micros() as u64;
        let bucket = LATENCY_BOUNDS_US.partition_point(|&b| b < us);
        self.latency[bucket].add(1);
        self.latency_sum_us.add(us);
    }
}

/// One upstream server as one core sees it.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Requests in flight to it (gauge).
    pub active: Counter,
    /// Idle pooled connections (gauge).
    pub idle: Counter,
    pub opened: Counter,
    pub reused: Counter,
    /// Failed tries, by `Reason::index`.
    pub failures: [Counter; Reason::ALL.len()],
    /// 1 while this core holds it down after failures (passive health).
    pub down: Counter,
    /// HTTP/2 connections to it (gauge).
    pub h2_conns: Counter,
}

/// Labels of a route: its host list (empty: any) and prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RouteLabel {
    pub route: String,
    pub host: String,
}

/// One core's counters.
pub struct CoreStats {
    pub worker: usize,
    pub conns: Arc<WorkerStats>,
    pub h2: Arc<ringside_http::h2::stats::Http2Stats>,
    pub quic: Arc<ringside_quic::stats::QuicStats>,
    pub compress: Arc<ringside_http::compress::stats::CompressStats>,
    pub client_limit: Arc<ringside_http::client_limit::ClientLimitStats>,
    routes: Mutex<Vec<(RouteLabel, Arc<RouteStats>)>>,
    servers: Mutex<Vec<(ServerKey, Arc<ServerStats>)>>,
    /// By `[cache.NAME]`.
    caches: Mutex<Vec<(String, Arc<ringside_cache::core::Stats>)>>,
}

/// (upstream name, server address).
pub type ServerKey = (String, String);

impl CoreStats {
    /// The counters of a route, made on first use.
    pub fn route(&self, label: RouteLabel) -> Arc<RouteStats> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = routes.iter().find(|(l, _)| *l == label) {
            return s.clone();
        }
        let s = Arc::new(RouteStats::default());
        routes.push((label, s.clone()));
        s
    }

    /// The counters of a cache, made on first use.
    pub fn cache(&self, name: &str) -> Arc<ringside_cache::core::Stats> {
        let mut caches = self.caches.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = caches.iter().find(|(n, _)| n == name) {
            return s.clone();
        }
        let s = Arc::default();
        caches.push((name.to_owned(), Arc::clone(&s)));
        s
    }

    /// Each cache's counters, by name.
    pub fn caches(&self) -> Vec<(String, Arc<ringside_cache::core::Stats>)> {
        self.caches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The counters of a server of an upstream, made on first use.
    pub fn server(&self, upstream: &str, server: &str) -> Arc<ServerStats> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = servers
            .iter()
            .find(|((u, a), _)| u == upstream && a == server)
        {
            return s.clone();
        }
        let s = Arc::new(ServerStats::default());
        servers.push(((upstream.to_owned(), server.to_owned()), s.clone()));
        s
    }
}

/// Every core's counters, and what the admin endpoint reports beside them.
pub struct Registry {
    cores: Mutex<Vec<Arc<CoreStats>>>,
    upstreams: Mutex<Vec<Arc<Shared>>>,
    pub started: Instant,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    pub backend: OnceLock<String>,
    /// `cache_max_open` of the config now serving.
    pub file_cache_max_open: AtomicU64,
}

/// The process's registry.
pub fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry {
        cores: Mutex::new(Vec::new()),
        upstreams: Mutex::new(Vec::new()),
        started: Instant::now(),
        reloads_ok: AtomicU64::new(0),
        reloads_failed: AtomicU64::new(0),
        backend: OnceLock::new(),
        file_cache_max_open: AtomicU64::new(0),
    })
}

impl Registry {
    /// A worker's counters, made the first time it asks.
    pub fn core(&self, worker: usize, conns: &Arc<WorkerStats>) -> Arc<CoreStats> {
        let mut cores = self.cores.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cores.iter().find(|c| c.worker == worker) {
            return c.clone();
        }
        let c = Arc::new(CoreStats {
            worker,
            conns: conns.clone(),
            h2: Arc::default(),
            compress: Arc::default(),
            quic: Arc::default(),
            client_limit: Arc::default(),
            routes: Mutex::new(Vec::new()),
            servers: Mutex::new(Vec::new()),
            caches: Mutex::new(Vec::new()),
        });
        cores.push(c.clone());
        cores.sort_by_key(|c| c.worker);
        c
    }

    /// The upstreams and the file cache bound of the config now serving.
    pub fn set_serving(&self, shared: &[Arc<Shared>], max_open: usize) {
        self.file_cache_max_open.store(max_open as u64, Relaxed);
        *self.upstreams.lock().unwrap_or_else(|e| e.into_inner()) = shared.to_vec();
    }

    fn cores(&self) -> Vec<Arc<CoreStats>> {
        self.cores.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn upstreams(&self) -> Vec<Arc<Shared>> {
        self.upstreams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_lands_in_the_first_bucket_at_or_above_it() {
        let r = RouteStats::default();
        r.record(200, 10, 5, Duration::from_micros(25));
        r.record(404, 0, 5, Duration::from_micros(26));
        r.record(502, 0, 5, Duration::from_secs(60));
        assert_eq!(r.latency[0].get(), 1);
        assert_eq!(r.latency[1].get(), 1);
        assert_eq!(r.latency[LATENCY_BOUNDS_US.len()].get(), 1);
        assert_eq!(r.by_class[1].get(), 1);
        assert_eq!(r.by_class[3].get(), 1);
        assert_eq!(r.by_class[4].get(), 1);
        assert_eq!(r.body_bytes.get(), 10);
    }
}
