//! A worker's UDP socket as its engine gives it. On io_uring, datagrams
//! arrive through one multishot RECVMSG into a ring of buffers
//! ([`UdpSocket::ring`]), with no system call of the reader's. Elsewhere
//! (epoll, or a kernel without buffer rings) the engine gives only the
//! readiness wait, and QUIC reads with its own `recvmsg` (GRO rides in a
//! control message, which the engines' own UDP operations do not carry).
//! QUIC always sends with its own `sendmsg`, for GSO's control message.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::doorbell::Bell;

/// Set when this process serves no HTTP/3 whatever its config says (a
/// binary upgrade with several workers: see `worker::adopt`).
static UNSERVED: AtomicBool = AtomicBool::new(false);

/// This process serves no HTTP/3 (nor offers it) from now on.
pub fn set_unserved() {
    UNSERVED.store(true, Ordering::Relaxed);
}

/// Whether HTTP/3 may be served and offered at all.
pub fn served() -> bool {
    !UNSERVED.load(Ordering::Relaxed)
}

pub struct UdpSocket {
    #[cfg(rt_monoio)]
    inner: monoio::net::udp::UdpSocket,
    fd: RawFd,
}

impl UdpSocket {
    /// Takes a bound, non-blocking socket onto the current worker's engine.
    /// glommio has no readiness wait for a socket it did not open: there it
    /// is refused, and the caller says so at start.
    pub fn from_std(s: std::net::UdpSocket) -> io::Result<UdpSocket> {
        s.set_nonblocking(true)?;
        let fd = s.as_raw_fd();
        if !crate::backend::current().is_monoio() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "UDP (HTTP/3) runs on the io-uring and epoll backends, not glommio",
            ));
        }
        #[cfg(rt_monoio)]
        {
            let inner = monoio::net::udp::UdpSocket::from_std(s)?;
            Ok(UdpSocket { inner, fd })
        }
        #[cfg(not(rt_monoio))]
        {
            let _ = (s, fd);
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "UDP (HTTP/3) needs a monoio backend in the build",
            ))
        }
    }

    /// Waits until a datagram can be read. Strict on the readiness driver:
    /// our own recv's EAGAIN never clears its cached bit.
    pub async fn readable(&self) -> io::Result<()> {
        #[cfg(rt_monoio)]
        return self.inner.readable(false).await;
        #[cfg(not(rt_monoio))]
        unreachable!("refused in from_std")
    }

    /// Waits until the socket's send buffer has room.
    pub async fn writable(&self) -> io::Result<()> {
        #[cfg(rt_monoio)]
        return self.inner.writable(false).await;
        #[cfg(not(rt_monoio))]
        unreachable!("refused in from_std")
    }
}

/// A socket's multishot RECVMSG (io_uring only).
pub struct DatagramRing {
    #[cfg(feature = "io-uring")]
    inner: monoio::multishot_msg::RecvMsgMulti,
}

/// Buffers in a worker's datagram ring, and their size: one datagram of
/// up to 2,004 bytes each (QUIC's are at most 1,452 here), 1 MiB a worker.
const RING_ENTRIES: u16 = 512;
#[cfg(feature = "io-uring")]
const RING_BUFFER: u32 = 2048;

impl UdpSocket {
    /// The socket's datagram ring where the worker runs io_uring and the
    /// kernel has buffer rings; the error says why not. Each datagram takes
    /// a buffer of its own, so the socket must not coalesce them (no UDP
    /// GRO). `RINGSIDE_QUIC_RING=off` reads the plain way (to measure what
    /// the ring saves); `=N` (a power of two) makes a ring of N buffers
    /// (tests run a tiny one dry).
    pub fn ring(&self) -> io::Result<DatagramRing> {
        let entries = match std::env::var("RINGSIDE_QUIC_RING") {
            Ok(v) if v == "off" => return Err(io::Error::other("off (RINGSIDE_QUIC_RING=off)")),
            Ok(v) => match v.parse::<u16>() {
                Ok(n) if n.is_power_of_two() => n,
                _ => {
                    tracing::warn!(value = %v, "RINGSIDE_QUIC_RING: expected off or a power of two; using the default");
                    RING_ENTRIES
                }
            },
            Err(_) => RING_ENTRIES,
        };
        #[cfg(feature = "io-uring")]
        {
            monoio::multishot_msg::enable(monoio::multishot::Config {
                entries,
                size: RING_BUFFER,
            });
            let inner = monoio::multishot_msg::RecvMsgMulti::new(self.fd)?;
            Ok(DatagramRing { inner })
        }
        #[cfg(not(feature = "io-uring"))]
        {
            let _ = entries;
            Err(io::Error::new(io::ErrorKind::Unsupported, "not io_uring"))
        }
    }
}

