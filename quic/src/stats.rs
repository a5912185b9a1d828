//! Each core's QUIC and HTTP/3 counters, readable from the metrics
//! endpoint's thread without a lock: one writer (the core), plain loads
//! and stores, as HTTP/2's.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// One core's counters since start.
#[derive(Debug, Default)]
pub struct QuicStats {
    /// Connections accepted (handshakes begun).
    pub connections: AtomicU64,
    /// Handshakes that ended before finishing.
    pub handshakes_failed: AtomicU64,
    /// HTTP/3 request streams accepted.
    pub streams: AtomicU64,
    /// Of those, requests served from early data (0-RTT), before the
    /// handshake ended.
    pub early_requests: AtomicU64,
    pub datagrams_in: AtomicU64,
    /// `recvmsg` calls: none while the io_uring datagram ring serves, bar
    /// the times it ran dry.
    pub recv_calls: AtomicU64,
    pub datagrams_out: AtomicU64,
    /// Sends (a GSO train is one), by `sendmsg` or through the ring ...
    pub send_calls: AtomicU64,
    /// ... and of those, the ones through io_uring's ring.
    pub ring_sends: AtomicU64,
    pub retries_sent: AtomicU64,
    /// New clients refused (handshakes at `max_handshakes`, no TLS).
    pub refused: AtomicU64,
    /// Short-header packets naming another worker's connection, never
    /// answered here with a stateless reset ...
    pub misdelivered: AtomicU64,
    /// ... and of those, the ones handed to their worker.
    pub handed_over: AtomicU64,
    /// Datagrams the kernel would not take (lost as on the network).
    pub send_errors: AtomicU64,
    /// Packets QUIC judged lost and sent again, of connections ended.
    pub lost_packets: AtomicU64,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<QuicStats>>> = const { RefCell::new(None) };
}

/// Makes `stats` the counters of this thread's (the core's) endpoints.
pub fn set_current(stats: Arc<QuicStats>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(stats));
}

/// Adds `n` to the counter `which` picks, if this thread has counters.
pub fn add(which: fn(&QuicStats) -> &AtomicU64, n: u64) {
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
