//! The pace of one transfer with a client (a request body, a response), for
//! a minimum transfer rate on top of the per-wait timeouts.
//!
//! A per-wait timeout alone never ends a client that trickles a byte just
//! before each deadline (slowloris on a body, a slow reader of a large
//! response): it holds its connection and buffers for as long as it likes.
//! So each transfer also earns wait time by what it moves: the time spent
//! waiting on the client may total at most `timeout + bytes / min_rate`
//! (Apache's mod_reqtimeout `MinRate`), and no single wait may exceed
//! `timeout`. Only time spent waiting on the client counts, never time the
//! server spent on its side (an upstream, the disk). And for a response,
//! only bytes the client took count: what still sits in the socket's send
//! queue is not progress (a 4 MB send buffer would otherwise be hours of
//! credit at 500 B/s).

use std::time::Duration;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Meter {
    waited: Duration,
    bytes: u64,
}

impl Meter {
    /// How long the next wait on the client may last, with `queued` of the
    /// bytes recorded not yet taken by the client.
    pub fn allowance(&self, timeout: Duration, min_rate: u64, queued: u64) -> Duration {
        if min_rate == 0 {
            return timeout;
        }
        let moved = self.bytes.saturating_sub(queued);
        let earned =
            timeout.saturating_add(Duration::from_secs_f64(moved as f64 / min_rate as f64));
        earned.saturating_sub(self.waited).min(timeout)
    }

    /// Counts a wait on the client and the bytes it moved.
    pub fn record(&mut self, waited: Duration, bytes: u64) {
        self.waited += waited;
        self.bytes += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn allowance_follows_the_rate() {
        let mut m = Meter::default();
        // Off: always the timeout.
        m.record(100 * S, 0);
        assert_eq!(m.allowance(10 * S, 0, 0), 10 * S);
        // A trickler: 100 s waited for 1000 bytes at 100 B/s earns 10 + 10 s.
        let mut m = Meter::default();
        assert_eq!(m.allowance(10 * S, 100, 0), 10 * S);
        m.record(15 * S, 1000);
        assert_eq!(m.allowance(10 * S, 100, 0), 5 * S);
        m.record(5 * S, 0);
        assert_eq!(m.allowance(10 * S, 100, 0), Duration::ZERO);
        // A fast client is never limited below the per-wait timeout.
        let mut m = Meter::default();
        m.record(2 * S, 1 << 30);
        assert_eq!(m.allowance(10 * S, 100, 0), 10 * S);
        // Bytes still queued in the kernel are not progress.
        let mut m = Meter::default();
        m.record(15 * S, 1000);
        assert_eq!(m.allowance(10 * S, 100, 1000), Duration::ZERO);
        assert_eq!(m.allowance(10 * S, 100, 500), Duration::ZERO);
        assert_eq!(m.allowance(10 * S, 100, 0), 5 * S);
    }
}
