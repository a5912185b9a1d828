//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B). The code is canonical
//! (codes of one length are consecutive, in symbol order), so decoding
//! keeps, per length, the first code and where its symbols start: a few
//! comparisons per bit and no tree.

use std::sync::OnceLock;

use bytes::{BufMut, BytesMut};

use super::huffman_table::CODES;
use super::HpackError;

const EOS: u16 = 256;

struct Canon {
    /// For each byte: the symbol a code of at most 8 bits at its start
    /// decodes to, and that code's length (0: a longer code). Most of a
    /// URL's characters take 5 to 8 bits, so this takes them a byte at a
    /// time.
    fast: [(u8, u8); 256],
    /// Per length 1..=30: the first code, how many codes, where in `syms`.
    first: [u32; 31],
    count: [u32; 31],
    offset: [u16; 31],
    syms: [u16; 257],
}

fn canon() -> &'static Canon {
    static C: OnceLock<Canon> = OnceLock::new();
    C.get_or_init(|| {
        let mut order: Vec<u16> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s as usize].1, s));
        let mut c = Canon {
            fast: [(0, 0); 256],
            first: [0; 31],
            count: [0; 31],
            offset: [0; 31],
            syms: [0; 257],
        };
        for (i, &s) in order.iter().enumerate() {
            let (code, len) = CODES[s as usize];
            let len = len as usize;
            if c.count[len] == 0 {
                c.first[len] = code;
                c.offset[len] = i as u16;
            }
            c.count[len] += 1;
            c.syms[i] = s;
            if len <= 8 {
                let lo = (code << (8 - len)) as usize;
                for e in &mut c.fast[lo..lo + (1 << (8 - len))] {
                    *e = (s as u8, len as u8);
                }
            }
        }
        c
    })
}

/// Bytes `src` takes Huffman-coded.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

pub fn encode(src: &[u8], dst: &mut BytesMut) {
    let mut acc: u64 = 0;
    let mut n = 0u32;
    for &b in src {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | u64::from(code);
        n += u32::from(len);
        while n >= 8 {
            n -= 8;
            dst.put_u8((acc >> n) as u8);
        }
    }
    if n > 0 {
        // Padded with the most significant bits of EOS: ones.
        dst.put_u8(((acc << (8 - n)) as u8) | (0xff >> n));
    }
}

pub fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), HpackError> {
    let c = canon();
    // Bits not yet decoded, the oldest highest; `have` of them.
    let mut acc: u64 = 0;
    let mut have = 0u32;
    let mut at = 0;
    // The shortest code has 5 bits.
    dst.reserve(src.len() * 8 / 5 + 1);
    loop {
        if have <= 32 && at + 4 <= src.len() {
            let word = u32::from_be_bytes([src[at], src[at + 1], src[at + 2], src[at + 3]]);
            acc |= u64::from(word) << (32 - have);
            have += 32;
            at += 4;
        }
        while have <= 56 && at < src.len() {
            acc |= u64::from(src[at]) << (56 - have);
            have += 8;
            at += 1;
        }
        if have == 0 {
            return Ok(());
        }
        // With a byte or more in hand, a code of up to 8 bits is whole:
        // take them without refilling after each.
        while have >= 8 {
            let (sym, len) = c.fast[(acc >> 56) as usize];
            if len == 0 {
                break;
            }
            dst.push(sym);
            acc <<= len;
            have -= u32::from(len);
        }
        // Refill first unless the bits in hand can hold any code (a
        // longer one is next) or no more come.
        if have < 32 && at < src.len() {
            continue;
        }
        if have == 0 {
            return Ok(());
        }
        let (sym, len) = c.fast[(acc >> 56) as usize];
        if len > 0 && u32::from(len) <= have {
            dst.push(sym);
            acc <<= len;
            have -= u32::from(len);
            continue;
        }
        // A longer code, or the last bits: one length after another.
        let mut found = None;
        for len in 1..=have.min(30) as usize {
            let code = (acc >> (64 - len)) as u32;
            let i = code.wrapping_sub(c.first[len]);
            if i < c.count[len] {
                found = Some((c.syms[c.offset[len] as usize + i as usize], len as u32));
                break;
            }
        }
        match found {
            Some((EOS, _)) => return Err(HpackError::BadHuffman),
            Some((sym, len)) => {
                dst.push(sym as u8);
                acc <<= len;
                have -= len;
            }
            None => {
                // What is left must be padding: at most 7 bits, all ones.
                let ones = (acc >> (64 - have)) as u32 == (1 << have) - 1;
                if have > 7 || !ones || at < src.len() {
                    return Err(HpackError::BadHuffman);
                }
                return Ok(());
            }
        }
    }
}
