//! TLS on a socket, with rustls, for client connections (a TLS listener) and
//! upstream connections (an HTTPS backend).
//!
//! The session lives inside [`crate::net::TcpStream`], so everything that
//! reads or writes a stream (the connection driver, the proxy's relays,
//! tunnels, the upstream pool) works unchanged over TLS. It keeps the
//! stream's readiness-first shape: records are read with a non-blocking
//! `recv` only when the socket is readable, decrypted into rustls's own
//! buffer, and copied out into the caller's pooled buffer; writes encrypt
//! into rustls's send buffer (bounded, 64 KiB) and go out with a
//! non-blocking `send`. Nothing here blocks the core: every step that
//! would wait returns `WouldBlock`, and the stream waits through the engine.
//!
//! Handshakes run the same way, one flight at a time, inside the
//! connection's own task, so a slow or stalled client holds only its own
//! task, and the crypto of one handshake (tens of microseconds with an
//! ECDSA key) is all another connection on the core ever waits behind.
//!
//! # What is not here
//! - **kTLS.** With kernel TLS the kernel would encrypt and splice/sendfile
//!   would stay zero-copy. The kernels ringside is tested on are built
//!   without `CONFIG_TLS`, so that path could not be tested and is left
//!   out: a body sent over TLS is read into user space, encrypted and
//!   written (see `fs::send_file`, `splice::supported_between`).
//! - **glommio.** Its streams have no writability wait, which the write
//!   side needs; TLS listeners and upstreams run on the monoio engines
//!   (io-uring, epoll), and a glommio worker refuses them at start.

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::os::fd::RawFd;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
pub use rustls;

/// A listener's TLS settings, shared by every worker: certificates, SNI,
/// ALPN and the session ticket keys. Equal when it is the same value.
#[derive(Clone, Debug)]
pub struct TlsAcceptor(pub Arc<rustls::ServerConfig>);

impl PartialEq for TlsAcceptor {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for TlsAcceptor {}

/// Largest plaintext rustls holds for sending before the socket takes it.
const SEND_BUFFER: usize = 64 * 1024;

/// What a handshake step waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    Read,
    Write,
    Done,
}

pub(crate) struct Session {
    conn: RefCell<rustls::Connection>,
    /// The peer closed the TCP stream (with or without close_notify).
    eof: Cell<bool>,
}

