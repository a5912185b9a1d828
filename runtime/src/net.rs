//! TCP listener and stream over whichever engine runs this worker.
//!
//! Reads are readiness-first: [`TcpStream::readable`] waits without holding a
//! buffer, then [`TcpStream::try_read`] copies what the kernel has into a
//! buffer taken from this core's pool. An idle keep-alive connection thus
//! pins no memory in the kernel or in user space; an io_uring read posted with
//! its own buffer would pin that buffer for as long as the client stays quiet.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
#[cfg(rt_glommio)]
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::Arc;

use bytes::BytesMut;

use crate::backend::on_engine;
#[cfg(rt_monoio)]
use crate::backend::{self, Backend};
use crate::tls::{rustls, Need, Session, TlsAcceptor};

/// Linux's MSG_MORE; elsewhere a head is sent at once.
#[cfg(any(target_os = "linux", target_os = "android"))]
const MSG_MORE: libc::c_int = libc::MSG_MORE;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const MSG_MORE: libc::c_int = 0;

pub struct TcpStream {
    /// Before `inner`: a receive still armed is cancelled before the
    /// socket closes.
    multi: crate::recv_multi::Multi,
    inner: Inner,
    /// The TLS session, once one is started (see [`crate::tls`]).
    tls: Option<Box<Session>>,
}

enum Inner {
    #[cfg(rt_monoio)]
    Monoio(monoio::net::TcpStream),
    #[cfg(rt_glommio)]
    Glommio(GlommioStream),
}

/// glommio's stream, with what its readiness wait needs (see `readable`).
#[cfg(rt_glommio)]
struct GlommioStream {
    stream: std::cell::RefCell<glommio::net::TcpStream>,
    fd: RawFd,
    /// A byte the readiness wait had to take off the socket.
    stash: std::cell::Cell<Option<u8>>,
}

#[cfg(rt_glommio)]
impl GlommioStream {
    fn wrap(stream: glommio::net::TcpStream) -> Inner {
        let fd = stream.as_raw_fd();
        Inner::Glommio(GlommioStream {
            stream: std::cell::RefCell::new(stream),
            fd,
            stash: std::cell::Cell::new(None),
        })
    }
}

impl TcpStream {
    pub(crate) fn from_std(std: std::net::TcpStream) -> io::Result<TcpStream> {
        let inner = on_engine!(
            monoio => {
                if backend::current() != Backend::IoUring {
                    std.set_nonblocking(true)?;
                }
                Inner::Monoio(monoio::net::TcpStream::from_std(std)?)
            },
            glommio => {
                std.set_nonblocking(true)?;
                // SAFETY: the fd comes from a live std stream we own.
                GlommioStream::wrap(unsafe { glommio::net::TcpStream::from_raw_fd(std.into_raw_fd()) })
            },
        );
        Ok(TcpStream {
            multi: Default::default(),
            inner,
            tls: None,
        })
    }

