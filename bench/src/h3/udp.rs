//! One UDP socket per QUIC connection, connected to the server.
//!
//! One socket each, not one per core, so that every connection has its
//! own 4-tuple: a thread-per-core server that spreads connections by
//! SO_REUSEPORT hashes on it, and a shared client port would put a core's
//! connections all on one of its workers. Connected, so that the kernel
//! drops strangers' datagrams and an ICMP port-unreachable comes back as
//! ECONNREFUSED (ab's errno 111 for a server that is not there).
//!
//! Sends use sendmsg(2) with UDP_SEGMENT (GSO) when quinn hands over
//! several datagrams in one buffer; a kernel that refuses it (before 4.18,
//! or a device without checksum offload: EIO) turns GSO off for the core
//! and the buffer goes out one datagram a send.
//!
//! Receives ask for UDP_GRO, as quinn, quic-go and msquic clients do: a
//! server's GSO send then reaches us over loopback as one buffer, not cut
//! into datagrams by the kernel on the server's side of the send, so a
//! benchmark charges the server what a GRO-capable client would cost it.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Socket buffers asked for: a burst of responses for every stream in
/// flight fits in them (the kernel caps the request at rmem_max).
const SOCK_BUF: libc::c_int = 4 << 20;

/// How many datagrams quinn may put in one GSO send (the kernel's limit
/// is 64).
pub const GSO_SEGMENTS: usize = 32;

pub struct Udp {
    sock: UdpSocket,
}

/// What became of a send.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    Done,
    /// The socket buffer is full: try again when it is writable.
    WouldBlock,
}

fn setsockopt(fd: i32, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
    // SAFETY: a c_int option value, its size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Udp {
    /// A nonblocking socket connected to `to`, bound to `bind` (ab's `-B`)
    /// if given, its buffers `window` bytes (ab's `-b`) or [`SOCK_BUF`].
    pub fn connect(
        to: SocketAddr,
        bind: Option<std::net::IpAddr>,
        window: Option<u32>,
    ) -> io::Result<Udp> {
        let local: SocketAddr = match (bind, to) {
            (Some(ip), _) => SocketAddr::new(ip, 0),
            (None, SocketAddr::V4(_)) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
            (None, SocketAddr::V6(_)) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let sock = UdpSocket::bind(local)?;
        let fd = sock.as_raw_fd();
        let size = window.map_or(SOCK_BUF, |w| w.min(i32::MAX as u32) as libc::c_int);
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, size)?;
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, size)?;
        // Don't fragment: quinn's path MTU discovery relies on it.
        let _ = match to {
            SocketAddr::V4(_) => setsockopt(
                fd,
                libc::IPPROTO_IP,
                libc::IP_MTU_DISCOVER,
                libc::IP_PMTUDISC_PROBE,
            ),
            SocketAddr::V6(_) => setsockopt(
                fd,
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                libc::IP_PMTUDISC_PROBE,
            ),
        };
        // A kernel before 5.0 has no UDP_GRO: datagrams then come one a read.
        let _ = setsockopt(fd, libc::SOL_UDP, libc::UDP_GRO, 1);
        sock.connect(to)?;
        sock.set_nonblocking(true)?;
        Ok(Udp { sock })
    }

    pub fn fd(&self) -> i32 {
        self.sock.as_raw_fd()
    }

    /// Receives into `buf` one datagram, or with GRO several of one size:
    /// the bytes read and the size of each datagram in them (all but the
    /// last of that size); None when there is none now.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, usize)>> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = [0u64; 4];
        // SAFETY: msghdr is plain data; zeroed is its empty value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at buffers we own for the call's duration.
        let n = unsafe { libc::recvmsg(self.fd(), &mut msg, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        let n = n as usize;
        Ok(Some((n, gro_size(&msg).unwrap_or(n).max(1))))
    }

    /// Sends `buf`, `segment`-byte datagrams with GSO when `segment` is
    /// given and `gso` still on (cleared here if the kernel refuses it).
    pub fn send(&self, buf: &[u8], segment: Option<usize>, gso: &mut bool) -> io::Result<Sent> {
        match segment {
            Some(seg) if seg < buf.len() => {
                if *gso {
                    match self.send_gso(buf, seg) {
                        Err(e) if gso_refused(&e) => *gso = false,
                        r => return r,
                    }
                }
                // One at a time. A send that blocks halfway loses the rest,
                // which QUIC's loss recovery sends again.
                for d in buf.chunks(seg) {
                    if self.send_one(d)? == Sent::WouldBlock {
                        return Ok(Sent::WouldBlock);
                    }
                }
                Ok(Sent::Done)
            }
            _ => self.send_one(buf),
        }
    }

    fn send_one(&self, d: &[u8]) -> io::Result<Sent> {
        match self.sock.send(d) {
            Ok(_) => Ok(Sent::Done),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Sent::WouldBlock),
            Err(e) => Err(e),
        }
    }

    fn send_gso(&self, buf: &[u8], seg: usize) -> io::Result<Sent> {
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // Room for one cmsg of a u16, aligned as cmsghdr wants.
        let mut space = [0u64; 4];
        // SAFETY: msghdr is plain data; zeroed is its empty value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        // SAFETY: CMSG_* compute sizes and positions within `space`, which
        // is larger than CMSG_SPACE(2); the u16 is written unaligned.
        unsafe {
            msg.msg_controllen = libc::CMSG_SPACE(2) as _;
            let cm = libc::CMSG_FIRSTHDR(&msg);
            (*cm).cmsg_level = libc::SOL_UDP;
            (*cm).cmsg_type = libc::UDP_SEGMENT;
            (*cm).cmsg_len = libc::CMSG_LEN(2) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cm).cast::<u16>(), seg as u16);
        }
        // SAFETY: msg points at live buffers for the call's duration.
        let r = unsafe { libc::sendmsg(self.fd(), &msg, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(Sent::WouldBlock);
            }
            return Err(e);
        }
        Ok(Sent::Done)
    }
}

