//! The hop-by-hop fields (RFC 9110 §7.6.1), in one table for the request
//! and response forwarders and FastCGI's CGI head: `Connection`,
//! `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`, `Upgrade`, and
//! `Transfer-Encoding`, since framing is regenerated, never passed on.

pub const HOP: [&[u8]; 7] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
];

/// Whether `name` is hop-by-hop (any case). The names a `Connection`
/// field lists are hop-by-hop too; callers check those separately.
pub fn is_hop_by_hop(name: &[u8]) -> bool {
    HOP.iter().any(|h| name.eq_ignore_ascii_case(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_table() {
        #[rustfmt::skip]
        let cases: &[(&str, bool)] = &[
            ("Connection", true), ("keep-alive", true), ("Proxy-Connection", true), ("TE", true),
            ("Trailer", true), ("TRANSFER-ENCODING", true), ("Upgrade", true),
            ("Content-Length", false), ("Content-Type", false), ("Location", false), ("Set-Cookie", false),
            ("Trailers", false), ("Connections", false), ("Host", false),
        ];
        for &(name, want) in cases {
            assert_eq!(is_hop_by_hop(name.as_bytes()), want, "{name}");
        }
    }
}
