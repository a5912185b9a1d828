//! A client connection as the engine hands it to a protocol driver: its
//! socket, its place in the worker's connection table (so every wait on
//! the client carries a deadline, see [`crate::conns`]), the worker's
//! connection settings, and the worker's state a driver must respect
//! (draining, busy connections, counters). A driver (HTTP/1, later
//! HTTP/2) reads and writes through this and never reaches into the
//! engine's modules itself.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;

use crate::config::ConnConfig;
use crate::conns::{ConnGuard, Wait};
pub use crate::meter::Meter;
use crate::net::TcpStream;
use crate::reload::Current;
use crate::shutdown::BusyGuard;

pub struct Link {
    pub stream: TcpStream,
    guard: ConnGuard,
    pub cfg: Rc<ConnConfig>,
    /// Which of the server's listeners accepted it (its index in `listen`;
    /// see [`Link::listener`]). A u32 beside `alt_svc_sent`, so that the
    /// flag costs no room: every connection's future holds a Link.
    listener: u32,
    /// An `Alt-Svc` went out on this connection: a client keeps what one
    /// says for its `ma`, so one per connection is enough.
    pub alt_svc_sent: Cell<bool>,
    /// The pace of the response being written; reset for each request.
    pub sending: Cell<Meter>,
    /// The client's address as a PROXY protocol header gave it, where
    /// the listener takes one (else the socket's peer is the client).
    client: Cell<Option<SocketAddr>>,
}

/// A protocol layer's entry point: serves one accepted connection until it
/// closes. The listener's settings (TLS, later ALPN or a preface) tell the
/// driver which protocol the connection speaks; the engine never looks.
/// `current` holds the worker's handler of type `H`, swapped on reload:
/// a driver takes it afresh at the start of each request.
pub trait Driver<H>: Copy + Send + Sync + 'static {
    fn serve(self, link: Link, current: Rc<Current<H>>) -> impl Future<Output = ()> + 'static;

    /// Serves a listener's UDP socket (HTTP/3) on this worker until the
    /// worker stops; a driver without a datagram protocol leaves it.
    fn serve_udp(
        self,
        socket: std::net::UdpSocket,
        at: UdpAt,
        current: Rc<Current<H>>,
    ) -> impl Future<Output = ()> + 'static {
        drop((socket, at, current));
        std::future::ready(())
    }
}

/// Where a worker's UDP socket sits: its listener, and its place in the
/// listener's group of one socket per worker.
#[derive(Clone)]
pub struct UdpAt {
    pub listener: usize,
    pub worker: usize,
    pub workers: usize,
    /// Whether the kernel steers each packet to its connection's worker
    /// (see `udp_group`); if not, a packet may reach another worker.
    pub steered: bool,
    /// Where a worker hands a datagram that belongs to another.
    pub handoff: std::sync::Arc<crate::udp::Handoff>,
}

impl Drop for Link {
    fn drop(&mut self) {
        crate::stats::conn_closed();
        crate::capacity::closed();
    }
}

impl Link {
    /// A connection accepted on `listener`, with TLS started when that
    /// listener has it (the handshake itself is the driver's first wait,
    /// [`Link::handshake`]); `None` when TLS could not start.
    pub(crate) fn accepted(
        stream: TcpStream,
        cfg: Rc<ConnConfig>,
        listener: usize,
    ) -> Option<Link> {
        let mut stream = stream;
        let _ = stream.set_nodelay(true);
        if let Some(Some(t)) = cfg.tls.get(listener) {
            if let Err(e) = stream.start_tls_server(t) {
                tracing::warn!(error = %e, "TLS not started");
                return None;
            }
        }
        let guard = ConnGuard::new(stream.as_raw_fd());
        crate::stats::conn_opened();
        Some(Link {
            stream,
            guard,
            cfg,
            listener: listener as u32,
            sending: Cell::new(Meter::default()),
            client: Cell::new(None),
            alt_svc_sent: Cell::new(false),
        })
    }

