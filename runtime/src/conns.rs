//! This worker's table of open connections, for two jobs that need to reach
//! a connection while its task sits in a wait:
//!
//! - **Timeouts.** A connection arms a deadline before it waits on the client
//!   (head, body, idle keep-alive, write). One sweeper task per worker checks
//!   the table a few times a second and shuts down the socket of each
//!   connection whose deadline passed; the wait then ends (EOF or EPIPE) and
//!   the task sees [`ConnGuard::expired`]. This is nginx's coarse-timer
//!   approach: arming costs a table write, not a timer registration per
//!   request, and it keeps each connection's future small (monoio's `Sleep`
//!   alone is 640 bytes).
//! - **Drain.** On shutdown, idle connections are shut down at once; busy
//!   ones finish their request first.

use std::cell::RefCell;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// How often the sweeper looks for expired deadlines: timeouts fire up to
/// this much late.
pub const SWEEP_EVERY: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    /// Waiting for the client to send: expiry shuts down the read side only,
    /// so a 408 can still be written.
    Read,
    /// Waiting for the client to take our bytes: expiry shuts down both.
    Write,
}

struct Entry {
    fd: RawFd,
    idle: bool,
    deadline: Option<(Instant, Wait)>,
    expired: bool,
}

thread_local! {
    static CONNS: RefCell<slab::Slab<Entry>> = const { RefCell::new(slab::Slab::new()) };
}

/// A connection's place in the table, for as long as the connection lives.
pub struct ConnGuard {
    key: usize,
}

impl ConnGuard {
    pub fn new(fd: RawFd) -> ConnGuard {
        let key = CONNS.with(|c| {
            c.borrow_mut().insert(Entry {
                fd,
                idle: true,
                deadline: None,
                expired: false,
            })
        });
        ConnGuard { key }
    }

    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Entry) -> R) -> R {
        CONNS.with(|c| f(&mut c.borrow_mut()[self.key]))
    }

    /// Marks the connection idle (between requests) or not.
    #[inline]
    pub fn set_idle(&self, idle: bool) {
        self.with(|e| e.idle = idle);
    }

    /// Sets the deadline of the wait about to start.
    #[inline]
    pub fn arm(&self, deadline: Instant, wait: Wait) {
        self.with(|e| e.deadline = Some((deadline, wait)));
    }

    #[inline]
    pub fn disarm(&self) {
        self.with(|e| e.deadline = None);
    }

    /// Whether a deadline passed and the socket was shut down for it.
    #[inline]
    pub fn expired(&self) -> bool {
        self.with(|e| e.expired)
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        CONNS.with(|c| c.borrow_mut().remove(self.key));
    }
}

/// Shuts down every connection whose deadline is past.
pub(crate) fn sweep(now: Instant) {
    CONNS.with(|c| {
        for (_, e) in c.borrow_mut().iter_mut() {
            if let Some((deadline, wait)) = e.deadline {
                if deadline <= now && !e.expired {
                    e.expired = true;
                    let how = match wait {
                        Wait::Read => libc::SHUT_RD,
                        Wait::Write => {
                            // A client too slow to take our bytes: the close
                            // resets rather than leaving what is queued (up
                            // to the whole send buffer) for it to trickle
                            // out (nginx's reset_timedout_connection).
                            reset_on_close(e.fd);
                            libc::SHUT_RDWR
                        }
                    };
                    // SAFETY: the fd belongs to a live connection of this worker.
                    unsafe { libc::shutdown(e.fd, how) };
                }
            }
        }
    });
}

fn reset_on_close(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a live socket of this worker with a valid linger.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// Shuts down the sockets of connections (only the idle ones, or all): each
/// one's pending wait then ends and its task closes it.
pub(crate) fn close(only_idle: bool) {
    CONNS.with(|c| {
        for (_, e) in c.borrow().iter() {
            if e.idle || !only_idle {
                // SAFETY: the fd belongs to a live connection of this worker.
                unsafe { libc::shutdown(e.fd, libc::SHUT_RDWR) };
            }
        }
    });
}

/// Connections this worker holds open.
pub fn open() -> usize {
    CONNS.with(|c| c.borrow().len())
}

/// The sweeper task: one per worker, until the worker ends.
pub(crate) async fn sweeper() {
    // One timer, reset each tick, so the sweeper allocates nothing.
    let mut tick = std::pin::pin!(crate::task::sleep(SWEEP_EVERY));
    loop {
        tick.as_mut().await;
        let now = crate::clock::now();
        sweep(now);
        crate::stats::publish_ring();
        tick.as_mut().reset(now + SWEEP_EVERY);
    }
}
