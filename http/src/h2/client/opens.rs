//! Opens waiting for the server to allow another stream, oldest first.
//! A freed slot wakes one of them, not all: with a thousand requests
//! queued behind a server's hundred streams, waking every waiter on each
//! stream's end made every request poll through its whole task a
//! thousand times over.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::Waker;

/// One waiting open, shared by its future and the queue.
#[derive(Default)]
pub(super) struct OpenWait {
    waker: RefCell<Option<Waker>>,
    /// In the queue now.
    queued: Cell<bool>,
    /// Taken from the queue and woken, and not yet polled since.
    woken: Cell<bool>,
}

#[derive(Default)]
pub(super) struct Opens {
    queue: VecDeque<Rc<OpenWait>>,
    /// Waiters woken for a slot that have not yet looked at it: slots
    /// they will take are not given to others too.
    woken: usize,
}

impl Opens {
    /// The waiter is polled: a wake it had is spent. True if it had one
    /// (it then goes to the front of the queue if it must wait again).
    pub fn polled(&mut self, w: &OpenWait) -> bool {
        if w.woken.replace(false) {
            self.woken -= 1;
            return true;
        }
        false
    }

    /// The waiter waits (again): queued once, its waker kept current.
    pub fn wait(&mut self, w: &Rc<OpenWait>, waker: &Waker, front: bool) {
        let mut slot = w.waker.borrow_mut();
        if !slot.as_ref().is_some_and(|k| k.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
        if !w.queued.replace(true) {
            if front {
                self.queue.push_front(w.clone());
            } else {
                self.queue.push_back(w.clone());
            }
        }
    }

    /// Wakes waiters for `free` slots, less those already woken for one.
    pub fn wake(&mut self, free: usize) {
        while self.woken < free {
            if !self.wake_one() {
                break;
            }
        }
    }

    /// Every waiter looks again (the connection failed, or its settings
    /// changed).
    pub fn wake_all(&mut self) {
        while self.wake_one() {}
    }

    fn wake_one(&mut self) -> bool {
        while let Some(w) = self.queue.pop_front() {
            w.queued.set(false);
            // Only the queue holds it: its open was dropped while waiting.
            if Rc::strong_count(&w) == 1 {
                continue;
            }
            let Some(k) = w.waker.borrow_mut().take() else {
                continue;
            };
            w.woken.set(true);
            self.woken += 1;
            k.wake();
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    use super::*;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn waiter(q: &mut Opens) -> (Rc<OpenWait>, Arc<Count>) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        let w = Rc::new(OpenWait::default());
        q.wait(&w, &Waker::from(c.clone()), false);
        (w, c)
    }

    fn wakes(c: &Count) -> usize {
        c.0.load(Ordering::Relaxed)
    }

    #[test]
    fn a_freed_slot_wakes_one_waiter_in_order() {
        let mut q = Opens::default();
        let (a, ca) = waiter(&mut q);
        let (_b, cb) = waiter(&mut q);
        let (_c, cc) = waiter(&mut q);
        q.wake(1);
        assert_eq!((wakes(&ca), wakes(&cb), wakes(&cc)), (1, 0, 0));
        // Still one slot free and its waiter not yet there: nobody more.
        q.wake(1);
        assert_eq!((wakes(&cb), wakes(&cc)), (0, 0));
        assert!(q.polled(&a));
        q.wake(1);
        assert_eq!((wakes(&cb), wakes(&cc)), (1, 0));
        q.wake_all();
        assert_eq!(wakes(&cc), 1);
    }

    #[test]
    fn a_waiter_polled_again_is_queued_once() {
        let mut q = Opens::default();
        let (a, ca) = waiter(&mut q);
        let k = Waker::from(ca.clone());
        q.wait(&a, &k, false);
        q.wait(&a, &k, false);
        q.wake_all();
        assert_eq!(wakes(&ca), 1);
        assert!(!q.wake_one(), "queued once");
    }

    #[test]
    fn a_dropped_waiter_is_skipped_and_a_beaten_one_goes_first() {
        let mut q = Opens::default();
        let (a, ca) = waiter(&mut q);
        let (b, cb) = waiter(&mut q);
        let (_c, cc) = waiter(&mut q);
        drop(b);
        q.wake(1);
        assert_eq!(wakes(&ca), 1);
        // `a` lost the slot to a newcomer: it waits at the front again.
        assert!(q.polled(&a));
        q.wait(&a, &Waker::from(ca.clone()), true);
        q.wake(2);
        assert_eq!((wakes(&ca), wakes(&cb), wakes(&cc)), (2, 0, 1));
    }

    #[test]
    fn a_wake_not_used_is_passed_on() {
        let mut q = Opens::default();
        let (a, _) = waiter(&mut q);
        let (_b, cb) = waiter(&mut q);
        q.wake(1);
        // `a` is dropped before it polls (its request went away): the
        // slot it was woken for goes to the next.
        assert!(q.polled(&a));
        drop(a);
        q.wake(1);
        assert_eq!(wakes(&cb), 1);
    }
}