    /// Which of the server's listeners accepted it (its index in `listen`).
    pub fn listener(&self) -> usize {
        self.listener as usize
    }

    /// The client's address: what a PROXY protocol header said, else the
    /// socket's peer. Every use of the client's address (logs, forwarded
    /// headers, FastCGI's REMOTE_ADDR, balancing, access rules) asks here.
    #[inline]
    pub fn client_addr(&self) -> io::Result<SocketAddr> {
        if self.is_unix() {
            return Err(crate::net::no_inet());
        }
        match self.client.get() {
            Some(a) => Ok(a),
            None => self.stream.peer_addr(),
        }
    }

    /// Whether the client came on a unix-socket listener: it has no
    /// address (and the socket's own calls for one are not to be made).
    #[inline]
    pub fn is_unix(&self) -> bool {
        self.listener() >= self.cfg.tcp_listeners
    }

    /// The address the client connected to; none on a unix socket.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        if self.is_unix() {
            return Err(crate::net::no_inet());
        }
        self.stream.local_addr()
    }

    /// Sets the client's address a PROXY protocol header gave.
    pub fn set_client_addr(&self, addr: SocketAddr) {
        self.client.set(Some(addr));
    }

    /// Whether this worker is draining: responses then end their
    /// connection, and idle connections close.
    #[inline]
    pub fn draining(&self) -> bool {
        crate::shutdown::draining()
    }

    /// Whether an idle connection closes now (see
    /// [`crate::shutdown::closes_idle`]).
    #[inline]
    pub fn closes_idle(&self) -> bool {
        crate::shutdown::closes_idle()
    }

    /// Marks the connection busy (inside a request) for as long as the
    /// guard lives: a drain waits for it, and io_uring batches by it.
    #[inline]
    pub fn busy(&self) -> BusyGuard {
        BusyGuard::new()
    }

    /// Marks the connection idle (between requests) or not; a drain closes
    /// idle connections at once.
    #[inline]
    pub fn set_idle(&self, idle: bool) {
        self.guard.set_idle(idle);
    }

    /// The connection is no longer a request stream (a tunnel took it): no
    /// request deadline applies any more.
    #[inline]
    pub fn disarm(&self) {
        self.guard.disarm();
    }

    /// Arms a deadline for waits on the client that a driver runs itself
    /// (HTTP/2's, inside its codec): past it the socket is shut down as
    /// [`Link::readable_until`] does (`write`: both ways, with a reset).
    #[inline]
    pub fn watch(&self, deadline: Instant, write: bool) {
        let wait = if write { Wait::Write } else { Wait::Read };
        self.guard.arm(deadline, wait);
    }

    /// Waits until the client sent something, it closed, or `deadline`
    /// passed; in the last case the read side is shut and `expired()` says so.
    pub async fn readable_until(&self, deadline: Instant) -> io::Result<()> {
        self.guard.arm(deadline, Wait::Read);
        let r = self.stream.readable().await;
        self.guard.disarm();
        r
    }

    /// Runs the TLS handshake of a stream that started one, within
    /// `deadline` (the header timeout: a client that stalls mid-handshake
    /// is a slowloris too).
    pub async fn handshake(&self, deadline: Instant) -> io::Result<()> {
        // Read and write waits alike end at the deadline: the sweep shuts
        // the socket down either way.
        self.guard.arm(deadline, Wait::Write);
        let r = self.stream.handshake().await;
        self.guard.disarm();
        let r = match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        };
        crate::stats::tls_handshake(&r, &self.stream);
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
        if self.stream.ring_sends() {
            if wbuf.is_empty() {
                return Ok(());
            }
            // Through the ring: carried by the loop's next io_uring_enter
            // with every other connection's, no system call of its own.
            let (r, mut sent) = self.stream.send_ring(std::mem::take(wbuf)).await;
            match r {
                Ok(n) => bytes::Buf::advance(&mut sent, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            *wbuf = sent;
            if wbuf.is_empty() {
                return Ok(());
            }
        } else if self.try_flush(wbuf, false)? {
            return Ok(());
        }
        Box::pin(self.flush_wait(wbuf)).await
    }

    /// [`Link::flush`] for bytes that a file body follows at once: they may
    /// wait in the socket to leave with the body's first bytes.
    pub async fn flush_before_file(&mut self, wbuf: &mut BytesMut) -> io::Result<()> {
        if self.try_flush(wbuf, true)? {
            return Ok(());
        }
        Box::pin(self.flush_wait(wbuf)).await
    }

    /// The direct send of [`Link::flush`]: whether it wrote everything.
    fn try_flush(&mut self, wbuf: &mut BytesMut, more: bool) -> io::Result<bool> {
        if wbuf.is_empty() && !self.stream.write_pending() {
            return Ok(true);
        }
        let r = if more {
            self.stream.try_write_more(wbuf)
        } else {
            self.stream.try_write(wbuf)
        };
        match r {
            Ok(()) if wbuf.is_empty() && !self.stream.write_pending() => {
                wbuf.clear();
                Ok(true)
            }
            Ok(()) => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// How long the next wait for the client to take bytes may last.
    fn send_allowance(&self) -> std::time::Duration {
        let t = &self.cfg.timeouts;
        let queued = if t.min_rate > 0 {
            unsent(self.stream.as_raw_fd())
        } else {
            0
        };
        self.sending.get().allowance(t.send, t.min_rate, queued)
    }

    fn count_sent(&self, since: Instant, bytes: u64) {
        let mut m = self.sending.get();
        m.record(since.elapsed(), bytes);
        self.sending.set(m);
    }

    async fn flush_wait(&mut self, wbuf: &mut BytesMut) -> io::Result<()> {
        let buf = std::mem::take(wbuf);
        let len = buf.len() as u64;
        let start = Instant::now();
        self.guard.arm(start + self.send_allowance(), Wait::Write);
        let (r, mut buf) = self.stream.write_all(buf).await;
        self.guard.disarm();
        self.count_sent(start, len);
        buf.clear();
        *wbuf = buf;
        match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }

    /// Sends a file range; the send timeout applies to each step of
    /// progress, and the minimum rate to the whole response.
    pub async fn send_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        let (guard, sending, t) = (&self.guard, &self.sending, &self.cfg.timeouts);
        let fd = self.stream.as_raw_fd();
        let last = Cell::new(Instant::now());
        let rearm = |sent: u64| {
            let now = Instant::now();
            let mut m = sending.get();
            m.record(now - last.get(), sent);
            sending.set(m);
            last.set(now);
            let queued = if t.min_rate > 0 { unsent(fd) } else { 0 };
            guard.arm(now + m.allowance(t.send, t.min_rate, queued), Wait::Write);
        };
        rearm(0);
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
        // The per-step timeout only: waits here are on the upstream as much
        // as on the client, and the upstream has deadlines of its own.
        let rearm = |_sent: u64| {
            guard.arm(Instant::now() + send, Wait::Write);
            on_progress();
        };
        rearm(0);
        let r = crate::splice::splice_sockets(from, &self.stream, len, &rearm).await;
        self.guard.disarm();
        match r {
            Err(_) if self.expired() => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }
}

/// Bytes written to the socket `fd` that the client has not acknowledged
/// yet (SIOCOUTQ, which is TIOCOUTQ's number); 0 where the kernel does not
/// say.
#[cfg(target_os = "linux")]
fn unsent(fd: RawFd) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: a socket fd of this connection and a pointer to an int, as
    // SIOCOUTQ wants.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    if r == 0 {
        n.max(0) as u64
    } else {
        0
    }
}

#[cfg(not(target_os = "linux"))]
fn unsent(_fd: RawFd) -> u64 {
    0
}
