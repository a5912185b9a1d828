//! The per-worker cap on open client connections (`max_connections`, like
//! nginx's `worker_connections` or HAProxy's `maxconn`).
//!
//! At the cap the worker's accept loops stop accepting; new connections
//! wait in the kernel's listen queue (its backlog) until a client
//! connection of this worker closes, rather than being accepted and then
//! starved of file descriptors or memory. Single-threaded per worker, so
//! plain cells.

use std::cell::{Cell, RefCell};
use std::task::{Poll, Waker};

thread_local! {
    static OPEN: Cell<usize> = const { Cell::new(0) };
    static WAITERS: RefCell<Vec<Waker>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn opened() {
    OPEN.with(|o| o.set(o.get() + 1));
}

pub(crate) fn closed() {
    OPEN.with(|o| o.set(o.get().saturating_sub(1)));
    WAITERS.with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            for waker in w.drain(..) {
                waker.wake();
            }
        }
    });
}

/// Client connections this worker holds open.
pub fn clients() -> usize {
    OPEN.with(Cell::get)
}

/// Waits until this worker holds fewer than `max` client connections.
pub(crate) async fn below(max: usize) {
    std::future::poll_fn(|cx| {
        if clients() < max {
            Poll::Ready(())
        } else {
            WAITERS.with(|w| w.borrow_mut().push(cx.waker().clone()));
            Poll::Pending
        }
    })
    .await
}
