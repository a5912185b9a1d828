//! A FastCGI server's capacity as learned from how it answers, shared by
//! every core of the process.
//!
//! A php-fpm child serves one connection until the connection closes, so a
//! kept connection holds a child whether it is busy or idle, and the number
//! of connections a server actually serves at once is its capacity. php-fpm
//! does not say it (FCGI_GET_VALUES is answered with FCGI_MPXS_CONNS only),
//! so each new connection asks FCGI_GET_VALUES first (`super::opener`): an
//! answer means a child took the connection, and no request has been
//! written yet, so one that waits unanswered can be given up safely.
//!
//! - **Lower.** A new connection unanswered after `capacity_probe` means no
//!   child is free: the limit becomes the connections served now. The
//!   unanswered one stays in the server's backlog, and if its core has
//!   requests waiting and less than its fair part of the limit, the core
//!   holding the most over its own part is asked to close a connection (an
//!   idle one at once, else the next one its requests free), so the child
//!   it frees takes the waiting one.
//! - **Raise.** While a core's requests wait and no connection is idle
//!   anywhere, the core keeps one connection more than the limit waiting
//!   in the backlog; when it is answered with more connections served than
//!   the limit, the limit rises to them. A `pm = dynamic` pool grows under
//!   load this way, and a pool that a php-fpm reload made larger is found.
//!
//! The limit is per server address, whatever upstream names it, and holds
//! across config reloads. Cores read and move these counters only when a
//! connection opens or closes and when a request must wait; a request
//! served from the core's own pool touches nothing shared. Each core keeps
//! its own counts (held, idle, waiting) in a slot of its own cache line,
//! which other cores read only to decide whom to ask, and asks reach a core
//! by its bell (`ringside_runtime::doorbell`).
//!
//! While an upgrade's processes overlap, each also counts what the other
//! holds of the server (`super::overlap`), so that the two stay within the
//! capacity together.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use ringside_runtime::doorbell::Bell;

use crate::upstream::addr::PeerAddr;

/// The limit before anything was learned: only the ceiling bounds it.
const UNKNOWN: u32 = u32::MAX;

/// Whether the server answers FCGI_GET_VALUES, which learning needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    /// Not known yet: new connections ask.
    Unknown,
    Yes,
    /// It closed a connection that asked: new connections do not ask, and
    /// the ceiling alone bounds them.
    No,
}

/// One server's learned capacity, shared by the cores.
pub struct Capacity {
    server: String,
    limit: AtomicU32,
    /// Connections that were answered and are still open, all cores.
    served: AtomicU32,
    /// Connections opened and not yet answered, all cores.
    opening: AtomicU32,
    answers: AtomicU32,
    /// Milliseconds since `epoch` of the last log line about the limit.
    last_log: AtomicU64,
    epoch: Instant,
    cores: Box<[CoreSlot]>,
    /// This process's counts where other processes see them.
    share: Option<super::overlap::Share>,
}

/// What one core publishes about its connections to the server.
#[repr(align(64))]
#[derive(Default)]
pub struct CoreSlot {
    /// Served connections this core holds, busy or idle.
    pub held: AtomicU32,
    /// Of those, idle in its pool.
    pub idle: AtomicU32,
    /// Requests waiting in its queue.
    pub waiting: AtomicU32,
    /// Connections other cores asked it to close.
    pub release: AtomicU32,
    bell: OnceLock<Arc<Bell>>,
}

/// How often the limit's changes are logged at most: it moves with load
/// (a dynamic pool grows, a probe waits behind a slow script), and a log
/// line per move would flood.
const LOG_EVERY_MS: u64 = 10_000;

fn registry() -> &'static Mutex<HashMap<PeerAddr, Weak<Capacity>>> {
    static R: OnceLock<Mutex<HashMap<PeerAddr, Weak<Capacity>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// Limits a previous process learned (a binary upgrade hands them over),
/// by server address: a server's first `Capacity` starts from it.
static HANDED_OVER: Mutex<Vec<(String, u32)>> = Mutex::new(Vec::new());

fn handed_over(server: &str) -> Option<u32> {
    let h = HANDED_OVER.lock().unwrap_or_else(|e| e.into_inner());
    h.iter().find(|(s, _)| s == server).map(|&(_, l)| l)
}

/// Takes the limits a previous process learned (see `crate::upgrade`).
pub fn hand_over_in(limits: Vec<(String, u32)>) {
    *HANDED_OVER.lock().unwrap_or_else(|e| e.into_inner()) = limits;
}

/// Every limit learned so far, by server address, to hand to a new
/// process.
pub fn learned_limits() -> Vec<(String, u32)> {
    let m = registry().lock().unwrap_or_else(|e| e.into_inner());
    m.values()
        .filter_map(Weak::upgrade)
        .filter_map(|c| Some((c.server.clone(), c.learned()?)))
        .collect()
}

