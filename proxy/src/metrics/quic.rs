//! The HTTP/3 families, per worker: QUIC connections and the streams on
//! them (and the requests served from 0-RTT), datagrams and send calls (their ratio is what GSO saves), Retry
//! sent, clients refused, packets that reached the wrong worker, and
//! packets lost and sent again.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use ringside_quic::stats::QuicStats;

use super::text::family;
use super::CoreStats;

/// A family: its name, its help, and its counter.
type Family = (&'static str, &'static str, fn(&QuicStats) -> &AtomicU64);

const FAMILIES: [Family; 15] = [
    (
        "ringside_http3_connections_total",
        "QUIC connections accepted, per worker.",
        |s| &s.connections,
    ),
    (
        "ringside_http3_handshakes_failed_total",
        "QUIC handshakes that ended unfinished, per worker.",
        |s| &s.handshakes_failed,
    ),
    (
        "ringside_http3_streams_total",
        "HTTP/3 request streams accepted, per worker.",
        |s| &s.streams,
    ),
    (
        "ringside_http3_early_requests_total",
        "HTTP/3 requests served from early data (0-RTT), before the handshake ended, per worker.",
        |s| &s.early_requests,
    ),
    (
        "ringside_http3_datagrams_received_total",
        "UDP datagrams read, per worker.",
        |s| &s.datagrams_in,
    ),
    (
        "ringside_http3_recv_calls_total",
        "recvmsg calls (none while io_uring's multishot RECVMSG serves), per worker.",
        |s| &s.recv_calls,
    ),
    (
        "ringside_http3_datagrams_sent_total",
        "UDP datagrams sent, per worker.",
        |s| &s.datagrams_out,
    ),
    (
        "ringside_http3_send_calls_total",
        "Sends (a GSO train of datagrams is one), by sendmsg or io_uring's SENDMSG, per worker.",
        |s| &s.send_calls,
    ),
    (
        "ringside_http3_ring_sends_total",
        "Of those, the sends through io_uring's ring (no system call of their own), per worker.",
        |s| &s.ring_sends,
    ),
    (
        "ringside_http3_retries_total",
        "Retry packets sent (address validation), per worker.",
        |s| &s.retries_sent,
    ),
    (
        "ringside_http3_refused_total",
        "New QUIC clients refused (too many handshakes), per worker.",
        |s| &s.refused,
    ),
    (
        "ringside_http3_misdelivered_total",
        "Packets of another worker's connection that reached this one, per worker.",
        |s| &s.misdelivered,
    ),
    (
        "ringside_http3_handed_over_total",
        "Of those, the packets handed to their worker, per worker.",
        |s| &s.handed_over,
    ),
    (
        "ringside_http3_send_errors_total",
        "Datagrams the kernel would not take, per worker.",
        |s| &s.send_errors,
    ),
    (
        "ringside_http3_lost_packets_total",
        "Packets QUIC judged lost (and sent again), of connections ended, per worker.",
        |s| &s.lost_packets,
    ),
];

pub(super) fn render(cores: &[Arc<CoreStats>], out: &mut String) {
    for (name, help, field) in FAMILIES {
        family(out, name, "counter", help);
        for c in cores {
            let _ = writeln!(
                out,
                "{name}{{worker=\"{}\"}} {}",
                c.worker,
                field(&c.quic).load(Relaxed)
            );
        }
    }
}
