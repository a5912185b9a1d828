//! Huffman-coded string literals this core decoded lately, by their coded
//! bytes: a client sends the same `:authority`, `user-agent`, `accept` and
//! often `:path` with every request, and with no dynamic table (we offer
//! none) it sends them whole each time, Huffman-coded (Chromium does).
//! Decoding them was most of a request head's QPACK cost (callgrind, 26 B
//! over HTTP/3); a hit is a hash, a compare and a copy.
//!
//! Direct-mapped, one string a slot, the newest in a slot wins. The key is
//! the exact coded bytes, which decode to one string only, so a hit is that
//! string whoever sent it; what fails to decode is never kept. The slots
//! hold their bytes inline, made once per core (32 KiB), so that decoding a
//! request head allocates nothing (`tests/qpack_allocations.rs`).

use std::cell::RefCell;

const SLOTS: usize = 128;
/// Longer coded strings are decoded each time (and not kept): room for a
/// browser's `user-agent`.
pub(crate) const MAX_CODED: usize = 96;
/// The most a coded string of [`MAX_CODED`] bytes decodes to (the
/// shortest code is 5 bits).
const MAX_DECODED: usize = MAX_CODED * 8 / 5;

#[derive(Clone, Copy)]
struct Entry {
    coded_len: u8,
    decoded_len: u8,
    coded: [u8; MAX_CODED],
    decoded: [u8; MAX_DECODED],
}

const EMPTY: Entry = Entry {
    coded_len: 0,
    decoded_len: 0,
    coded: [0; MAX_CODED],
    decoded: [0; MAX_DECODED],
};

thread_local! {
    static ENTRIES: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

fn slot(coded: &[u8]) -> usize {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = coded.len() as u64;
    let mut words = coded.chunks_exact(8);
    for w in &mut words {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(K);
    }
    // The tail byte by byte: a copy of a short tail would be a memcpy call.
    let mut last = 0u64;
    for (i, &b) in words.remainder().iter().enumerate() {
        last |= u64::from(b) << (8 * i);
    }
    h = (h.rotate_left(5) ^ last).wrapping_mul(K);
    (h >> 56) as usize % SLOTS
}

/// `coded` decoded into `out` (cleared first): from the cache, or by
/// `decode`, whose success is kept.
pub(crate) fn decode<E>(
    coded: &[u8],
    out: &mut Vec<u8>,
    decode: impl FnOnce(&[u8], &mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    out.clear();
    // An empty string is never kept: an empty slot must not match it.
    if coded.is_empty() || coded.len() > MAX_CODED {
        return decode(coded, out);
    }
    let i = slot(coded);
    ENTRIES.with(|e| {
        let mut e = e.borrow_mut();
        if e.is_empty() {
            e.resize(SLOTS, EMPTY);
        }
        let hit = &e[i];
        if hit.coded[..usize::from(hit.coded_len)] == *coded {
            out.extend_from_slice(&hit.decoded[..usize::from(hit.decoded_len)]);
            return Ok(());
        }
        decode(coded, out)?;
        if out.len() <= MAX_DECODED {
            let slot = &mut e[i];
            slot.coded_len = coded.len() as u8;
            slot.coded[..coded.len()].copy_from_slice(coded);
            slot.decoded_len = out.len() as u8;
            slot.decoded[..out.len()].copy_from_slice(out);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_string_is_the_string_decoded_and_failures_are_not_kept() {
        let mut calls = 0;
        let mut out = Vec::new();
        for _ in 0..3 {
            decode::<()>(b"coded", &mut out, |c, o| {
                calls += 1;
                o.extend_from_slice(c);
                o.push(b'!');
                Ok(())
            })
            .unwrap();
            assert_eq!(out, b"coded!");
        }
        assert_eq!(calls, 1);
        for _ in 0..2 {
            assert!(decode(b"bad", &mut out, |_, _| Err(())).is_err());
        }
        let mut tried = 0;
        decode::<()>(b"bad", &mut out, |_, o| {
            tried += 1;
            o.push(b'x');
            Ok(())
        })
        .unwrap();
        assert_eq!((tried, out.as_slice()), (1, &b"x"[..]));
        // Too long to keep: decoded every time.
        let long = vec![b'a'; MAX_CODED + 1];
        let mut n = 0;
        for _ in 0..2 {
            decode::<()>(&long, &mut out, |_, _| {
                n += 1;
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(n, 2);
    }
}
