//! What one core counted, and the whole run's totals.
//!
//! Every request the run takes on ends in exactly one of: a complete
//! response (which may still be a Length failure or a non-2xx), or a
//! Connect, Receive or Exception failure. So, for `-n N`,
//! `complete + connect + receive + exceptions == N`, and `complete` is the
//! number of responses the server sent in full: the count its access log
//! has. A request the server never saw is not counted at all: when a
//! keep-alive connection is closed by the server *between* responses (its
//! keep-alive limit, an idle timeout racing our send), the requests queued
//! on it are sent again on a new connection, as ab does; `reconnects` says
//! how often.
//!
//! Failure kinds, as in ab's "(Connect: , Receive: , Length: , Exceptions: )":
//! - Connect: connect(2) failed or timed out;
//! - Receive: reset, EOF in the middle of a response, or no response within
//!   `-s` (`resets` and `timeouts` break these out in `--json`);
//! - Length: the body's size differs from the first response's for that
//!   URL (not with `-l`);
//! - Exceptions: a response that does not parse, or a failed send.

use std::time::Instant;

use serde::Serialize;

use crate::hist::Series;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub complete: u64,
    pub failed_connect: u64,
    pub failed_receive: u64,
    pub failed_length: u64,
    pub failed_exception: u64,
    pub timeouts: u64,
    pub resets: u64,
    pub write_errors: u64,
    pub non_2xx: u64,
    /// Responses by class: 1xx (101 only), 2xx, 3xx, 4xx, 5xx, other.
    pub status_classes: [u64; 6],
    /// Responses after which the connection stayed open (with -k).
    pub keepalive: u64,
    pub connections: u64,
    /// Keep-alive connections the server closed between responses, whose
    /// queued requests were sent again.
    pub reconnects: u64,
    /// Raw bytes received: heads, framing and bodies (ab's "Total transferred").
    pub bytes_read: u64,
    /// Body bytes (ab's "HTML transferred").
    pub body_bytes: u64,
    /// Request body bytes sent (ab's "Total body sent").
    pub body_sent: u64,
    /// TLS handshakes completed, and how many of them resumed a session.
    pub tls_handshakes: u64,
    pub tls_resumed: u64,
    /// HTTP/2: HEADERS payload bytes received (compressed), streams the
    /// server reset (each a Receive failure, REFUSED_STREAM aside: sent
    /// again), and GOAWAYs received.
    pub h2_header_bytes: u64,
    pub h2_resets: u64,
    pub h2_goaways: u64,
    /// HTTP/2: the most streams one connection had in flight.
    pub h2_max_in_flight: u64,
}

impl Counts {
    pub fn failed(&self) -> u64 {
        self.failed_connect + self.failed_receive + self.failed_length + self.failed_exception
    }

    /// Requests that ended without a response: siege's "Failed transactions".
    pub fn socket_failures(&self) -> u64 {
        self.failed_connect + self.failed_receive + self.failed_exception
    }

    /// Responses below 400: siege's "Successful transactions".
    pub fn below_400(&self) -> u64 {
        self.status_classes[0] + self.status_classes[1] + self.status_classes[2]
    }

    pub fn add(&mut self, o: &Counts) {
        self.complete += o.complete;
        self.failed_connect += o.failed_connect;
        self.failed_receive += o.failed_receive;
        self.failed_length += o.failed_length;
        self.failed_exception += o.failed_exception;
        self.timeouts += o.timeouts;
        self.resets += o.resets;
        self.write_errors += o.write_errors;
        self.non_2xx += o.non_2xx;
        for (a, b) in self.status_classes.iter_mut().zip(o.status_classes) {
            *a += b;
        }
        self.keepalive += o.keepalive;
        self.connections += o.connections;
        self.reconnects += o.reconnects;
        self.bytes_read += o.bytes_read;
        self.body_bytes += o.body_bytes;
        self.body_sent += o.body_sent;
        self.tls_handshakes += o.tls_handshakes;
        self.tls_resumed += o.tls_resumed;
        self.h2_header_bytes += o.h2_header_bytes;
        self.h2_resets += o.h2_resets;
        self.h2_goaways += o.h2_goaways;
        self.h2_max_in_flight = self.h2_max_in_flight.max(o.h2_max_in_flight);
    }

    pub fn count_status(&mut self, status: u16) {
        let class = match status {
            100..=199 => 0,
            200..=299 => 1,
            300..=399 => 2,
            400..=499 => 3,
            500..=599 => 4,
            _ => 5,
        };
        self.status_classes[class] += 1;
        if class != 1 {
            self.non_2xx += 1;
        }
    }
}

/// One core's counts and times; merged across cores at the end.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub counts: Counts,
    /// ab's Connection Times rows, per complete response, in µs.
    pub connect: Series,
    pub waiting: Series,
    pub processing: Series,
    pub total: Series,
    /// With -R: from the intended send time to the response's end
    /// (coordinated omission corrected). Without -R: the same as `total`.
    pub latency: Series,
    /// When the last response ended.
    pub last_done: Option<Instant>,
    /// The errno of the last failed connect, for ab's exit status.
    pub connect_errno: Option<i32>,
    /// Every complete request's times, with `-g` only.
    pub samples: Vec<Sample>,
}

/// One request's times, for ab's `-g` file.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub start: Instant,
    pub connect_us: u64,
    pub total_us: u64,
    pub wait_us: u64,
}

impl Stats {
    pub fn merge(&mut self, o: &Stats) {
        self.counts.add(&o.counts);
        self.connect.merge(&o.connect);
        self.waiting.merge(&o.waiting);
        self.processing.merge(&o.processing);
        self.total.merge(&o.total);
        self.latency.merge(&o.latency);
        self.last_done = match (self.last_done, o.last_done) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.connect_errno = self.connect_errno.or(o.connect_errno);
        self.samples.extend_from_slice(&o.samples);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_classes_and_failures() {
        let mut c = Counts::default();
        for s in [101, 200, 204, 301, 404, 503, 700] {
            c.count_status(s);
        }
        assert_eq!(c.status_classes, [1, 2, 1, 1, 1, 1]);
        assert_eq!(c.non_2xx, 5);
        assert_eq!(c.below_400(), 4);
        c.failed_connect = 1;
        c.failed_receive = 2;
        c.failed_length = 4;
        c.failed_exception = 8;
        assert_eq!((c.failed(), c.socket_failures()), (15, 11));
        let mut sum = Counts::default();
        sum.add(&c);
        sum.add(&c);
        assert_eq!(sum.failed(), 30);
        assert_eq!(sum.status_classes, [2, 4, 2, 2, 2, 2]);
    }
}
