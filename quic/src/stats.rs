//! This worker's QUIC counters, read by the metrics page: per core, as
//! every counter in ringside, with no atomics on the packet path.

use std::cell::Cell;

#[derive(Default, Clone, Copy, Debug)]
pub struct Counts {
    pub connections: u64,
    pub handshakes_failed: u64,
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    pub send_calls: u64,
    pub retries_sent: u64,
    pub refused: u64,
    /// Short-header packets whose connection ID names another worker:
    /// dropped here (never answered with a stateless reset).
    pub misdelivered: u64,
    pub send_errors: u64,
    pub lost_packets: u64,
}

thread_local! {
    static COUNTS: Cell<Counts> = Cell::new(Counts::default());
}

pub(crate) fn add(f: impl FnOnce(&mut Counts)) {
    COUNTS.with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
    });
}

/// This worker's counts so far.
pub fn snapshot() -> Counts {
    COUNTS.with(Cell::get)
}
