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
}

/// Whether this worker is draining: responses then close their connection.
#[inline]
pub fn draining() -> bool {
    DRAINING.with(Cell::get)
}

pub(crate) fn start_draining() {
    DRAINING.with(|d| d.set(true));
}

/// Connections of this worker that are inside a request.
pub fn busy() -> usize {
    BUSY.with(Cell::get)
}

/// Marks a connection busy for as long as the guard lives.
pub(crate) struct BusyGuard(());

impl BusyGuard {
    pub(crate) fn new() -> BusyGuard {
        let n = BUSY.with(|b| {
            b.set(b.get() + 1);
            b.get()
        });
        crate::coalesce::busy_changed(n);
        BusyGuard(())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let n = BUSY.with(|b| {
            b.set(b.get() - 1);
            b.get()
        });
        crate::coalesce::busy_changed(n);
    }
}

/// A one-shot event on this core: tasks wait until it is set.
#[derive(Default)]
pub struct LocalEvent {
    set: Cell<bool>,
    waiters: RefCell<Vec<Waker>>,
}

impl LocalEvent {
    pub fn set(&self) {
        self.set.set(true);
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    pub fn is_set(&self) -> bool {
        self.set.get()
    }

    pub async fn wait(&self) {
        std::future::poll_fn(|cx| {
            if self.set.get() {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}
