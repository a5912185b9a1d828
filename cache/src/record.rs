//! A stored response's head as the disk tier keeps it: everything of a
//! [`Variant`] but its body, in a compact little-endian layout read back
//! with every length checked (a record that does not parse is a miss).

use crate::entry::Variant;
use crate::policy::Meta;
use ringside_http::capture::Fields;

/// The record's own version, first: a layout change reads old records as
/// misses.
const VERSION: u8 = 1;

/// A variant's head, without its body, as bytes.
pub fn encode(v: &Variant) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(VERSION);
    out.extend_from_slice(&v.status.to_le_bytes());
    let m = &v.meta;
    for n in [
        m.request_time,
        m.response_time,
        m.initial_age,
        m.lifetime,
        m.stale_while_revalidate,
        m.stale_if_error,
    ] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.push(u8::from(m.no_stale) | u8::from(m.no_cache) << 1);
    out.extend_from_slice(&v.secondary.to_le_bytes());
    list(&mut out, v.vary.iter().map(|n| &n[..]));
    list(&mut out, v.tags.iter().map(|t| &t[..]));
    out.extend_from_slice(&(v.headers.len() as u32).to_le_bytes());
    for (n, val) in &v.headers {
        bytes(&mut out, n);
        bytes(&mut out, val);
    }
    out
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn list<'a>(out: &mut Vec<u8>, items: impl ExactSizeIterator<Item = &'a [u8]>) {
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for i in items {
        bytes(out, i);
    }
}

/// What [`encode`] wrote, less the body.
pub struct Decoded {
    pub status: u16,
    pub meta: Meta,
    pub secondary: u64,
    pub vary: Vec<Box<[u8]>>,
    pub tags: Vec<Box<[u8]>>,
    pub headers: Fields,
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }
    fn bytes(&mut self) -> Option<Box<[u8]>> {
        let n = self.u32()?;
        self.take(n).map(Box::from)
    }
    fn list(&mut self) -> Option<Vec<Box<[u8]>>> {
        let n = self.u32()?;
        // Each item takes at least its 4-byte length: no count past that.
        if n > self.0.len() / 4 {
            return None;
        }
        (0..n).map(|_| self.bytes()).collect()
    }
}

/// Reads a record back; `None` for anything that is not one whole.
pub fn decode(b: &[u8]) -> Option<Decoded> {
    let mut r = Reader(b);
    if r.take(1)? != [VERSION] {
        return None;
    }
    let status = u16::from_le_bytes(r.take(2)?.try_into().ok()?);
    let mut n = [0u64; 6];
    for slot in &mut n {
        *slot = r.u64()?;
    }
    let flags = r.take(1)?[0];
    let meta = Meta {
        request_time: n[0],
        response_time: n[1],
        initial_age: n[2],
        lifetime: n[3],
        stale_while_revalidate: n[4],
        stale_if_error: n[5],
        no_stale: flags & 1 != 0,
        no_cache: flags & 2 != 0,
    };
    let secondary = r.u64()?;
    let vary = r.list()?;
    let tags = r.list()?;
    let count = r.u32()?;
    if count > r.0.len() / 8 {
        return None;
    }
    let mut headers = Vec::with_capacity(count);
    for _ in 0..count {
        headers.push((r.bytes()?, r.bytes()?));
    }
    r.0.is_empty().then_some(Decoded {
        status,
        meta,
        secondary,
        vary,
        tags,
        headers,
    })
}
