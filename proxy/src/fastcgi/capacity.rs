//! How many connections one core may hold to one FastCGI server, and the
//! queue of requests waiting for one.
//!
//! A php-fpm child serves one connection until that connection closes, so
//! every kept connection holds a child, idle or not. The server's capacity
//! (`max_conns`, or FCGI_MAX_CONNS learned from it) is split across the
//! cores once, at start: core `i` of `w` may hold `cap / w` connections,
//! plus one for the first `cap % w` cores. The sum never exceeds the
//! capacity, and no core's idle connection can starve another core, since
//! no core may take more than its share.
//!
//! When the capacity is below the number of cores, the shares would leave
//! some cores with none. Then every core borrows from one process-wide
//! atomic count instead, and closes its connection after each request, as a
//! kept idle one would hold a child that another core may need.
//!
//! A request that finds no free connection waits in this core's bounded
//! queue, first come first served, up to the queue timeout; a full queue or
//! a timeout is a 503. It never waits in the server's listen backlog.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use ringside_runtime::net::TcpStream;

/// This core's right to connections of one server.
pub struct Slots {
    /// This core's share; 0 when borrowing from `global`.
    share: u32,
    /// Connections this core holds open, busy or idle.
    open: u32,
    global: Option<Arc<AtomicU32>>,
    queue: VecDeque<Rc<Waiter>>,
    queue_size: usize,
}

/// What a waiting request is handed.
#[derive(Default)]
pub struct Waiter {
    conn: RefCell<Option<TcpStream>>,
    /// A slot was freed: the waiter may open a connection.
    may_open: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

/// The outcome of asking for a connection.
pub enum Grant {
    /// A slot is taken: open a connection (give it back with `closed`).
    Open,
    /// Wait on this, in the queue.
    Wait(Rc<Waiter>),
    /// The queue is full.
    Full,
}

impl Slots {
    /// Core `index` of `workers`, for a server of capacity `cap`.
    pub fn new(
        cap: u32,
        index: usize,
        workers: usize,
        global: &Arc<AtomicU32>,
        queue: usize,
    ) -> Slots {
        let w = workers.max(1) as u32;
        let (share, global) = if cap >= w {
            let extra = u32::from((index as u32) < cap % w);
            (cap / w + extra, None)
        } else {
            (0, Some(global.clone()))
        };
        Slots {
            share,
            open: 0,
            global,
            queue: VecDeque::new(),
            queue_size: queue,
        }
    }

    /// Whether connections of this core may be kept between requests.
    pub fn may_keep(&self) -> bool {
        self.global.is_none()
    }

    /// Takes a slot for a new connection, or a place in the queue.
    pub fn acquire(&mut self) -> Grant {
        if self.queue.is_empty() && self.try_take() {
            return Grant::Open;
        }
        if self.queue.len() >= self.queue_size {
            return Grant::Full;
        }
        let w = Rc::new(Waiter::default());
        self.queue.push_back(w.clone());
        Grant::Wait(w)
    }

    fn try_take(&mut self) -> bool {
        match &self.global {
            None if self.open < self.share => {
                self.open += 1;
                true
            }
            None => false,
            Some(g) => {
                let mut cur = g.load(Ordering::Acquire);
                while cur > 0 {
                    match g.compare_exchange_weak(cur, cur - 1, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(_) => {
                            self.open += 1;
                            return true;
                        }
                        Err(now) => cur = now,
                    }
                }
                false
            }
        }
    }

    /// A connection of this core is free again: the first waiter gets it,
    /// else the caller pools it (`Some` comes back).
    pub fn hand_over(&mut self, conn: TcpStream) -> Option<TcpStream> {
        while let Some(w) = self.queue.pop_front() {
            if Rc::strong_count(&w) == 1 {
                continue; // gave up waiting
            }
            *w.conn.borrow_mut() = Some(conn);
            if let Some(k) = w.waker.take() {
                k.wake();
            }
            return None;
        }
        Some(conn)
    }

    /// A connection of this core closed: its slot goes to the first waiter,
    /// or back.
    pub fn closed(&mut self) {
        self.open = self.open.saturating_sub(1);
        if let Some(g) = &self.global {
            g.fetch_add(1, Ordering::AcqRel);
        }
        self.wake_one_to_open();
    }

