//! QPACK's static table (RFC 9204 Appendix A): 99 entries, from 0, and
//! for the encoder a lookup by name and value.

use std::sync::OnceLock;

pub const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// The entry at `index`, if there is one.
pub fn get(index: u64) -> Option<(&'static [u8], &'static [u8])> {
    STATIC.get(usize::try_from(index).ok()?).copied()
}

/// The table's indexes sorted by name, then value: a name's entries are
/// not all together in the table (`:status` has two runs), so a binary
/// search over this finds them all at once.
fn by_name() -> &'static [u8; 99] {
    static SORTED: OnceLock<[u8; 99]> = OnceLock::new();
    SORTED.get_or_init(|| {
        let mut s = [0u8; 99];
        for (i, e) in s.iter_mut().enumerate() {
            *e = i as u8;
        }
        s.sort_by_key(|&i| STATIC[i as usize]);
        s
    })
}

/// What the static table holds of a field: the index of the same name
/// and value, and the lowest index of the name (lower indexes encode
/// shorter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Found {
    pub exact: Option<usize>,
    pub name: Option<usize>,
}

pub fn find(name: &[u8], value: &[u8]) -> Found {
    let sorted = by_name();
    let start = sorted.partition_point(|&i| STATIC[i as usize].0 < name);
    let mut found = Found::default();
    for &i in &sorted[start..] {
        let (n, v) = STATIC[i as usize];
        if n != name {
            break;
        }
        let i = i as usize;
        found.name = Some(found.name.map_or(i, |m: usize| m.min(i)));
        if v == value {
            found.exact = Some(i);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_found_at_its_index() {
        for (i, &(n, v)) in STATIC.iter().enumerate() {
            let f = find(n, v);
            assert_eq!(f.exact, Some(i), "{}", String::from_utf8_lossy(n));
            assert!(f.name.unwrap() <= i);
            assert_eq!(STATIC[f.name.unwrap()].0, n);
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(find(b":status", b"500").exact, Some(71));
        assert_eq!(
            find(b":status", b"418"),
            Found {
                exact: None,
                name: Some(24)
            }
        );
        assert_eq!(find(b"content-type", b"text/xml").name, Some(44));
        assert_eq!(find(b"x-frame-options", b"sameorigin").exact, Some(98));
        assert_eq!(find(b"x-unknown", b""), Found::default());
        assert_eq!(find(b"", b""), Found::default());
        assert_eq!(find(b"zzz", b""), Found::default());
        assert_eq!(get(0), Some((&b":authority"[..], &b""[..])));
        assert_eq!(get(98).unwrap().1, b"sameorigin");
        assert_eq!(get(99), None);
        assert_eq!(get(u64::MAX), None);
    }
}