impl Capacity {
    /// The capacity of the server at `addr`, shared with every other core
    /// and upstream that talks to it while one of them holds it.
    pub fn of(addr: &PeerAddr, workers: usize) -> Arc<Capacity> {
        let mut m = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = m.get(addr).and_then(Weak::upgrade) {
            if c.cores.len() >= workers {
                return c;
            }
        }
        m.retain(|_, w| w.strong_count() > 0);
        let mut c = Capacity::new(addr.to_string(), workers);
        c.share = super::overlap::Share::of(&c.server);
        let c = Arc::new(c);
        m.insert(addr.clone(), Arc::downgrade(&c));
        c
    }

    /// The capacity of the server at `addr`, where some core holds one.
    pub fn find(addr: &PeerAddr) -> Option<Arc<Capacity>> {
        let m = registry().lock().unwrap_or_else(|e| e.into_inner());
        m.get(addr).and_then(Weak::upgrade)
    }

    pub fn new(server: String, workers: usize) -> Capacity {
        let limit = handed_over(&server).unwrap_or(UNKNOWN);
        Capacity {
            server,
            limit: AtomicU32::new(limit),
            served: AtomicU32::new(0),
            opening: AtomicU32::new(0),
            answers: AtomicU32::new(0),
            last_log: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
            cores: (0..workers.max(1)).map(|_| CoreSlot::default()).collect(),
            share: None,
        }
    }

    /// This capacity with its counts shown to other processes by `share`.
    #[cfg(test)]
    pub fn with_share(mut self, share: super::overlap::Share) -> Capacity {
        self.share = Some(share);
        self
    }

    pub fn core(&self, i: usize) -> &CoreSlot {
        &self.cores[i]
    }

    /// Registers the bell that wakes core `i`.
    pub fn set_bell(&self, i: usize, bell: Arc<Bell>) {
        let _ = self.cores[i].bell.set(bell);
    }

    /// The learned limit, if any was learned.
    pub fn learned(&self) -> Option<u32> {
        match self.limit.load(Ordering::Relaxed) {
            UNKNOWN => None,
            n => Some(n),
        }
    }

    pub fn served(&self) -> u32 {
        self.served.load(Ordering::Relaxed)
    }

    pub fn answers(&self) -> Answers {
        match self.answers.load(Ordering::Relaxed) {
            1 => Answers::Yes,
            2 => Answers::No,
            _ => Answers::Unknown,
        }
    }

    pub fn set_answers(&self, a: Answers) {
        let v = match a {
            Answers::Unknown => 0,
            Answers::Yes => 1,
            Answers::No => 2,
        };
        if self.answers.swap(v, Ordering::Relaxed) != v && a == Answers::No {
            tracing::warn!(server = %self.server, "FastCGI server does not answer FCGI_GET_VALUES: its capacity cannot be learned; set max_conns");
        }
    }

