//! Field lines this core encoded lately, kept encoded. With no dynamic
//! table every response spells out its fields (a static-table lookup and a
//! Huffman code each), and most of them repeat from one response to the
//! next (`server`, `content-type`, this second's `date`, a file's `etag`):
//! measured, encoding a static file's head was 18% of the server's CPU
//! per HTTP/3 request before this cache (perf, 26-byte file, -c100 with
//! 10 streams each). A direct-mapped table of 256 lines per core: a
//! lookup is one hash of the field and one comparison; a credential is
//! never kept (the encoder says which lines may be, and is asked only on
//! a miss: a kept line is never a credential).

use std::cell::RefCell;

use bytes::{BufMut, BytesMut};

const SLOTS: usize = 256;
/// Longer fields are encoded each time: rarely repeated, and they would
/// make the table's memory unbounded in practice.
const MAX_FIELD: usize = 256;

struct Line {
    /// The name, a zero byte, the value.
    key: Box<[u8]>,
    encoded: Box<[u8]>,
}

thread_local! {
    static LINES: RefCell<Vec<Option<Line>>> = const { RefCell::new(Vec::new()) };
}

fn hash(name: &[u8], value: &[u8]) -> usize {
    // Eight bytes a step, multiply and rotate (as FxHash): a field is tens
    // of bytes, and a byte at a time cost more than the encoding saved.
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = (name.len() as u64) << 32 | value.len() as u64;
    for part in [name, value] {
        let mut words = part.chunks_exact(8);
        for w in &mut words {
            let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        // The tail byte by byte: a copy of a short tail would be a memcpy
        // call, two a field.
        let mut last = 0u64;
        for (i, &b) in words.remainder().iter().enumerate() {
            last |= u64::from(b) << (8 * i);
        }
        h = (h.rotate_left(5) ^ last).wrapping_mul(K);
    }
    (h >> 56) as usize % SLOTS
}

fn same(key: &[u8], name: &[u8], value: &[u8]) -> bool {
    key.len() == name.len() + 1 + value.len()
        && key[..name.len()] == *name
        && key[name.len()] == 0
        && key[name.len() + 1..] == *value
}

/// Appends the encoded line of `name: value`, from the cache or made by
/// `encode`, which says whether the line may be kept (`encode` must give
/// the same bytes for the same field, nothing at all for one it leaves
/// out).
pub(crate) fn put(
    name: &[u8],
    value: &[u8],
    dst: &mut BytesMut,
    encode: impl FnOnce(&mut BytesMut) -> bool,
) {
    if name.len() + value.len() > MAX_FIELD {
        encode(dst);
        return;
    }
    let slot = hash(name, value);
    LINES.with(|lines| {
        let mut lines = lines.borrow_mut();
        if lines.is_empty() {
            lines.resize_with(SLOTS, || None);
        }
        if let Some(line) = &lines[slot] {
            if same(&line.key, name, value) {
                dst.put_slice(&line.encoded);
                return;
            }
        }
        let start = dst.len();
        if !encode(dst) {
            return;
        }
        let mut key = Vec::with_capacity(name.len() + 1 + value.len());
        key.extend_from_slice(name);
        key.push(0);
        key.extend_from_slice(value);
        lines[slot] = Some(Line {
            key: key.into(),
            encoded: dst[start..].into(),
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_line_is_the_line_encoded() {
        let mut calls = 0;
        let mut out = BytesMut::new();
        for _ in 0..3 {
            put(b"server", b"ringside", &mut out, |d| {
                calls += 1;
                d.put_slice(b"ENC");
                true
            });
        }
        assert_eq!(calls, 1);
        assert_eq!(&out[..], b"ENCENCENC");
        // Another value of the same name is its own line.
        let mut other = BytesMut::new();
        put(b"server", b"other", &mut other, |d| {
            d.put_slice(b"X");
            true
        });
        // A line its encoder says not to keep is encoded every time.
        let mut secret = 0;
        for _ in 0..2 {
            put(b"cookie", b"s=1", &mut other, |d| {
                secret += 1;
                d.put_slice(b"C");
                false
            });
        }
        assert_eq!(secret, 2);
        assert_eq!(&other[..], b"XCC");
        // A name and value split elsewhere are not the same line.
        assert!(!same(b"ab\0c", b"a", b"bc"));
        assert!(same(b"ab\0c", b"ab", b"c"));
    }
}