impl DatagramRing {
    /// Hands each queued datagram to `f` with its sender, at most `max`;
    /// how many completions were taken. An error the receive ended with is
    /// returned (the caller goes on).
    pub fn take(&self, max: usize, mut f: impl FnMut(&[u8], SocketAddr)) -> io::Result<usize> {
        #[cfg(feature = "io-uring")]
        {
            use monoio::multishot_msg::Next;
            let mut n = 0;
            while n < max {
                let got = self.inner.next(|data, name| {
                    if let Some(from) = sockaddr(name) {
                        f(data, from);
                    }
                })?;
                match got {
                    Next::Empty => break,
                    Next::Taken => n += 1,
                }
            }
            Ok(n)
        }
        #[cfg(not(feature = "io-uring"))]
        {
            let _ = (max, &mut f);
            Ok(0)
        }
    }

    /// Waits for datagrams through the ring, arming it if it is not;
    /// false when the caller must read the socket the plain way until it
    /// would block first (the ring ran dry under the receive, which ended).
    pub async fn ready(&self) -> bool {
        #[cfg(feature = "io-uring")]
        {
            if self.inner.take_starved() {
                return false;
            }
            self.inner.arm();
            std::future::poll_fn(|cx| self.inner.poll_ready(cx)).await;
            true
        }
        #[cfg(not(feature = "io-uring"))]
        false
    }
}

/// A socket's sends through the ring (io_uring only): a fixed set of
/// buffers, each in flight from its submission to its completion, sent
/// with the loop's one `io_uring_enter`.
pub struct DatagramSender {
    #[cfg(feature = "io-uring")]
    inner: monoio::send_msg::SendMsgRing,
}

impl UdpSocket {
    /// Sends through the ring, at most `slots` at once of up to `capacity`
    /// bytes each, where the worker runs io_uring, unless
    /// `RINGSIDE_QUIC_SEND=direct` (each train by its own `sendmsg`, to
    /// measure what the ring saves); the error says why not.
    pub fn sender(&self, slots: usize, capacity: usize) -> io::Result<DatagramSender> {
        if std::env::var("RINGSIDE_QUIC_SEND").is_ok_and(|v| v == "direct") {
            return Err(io::Error::other("off (RINGSIDE_QUIC_SEND=direct)"));
        }
        #[cfg(feature = "io-uring")]
        {
            let inner = monoio::send_msg::SendMsgRing::new(self.fd, slots, capacity)?;
            Ok(DatagramSender { inner })
        }
        #[cfg(not(feature = "io-uring"))]
        {
            let _ = (slots, capacity);
            Err(io::Error::new(io::ErrorKind::Unsupported, "not io_uring"))
        }
    }
}

impl DatagramSender {
    /// A free buffer (cleared) and the error its last send ended with, if
    /// any; `None` when every buffer is in flight.
    pub fn free(&mut self) -> Option<(usize, Option<io::Error>)> {
        #[cfg(feature = "io-uring")]
        return self.inner.free().map(|(i, e)| {
            self.inner.buf(i).clear();
            (i, e)
        });
        #[cfg(not(feature = "io-uring"))]
        None
    }

    /// Buffer `i`, to fill.
    pub fn buf(&mut self, i: usize) -> &mut Vec<u8> {
        #[cfg(feature = "io-uring")]
        return self.inner.buf(i);
        #[cfg(not(feature = "io-uring"))]
        unreachable!("no buffers without io_uring ({i})")
    }

    /// Sends buffer `i` to `to`, cut into datagrams of `segment` bytes
    /// (GSO) where given; false if it could not be submitted (send it the
    /// plain way).
    pub fn submit(&mut self, i: usize, to: SocketAddr, segment: Option<usize>) -> bool {
        #[cfg(feature = "io-uring")]
        {
            let mut name = [0u8; 28];
            let len = encode_sockaddr(to, &mut name);
            let segment = segment.and_then(|s| u16::try_from(s).ok());
            self.inner.submit(i, &name[..len], segment)
        }
        #[cfg(not(feature = "io-uring"))]
        {
            let _ = (i, to, segment);
            false
        }
    }
}

