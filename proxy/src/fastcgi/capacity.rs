//! One core's connections to one FastCGI server: the queue of requests
//! waiting for a connection, and when to open another.
//!
//! A request that finds no idle connection in the core's pool waits in this
//! core's bounded queue, first come first served, up to `queue_timeout`;
//! a full queue or a timeout is a 503. It never waits in the server's
//! listen backlog: connections are opened for the queue, in the
//! background (`super::opener`), and each is handed to the first waiter
//! once the server answered it (or back to the pool, when nobody waits any
//! more). How many may be open is what the server was seen to serve, shared
//! by the cores (`super::learn`), bounded by the ceiling: `max_conns`
//! where the config gives it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use ringside_http::Error;
use ringside_runtime::net::TcpStream;

use super::learn::{Answers, Capacity};
use crate::upstream::settings::FastCgiSettings;

/// The most connections to one server when the config sets no `max_conns`
/// and they are learned: far above a php-fpm pool's usual size, so that
/// only what the server serves bounds them.
pub const LEARNED_CEILING: u32 = 4096;
/// The most connections to one server when nothing can be learned (not
/// kept, `capacity_probe = 0`, or a server that does not answer
/// FCGI_GET_VALUES) and the config sets no `max_conns`.
pub const UNLEARNED_CEILING: u32 = 8;

/// This core's connections to one server.
pub struct Slots {
    cap: Arc<Capacity>,
    core: usize,
    max_conns: Option<u32>,
    /// Connections are kept and learned from (FCGI_KEEP_CONN, and a
    /// non-zero `capacity_probe`).
    learning: bool,
    probe: Duration,
    queue: VecDeque<Rc<Waiter>>,
    queue_size: usize,
    /// Connections this core is opening.
    opening: u32,
    /// Places to open taken by `acquire` for a request that found the
    /// queue full, not yet started.
    reserved: u32,
    /// What this core's counts in the shared slot hold of this upstream's.
    shown_waiting: u32,
    shown_idle: u32,
    /// A place was refused while another process held connections to
    /// the server: nothing on this core says when they close.
    recheck: bool,
}

/// What a waiting request is handed.
#[derive(Default)]
pub struct Waiter {
    conn: RefCell<Option<TcpStream>>,
    failed: RefCell<Option<Error>>,
    waker: Cell<Option<Waker>>,
}

/// The outcome of asking for a connection with none idle.
pub enum Grant {
    /// Wait on this, in the queue.
    Wait(Rc<Waiter>),
    /// The queue is full.
    Full,
}

/// How a new connection is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// Ask FCGI_GET_VALUES before it is used, and learn from the answer;
    /// give up after `probe`, then wait for an answer until `patience`.
    Ask { probe: Duration, patience: Duration },
    /// Use it as soon as it connects.
    Plain,
}

impl Slots {
    pub fn new(cap: Arc<Capacity>, core: usize, cfg: &FastCgiSettings) -> Slots {
        Slots {
            cap,
            core,
            max_conns: cfg.max_conns,
            learning: cfg.keep_conn && !cfg.capacity_probe.is_zero(),
            probe: cfg.capacity_probe,
            queue: VecDeque::new(),
            queue_size: cfg.queue_size,
            opening: 0,
            reserved: 0,
            shown_waiting: 0,
            shown_idle: 0,
            recheck: false,
        }
    }

    fn learns(&self) -> bool {
        self.learning && self.cap.answers() != Answers::No
    }

    /// The most connections to the server, all cores together.
    pub fn ceiling(&self) -> u32 {
        match self.max_conns {
            Some(n) => n,
            None if self.learns() => LEARNED_CEILING,
            None => UNLEARNED_CEILING,
        }
    }

