//! Streaming decoder for the chunked transfer coding (RFC 9112 §7.1), and the
//! two helpers a response needs to produce it.
//!
//! # How it works
//!
//! [`ChunkedDecoder`] is a byte-level state machine that never buffers body
//! bytes. Each [`ChunkedDecoder::decode`] call consumes framing (size lines,
//! CRLFs, trailers) as far as the input allows and then at most one run of
//! payload, which it reports as a range of the input, so the caller can hand
//! the payload on in place:
//!
//! ```text
//! loop {
//!     let d = dec.decode(&buf)?;
//!     deliver(&buf[d.data.clone()]);
//!     buf.advance(d.consumed);
//!     if d.done { break }
//!     if d.consumed == 0 { read more into buf }
//! }
//! ```
//!
//! States (a partial size line or trailer is carried across calls in the
//! state, never in a buffer):
//!
//! ```text
//! Size --hex--> Size --CRLF--> Data(n) --n bytes--> DataCr --CR--> DataLf --LF--> Size
//!   |  (SP/HT* ";" ext)                                   (size 0)
//!   +--CRLF with size 0--> Trailer: (field-line CRLF)* CRLF --> Done
//! ```
//!
//! Strictness, each a 400: a size is 1 to 16 hex digits; whitespace after it
//! is only allowed before a `;` (BWS); every line ends in CRLF, a lone LF or
//! CR is an error; extensions are skipped but the whole size line is capped
//! at [`MAX_SIZE_LINE`]; trailer fields must look like `name: value` and are
//! discarded, capped at [`MAX_TRAILERS`] bytes. A size that would take the
//! body past `max_body` is refused (413) before any of its data is read.

use std::ops::Range;

use crate::grammar::is_tchar;

/// Longest size line accepted, extensions included, CRLF excluded.
pub const MAX_SIZE_LINE: usize = 4096;
/// Largest trailer section accepted, final CRLF included.
pub const MAX_TRAILERS: usize = 8192;
/// The last chunk with an empty trailer section.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Why a chunked body was refused; the status comes from [`crate::Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("invalid chunk size line")]
    InvalidSize,
    #[error("chunk size has more than 16 hex digits")]
    SizeOverflow,
    #[error("missing CRLF in chunked body")]
    MissingCrlf,
    #[error("chunk size line longer than 4096 bytes")]
    ExtensionTooLong,
    #[error("chunked trailer section larger than 8192 bytes")]
    TrailersTooLarge,
    #[error("invalid field line in chunked trailer section")]
    InvalidTrailer,
    #[error("chunked body exceeds the body limit")]
    TooLarge,
}

impl From<ChunkError> for crate::Error {
    fn from(e: ChunkError) -> crate::Error {
        let kind = match e {
            ChunkError::TooLarge => crate::error::Kind::BodyTooLarge,
            _ => crate::error::Kind::BadRequest,
        };
        crate::Error::new(kind, "chunked body refused").because(e)
    }
}

/// What one [`ChunkedDecoder::decode`] call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Bytes of the input used up; drop them before the next call.
    pub consumed: usize,
    /// Body payload, a range of the input within `..consumed` (may be empty).
    pub data: Range<usize>,
    /// The last chunk and the trailer section have been consumed.
    pub done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// In the size digits (`digits` so far, may be 0).
    Size,
    /// After the digits, in BWS that must lead to `;`.
    SizeBws,
    /// In chunk extensions, skipped.
    Ext,
    /// Saw the CR ending the size line.
    SizeLf,
    /// In chunk data, `remaining` bytes to go.
    Data,
    /// Expecting the CR after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// At the start of a trailer line (or the final CRLF).
    TrailerStart,
    /// In a trailer field name.
    TrailerName,
    /// In a trailer field value.
    TrailerValue,
    /// Saw the CR ending a trailer field line.
    TrailerLf,
    /// Saw the CR of the final empty line.
    FinalLf,
    Done,
}

/// Streaming chunked-body decoder; see the module docs.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    state: State,
    /// Chunk size being read, then data bytes left in the chunk.
    remaining: u64,
    /// Hex digits read in the current size.
    digits: u8,
    /// Bytes of the current size line, or of the trailer section so far.
    line_len: usize,
    /// Payload bytes declared so far.
    total: u64,
    max_body: u64,
    /// The trailer section as received, when asked to keep it.
    kept: Option<Vec<u8>>,
}

