//! The request-head parser (`ringside_http::h1::parse`).
//!
//! The input is raw bytes from a client. Beyond "no panic", checked under the
//! default limits and under tight ones (so the 414/431/413 paths are reached
//! with short inputs):
//! - a complete head lies within the input and within `max_head`; every span
//!   lies within `head_len`; the host is the `Host` field, or the authority
//!   of an absolute-form target (RFC 9112 §3.2.2); the head ends in LF; the
//!   request line, header count and body length respect the limits; framing
//!   agrees with the `Content-Length`/`Transfer-Encoding` fields;
//! - prefixes: the parser is given "everything read so far", so reading more
//!   must never change its mind. Along growing prefixes the answers are
//!   "need more" zero or more times, then either the same complete head from
//!   `head_len` on, or an error from then on. A head that completes is never
//!   refused on a shorter prefix, and never completes earlier;
//! - `parse_head_into` on a slot that held another head gives what
//!   `parse_head` gives on a fresh one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside_http::h1::{parse_head, parse_head_into, HeadError};
use ringside_http::{BodyKind, Limits, Method, RequestHead as ParsedHead, Version};

const TIGHT: Limits = Limits {
    max_request_line: 40,
    max_head: 200,
    max_headers: 4,
    max_body: 1000,
    max_client_connections: 0,
    client_connections_status: 429,
};

/// A head with more headers than most inputs, parsed into the reused slot
/// first, so that stale fields would show.
const STALE: &[u8] = b"POST /stale HTTP/1.1\r\nHost: stale\r\nContent-Length: 9\r\n\
Expect: 100-continue\r\nConnection: close\r\n\r\n";

type Outcome = Result<Option<ParsedHead>, HeadError>;

fuzz_target!(|data: &[u8]| {
    for limits in [Limits::default(), TIGHT] {
        check(data, &limits);
    }
});

fn check(buf: &[u8], limits: &Limits) {
    let full = parse_head(buf, limits);
    if let Ok(Some(h)) = &full {
        check_head(buf, h, limits);
    }
    check_reused_slot(buf, limits, &full);
    check_prefixes(buf, limits, &full);
}

fn check_reused_slot(buf: &[u8], limits: &Limits, full: &Outcome) {
    let mut slot = ParsedHead::empty();
    assert_eq!(
        parse_head_into(STALE, &Limits::default(), &mut slot),
        Ok(true)
    );
    match (parse_head_into(buf, limits, &mut slot), full) {
        // Debug shows the live fields only, which is what callers see.
        (Ok(true), Ok(Some(h))) => assert_eq!(format!("{slot:?}"), format!("{h:?}")),
        (Ok(false), Ok(None)) => {}
        (Err(a), Err(b)) => assert_eq!(a, *b),
        (got, want) => panic!("reused slot gave {got:?}, fresh parse {want:?}"),
    }
}

/// Prefix lengths to try: all of them for short inputs, otherwise a spread
/// plus the lengths around the end of the head.
fn prefix_lengths(len: usize, full: &Outcome) -> Vec<usize> {
    if len <= 300 {
        return (0..len).collect();
    }
    let mut v: Vec<usize> = (0..32).map(|i| i * len / 32).collect();
    v.extend((0..16).chain(len - 16..len));
    if let Ok(Some(h)) = full {
        let n = h.head_len;
        v.extend([n.saturating_sub(2), n.saturating_sub(1), n, n + 1]);
    }
    v.retain(|&k| k < len);
    v.sort_unstable();
    v.dedup();
    v
}

fn check_prefixes(buf: &[u8], limits: &Limits, full: &Outcome) {
    // Along growing prefixes: 0 = need more, 1 = complete, 2 = error.
    let mut phase = 0;
    for k in prefix_lengths(buf.len(), full) {
        let got = parse_head(&buf[..k], limits);
        match (&got, full) {
            (Ok(None), Ok(Some(h))) => assert!(
                k < h.head_len,
                "prefix of {k} bytes is partial, but the head ends at {}",
                h.head_len
            ),
            (Ok(None), _) => {}
            (Ok(Some(p)), Ok(Some(h))) => {
                assert_eq!(p, h, "prefix of {k} bytes completes differently");
                assert!(p.head_len <= k);
            }
            (Ok(Some(p)), _) => {
                panic!("prefix of {k} bytes completes ({p:?}), the whole gives {full:?}")
            }
            (Err(e), Ok(_)) => {
                panic!("prefix of {k} bytes refused ({e:?}), the whole gives {full:?}")
            }
            (Err(_), Err(_)) => {}
        }
        let now = match got {
            Ok(None) => 0,
            Ok(Some(_)) => 1,
            Err(_) => 2,
        };
        assert!(
            now >= phase && !(phase == 1 && now == 2),
            "prefix of {k} bytes went from phase {phase} to {now}"
        );
        phase = now;
    }
}