/// The socket as rustls sees it: non-blocking recv and send.
struct Sock(RawFd);

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: recv writes at most buf.len() bytes into buf.
        let n = unsafe {
            libc::recv(
                self.0,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: send reads at most buf.len() bytes from buf.
        let n = unsafe {
            libc::send(
                self.0,
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// rustls hands its queued records over as one slice each: one
    /// sendmsg for all of them, where the default would send one record
    /// (16 KiB at most) per system call.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with iovec; sendmsg only reads them.
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = bufs.len().min(libc::UIO_MAXIOV as usize) as _;
        // SAFETY: msg points at bufs, alive for the call.
        let n = unsafe { libc::sendmsg(self.0, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl Session {
    pub fn server(cfg: &TlsAcceptor) -> io::Result<Session> {
        let conn = rustls::ServerConnection::new(cfg.0.clone()).map_err(tls_error)?;
        Ok(Session::new(conn.into()))
    }

    pub fn client(
        cfg: Arc<rustls::ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<Session> {
        let conn = rustls::ClientConnection::new(cfg, name).map_err(tls_error)?;
        Ok(Session::new(conn.into()))
    }

    fn new(mut conn: rustls::Connection) -> Session {
        conn.set_buffer_limit(Some(SEND_BUFFER));
        Session {
            conn: RefCell::new(conn),
            eof: Cell::new(false),
        }
    }

    /// Moves the handshake on as far as it goes without waiting.
    pub fn handshake_step(&self, fd: RawFd) -> io::Result<Need> {
        let mut c = self.conn.borrow_mut();
        loop {
            while c.wants_write() {
                match c.write_tls(&mut Sock(fd)) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Need::Write),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if !c.is_handshaking() {
                return Ok(Need::Done);
            }
            match c.read_tls(&mut Sock(fd)) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "peer closed during the TLS handshake",
                    ))
                }
                Ok(_) => {
                    if let Err(e) = c.process_new_packets() {
                        // The alert rustls queued tells the peer why.
                        let _ = c.write_tls(&mut Sock(fd));
                        return Err(tls_error(e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Need::Read),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a read would return at once: decrypted bytes are waiting, or
    /// the peer closed.
    pub fn buffered(&self) -> bool {
        if self.eof.get() {
            return true;
        }
        match self.conn.borrow_mut().process_new_packets() {
            Ok(s) => s.plaintext_bytes_to_read() > 0 || s.peer_has_closed(),
            Err(_) => true,
        }
    }

    /// Reads decrypted bytes into `buf`'s spare room (grown by 4 KiB when
    /// full), reading records from the socket while none are decrypted.
    /// `WouldBlock` when the socket has nothing more; `Ok(0)` at the end.
    pub fn try_read(&self, fd: RawFd, buf: &mut BytesMut) -> io::Result<usize> {
        let mut c = self.conn.borrow_mut();
        loop {
            let state = match c.process_new_packets() {
                Ok(s) => s,
                Err(e) => {
                    let _ = c.write_tls(&mut Sock(fd));
                    return Err(tls_error(e));
                }
            };
            let avail = state.plaintext_bytes_to_read();
            if avail > 0 {
                crate::net::make_room(buf);
                let take = avail.min(buf.capacity() - buf.len());
                let start = buf.len();
                buf.resize(start + take, 0);
                let n = match c.reader().read(&mut buf[start..]) {
                    Ok(n) => n,
                    Err(e) => {
                        buf.truncate(start);
                        return Err(e);
                    }
                };
                buf.truncate(start + n);
                return Ok(n);
            }
            if state.peer_has_closed() || self.eof.get() {
                return Ok(0);
            }
            match c.read_tls(&mut Sock(fd)) {
                Ok(0) => self.eof.set(true),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Encrypts from the front of `buf` and sends, without waiting, as
    /// much as the socket takes; advances `buf` past what was encrypted.
    /// `WouldBlock` when nothing moved. Encrypted bytes may stay behind
    /// (see [`Session::pending`]) even when `buf` is empty.
    pub fn try_write(&self, fd: RawFd, buf: &mut BytesMut) -> io::Result<()> {
        let mut c = self.conn.borrow_mut();
        let mut moved = false;
        loop {
            while c.wants_write() {
                match c.write_tls(&mut Sock(fd)) {
                    Ok(_) => moved = true,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        return if moved {
                            Ok(())
                        } else {
                            Err(io::ErrorKind::WouldBlock.into())
                        };
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if buf.is_empty() {
                return Ok(());
            }
            let n = c.writer().write(&buf[..])?;
            buf.advance(n);
            moved = true;
            if n == 0 {
                // The send buffer is full; the loop above drains it.
                continue;
            }
        }
    }

    /// For an idle connection: takes in what the peer sent meanwhile and
    /// says whether the connection is still usable. Post-handshake messages
    /// (session tickets, key updates) are fine; data, an alert, close_notify
    /// or EOF are not.
    pub fn idle_usable(&self, fd: RawFd) -> bool {
        let mut c = self.conn.borrow_mut();
        loop {
            match c.process_new_packets() {
                Ok(s) if s.plaintext_bytes_to_read() == 0 && !s.peer_has_closed() => {}
                _ => return false,
            }
            if self.eof.get() {
                return false;
            }
            match c.read_tls(&mut Sock(fd)) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Whether encrypted bytes wait to be sent.
    pub fn pending(&self) -> bool {
        self.conn.borrow().wants_write()
    }

    /// Queues close_notify and sends what the socket takes now.
    pub fn close_notify(&self, fd: RawFd) {
        let mut c = self.conn.borrow_mut();
        c.send_close_notify();
        while c.wants_write() {
            if c.write_tls(&mut Sock(fd)).is_err() {
                break;
            }
        }
    }

    /// Whether ALPN settled on `proto` (no copy made).
    pub fn alpn_is(&self, proto: &[u8]) -> bool {
        self.conn.borrow().alpn_protocol() == Some(proto)
    }

    /// The certificates a client presented and the listener's verifier
    /// accepted, leaf first (or, on an upstream connection, the server's);
    /// rustls keeps them from the handshake (or the resumed session), so
    /// asking costs a borrow and nothing is copied.
    pub fn peer_certificates(
        &self,
    ) -> Option<std::cell::Ref<'_, [rustls::pki_types::CertificateDer<'static>]>> {
        std::cell::Ref::filter_map(self.conn.borrow(), |c| c.peer_certificates()).ok()
    }

    /// Whether the handshake resumed a session (a ticket or session id)
    /// rather than running in full.
    pub fn resumed(&self) -> bool {
        let kind = match &*self.conn.borrow() {
            rustls::Connection::Server(s) => s.handshake_kind(),
            rustls::Connection::Client(c) => c.handshake_kind(),
        };
        kind == Some(rustls::HandshakeKind::Resumed)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use super::*;

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    /// A server and a client session over a socket pair, handshake done.
    fn pair() -> (Session, UnixStream, Session, UnixStream) {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let chain = vec![ck.cert.der().clone()];
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
        let server_cfg = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain.clone(), key)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(chain[0].clone()).unwrap();
        let client_cfg = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let (a, b) = UnixStream::pair().unwrap();
        let server = Session::server(&TlsAcceptor(Arc::new(server_cfg))).unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let client = Session::client(Arc::new(client_cfg), name).unwrap();
        // Each step does what it can without waiting; alternate to the end.
        for _ in 0..20 {
            let s = server.handshake_step(a.as_raw_fd()).unwrap();
            let c = client.handshake_step(b.as_raw_fd()).unwrap();
            if s == Need::Done && c == Need::Done {
                return (server, a, client, b);
            }
        }
        panic!("handshake did not finish");
    }

    #[test]
    fn idle_connection_survives_post_handshake_messages_only() {
        let (server, a, client, b) = pair();
        // The session tickets the server sent after its handshake.
        assert!(client.idle_usable(b.as_raw_fd()));
        // A key update is no reason to drop a pooled connection...
        server.conn.borrow_mut().refresh_traffic_keys().unwrap();
        server
            .try_write(a.as_raw_fd(), &mut BytesMut::new())
            .unwrap();
        assert!(client.idle_usable(b.as_raw_fd()));
        // ...stray data is.
        let mut data = BytesMut::from(&b"HTTP/1.1 200 OK\r\n"[..]);
        server.try_write(a.as_raw_fd(), &mut data).unwrap();
        assert!(!client.idle_usable(b.as_raw_fd()));
    }

    #[test]
    fn idle_connection_closed_by_peer_is_not_usable() {
        let (server, a, client, b) = pair();
        assert!(client.idle_usable(b.as_raw_fd()));
        server.close_notify(a.as_raw_fd());
        assert!(!client.idle_usable(b.as_raw_fd()));
        // And stays so once the socket is gone too.
        drop(a);
        assert!(!client.idle_usable(b.as_raw_fd()));
    }

    #[test]
    fn bodies_cross_in_both_directions_whole() {
        let (server, a, client, b) = pair();
        let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = BytesMut::from(&body[..]);
        let mut got = BytesMut::new();
        // The sender's buffer is bounded: send, read, repeat.
        while !out.is_empty() || server.pending() || got.len() < body.len() {
            match server.try_write(a.as_raw_fd(), &mut out) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
            match client.try_read(b.as_raw_fd(), &mut got) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(got[..] == body[..]);
    }
}

/// No stateless tickets: rustls then issues TLS 1.3 tickets from the
/// config's session store, each taken when used (stateful resumption).
/// Listeners that need that (client certificates, 0-RTT) install it.
#[derive(Debug)]
pub struct StatefulTickets;

impl rustls::server::ProducesTickets for StatefulTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}
