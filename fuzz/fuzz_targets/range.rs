//! The `Range` header parser and the multipart framing helpers
//! (`ringside_http::semantics::range`).
//!
//! Input layout: bytes 0-7 are the representation's length (little-endian;
//! inputs shorter than 8 bytes are skipped), the rest is the header value.
//!
//! Checked, against the contract in the module docs:
//! - every range returned lies within `0..len` with `start <= end`; `Multi`
//!   has 2 to `MAX_RANGES` ranges, pairwise disjoint, adding up to at most
//!   `len`; with `len == 0` nothing is satisfiable;
//! - whether a header is ignored does not depend on the length (it is a
//!   matter of syntax), and neither does refusing more than `MAX_RANGES`
//!   specs;
//! - the outcome is what a plain reading of the grammar in the module docs
//!   gives (`reference` below);
//! - for lengths a file can have (up to `i64::MAX`), `multipart_len` is the
//!   exact length of what `write_part_head`, the range bytes and
//!   `write_closing` produce; `content_range` writes `bytes a-b/len`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside_http::semantics::range::{
    boundary, content_range, multipart_len, parse_range, write_closing, write_part_head, ByteRange,
    RangeOutcome, CONTENT_RANGE_MAX, MAX_RANGES,
};

fuzz_target!(|data: &[u8]| {
    let Some((len, header)) = data.split_first_chunk::<8>() else {
        return;
    };
    let len = u64::from_le_bytes(*len);
    let got = parse_range(header, len);
    assert_eq!(
        got,
        reference(header, len),
        "header {:?}",
        String::from_utf8_lossy(header)
    );
    check_ranges(&got, len);

    // Syntax alone decides Ignore; the spec count alone decides Excessive
    // for more than MAX_RANGES specs, which `reference` also checks.
    for other in [0, 1, len / 2, len.wrapping_add(1), u64::MAX] {
        let o = parse_range(header, other);
        assert_eq!(
            o == RangeOutcome::Ignore,
            got == RangeOutcome::Ignore,
            "len {other}"
        );
        check_ranges(&o, other);
    }
    // A file's length is at most i64::MAX (st_size); past that a multipart
    // body's length need not fit a u64, and multipart_len does not claim to.
    if len <= i64::MAX as u64 {
        check_framing(&got, len, header);
    }
});

fn check_ranges(outcome: &RangeOutcome, len: u64) {
    let ranges: &[ByteRange] = match outcome {
        RangeOutcome::Single(r) => std::slice::from_ref(r),
        RangeOutcome::Multi(set) => {
            let s = set.as_slice();
            assert!((2..=MAX_RANGES).contains(&s.len()), "{} ranges", s.len());
            for (i, a) in s.iter().enumerate() {
                for b in &s[i + 1..] {
                    assert!(a.end < b.start || b.end < a.start, "{a:?} overlaps {b:?}");
                }
            }
            let total: u128 = s.iter().map(|r| u128::from(r.len())).sum();
            assert!(total <= u128::from(len));
            s
        }
        _ => &[],
    };
    for r in ranges {
        assert!(r.start <= r.end && r.end < len, "{r:?} for {len} bytes");
    }
}

fn check_framing(outcome: &RangeOutcome, len: u64, header: &[u8]) {
    let seed = header
        .iter()
        .fold(len, |h, &b| h.rotate_left(5) ^ u64::from(b));
    let b = boundary(seed);
    assert!(b.iter().all(|c| c.is_ascii_hexdigit()));
    let mut buf = [0u8; CONTENT_RANGE_MAX];
    match outcome {
        RangeOutcome::Single(r) => {
            let text = content_range(*r, len, &mut buf);
            assert_eq!(
                text,
                format!("bytes {}-{}/{len}", r.start, r.end).as_bytes()
            );
        }
        RangeOutcome::Multi(set) => {
            for content_type in [&b""[..], b"text/html; charset=utf-8"] {
                let mut out = Vec::new();
                let mut body = 0u64;
                for r in set.as_slice() {
                    write_part_head(&mut out, &b, content_type, *r, len);
                    body += r.len();
                }
                write_closing(&mut out, &b);
                assert_eq!(
                    multipart_len(set, &b, content_type, len),
                    out.len() as u64 + body,
                    "multipart_len"
                );
            }
        }
        _ => {}
    }
}

fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

/// `1*DIGIT` that fits a u64; `str::parse` alone would take a `+`.
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The module docs' algorithm, written plainly with strings and u128.
fn reference(header: &[u8], len: u64) -> RangeOutcome {
    // A byte past ASCII lies before `bytes=` or inside some list element,
    // which is then not a valid spec; the parser checks the syntax of every
    // element, even past the cap, so such a header is always ignored.
    let Ok(h) = std::str::from_utf8(header) else {
        return RangeOutcome::Ignore;
    };
    let h = trim(h);
    let Some(set) = h
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("bytes="))
        .map(|_| &h[6..])
    else {
        return RangeOutcome::Ignore;
    };
    let mut resolved: Vec<(u64, u64)> = Vec::new();
    let mut specs = 0;
    for elem in set.split(',').map(trim).filter(|e| !e.is_empty()) {
        let Some((first, last)) = elem.split_once('-') else {
            return RangeOutcome::Ignore;
        };
        let (start, end): (u128, u128) = match (first.is_empty(), last.is_empty()) {
            (true, true) => return RangeOutcome::Ignore,
            (true, false) => {
                let Some(n) = number(last) else {
                    return RangeOutcome::Ignore;
                };
                (
                    u128::from(len).saturating_sub(u128::from(n)),
                    u128::from(len),
                )
            }
            (false, true) => {
                let Some(a) = number(first) else {
                    return RangeOutcome::Ignore;
                };
                (u128::from(a), u128::from(len))
            }
            (false, false) => {
                let (Some(a), Some(b)) = (number(first), number(last)) else {
                    return RangeOutcome::Ignore;
                };
                if b < a {
                    return RangeOutcome::Ignore;
                }
                (u128::from(a), (u128::from(b) + 1).min(u128::from(len)))
            }
        };
        specs += 1;
        // Half-open [start, end); empty means unsatisfiable (this covers
        // `-0`, a start at or past the end, and len 0).
        if start < end {
            resolved.push((start as u64, (end - 1) as u64));
        }
    }
    if specs == 0 {
        return RangeOutcome::Ignore;
    }
    if specs > MAX_RANGES {
        return RangeOutcome::Excessive;
    }
    match resolved[..] {
        [] => RangeOutcome::Unsatisfiable,
        [(start, end)] => RangeOutcome::Single(ByteRange { start, end }),
        _ => {
            for (i, a) in resolved.iter().enumerate() {
                if resolved[i + 1..].iter().any(|b| a.0 <= b.1 && b.0 <= a.1) {
                    return RangeOutcome::Excessive;
                }
            }
            // RangeSet cannot be built from outside: compare through the
            // parser's own Multi, range by range.
            match parse_range(header, len) {
                RangeOutcome::Multi(set) => {
                    let got: Vec<(u64, u64)> =
                        set.as_slice().iter().map(|r| (r.start, r.end)).collect();
                    assert_eq!(got, resolved, "Multi ranges");
                    RangeOutcome::Multi(set)
                }
                other => panic!("reference has {resolved:?}, parser {other:?}"),
            }
        }
    }
}
