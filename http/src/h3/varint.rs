//! QUIC variable-length integers (RFC 9000 §16): the two high bits of the
//! first byte give the length (1, 2, 4 or 8 bytes), the rest is the value,
//! big-endian. HTTP/3 frames, settings and stream types are all made of
//! them.

use bytes::{BufMut, BytesMut};

/// The largest value a varint holds: 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// Bytes `v` takes encoded (the shortest form; §16 allows longer ones and
/// decoding takes them, but nothing gains from sending them).
pub fn len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` in its shortest form.
///
/// # Panics
///
/// Where `v` is over [`MAX`]: every value HTTP/3 sends is a length, an id
/// or a code well below it, so a larger one is a bug of the caller.
pub fn put(dst: &mut BytesMut, v: u64) {
    assert!(v <= MAX, "varint {v} over 2^62-1");
    match len(v) {
        1 => dst.put_u8(v as u8),
        2 => dst.put_u16(0x4000 | v as u16),
        4 => dst.put_u32(0x8000_0000 | v as u32),
        _ => dst.put_u64(0xc000_0000_0000_0000 | v),
    }
}

/// Reads the varint at the start of `src`: its value and the bytes it
/// took, or `None` when `src` ends first. Every byte string of the
/// length the first byte announces is a valid varint, so there is no
/// other failure.
#[inline]
pub fn decode(src: &[u8]) -> Option<(u64, usize)> {
    let first = *src.first()?;
    let n = 1usize << (first >> 6);
    let bytes = src.get(..n)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 Appendix A.1's examples, plus the edges of each length.
    const CASES: &[(&str, u64)] = &[
        ("c2197c5eff14e88c", 151_288_809_941_952_652),
        ("9d7f3e7d", 494_878_333),
        ("7bbd", 15_293),
        ("25", 37),
        ("4025", 37),
        ("00", 0),
        ("3f", 63),
        ("4040", 64),
        ("7fff", 16_383),
        ("80004000", 16_384),
        ("bfffffff", 1_073_741_823),
        ("c000000040000000", 1_073_741_824),
        ("ffffffffffffffff", MAX),
    ];

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rfc_9000_examples_decode() {
        for &(h, v) in CASES {
            let b = hex(h);
            assert_eq!(decode(&b), Some((v, b.len())), "{h}");
            // Trailing bytes are the next item's, not this one's.
            let mut more = b.clone();
            more.push(0xaa);
            assert_eq!(decode(&more), Some((v, b.len())), "{h}");
        }
    }

    #[test]
    fn encodes_shortest() {
        for &(h, v) in CASES {
            let mut dst = BytesMut::new();
            put(&mut dst, v);
            assert_eq!(dst.len(), len(v));
            // "4025" is the two-byte form of 37: we send the one-byte one.
            if h != "4025" {
                assert_eq!(&dst[..], &hex(h)[..], "{v}");
            }
            assert_eq!(decode(&dst), Some((v, dst.len())));
        }
    }

    #[test]
    fn truncated_needs_more() {
        for &(h, _) in CASES {
            let b = hex(h);
            for cut in 0..b.len() {
                assert_eq!(decode(&b[..cut]), None, "{h} cut at {cut}");
            }
        }
    }

    #[test]
    #[should_panic]
    fn over_max_panics() {
        put(&mut BytesMut::new(), MAX + 1);
    }
}
