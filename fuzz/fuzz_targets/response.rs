//! The upstream response-head parser (`ringside_http::h1::response`).
//!
//! The input is raw bytes from an upstream. Checked, for a response to GET
//! and to HEAD, with a roomy and a tight `max_head`:
//! - a complete head lies within the input and `max_head`, ends in LF, and
//!   every header span lies within it; the status is in `100..=599`; the
//!   body framing follows the status and the request (no body for HEAD, 1xx,
//!   204, 304), a length is at most `MAX_CONTENT_LENGTH`, a body until close
//!   or a 101 is never reusable; the `Connection` tokens of an accepted head
//!   never overflow;
//! - growing prefixes: "need more", then the same head from `head_len` on or
//!   an error from then on, never a refusal of a prefix of a head that
//!   completes;
//! - the same bytes as a response to HEAD: accepted whenever they are as a
//!   response to GET, with the same fields and no body; a HEAD refusal is
//!   also a GET refusal;
//! - a reused slot gives what a fresh one does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside_http::h1::response::{
    parse_response, RespBody, RespError, ResponseHead, MAX_CONTENT_LENGTH,
};

/// Parsed into the reused slot first, so that stale fields would show.
const STALE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";

type Outcome = Result<Option<ResponseHead>, RespError>;

fn parse(buf: &[u8], head: bool, max_head: usize) -> Outcome {
    let mut out = ResponseHead::empty();
    parse_response(buf, head, max_head, &mut out).map(|done| done.then_some(out))
}

fuzz_target!(|data: &[u8]| {
    for max_head in [8192, 80] {
        let get = parse(data, false, max_head);
        let head = parse(data, true, max_head);
        for (outcome, was_head) in [(&get, false), (&head, true)] {
            if let Ok(Some(h)) = outcome {
                check_head(data, h, was_head, max_head);
            }
            check_reused_slot(data, was_head, max_head, outcome);
            check_prefixes(data, was_head, max_head, outcome);
        }
        match (&get, &head) {
            (Ok(Some(g)), Ok(Some(h))) => {
                assert_eq!(h.body, RespBody::None);
                assert_eq!(
                    (g.status, g.http10, g.head_len),
                    (h.status, h.http10, h.head_len)
                );
                assert_eq!(g.declared_length, h.declared_length);
                assert!(g.fields.iter(data).eq(h.fields.iter(data)));
            }
            (Ok(Some(_)), other) => panic!("accepted for GET, {other:?} for HEAD"),
            (Ok(None), Ok(None)) | (Err(_), _) => {}
            (Ok(None), other) => panic!("partial for GET, {other:?} for HEAD"),
        }
    }
});

fn check_reused_slot(buf: &[u8], head: bool, max_head: usize, fresh: &Outcome) {
    let mut slot = ResponseHead::empty();
    assert_eq!(parse_response(STALE, false, 8192, &mut slot), Ok(true));
    match (parse_response(buf, head, max_head, &mut slot), fresh) {
        // Debug shows the live header slots only, as callers see them.
        (Ok(true), Ok(Some(h))) => assert_eq!(format!("{slot:?}"), format!("{h:?}")),
        (Ok(false), Ok(None)) => {}
        (Err(a), Err(b)) => assert_eq!(a, *b),
        (got, want) => panic!("reused slot gave {got:?}, fresh parse {want:?}"),
    }
}

fn check_prefixes(buf: &[u8], head: bool, max_head: usize, full: &Outcome) {
    let lengths: Vec<usize> = if buf.len() <= 300 {
        (0..buf.len()).collect()
    } else {
        let mut v: Vec<usize> = (0..32).map(|i| i * buf.len() / 32).collect();
        if let Ok(Some(h)) = full {
            v.extend([h.head_len - 1, h.head_len]);
        }
        v.sort_unstable();
        v.dedup();
        v
    };
    // Along growing prefixes: 0 = need more, 1 = complete, 2 = error.
    let mut phase = 0;
    for k in lengths {
        let got = parse(&buf[..k], head, max_head);
        match (&got, full) {
            (Ok(None), Ok(Some(h))) => assert!(k < h.head_len),
            (Ok(None), _) => {}
            (Ok(Some(p)), Ok(Some(h))) => {
                assert_eq!(p, h, "prefix of {k} bytes completes differently")
            }
            (Ok(Some(_)), _) => panic!("prefix of {k} bytes completes, the whole gives {full:?}"),
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
        assert!(now >= phase && !(phase == 1 && now == 2));
        phase = now;
    }
}

fn offset(buf: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - buf.as_ptr() as usize
}

fn check_head(buf: &[u8], h: &ResponseHead, was_head: bool, max_head: usize) {
    let n = h.head_len;
    assert!(n <= buf.len() && n <= max_head);
    assert_eq!(buf[n - 1], b'\n');
    assert!((100..=599).contains(&h.status));
    for (name, value) in h.fields.iter(buf) {
        assert!(!name.is_empty());
        assert!(offset(buf, name) + name.len() <= n);
        assert!(offset(buf, value) + value.len() <= n);
    }
    let bodiless = was_head || (100..200).contains(&h.status) || matches!(h.status, 204 | 304);
    assert_eq!(h.body == RespBody::None, bodiless, "{h:?}");
    match h.body {
        RespBody::Length(len) => {
            assert!(len <= MAX_CONTENT_LENGTH);
            assert_eq!(h.declared_length, Some(len));
        }
        RespBody::Chunked => assert!(!h.http10 && h.declared_length.is_none()),
        RespBody::UntilClose => assert!(!h.reusable && h.declared_length.is_none()),
        RespBody::None => {}
    }
    if h.status == 101 {
        assert!(!h.reusable);
    }
    if let Some(len) = h.declared_length {
        assert!(len <= MAX_CONTENT_LENGTH);
    }
    assert!(!h.connection_tokens(buf).overflowed());
    assert_eq!(
        h.is_interim(),
        (100..200).contains(&h.status) && h.status != 101
    );
}
