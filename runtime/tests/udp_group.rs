//! The UDP group's steering, through the kernel: QUIC packets reach the
//! socket their destination connection ID names, whatever address and port
//! they come from.
#![cfg(any(target_os = "linux", target_os = "android"))]

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use ringside_runtime::udp_group::{bind_udp_group, cid_first_byte, cid_worker, UdpGroup};

/// A long header packet (an Initial's first bytes) with this destination
/// connection ID.
fn long_header(dcid: &[u8]) -> Vec<u8> {
    let mut p = vec![0xc0, 0, 0, 0, 1, dcid.len() as u8];
    p.extend_from_slice(dcid);
    p.extend_from_slice(&[8, 1, 2, 3, 4, 5, 6, 7, 8]);
    p.resize(1200, 0);
    p
}

/// A short header packet with this destination connection ID.
fn short_header(dcid: &[u8]) -> Vec<u8> {
    let mut p = vec![0x40];
    p.extend_from_slice(dcid);
    p.resize(60, 0xaa);
    p
}

/// The index of the socket that `packet`, sent from `from`, arrives on.
fn arrives_on(group: &UdpGroup, from: &UdpSocket, packet: &[u8]) -> usize {
    let to = group.sockets[0].local_addr().unwrap();
    from.send_to(packet, to).unwrap();
    let mut fds: Vec<libc::pollfd> = group
        .sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: fds is a live array of pollfd for the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 10_000) };
    assert!(n > 0, "the packet reached no socket in 10 s");
    let i = fds
        .iter()
        .position(|f| f.revents & libc::POLLIN != 0)
        .unwrap();
    let mut buf = [0u8; 2048];
    let (len, _) = group.sockets[i].recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..len], packet, "a whole datagram, unchanged");
    i
}

fn client() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

#[test]
fn packets_reach_the_worker_their_connection_id_names() {
    let n = 3;
    let group = bind_udp_group("127.0.0.1:0".parse().unwrap(), n).unwrap();
    assert!(group.steered, "the kernel refused the steering program");
    let port = group.sockets[0].local_addr().unwrap().port();
    assert!(group
        .sockets
        .iter()
        .all(|s| s.local_addr().unwrap().port() == port));
    let c = client();
    for worker in 0..n {
        for random in [0u8, 77, 200, 255] {
            let mut cid = [random; 8];
            cid[0] = cid_first_byte(worker, n, random);
            assert_eq!(cid_worker(&cid, n), worker);
            assert_eq!(arrives_on(&group, &c, &short_header(&cid)), worker);
            assert_eq!(arrives_on(&group, &c, &long_header(&cid)), worker);
        }
    }
}

/// A NAT rebinding, or any change of the client's port, does not move a
/// connection: the kernel's own hash would spread these ports across the
/// sockets.
#[test]
fn a_new_client_address_keeps_the_connection_on_its_worker() {
    let n = 4;
    let group = bind_udp_group("127.0.0.1:0".parse().unwrap(), n).unwrap();
    assert!(group.steered);
    let mut cid = [9u8; 8];
    cid[0] = cid_first_byte(2, n, 123);
    for _ in 0..16 {
        let c = client();
        assert_eq!(arrives_on(&group, &c, &short_header(&cid)), 2);
    }
}

/// A client's Initial carries an ID the client chose: every copy of it
/// (a retransmission, from any port) reaches the same worker.
#[test]
fn a_clients_initials_all_reach_one_worker() {
    let n = 2;
    let group = bind_udp_group("127.0.0.1:0".parse().unwrap(), n).unwrap();
    assert!(group.steered);
    for first in [0x11u8, 0x80, 0xff] {
        let cid = [first, 1, 2, 3, 4, 5, 6, 7];
        let want = cid_worker(&cid, n);
        for _ in 0..4 {
            assert_eq!(arrives_on(&group, &client(), &long_header(&cid)), want);
        }
    }
}

/// A datagram too short to hold an ID goes to the first socket, where it
/// is answered (or dropped) like any stray packet.
#[test]
fn a_runt_goes_to_the_first_socket() {
    let group = bind_udp_group("127.0.0.1:0".parse().unwrap(), 3).unwrap();
    assert!(group.steered);
    assert_eq!(arrives_on(&group, &client(), &[0xc0, 0, 0]), 0);
    assert_eq!(arrives_on(&group, &client(), &[0x40]), 0);
}

#[test]
fn an_ipv6_group_is_steered_too() {
    let any: SocketAddr = "[::1]:0".parse().unwrap();
    let Ok(group) = bind_udp_group(any, 2) else {
        panic!("no IPv6 loopback to bind")
    };
    assert!(group.steered);
    let c = UdpSocket::bind("[::1]:0").unwrap();
    let mut cid = [5u8; 8];
    cid[0] = cid_first_byte(1, 2, 40);
    assert_eq!(arrives_on(&group, &c, &short_header(&cid)), 1);
}
