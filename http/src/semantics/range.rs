//! Range requests (RFC 9110 §14).
//!
//! # Parsing `Range` (§14.1, §14.2)
//!
//! ```text
//! Range           = ranges-specifier
//! ranges-specifier = range-unit "=" range-set      ; unit case-insensitive
//! range-set       = 1#range-spec                   ; OWS around commas
//! range-spec      = first-pos "-" [ last-pos ]     ; "a-b", "a-"
//!                 / "-" suffix-length              ; "-n": the last n bytes
//! ```
//!
//! [`parse_range`] turns a header and the representation's length into a
//! [`RangeOutcome`], in this order:
//!
//! 1. A unit other than `bytes`, a spec that is not one of the three forms
//!    (numbers are ASCII digits only; one that overflows `u64` is invalid),
//!    `a-b` with `b < a`, or no spec at all: the whole header is invalid and
//!    ignored ([`RangeOutcome::Ignore`], a full 200), as §14.2 allows. Empty
//!    list elements (`bytes=0-1,,2-3`) are skipped (§5.6.1).
//! 2. More than [`MAX_RANGES`] specs: [`RangeOutcome::Excessive`].
//! 3. Each spec is resolved against the length (§14.1.2): `last-pos` at or
//!    past the end is clamped to the last byte; `first-pos` at or past the
//!    end makes that spec unsatisfiable and it is dropped; `-0` is
//!    unsatisfiable; a suffix longer than the representation means all of
//!    it. With length 0 every spec is unsatisfiable.
//! 4. None left: [`RangeOutcome::Unsatisfiable`] (416 with
//!    `Content-Range: bytes */len`, see [`content_range_unsatisfied`]).
//!    One left: [`RangeOutcome::Single`].
//! 5. Several left that overlap (or repeat): [`RangeOutcome::Excessive`].
//!    Otherwise [`RangeOutcome::Multi`], in request order; adjacent ranges
//!    are kept apart, not coalesced (§14.3 lets a server do either).
//!
//! # Abusive ranges (CVE-2011-3192)
//!
//! Apache's "Range: bytes=0-,0-,0-,..." made one request ask for the whole
//! file hundreds of times over, as a multipart body built in memory. §14.3
//! lets a server ignore such ranges. Here a request with more than
//! [`MAX_RANGES`] specs, or with satisfiable ranges that overlap, is
//! [`RangeOutcome::Excessive`]. Ranges whose total exceeds the length are
//! covered by the same check: non-overlapping ranges clamped inside
//! `[0, len)` can never add up to more than `len`. The parser only reports
//! it; **the caller decides** what to answer, and the intended answer is the
//! full 200, as Apache's fix does (a 416 would tell a legitimate but clumsy
//! client that the bytes do not exist). No outcome ever costs more than
//! `MAX_RANGES` ranges of work or memory; nothing here allocates.
//!
//! # multipart/byteranges (§14.6, RFC 2046 §5.1.1)
//!
//! ```text
//! \r\n--BOUNDARY\r\n                  ; every part, the first one included
//! Content-Type: text/html\r\n          ; omitted when the type is empty
//! Content-Range: bytes 0-49/1000\r\n
//! \r\n
//! <bytes 0..=49>
//! \r\n--BOUNDARY\r\n ... next part ...
//! \r\n--BOUNDARY--\r\n                ; closing delimiter
//! ```
//!
//! Every part head, the first included, starts with CRLF: RFC 2046 makes the
//! CRLF before a boundary part of the delimiter, and a body that starts with
//! one simply has an empty preamble. Treating all parts alike keeps
//! [`multipart_len`] a plain sum, so the response is framed by
//! `Content-Length` and the file ranges can go out with sendfile/splice
//! between the heads.

use crate::grammar::trim_ows;

/// Most ranges served in one response; a request with more specs is
/// [`RangeOutcome::Excessive`].
pub const MAX_RANGES: usize = 16;

/// Size of the buffer for [`content_range`]: `bytes ` and three 20-digit
/// numbers with their separators.
pub const CONTENT_RANGE_MAX: usize = 6 + 20 + 1 + 20 + 1 + 20;

/// An inclusive byte range, `start <= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    /// Inclusive.
    pub end: u64,
}

impl ByteRange {
    /// Number of bytes; never 0, since `end` is inclusive.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }

    fn overlaps(&self, other: &ByteRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// What to do with a `Range` header; see the module docs.
///
/// 272 bytes, because [`RangeSet`] is inline: boxing it would allocate for
/// every multi-range request. Keep it out of long-lived futures (match on it
/// in synchronous code, as `prepare` does).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq, Eq)]
pub enum RangeOutcome {
    /// No Range header, not "bytes", or syntactically invalid: ignore it and
    /// send the full 200 (RFC 9110 §14.2).
    Ignore,
    /// One satisfiable range: 206 with `Content-Range`.
    Single(ByteRange),
    /// Several satisfiable, non-overlapping ranges in request order: 206
    /// `multipart/byteranges`.
    Multi(RangeSet),
    /// None satisfiable: 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
    /// Refused as abusive (CVE-2011-3192): more than [`MAX_RANGES`] specs,
    /// or overlapping ranges. The caller decides; the intended answer is the
    /// full 200, like Apache's fix.
    Excessive,
}

/// Up to [`MAX_RANGES`] ranges in a fixed array; no allocation.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct RangeSet {
    ranges: [ByteRange; MAX_RANGES],
    len: u8,
}

impl RangeSet {
    const fn new() -> RangeSet {
        RangeSet {
            ranges: [ByteRange { start: 0, end: 0 }; MAX_RANGES],
            len: 0,
        }
    }

    pub fn as_slice(&self) -> &[ByteRange] {
        &self.ranges[..self.len as usize]
    }

    fn push(&mut self, r: ByteRange) {
        self.ranges[self.len as usize] = r;
        self.len += 1;
    }
}

/// Parses a `Range` header value for a representation of `len` bytes.
pub fn parse_range(header: &[u8], len: u64) -> RangeOutcome {
    let h = trim_ows(header);
    if h.len() < 6 || !h[..5].eq_ignore_ascii_case(b"bytes") || h[5] != b'=' {
        return RangeOutcome::Ignore;
    }
    let mut specs = 0usize;
    let mut set = RangeSet::new();
    for elem in h[6..].split(|&b| b == b',') {
        let elem = trim_ows(elem);
        if elem.is_empty() {
            continue;
        }
        let Some(spec) = parse_spec(elem) else {
            return RangeOutcome::Ignore;
        };
        specs += 1;
        // Past the cap, keep checking syntax only: an invalid header is
        // ignored whatever its length.
        if specs <= MAX_RANGES {
            if let Some(r) = resolve(spec, len) {
                set.push(r);
            }
        }
    }
    if specs == 0 {
        return RangeOutcome::Ignore;
    }
    if specs > MAX_RANGES {
        return RangeOutcome::Excessive;
    }
    match set.as_slice() {
        [] => RangeOutcome::Unsatisfiable,
        [one] => RangeOutcome::Single(*one),
        many => {
            for (i, a) in many.iter().enumerate() {
                if many[i + 1..].iter().any(|b| a.overlaps(b)) {
                    return RangeOutcome::Excessive;
                }
            }
            RangeOutcome::Multi(set)
        }
    }
}

#[derive(Clone, Copy)]
enum Spec {
    /// `a-b`, `a <= b`.
    FromTo(u64, u64),
    /// `a-`
    From(u64),
    /// `-n`
    Suffix(u64),
}

fn parse_spec(s: &[u8]) -> Option<Spec> {
    let dash = s.iter().position(|&b| b == b'-')?;
    let (first, last) = (&s[..dash], &s[dash + 1..]);
    match (first.is_empty(), last.is_empty()) {
        (true, true) => None,
        (true, false) => Some(Spec::Suffix(number(last)?)),
        (false, true) => Some(Spec::From(number(first)?)),
        (false, false) => {
            let (a, b) = (number(first)?, number(last)?);
            (a <= b).then_some(Spec::FromTo(a, b))
        }
    }
}

/// ASCII digits, at least one, fitting in a `u64`.
fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// The satisfiable part of `spec` for a representation of `len` bytes.
fn resolve(spec: Spec, len: u64) -> Option<ByteRange> {
    let last = len.checked_sub(1)?;
    let (start, end) = match spec {
        Spec::FromTo(a, b) => (a, b.min(last)),
        Spec::From(a) => (a, last),
        Spec::Suffix(0) => return None,
        Spec::Suffix(n) => (len.saturating_sub(n), last),
    };
    (start <= last).then_some(ByteRange { start, end })
}

/// A multipart boundary of 16 lowercase hex digits, derived from `seed`
/// (e.g. a hash of the ETag) through the splitmix64 finalizer, so that it is
/// deterministic but does not spell out the seed (a file is less likely to
/// contain its own inode and size in hex than anything else).
pub fn boundary(seed: u64) -> [u8; 16] {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = HEX[((z >> (60 - 4 * i)) & 0xf) as usize];
    }
    out
}