    /// Takes a place for a new connection within the limit (and
    /// `ceiling`): served and opening connections stay below both. Openings
    /// grow with what is served (one at a time at first, then up to half
    /// as many as are served), so a burst of requests to a server whose
    /// capacity is not known yet does not fill its backlog with
    /// connections it will never serve.
    /// Without `ramp` (connections that are not kept, which hold no child
    /// between requests) only the limit counts.
    /// `elsewhere`: what other processes hold of the server (an upgrade's
    /// old or new one), counted as served.
    pub fn try_open(&self, ceiling: u32, ramp: bool, elsewhere: u32) -> bool {
        let cap = self.limit.load(Ordering::Relaxed).min(ceiling);
        let served = self.served.load(Ordering::Acquire) + elsewhere;
        let ramp = if ramp { (served / 2).max(1) } else { u32::MAX };
        let mut opening = self.opening.load(Ordering::Acquire);
        loop {
            if served.saturating_add(opening) >= cap || opening >= ramp {
                return false;
            }
            match self.opening.compare_exchange_weak(
                opening,
                opening + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.count(true);
                    return true;
                }
                Err(now) => opening = now,
            }
        }
    }

    /// Whether what is served and being opened here, with `elsewhere`,
    /// stays within the limit (and `ceiling`).
    pub fn within(&self, ceiling: u32, elsewhere: u32) -> bool {
        let cap = self.limit.load(Ordering::Relaxed).min(ceiling);
        let here = self.served.load(Ordering::Acquire) + self.opening.load(Ordering::Acquire);
        here.saturating_add(elsewhere) <= cap
    }

    /// Takes a place for one connection beyond the limit, to find out
    /// whether the server now serves more (see the module's "Raise").
    pub fn open_probe(&self) {
        self.opening.fetch_add(1, Ordering::AcqRel);
        self.count(true);
    }

    /// Shows other processes one connection more or less.
    fn count(&self, up: bool) {
        if let Some(s) = &self.share {
            s.count(up);
        }
    }

    /// What other processes (an upgrade's old or new one) hold of the
    /// server now.
    pub fn held_elsewhere(&self) -> u32 {
        self.share.as_ref().map_or(0, |s| s.held_elsewhere())
    }

    /// Asks the process holding the most of the server to let one
    /// connection go.
    pub fn ask_elsewhere(&self) {
        if let Some(s) = &self.share {
            s.ask_release();
        }
    }

    /// Whether another process asked this one to let a connection go;
    /// takes the ask.
    pub fn asked_elsewhere(&self) -> bool {
        self.share.as_ref().is_some_and(|s| s.take_release())
    }

    /// Whether any core holds an idle connection to the server.
    pub fn any_idle(&self) -> bool {
        self.cores
            .iter()
            .any(|c| c.idle.load(Ordering::Relaxed) > 0)
    }

    /// A connection that was opening was answered by core `core`: it is
    /// served, and the limit rises if more are served now than it allowed.
    /// `ceiling`: the most the limit may be.
    pub fn answered(&self, core: usize, ceiling: u32) {
        self.opening.fetch_sub(1, Ordering::AcqRel);
        let served = self.served.fetch_add(1, Ordering::AcqRel) + 1;
        self.cores[core].held.fetch_add(1, Ordering::Relaxed);
        let limit = self.limit.load(Ordering::Relaxed);
        if limit != UNKNOWN && served > limit {
            let to = served.min(ceiling);
            if to > limit
                && self
                    .limit
                    .compare_exchange(limit, to, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                self.log_change(limit, to, "a connection beyond it was served");
            }
        }
    }

    /// Whether an unanswered opening should be given up as surplus: more
    /// are waiting than one per core (openings that a burst started before
    /// the limit was known). Takes it off the count when so.
    pub fn shed_opening(&self) -> bool {
        let most = self.cores.len() as u32;
        let shed = self
            .opening
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > most).then(|| n - 1)
            })
            .is_ok();
        if shed {
            self.count(false);
        }
        shed
    }

    /// A connection that was opening failed or was given up.
    pub fn not_opened(&self) {
        self.opening.fetch_sub(1, Ordering::AcqRel);
        self.count(false);
    }

    /// A served connection of core `core` closed.
    pub fn closed(&self, core: usize) {
        self.served.fetch_sub(1, Ordering::AcqRel);
        self.count(false);
        let held = &self.cores[core].held;
        let _ = held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// A connection of core `core` has waited `capacity_probe` without an
    /// answer: no child is free. Lowers the limit to the connections served
    /// now, and where core `core` has requests waiting and less than its
    /// fair part, asks the core with the most over its part to close one.
    pub fn stalled(&self, core: usize, waiting: bool) {
        let served = self.served.load(Ordering::Acquire).max(1);
        let limit = self.limit.load(Ordering::Relaxed);
        if served < limit
            && self
                .limit
                .compare_exchange(limit, served, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            let why = "a new connection was not served within capacity_probe";
            self.log_change(limit, served, why);
        }
        if !waiting {
            return;
        }
        let held: Vec<u32> = self
            .cores
            .iter()
            .map(|c| c.held.load(Ordering::Relaxed))
            .collect();
        if let Some(target) = whom_to_ask(&held, core, served) {
            let slot = &self.cores[target];
            // One ask at a time per core: a second would close a
            // connection nobody waits for.
            if slot
                .release
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                self.ring(target);
            }
        }
    }

    /// Wakes core `core` to act on what was set in its slot.
    pub fn ring(&self, core: usize) {
        if let Some(b) = self.cores[core].bell.get() {
            b.ring();
        }
    }

    /// Wakes the other cores that have requests waiting, when a place may
    /// have come free for them.
    pub fn wake_waiting(&self, except: usize) {
        for (i, c) in self.cores.iter().enumerate() {
            if i != except && c.waiting.load(Ordering::Relaxed) > 0 {
                self.ring(i);
            }
        }
    }

    fn log_change(&self, from: u32, to: u32, why: &str) {
        let now = self.epoch.elapsed().as_millis() as u64;
        let last = self.last_log.load(Ordering::Relaxed);
        let first = last == u64::MAX;
        if !first && now.saturating_sub(last) < LOG_EVERY_MS {
            return;
        }
        if self
            .last_log
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        if first {
            tracing::info!(server = %self.server, capacity = to, "FastCGI capacity learned: {why}");
        } else {
            let from = if from == UNKNOWN { 0 } else { from };
            tracing::info!(server = %self.server, from, capacity = to, "FastCGI capacity changed: {why}");
        }
    }
}

