//! The per-worker cap on open client connections (`max_connections`, like
//! nginx's `worker_connections` or HAProxy's `maxconn`).
//!
//! At the cap the worker's accept loops stop accepting; new connections
//! wait in the kernel's listen queue (its backlog) until a client
//! connection of this worker closes, rather than being accepted and then
//! starved of file descriptors or memory.

use std::cell::RefCell;
use std::task::{Poll, Waker};

thread_local! {
    static WAITERS: RefCell<Vec<Waker>> = const { RefCell::new(Vec::new()) };
}

/// A client connection of this worker closed: accept loops held at the
/// cap look again.
pub(crate) fn closed() {
    WAITERS.with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            for waker in w.drain(..) {
                waker.wake();
            }
        }
    });
}

/// Client connections this worker holds open: the worker's own counter,
/// kept for /metrics, so there is one count and not two.
pub fn clients() -> usize {
    crate::stats::open_here() as usize
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
