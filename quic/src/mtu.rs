//! How large a datagram path MTU discovery may try toward a client.
//!
//! quinn searches up to 1,452 bytes unless told otherwise: safe on the
//! internet, but a client across loopback or a jumbo-frame LAN then gets
//! an 11 KiB response as eight packets, each built, sealed, sent, read and
//! acknowledged, where TCP on the same link sends one segment sized by the
//! interface (its MSS comes from the route's MTU). So for a client whose
//! address is not a public one, the search goes up to what the kernel's
//! route to it allows (`IP_MTU` on a socket connected to it), as TCP's
//! does, but no further than [`LARGEST`]; a public address keeps quinn's 1,452 (or less where the route
//! says less), since an internet path seldom carries more than 1,500 bytes
//! and every size tried above it costs three lost probes. The client still
//! caps it with its `max_udp_payload_size`, and probes that the path drops
//! only stop the search; they are not counted as congestion.
//!
//! `RINGSIDE_QUIC_MTU=N` pins the bound for every client (to measure what
//! the size is worth: `1452` is quinn's own).

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// quinn's bound, kept for public addresses.
pub(crate) const INTERNET: u16 = 1452;
/// The largest datagram searched for, whatever the route: 16 KiB, the
/// size of a TLS record. Larger ones cost more than they save: a 100 MiB
/// download over loopback (bench/scripts/h3_bulk.py, one connection) ran
/// at 965 MiB/s with 16 KiB datagrams and 940 with 32 KiB, but 528 with
/// 48 KiB and 428 with the route's 65,507 bytes, where HTTP/2 over TLS
/// did 537-639; an 11 KiB response is one packet at 16 KiB already.
const LARGEST: u16 = 16_384;
/// A UDP payload's limit in one IPv4 datagram; IPv6's is 65,527 (RFC 9000
/// §18.2's default for `max_udp_payload_size`).
const MAX_V4: u16 = 65_507;
const MAX_V6: u16 = 65_527;
/// QUIC's least datagram size (RFC 9000 §14): a bound under it is no bound.
const MIN: u16 = 1200;

/// The route lookups of one worker: a socket of each family, connected to
/// each new client in turn, made the first time it is needed.
#[derive(Default)]
pub(crate) struct Routes {
    v4: Option<OwnedFd>,
    v6: Option<OwnedFd>,
    pinned: Option<u16>,
}

impl Routes {
    pub(crate) fn new() -> Routes {
        let pinned = std::env::var("RINGSIDE_QUIC_MTU")
            .ok()
            .and_then(|v| v.parse::<u16>().ok())
            .map(|v| v.clamp(MIN, MAX_V6));
        Routes {
            pinned,
            ..Routes::default()
        }
    }

    /// The largest UDP payload the search may try toward `peer`.
    pub(crate) fn bound(&mut self, peer: SocketAddr) -> u16 {
        if let Some(p) = self.pinned {
            return p;
        }
        let ip = peer.ip().to_canonical();
        let route = self.route_payload(SocketAddr::new(ip, peer.port()));
        match (route, is_public(ip)) {
            (Some(r), true) => r.min(INTERNET),
            (Some(r), false) => r.min(LARGEST),
            (None, _) => INTERNET,
        }
    }

    /// The route's MTU toward `peer` less the IP and UDP headers, clamped
    /// to what QUIC allows; None where the kernel will not say.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn route_payload(&mut self, peer: SocketAddr) -> Option<u16> {
        let (slot, family, level, name, headers, max) = match peer {
            SocketAddr::V4(_) => (
                &mut self.v4,
                libc::AF_INET,
                libc::IPPROTO_IP,
                libc::IP_MTU,
                28,
                MAX_V4,
            ),
            SocketAddr::V6(_) => (
                &mut self.v6,
                libc::AF_INET6,
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU,
                48,
                MAX_V6,
            ),
        };
        if slot.is_none() {
            // SAFETY: a new socket; its descriptor is owned from here on.
            let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
            if fd < 0 {
                return None;
            }
            // SAFETY: fd was just made and is owned by nobody else.
            *slot = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let fd = slot.as_ref()?.as_raw_fd();
        let (addr, len) = sockaddr(peer);
        // SAFETY: addr is a sockaddr of len bytes. Connecting a UDP socket
        // sends nothing: it picks the route and remembers the peer.
        if unsafe { libc::connect(fd, (&addr as *const libc::sockaddr_storage).cast(), len) } != 0 {
            return None;
        }
        let mut mtu: libc::c_int = 0;
        let mut size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: an int option read into an int of the given size.
        let r = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                (&mut mtu as *mut libc::c_int).cast(),
                &mut size,
            )
        };
        if r != 0 || mtu <= headers {
            return None;
        }
        let payload = u16::try_from(mtu - headers).unwrap_or(u16::MAX);
        Some(payload.clamp(MIN, max))
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn route_payload(&mut self, _peer: SocketAddr) -> Option<u16> {
        None
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; zeroed is its empty value.
    let mut s: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            let sin = unsafe {
                &mut *(&mut s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>()
            };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above.
            let sin6 = unsafe {
                &mut *(&mut s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (s, len as libc::socklen_t)
}

/// Whether `ip` is reached across the internet, as far as its address
/// tells: not loopback, private (RFC 1918, unique local), shared (RFC
/// 6598) or link-local.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            let shared = a == 100 && (b & 0xc0) == 64;
            !(v4.is_loopback() || v4.is_private() || v4.is_link_local() || shared)
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            let unique_local = first & 0xfe00 == 0xfc00;
            let link_local = first & 0xffc0 == 0xfe80;
            !(v6.is_loopback() || unique_local || link_local)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_are_told_from_local_ones() {
        for local in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.0.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
        ] {
            assert!(!is_public(local.parse().unwrap()), "{local}");
        }
        for public in ["8.8.8.8", "100.128.0.1", "172.32.0.1", "2001:db8::1"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    /// Loopback's route is the lo device's (65,536 bytes unless someone
    /// lowered it): whatever it is, the bound is that less the headers, up
    /// to 16 KiB.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_loopback_client_is_bounded_by_the_route_not_by_quinns_default() {
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut r = Routes::default();
        let route = r.route_payload(peer).expect("a route to loopback");
        assert_eq!(r.bound(peer), route.min(LARGEST));
        // The same address mapped into IPv6 takes the IPv4 route.
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:9".parse().unwrap();
        assert_eq!(r.bound(mapped), route.min(LARGEST));
        assert!(r.v6.is_none(), "a mapped address made an IPv6 lookup");
    }

    #[test]
    fn a_public_client_keeps_quinns_bound_and_a_pin_wins() {
        // A route to a public address may not exist here: either way the
        // bound is at most quinn's.
        let mut r = Routes::default();
        assert!(r.bound("192.0.2.1:443".parse().unwrap()) <= INTERNET);
        let mut pinned = Routes {
            pinned: Some(1300),
            ..Routes::default()
        };
        assert_eq!(pinned.bound("127.0.0.1:9".parse().unwrap()), 1300);
    }
}
