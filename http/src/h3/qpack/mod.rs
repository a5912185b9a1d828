//! QPACK (RFC 9204), HTTP/3's field compression, with no dynamic table on
//! either side: we advertise QPACK_MAX_TABLE_CAPACITY 0, so a peer can
//! only reference the static table, and our encoder never uses the peer's
//! table, so our sections need no acknowledgment and our encoder stream
//! stays empty. A field section is then decoded and encoded on its own,
//! with no state shared between streams and no stream ever blocked.

mod decoded_cache;
mod decoder;
mod encoder;
pub(crate) mod field_cache;
mod instructions;
pub mod static_table;
#[cfg(test)]
mod tests;

pub use decoder::{DecodeError, Decoder, Failure, FieldSink, Malformed};
pub use encoder::Encoder;
pub use instructions::{read_decoder_stream, read_encoder_stream};

// QPACK's prefixed integers are HPACK's (RFC 9204 §4.1.1); only reading
// them differs, in the bound.
use crate::h2::hpack::huffman;
pub(crate) use crate::h2::hpack::put_int;
use bytes::{BufMut, BytesMut};

/// Why a prefixed integer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    /// The input ends inside it.
    Truncated,
    /// Over 2^62 - 1, the most any QPACK integer needs (§4.1.1 leaves the
    /// bound to the implementation).
    Overflow,
}

/// Reads an integer with an `n`-bit prefix (RFC 9204 §4.1.1, RFC 7541
/// §5.1) at `src[*at]`, moving `at` past it.
pub(crate) fn read_int(src: &[u8], at: &mut usize, n: u32) -> Result<u64, IntError> {
    let mask = (1u64 << n) - 1;
    let first = *src.get(*at).ok_or(IntError::Truncated)?;
    *at += 1;
    let mut v = u64::from(first) & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0u32;
    loop {
        let b = *src.get(*at).ok_or(IntError::Truncated)?;
        *at += 1;
        // Nine continuation bytes hold 63 bits: a tenth can only
        // overflow.
        if shift > 56 {
            return Err(IntError::Overflow);
        }
        v += u64::from(b & 0x7f) << shift;
        if v > crate::h3::varint::MAX {
            return Err(IntError::Overflow);
        }
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// Writes a string literal whose length has an `n`-bit prefix and whose
/// Huffman flag is the bit above it (§4.1.2), `flags` in the first byte's
/// other bits; Huffman-coded only where that is shorter.
pub(crate) fn put_string(dst: &mut BytesMut, flags: u8, n: u32, s: &[u8]) {
    let h = huffman::encoded_len(s);
    if h < s.len() {
        put_int(dst, flags | 1 << n, n, h);
        huffman::encode(s, dst);
    } else {
        put_int(dst, flags, n, s.len());
        dst.put_slice(s);
    }
}