/// The datagram size of a GRO receive, from its control message.
fn gro_size(msg: &libc::msghdr) -> Option<usize> {
    // SAFETY: walking the control messages the kernel wrote into msg.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                return Some(v as usize);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// The errors a kernel or device without UDP GSO answers with.
fn gso_refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gso_send_arrives_as_separate_datagrams() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let udp = Udp::connect(server.local_addr().unwrap(), None, None).unwrap();
        let buf: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        let mut gso = true;
        assert_eq!(udp.send(&buf, Some(1000), &mut gso).unwrap(), Sent::Done);
        let mut got = Vec::new();
        let mut d = [0u8; 2000];
        // The server socket has no GRO: the kernel cuts the send for it.
        for _ in 0..3 {
            let n = server.recv(&mut d).unwrap();
            got.push(n);
        }
        assert_eq!(got, [1000, 1000, 500], "gso still on: {gso}");
        let mut none = [0u8; 16];
        assert_eq!(udp.recv(&mut none).unwrap(), None);
    }

    #[test]
    fn a_gro_receive_splits_back_into_the_datagrams_sent() {
        let far = UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp = Udp::connect(far.local_addr().unwrap(), None, None).unwrap();
        far.connect(udp.sock.local_addr().unwrap()).unwrap();
        let far = Udp { sock: far };
        let buf: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        let mut gso = true;
        assert_eq!(far.send(&buf, Some(1000), &mut gso).unwrap(), Sent::Done);
        // One buffer of three (GRO) or three reads of one: either way the
        // datagrams come back as they were sent.
        let mut got = Vec::new();
        let mut d = vec![0u8; 65_536];
        while got.iter().map(Vec::len).sum::<usize>() < buf.len() {
            let Some((n, stride)) = udp.recv(&mut d).unwrap() else {
                let mut p = libc::pollfd {
                    fd: udp.fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one pollfd, ours, for the call's duration.
                assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1, "nothing came");
                continue;
            };
            got.extend(d[..n].chunks(stride).map(<[u8]>::to_vec));
        }
        let sizes: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1000, 1000, 500], "gso still on: {gso}");
        assert_eq!(got.concat(), buf);
    }
}