    /// Puts a request in the queue. `queue_size` bounds the requests that
    /// wait with no connection being opened for them: a request a new
    /// connection can be opened for may always wait for it.
    pub fn acquire(&mut self) -> Grant {
        while self.queue.front().is_some_and(|w| Rc::strong_count(w) == 1) {
            self.queue.pop_front(); // gave up waiting
        }
        let covered = (self.opening + self.reserved) as usize;
        if self.queue.len().saturating_sub(covered) >= self.queue_size {
            // A draining process serves its last requests whatever another
            // holds (see `last_opening`).
            let elsewhere = match ringside_runtime::shutdown::draining() {
                true => 0,
                false => self.cap.held_elsewhere(),
            };
            if !self.cap.try_open(self.ceiling(), self.learns(), elsewhere) {
                return Grant::Full;
            }
            self.reserved += 1;
        }
        let w = Rc::new(Waiter::default());
        self.queue.push_back(w.clone());
        self.publish_waiting();
        Grant::Wait(w)
    }

    /// Publishes this queue's length. As a change, since another upstream
    /// naming the same server on this core shares the count.
    fn publish_waiting(&mut self) {
        let n = self.queue.len() as u32;
        if n != self.shown_waiting {
            let w = &self.cap.core(self.core).waiting;
            w.fetch_add(n.wrapping_sub(self.shown_waiting), Ordering::Relaxed);
            self.shown_waiting = n;
        }
    }

    /// Whether to open one more connection now for the queue, and how:
    /// within the limit while requests outnumber the connections being
    /// opened, else one beyond it while nothing is idle anywhere (see
    /// `learn`'s "Raise"). Counts it as opening.
    pub fn next_opening(&mut self, patience: Duration) -> Option<Opening> {
        let how = if self.learns() {
            Opening::Ask {
                probe: self.probe,
                patience,
            }
        } else {
            Opening::Plain
        };
        if self.reserved > 0 {
            self.reserved -= 1;
            self.opening += 1;
            return Some(how);
        }
        if self.queue.len() <= self.opening as usize {
            return None;
        }
        let ceiling = self.ceiling();
        let elsewhere = self.cap.held_elsewhere();
        if elsewhere > 0 && ringside_runtime::shutdown::draining() {
            return self.last_opening(how, ceiling, elsewhere);
        }
        if self.cap.try_open(ceiling, self.learns(), elsewhere) {
            // Counted first, then looked at again: of two processes taking
            // the last place at once, one sees the other (see `confirm`).
            let now = self.cap.held_elsewhere();
            if now > elsewhere && !self.cap.within(ceiling, now) {
                return self.give_back();
            }
            self.opening += 1;
            return Some(how);
        }
        if elsewhere > 0 {
            self.recheck = true;
            return None;
        }
        let beyond = self.learns()
            && self.opening == 0
            && self.cap.served() < ceiling
            && !self.cap.any_idle();
        if beyond {
            self.cap.open_probe();
            // The old process of an upgrade may have opened one since.
            if self.cap.held_elsewhere() > 0 {
                return self.give_back();
            }
            self.opening += 1;
            return Some(how);
        }
        None
    }

    /// An upgrade's old process, the new one holding connections too: its
    /// own connections serve its last requests as they end, without
    /// opening more. A core holding none opens one, within its limit but
    /// whatever the new process holds, and asks the new process to let a
    /// connection go, so that a child comes free for it. Not while the
    /// new one holds more than the limit (connections of its own waiting
    /// in the backlog to see whether the pool grew): those would take the
    /// child first, so it asks and looks again.
    fn last_opening(&mut self, how: Opening, ceiling: u32, elsewhere: u32) -> Option<Opening> {
        let held = self.cap.core(self.core).held.load(Ordering::Relaxed);
        if held > 0 || self.opening > 0 {
            return None;
        }
        let limit = self.cap.learned().unwrap_or(ceiling).min(ceiling);
        if elsewhere > limit {
            self.cap.ask_elsewhere();
            self.recheck = true;
            return None;
        }
        if !self.cap.try_open(ceiling, false, 0) {
            return None;
        }
        // The new process may have counted one more since: as above.
        if self.cap.held_elsewhere() > limit {
            self.cap.ask_elsewhere();
            return self.give_back();
        }
        self.opening += 1;
        self.cap.ask_elsewhere();
        Some(how)
    }