impl ChunkedDecoder {
    /// A decoder for one body of at most `max_body` payload bytes.
    pub fn new(max_body: u64) -> Self {
        ChunkedDecoder {
            state: State::Size,
            remaining: 0,
            digits: 0,
            line_len: 0,
            total: 0,
            max_body,
            kept: None,
        }
    }

    /// Keeps the trailer section, for [`ChunkedDecoder::trailers`].
    pub fn keep_trailers(&mut self) {
        self.kept = Some(Vec::new());
    }

    /// The trailer fields kept, names and values as received (the value
    /// without its surrounding whitespace).
    pub fn trailers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone + '_ {
        self.kept
            .as_deref()
            .unwrap_or_default()
            .split(|&b| b == b'\n')
            .filter_map(|l| {
                let l = l.strip_suffix(b"\r").unwrap_or(l);
                let colon = l.iter().position(|&b| b == b':')?;
                Some((&l[..colon], l[colon + 1..].trim_ascii()))
            })
    }

    /// Whether the whole body, trailers included, has been consumed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes framing and at most one run of payload from the front of
    /// `src`. `consumed == 0 && !done` means more input is needed.
    pub fn decode(&mut self, src: &[u8]) -> Result<Decoded, ChunkError> {
        let mut i = 0;
        while i < src.len() {
            let b = src[i];
            match self.state {
                State::Data => {
                    let avail = (src.len() - i) as u64;
                    let run = self.remaining.min(avail) as usize;
                    self.remaining -= run as u64;
                    if self.remaining == 0 {
                        self.state = State::DataCr;
                    }
                    return Ok(Decoded {
                        consumed: i + run,
                        data: i..i + run,
                        done: false,
                    });
                }
                State::Size => self.size_byte(b)?,
                State::SizeBws => match b {
                    b' ' | b'\t' => self.size_line_byte()?,
                    b';' => {
                        self.size_line_byte()?;
                        self.state = State::Ext;
                    }
                    _ => return Err(ChunkError::InvalidSize),
                },
                State::Ext => match b {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => return Err(ChunkError::MissingCrlf),
                    b'\t' | b' '..=0x7e | 0x80..=0xff => self.size_line_byte()?,
                    _ => return Err(ChunkError::InvalidSize),
                },
                State::SizeLf => {
                    if b != b'\n' {
                        return Err(ChunkError::MissingCrlf);
                    }
                    self.end_size_line()?;
                }
                State::DataCr => {
                    if b != b'\r' {
                        return Err(ChunkError::MissingCrlf);
                    }
                    self.state = State::DataLf;
                }
                State::DataLf => {
                    if b != b'\n' {
                        return Err(ChunkError::MissingCrlf);
                    }
                    self.state = State::Size;
                }
                State::TrailerStart => {
                    self.trailer_byte(b)?;
                    self.state = match b {
                        b'\r' => State::FinalLf,
                        b'\n' => return Err(ChunkError::MissingCrlf),
                        _ if is_tchar(b) => State::TrailerName,
                        _ => return Err(ChunkError::InvalidTrailer),
                    };
                }
                State::TrailerName => {
                    self.trailer_byte(b)?;
                    match b {
                        b':' => self.state = State::TrailerValue,
                        _ if is_tchar(b) => {}
                        _ => return Err(ChunkError::InvalidTrailer),
                    }
                }
                State::TrailerValue => {
                    self.trailer_byte(b)?;
                    match b {
                        b'\r' => self.state = State::TrailerLf,
                        b'\n' => return Err(ChunkError::MissingCrlf),
                        b'\t' | b' '..=0x7e | 0x80..=0xff => {}
                        _ => return Err(ChunkError::InvalidTrailer),
                    }
                }
                State::TrailerLf => {
                    self.trailer_byte(b)?;
                    if b != b'\n' {
                        return Err(ChunkError::MissingCrlf);
                    }
                    self.state = State::TrailerStart;
                }
                State::FinalLf => {
                    self.trailer_byte(b)?;
                    if b != b'\n' {
                        return Err(ChunkError::MissingCrlf);
                    }
                    self.state = State::Done;
                    return Ok(Decoded {
                        consumed: i + 1,
                        data: i + 1..i + 1,
                        done: true,
                    });
                }
                State::Done => break,
            }
            i += 1;
        }
        Ok(Decoded {
            consumed: i,
            data: i..i,
            done: self.state == State::Done,
        })
    }

    #[inline]
    fn size_byte(&mut self, b: u8) -> Result<(), ChunkError> {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => {
                if self.digits == 0 {
                    return Err(match b {
                        b'\n' => ChunkError::MissingCrlf,
                        _ => ChunkError::InvalidSize,
                    });
                }
                self.state = match b {
                    b'\r' => State::SizeLf,
                    b';' => State::Ext,
                    b' ' | b'\t' => State::SizeBws,
                    b'\n' => return Err(ChunkError::MissingCrlf),
                    _ => return Err(ChunkError::InvalidSize),
                };
                if b != b'\r' {
                    self.size_line_byte()?;
                }
                return Ok(());
            }
        };
        if self.digits == 16 {
            return Err(ChunkError::SizeOverflow);
        }
        self.digits += 1;
        self.remaining = (self.remaining << 4) | u64::from(digit);
        self.size_line_byte()
    }

    #[inline]
    fn size_line_byte(&mut self) -> Result<(), ChunkError> {
        self.line_len += 1;
        if self.line_len > MAX_SIZE_LINE {
            return Err(ChunkError::ExtensionTooLong);
        }
        Ok(())
    }

    fn end_size_line(&mut self) -> Result<(), ChunkError> {
        let size = self.remaining;
        self.digits = 0;
        self.line_len = 0;
        if size == 0 {
            self.state = State::TrailerStart;
            return Ok(());
        }
        self.total = self.total.checked_add(size).ok_or(ChunkError::TooLarge)?;
        if self.total > self.max_body {
            return Err(ChunkError::TooLarge);
        }
        self.state = State::Data;
        Ok(())
    }

    #[inline]
    fn trailer_byte(&mut self, b: u8) -> Result<(), ChunkError> {
        self.line_len += 1;
        if self.line_len > MAX_TRAILERS {
            return Err(ChunkError::TrailersTooLarge);
        }
        if let Some(k) = &mut self.kept {
            k.push(b);
        }
        Ok(())
    }
}

