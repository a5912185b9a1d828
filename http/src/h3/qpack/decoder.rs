//! Decoding a field section (RFC 9204 §4.5) with no dynamic table: the
//! prefix must say so, and every reference must be to the static table.
//! Strings sent without Huffman are handed over as slices of the section;
//! Huffman-coded ones are decoded into two buffers the decoder keeps, so a
//! section costs no allocation once they have grown.

use crate::h2::hpack::huffman;

use super::{read_int, static_table, IntError};
use crate::h3::error::ErrorCode;

/// Where the decoded fields go, one at a time, in the section's order.
pub trait FieldSink {
    /// `never_indexed`: the N bit (§4.5.4): an intermediary must send the
    /// field as a literal with the bit set again.
    fn field(&mut self, name: &[u8], value: &[u8], never_indexed: bool);
}

impl<F: FnMut(&[u8], &[u8], bool)> FieldSink for F {
    fn field(&mut self, name: &[u8], value: &[u8], never_indexed: bool) {
        self(name, value, never_indexed)
    }
}

/// Why a section could not be decoded: QPACK_DECOMPRESSION_FAILED, a
/// connection error (§2.2.3, §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The section ends inside its prefix or a field line.
    Truncated,
    /// An integer over 2^62 - 1.
    IntegerOverflow,
    /// A Required Insert Count other than 0, or a negative Base: the
    /// section needs a dynamic table we said we do not keep (§4.5.1).
    DynamicTable,
    /// A reference to the dynamic table, or a post-base one (§4.5.2 to
    /// §4.5.5): there are no entries.
    DynamicReference,
    /// A static index past the table's 99 entries (§3.1).
    BadIndex,
    /// EOS decoded, padding over 7 bits or not all ones (§4.1.2).
    BadHuffman,
}

/// A section that decodes but is not a valid message: the request or
/// response is malformed, a stream error H3_MESSAGE_ERROR (RFC 9114
/// §4.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// A field name with uppercase letters (RFC 9114 §4.2).
    UppercaseName,
    /// A pseudo-header field after a regular field (RFC 9114 §4.3).
    PseudoAfterRegular,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    Failed(Failure),
    /// Over the section size bound, counted as RFC 9114 §4.2.2 does (each
    /// field's name and value plus 32). The section was read to its end,
    /// so the connection can go on: a server answers 431 (§4.2.2) or
    /// resets the stream.
    TooLarge,
    Malformed(Malformed),
}

impl DecodeError {
    /// The code for a connection error (a failure) or a stream error.
    pub fn code(self) -> ErrorCode {
        match self {
            DecodeError::Failed(_) => ErrorCode::QpackDecompressionFailed,
            DecodeError::TooLarge | DecodeError::Malformed(_) => ErrorCode::MessageError,
        }
    }
}

impl From<IntError> for Failure {
    fn from(e: IntError) -> Failure {
        match e {
            IntError::Truncated => Failure::Truncated,
            IntError::Overflow => Failure::IntegerOverflow,
        }
    }
}

pub struct Decoder {
    max_section: u64,
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Buffers beyond this are not kept (a rare huge field).
const KEEP: usize = 4 * 1024;

thread_local! {
    /// A dropped decoder's Huffman buffers, for the next request's: a
    /// decoder is made per request, and growing its two buffers anew was
    /// two allocations a request (callgrind, 26 B over HTTP/3).
    static SPARE: std::cell::Cell<Option<(Vec<u8>, Vec<u8>)>> = const { std::cell::Cell::new(None) };
}

impl Drop for Decoder {
    fn drop(&mut self) {
        if self.name.capacity() <= KEEP && self.value.capacity() <= KEEP {
            let kept = (
                std::mem::take(&mut self.name),
                std::mem::take(&mut self.value),
            );
            // During a thread's teardown the spare may be gone already.
            let _ = SPARE.try_with(|s| s.set(Some(kept)));
        }
    }
}

impl Decoder {
    /// `max_section`: the MAX_FIELD_SECTION_SIZE we advertise (RFC 9114
    /// §4.2.2), what a section may hold decoded.
    pub fn new(max_section: u64) -> Decoder {
        let (name, value) = SPARE.with(|s| s.take()).unwrap_or_default();
        Decoder {
            max_section,
            name,
            value,
        }
    }

