//! A worker's UDP socket as its engine waits on it: readiness only. QUIC
//! reads and writes datagrams with its own `recvmsg`/`sendmsg` (segment
//! offloads ride in their control messages, which the engines' own UDP
//! operations do not carry), so all the engine gives is the wait.

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