    fn wake_one_to_open(&mut self) {
        while let Some(w) = self.queue.front().cloned() {
            if Rc::strong_count(&w) == 2 {
                // Only the queue and this local hold it: abandoned.
                self.queue.pop_front();
                continue;
            }
            if !self.try_take() {
                return;
            }
            self.queue.pop_front();
            w.may_open.set(true);
            if let Some(k) = w.waker.take() {
                k.wake();
            }
            return;
        }
    }

    /// For cores borrowing from the process-wide count: a slot another core
    /// freed cannot wake this one, so waiters look again now and then.
    pub fn poll_global(&mut self) {
        if self.global.is_some() {
            self.wake_one_to_open();
        }
    }

    pub fn is_borrowing(&self) -> bool {
        self.global.is_some()
    }
}

/// What a waiter ends with.
pub enum Waited {
    Conn(TcpStream),
    Open,
    TimedOut,
}

impl Waiter {
    /// Waits until handed a connection or a slot, or until `deadline`.
    /// `recheck` runs every few milliseconds for borrowing cores.
    pub async fn wait(&self, deadline: Instant, recheck: Option<&dyn Fn()>) -> Waited {
        let ready = std::future::poll_fn(|cx| {
            if let Some(c) = self.conn.borrow_mut().take() {
                return Poll::Ready(Waited::Conn(c));
            }
            if self.may_open.get() {
                return Poll::Ready(Waited::Open);
            }
            self.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        });
        let mut ready = std::pin::pin!(ready);
        loop {
            let step = match recheck {
                Some(_) => (Instant::now() + Duration::from_millis(5)).min(deadline),
                None => deadline,
            };
            match ringside_runtime::task::timeout_at(step, ready.as_mut()).await {
                Ok(w) => return w,
                Err(_) if Instant::now() >= deadline => return Waited::TimedOut,
                Err(_) => {
                    if let Some(f) = recheck {
                        f();
                    }
                }
            }
        }
    }

    /// After a timeout: a connection handed over meanwhile, which the
    /// caller must give back.
    pub fn leftover(&self) -> Option<TcpStream> {
        self.conn.borrow_mut().take()
    }

    pub fn got_slot(&self) -> bool {
        self.may_open.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(cap: u32, index: usize, workers: usize) -> Slots {
        Slots::new(cap, index, workers, &Arc::new(AtomicU32::new(cap)), 4)
    }

    #[test]
    fn shares_sum_to_the_capacity() {
        for (cap, workers) in [(4, 2), (5, 2), (7, 3), (16, 16), (100, 7)] {
            let total: u32 = (0..workers).map(|i| slots(cap, i, workers).share).sum();
            assert_eq!(total, cap, "cap {cap} over {workers}");
        }
    }

    #[test]
    fn a_core_never_opens_beyond_its_share() {
        let mut s = slots(4, 0, 2);
        assert!(matches!(s.acquire(), Grant::Open));
        assert!(matches!(s.acquire(), Grant::Open));
        assert!(matches!(s.acquire(), Grant::Wait(_)));
    }

    #[test]
    fn the_queue_is_bounded() {
        let mut s = slots(2, 0, 2);
        assert!(matches!(s.acquire(), Grant::Open));
        let held: Vec<_> = (0..4)
            .map(|_| match s.acquire() {
                Grant::Wait(w) => w,
                _ => panic!("expected to wait"),
            })
            .collect();
        assert!(matches!(s.acquire(), Grant::Full));
        drop(held);
    }

    #[test]
    fn a_closed_connection_frees_a_slot_for_the_first_waiter() {
        let mut s = slots(2, 0, 2);
        assert!(matches!(s.acquire(), Grant::Open));
        let Grant::Wait(w) = s.acquire() else {
            panic!("expected to wait")
        };
        s.closed();
        assert!(w.got_slot());
        assert!(matches!(s.acquire(), Grant::Wait(_)));
    }

    #[test]
    fn below_one_per_core_every_core_borrows_from_the_global_count() {
        let g = Arc::new(AtomicU32::new(1));
        let mut a = Slots::new(1, 0, 2, &g, 4);
        let mut b = Slots::new(1, 1, 2, &g, 4);
        assert!(!a.may_keep());
        assert!(matches!(a.acquire(), Grant::Open));
        let Grant::Wait(waiting) = b.acquire() else {
            panic!("expected to wait")
        };
        a.closed();
        b.poll_global();
        assert!(waiting.got_slot());
        assert_eq!(g.load(Ordering::SeqCst), 0, "b took the freed slot");
    }
}