    /// Decodes one whole field section (a HEADERS frame's payload) into
    /// `sink`. A malformed or oversized section is still read to its end
    /// so that a failure after the fault, a connection error, is not taken
    /// for the lesser stream error; the sink gets nothing after the fault.
    pub fn decode(&mut self, src: &[u8], sink: &mut impl FieldSink) -> Result<(), DecodeError> {
        let mut at = 0;
        self.prefix(src, &mut at).map_err(DecodeError::Failed)?;
        let max = self.max_section;
        let mut size = 0u64;
        let mut regular = false;
        let mut fault = None;
        while at < src.len() {
            let (name, value, flags) = self.line(src, &mut at).map_err(DecodeError::Failed)?;
            if fault.is_some() {
                continue;
            }
            size += name.len() as u64 + value.len() as u64 + 32;
            if size > max {
                fault = Some(DecodeError::TooLarge);
                continue;
            }
            if name.first() == Some(&b':') {
                if regular {
                    fault = Some(DecodeError::Malformed(Malformed::PseudoAfterRegular));
                    continue;
                }
            } else {
                regular = true;
            }
            // The static table's names are all lowercase.
            if flags & LITERAL_NAME != 0 && name.iter().any(u8::is_ascii_uppercase) {
                fault = Some(DecodeError::Malformed(Malformed::UppercaseName));
                continue;
            }
            sink.field(name, value, flags & NEVER_INDEXED != 0);
        }
        fault.map_or(Ok(()), Err)
    }

    /// The Required Insert Count and Base (§4.5.1): with no dynamic table
    /// the count must be 0. A section without dynamic references "can use
    /// any value for the Base" (§4.5.1.2), so a Delta Base with a sign bit
    /// of 0 is taken whatever it is; a sign bit of 1 with a Delta Base not
    /// below the count (always so, the count being 0) is invalid there.
    fn prefix(&self, src: &[u8], at: &mut usize) -> Result<(), Failure> {
        if read_int(src, at, 8)? != 0 {
            return Err(Failure::DynamicTable);
        }
        let sign = src.get(*at).ok_or(Failure::Truncated)? & 0x80 != 0;
        read_int(src, at, 7)?;
        if sign {
            return Err(Failure::DynamicTable);
        }
        Ok(())
    }

    /// One field line (§4.5.2 to §4.5.6): name, value, and the N bit and
    /// whether the name was a literal, as flags.
    fn line<'a>(
        &'a mut self,
        src: &'a [u8],
        at: &mut usize,
    ) -> Result<(&'a [u8], &'a [u8], u8), Failure> {
        let b = src[*at];
        let Decoder { name, value, .. } = self;
        if b & 0x80 != 0 {
            // Indexed field line: 1 T index(6).
            if b & 0x40 == 0 {
                return Err(Failure::DynamicReference);
            }
            let (n, v) = static_entry(read_int(src, at, 6)?)?;
            return Ok((n, v, 0));
        }
        if b & 0x40 != 0 {
            // Literal with name reference: 0 1 N T index(4), value.
            if b & 0x10 == 0 {
                return Err(Failure::DynamicReference);
            }
            let never = if b & 0x20 != 0 { NEVER_INDEXED } else { 0 };
            let (n, _) = static_entry(read_int(src, at, 4)?)?;
            let v = string(src, at, 7, value)?;
            return Ok((n, v, never));
        }
        if b & 0x20 != 0 {
            // Literal with literal name: 0 0 1 N H length(3), value.
            let never = if b & 0x10 != 0 { NEVER_INDEXED } else { 0 };
            let n = string(src, at, 3, name)?;
            let v = string(src, at, 7, value)?;
            return Ok((n, v, never | LITERAL_NAME));
        }
        // Indexed field line with post-base index (0001), literal with
        // post-base name reference (0000): both the dynamic table's.
        Err(Failure::DynamicReference)
    }
}

const NEVER_INDEXED: u8 = 1;
const LITERAL_NAME: u8 = 2;

fn static_entry(i: u64) -> Result<(&'static [u8], &'static [u8]), Failure> {
    static_table::get(i).ok_or(Failure::BadIndex)
}

/// A string literal (§4.1.2) whose length has an `n`-bit prefix and whose
/// Huffman flag is the bit above it: a slice of `src`, or decoded into
/// `buf`.
fn string<'a>(
    src: &'a [u8],
    at: &mut usize,
    n: u32,
    buf: &'a mut Vec<u8>,
) -> Result<&'a [u8], Failure> {
    let huff = *src.get(*at).ok_or(Failure::Truncated)? & (1 << n) != 0;
    let len = read_int(src, at, n)?;
    let rest = &src[*at..];
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= rest.len())
        .ok_or(Failure::Truncated)?;
    let raw = &rest[..len];
    *at += len;
    if !huff {
        return Ok(raw);
    }
    super::decoded_cache::decode(raw, buf, huffman::decode).map_err(|_| Failure::BadHuffman)?;
    Ok(buf)
}
