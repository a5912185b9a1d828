//! The path normalizer (`ringside_http::path`).
//!
//! The input is a request path. Beyond "no panic", checked in both
//! encoded-slash modes:
//! - an accepted path normalizes to one that starts with `/`, holds no
//!   `//`, no `.` or `..` segment, and no escape of an unreserved character;
//!   normalizing it again changes nothing (idempotence);
//! - `Ok(false)` ("already normal") is given exactly when the output would
//!   equal the input;
//! - fully percent-decoding the output gives the same bytes as fully
//!   percent-decoding the input and resolving its dot segments: the path
//!   routed on names the resource a decoding backend would find;
//! - with encoded slashes passed on, the routing form holds none and is
//!   normal too;
//! - a refused input leaves the output buffer as it was.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside_http::path::{decode_slashes_into, has_encoded_slash, normalize_into, EncodedSlash};

fuzz_target!(|data: &[u8]| {
    for mode in [EncodedSlash::Reject, EncodedSlash::Pass] {
        check(data, mode);
    }
});

fn check(raw: &[u8], mode: EncodedSlash) {
    let mut out = b"keep".to_vec();
    let normal = match normalize_into(raw, mode, &mut out) {
        Ok(true) => out[4..].to_vec(),
        Ok(false) => {
            assert_eq!(out, b"keep", "Ok(false) wrote");
            raw.to_vec()
        }
        Err(_) => {
            assert_eq!(out, b"keep", "a refusal wrote");
            return;
        }
    };
    if out.len() > 4 {
        assert_ne!(&out[4..], raw, "Ok(true) with an unchanged path");
    }
    assert_normal(&normal);
    let mut again = Vec::new();
    assert_eq!(normalize_into(&normal, mode, &mut again), Ok(false), "not idempotent");
    if mode == EncodedSlash::Reject {
        assert_eq!(decoded(&normal), resolve(&decoded(raw)));
    }
    if has_encoded_slash(&normal) {
        let mut route = Vec::new();
        decode_slashes_into(&normal, &mut route).map(|()| {
            assert!(!has_encoded_slash(&route));
            assert_normal(&route);
        }).ok();
    }
}

fn assert_normal(p: &[u8]) {
    assert_eq!(p.first(), Some(&b'/'));
    assert!(!p.windows(2).any(|w| w == b"//"), "{p:?}");
    for seg in p.split(|&b| b == b'/') {
        assert!(seg != b"." && seg != b"..", "{p:?}");
    }
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'%' {
            let v = u8::from_str_radix(std::str::from_utf8(&p[i + 1..i + 3]).unwrap(), 16).unwrap();
            assert!(!(v.is_ascii_alphanumeric() || b"-._~".contains(&v)), "{p:?}");
            assert!(p[i + 1..i + 3].iter().all(|b| !b.is_ascii_lowercase()), "{p:?}");
            i += 3;
        } else {
            i += 1;
        }
    }
}

/// Every escape decoded (the input was accepted, so each is well formed).
fn decoded(p: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'%' {
            out.push(u8::from_str_radix(std::str::from_utf8(&p[i + 1..i + 3]).unwrap(), 16).unwrap());
            i += 3;
        } else {
            out.push(p[i]);
            i += 1;
        }
    }
    out
}

/// Dot segments resolved and slashes merged, the plain way.
fn resolve(p: &[u8]) -> Vec<u8> {
    let mut segs: Vec<&[u8]> = Vec::new();
    let parts: Vec<&[u8]> = p[1..].split(|&b| b == b'/').collect();
    let mut trailing = false;
    for (i, seg) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match *seg {
            b"" => trailing = last,
            b"." => trailing = true,
            b".." => {
                segs.pop();
                trailing = true;
            }
            s => {
                segs.push(s);
                trailing = false;
            }
        }
    }
    let mut out = b"/".to_vec();
    out.extend(segs.join(&b'/'));
    if trailing && !segs.is_empty() {
        out.push(b'/');
    }
    out
}
