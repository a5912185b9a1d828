//! A client connection's socket with its place in the worker's connection
//! table, so every wait on the client carries a deadline (see
//! [`crate::conns`]).

use std::io;
use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;

use super::ConnConfig;
use crate::conns::{ConnGuard, Wait};
use crate::net::TcpStream;

pub(crate) struct Link {
    pub stream: TcpStream,
    pub guard: ConnGuard,
    pub cfg: Rc<ConnConfig>,
}

impl Drop for Link {
    fn drop(&mut self) {
        crate::stats::conn_closed();
    }
}

impl Link {
    pub fn new(stream: TcpStream, cfg: Rc<ConnConfig>) -> Link {
        let guard = ConnGuard::new(std::os::fd::AsRawFd::as_raw_fd(&stream));
        crate::stats::conn_opened();
        Link { stream, guard, cfg }
    }

    /// Waits until the client sent something, it closed, or `deadline`
    /// passed; in the last case the read side is shut and `expired()` says so.
    pub async fn readable_until(&self, deadline: Instant) -> io::Result<()> {
        self.guard.arm(deadline, Wait::Read);
        let r = self.stream.readable().await;
        self.guard.disarm();
        r
    }

    pub fn expired(&self) -> bool {
        self.guard.expired()
    }

    /// Writes out `wbuf` within the send timeout, keeping the buffer.
    ///
    /// First a direct non-blocking send: a response usually fits the socket
    /// buffer whole, and then there is nothing to wait for. Only the rest of
    /// a large or slow write goes through the engine, boxed, so its future
    /// is not part of every connection's.
    pub async fn flush(&mut self, wbuf: &mut BytesMut) -> io::Result<()> {
        if wbuf.is_empty() {
            return Ok(());
        }
        match self.stream.try_write(wbuf) {
            Ok(()) if wbuf.is_empty() => {
                wbuf.clear();
                return Ok(());
            }
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        Box::pin(self.flush_wait(wbuf)).await
    }

    async fn flush_wait(&mut self, wbuf: &mut BytesMut) -> io::Result<()> {
        let buf = std::mem::take(wbuf);
        self.guard
            .arm(Instant::now() + self.cfg.timeouts.send, Wait::Write);
        let (r, mut buf) = self.stream.write_all(buf).await;
        self.guard.disarm();
        buf.clear();
        *wbuf = buf;
        match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }

    /// Sends a file range; the send timeout applies to each step of
    /// progress, not to the whole transfer.
    pub async fn send_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        let guard = &self.guard;
        let send = self.cfg.timeouts.send;
        let rearm = || guard.arm(Instant::now() + send, Wait::Write);
        rearm();
        let r = crate::fs::send_file(&mut self.stream, file, offset, len, &rearm).await;
        self.guard.disarm();
        match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }

    /// Moves `len` bytes from `from` (an upstream socket) to the client
    /// without a copy; `on_progress` also runs after each step, for the
    /// source's own deadline.
    pub async fn splice_from(
        &mut self,
        from: &crate::net::TcpStream,
        len: u64,
        on_progress: &dyn Fn(),
    ) -> io::Result<()> {
        let guard = &self.guard;
        let send = self.cfg.timeouts.send;
        let rearm = || {
            guard.arm(Instant::now() + send, Wait::Write);
            on_progress();
        };
        rearm();
        let r = crate::splice::splice_sockets(from, &self.stream, len, &rearm).await;
        self.guard.disarm();
        match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }
}