/// Core `i`'s fair part of `limit` connections over `cores` cores.
pub fn share(limit: u32, i: usize, cores: usize) -> u32 {
    let w = cores.max(1) as u32;
    limit / w + u32::from((i as u32) < limit % w)
}

/// Which core `me`, with requests waiting, asks to close a connection, if
/// any: none while `me` holds its fair part of `limit` (at least one);
/// else the core holding the most over its own part; else, when `me` holds
/// nothing at all, the core holding the most.
pub fn whom_to_ask(held: &[u32], me: usize, limit: u32) -> Option<usize> {
    let n = held.len();
    if held[me] >= share(limit, me, n).max(1) {
        return None;
    }
    let over = (0..n)
        .filter(|&j| j != me && held[j] > share(limit, j, n))
        .max_by_key(|&j| held[j] - share(limit, j, n));
    if over.is_some() {
        return over;
    }
    if held[me] == 0 {
        return (0..n)
            .filter(|&j| j != me && held[j] > 0)
            .max_by_key(|&j| held[j]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_the_limit() {
        for (limit, cores) in [(4, 2), (5, 2), (7, 3), (16, 16), (100, 7), (1, 2)] {
            let total: u32 = (0..cores).map(|i| share(limit, i, cores)).sum();
            assert_eq!(total, limit, "limit {limit} over {cores}");
        }
    }

    #[test]
    fn a_core_with_its_part_asks_nobody() {
        assert_eq!(whom_to_ask(&[2, 2], 0, 4), None);
        assert_eq!(whom_to_ask(&[3, 2], 1, 5), None);
    }

    #[test]
    fn a_core_short_of_its_part_asks_the_one_most_over() {
        assert_eq!(whom_to_ask(&[0, 4], 0, 4), Some(1));
        assert_eq!(whom_to_ask(&[1, 1, 4], 0, 6), Some(2));
        // 3 over 2 cores is 2 + 1: core 1 holds one over its part.
        assert_eq!(whom_to_ask(&[1, 2], 0, 3), Some(1));
        assert_eq!(whom_to_ask(&[1, 1], 0, 3), None, "nobody over its part");
    }

    #[test]
    fn below_one_per_core_a_core_holding_nothing_asks_the_holder() {
        assert_eq!(whom_to_ask(&[0, 1], 0, 1), Some(1));
        assert_eq!(whom_to_ask(&[1, 0], 1, 1), Some(0));
        assert_eq!(whom_to_ask(&[0, 0], 0, 1), None);
    }

    #[test]
    fn a_stall_lowers_the_limit_to_what_is_served_and_an_answer_beyond_raises_it() {
        let c = Capacity::new("t".into(), 2);
        assert!(c.try_open(100, true, 0));
        c.answered(0, 100);
        assert!(c.try_open(100, true, 0));
        c.answered(1, 100);
        assert_eq!(c.learned(), None);
        assert!(c.try_open(100, true, 0));
        c.stalled(0, false);
        assert_eq!(c.learned(), Some(2));
        // Within the limit only what is served and opening counts.
        c.not_opened();
        assert!(!c.try_open(100, true, 0));
        c.open_probe();
        c.answered(0, 100);
        assert_eq!(c.learned(), Some(3));
        assert_eq!(c.served(), 3);
    }

    #[test]
    fn unanswered_openings_beyond_one_per_core_are_shed() {
        let c = Capacity::new("t".into(), 2);
        for _ in 0..3 {
            c.open_probe();
        }
        assert!(c.shed_opening());
        assert!(!c.shed_opening(), "two cores may keep one each");
    }

    #[test]
    fn the_ceiling_bounds_the_limit() {
        let c = Capacity::new("t".into(), 1);
        assert!(c.try_open(1, true, 0));
        assert!(!c.try_open(1, true, 0));
        c.answered(0, 1);
        c.stalled(0, false);
        c.open_probe();
        c.answered(0, 1);
        assert_eq!(c.learned(), Some(1));
    }

    #[test]
    fn a_stall_with_requests_waiting_asks_one_core_once() {
        let c = Capacity::new("t".into(), 2);
        for _ in 0..3 {
            assert!(c.try_open(100, true, 0));
            c.answered(1, 100);
        }
        c.stalled(0, true);
        assert_eq!(c.core(1).release.load(Ordering::Relaxed), 1);
        c.stalled(0, true);
        assert_eq!(
            c.core(1).release.load(Ordering::Relaxed),
            1,
            "one ask at a time"
        );
    }
}