    /// Gives back a place just taken because another process took one at
    /// the same moment, and looks again shortly.
    ///
    /// Each process counts its opening in the shared page before it reads
    /// the others' counts, both as sequentially consistent operations, so
    /// of two processes deciding at once at least one reads the other's
    /// count: they cannot both go past the limit on a stale reading, which
    /// a CPU-starved host made likely (one process preempted between its
    /// reading and its count).
    fn give_back(&mut self) -> Option<Opening> {
        self.cap.not_opened();
        self.recheck = true;
        None
    }

    /// Whether a place was refused for another process's connections
    /// since the last call: the caller looks again shortly.
    pub fn take_recheck(&mut self) -> bool {
        std::mem::take(&mut self.recheck)
    }

    /// A connection this core opened was answered (or connected, when not
    /// asked): it is served.
    pub fn answered(&mut self) {
        self.opening = self.opening.saturating_sub(1);
        let ceiling = self.ceiling();
        self.cap.answered(self.core, ceiling);
    }

    /// A connection this core was opening failed with `e`: the first waiter
    /// gets the error, as it would have had it opened the connection itself.
    pub fn open_failed(&mut self, e: Error) {
        self.opening = self.opening.saturating_sub(1);
        self.cap.not_opened();
        while let Some(w) = self.queue.pop_front() {
            if Rc::strong_count(&w) == 1 {
                continue;
            }
            *w.failed.borrow_mut() = Some(e);
            w.wake();
            break;
        }
        self.publish_waiting();
    }

    pub fn has_waiters(&self) -> bool {
        self.queue.iter().any(|w| Rc::strong_count(w) > 1)
    }

    /// A connection this core was opening went unanswered for
    /// `capacity_probe`. True when it is surplus and was given up (its
    /// place is already off the shared count: the caller closes it).
    pub fn stalled(&mut self) -> bool {
        self.cap.stalled(self.core, !self.queue.is_empty());
        if self.cap.shed_opening() {
            self.opening = self.opening.saturating_sub(1);
            return true;
        }
        false
    }

    /// A connection this core was opening was given up (never answered).
    pub fn gave_up(&mut self) {
        self.opening = self.opening.saturating_sub(1);
        self.cap.not_opened();
    }

    /// A served connection of this core is free again: the first waiter
    /// gets it, else the caller pools it (`Some` comes back).
    pub fn hand_over(&mut self, conn: TcpStream) -> Option<TcpStream> {
        while let Some(w) = self.queue.pop_front() {
            if Rc::strong_count(&w) == 1 {
                continue; // gave up waiting
            }
            *w.conn.borrow_mut() = Some(conn);
            w.wake();
            self.publish_waiting();
            return None;
        }
        self.publish_waiting();
        Some(conn)
    }

    /// A served connection of this core closed. Other cores waiting for a
    /// place may take it.
    pub fn closed(&mut self) {
        self.cap.closed(self.core);
        self.cap.wake_waiting(self.core);
    }

    /// Whether another core asked this one to close a connection; takes
    /// the ask.
    /// Asks from another process (an upgrade's old one, its last
    /// requests waiting for a child) count too.
    pub fn take_release(&self) -> bool {
        let r = &self.cap.core(self.core).release;
        let asked = r.load(Ordering::Relaxed) > 0
            && r.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok();
        asked || self.cap.asked_elsewhere()
    }

    /// Publishes how many connections sit idle in this core's pool (as a
    /// change, as for the queue's length).
    pub fn set_idle(&mut self, n: usize) {
        let n = n as u32;
        if n != self.shown_idle {
            let idle = &self.cap.core(self.core).idle;
            idle.fetch_add(n.wrapping_sub(self.shown_idle), Ordering::Relaxed);
            self.shown_idle = n;
        }
    }

