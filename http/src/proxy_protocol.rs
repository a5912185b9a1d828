//! The PROXY protocol (HAProxy's, v1 text and v2 binary): the header an L4
//! load balancer puts before the client's bytes to name the client. On a
//! listener that takes it, every connection must start with one, from a
//! trusted source; the address it names becomes the connection's client
//! address ([`Link::client_addr`]) for everything after. Over TLS the
//! header comes before the handshake, so it is read beneath TLS, taking
//! no byte past it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use bytes::{Buf, BytesMut};
use ringside_runtime::cidr::Cidr;
use ringside_runtime::link::Link;

/// v2's signature.
const V2_SIG: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// v1's longest line, CRLF included (the spec's bound).
const V1_MAX: usize = 107;
/// The longest v2 header taken: the addresses and a few TLVs.
const V2_MAX: usize = 16 + 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// What came is the start of a header.
    Incomplete,
    /// A header of `len` bytes; `client` is `None` for one that names no
    /// IP client (v1 UNKNOWN, v2 LOCAL, UNIX or UNSPEC).
    Done {
        len: usize,
        client: Option<SocketAddr>,
    },
    Invalid(&'static str),
}

/// Parses the header at the start of `b`.
pub fn parse(b: &[u8]) -> Parsed {
    match b.first() {
        None => Parsed::Incomplete,
        Some(b'P') => v1(b),
        Some(b'\r') => v2(b),
        Some(_) => Parsed::Invalid("no PROXY protocol header"),
    }
}

fn v1(b: &[u8]) -> Parsed {
    const START: &[u8] = b"PROXY ";
    let n = b.len().min(START.len());
    if b[..n] != START[..n] {
        return Parsed::Invalid("no PROXY protocol header");
    }
    let Some(end) = b.iter().take(V1_MAX).position(|&c| c == b'\n') else {
        return if b.len() >= V1_MAX {
            Parsed::Invalid("v1 header longer than 107 bytes")
        } else {
            Parsed::Incomplete
        };
    };
    if end == 0 || b[end - 1] != b'\r' {
        return Parsed::Invalid("v1 header not ended by CRLF");
    }
    let len = end + 1;
    let rest = &b[START.len()..end - 1];
    // UNKNOWN: whatever follows is to be ignored, bytes of any kind.
    if rest == b"UNKNOWN" || rest.starts_with(b"UNKNOWN ") {
        return Parsed::Done { len, client: None };
    }
    let Ok(line) = std::str::from_utf8(rest) else {
        return Parsed::Invalid("v1 header not ASCII");
    };
    let f: Vec<&str> = line.split(' ').collect();
    let [proto, src, dst, sport, dport] = f[..] else {
        return Parsed::Invalid("v1 header without its five fields");
    };
    let ip = |s: &str| -> Option<IpAddr> {
        match proto {
            "TCP4" => s.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
            "TCP6" => s.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
            _ => None,
        }
    };
    let port = |s: &str| -> Option<u16> {
        // Decimal digits only, no sign or leading zero (the spec's form).
        if s.is_empty()
            || !s.bytes().all(|c| c.is_ascii_digit())
            || (s.len() > 1 && s.starts_with('0'))
        {
            return None;
        }
        s.parse().ok()
    };
    match (ip(src), ip(dst), port(sport), port(dport)) {
        (Some(src), Some(_), Some(sport), Some(_)) => Parsed::Done {
            len,
            client: Some(SocketAddr::new(src, sport)),
        },
        _ if !matches!(proto, "TCP4" | "TCP6") => {
            Parsed::Invalid("v1 header of an unknown protocol")
        }
        _ => Parsed::Invalid("v1 header with a bad address or port"),
    }
}