/// Writes the header of a chunk of `len` bytes, lowercase hex and CRLF, into
/// `out` and returns it (a slice of `out`). A body ends with [`LAST_CHUNK`],
/// not with a header for length 0.
pub fn write_chunk_header(len: usize, out: &mut [u8; 18]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out[16] = b'\r';
    out[17] = b'\n';
    let mut start = 16;
    let mut n = len;
    loop {
        start -= 1;
        out[start] = HEX[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    &out[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes all of `input` given at once, looping as a caller would.
    fn decode_all(input: &[u8], max_body: u64) -> Result<(Vec<u8>, usize), ChunkError> {
        decode_split(input, max_body, |_| input.len())
    }

    /// Decodes `input` fed in pieces whose lengths come from `next_len`.
    /// Returns the body and the bytes consumed when done.
    fn decode_split(
        input: &[u8],
        max_body: u64,
        mut next_len: impl FnMut(usize) -> usize,
    ) -> Result<(Vec<u8>, usize), ChunkError> {
        let mut dec = ChunkedDecoder::new(max_body);
        let mut body = Vec::new();
        let mut buf = Vec::new();
        let mut fed = 0;
        let mut consumed_total = 0;
        loop {
            let d = dec.decode(&buf)?;
            assert!(d.data.start <= d.data.end && d.data.end <= d.consumed);
            body.extend_from_slice(&buf[d.data.clone()]);
            buf.drain(..d.consumed);
            consumed_total += d.consumed;
            if d.done {
                assert!(dec.is_done());
                return Ok((body, consumed_total));
            }
            if d.consumed == 0 {
                assert!(buf.is_empty(), "stalled with {} bytes buffered", buf.len());
                if fed == input.len() {
                    return Err(ChunkError::MissingCrlf); // stand-in for "truncated"
                }
                let n = next_len(input.len() - fed).clamp(1, input.len() - fed);
                buf.extend_from_slice(&input[fed..fed + n]);
                fed += n;
            }
        }
    }

    #[test]
    fn trailers_are_kept_when_asked_for_across_pieces() {
        let input = b"2\r\nok\r\n0\r\nx-sum: 42\r\nX-Note:end \r\n\r\n";
        for cut in 1..input.len() {
            let mut dec = ChunkedDecoder::new(100);
            dec.keep_trailers();
            let (first, rest) = input.split_at(cut);
            let mut buf = first.to_vec();
            let mut fed_rest = false;
            loop {
                let d = dec.decode(&buf).unwrap();
                buf.drain(..d.consumed);
                if d.done {
                    break;
                }
                if d.consumed == 0 {
                    assert!(!fed_rest, "stalled at cut {cut}");
                    buf.extend_from_slice(rest);
                    fed_rest = true;
                }
            }
            let got: Vec<_> = dec.trailers().collect();
            assert_eq!(
                got,
                vec![(&b"x-sum"[..], &b"42"[..]), (&b"X-Note"[..], &b"end"[..])],
                "cut {cut}"
            );
        }
        let mut dec = ChunkedDecoder::new(100);
        dec.decode(input).unwrap();
        assert_eq!(dec.trailers().count(), 0, "kept only when asked");
    }

    #[test]
    fn malformed_table() {
        use ChunkError::*;
        #[rustfmt::skip]
        let cases: &[(&[u8], ChunkError)] = &[
            (b"\r\n", InvalidSize),
            (b"x\r\n", InvalidSize),
            (b";ext\r\n", InvalidSize),
            (b" 5\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"-5\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"+5\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"0x5\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5 \r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5\t\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5 x\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5,5\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5\x00\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5;a\x00b\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5;a\x7f\r\nhello\r\n0\r\n\r\n", InvalidSize),
            (b"5\nhello\r\n0\r\n\r\n", MissingCrlf),
            (b"5;ext\nhello\r\n0\r\n\r\n", MissingCrlf),
            (b"5\rhello\r\n0\r\n\r\n", MissingCrlf),
            (b"5\r\r\nhello\r\n0\r\n\r\n", MissingCrlf),
            (b"5\r\nhelloX\r\n0\r\n\r\n", MissingCrlf),
            (b"5\r\nhello\n0\r\n\r\n", MissingCrlf),
            (b"5\r\nhello\rX0\r\n\r\n", MissingCrlf),
            (b"5\r\nhello0\r\n\r\n", MissingCrlf),
            (b"5\r\nhello\r\n\r\n", InvalidSize),
            (b"0\n\r\n", MissingCrlf),
            (b"0\r\n\n", MissingCrlf),
            (b"0\r\n\r\r", MissingCrlf),
            (b"0\r\n\rx", MissingCrlf),
            (b"10000000000000000\r\n", SizeOverflow),
            (b"00000000000000000\r\n", SizeOverflow),
            (b"ffffffffffffffffff\r\n", SizeOverflow),
            (b"0\r\nX-T: a\n\r\n", MissingCrlf),
            (b"0\r\nX-T: a\rb\r\n\r\n", MissingCrlf),
            (b"0\r\nX-T: a\r\n\n", MissingCrlf),
            (b"0\r\n: a\r\n\r\n", InvalidTrailer),
            (b"0\r\nX-T a\r\n\r\n", InvalidTrailer),
            (b"0\r\nX-T\r\n\r\n", InvalidTrailer),
            (b"0\r\n X-T: a\r\n\r\n", InvalidTrailer),
            (b"0\r\nX-T: a\r\n b\r\n\r\n", InvalidTrailer),
            (b"0\r\nX-T : a\r\n\r\n", InvalidTrailer),
            (b"0\r\nX-T: a\x00b\r\n\r\n", InvalidTrailer),
            (b"0\r\nX-T: a\x01\r\n\r\n", InvalidTrailer),
            (b"8\r\n12345678\r\n0\r\n\r\n", TooLarge),
            (b"4\r\n1234\r\n4\r\n1234\r\n0\r\n\r\n", TooLarge),
            (b"ffffffffffffffff\r\n", TooLarge),
        ];
        for (i, (input, want)) in cases.iter().enumerate() {
            assert_eq!(
                decode_all(input, 7),
                Err(*want),
                "case {i}: {:?}",
                String::from_utf8_lossy(input)
            );
            // The same error when fed byte by byte.
            assert_eq!(
                decode_split(input, 7, |_| 1),
                Err(*want),
                "case {i} bytewise"
            );
        }
    }

    #[test]
    fn valid_table() {
        #[rustfmt::skip]
        let cases: &[(&[u8], &[u8])] = &[
            (b"0\r\n\r\n", b""),
            (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world"),
            (b"A\r\n0123456789\r\n0\r\n\r\n", b"0123456789"),
            (b"a\r\n0123456789\r\n0000\r\n\r\n", b"0123456789"),
            (b"0000000000000005\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5;name=value\r\nhello\r\n0;last\r\n\r\n", b"hello"),
            (b"5 ;a\r\nhello\r\n0\t; b = \"q;\\\"x\" \r\n\r\n", b"hello"),
            (b"5\r\nhe\r\nl\r\n0\r\n\r\n", b"he\r\nl"),
            (b"0\r\nX-Trailer: yes\r\nX-Empty:\r\n\r\n", b""),
            (b"3\r\nabc\r\n0\r\nChecksum: \x80\tv \r\n\r\n", b"abc"),
        ];
        for (i, (input, want)) in cases.iter().enumerate() {
            let (body, consumed) =
                decode_all(input, 1 << 20).unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_eq!(body, *want, "case {i}");
            assert_eq!(consumed, input.len(), "case {i}");
        }
    }

    fn sample_body() -> (Vec<u8>, Vec<u8>) {
        let mut encoded = Vec::new();
        let mut plain = Vec::new();
        let mut hdr = [0u8; 18];
        for (n, len) in [1usize, 15, 16, 255, 256, 4096, 3, 70000, 2]
            .into_iter()
            .enumerate()
        {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 + n * 7) as u8).collect();
            encoded.extend_from_slice(write_chunk_header(len, &mut hdr));
            if n == 2 {
                // an extension on one chunk header
                encoded.truncate(encoded.len() - 2);
                encoded.extend_from_slice(b";x=y\r\n");
            }
            encoded.extend_from_slice(&data);
            encoded.extend_from_slice(b"\r\n");
            plain.extend_from_slice(&data);
        }
        encoded.extend_from_slice(b"0\r\nX-Sum: 1\r\n\r\n");
        (encoded, plain)
    }

    #[test]
    fn byte_by_byte_and_random_splits() {
        let (encoded, plain) = sample_body();
        let (body, consumed) = decode_all(&encoded, 1 << 20).unwrap();
        assert_eq!(body, plain);
        assert_eq!(consumed, encoded.len());

        let (body, _) = decode_split(&encoded, 1 << 20, |_| 1).unwrap();
        assert_eq!(body, plain);

        // xorshift64*: deterministic pseudo-random split lengths.
        for seed in 1..=20u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let (body, _) = decode_split(&encoded, 1 << 20, |_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
                // mostly small pieces, sometimes large ones
                if r & 3 == 0 {
                    (r >> 8) as usize % 9000
                } else {
                    (r >> 8) as usize % 7 + 1
                }
            })
            .unwrap();
            assert_eq!(body, plain, "seed {seed}");
        }
    }

    #[test]
    fn stops_at_end_and_progresses() {
        let mut dec = ChunkedDecoder::new(100);
        // Framing before data is consumed even with no payload available.
        let d = dec.decode(b"5;e").unwrap();
        assert_eq!(
            d,
            Decoded {
                consumed: 3,
                data: 3..3,
                done: false
            }
        );
        let d = dec.decode(b"\r\n").unwrap();
        assert_eq!(d.consumed, 2);
        let d = dec.decode(b"hel").unwrap();
        assert_eq!(
            d,
            Decoded {
                consumed: 3,
                data: 0..3,
                done: false
            }
        );
        // One run of data per call; the rest is left for the next.
        let d = dec.decode(b"lo\r\n0\r\n\r\nNEXT").unwrap();
        assert_eq!(
            d,
            Decoded {
                consumed: 2,
                data: 0..2,
                done: false
            }
        );
        let d = dec.decode(b"\r\n0\r\n\r\nNEXT").unwrap();
        assert_eq!(
            d,
            Decoded {
                consumed: 7,
                data: 7..7,
                done: true
            }
        );
        assert!(dec.is_done());
        // Done: nothing more is consumed.
        let d = dec.decode(b"NEXT").unwrap();
        assert_eq!(
            d,
            Decoded {
                consumed: 0,
                data: 0..0,
                done: true
            }
        );
        assert_eq!(dec.decode(b"").unwrap().consumed, 0);
        assert!(!ChunkedDecoder::new(1).decode(b"").unwrap().done);
    }

    #[test]
    fn limits() {
        // Size line cap, extensions included.
        let mut line = b"1;".to_vec();
        line.resize(MAX_SIZE_LINE, b'x');
        line.extend_from_slice(b"\r\na\r\n0\r\n\r\n");
        assert_eq!(decode_all(&line, 10).unwrap().0, b"a");
        let mut line = b"1;".to_vec();
        line.resize(MAX_SIZE_LINE + 1, b'x');
        line.extend_from_slice(b"\r\na\r\n0\r\n\r\n");
        assert_eq!(decode_all(&line, 10), Err(ChunkError::ExtensionTooLong));
        assert_eq!(
            decode_split(&line, 10, |_| 3),
            Err(ChunkError::ExtensionTooLong)
        );
        let mut bws = b"1".to_vec();
        bws.resize(MAX_SIZE_LINE + 1, b' ');
        assert_eq!(decode_all(&bws, 10), Err(ChunkError::ExtensionTooLong));

        // Trailer cap, final CRLF included.
        let mut t = b"0\r\nX: ".to_vec();
        t.resize(3 + MAX_TRAILERS - 4, b'v');
        t.extend_from_slice(b"\r\n\r\n");
        assert_eq!(decode_all(&t, 10).unwrap().1, t.len());
        let mut t = b"0\r\nX: ".to_vec();
        t.resize(3 + MAX_TRAILERS - 3, b'v');
        t.extend_from_slice(b"\r\n\r\n");
        assert_eq!(decode_all(&t, 10), Err(ChunkError::TrailersTooLarge));

        // Body limit: exactly max_body is fine.
        assert_eq!(
            decode_all(b"7\r\n1234567\r\n0\r\n\r\n", 7).unwrap().0,
            b"1234567"
        );
        assert_eq!(
            decode_all(b"3\r\n123\r\n4\r\n4567\r\n0\r\n\r\n", 7)
                .unwrap()
                .0,
            b"1234567"
        );
        assert_eq!(
            decode_all(b"ffffffffffffffff\r\n", u64::MAX).map(|_| ()),
            Err(ChunkError::MissingCrlf)
        );
    }

    #[test]
    fn chunk_header() {
        let mut out = [0u8; 18];
        assert_eq!(write_chunk_header(0, &mut out), b"0\r\n");
        assert_eq!(write_chunk_header(1, &mut out), b"1\r\n");
        assert_eq!(write_chunk_header(255, &mut out), b"ff\r\n");
        assert_eq!(write_chunk_header(0x1000, &mut out), b"1000\r\n");
        assert_eq!(write_chunk_header(0xabcdef, &mut out), b"abcdef\r\n");
        assert_eq!(
            write_chunk_header(usize::MAX, &mut out),
            format!("{:x}\r\n", usize::MAX).as_bytes()
        );
        assert_eq!(LAST_CHUNK, b"0\r\n\r\n");
    }

    #[test]
    fn error_status() {
        assert_eq!(crate::Error::from(ChunkError::TooLarge).status(), 413);
        for e in [
            ChunkError::InvalidSize,
            ChunkError::SizeOverflow,
            ChunkError::MissingCrlf,
            ChunkError::ExtensionTooLong,
            ChunkError::TrailersTooLarge,
            ChunkError::InvalidTrailer,
        ] {
            assert_eq!(crate::Error::from(e).status(), 400);
            assert!(!e.to_string().is_empty());
        }
    }
}
