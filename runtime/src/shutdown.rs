//! Graceful shutdown. The main thread holds one end of a socketpair per
//! worker; closing them wakes every worker through its own engine, without a
//! lock or a timer. A worker then stops accepting, lets its busy connections
//! finish up to the grace deadline, and returns.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::task::{Poll, Waker};

/// The main thread's side: dropping it, or calling [`ShutdownHandle::trigger`],
/// tells every worker to drain.
pub struct ShutdownHandle {
    ends: RefCell<Vec<UnixStream>>,
}

/// A worker's side, moved into the worker thread.
pub struct ShutdownSignal {
    end: UnixStream,
}

pub fn pair(workers: usize) -> io::Result<(ShutdownHandle, Vec<ShutdownSignal>)> {
    let mut ends = Vec::with_capacity(workers);
    let mut signals = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (a, b) = UnixStream::pair()?;
        ends.push(a);
        signals.push(ShutdownSignal { end: b });
    }
    Ok((
        ShutdownHandle {
            ends: RefCell::new(ends),
        },
        signals,
    ))
}

impl ShutdownHandle {
    /// Starts the drain on every worker. Idempotent.
    pub fn trigger(&self) {
        self.ends.borrow_mut().clear();
    }
}

impl ShutdownSignal {
    /// Resolves when the main thread triggers shutdown (its end closes).
    pub async fn wait(self) {
        // The worker's engine can wait on any socket fd; wrapping the unix
        // socket as a TcpStream only borrows that wait (readable()), and no
        // TCP-specific call is ever made on it.
        let fd = self.end.into_raw_fd();
        // SAFETY: fd is a live socket we own; the stream takes ownership.
        let std = unsafe { std::net::TcpStream::from_raw_fd(fd) };
        match crate::net::TcpStream::from_std(std) {
            Ok(s) => {
                let _ = s.readable().await;
            }
            Err(e) => {
                tracing::error!(%e, "cannot watch the shutdown signal; this worker will only stop with the process");
                std::future::pending::<()>().await;
            }
        }
    }
}

thread_local! {
    static DRAINING: Cell<bool> = const { Cell::new(false) };
    static BUSY: Cell<usize> = const { Cell::new(0) };
    static DRAIN_BEGUN: std::rc::Rc<LocalEvent> = std::rc::Rc::default();
}

/// Whether this worker is draining: responses then close their connection.
#[inline]
pub fn draining() -> bool {
    DRAINING.with(Cell::get)
}

/// Set for a drain that hands the listeners to a new process (a binary
/// upgrade): see [`closes_idle`].
static HANDING_OVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Marks the next drain as a handover; call before triggering it.
pub fn set_handing_over() {
    HANDING_OVER.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the drain hands over to a new process.
pub fn handing_over() -> bool {
    HANDING_OVER.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether an idle keep-alive connection closes now rather than waiting
/// for its next request. On SIGTERM nobody serves a reconnect, so at once.
/// In a handover the client may be sending its next request as the close
/// goes out (wrk counts a read error; a browser retries at best), so the
/// connection waits for it, answers it with `Connection: close`, and the
/// client reconnects to the new process; the worker closes those still
/// idle once the linger is over (see the worker's drain).
#[inline]
pub fn closes_idle() -> bool {
    draining() && !handing_over()
}

pub(crate) fn start_draining() {
    DRAINING.with(|d| d.set(true));
    DRAIN_BEGUN.with(|e| e.set());
}

/// Resolves when this worker begins to drain: what a handler holds for
/// later (idle upstream connections) can be let go then, not at exit.
pub async fn drain_begun() {
    let ev = DRAIN_BEGUN.with(std::rc::Rc::clone);
    ev.wait().await
}

/// Connections of this worker that are inside a request.
pub fn busy() -> usize {
    BUSY.with(Cell::get)
}

/// Marks a connection busy for as long as the guard lives; how long it
/// was feeds the quartile the coalesced wait stretches by.
pub struct BusyGuard(Option<std::time::Instant>);

impl BusyGuard {
    pub(crate) fn new() -> BusyGuard {
        let n = BUSY.with(|b| {
            b.set(b.get() + 1);
            b.get()
        });
        crate::coalesce::busy_changed(n);
        BusyGuard(crate::coalesce::request_began())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        crate::coalesce::request_ended(self.0);
        let n = BUSY.with(|b| {
            b.set(b.get() - 1);
            b.get()
        });
        crate::coalesce::busy_changed(n);
    }
}

/// A one-shot event on this core: tasks wait until it is set.
///
/// Each wait holds one slot for its waker, replaced when polled again and
/// freed when the wait is dropped: the accept loop starts a wait per
/// connection and drops it when the accept wins, so a list that only grew
/// leaked 32 bytes per accepted connection (found by the soak).
#[derive(Default)]
pub struct LocalEvent {
    set: Cell<bool>,
    waiters: RefCell<slab::Slab<Waker>>,
}

impl LocalEvent {
    pub fn set(&self) {
        self.set.set(true);
        for w in self.waiters.borrow_mut().drain() {
            w.wake();
        }
    }

    pub fn is_set(&self) -> bool {
        self.set.get()
    }

    pub fn wait(&self) -> EventWait<'_> {
        EventWait {
            event: self,
            slot: None,
        }
    }

    /// Waiters registered now, for tests.
    pub fn waiting(&self) -> usize {
        self.waiters.borrow().len()
    }
}

/// The future of [`LocalEvent::wait`].
pub struct EventWait<'a> {
    event: &'a LocalEvent,
    slot: Option<usize>,
}

impl std::future::Future for EventWait<'_> {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if self.event.set.get() {
            self.slot = None;
            return Poll::Ready(());
        }
        let mut waiters = self.event.waiters.borrow_mut();
        match self.slot.and_then(|k| waiters.get_mut(k)) {
            Some(w) => w.clone_from(cx.waker()),
            None => {
                let k = waiters.insert(cx.waker().clone());
                drop(waiters);
                self.slot = Some(k);
            }
        }
        Poll::Pending
    }
}

impl Drop for EventWait<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.slot {
            // Set already drained the slab; a slot left is ours.
            if !self.event.set.get() {
                self.event.waiters.borrow_mut().try_remove(k);
            }
        }
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;
    use std::future::Future;
    use std::task::Context;

    #[test]
    fn dropped_waits_leave_nothing_behind() {
        let ev = LocalEvent::default();
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..1000 {
            let mut w = std::pin::pin!(ev.wait());
            assert!(w.as_mut().poll(&mut cx).is_pending());
            assert!(w.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(ev.waiting(), 0);
        let mut kept = std::pin::pin!(ev.wait());
        assert!(kept.as_mut().poll(&mut cx).is_pending());
        assert_eq!(ev.waiting(), 1);
        ev.set();
        assert!(kept.as_mut().poll(&mut cx).is_ready());
        assert_eq!(ev.waiting(), 0);
    }
}
