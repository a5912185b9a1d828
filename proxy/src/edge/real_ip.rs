//! The client's real address, from the field a trusted balancer adds
//! (`[real_ip]`, see `crate::config::real_ip`), set on the exchange once
//! per request so that every later use of [`Exchange::peer`] (the access
//! log, `allow`/`deny`, rate limits, the cache's purge permission,
//! FastCGI's REMOTE_ADDR, hash balancing, a PROXY protocol header sent
//! upstream) sees it. The forwarding headers ringside adds name the hop it
//! was handed the request by instead ([`Exchange::hop_peer`]), as each
//! proxy in a chain appends its own peer.
//!
//! The walk is nginx's `real_ip_recursive`: from the connection's peer,
//! while the address in hand is trusted, take the field's next entry from
//! the right. Without recursion only the rightmost entry is taken. An
//! entry that is not an address ends the walk at the last good one; an
//! untrusted peer's field is never read.

use std::net::{IpAddr, SocketAddr};

use ringside_http::Exchange;
use ringside_runtime::cidr::Cidr;

use crate::config::real_ip::RealIpConfig;

/// Fields of that name past this many in one request: the walk does not
/// start (no balancer splits its list that often, and the lines are
/// kept on the stack).
const MAX_LINES: usize = 16;

pub struct RealIp {
    cfg: RealIpConfig,
}

impl RealIp {
    pub fn new(cfg: RealIpConfig) -> RealIp {
        RealIp { cfg }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        Cidr::any_holds(&self.cfg.from, ip)
    }

    /// Sets the request's address from the field, where its peer is
    /// trusted to give one.
    pub fn apply(&self, ex: &mut Exchange<'_>) {
        let trusted = match ex.hop_peer() {
            Ok(a) => self.trusts(a.ip()),
            // No address: a Unix-socket client.
            Err(_) => self.cfg.unix,
        };
        if !trusted {
            return;
        }
        let mut lines: [&[u8]; MAX_LINES] = [b""; MAX_LINES];
        let mut n = 0;
        for (name, value) in ex.headers() {
            if name.eq_ignore_ascii_case(self.cfg.header.as_bytes()) {
                if n == MAX_LINES {
                    return;
                }
                lines[n] = value;
                n += 1;
            }
        }
        let found = walk(
            lines[..n].iter().rev().copied(),
            |ip| self.trusts(ip),
            self.cfg.recursive,
        );
        if let Some(a) = found {
            ex.set_peer(a);
        }
    }
}

/// The address the walk ends on: `lines` are the field's lines, last
/// first (RFC 9110 §5.3: several lines are one list, in order), and the
/// peer that sent them is trusted already. `None`: no entry was an
/// address.
pub fn walk<'a>(
    lines: impl Iterator<Item = &'a [u8]>,
    trusted: impl Fn(IpAddr) -> bool,
    recursive: bool,
) -> Option<SocketAddr> {
    let mut found = None;
    for line in lines {
        for entry in line.rsplit(|&b| b == b',') {
            let entry = entry.trim_ascii();
            if entry.is_empty() {
                continue;
            }
            let Some(a) = address(entry) else {
                return found;
            };
            found = Some(a);
            if !recursive || !trusted(a.ip()) {
                return found;
            }
        }
    }
    found
}

/// One entry: an address, bare or with a port as nginx takes it
/// (`192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`, `[2001:db8::1]`,
/// `[2001:db8::1]:80`); port 0 where none is given.
fn address(entry: &[u8]) -> Option<SocketAddr> {
    let s = std::str::from_utf8(entry).ok()?;
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, 0));
    }
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Some(a);
    }
    let ip = s
        .strip_prefix('[')?
        .strip_suffix(']')?
        .parse::<IpAddr>()
        .ok()?;
    ip.is_ipv6().then_some(SocketAddr::new(ip, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str], trusted: &[&str], recursive: bool) -> Option<String> {
        let blocks: Vec<Cidr> = trusted
            .iter()
            .flat_map(|s| Cidr::parse(s).unwrap())
            .collect();
        walk(
            lines.iter().rev().map(|l| l.as_bytes()),
            |ip| Cidr::any_holds(&blocks, ip),
            recursive,
        )
        .map(|a| a.ip().to_string())
    }

    #[test]
    fn recursive_walks_past_trusted_hops() {
        let t = ["10.0.0.0/8"];
        let got = |l: &[&str]| run(l, &t, true);
        assert_eq!(
            got(&["203.0.113.9, 10.1.1.1"]).as_deref(),
            Some("203.0.113.9")
        );
        // The first untrusted address from the right, not the leftmost.
        assert_eq!(
            got(&["198.51.100.1, 203.0.113.9, 10.1.1.1, 10.2.2.2"]).as_deref(),
            Some("203.0.113.9")
        );
        // All trusted: the leftmost.
        assert_eq!(got(&["10.3.3.3, 10.1.1.1"]).as_deref(), Some("10.3.3.3"));
        // Several lines are one list.
        assert_eq!(
            got(&["198.51.100.1", "10.9.9.9,, 10.1.1.1 ,"]).as_deref(),
            Some("198.51.100.1")
        );
        assert_eq!(got(&[]), None);
        assert_eq!(got(&[" , "]), None);
    }

    #[test]
    fn without_recursion_the_rightmost_entry() {
        let t = ["10.0.0.0/8"];
        assert_eq!(
            run(&["203.0.113.9, 10.1.1.1"], &t, false).as_deref(),
            Some("10.1.1.1")
        );
        assert_eq!(
            run(&["203.0.113.9"], &t, false).as_deref(),
            Some("203.0.113.9")
        );
    }

    #[test]
    fn a_malformed_entry_stops_at_the_last_good_address() {
        let t = ["10.0.0.0/8"];
        assert_eq!(
            run(&["203.0.113.9, unknown, 10.1.1.1"], &t, true).as_deref(),
            Some("10.1.1.1")
        );
        assert_eq!(run(&["unknown"], &t, true), None);
        assert_eq!(run(&["10.1.1.1 x"], &t, true), None);
        assert_eq!(run(&["203.0.113.9, 10.1.1.1/8"], &t, true), None);
    }

    #[test]
    fn entries_with_ports_and_brackets() {
        let t = ["10.0.0.0/8", "2001:db8::/32"];
        assert_eq!(
            run(&["[2001:db9::7]:443, 2001:db8::1"], &t, true).as_deref(),
            Some("2001:db9::7")
        );
        assert_eq!(
            run(&["[2001:db9::7], 10.0.0.1:8080"], &t, true).as_deref(),
            Some("2001:db9::7")
        );
        assert_eq!(address(b"192.0.2.1:80").map(|a| a.port()), Some(80));
        assert_eq!(address(b"[192.0.2.1]"), None);
        assert_eq!(address(b"192.0.2.256"), None);
    }
}
