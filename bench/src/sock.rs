//! Connecting with ab's socket options: `-B` (bind to a local address
//! before connect) and `-b` (SO_SNDBUF and SO_RCVBUF, set before connect so
//! that the receive window offered in the SYN already follows them).
//!
//! The runtime's own connect offers no hook between socket(2) and
//! connect(2), so with either flag each connect is made here, blocking the
//! core for its duration (one round trip; bounded by `-s` through
//! SO_SNDTIMEO, which Linux applies to connect), and the connected socket
//! is handed to the runtime.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::FromRawFd;
use std::time::Duration;

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid; we fill in one family.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn set_int(fd: libc::c_int, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: setsockopt reads one c_int from the pointer we pass.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A blocking connect to `addr`, bound to `bind` (port 0) and with both
/// buffers set to `window` first; at most `timeout`.
pub fn connect(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    window: Option<u32>,
    timeout: Duration,
) -> io::Result<std::net::TcpStream> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); the descriptor is owned by `stream` below at once.
    let fd = check(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh socket we own; the std stream closes it on drop.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    if let Some(w) = window {
        let w = libc::c_int::try_from(w).unwrap_or(libc::c_int::MAX);
        set_int(fd, libc::SO_SNDBUF, w)?;
        set_int(fd, libc::SO_RCVBUF, w)?;
    }
    if let Some(ip) = bind {
        let (ss, len) = sockaddr(SocketAddr::new(ip, 0));
        // SAFETY: ss holds a valid sockaddr of length len.
        check(unsafe { libc::bind(fd, (&ss as *const libc::sockaddr_storage).cast(), len) })?;
    }
    stream.set_write_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    let (ss, len) = sockaddr(addr);
    // SAFETY: as above.
    let r = unsafe { libc::connect(fd, (&ss as *const libc::sockaddr_storage).cast(), len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        // A connect cut short by SO_SNDTIMEO says EINPROGRESS.
        if e.raw_os_error() == Some(libc::EINPROGRESS) {
            return Err(io::Error::from_raw_os_error(libc::ETIMEDOUT));
        }
        return Err(e);
    }
    stream.set_write_timeout(None)?;
    stream.set_nonblocking(true)?;
    Ok(stream)
}

/// A socket's (send, receive) buffer sizes, as the kernel reports them.
pub fn buffers(s: &std::net::TcpStream) -> io::Result<(usize, usize)> {
    use std::os::fd::AsRawFd;
    let get = |opt| -> io::Result<usize> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most len bytes into v.
        check(unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        })?;
        Ok(v as usize)
    };
    Ok((get(libc::SO_SNDBUF)?, get(libc::SO_RCVBUF)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_and_sizes_before_connect() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let s = connect(
            addr,
            Some("127.0.0.1".parse().unwrap()),
            Some(8192),
            Duration::from_secs(5),
        )
        .unwrap();
        let (_, peer) = l.accept().unwrap();
        assert_eq!(peer, s.local_addr().unwrap());
        // Linux doubles the value asked for (socket(7)).
        assert_eq!(buffers(&s).unwrap(), (16384, 16384));
    }

    #[test]
    fn refused_is_refused() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let e = connect(
            SocketAddr::from(([127, 0, 0, 1], port)),
            None,
            None,
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ECONNREFUSED));
    }
}
