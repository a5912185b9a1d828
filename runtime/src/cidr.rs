//! Address blocks (CIDR), for the lists of addresses a config trusts or
//! refuses: `allow`/`deny`, and the sources a PROXY protocol header is
//! taken from.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address block: the address with its host bits clear, and the prefix
/// length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    /// `10.0.0.0/8`, `2001:db8::/32`, a bare address (the block of one),
    /// or `all` (both families whole).
    pub fn parse(s: &str) -> Result<Vec<Cidr>, String> {
        if s == "all" {
            return Ok(vec![
                Cidr {
                    addr: Ipv4Addr::UNSPECIFIED.into(),
                    len: 0,
                },
                Cidr {
                    addr: Ipv6Addr::UNSPECIFIED.into(),
                    len: 0,
                },
            ]);
        }
        let expected = || format!("expected an address, a CIDR block or \"all\", got {s:?}");
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| expected())?;
        if let (IpAddr::V6(_), IpAddr::V4(v4)) = (addr, addr.to_canonical()) {
            // Clients are judged as the IPv4 address a mapped one is.
            return Err(format!(
                "{s:?} is an IPv4 address mapped into IPv6; write it as {v4}"
            ));
        }
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => max,
            Some(l) => match l.parse::<u8>() {
                Ok(n) if n <= max && !l.starts_with('+') => n,
                _ => return Err(format!("{s:?}: expected a prefix length of 0 to {max}")),
            },
        };
        let block = Cidr {
            addr: masked(addr, len),
            len,
        };
        if block.addr != addr {
            // nginx only warns; a mistyped block is more often a mistake
            // than a wish to write the address twice.
            return Err(format!(
                "{s:?} has bits set past its prefix length; the block is {block}"
            ));
        }
        Ok(vec![block])
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// This machine's own addresses: 127.0.0.0/8 and ::1.
    pub fn loopback() -> Vec<Cidr> {
        vec![
            Cidr {
                addr: Ipv4Addr::new(127, 0, 0, 0).into(),
                len: 8,
            },
            Cidr {
                addr: Ipv6Addr::LOCALHOST.into(),
                len: 128,
            },
        ]
    }

    /// Whether any block of `list` holds `ip` (an IPv4-mapped address is
    /// taken as the IPv4 address it is).
    pub fn any_holds(list: &[Cidr], ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        list.iter().any(|c| c.contains(ip))
    }

    /// Whether `ip` is in the block (an IPv4 block holds no IPv6 address,
    /// mapped ones included: see [`IpAddr::to_canonical`]).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                masked(ip, self.len) == self.addr
            }
            _ => false,
        }
    }
}

fn masked(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_and_refuses_what_is_not_one() {
        assert_eq!(
            Cidr::parse("10.0.0.0/8").unwrap()[0].to_string(),
            "10.0.0.0/8"
        );
        assert_eq!(
            Cidr::parse("10.1.2.3").unwrap()[0].to_string(),
            "10.1.2.3/32"
        );
        assert_eq!(
            Cidr::parse("2001:db8::/32").unwrap()[0].to_string(),
            "2001:db8::/32"
        );
        assert_eq!(Cidr::parse("::1").unwrap()[0].to_string(), "::1/128");
        assert_eq!(Cidr::parse("all").unwrap().len(), 2);
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "::ffff:0:0/96",
            "::ffff:10.0.0.1",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "10.0/8",
            "x",
            "10.0.0.1/8",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad:?}");
        }
        let e = Cidr::parse("10.0.0.1/8").unwrap_err();
        assert!(e.contains("10.0.0.0/8"), "{e}");
    }

    #[test]
    fn holds_what_its_prefix_says() {
        let b = Cidr::parse("10.6.0.0/16").unwrap()[0];
        assert!(b.contains("10.6.255.1".parse().unwrap()));
        assert!(!b.contains("10.7.0.1".parse().unwrap()));
        assert!(!b.contains("::ffff:10.6.0.1".parse().unwrap()));
        let all = Cidr::parse("::/0").unwrap()[0];
        assert!(all.contains("2001:db8::1".parse().unwrap()));
        assert!(!all.contains("10.0.0.1".parse().unwrap()));
    }
}
