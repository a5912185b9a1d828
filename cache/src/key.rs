//! A request's cache key: scheme, host, normalized path and query (less
//! the parameters the config ignores), and the request headers and
//! cookies the config adds. The store is indexed by its hash; the whole
//! key is kept beside the entry and compared, so two keys that hash alike
//! never answer for each other.

use ringside_http::grammar::trim_ows;
use ringside_http::Exchange;

use crate::policy::vary::Fnv;
use crate::Settings;

pub struct Key {
    pub bytes: Vec<u8>,
    pub hash: u64,
}

impl Key {
    pub fn of(ex: &Exchange<'_>, s: &Settings) -> Key {
        let mut k = Vec::with_capacity(64);
        k.extend_from_slice(if ex.is_tls() { b"https" } else { b"http" });
        k.push(0);
        let host = ex.host().unwrap_or_default();
        k.extend(host.iter().map(u8::to_ascii_lowercase));
        k.push(0);
        k.extend_from_slice(ex.path());
        if let Some(q) = ex.query() {
            k.push(b'?');
            let mut first = true;
            for pair in q.split(|&b| b == b'&') {
                let name = pair.split(|&b| b == b'=').next().unwrap_or_default();
                if s.ignore_query.iter().any(|i| i.as_bytes() == name) {
                    continue;
                }
                if !first {
                    k.push(b'&');
                }
                first = false;
                k.extend_from_slice(pair);
            }
        }
        for h in &s.key_headers {
            k.push(0);
            k.extend_from_slice(ex.header(h).unwrap_or_default());
        }
        for c in &s.key_cookies {
            k.push(0);
            k.extend_from_slice(cookie(ex, c).unwrap_or_default());
        }
        Key::from_bytes(k)
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Key {
        let mut h = Fnv::default();
        h.write(&bytes);
        Key { hash: h.0, bytes }
    }

    /// The key of another target on the same scheme and host (a
    /// `Location` that an unsafe method invalidates, §4.4), when `url` is
    /// on this key's host; ignored parameters and added parts aside.
    pub fn sibling(&self, url: &[u8]) -> Option<Key> {
        let mut parts = self.bytes.splitn(3, |&b| b == 0);
        let (scheme, host) = (parts.next()?, parts.next()?);
        let path = if url.starts_with(b"/") {
            url
        } else {
            let rest = url.strip_prefix(scheme)?.strip_prefix(b"://")?;
            let slash = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
            if !rest[..slash].eq_ignore_ascii_case(host) {
                return None;
            }
            &rest[slash..]
        };
        let mut k = Vec::new();
        k.extend_from_slice(scheme);
        k.push(0);
        k.extend_from_slice(host);
        k.push(0);
        k.extend_from_slice(path);
        Some(Key::from_bytes(k))
    }

    /// Whether this key's path starts with `prefix` (a purge by prefix).
    pub fn path_starts_with(key: &[u8], prefix: &[u8]) -> bool {
        key.splitn(3, |&b| b == 0)
            .nth(2)
            .is_some_and(|p| p.starts_with(prefix))
    }
}

fn cookie<'a>(ex: &'a Exchange<'_>, name: &str) -> Option<&'a [u8]> {
    ex.headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"cookie"))
        .flat_map(|(_, v)| v.split(|&b| b == b';'))
        .find_map(|pair| {
            let pair = trim_ows(pair);
            let eq = pair.iter().position(|&b| b == b'=')?;
            (&pair[..eq] == name.as_bytes()).then(|| &pair[eq + 1..])
        })
}
