//! Whether a listen address is free for this process, and if not, who holds
//! it.
//!
//! Every worker binds its own socket with `SO_REUSEPORT`, and the kernel
//! lets any process of the same user do the same: a second ringside on a
//! port would start silently and the two would split the connections. So
//! before binding, each address is tried once *without* `SO_REUSEPORT`,
//! which any socket already listening there refuses.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};

/// What a trial bind found.
#[derive(Debug)]
pub enum Probe {
    Free,
    /// Something listens there.
    InUse(Holder),
    /// The bind failed otherwise (no such local address, a port below 1024
    /// without the privilege).
    Refused(io::Error),
}

/// What is known of a socket listening at an address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holder {
    /// The process, when its descriptors could be looked into (another
    /// user's, or a non-dumpable one's as a server that dropped root is,
    /// cannot).
    pub owner: Option<Owner>,
    /// The socket's user, from the kernel's table, which anyone may read.
    pub uid: Option<u32>,
}

impl Holder {
    /// Whether SO_REUSEPORT could share the address with it: the kernel
    /// allows that between sockets of one user only.
    pub fn shareable(&self) -> bool {
        // SAFETY: geteuid has no preconditions.
        self.uid.is_none_or(|u| u == unsafe { libc::geteuid() })
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.owner, self.uid) {
            (Some(o), _) => write!(f, "{o}"),
            (None, Some(uid)) => write!(f, "a process of uid {uid}"),
            (None, None) => f.write_str("another process"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Its `comm`: `ringside`, `nginx`.
    pub name: String,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.name, self.pid)
    }
}

/// Binds `addr` without `SO_REUSEPORT` and lets go at once. Port 0 is
/// always free.
pub fn probe(addr: SocketAddr) -> Probe {
    if addr.port() == 0 {
        return Probe::Free;
    }
    match try_bind(addr) {
        Ok(()) => Probe::Free,
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Probe::InUse(holder(addr)),
        Err(e) => Probe::Refused(e),
    }
}

fn try_bind(addr: SocketAddr) -> io::Result<()> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Connections of an earlier run in TIME_WAIT do not hold the port.
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.bind(&addr.into())
}

/// The socket listening on `addr`'s port at `addr` (or at a wildcard
/// address that covers it: `0.0.0.0`, or `::` for either family), found
/// through /proc. Best effort.
pub fn holder(addr: SocketAddr) -> Holder {
    let mut found: Vec<(u64, u32)> = Vec::new();
    for (table, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        if let Ok(text) = std::fs::read_to_string(table) {
            found.extend(listening_inodes(&text, addr, v6));
        }
    }
    let inodes: Vec<u64> = found.iter().map(|&(i, _)| i).collect();
    Holder {
        owner: owner(&inodes),
        uid: found.first().map(|&(_, uid)| uid),
    }
}

/// The process holding one of the sockets `inodes`.
fn owner(inodes: &[u64]) -> Option<Owner> {
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let held = link
                .to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| inodes.contains(&n));
            if held {
                let name = std::fs::read_to_string(entry.path().join("comm"))
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_default();
                return Some(Owner { pid, name });
            }
        }
    }
    None
}

/// The inodes and users of sockets in LISTEN state (`0A`) on `addr`'s
/// port that cover `addr`, from a /proc/net/tcp table (`/proc/net/tcp6`
/// when `v6`): at `addr` itself or a wildcard of the table's family (a
/// dual-stack `[::]` listener also holds IPv4 ports).
fn listening_inodes(table: &str, addr: SocketAddr, v6: bool) -> Vec<(u64, u32)> {
    let want_port = format!("{:04X}", addr.port());
    let mine = if addr.is_ipv6() == v6 {
        hex_addr(addr)
    } else {
        String::new()
    };
    let any = if v6 {
        hex_addr(SocketAddr::from(([0u16; 8], addr.port())))
    } else {
        hex_addr(SocketAddr::from(([0, 0, 0, 0], addr.port())))
    };
    let wildcard_addr = addr.ip().is_unspecified();
    let mut out = Vec::new();
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || f[3] != "0A" {
            continue;
        }
        let Some((ip, port)) = f[1].split_once(':') else {
            continue;
        };
        let covers = ip == mine || ip == any || (wildcard_addr && addr.is_ipv6() == v6);
        if port == want_port && covers {
            if let (Ok(inode), Ok(uid)) = (f[9].parse(), f[7].parse()) {
                out.push((inode, uid));
            }
        }
    }
    out
}

/// An address as /proc/net/tcp writes it: each 32-bit word in host order.
fn hex_addr(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("{:08X}", u32::from_ne_bytes(a.ip().octets())),
        SocketAddr::V6(a) => a
            .ip()
            .octets()
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernel_table() {
        // Two listeners on port 8080 (0x1F90): 127.0.0.1 and 0.0.0.0, one
        // established connection, and a listener on another port.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0\n\
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0 0 10 0\n\
   2: 0100007F:1F90 0100007F:C000 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0\n\
   3: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0 100 0 0 10 0\n";
        if cfg!(target_endian = "little") {
            let inodes = |addr: &str| -> Vec<u64> {
                let addr: SocketAddr = addr.parse().unwrap();
                listening_inodes(table, addr, false)
                    .into_iter()
                    .map(|(i, _)| i)
                    .collect()
            };
            assert_eq!(inodes("127.0.0.1:8080"), vec![111, 222]);
            assert_eq!(inodes("127.0.0.2:8080"), vec![222]);
            assert_eq!(inodes("0.0.0.0:8080"), vec![111, 222]);
            // A dual-stack [::]:8080 holds IPv4's 8080 too.
            let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 555 1 0 100 0 0 10 0\n";
            let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
            assert_eq!(listening_inodes(v6, lo, true), vec![(555, 1000)]);
        }
    }

    #[test]
    fn a_listener_is_found_with_its_process() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        match probe(addr) {
            Probe::InUse(Holder {
                owner: Some(o),
                uid,
            }) => {
                assert_eq!(o.pid, std::process::id());
                assert_eq!(uid, Some(unsafe { libc::geteuid() }));
            }
            other => panic!("expected in use by this process, got {other:?}"),
        }
        drop(held);
        assert!(matches!(probe(addr), Probe::Free));
    }
}