    pub fn capacity(&self) -> &Arc<Capacity> {
        &self.cap
    }
}

impl Drop for Slots {
    /// A peer made again (a reload, a DNS change) takes back what it showed
    /// other cores; its connections close with it.
    fn drop(&mut self) {
        let slot = self.cap.core(self.core);
        slot.waiting
            .fetch_sub(self.shown_waiting, Ordering::Relaxed);
        slot.idle.fetch_sub(self.shown_idle, Ordering::Relaxed);
    }
}

/// What a waiter ends with.
pub enum Waited {
    Conn(TcpStream),
    /// Opening a connection for it failed.
    Failed(Error),
    TimedOut,
}

impl Waiter {
    fn wake(&self) {
        if let Some(k) = self.waker.take() {
            k.wake();
        }
    }

    /// Waits until handed a connection or an error, or until `deadline`.
    pub async fn wait(&self, deadline: Instant) -> Waited {
        // What ends this wait is another request's end on this core (or
        // an opener's), never a completion of this request's own.
        let _queued = ringside_runtime::coalesce::Queued::new();
        let ready = std::future::poll_fn(|cx| {
            if let Some(c) = self.conn.borrow_mut().take() {
                return Poll::Ready(Waited::Conn(c));
            }
            if let Some(e) = self.failed.borrow_mut().take() {
                return Poll::Ready(Waited::Failed(e));
            }
            self.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        });
        match ringside_runtime::task::timeout_at(deadline, ready).await {
            Ok(w) => w,
            Err(_) => Waited::TimedOut,
        }
    }

