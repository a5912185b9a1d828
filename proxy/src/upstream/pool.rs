//! Idle upstream connections of one server on one core.
//!
//! LIFO: the connection used last is reused first, so it is the one most
//! likely still open and warm, and the ones at the bottom age out. Nothing
//! here is shared with another core: each core's pools are its own, so
//! lending a connection takes no lock.
//!
//! A connection the server closed while it sat idle is dropped, not lent:
//! the check before lending is a non-blocking one-byte `MSG_PEEK`, which
//! sees the EOF (or bytes nobody asked for, which make the connection as
//! unusable). The per-core reaper ([`Pool::reap`]) runs the same check on
//! every idle connection each second and closes those past the idle timeout,
//! so a closed connection does not sit in CLOSE_WAIT until the next request.

use std::time::{Duration, Instant};

use ringside_runtime::net::TcpStream;

pub struct IdleConn {
    pub stream: TcpStream,
    since: Instant,
}

#[derive(Default)]
pub struct Pool {
    idle: Vec<IdleConn>,
}

impl Pool {
    pub fn len(&self) -> usize {
        self.idle.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idle.is_empty()
    }

    /// The most recently returned connection within its idle timeout, and
    /// how many were dropped on the way (FastCGI frees their slots). With
    /// `check`, one the server closed is skipped; without, the caller must
    /// cope with a stale one (a replayable request is retried on a fresh
    /// connection), and saves a syscall per request.
    pub fn take(&mut self, idle_timeout: Duration, check: bool) -> (Option<TcpStream>, usize) {
        let now = ringside_runtime::clock::now();
        let mut dropped = 0;
        while let Some(c) = self.idle.pop() {
            if now.duration_since(c.since) < idle_timeout && (!check || still_open(&c.stream)) {
                return (Some(c.stream), dropped);
            }
            dropped += 1;
        }
        (None, dropped)
    }

    /// The connection idle longest, to close when one must go.
    pub fn take_oldest(&mut self) -> Option<TcpStream> {
        (!self.idle.is_empty()).then(|| self.idle.remove(0).stream)
    }

    /// Keeps `stream` for reuse, unless `max` are kept already: then it
    /// comes back.
    pub fn put(&mut self, stream: TcpStream, max: usize) -> Option<TcpStream> {
        if self.idle.len() >= max {
            return Some(stream);
        }
        self.idle.push(IdleConn {
            stream,
            since: ringside_runtime::clock::now(),
        });
        None
    }

    /// Closes the oldest connections beyond `max`; says how many.
    pub fn trim(&mut self, max: usize) -> usize {
        let surplus = self.idle.len().saturating_sub(max);
        self.idle.drain(..surplus);
        surplus
    }

    /// Closes the connections idle longer than `idle_timeout` and those the
    /// server closed; says how many.
    pub fn reap(&mut self, idle_timeout: Duration, now: Instant) -> usize {
        let before = self.idle.len();
        self.idle
            .retain(|c| now.duration_since(c.since) < idle_timeout && still_open(&c.stream));
        before - self.idle.len()
    }
}

/// True while an idle connection has nothing to read: no EOF, no error and
/// no stray bytes (over TLS: no data beyond post-handshake messages).
pub(super) fn still_open(stream: &TcpStream) -> bool {
    stream.idle_usable()
}
