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

const RST_STREAM: u8 = 0x3;
const GOAWAY: u8 = 0x7;

/// Counts the RST_STREAM and GOAWAY frames in the bytes a connection
/// sends, whoever wrote them (a handler's reset or the codec's own
/// REFUSED_STREAM and protocol errors), reading only frame headers.
#[derive(Default)]
pub(crate) struct Sent {
    /// Payload bytes still to skip (the preface never goes this way).
    skip: u32,
    head: [u8; 9],
    have: u8,
}

impl Sent {
    pub(crate) fn bytes(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            if self.skip > 0 {
                let n = (self.skip as usize).min(b.len());
                self.skip -= n as u32;
                b = &b[n..];
                continue;
            }
            let have = self.have as usize;
            let n = (9 - have).min(b.len());
            self.head[have..have + n].copy_from_slice(&b[..n]);
            b = &b[n..];
            if have + n < 9 {
                self.have = (have + n) as u8;
                return;
            }
            self.have = 0;
            self.skip = u32::from_be_bytes([0, self.head[0], self.head[1], self.head[2]]);
            match self.head[3] {
                RST_STREAM => add(|s| &s.resets_sent, 1),
                GOAWAY => add(|s| &s.goaways_sent, 1),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_and_goaways_sent_are_counted_across_splits() {
        let stats = Arc::new(Http2Stats::default());
        set_current(stats.clone());
        let frame = |kind: u8, len: usize| {
            let mut f = (len as u32).to_be_bytes()[1..].to_vec();
            f.extend_from_slice(&[kind, 0, 0, 0, 0, 1]);
            f.extend(std::iter::repeat_n(0u8, len));
            f
        };
        let mut all = frame(0x1, 30);
        all.extend(frame(RST_STREAM, 4));
        all.extend(frame(0x0, 100));
        all.extend(frame(RST_STREAM, 4));
        all.extend(frame(GOAWAY, 8));
        let mut sent = Sent::default();
        for piece in all.chunks(5) {
            sent.bytes(piece);
        }
        assert_eq!(stats.resets_sent.load(Relaxed), 2);
        assert_eq!(stats.goaways_sent.load(Relaxed), 1);
    }
}