/// `to` as a `sockaddr_in` or `sockaddr_in6`, written into `out`; its length.
#[cfg(feature = "io-uring")]
fn encode_sockaddr(to: SocketAddr, out: &mut [u8; 28]) -> usize {
    match to {
        SocketAddr::V4(a) => {
            out[..2].copy_from_slice(&(libc::AF_INET as libc::sa_family_t).to_ne_bytes());
            out[2..4].copy_from_slice(&a.port().to_be_bytes());
            out[4..8].copy_from_slice(&a.ip().octets());
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            out[..2].copy_from_slice(&(libc::AF_INET6 as libc::sa_family_t).to_ne_bytes());
            out[2..4].copy_from_slice(&a.port().to_be_bytes());
            out[4..8].copy_from_slice(&a.flowinfo().to_ne_bytes());
            out[8..24].copy_from_slice(&a.ip().octets());
            out[24..28].copy_from_slice(&a.scope_id().to_ne_bytes());
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    }
}

/// A `sockaddr_in` or `sockaddr_in6` as the kernel wrote it.
#[cfg(feature = "io-uring")]
fn sockaddr(b: &[u8]) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    let family = libc::sa_family_t::from_ne_bytes(b.get(..2)?.try_into().ok()?);
    match family as libc::c_int {
        libc::AF_INET if b.len() >= std::mem::size_of::<libc::sockaddr_in>() => {
            let port = u16::from_be_bytes([b[2], b[3]]);
            let ip = Ipv4Addr::new(b[4], b[5], b[6], b[7]);
            Some(SocketAddrV4::new(ip, port).into())
        }
        libc::AF_INET6 if b.len() >= std::mem::size_of::<libc::sockaddr_in6>() => {
            let port = u16::from_be_bytes([b[2], b[3]]);
            // As the plain path reads it (std does too): the same client
            // must get the same address whichever way its datagram came.
            let flow = u32::from_ne_bytes(b[4..8].try_into().ok()?);
            let ip: [u8; 16] = b[8..24].try_into().ok()?;
            let scope = u32::from_ne_bytes(b[24..28].try_into().ok()?);
            Some(SocketAddrV6::new(Ipv6Addr::from(ip), port, flow, scope).into())
        }
        _ => None,
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

/// Datagrams one worker of a group hands to another: those that reached
/// its socket but belong to a connection the other holds (the kernel's
/// steering absent, or a group rebuilt). Off the request path as long as
/// the steering works; a lock and a bell ring per datagram when it does
/// not, which beats dropping the datagram (its connection stalls until a
/// retransmission happens to land right) or answering it (a stateless
/// reset would kill the connection).
pub struct Handoff {
    inboxes: Box<[Inbox]>,
}

struct Inbox {
    queue: Mutex<Vec<(Box<[u8]>, SocketAddr)>>,
    bell: OnceLock<Arc<Bell>>,
}

/// Datagrams waiting for one worker at most; more are dropped (the network
/// may drop them too).
const INBOX_MAX: usize = 4096;

impl Handoff {
    pub fn new(workers: usize) -> Arc<Handoff> {
        let inboxes = (0..workers)
            .map(|_| Inbox {
                queue: Mutex::new(Vec::new()),
                bell: OnceLock::new(),
            })
            .collect();
        Arc::new(Handoff { inboxes })
    }

    /// Makes `worker`'s bell the one rung for its datagrams; on its thread,
    /// inside its runtime (see `doorbell::here`).
    pub fn register(&self, worker: usize) -> io::Result<()> {
        let bell = crate::doorbell::here()?;
        let _ = self.inboxes[worker].bell.set(bell);
        Ok(())
    }

    /// Hands `datagram` from `from` to `worker`; false if it cannot take it.
    pub fn send(&self, worker: usize, datagram: &[u8], from: SocketAddr) -> bool {
        let Some(inbox) = self.inboxes.get(worker) else {
            return false;
        };
        let Some(bell) = inbox.bell.get() else {
            return false;
        };
        {
            let mut q = inbox.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() >= INBOX_MAX {
                return false;
            }
            q.push((datagram.into(), from));
        }
        bell.ring();
        true
    }

    /// What was handed to `worker` so far.
    pub fn take(&self, worker: usize) -> Vec<(Box<[u8]>, SocketAddr)> {
        let mut q = self.inboxes[worker]
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *q)
    }
}
