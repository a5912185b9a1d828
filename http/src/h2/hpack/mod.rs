//! HPACK (RFC 7541), the header compression of HTTP/2: our own, so that a
//! request's fields are decoded straight into the neutral head without an
//! intermediate map, a response's are encoded straight into the output,
//! and an over-long head is refused without being copied.

mod decoder;
mod encoder;
/// HPACK's Huffman code, which QPACK uses unchanged (RFC 9204 §4.1.2).
pub(crate) mod huffman;
mod huffman_table;
mod table;
#[cfg(test)]
mod tests;

pub use decoder::Decoder;
pub(crate) use encoder::sensitive;
pub use encoder::Encoder;

/// Every HPACK failure is the connection error COMPRESSION_ERROR; the
/// variant says why, for the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ends inside a representation or a string.
    Truncated,
    /// An integer over 2^32-1, or longer than 5 continuation bytes.
    IntegerOverflow,
    /// Index 0, or past the static and dynamic tables.
    BadIndex,
    /// EOS decoded, padding over 7 bits, or padding not all ones.
    BadHuffman,
    /// A dynamic table size update above the size we allow.
    SizeUpdateTooLarge,
    /// A dynamic table size update after a field in the block.
    SizeUpdateMisplaced,
}

/// Reads an integer with an `n`-bit prefix (§5.1) at `src[*at]`.
pub(crate) fn read_int(src: &[u8], at: &mut usize, n: u32) -> Result<usize, HpackError> {
    let mask = (1u32 << n) - 1;
    let first = *src.get(*at).ok_or(HpackError::Truncated)?;
    *at += 1;
    let mut v = u64::from(u32::from(first) & mask);
    if v < u64::from(mask) {
        return Ok(v as usize);
    }
    for shift in [0u32, 7, 14, 21, 28] {
        let b = *src.get(*at).ok_or(HpackError::Truncated)?;
        *at += 1;
        v += u64::from(b & 0x7f) << shift;
        if v > u64::from(u32::MAX) {
            return Err(HpackError::IntegerOverflow);
        }
        if b & 0x80 == 0 {
            return Ok(v as usize);
        }
    }
    Err(HpackError::IntegerOverflow)
}

/// Writes `v` with an `n`-bit prefix, `flags` in the first byte's high bits.
pub(crate) fn put_int(dst: &mut bytes::BytesMut, flags: u8, n: u32, mut v: usize) {
    use bytes::BufMut;
    let mask = (1usize << n) - 1;
    if v < mask {
        dst.put_u8(flags | v as u8);
        return;
    }
    dst.put_u8(flags | mask as u8);
    v -= mask;
    while v >= 128 {
        dst.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    dst.put_u8(v as u8);
}
