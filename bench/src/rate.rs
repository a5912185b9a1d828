//! Handing out requests to a core's connections: how many (`-n`), until
//! when (`-t`/`-d`), and in rate mode (`-R`) when each is meant to be sent.
//!
//! # Closed loop (ab, wrk)
//! Each connection sends its next request as soon as the previous response
//! is in. A stalled server then also stalls the load: while a response takes
//! 500 ms, the connection waiting for it sends nothing, and the requests it
//! would have sent in that time are never made, so never measured. The one
//! slow response looks like one bad sample among thousands of good ones.
//! That is *coordinated omission*, and it is why a closed-loop tool's
//! latency percentiles describe its own pace, not the server's.
//!
//! # Open loop (wrk2, `-R`)
//! Requests follow a schedule fixed before the run: request `i` of a core is
//! due at `start + i / rate` (the core's share of the rate), whatever
//! happened to the ones before it. A free connection takes the next request
//! in order, waits until it is due if it is early, and sends it. When every
//! connection is busy (the server stalls), due requests queue up here; when
//! one frees, it sends them back to back, late, to catch up. Latency is
//! measured from the **intended** send time, not from the actual one, so
//! the time a request spent queued behind the stall is in its latency, as
//! it would be for a user arriving on that schedule. A 500 ms stall at 1000
//! req/s on one connection thus shows as ~500 requests delayed by 500..0 ms,
//! and in the p99. The service time from the actual send is kept too
//! (`total`), which is what a closed-loop tool would have reported.
//!
//! The runtime's timers tick every millisecond, so a connection wakes at
//! the tick *before* a request is due and sends it then, up to 1 ms early;
//! the schedule (and so the rate) is unchanged. Its latency is counted from
//! the earlier of the intended and the actual send time: a request sent
//! early is measured from its actual send (never less than its service
//! time), one sent late from when it was due. A timer firing after the due
//! time would instead add up to 1 ms of the client's own lag to every
//! sample, which wrk2's output on a fast server shows as a ~1 ms floor.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// One request to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// This core's sequence number: chooses the URL, and the due time.
    pub seq: u64,
    /// With a rate: when it is due.
    pub intended: Option<Instant>,
    /// 0: the URL `seq` chooses; n: the n-th asset of that page, fetched
    /// after it under `--siege` (see [`crate::assets`]).
    pub part: u32,
}

/// A core's supply of tickets. Single-threaded: cells, no atomics.
#[derive(Debug)]
pub struct Tickets {
    /// u64::MAX: no count limit.
    left: Cell<u64>,
    next: Cell<u64>,
    start: Instant,
    end: Option<Instant>,
    /// Seconds between due times, with a rate.
    interval: Option<f64>,
    /// Time offset of this core's schedule, so cores interleave.
    phase: f64,
}

impl Tickets {
    /// `requests`: this core's share (None: unlimited); `rate`: its share of
    /// the rate; `phase`: fraction of an interval to shift its schedule by.
    pub fn new(
        requests: Option<u64>,
        start: Instant,
        duration: Option<Duration>,
        rate: Option<f64>,
        phase: f64,
    ) -> Tickets {
        Tickets {
            left: Cell::new(requests.unwrap_or(u64::MAX)),
            next: Cell::new(0),
            start,
            end: duration.map(|d| start + d),
            interval: rate.map(|r| 1.0 / r),
            phase,
        }
    }

    /// The next ticket, or None when the count or the time is used up.
    /// `now` is a recent clock reading (closed loop: checked against the end).
    pub fn take(&self, now: Instant) -> Option<Ticket> {
        let left = self.left.get();
        if left == 0 {
            return None;
        }
        let seq = self.next.get();
        let intended = self
            .interval
            .map(|iv| self.start + Duration::from_secs_f64((seq as f64 + self.phase) * iv));
        if let Some(end) = self.end {
            // Open loop: a request due after the end is not made, however
            // late the run is; nor one taken after the end, however early
            // it was due, or a rate the server cannot follow would keep the
            // run going until the backlog is served. Closed loop: none
            // starts after the end.
            if intended.is_some_and(|due| due >= end) || now >= end {
                self.left.set(0);
                return None;
            }
        }
        self.next.set(seq + 1);
        if left != u64::MAX {
            self.left.set(left - 1);
        }
        Some(Ticket {
            seq,
            intended,
            part: 0,
        })
    }

    /// Tickets handed out so far.
    pub fn taken(&self) -> u64 {
        self.next.get()
    }

    pub fn exhausted(&self) -> bool {
        self.left.get() == 0
    }
}

/// Splits `total` into `parts` shares differing by at most one, larger first.
pub fn split(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_limit_is_exact() {
        let now = Instant::now();
        let t = Tickets::new(Some(3), now, None, None, 0.0);
        let seqs: Vec<u64> = std::iter::from_fn(|| t.take(now)).map(|t| t.seq).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert!(t.exhausted());
        assert_eq!(t.take(now), None);
    }

    #[test]
    fn closed_loop_stops_at_the_end() {
        let start = Instant::now();
        let t = Tickets::new(None, start, Some(Duration::from_secs(1)), None, 0.0);
        assert!(t.take(start + Duration::from_millis(999)).is_some());
        assert_eq!(t.take(start + Duration::from_secs(1)), None);
        assert!(t.exhausted());
    }

    #[test]
    fn open_loop_schedule() {
        let start = Instant::now();
        let t = Tickets::new(None, start, Some(Duration::from_secs(1)), Some(4.0), 0.5);
        // Due at 0.125, 0.375, 0.625, 0.875 s; the next (1.125) is past the end,
        // however early it is asked for.
        let due: Vec<Duration> = std::iter::from_fn(|| t.take(start))
            .map(|t| t.intended.unwrap() - start)
            .collect();
        let ms: Vec<u128> = due.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [125, 375, 625, 875]);
        assert_eq!(t.taken(), 4);
    }

    #[test]
    fn open_loop_stops_at_the_end_however_far_behind() {
        let start = Instant::now();
        let t = Tickets::new(None, start, Some(Duration::from_secs(1)), Some(1e6), 0.0);
        // Far behind schedule: the next is due at 0.1 ms, but it is 1 s.
        assert!(t.take(start + Duration::from_millis(999)).is_some());
        assert_eq!(t.take(start + Duration::from_secs(1)), None);
        assert!(t.exhausted());
    }

    #[test]
    fn open_loop_with_count() {
        let start = Instant::now();
        let t = Tickets::new(Some(2), start, None, Some(1000.0), 0.0);
        assert_eq!(t.take(start).unwrap().intended, Some(start));
        assert_eq!(
            t.take(start).unwrap().intended,
            Some(start + Duration::from_millis(1))
        );
        assert_eq!(t.take(start), None);
    }

    #[test]
    fn split_shares() {
        assert_eq!(
            (0..3).map(|i| split(10, 3, i)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        assert_eq!((0..4).map(|i| split(2, 4, i)).sum::<u64>(), 2);
    }
}
