//! A request's cache key: scheme, host, normalized path and query (less
//! the parameters the config ignores), and the request headers and
//! cookies the config adds. The store is indexed by its hash; the whole
//! key is kept beside the entry and compared, so two keys that hash alike
//! never answer for each other.

use ringside_http::grammar::trim_ows;
use ringside_http::Exchange;

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
        Key {
            hash: hash(&bytes),
            bytes,
        }
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

/// The store's index of a key: eight bytes a step (a multiply and a
/// rotate, as rustc's FxHash), then a finalizer (MurmurHash3's) so that
/// every bit of the key moves the low bits the store's map uses.
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    let rest = words.remainder();
    last[..rest.len()].copy_from_slice(rest);
    h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::hash;

    #[test]
    fn keys_that_differ_anywhere_hash_apart() {
        let base = b"http\0example.com\0/a/b/c?x=1".to_vec();
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(hash(&base)));
        for i in 0..base.len() {
            let mut k = base.clone();
            k[i] ^= 1;
            assert!(seen.insert(hash(&k)), "byte {i}");
        }
        // Length counts: a key and the same with a NUL added.
        let mut longer = base.clone();
        longer.push(0);
        assert!(seen.insert(hash(&longer)));
    }
}