    /// Connects to `addr` on this worker's engine.
    pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        let inner = on_engine!(
            monoio => Inner::Monoio(monoio::net::TcpStream::connect_addr(addr).await?),
            glommio => GlommioStream::wrap(glommio::net::TcpStream::connect(addr).await.map_err(io::Error::from)?),
        );
        let s = TcpStream {
            multi: Default::default(),
            inner,
            tls: None,
        };
        s.set_nodelay(true)?;
        Ok(s)
    }

    /// Connects to a unix stream socket (a FastCGI server's). The socket is
    /// carried as a `TcpStream`: every operation used on it (recv, send,
    /// poll, splice) is the same system call for both families; only
    /// `peer_addr` and `set_nodelay` do not apply.
    ///
    /// The connect is non-blocking: a unix socket with a full backlog
    /// answers `WouldBlock` at once instead of stalling this core.
    pub fn connect_unix(path: &std::path::Path) -> io::Result<TcpStream> {
        use socket2::{Domain, SockAddr, Socket, Type};
        let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        sock.set_cloexec(true)?;
        sock.set_nonblocking(true)?;
        sock.connect(&SockAddr::unix(path)?)?;
        TcpStream::from_unix_fd(sock.into())
    }

    /// A connected or accepted unix stream socket, carried as a
    /// `TcpStream` (see [`TcpStream::connect_unix`]).
    fn from_unix_fd(fd: std::os::fd::OwnedFd) -> io::Result<TcpStream> {
        // See connect_unix's doc for why a unix socket may travel as a
        // TcpStream.
        let std = std::net::TcpStream::from(fd);
        #[cfg(rt_monoio)]
        if backend::current() == Backend::IoUring {
            // io_uring answers EAGAIN on an O_NONBLOCK socket instead of
            // waiting: its sockets stay blocking.
            std.set_nonblocking(false)?;
        }
        TcpStream::from_std(std)
    }

    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        socket2::SockRef::from(self).set_tcp_nodelay(on)
    }

    /// The peer's address. Not for a unix socket: monoio's panics there
    /// (the connection's [`crate::link::Link`] knows which it is).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            // monoio caches the address after the first call.
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.peer_addr(),
            #[cfg(rt_glommio)]
            Inner::Glommio(s) => s.stream.borrow().peer_addr().map_err(io::Error::from),
        }
    }

    /// The local address; not for a unix socket, as [`TcpStream::peer_addr`].
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            // Cached after the first call, as the peer's: FastCGI's
            // SERVER_ADDR asks for it on every request, and each ask was a
            // `getsockname(2)`.
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.local_addr(),
            #[cfg(rt_glommio)]
            Inner::Glommio(_) => socket2::SockRef::from(self)
                .local_addr()?
                .as_socket()
                .ok_or_else(|| io::Error::other("not an inet socket")),
        }
    }

    /// Waits until the socket has bytes (or EOF, or an error) to read,
    /// without committing a buffer.
    pub async fn readable(&self) -> io::Result<()> {
        if self.tls.as_ref().is_some_and(|t| t.buffered()) {
            return Ok(());
        }
        if self.multi.readable().await {
            return Ok(());
        }
        match &self.inner {
            // Not relaxed: on the readiness driver a relaxed wait trusts a
            // stale readiness bit (our recv's EAGAIN never clears it), and
            // would spin; the strict wait confirms with poll(2) first.
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.readable(false).await,
            #[cfg(rt_glommio)]
            Inner::Glommio(s) => {
                // glommio has no readiness wait. A one-byte MSG_PEEK would be
                // one, but glommio gives each pending recv a 4 KiB DMA
                // buffer (measured: 4.2 KiB per idle connection). Its plain
                // read instead waits with a buffer-less poll; the byte it
                // takes is kept for the next try_read.
                if s.stash.get().is_some() {
                    return Ok(());
                }
                let mut b = [0u8; 1];
                let n = std::future::poll_fn(|cx| {
                    use futures_lite::AsyncRead;
                    std::pin::Pin::new(&mut *s.stream.borrow_mut()).poll_read(cx, &mut b)
                })
                .await?;
                if n == 1 {
                    s.stash.set(Some(b[0]));
                }
                Ok(())
            }
        }
    }

    /// Reads what the kernel has now into `buf`'s spare capacity, without
    /// waiting. `WouldBlock` when there is nothing; `Ok(0)` at EOF.
    pub fn try_read(&self, buf: &mut BytesMut) -> io::Result<usize> {
        if let Some(t) = &self.tls {
            return t.try_read(self.as_raw_fd(), buf);
        }
        if let Some(r) = self.multi.try_read(buf) {
            return r;
        }
        #[cfg(rt_glommio)]
        #[allow(irrefutable_let_patterns)] // irrefutable in glommio-only builds
        if let Inner::Glommio(g) = &self.inner {
            if let Some(b) = g.stash.take() {
                buf.extend_from_slice(&[b]);
                return match self.recv_into(buf) {
                    Ok(n) => Ok(n + 1),
                    // EOF or nothing more now: the stashed byte first.
                    Err(_) => Ok(1),
                };
            }
        }
        self.recv_into(buf)
    }

    fn recv_into(&self, buf: &mut BytesMut) -> io::Result<usize> {
        make_room(buf);
        let spare = buf.spare_capacity_mut();
        // SAFETY: recv writes at most spare.len() bytes into the spare part.
        let n = unsafe {
            libc::recv(
                self.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel initialised n bytes past len.
        unsafe { buf.set_len(buf.len() + n as usize) };
        Ok(n as usize)
    }

    /// Looks at what the kernel has received, beneath TLS and without
    /// taking it: for a header that precedes the TLS handshake (PROXY
    /// protocol). `WouldBlock` when nothing has come; `Ok(0)` at EOF.
    /// Not on glommio, whose readiness wait takes a byte (`Unsupported`).
    pub fn peek_raw(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.raw_recv(buf, libc::MSG_PEEK)
    }

    /// Takes `buf.len()` bytes that [`TcpStream::peek_raw`] saw.
    pub fn take_raw(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.raw_recv(buf, 0)
    }

    fn raw_recv(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
        debug_assert!(
            !self.multi.is_on(),
            "a raw read would reorder a multishot's bytes"
        );
        #[cfg(rt_glommio)]
        #[allow(irrefutable_let_patterns)] // irrefutable in glommio-only builds
        if let Inner::Glommio(_) = &self.inner {
            return Err(io::ErrorKind::Unsupported.into());
        }
        // SAFETY: recv writes at most buf.len() bytes into buf.
        let n = unsafe {
            libc::recv(
                self.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | flags,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Waits for and reads at least one byte (or EOF) into `buf`.
    pub async fn read(&self, buf: &mut BytesMut) -> io::Result<usize> {
        loop {
            match self.try_read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable().await?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Sends what the socket takes now from the front of `buf`, advancing
    /// it, without waiting: `Ok` when the socket took all it could (maybe
    /// not all of `buf`), `WouldBlock` when it took nothing.
    ///
    /// Over TLS, encrypted bytes may stay behind after `buf` is empty:
    /// [`TcpStream::write_pending`] says so, and the waiting writes
    /// (`send_some`, `write_all`) send them before they return.
    pub fn try_write(&self, buf: &mut BytesMut) -> io::Result<()> {
        self.try_write_flags(buf, 0)
    }

    /// [`TcpStream::try_write`] for bytes that more will follow at once (a
    /// head before its file body): MSG_MORE holds them back to leave in the
    /// same segment as the body's first bytes, as a corked head does.
    pub fn try_write_more(&self, buf: &mut BytesMut) -> io::Result<()> {
        self.try_write_flags(buf, MSG_MORE)
    }

    fn try_write_flags(&self, buf: &mut BytesMut, flags: libc::c_int) -> io::Result<()> {
        use bytes::Buf;
        if let Some(t) = &self.tls {
            return t.try_write(self.as_raw_fd(), buf);
        }
        while !buf.is_empty() {
            // SAFETY: send reads at most buf.len() initialised bytes.
            let n = unsafe {
                libc::send(
                    self.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | flags,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            buf.advance(n as usize);
        }
        Ok(())
    }

    /// Receives from now on with one multishot receive into this core's
    /// buffer ring, where the worker has them (io_uring with buffer rings;
    /// see [`crate::recv_multi`]); a no-op elsewhere, over TLS (which reads
    /// the socket itself), or once done. Only for a plain client
    /// connection, and only after anything read beneath it by
    /// [`TcpStream::peek_raw`].
    pub fn receive_multishot(&mut self) {
        if self.tls.is_none() && !self.multi.is_on() {
            self.multi = crate::recv_multi::Multi::new(self.as_raw_fd());
        }
    }

    /// Whether sends go through the ring ([`TcpStream::send_ring`]): on a
    /// stream that receives through it, unless `RINGSIDE_URING_SEND=direct`.
    #[inline]
    pub fn ring_sends(&self) -> bool {
        self.multi.is_on() && crate::recv_multi::ring_sends()
    }

    /// Sends what the socket takes now of `buf` with the loop's next
    /// `io_uring_enter`: the count sent, `WouldBlock` when it took nothing.
    /// Only where [`TcpStream::ring_sends`].
    pub async fn send_ring(&self, buf: BytesMut) -> (io::Result<usize>, BytesMut) {
        match &self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.send_nowait(buf).await,
            #[cfg(rt_glommio)]
            Inner::Glommio(_) => (Err(io::ErrorKind::Unsupported.into()), buf),
        }
    }

    /// Reads at least one byte (or EOF) into `buf`'s spare capacity, the
    /// buffer lent to the engine meanwhile: on io_uring one recv, where
    /// `readable` + `try_read` is a poll and a syscall. For a socket in the
    /// middle of an exchange (an upstream response); an idle socket should
    /// wait with [`TcpStream::readable`], which pins no buffer.
    pub async fn read_owned(&mut self, mut buf: BytesMut) -> (io::Result<usize>, BytesMut) {
        make_room(&mut buf);
        if self.tls.is_some() || self.multi.is_on() {
            let r = self.read(&mut buf).await;
            return (r, buf);
        }
        match &mut self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => {
                use monoio::io::AsyncReadRent;
                s.read(buf).await
            }
            #[cfg(rt_glommio)]
            Inner::Glommio(_) => {
                let r = self.read(&mut buf).await;
                (r, buf)
            }
        }
    }

    /// Waits until the socket can take more bytes (monoio engines only;
    /// glommio has no such wait: `Unsupported`).
    pub async fn writable(&self) -> io::Result<()> {
        match &self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.writable(false).await,
            #[cfg(rt_glommio)]
            Inner::Glommio(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// Waits until at least part of `buf` was sent, and advances it past
    /// what was. Takes `&self`, so one task can relay both ways between two
    /// sockets (a tunnel) with each socket read by one side and written by
    /// the other.
    pub async fn send_some(&self, buf: &mut BytesMut) -> io::Result<()> {
        if self.tls.is_some() {
            return self.send_some_tls(buf).await;
        }
        match &self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => loop {
                let before = buf.len();
                match self.try_write(buf) {
                    Ok(()) if buf.len() < before || buf.is_empty() => return Ok(()),
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if buf.len() < before {
                            return Ok(());
                        }
                    }
                    Err(e) => return Err(e),
                }
                s.writable(false).await?;
            },
            #[cfg(rt_glommio)]
            Inner::Glommio(s) => {
                use bytes::Buf;
                // glommio has no writability wait; its write is one. The
                // RefCell is borrowed only inside each poll, never across
                // an await, so the other direction can use the socket too.
                let n = std::future::poll_fn(|cx| {
                    use futures_lite::AsyncWrite;
                    std::pin::Pin::new(&mut *s.stream.borrow_mut()).poll_write(cx, &buf[..])
                })
                .await?;
                if n == 0 && !buf.is_empty() {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                buf.advance(n);
                Ok(())
            }
        }
    }

    /// Writes all of `buf`, handing the buffer back for reuse.
    // On glommio the stream's RefCell stays borrowed across the write; a
    // connection's calls are sequential, so nothing else borrows meanwhile.
    #[allow(clippy::await_holding_refcell_ref)]
    pub async fn write_all(&mut self, mut buf: BytesMut) -> (io::Result<()>, BytesMut) {
        if self.tls.is_some() {
            let r = self.write_all_tls(&mut buf).await;
            return (r, buf);
        }
        match &mut self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => {
                use monoio::io::AsyncWriteRentExt;
                let (r, buf) = s.write_all(buf).await;
                (r.map(|_| ()), buf)
            }
            #[cfg(rt_glommio)]
            Inner::Glommio(s) => {
                use futures_lite::AsyncWriteExt;
                let r = s.stream.borrow_mut().write_all(&buf).await;
                (r, buf)
            }
        }
    }

    /// Half-closes the write side so the peer sees EOF after our last bytes.
    pub fn shutdown_write(&self) -> io::Result<()> {
        if let Some(t) = &self.tls {
            t.close_notify(self.as_raw_fd());
        }
        socket2::SockRef::from(self).shutdown(std::net::Shutdown::Write)
    }

    /// For a pooled idle connection: whether it is still usable, that is the
    /// peer sent nothing (no bytes, no EOF, no error) since. Over TLS the
    /// peer's post-handshake messages (a session ticket, a key update) are
    /// taken in and do not count.
    pub fn idle_usable(&self) -> bool {
        if let Some(t) = &self.tls {
            return t.idle_usable(self.as_raw_fd());
        }
        let mut b = 0u8;
        // SAFETY: a one-byte peek into a local.
        let n = unsafe {
            libc::recv(
                self.as_raw_fd(),
                (&mut b as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
    }

    /// Whether this stream speaks TLS.
    #[inline]
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether the TLS handshake settled on ALPN protocol `proto`.
    pub fn alpn_is(&self, proto: &[u8]) -> bool {
        self.tls.as_ref().is_some_and(|t| t.alpn_is(proto))
    }

    /// Whether the TLS handshake resumed a session (false on a plain
    /// stream).
    pub fn tls_resumed(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.resumed())
    }

    /// The client certificate chain the TLS handshake verified, leaf
    /// first; `None` on a plain stream or where the client sent none.
    pub fn tls_peer_certificates(
        &self,
    ) -> Option<std::cell::Ref<'_, [rustls::pki_types::CertificateDer<'static>]>> {
        self.tls.as_ref()?.peer_certificates()
    }

    /// Whether encrypted bytes still wait to be sent (never on a plain
    /// stream).
    #[inline]
    pub fn write_pending(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.pending())
    }

    /// Starts the server side of TLS on an accepted stream; the handshake
    /// then runs in [`TcpStream::handshake`].
    pub fn start_tls_server(&mut self, cfg: &TlsAcceptor) -> io::Result<()> {
        self.check_tls_engine()?;
        self.tls = Some(Box::new(Session::server(cfg)?));
        Ok(())
    }

    /// Starts the client side of TLS on a connected stream (an HTTPS
    /// upstream), sending `name` as SNI and verifying the server's
    /// certificate against it as `cfg` says; the handshake then runs in
    /// [`TcpStream::handshake`].
    pub fn start_tls_client(
        &mut self,
        cfg: Arc<rustls::ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<()> {
        self.check_tls_engine()?;
        self.tls = Some(Box::new(Session::client(cfg, name)?));
        Ok(())
    }

    fn check_tls_engine(&self) -> io::Result<()> {
        match &self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(_) => Ok(()),
            #[cfg(rt_glommio)]
            Inner::Glommio(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "TLS needs a monoio backend (io-uring or epoll), not glommio",
            )),
        }
    }

    /// Runs the TLS handshake to its end, one flight at a time, waiting on
    /// the socket between flights (so other connections on the core run
    /// meanwhile). Deadlines are the caller's, through its `ConnGuard`.
    pub async fn handshake(&self) -> io::Result<()> {
        let Some(t) = &self.tls else {
            return Ok(());
        };
        loop {
            match t.handshake_step(self.as_raw_fd())? {
                Need::Done => return Ok(()),
                Need::Read => self.wait_readable_raw().await?,
                Need::Write => self.writable().await?,
            }
        }
    }

    /// The socket's own readiness, ignoring what TLS holds decrypted.
    async fn wait_readable_raw(&self) -> io::Result<()> {
        match &self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.readable(false).await,
            #[cfg(rt_glommio)]
            Inner::Glommio(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// `send_some` over TLS: returns once part of `buf` was taken and,
    /// when all of it was, once its encrypted bytes were sent too (a
    /// caller that next waits to read must leave nothing behind).
    async fn send_some_tls(&self, buf: &mut BytesMut) -> io::Result<()> {
        let before = buf.len();
        loop {
            match self.try_write(buf) {
                Ok(()) if buf.is_empty() && !self.write_pending() => return Ok(()),
                Ok(()) if buf.len() < before && !buf.is_empty() => return Ok(()),
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            self.writable().await?;
        }
    }

    async fn write_all_tls(&self, buf: &mut BytesMut) -> io::Result<()> {
        while !buf.is_empty() || self.write_pending() {
            self.send_some_tls(buf).await?;
        }
        Ok(())
    }

    #[cfg(rt_monoio)]
    pub(crate) fn monoio(&mut self) -> Option<&mut monoio::net::TcpStream> {
        match &mut self.inner {
            Inner::Monoio(s) => Some(s),
            #[cfg(rt_glommio)]
            _ => None,
        }
    }
}

impl Drop for TcpStream {
    /// A TLS stream says close_notify before its socket closes, whichever
    /// way the connection ends (RFC 8446 §6.1; without it a client cannot
    /// tell a complete close-delimited response from a truncated one).
    /// Best effort: sent only if the socket takes it now.
    fn drop(&mut self) {
        if let Some(t) = &self.tls {
            t.close_notify(self.as_raw_fd());
        }
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        match &self.inner {
            #[cfg(rt_monoio)]
            Inner::Monoio(s) => s.as_raw_fd(),
            #[cfg(rt_glommio)]
            Inner::Glommio(s) => s.fd,
        }
    }
}

impl std::os::fd::AsFd for TcpStream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        // SAFETY: the fd lives as long as self.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

/// A listening socket owned by one worker.
pub struct TcpListener {
    inner: ListenerInner,
    /// Cancels the accept io_uring holds in the kernel (see
    /// [`TcpListener::accept_until`]); reused, so it costs nothing per
    /// connection.
    #[cfg(feature = "io-uring")]
    cancel: std::cell::RefCell<monoio::io::Canceller>,
}

enum ListenerInner {
    #[cfg(rt_monoio)]
    Monoio(monoio::net::TcpListener),
    #[cfg(rt_glommio)]
    Glommio(glommio::net::TcpListener),
    /// A unix listener, shared by every worker: each waits until it is
    /// readable and takes a connection without waiting, as another
    /// worker may have taken it first (the listener is non-blocking).
    #[cfg(rt_monoio)]
    MonoioUnix(monoio::net::UnixListener),
    /// A unix listener on glommio, whose accept takes any stream socket.
    #[cfg(rt_glommio)]
    GlommioUnix(glommio::net::TcpListener),
}

impl TcpListener {
    /// Takes over a bound, listening std socket; call inside the worker.
    /// A unix listener may come carried as one (see
    /// [`TcpListener::from_unix`]).
    pub fn from_std(std: std::net::TcpListener) -> io::Result<TcpListener> {
        if socket2::SockRef::from(&std).local_addr()?.is_unix() {
            return TcpListener::from_unix(std::os::fd::OwnedFd::from(std).into());
        }
        let inner = on_engine!(
            monoio => {
                if backend::current() != Backend::IoUring {
                    std.set_nonblocking(true)?;
                }
                ListenerInner::Monoio(monoio::net::TcpListener::from_std(std)?)
            },
            glommio => {
                std.set_nonblocking(true)?;
                // SAFETY: the fd comes from a live std listener we own.
                ListenerInner::Glommio(unsafe { glommio::net::TcpListener::from_raw_fd(std.into_raw_fd()) })
            },
        );
        Ok(TcpListener {
            inner,
            #[cfg(feature = "io-uring")]
            cancel: Default::default(),
        })
    }

    /// Accepts a connection, or returns `None` once `stop` is set.
    ///
    /// An accept io_uring holds in the kernel is not withdrawn by dropping
    /// its future: a connection arriving after the drop is still taken off
    /// the queue, and monoio discards the result, so the client's
    /// connection is neither served nor left for the next process that
    /// holds the socket (a binary upgrade shares it). So on io_uring the
    /// accept is cancelled and awaited, and a connection it still returns
    /// is served. epoll's accept is a readiness wait and a nonblocking
    /// `accept`, which drops cleanly. glommio's accept is its own io_uring
    /// operation, which this does not reach: a connection it takes in the
    /// instant of the stop may be lost.
    pub async fn accept_until(
        &self,
        stop: &crate::shutdown::LocalEvent,
    ) -> Option<io::Result<TcpStream>> {
        #[cfg(feature = "io-uring")]
        if let ListenerInner::Monoio(l) = &self.inner {
            if backend::current() == Backend::IoUring {
                let handle = self.cancel.borrow().handle();
                let mut accept = std::pin::pin!(l.cancelable_accept(handle));
                let r = match crate::task::select(stop.wait(), accept.as_mut()).await {
                    crate::task::Either::Right(r) => r,
                    crate::task::Either::Left(()) => {
                        std::mem::take(&mut *self.cancel.borrow_mut()).cancel();
                        match accept.await {
                            Ok(r) => Ok(r),
                            // Cancelled before a connection came.
                            Err(_) => return None,
                        }
                    }
                };
                return Some(r.map(|(s, _)| TcpStream {
                    multi: Default::default(),
                    inner: Inner::Monoio(s),
                    tls: None,
                }));
            }
        }
        match crate::task::select(stop.wait(), self.accept()).await {
            crate::task::Either::Left(()) => None,
            crate::task::Either::Right(r) => Some(r),
        }
    }

    /// Takes over a bound, listening unix socket; call inside the worker.
    /// Every worker may hold the same socket (a unix socket has no
    /// `SO_REUSEPORT` spreading): it is made non-blocking, and each
    /// worker's accepts race for its connections.
    pub fn from_unix(std: std::os::unix::net::UnixListener) -> io::Result<TcpListener> {
        std.set_nonblocking(true)?;
        let inner = on_engine!(
            monoio => ListenerInner::MonoioUnix(monoio::net::UnixListener::from_std(std)?),
            glommio => {
                // SAFETY: the fd comes from a live std listener we own;
                // glommio's accept takes a connection of any family.
                ListenerInner::GlommioUnix(unsafe { glommio::net::TcpListener::from_raw_fd(std.into_raw_fd()) })
            },
        );
        Ok(TcpListener {
            inner,
            #[cfg(feature = "io-uring")]
            cancel: Default::default(),
        })
    }

    pub async fn accept(&self) -> io::Result<TcpStream> {
        match &self.inner {
            #[cfg(rt_monoio)]
            ListenerInner::Monoio(l) => {
                let (s, _) = l.accept().await?;
                Ok(TcpStream {
                    multi: Default::default(),
                    inner: Inner::Monoio(s),
                    tls: None,
                })
            }
            #[cfg(rt_glommio)]
            ListenerInner::Glommio(l) => {
                let s = l.accept().await.map_err(io::Error::from)?;
                Ok(TcpStream {
                    multi: Default::default(),
                    inner: GlommioStream::wrap(s),
                    tls: None,
                })
            }
            #[cfg(rt_monoio)]
            ListenerInner::MonoioUnix(l) => loop {
                // SAFETY: accept4 on our listener, without an address.
                let fd = unsafe {
                    libc::accept4(
                        l.as_raw_fd(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        libc::SOCK_CLOEXEC,
                    )
                };
                if fd >= 0 {
                    // SAFETY: a new socket accept4 gave us.
                    let fd = unsafe {
                        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd)
                    };
                    return TcpStream::from_unix_fd(fd);
                }
                let e = io::Error::last_os_error();
                match e.kind() {
                    // Another worker took it, or nothing came yet.
                    io::ErrorKind::WouldBlock => l.readable(false).await?,
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted => {}
                    _ => return Err(e),
                }
            },
            #[cfg(rt_glommio)]
            ListenerInner::GlommioUnix(l) => {
                let s = l.accept().await.map_err(io::Error::from)?;
                Ok(TcpStream {
                    multi: Default::default(),
                    inner: GlommioStream::wrap(s),
                    tls: None,
                })
            }
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            #[cfg(rt_monoio)]
            ListenerInner::Monoio(l) => l.local_addr(),
            #[cfg(rt_glommio)]
            ListenerInner::Glommio(l) => l.local_addr().map_err(io::Error::from),
            #[allow(unreachable_patterns)]
            _ => Err(no_inet()),
        }
    }
}

/// The error for an IP address asked of a unix socket.
pub(crate) fn no_inet() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "a unix socket has no IP address",
    )
}

/// Binds a listening socket with `SO_REUSEPORT`, so that every worker can
/// hold its own socket on the same port and the kernel spreads connections
/// across them.
pub fn bind_reuseport(addr: SocketAddr, backlog: i32) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.set_cloexec(true)?;
    sock.bind(&addr.into())?;
    sock.listen(backlog)?;
    Ok(sock.into())
}

/// Gives a full read buffer room for at least one more read (4 KiB, the
/// ring's buffer size), as every read path here does before reading into
/// the spare room; says how much room there is.
pub(crate) fn make_room(buf: &mut BytesMut) -> usize {
    if buf.capacity() == buf.len() {
        buf.reserve(4096);
    }
    buf.capacity() - buf.len()
}