    /// After a timeout: a connection handed over meanwhile, which the
    /// caller must give back.
    pub fn leftover(&self) -> Option<TcpStream> {
        self.conn.borrow_mut().take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(cap: &Arc<Capacity>, core: usize, max_conns: Option<u32>) -> Slots {
        let cfg = FastCgiSettings {
            max_conns,
            queue_size: 4,
            ..FastCgiSettings::default()
        };
        Slots::new(cap.clone(), core, &cfg)
    }

    const PATIENCE: Duration = Duration::from_secs(1);

    #[test]
    fn the_queue_is_bounded() {
        let cap = Arc::new(Capacity::new("t".into(), 1));
        let mut s = slots(&cap, 0, Some(1));
        let mut held = Vec::new();
        held.push(s.acquire());
        assert!(s.next_opening(PATIENCE).is_some());
        s.answered();
        // The one connection allowed is open: four more may wait.
        for _ in 0..3 {
            held.push(s.acquire());
        }
        assert!(held.iter().all(|g| matches!(g, Grant::Wait(_))));
        assert!(matches!(s.acquire(), Grant::Full));
        drop(held);
        assert!(
            matches!(s.acquire(), Grant::Wait(_)),
            "abandoned places free up"
        );
    }

    #[test]
    fn a_request_a_connection_can_be_opened_for_waits_beyond_the_queue() {
        let cfg = FastCgiSettings {
            queue_size: 0,
            ..FastCgiSettings::default()
        };
        let cap = Arc::new(Capacity::new("t".into(), 1));
        let mut s = Slots::new(cap, 0, &cfg);
        let Grant::Wait(_w) = s.acquire() else {
            panic!("expected to wait for the connection opened for it")
        };
        assert!(s.next_opening(PATIENCE).is_some(), "the place taken for it");
        assert!(
            matches!(s.acquire(), Grant::Full),
            "one opening at a time at first"
        );
    }

    #[test]
    fn connections_open_only_for_requests_that_wait() {
        let cap = Arc::new(Capacity::new("t".into(), 1));
        let mut s = slots(&cap, 0, None);
        assert_eq!(s.next_opening(PATIENCE), None);
        let _a = s.acquire();
        let _b = s.acquire();
        assert!(matches!(
            s.next_opening(PATIENCE),
            Some(Opening::Ask { .. })
        ));
        assert_eq!(
            s.next_opening(PATIENCE),
            None,
            "one at a time while none is served"
        );
        s.answered();
        let _c = s.acquire();
        let _d = s.acquire();
        assert!(s.next_opening(PATIENCE).is_some());
        assert_eq!(
            s.next_opening(PATIENCE),
            None,
            "then up to half as many as are served"
        );
    }

    #[test]
    fn max_conns_bounds_the_cores_together() {
        let cap = Arc::new(Capacity::new("t".into(), 2));
        let mut a = slots(&cap, 0, Some(2));
        let mut b = slots(&cap, 1, Some(2));
        let _w: Vec<_> = (0..3).map(|_| a.acquire()).collect();
        let _v: Vec<_> = (0..3).map(|_| b.acquire()).collect();
        assert!(a.next_opening(PATIENCE).is_some());
        assert!(b.next_opening(PATIENCE).is_some());
        a.answered();
        b.answered();
        // At the ceiling nothing opens, not even beyond it.
        assert_eq!(a.next_opening(PATIENCE), None);
        assert_eq!(b.next_opening(PATIENCE), None);
    }

    #[test]
    fn at_the_learned_limit_one_opens_beyond_it_while_nothing_is_idle() {
        let cap = Arc::new(Capacity::new("t".into(), 1));
        let mut s = slots(&cap, 0, None);
        let _w: Vec<_> = (0..3).map(|_| s.acquire()).collect();
        assert!(s.next_opening(PATIENCE).is_some());
        s.answered();
        assert!(s.next_opening(PATIENCE).is_some());
        assert!(!s.stalled(), "one per core may stay waiting");
        assert_eq!(cap.learned(), Some(1));
        s.gave_up();
        assert!(s.next_opening(PATIENCE).is_some(), "one beyond the limit");
        assert_eq!(s.next_opening(PATIENCE), None, "only one");
        s.gave_up();
        s.set_idle(1);
        assert_eq!(s.next_opening(PATIENCE), None, "not while one is idle");
    }

    /// Two processes overlapping in an upgrade: the new one counts what
    /// the old one holds, looks again while it is refused for that alone,
    /// probes beyond the limit only once the old one holds nothing, and
    /// lets a connection go when the old one asks.
    #[test]
    fn another_process_s_connections_count_against_the_limit() {
        let (new, old) = crate::fastcgi::overlap::pair("t");
        let cap = Arc::new(Capacity::new("t".into(), 1).with_share(new));
        let mut s = slots(&cap, 0, Some(4));
        (0..3).for_each(|_| old.count(true));
        let _w: Vec<_> = (0..3).map(|_| s.acquire()).collect();
        assert!(
            s.next_opening(PATIENCE).is_some(),
            "3 held elsewhere, 1 here"
        );
        assert_eq!(s.next_opening(PATIENCE), None);
        assert!(s.take_recheck(), "refused for the other's connections");
        assert!(!s.take_recheck());
        s.answered();
        old.count(false);
        assert!(
            s.next_opening(PATIENCE).is_some(),
            "one came free elsewhere"
        );
        assert!(!s.take_release());
        old.ask_release();
        assert!(s.take_release(), "the other process asked for one");
    }

    #[test]
    fn a_failed_open_fails_one_waiter() {
        let cap = Arc::new(Capacity::new("t".into(), 1));
        let mut s = slots(&cap, 0, None);
        let Grant::Wait(w) = s.acquire() else {
            panic!()
        };
        assert!(s.next_opening(PATIENCE).is_some());
        s.open_failed(Error::new(ringside_http::Kind::ConnectFailed, "refused"));
        assert!(w.failed.borrow().is_some());
        assert_eq!(s.next_opening(PATIENCE), None, "nobody waits");
    }
}
