//! `Vary` (RFC 9111 §4.1): a stored response answers only requests whose
//! fields named by its Vary match those of the request that got it. Each
//! stored variant keeps the names and a hash of the values it was stored
//! for (its secondary key); a request matches when the same names hash the
//! same over its own values.

use ringside_http::grammar::{list_elements, trim_ows};

/// Whether Vary holds `*`: such a response never answers another request.
pub fn is_star<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) -> bool {
    names_in(headers).any(|n| n == b"*")
}

fn names_in<'h>(
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
) -> impl Iterator<Item = &'h [u8]> {
    headers
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"vary"))
        .flat_map(|(_, v)| list_elements(v))
}

/// The field names a response varies on, lower-cased, sorted, without
/// repeats: the form a variant keeps.
pub fn names<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) -> Vec<Box<[u8]>> {
    let mut v: Vec<Box<[u8]>> = names_in(headers)
        .map(|n| n.to_ascii_lowercase().into_boxed_slice())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The secondary key of a request over `names` (from [`names`]). A field
/// given on several lines counts as their values joined; whitespace
/// around list members does not count. `Accept-Encoding` counts only as
/// the codings this server serves (what it would choose among), so the
/// many ways browsers write it share one variant.
pub fn secondary<'h>(
    names: &[Box<[u8]>],
    request: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) -> u64 {
    let mut h = Fnv::default();
    for name in names {
        h.write(name);
        h.write(b":");
        if &name[..] == b"accept-encoding" {
            h.write(&[accepted_codings(request.clone())]);
            continue;
        }
        for (_, v) in request
            .clone()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            for e in list_elements(v) {
                h.write(trim_ows(e));
                h.write(b",");
            }
        }
        h.write(b"\n");
    }
    h.0
}

/// A bit per coding the server can serve that the request accepts
/// (q above 0), identity apart.
fn accepted_codings<'h>(request: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone) -> u8 {
    use ringside_http::semantics::negotiation::{choose, Coding};
    let value: Vec<u8> = request
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"accept-encoding"))
        .flat_map(|(_, v)| v.iter().copied().chain(*b","))
        .collect();
    let mut bits = 0;
    for (i, c) in Coding::ALL.into_iter().enumerate() {
        if choose(Some(&value), &[c]) == Some(c) {
            bits |= 1 << i;
        }
    }
    bits
}

/// FNV-1a: keys are short, and a collision only costs a variant missed
/// (the full key is compared elsewhere).
#[derive(Clone, Copy)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
