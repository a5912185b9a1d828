//! Waking another core off the request path: each worker thread has one
//! bell, which any thread may ring, and the listeners on that thread run
//! when it rings.
//!
//! Cores share nothing on the hot path, but a few rare events need one core
//! to act on another's behalf: a FastCGI server at capacity whose idle
//! connection sits in another core's pool, say. The ringer sets what it
//! wants in an atomic it shares with the other core, then rings; the bell
//! is a socketpair, so the other core's engine wakes on it like on any
//! socket, without a lock or a timer (as reloads and the drain do). Rings
//! that arrive together are answered once.

use std::cell::RefCell;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::rc::{Rc, Weak};
use std::sync::Arc;

/// The ringing end of one worker's bell.
pub struct Bell {
    end: UnixStream,
}

impl Bell {
    /// Wakes the bell's worker. Never blocks: a full socket buffer already
    /// holds an unanswered ring, which is as good as this one.
    pub fn ring(&self) {
        let _ = (&self.end).write(&[1]);
    }
}

/// Something to run on this thread when its bell rings.
pub type Listener = dyn Fn();

struct Here {
    bell: Arc<Bell>,
    listeners: Rc<RefCell<Vec<Weak<Listener>>>>,
}

thread_local! {
    static HERE: RefCell<Option<Here>> = const { RefCell::new(None) };
}

/// This worker's bell. The first call on a worker thread makes it and
/// starts the task that answers it; call it on the worker's thread, inside
/// its runtime.
pub fn here() -> io::Result<Arc<Bell>> {
    HERE.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(here) = &*h {
            return Ok(here.bell.clone());
        }
        let (ring, answer) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        let listeners: Rc<RefCell<Vec<Weak<Listener>>>> = Rc::default();
        crate::task::spawn(answer_rings(answer, listeners.clone()));
        let bell = Arc::new(Bell { end: ring });
        *h = Some(Here {
            bell: bell.clone(),
            listeners,
        });
        Ok(bell)
    })
}

/// Runs `f` on this thread each time its bell rings, for as long as `f`
/// lives elsewhere (it is held weakly). Call [`here`] first.
pub fn listen(f: &Rc<Listener>) {
    HERE.with(|h| {
        if let Some(here) = &*h.borrow() {
            let mut l = here.listeners.borrow_mut();
            l.retain(|w| w.strong_count() > 0);
            l.push(Rc::downgrade(f));
        }
    });
}

async fn answer_rings(end: UnixStream, listeners: Rc<RefCell<Vec<Weak<Listener>>>>) {
    let mut end = match Wakeups::watch(end) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(%e, "cannot answer this worker's bell; other cores cannot wake it");
            return;
        }
    };
    while end.next().await {
        // Upgraded before any runs: a listener may add or drop listeners.
        let live: Vec<Rc<Listener>> = listeners
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for f in live {
            f();
        }
    }
}

/// The worker's end of a socketpair another thread writes a byte to when
/// it wants the worker awake (bells, reloads).
pub(crate) struct Wakeups {
    end: crate::net::TcpStream,
    scratch: bytes::BytesMut,
}

impl Wakeups {
    /// Call on the worker's thread, inside its runtime.
    pub(crate) fn watch(end: UnixStream) -> io::Result<Wakeups> {
        let fd = end.into_raw_fd();
        // SAFETY: fd is a live socket we own; as in `shutdown`, the stream
        // type only lends its readiness wait and its read.
        let std = unsafe { std::net::TcpStream::from_raw_fd(fd) };
        std.set_nonblocking(true)?;
        Ok(Wakeups {
            end: crate::net::TcpStream::from_std(std)?,
            scratch: bytes::BytesMut::with_capacity(64),
        })
    }

    /// Waits for the next wake-up; wake-ups that came together are one.
    /// False once the other end is gone.
    pub(crate) async fn next(&mut self) -> bool {
        loop {
            if self.end.readable().await.is_err() {
                return false;
            }
            self.scratch.clear();
            match self.end.try_read(&mut self.scratch) {
                Ok(0) => return false,
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(_) => return false,
            }
        }
        // Drained first, so one that comes while the caller acts wakes it
        // again.
        while matches!(self.end.try_read(&mut self.scratch), Ok(n) if n > 0) {
            self.scratch.clear();
        }
        true
    }
}
