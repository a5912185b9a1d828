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
    let mut code: u32 = 0;
    let mut len = 0usize;
    for &byte in src {
        for i in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> i) & 1);
            len += 1;
            if len > 30 {
                return Err(HpackError::BadHuffman);
            }
            let at = code.wrapping_sub(c.first[len]);
            if c.count[len] > 0 && code >= c.first[len] && at < c.count[len] {
                let sym = c.syms[c.offset[len] as usize + at as usize];
                if sym == EOS {
                    return Err(HpackError::BadHuffman);
                }
                dst.push(sym as u8);
                code = 0;
                len = 0;
            }
        }
    }
    // What is left must be padding: at most 7 bits, all ones.
    if len > 7 || code != (1 << len) - 1 {
        return Err(HpackError::BadHuffman);
    }
    Ok(())
}