/// Appends the head of one part, `\r\n--BOUNDARY\r\nContent-Type: CT\r\n
/// Content-Range: bytes a-b/total\r\n\r\n`, to `out`. The leading CRLF is
/// written for every part, the first included (see the module docs); the
/// `Content-Type` line is left out when `content_type` is empty.
pub fn write_part_head(
    out: &mut Vec<u8>,
    boundary: &[u8],
    content_type: &[u8],
    r: ByteRange,
    total: u64,
) {
    out.extend_from_slice(b"\r\n--");
    out.extend_from_slice(boundary);
    out.extend_from_slice(b"\r\n");
    if !content_type.is_empty() {
        out.extend_from_slice(b"Content-Type: ");
        out.extend_from_slice(content_type);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Content-Range: ");
    let mut buf = [0u8; CONTENT_RANGE_MAX];
    out.extend_from_slice(content_range(r, total, &mut buf));
    out.extend_from_slice(b"\r\n\r\n");
}

/// Appends the closing delimiter `\r\n--BOUNDARY--\r\n`.
pub fn write_closing(out: &mut Vec<u8>, boundary: &[u8]) {
    out.extend_from_slice(b"\r\n--");
    out.extend_from_slice(boundary);
    out.extend_from_slice(b"--\r\n");
}

/// Exact length of the multipart body that [`write_part_head`], the range
/// bytes and [`write_closing`] make for `set`, for `Content-Length`.
pub fn multipart_len(set: &RangeSet, boundary: &[u8], content_type: &[u8], total: u64) -> u64 {
    let b = boundary.len() as u64;
    let ct = if content_type.is_empty() {
        0
    } else {
        b"Content-Type: \r\n".len() as u64 + content_type.len() as u64
    };
    // "\r\n--" B "\r\n" [CT line] "Content-Range: " value "\r\n\r\n"
    let fixed = 4 + b + 2 + ct + b"Content-Range: ".len() as u64 + 4;
    let parts: u64 = set
        .as_slice()
        .iter()
        .map(|r| {
            let value =
                b"bytes -/".len() as u64 + dec_len(r.start) + dec_len(r.end) + dec_len(total);
            fixed + value + r.len()
        })
        .sum();
    // "\r\n--" B "--\r\n"
    parts + 4 + b + 4
}

/// `bytes a-b/total` into `out`, for a `Content-Range` header or part.
pub fn content_range(r: ByteRange, total: u64, out: &mut [u8; CONTENT_RANGE_MAX]) -> &[u8] {
    out[..6].copy_from_slice(b"bytes ");
    let mut n = put_dec(out, 6, r.start);
    out[n] = b'-';
    n = put_dec(out, n + 1, r.end);
    out[n] = b'/';
    n = put_dec(out, n + 1, total);
    &out[..n]
}

/// `bytes */total` into `out`, for the `Content-Range` of a 416.
pub fn content_range_unsatisfied(total: u64, out: &mut [u8; CONTENT_RANGE_MAX]) -> &[u8] {
    out[..8].copy_from_slice(b"bytes */");
    let n = put_dec(out, 8, total);
    &out[..n]
}

fn dec_len(v: u64) -> u64 {
    u64::from(v.checked_ilog10().unwrap_or(0)) + 1
}

/// Writes `v` in decimal at `out[at..]`; returns the index after it.
fn put_dec(out: &mut [u8], at: usize, mut v: u64) -> usize {
    let end = at + dec_len(v) as usize;
    for o in out[at..end].iter_mut().rev() {
        *o = b'0' + (v % 10) as u8;
        v /= 10;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected outcomes, compactly.
    #[derive(Debug, PartialEq)]
    enum E {
        Ig,
        S(u64, u64),
        M(&'static [(u64, u64)]),
        U,
        X,
    }

    fn short(o: &RangeOutcome) -> E {
        match o {
            RangeOutcome::Ignore => E::Ig,
            RangeOutcome::Single(r) => E::S(r.start, r.end),
            RangeOutcome::Multi(set) => {
                let v: Vec<(u64, u64)> = set.as_slice().iter().map(|r| (r.start, r.end)).collect();
                E::M(Vec::leak(v))
            }
            RangeOutcome::Unsatisfiable => E::U,
            RangeOutcome::Excessive => E::X,
        }
    }

    #[test]
    fn ranges() {
        use E::*;
        const MAX: u64 = u64::MAX;
        #[rustfmt::skip]
        let cases: &[(&str, u64, E)] = &[
            // The three forms.
            ("bytes=0-0", 10, S(0, 0)),
            ("bytes=0-9", 10, S(0, 9)),
            ("bytes=2-5", 10, S(2, 5)),
            ("bytes=3-", 10, S(3, 9)),
            ("bytes=-3", 10, S(7, 9)),
            ("bytes=9-9", 10, S(9, 9)),
            // Clamping and satisfiability (§14.1.2).
            ("bytes=5-100", 10, S(5, 9)),
            ("bytes=0-18446744073709551615", 10, S(0, 9)),
            ("bytes=-100", 10, S(0, 9)),
            ("bytes=-10", 10, S(0, 9)),
            ("bytes=10-", 10, U),
            ("bytes=10-20", 10, U),
            ("bytes=-0", 10, U),
            ("bytes=-0", 0, U),
            ("bytes=0-", 0, U),
            ("bytes=0-0", 0, U),
            ("bytes=-5", 0, U),
            ("bytes=0-", 1, S(0, 0)),
            ("bytes=-1", 1, S(0, 0)),
            ("bytes=0-0,-0", 10, S(0, 0)), // unsatisfiable spec dropped
            ("bytes=20-30,5-6", 10, S(5, 6)),
            ("bytes=20-30,-0,10-", 10, U),
            // Invalid: ignored (§14.2).
            ("bytes=5-4", 10, Ig),
            ("bytes=0-1,5-4", 10, Ig),
            ("bytes=-", 10, Ig),
            ("bytes=", 10, Ig),
            ("bytes=,", 10, Ig),
            ("bytes=, ,", 10, Ig),
            ("bytes", 10, Ig),
            ("", 10, Ig),
            ("bytes=a-b", 10, Ig),
            ("bytes=1", 10, Ig),
            ("bytes=1-2-3", 10, Ig),
            ("bytes=--1", 10, Ig),
            ("bytes=+1-2", 10, Ig),
            ("bytes=0x1-2", 10, Ig),
            ("bytes=1 -2", 10, Ig),
            ("bytes=1- 2", 10, Ig),
            ("bytes=0-1;2-3", 10, Ig),
            ("bytes=18446744073709551616-", 10, Ig), // overflow
            ("bytes=0-18446744073709551616", 10, Ig),
            ("bytes=-18446744073709551616", 10, Ig),
            ("bytes=99999999999999999999999-", 10, Ig),
            ("items=0-1", 10, Ig),
            ("bytes =0-1", 10, Ig),
            ("bytes: 0-1", 10, Ig),
            ("byte=0-1", 10, Ig),
            ("bytesx=0-1", 10, Ig),
            ("bytes=0-1,items=2-3", 10, Ig),
            // Case and whitespace.
            ("Bytes=0-1", 10, S(0, 1)),
            ("BYTES=0-1", 10, S(0, 1)),
            ("  bytes=0-1  ", 10, S(0, 1)),
            ("bytes= 0-1", 10, S(0, 1)),
            ("bytes=0-1 , 3-4", 10, M(&[(0, 1), (3, 4)])),
            ("bytes=0-1,\t3-4", 10, M(&[(0, 1), (3, 4)])),
            ("bytes=0-1,,3-4,", 10, M(&[(0, 1), (3, 4)])), // empty elements skipped
            (",bytes=0-1", 10, Ig),
            // Huge numbers.
            ("bytes=18446744073709551615-", MAX, U),
            ("bytes=18446744073709551614-", MAX, S(MAX - 1, MAX - 1)),
            ("bytes=-18446744073709551615", MAX, S(0, MAX - 1)),
            ("bytes=0-", MAX, S(0, MAX - 1)),
            ("bytes=00000000000000000000000000000005-6", 10, S(5, 6)), // leading zeros
            // Several ranges: request order kept.
            ("bytes=0-1,3-4", 10, M(&[(0, 1), (3, 4)])),
            ("bytes=3-4,0-1", 10, M(&[(3, 4), (0, 1)])),
            ("bytes=0-1,2-3", 10, M(&[(0, 1), (2, 3)])), // adjacent: kept apart
            ("bytes=-2,0-0", 10, M(&[(8, 9), (0, 0)])),
            ("bytes=0-0,9-", 10, M(&[(0, 0), (9, 9)])),
            ("bytes=0-0,20-,5-", 10, M(&[(0, 0), (5, 9)])),
            ("bytes=0-0,2-2,4-4,6-6,8-8,10-10,12-12,14-14,16-16", 100,
                M(&[(0, 0), (2, 2), (4, 4), (6, 6), (8, 8), (10, 10), (12, 12), (14, 14), (16, 16)])),
            // Abusive (CVE-2011-3192).
            ("bytes=0-1,1-2", 10, X),
            ("bytes=0-,0-", 10, X),
            ("bytes=0-0,0-0", 10, X),
            ("bytes=5-,-5", 10, X),
            ("bytes=0-9,3-4", 10, X),
            ("bytes=3-4,0-9", 10, X),
            ("bytes=-5,5-5", 10, X),
            ("bytes=-5,4-4", 10, M(&[(5, 9), (4, 4)])), // adjacent, not overlapping
            ("bytes=0-5,50-60,5-5", 10, X), // overlap after clamping and dropping
            ("bytes=0-5,6-,50-60,9-", 10, X),
            ("bytes=20-,20-", 10, U), // overlapping but unsatisfiable
            ("bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15", 100,
                M(&[(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9),
                    (10, 10), (11, 11), (12, 12), (13, 13), (14, 14), (15, 15)])), // exactly MAX_RANGES
            ("bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15,16-16", 100, X),
            ("bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15,16-16", 0, X),
            ("bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15,16-16,9-8", 100, Ig),
        ];
        for (h, len, want) in cases {
            assert_eq!(
                short(&parse_range(h.as_bytes(), *len)),
                *want,
                "{h:?} len {len}"
            );
        }
    }

    #[test]
    fn cve_2011_3192() {
        let many = |spec: &str, n: usize| format!("bytes={}", vec![spec; n].join(","));
        #[rustfmt::skip]
        let cases: &[(String, u64, E)] = &[
            (many("0-", 100), 1 << 20, E::X),
            (many("0-", 17), 1 << 20, E::X),
            (many("0-", 16), 1 << 20, E::X), // within the cap, but overlapping
            (many("0-", 2), 1 << 20, E::X),
            (many("5-,0-", 1000), 1 << 20, E::X),
            (many("-1", 100), 1 << 20, E::X),
            (many("1000-", 100), 10, E::X), // over the cap even though unsatisfiable
            (many(" ", 100_000), 10, E::Ig), // only empty elements
            (format!("{},0-", many("", 100_000)), 10, E::S(0, 9)),
        ];
        for (h, len, want) in cases {
            assert_eq!(
                short(&parse_range(h.as_bytes(), *len)),
                *want,
                "{} bytes, len {len}",
                h.len()
            );
        }
    }

    /// Every header over a small alphabet of specs: whatever comes back is
    /// inside the representation, non-overlapping, and within the cap.
    #[test]
    fn outcomes_are_sound() {
        let specs = [
            "0-0", "0-", "-0", "-1", "-3", "1-2", "2-", "3-9", "4-4", "2-1", "x", "",
        ];
        for len in 0..6u64 {
            for a in specs {
                for b in specs {
                    for c in specs {
                        let h = format!("bytes={a},{b},{c}");
                        match parse_range(h.as_bytes(), len) {
                            RangeOutcome::Single(r) => {
                                assert!(r.start <= r.end && r.end < len, "{h}")
                            }
                            RangeOutcome::Multi(set) => {
                                let s = set.as_slice();
                                assert!(s.len() >= 2 && s.len() <= MAX_RANGES, "{h}");
                                assert!(s.iter().map(ByteRange::len).sum::<u64>() <= len, "{h}");
                                for (i, r) in s.iter().enumerate() {
                                    assert!(r.start <= r.end && r.end < len, "{h}");
                                    assert!(!s[i + 1..].iter().any(|q| q.overlaps(r)), "{h}");
                                }
                            }
                            RangeOutcome::Unsatisfiable => {}
                            RangeOutcome::Ignore => {
                                assert!(
                                    [a, b, c].iter().any(|s| matches!(*s, "2-1" | "x"))
                                        || [a, b, c].iter().all(|s| s.is_empty()),
                                    "{h}"
                                );
                            }
                            RangeOutcome::Excessive => {}
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn byte_range_len() {
        #[rustfmt::skip]
        let cases: &[(u64, u64, u64)] = &[(0, 0, 1), (0, 9, 10), (5, 6, 2), (0, u64::MAX - 1, u64::MAX)];
        for &(start, end, want) in cases {
            assert_eq!(ByteRange { start, end }.len(), want);
        }
    }

    #[test]
    fn content_ranges() {
        const MAX: u64 = u64::MAX;
        #[rustfmt::skip]
        let cases: &[(u64, u64, u64, &str)] = &[
            (0, 0, 1, "bytes 0-0/1"),
            (0, 499, 1234, "bytes 0-499/1234"),
            (9, 9, 10, "bytes 9-9/10"),
            (MAX - 1, MAX - 1, MAX, "bytes 18446744073709551614-18446744073709551614/18446744073709551615"),
        ];
        let mut buf = [0u8; CONTENT_RANGE_MAX];
        for &(start, end, total, want) in cases {
            let got = content_range(ByteRange { start, end }, total, &mut buf);
            assert_eq!(got, want.as_bytes());
        }
        #[rustfmt::skip]
        let cases: &[(u64, &str)] = &[(0, "bytes */0"), (10, "bytes */10"), (MAX, "bytes */18446744073709551615")];
        for &(total, want) in cases {
            assert_eq!(content_range_unsatisfied(total, &mut buf), want.as_bytes());
        }
    }

    #[test]
    fn boundaries() {
        let a = boundary(0);
        assert!(a
            .iter()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(a, boundary(0));
        assert_ne!(a, boundary(1));
        assert_ne!(boundary(1), boundary(2));
        // The seed does not show through.
        assert_ne!(&boundary(0x1234)[..], b"0000000000001234");
    }

    #[test]
    fn multipart_body() {
        let b = boundary(42);
        let data: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
        let total = data.len() as u64;
        #[rustfmt::skip]
        let cases: &[(&str, &str)] = &[
            ("bytes=0-0,99999-", "text/html; charset=utf-8"),
            ("bytes=0-0,99999-", ""),
            ("bytes=-5,0-9,500-999,9999-10000", "application/octet-stream"),
            ("bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15", "image/png"),
        ];
        for &(h, ct) in cases {
            let RangeOutcome::Multi(set) = parse_range(h.as_bytes(), total) else {
                panic!("{h}: not multi");
            };
            let mut body = Vec::new();
            for &r in set.as_slice() {
                write_part_head(&mut body, &b, ct.as_bytes(), r, total);
                body.extend_from_slice(&data[r.start as usize..=r.end as usize]);
            }
            write_closing(&mut body, &b);
            assert_eq!(
                multipart_len(&set, &b, ct.as_bytes(), total),
                body.len() as u64,
                "{h} {ct:?}"
            );
        }

        // The exact bytes of a small body.
        let mut set = RangeSet::new();
        set.push(ByteRange { start: 0, end: 1 });
        set.push(ByteRange { start: 4, end: 4 });
        let mut body = Vec::new();
        for &r in set.as_slice() {
            write_part_head(&mut body, b"BND", b"text/plain", r, 5);
            body.extend_from_slice(&b"abcde"[r.start as usize..=r.end as usize]);
        }
        write_closing(&mut body, b"BND");
        let want = "\r\n--BND\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/5\r\n\r\nab\
                    \r\n--BND\r\nContent-Type: text/plain\r\nContent-Range: bytes 4-4/5\r\n\r\ne\
                    \r\n--BND--\r\n";
        assert_eq!(String::from_utf8(body).unwrap(), want);
        assert_eq!(
            multipart_len(&set, b"BND", b"text/plain", 5),
            want.len() as u64
        );
    }
}
