//! A worker's UDP socket as its engine waits on it: readiness only. QUIC
//! reads and writes datagrams with its own `recvmsg`/`sendmsg` (segment
//! offloads ride in their control messages, which the engines' own UDP
//! operations do not carry), so all the engine gives is the wait.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

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