fn v2(b: &[u8]) -> Parsed {
    let n = b.len().min(V2_SIG.len());
    if b[..n] != V2_SIG[..n] {
        return Parsed::Invalid("no PROXY protocol header");
    }
    if b.len() < 16 {
        return Parsed::Incomplete;
    }
    if b[12] >> 4 != 2 {
        return Parsed::Invalid("v2 header of another version");
    }
    let local = match b[12] & 0x0f {
        0 => true,
        1 => false,
        _ => return Parsed::Invalid("v2 header with an unknown command"),
    };
    let len = 16 + usize::from(u16::from_be_bytes([b[14], b[15]]));
    if len > V2_MAX {
        return Parsed::Invalid("v2 header longer than 1040 bytes");
    }
    if b.len() < len {
        return Parsed::Incomplete;
    }
    if local {
        // The balancer speaking for itself (a health check): its address
        // block, whatever it holds, is to be ignored.
        return Parsed::Done { len, client: None };
    }
    let a = &b[16..len];
    let client = match b[13] >> 4 {
        // TCP or UDP over IPv4 or IPv6: the source address and port.
        1 if a.len() >= 12 => Some(SocketAddr::new(
            Ipv4Addr::new(a[0], a[1], a[2], a[3]).into(),
            u16::from_be_bytes([a[8], a[9]]),
        )),
        2 if a.len() >= 36 => {
            let ip: [u8; 16] = a[..16].try_into().expect("16 bytes");
            Some(SocketAddr::new(
                Ipv6Addr::from(ip).into(),
                u16::from_be_bytes([a[32], a[33]]),
            ))
        }
        1 | 2 => return Parsed::Invalid("v2 header too short for its addresses"),
        0 | 3 => None,
        _ => return Parsed::Invalid("v2 header of an unknown address family"),
    };
    Parsed::Done { len, client }
}

/// Why a connection was closed before its first request.
pub(crate) type Refused = &'static str;

/// Reads the header of a connection on a listener that takes one from
/// `trusted` sources, within the header timeout, and sets the client
/// address it names. Plain connections read into `rbuf`, where the bytes
/// after the header stay for the protocol; TLS ones beneath TLS, taking
/// only the header.
pub(crate) async fn read(
    link: &Link,
    trusted: &[Cidr],
    rbuf: &mut BytesMut,
) -> Result<(), Refused> {
    let peer = link.stream.peer_addr().map_err(|_| "no peer address")?;
    if !Cidr::any_holds(trusted, peer.ip()) {
        return Err("PROXY protocol header from an untrusted source");
    }
    let deadline = Instant::now() + link.cfg.timeouts.header_read;
    let client = if link.stream.is_tls() {
        beneath_tls(link, deadline).await?
    } else {
        plain(link, deadline, rbuf).await?
    };
    if let Some(c) = client {
        link.set_client_addr(c);
    }
    Ok(())
}

async fn plain(
    link: &Link,
    deadline: Instant,
    rbuf: &mut BytesMut,
) -> Result<Option<SocketAddr>, Refused> {
    loop {
        match parse(rbuf) {
            Parsed::Done { len, client } => {
                rbuf.advance(len);
                return Ok(client);
            }
            Parsed::Invalid(why) => return Err(why),
            Parsed::Incomplete => {}
        }
        match link.stream.try_read(rbuf) {
            Ok(0) => return Err("closed before its PROXY protocol header"),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait(link, deadline).await?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err("read failed"),
        }
    }
}

/// Peeks, and takes only header bytes: all of what came while the header
/// is incomplete (none of it can be past the header), then exactly the
/// rest once its end is seen.
async fn beneath_tls(link: &Link, deadline: Instant) -> Result<Option<SocketAddr>, Refused> {
    let mut head = [0u8; V2_MAX];
    let mut have = 0;
    loop {
        let n = match link.stream.peek_raw(&mut head[have..]) {
            Ok(0) => return Err("closed before its PROXY protocol header"),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait(link, deadline).await?;
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err("read failed"),
        };
        let (take, done) = match parse(&head[..have + n]) {
            Parsed::Done { len, client } => (len - have, Some(client)),
            Parsed::Incomplete => (n, None),
            Parsed::Invalid(why) => return Err(why),
        };
        if !matches!(link.stream.take_raw(&mut head[have..have + take]), Ok(n) if n == take) {
            return Err("read failed");
        }
        have += take;
        if let Some(client) = done {
            return Ok(client);
        }
        wait(link, deadline).await?;
    }
}

async fn wait(link: &Link, deadline: Instant) -> Result<(), Refused> {
    if link.readable_until(deadline).await.is_err() || link.expired() {
        return Err("no PROXY protocol header within the header timeout");
    }
    Ok(())
}

/// The header of a connection made for the proxy's own sake (a health
/// check): it names no client (v1 `UNKNOWN`, v2 LOCAL).
pub fn write_local(out: &mut Vec<u8>, v2: bool) {
    if v2 {
        out.extend_from_slice(V2_SIG);
        out.extend_from_slice(&[0x20, 0x00, 0, 0]);
    } else {
        out.extend_from_slice(b"PROXY UNKNOWN\r\n");
    }
}

