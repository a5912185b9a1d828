//! The FastCGI side of a core's view of an upstream: opening connections
//! for the queue (`crate::fastcgi::opener`), taking their outcome, and what
//! another core asks by ringing this core's bell (`crate::fastcgi::learn`).

use super::{Chosen, Local, Policy};
use crate::fastcgi::learn::Answers;
use crate::fastcgi::opener::{self, Opened};

/// How soon queues refused a place for another process's connections are
/// looked at again: a FastCGI request takes about a millisecond.
const RECHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(1);

impl Local {
    /// Starts the connections peer `i`'s queue may open now.
    pub(super) fn feed(&mut self, i: usize) {
        let patience = self.shared.cfg.queue_timeout();
        loop {
            let p = &mut self.peers[i];
            let Policy::Slots(slots) = &mut p.policy else {
                return;
            };
            let Some(how) = slots.next_opening(patience) else {
                if slots.take_recheck() {
                    self.recheck_soon();
                }
                return;
            };
            let Some(me) = self.me.upgrade() else {
                slots.gave_up();
                return;
            };
            let chosen = Chosen {
                index: i,
                generation: self.generation,
                addr: p.spec.addr.clone(),
                authority: p.spec.authority.clone(),
            };
            ringside_runtime::task::spawn(opener::open(me, chosen, how));
        }
    }

    /// A place was refused for connections another process holds (an
    /// upgrade's old one, draining): no close on this core will tell when
    /// they go, so the queues are looked at again shortly, while the
    /// overlap lasts.
    fn recheck_soon(&mut self) {
        if self.rechecking {
            return;
        }
        self.rechecking = true;
        let me = self.me.clone();
        ringside_runtime::task::spawn(async move {
            ringside_runtime::task::sleep(RECHECK_EVERY).await;
            if let Some(l) = me.upgrade() {
                let mut l = l.borrow_mut();
                l.rechecking = false;
                for i in 0..l.peers.len() {
                    l.feed(i);
                }
            }
        });
    }

    /// How a connection opened for `c`'s queue turned out.
    pub fn opened(&mut self, c: &Chosen, opened: Opened) {
        let Some(i) = self.find(c) else {
            // The server left the upstream meanwhile; its count went with it.
            return;
        };
        if let Opened::Failed(e) = &opened {
            // Counted and logged here, where every opening's failure comes
            // by, whether or not a request still waits for it.
            self.fail(i, e);
        }
        let max = self.pool_max();
        let p = &mut self.peers[i];
        let Policy::Slots(slots) = &mut p.policy else {
            return;
        };
        match opened {
            Opened::Served(s) => {
                slots.capacity().set_answers(Answers::Yes);
                slots.answered();
                p.give_back(s, max);
            }
            Opened::Failed(e) => slots.open_failed(e),
            Opened::GaveUp => slots.gave_up(),
            Opened::Shed => {}
            Opened::NoAnswer => {
                if slots.capacity().answers() == Answers::Unknown {
                    slots.capacity().set_answers(Answers::No);
                }
                slots.gave_up();
            }
        }
        p.idle_changed();
        self.feed(i);
    }

    /// A connection opened for `c`'s queue is still unanswered after
    /// `capacity_probe`. True when it is surplus: the caller closes it, and
    /// it is off the count already.
    pub fn stalled(&mut self, c: &Chosen) -> bool {
        let Some(i) = self.find(c) else { return false };
        match &mut self.peers[i].policy {
            Policy::Slots(slots) => slots.stalled(),
            Policy::Lifo => false,
        }
    }

    /// Another core rang: close the connections it asked for where they sit
    /// idle here (the rest close as their requests end), and open for the
    /// queue where a place came free.
    pub(super) fn bell_rang(&mut self) {
        self.refresh();
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            if let Policy::Slots(_) = &p.policy {
                p.close_asked();
                p.idle_changed();
            }
            self.feed(i);
        }
    }
}
