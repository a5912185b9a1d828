//! One UDP socket per worker on one port, and the kernel told which worker
//! owns each QUIC packet.
//!
//! QUIC runs a connection's whole state on one core, so every datagram of a
//! connection must reach the socket of the worker that holds it, whatever
//! the client's address does meanwhile (a NAT rebinding changes the source
//! port, and with it `SO_REUSEPORT`'s own hash; a client may migrate on
//! purpose). The destination connection ID is the one thing every packet
//! of a connection carries and that the server chooses, so a classic BPF
//! program on the group (`SO_ATTACH_REUSEPORT_CBPF`, which needs no
//! CAP_BPF) picks the socket from it: the first byte of the destination
//! connection ID, modulo the number of sockets. A server issues only IDs
//! whose first byte names its own worker ([`cid_first_byte`]). A client's
//! first Initial carries an ID the client chose: its first byte is as good
//! as a hash, and the same for every Initial the client sends again, so a
//! retransmitted Initial reaches the worker that holds the handshake.
//!
//! Where the kernel refuses the program, the group still works with the
//! kernel's hash of the addresses; [`UdpGroup::steered`] says which, so the
//! caller can say so at start and hand misdelivered packets to their owner.

use std::io;
use std::net::{SocketAddr, UdpSocket};

/// Where a long header packet's destination connection ID begins: after
/// the first byte, the 32-bit version and the ID's length byte (RFC 9000
/// §17.2).
const LONG_DCID_AT: u32 = 6;
/// Where a short header packet's begins: after the first byte (RFC 9000
/// §17.3).
const SHORT_DCID_AT: u32 = 1;
/// The header form bit: set in long headers (RFC 9000 §17.2).
const LONG_FORM: u32 = 0x80;

/// The sockets of one group, in the kernel's order: a packet the program
/// steers to index `i` is read from `sockets[i]`.
pub struct UdpGroup {
    pub sockets: Vec<UdpSocket>,
    /// Whether the BPF program is attached; if not, the kernel spreads by
    /// its hash of the addresses and a packet may reach another worker.
    pub steered: bool,
}

/// Binds `n` non-blocking UDP sockets to `addr` with `SO_REUSEPORT` (a port
/// of 0: the first socket's port for all) and attaches the steering
/// program. `n` is at most 256: the worker is read from one byte.
pub fn bind_udp_group(addr: SocketAddr, n: usize) -> io::Result<UdpGroup> {
    if n == 0 || n > 256 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a UDP group has 1 to 256 sockets, not {n}"),
        ));
    }
    let mut sockets = Vec::with_capacity(n);
    let mut at = addr;
    for _ in 0..n {
        let sock = bind_one(at)?;
        at = sock.local_addr()?;
        sockets.push(sock);
    }
    // The program belongs to the group: set on one socket, it steers for
    // all of them, by their order of binding.
    // RINGSIDE_QUIC_STEERING=off leaves the program out, as a kernel that
    // refuses it would: for the tests of the hand-over between workers.
    let off = std::env::var("RINGSIDE_QUIC_STEERING").is_ok_and(|v| v == "off");
    let steered = !off && attach_steering(&sockets[0], n as u32).is_ok();
    Ok(UdpGroup { sockets, steered })
}

fn bind_one(addr: SocketAddr) -> io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    sock.set_reuse_port(true)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.set_cloexec(true)?;
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    Ok(sock.into())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn attach_steering(_: &UdpSocket, _: u32) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// The classic BPF program: A = the destination connection ID's first
/// byte, returned modulo `n`. The kernel runs it on the UDP payload (the
/// header already pulled); a packet too short to hold the byte ends the
/// program with 0, the first socket, which answers it as any stray packet.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn steering_program(n: u32) -> [libc::sock_filter; 7] {
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    use libc::{
        BPF_A, BPF_ABS, BPF_ALU, BPF_B, BPF_JA, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_MOD, BPF_RET,
    };
    [
        op(BPF_LD | BPF_B | BPF_ABS, 0, 0, 0),
        // Long form: on to the next instruction; short: skip two.
        op(BPF_JMP | BPF_JSET | BPF_K, 0, 2, LONG_FORM),
        op(BPF_LD | BPF_B | BPF_ABS, 0, 0, LONG_DCID_AT),
        op(BPF_JMP | BPF_JA, 0, 0, 1),
        op(BPF_LD | BPF_B | BPF_ABS, 0, 0, SHORT_DCID_AT),
        op(BPF_ALU | BPF_MOD | BPF_K, 0, 0, n),
        op(BPF_RET | BPF_A, 0, 0, 0),
    ]
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn attach_steering(sock: &UdpSocket, n: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut prog = steering_program(n);
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: fprog points at `prog`, which outlives the call; the kernel
    // copies the program.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The first byte of a connection ID that worker `worker` of `n` issues:
/// `random`'s block of `n` values, at the place the program maps to
/// `worker`. Every other byte of the ID stays the caller's (random) choice.
///
/// The group's order is the order of binding, and stays so only while
/// none of its sockets closes (the kernel moves the last into the gap) and
/// no other process joins the port: a reload or an upgrade that rebuilds
/// the group must bind a new one whole.
pub fn cid_first_byte(worker: usize, n: usize, random: u8) -> u8 {
    debug_assert!(worker < n && n <= 256);
    let r = random as usize;
    // Where 256 is no multiple of n the last block of values is cut short:
    // there, the largest byte of the same residue.
    (r - r % n + worker).min(255 - (255 - worker) % n) as u8
}

/// The worker of `n` that the program sends a packet with this destination
/// connection ID to.
pub fn cid_worker(cid: &[u8], n: usize) -> usize {
    cid.first().map_or(0, |&b| b as usize % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_ids_map_back_to_their_worker() {
        for n in 1..=256 {
            for worker in 0..n {
                for random in [0u8, 1, 7, 100, 128, 200, 254, 255] {
                    let b = cid_first_byte(worker, n, random);
                    assert_eq!(
                        b as usize % n,
                        worker,
                        "n {n} worker {worker} random {random}"
                    );
                }
            }
        }
    }

    #[test]
    fn issued_ids_keep_their_randomness() {
        // With 2 workers, half of the byte's values serve each.
        let seen: std::collections::HashSet<u8> =
            (0..=255u8).map(|r| cid_first_byte(1, 2, r)).collect();
        assert_eq!(seen.len(), 128);
    }

    #[test]
    fn group_size_is_bounded() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(bind_udp_group(any, 0).is_err());
        assert!(bind_udp_group(any, 257).is_err());
    }
}