/// Writes the header a proxy sends first on its connection to a server
/// (the other side of [`parse`]): `client` is the client's address, `to`
/// the address it connected to. v1 is text (`PROXY TCP4 ...`), v2 binary
/// (PROXY command, TCP over IPv4 or IPv6, no TLVs). Addresses of different
/// families (an IPv4 client on an IPv6 listener is IPv4 as both) name no
/// client: v1 `UNKNOWN`, v2 LOCAL.
pub fn write_header(out: &mut Vec<u8>, v2: bool, client: SocketAddr, to: SocketAddr) {
    let canon = |a: SocketAddr| SocketAddr::new(a.ip().to_canonical(), a.port());
    let (client, to) = (canon(client), canon(to));
    if !v2 {
        let line = match (client.ip(), to.ip()) {
            (IpAddr::V4(c), IpAddr::V4(t)) => {
                format!("PROXY TCP4 {c} {t} {} {}\r\n", client.port(), to.port())
            }
            (IpAddr::V6(c), IpAddr::V6(t)) => {
                format!("PROXY TCP6 {c} {t} {} {}\r\n", client.port(), to.port())
            }
            _ => return write_local(out, false),
        };
        out.extend_from_slice(line.as_bytes());
        return;
    }
    if client.is_ipv4() != to.is_ipv4() {
        return write_local(out, true);
    }
    out.extend_from_slice(V2_SIG);
    let ports = |out: &mut Vec<u8>| {
        out.extend_from_slice(&client.port().to_be_bytes());
        out.extend_from_slice(&to.port().to_be_bytes());
    };
    match (client.ip(), to.ip()) {
        (IpAddr::V4(c), IpAddr::V4(t)) => {
            out.extend_from_slice(&[0x21, 0x11, 0, 12]);
            out.extend_from_slice(&c.octets());
            out.extend_from_slice(&t.octets());
            ports(out);
        }
        (IpAddr::V6(c), IpAddr::V6(t)) => {
            out.extend_from_slice(&[0x21, 0x21, 0, 36]);
            out.extend_from_slice(&c.octets());
            out.extend_from_slice(&t.octets());
            ports(out);
        }
        _ => unreachable!("one family, checked above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(len: usize, client: &str) -> Parsed {
        Parsed::Done {
            len,
            client: Some(client.parse().unwrap()),
        }
    }

    #[test]
    fn v1_names_the_client() {
        let h = b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\nGET / HTTP/1.1\r\n";
        assert_eq!(parse(h), done(42, "203.0.113.7:5555"));
        let h = b"PROXY TCP6 2001:db8::7 ::1 65535 443\r\n";
        assert_eq!(parse(h), done(h.len(), "[2001:db8::7]:65535"));
        let h = b"PROXY UNKNOWN \xff\xfe anything\r\n";
        assert_eq!(
            parse(h),
            Parsed::Done {
                len: h.len(),
                client: None
            }
        );
        assert_eq!(
            parse(b"PROXY UNKNOWN\r\n"),
            Parsed::Done {
                len: 15,
                client: None
            }
        );
        // Every prefix of a header is incomplete, never refused.
        let h = b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n";
        for i in 1..h.len() {
            assert_eq!(parse(&h[..i]), Parsed::Incomplete, "{i}");
        }
    }

    #[test]
    fn v1_refuses_what_is_not_one() {
        for bad in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\n",
            b"PROXY TCP4 203.0.113.7 127.0.0.1 5555\r\n",
            b"PROXY TCP4 203.0.113.7  127.0.0.1 5555 80\r\n",
            b"PROXY TCP4 2001:db8::1 127.0.0.1 5555 80\r\n",
            b"PROXY TCP6 203.0.113.7 ::1 5555 80\r\n",
            b"PROXY TCP4 203.0.113.7 127.0.0.1 65536 80\r\n",
            b"PROXY TCP4 203.0.113.7 127.0.0.1 +55 80\r\n",
            b"PROXY TCP4 203.0.113.7 127.0.0.1 055 80\r\n",
            b"PROXY UDP4 203.0.113.7 127.0.0.1 5555 80\r\n",
            b"PROXY TCP4 256.0.0.1 127.0.0.1 5555 80\r\n",
            b"proxy TCP4 203.0.113.7 127.0.0.1 5555 80\r\n",
        ] {
            assert!(
                matches!(parse(bad), Parsed::Invalid(_)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = [b"PROXY TCP4 ".as_slice(), &[b'1'; 100]].concat();
        assert_eq!(
            parse(&long),
            Parsed::Invalid("v1 header longer than 107 bytes")
        );
    }

    fn v2_header(cmd: u8, fam: u8, addrs: &[u8]) -> Vec<u8> {
        let mut h = V2_SIG.to_vec();
        h.push(0x20 | cmd);
        h.push(fam);
        h.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
        h.extend_from_slice(addrs);
        h
    }

    #[test]
    fn v2_names_the_client() {
        let v4 = [203, 0, 113, 7, 127, 0, 0, 1, 0x15, 0xb3, 0, 80];
        let mut h = v2_header(1, 0x11, &v4);
        h.extend_from_slice(b"GET /");
        assert_eq!(parse(&h), done(28, "203.0.113.7:5555"));
        for i in 1..28 {
            assert_eq!(parse(&h[..i]), Parsed::Incomplete, "{i}");
        }
        let mut v6 = vec![0x20, 0x01, 0x0d, 0xb8];
        v6.extend_from_slice(&[0; 11]);
        v6.push(7);
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0xff, 0xff, 1, 0xbb]);
        assert_eq!(
            parse(&v2_header(1, 0x21, &v6)),
            done(52, "[2001:db8::7]:65535")
        );
        // A TLV after the addresses is skipped with them.
        let mut tlv = v4.to_vec();
        tlv.extend_from_slice(&[0x04, 0, 2, 0, 0]);
        assert_eq!(
            parse(&v2_header(1, 0x11, &tlv)),
            done(33, "203.0.113.7:5555")
        );
        // LOCAL (a health check), UNSPEC and UNIX name no client.
        for (cmd, fam, a) in [
            (0, 0x11, &v4[..]),
            (0, 0x11, &[][..]),
            (0, 0x41, &[][..]),
            (1, 0x00, &[][..]),
            (1, 0x31, &[0; 216][..]),
        ] {
            let h = v2_header(cmd, fam, a);
            assert_eq!(
                parse(&h),
                Parsed::Done {
                    len: h.len(),
                    client: None
                }
            );
        }
    }

    #[test]
    fn v2_refuses_what_is_not_one() {
        let v4 = [203, 0, 113, 7, 127, 0, 0, 1, 0x15, 0xb3, 0, 80];
        let mut bad_sig = v2_header(1, 0x11, &v4);
        bad_sig[5] = b'x';
        let mut v1 = v2_header(1, 0x11, &v4);
        v1[12] = 0x11;
        let mut huge = v2_header(1, 0x11, &v4);
        huge[14..16].copy_from_slice(&2000u16.to_be_bytes());
        for (h, why) in [
            (bad_sig, "no PROXY protocol header"),
            (v1, "v2 header of another version"),
            (v2_header(2, 0x11, &v4), "v2 header with an unknown command"),
            (
                v2_header(1, 0x11, &v4[..8]),
                "v2 header too short for its addresses",
            ),
            (
                v2_header(1, 0x41, &v4),
                "v2 header of an unknown address family",
            ),
            (huge, "v2 header longer than 1040 bytes"),
        ] {
            assert_eq!(parse(&h), Parsed::Invalid(why));
        }
    }

    #[test]
    fn written_headers_parse_back() {
        let v4: SocketAddr = "192.0.2.7:5555".parse().unwrap();
        let to4: SocketAddr = "198.51.100.1:443".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::7]:5555".parse().unwrap();
        let to6: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:192.0.2.7]:5555".parse().unwrap();
        for v2 in [false, true] {
            for (client, to, want) in [
                (v4, to4, Some(v4)),
                (v6, to6, Some(v6)),
                (mapped, to4, Some(v4)),
                (v4, to6, None),
            ] {
                let mut out = Vec::new();
                write_header(&mut out, v2, client, to);
                assert_eq!(
                    parse(&out),
                    Parsed::Done {
                        len: out.len(),
                        client: want
                    },
                    "v2 {v2}: {client} to {to}"
                );
            }
        }
        for v2 in [false, true] {
            let mut out = Vec::new();
            write_local(&mut out, v2);
            assert_eq!(
                parse(&out),
                Parsed::Done {
                    len: out.len(),
                    client: None
                }
            );
        }
        let mut out = Vec::new();
        write_header(&mut out, false, v4, to4);
        assert_eq!(out, b"PROXY TCP4 192.0.2.7 198.51.100.1 5555 443\r\n");
    }
}
