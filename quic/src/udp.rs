//! Datagrams in and out with the segment offloads: GRO hands several
//! datagrams of one sender in one `recvmsg` (their common size in a
//! control message), and GSO sends a train of equal datagrams in one
//! `sendmsg`. Both are Linux's; elsewhere one datagram a call.

use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// The largest a GRO read can return: one UDP payload's limit.
pub(crate) const MAX_READ: usize = 64 * 1024;

/// Socket options: GRO on where the kernel has it, the DF bit set so that
/// path MTU discovery probes mean something, and buffers big enough for a
/// window of packets. GRO only if `gro` asks it. Returns whether GRO is on.
pub(crate) fn setup(fd: RawFd, v6: bool, gro: bool) -> bool {
    let set = |level, name, v: libc::c_int| {
        // SAFETY: an int option on a socket we own.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    };
    let _ = set(libc::SOL_SOCKET, libc::SO_RCVBUF, 4 << 20);
    let _ = set(libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        if v6 {
            let _ = set(
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                libc::IPV6_PMTUDISC_PROBE,
            );
        } else {
            let _ = set(
                libc::IPPROTO_IP,
                libc::IP_MTU_DISCOVER,
                libc::IP_PMTUDISC_PROBE,
            );
        }
        // RINGSIDE_QUIC_GRO=off: one datagram a read, to measure what GRO saves.
        if !gro || std::env::var("RINGSIDE_QUIC_GRO").is_ok_and(|v| v == "off") {
            return false;
        }
        set(libc::SOL_UDP, libc::UDP_GRO, 1)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (v6, gro);
        false
    }
}

/// One `recvmsg` into `buf`: the bytes read, the sender, and the size of
/// each datagram in them (all but the last of that size).
pub(crate) fn recv(
    fd: RawFd,
    buf: &mut [MaybeUninit<u8>],
) -> io::Result<(usize, SocketAddr, usize)> {
    let mut name = MaybeUninit::<libc::sockaddr_storage>::zeroed();
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: zeroed msghdr is valid; every pointer set in it outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = name.as_mut_ptr().cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg describes buffers we own.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: the kernel wrote the sender's address (zeroed before).
    let from = sockaddr(unsafe { &name.assume_init() })
        .ok_or_else(|| io::Error::other("a datagram from a non-inet address"))?;
    Ok((n, from, gro_size(&msg).unwrap_or(n).max(1)))
}

fn sockaddr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddrV4::new(ip, u16::from_be(a.sin_port)).into())
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            let port = u16::from_be(a.sin6_port);
            Some(SocketAddrV6::new(ip, port, a.sin6_flowinfo, a.sin6_scope_id).into())
        }
        _ => None,
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
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

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn gro_size(_: &libc::msghdr) -> Option<usize> {
    None
}

/// One `sendmsg` of `data` to `to`, cut by the kernel into datagrams of
/// `segment` bytes (GSO) where given and shorter than `data`.
pub(crate) fn send(
    fd: RawFd,
    to: SocketAddr,
    data: &[u8],
    segment: Option<usize>,
) -> io::Result<()> {
    let addr = socket2::SockAddr::from(to);
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: zeroed msghdr is valid; every pointer set in it outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = addr.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = addr.len();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    let mut control = [0u64; 4];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(seg) = segment.filter(|&s| s < data.len()) {
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as usize;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer holds one u16 message (32 bytes > space).
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = libc::UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg as u16);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = (&mut control, segment);
    // SAFETY: msg describes buffers we own.
    let r = unsafe { libc::sendmsg(fd, &msg, 0) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
