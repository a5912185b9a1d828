//! The peer's QPACK encoder and decoder streams (RFC 9204 §4.3, §4.4),
//! read with what our side of the table allows: we advertise a capacity of
//! 0 and never reference the peer's table, so almost every instruction
//! is an error, and none changes any state.

use super::{read_int, IntError};
use crate::h3::error::ErrorCode;

/// Reads the peer's encoder stream, `input` being what arrived and was not
/// consumed before; returns the bytes it used (whole instructions only:
/// keep the rest for the next call). Only Set Dynamic Table Capacity to 0
/// is allowed: a larger capacity exceeds our QPACK_MAX_TABLE_CAPACITY of
/// 0 (§4.3.1), and an insertion or a duplicate needs room in a table that
/// has none (§3.2.2, §4.3.2 to §4.3.4): QPACK_ENCODER_STREAM_ERROR.
pub fn read_encoder_stream(input: &[u8]) -> Result<usize, ErrorCode> {
    const ERR: ErrorCode = ErrorCode::QpackEncoderStreamError;
    let mut at = 0;
    while at < input.len() {
        // 0 0 1 Capacity(5).
        if input[at] & 0xe0 != 0x20 {
            return Err(ERR);
        }
        let mut next = at;
        match read_int(input, &mut next, 5) {
            Ok(0) => at = next,
            Ok(_) | Err(IntError::Overflow) => return Err(ERR),
            Err(IntError::Truncated) => break,
        }
    }
    Ok(at)
}

/// Reads the peer's decoder stream as [`read_encoder_stream`] does the
/// encoder stream. Every section we send has a Required Insert Count of
/// 0, so a Section Acknowledgment (§4.4.1: no section awaits one) and an
/// Insert Count Increment (§4.4.3: of 0, or past the 0 insertions we
/// made) are QPACK_DECODER_STREAM_ERROR. A Stream Cancellation (§4.4.2)
/// is read and passed over: no stream holds anything of the table.
pub fn read_decoder_stream(input: &[u8]) -> Result<usize, ErrorCode> {
    const ERR: ErrorCode = ErrorCode::QpackDecoderStreamError;
    let mut at = 0;
    while at < input.len() {
        // 0 1 Stream ID(6); Section Acknowledgment is 1, Insert Count
        // Increment 0 0.
        if input[at] & 0xc0 != 0x40 {
            return Err(ERR);
        }
        let mut next = at;
        match read_int(input, &mut next, 6) {
            Ok(_) => at = next,
            Err(IntError::Overflow) => return Err(ERR),
            Err(IntError::Truncated) => break,
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: ErrorCode = ErrorCode::QpackEncoderStreamError;
    const DEC: ErrorCode = ErrorCode::QpackDecoderStreamError;

    #[test]
    fn encoder_stream_capacity_zero_only() {
        assert_eq!(read_encoder_stream(&[]), Ok(0));
        assert_eq!(read_encoder_stream(&[0x20, 0x20]), Ok(2));
        // Zero written long (a prefix full of ones is only for >= 31).
        assert_eq!(read_encoder_stream(&[0x21]), Err(ENC));
        assert_eq!(read_encoder_stream(&[0x3f, 0x00]), Err(ENC));
        // A partial integer waits for the rest, then fails on its value.
        assert_eq!(read_encoder_stream(&[0x20, 0x3f, 0xe1]), Ok(1));
        assert_eq!(read_encoder_stream(&[0x3f, 0xe1, 0x1f]), Err(ENC));
        // Insert with name reference, with literal name, duplicate.
        assert_eq!(read_encoder_stream(&[0xc0, 0x01, b'x']), Err(ENC));
        assert_eq!(read_encoder_stream(&[0x41, b'a', 0x01, b'b']), Err(ENC));
        assert_eq!(read_encoder_stream(&[0x00]), Err(ENC));
        assert_eq!(read_encoder_stream(&[0x20, 0x80]), Err(ENC));
        // An integer past 2^62 - 1.
        let mut long = vec![0x3f];
        long.extend([0xff; 10]);
        long.push(0x01);
        assert_eq!(read_encoder_stream(&long), Err(ENC));
    }

    #[test]
    fn decoder_stream_cancellations_only() {
        assert_eq!(read_decoder_stream(&[]), Ok(0));
        assert_eq!(read_decoder_stream(&[0x44, 0x7f, 0x80, 0x01, 0x48]), Ok(5));
        assert_eq!(read_decoder_stream(&[0x44, 0x7f, 0x80]), Ok(1));
        // Section Acknowledgment: no section of ours awaits one.
        assert_eq!(read_decoder_stream(&[0x84]), Err(DEC));
        assert_eq!(read_decoder_stream(&[0x44, 0x80]), Err(DEC));
        // Insert Count Increment of 0, and of more than we inserted.
        assert_eq!(read_decoder_stream(&[0x00]), Err(DEC));
        assert_eq!(read_decoder_stream(&[0x01]), Err(DEC));
        let mut long = vec![0x7f];
        long.extend([0xff; 10]);
        long.push(0x01);
        assert_eq!(read_decoder_stream(&long), Err(DEC));
    }
}