/// Offset of `part`, a subslice of `buf`.
fn offset(buf: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - buf.as_ptr() as usize
}

fn check_head(buf: &[u8], h: &ParsedHead, limits: &Limits) {
    let n = h.head_len;
    assert!(n <= buf.len() && n <= limits.max_head.min(u16::MAX as usize));
    assert_eq!(buf[n - 1], b'\n', "a head ends with its empty line");
    for span in [h.method_span, h.target].into_iter().chain(h.host) {
        assert!(span.start <= span.end && span.end as usize <= n, "{span:?}");
    }
    assert!(!h.target.is_empty() && !h.method_span.is_empty());
    assert!(h.method_span.end <= h.target.start);
    let line = h.target.end as usize + 9 - h.method_span.start as usize;
    assert!(
        line <= limits.max_request_line,
        "request line of {line} bytes"
    );
    let method = h.method_str(buf);
    let named = [
        (Method::Get, &b"GET"[..]),
        (Method::Head, b"HEAD"),
        (Method::Post, b"POST"),
        (Method::Put, b"PUT"),
        (Method::Delete, b"DELETE"),
        (Method::Options, b"OPTIONS"),
        (Method::Patch, b"PATCH"),
        (Method::Connect, b"CONNECT"),
        (Method::Trace, b"TRACE"),
    ];
    match named.iter().find(|(_, text)| *text == method) {
        Some((m, _)) => assert_eq!(h.method, *m),
        None => assert_eq!(h.method, Method::Other),
    }

    assert!(h.header_count() <= limits.max_headers);
    assert_eq!(h.headers(buf).count(), h.header_count());
    let mut content_length = None;
    let mut chunked = false;
    for (name, value) in h.headers(buf) {
        assert!(!name.is_empty());
        assert!(offset(buf, name) + name.len() <= n);
        assert!(offset(buf, value) + value.len() <= n);
        assert!(offset(buf, name) >= h.target.end as usize);
        assert!(!value.starts_with(b" ") && !value.starts_with(b"\t"));
        assert!(!value.ends_with(b" ") && !value.ends_with(b"\t"));
        if name.eq_ignore_ascii_case(b"content-length") {
            assert!(
                content_length.is_none(),
                "two Content-Length fields accepted"
            );
            let text = std::str::from_utf8(value).expect("digits");
            content_length = Some(text.parse::<u64>().expect("1*DIGIT"));
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Other codings before chunked are a 501, never accepted.
            assert!(value.eq_ignore_ascii_case(b"chunked"), "{value:?}");
            chunked = true;
        }
    }
    if h.version == Version::Http11 {
        assert!(h.header(buf, "host").is_some(), "HTTP/1.1 without Host");
    }
    let target = h.target(buf);
    let absolute = !target.starts_with(b"/") && target.windows(3).any(|w| w == b"://");
    match h.host {
        // RFC 9112 §3.2.2: an absolute-form target's authority is the host.
        Some(host) if absolute => {
            assert!(!host.is_empty());
            assert!(host.start >= h.target.start && host.end <= h.target.end);
            let after = &buf[host.end as usize..h.target.end as usize];
            assert!(after.is_empty() || after[0] == b'/' || after[0] == b'?');
            assert!(buf[..host.start as usize].ends_with(b"://"));
        }
        Some(host) => assert_eq!(h.header(buf, "host"), Some(host.get(buf))),
        None => {
            assert_eq!(h.version, Version::Http10);
            assert_eq!(h.header(buf, "host"), None);
            assert!(!absolute);
        }
    }
    match h.body {
        BodyKind::Stream => {
            assert!(chunked && content_length.is_none());
            assert_eq!(h.version, Version::Http11);
        }
        BodyKind::Length(len) => {
            assert!(!chunked && content_length == Some(len));
            assert!(len > 0 && len <= limits.max_body);
        }
        BodyKind::Empty => assert!(!chunked && content_length.unwrap_or(0) == 0),
    }
    if h.expect_continue {
        assert_eq!(h.version, Version::Http11);
    }
    if h.version == Version::Http10 && h.header(buf, "connection").is_none() {
        assert!(!h.keep_alive);
    }
}
