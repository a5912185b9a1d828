//! Limits: request line, head size, header count, body (declared and
//! chunked), each refused with its status before anything goes upstream,
//! and a request just inside each limit still served. Each case is
//! followed by a pipelined request; see `common/security.rs`.

mod common;

use common::security::{case, Bench, Case, Want::*};

const LIMITS: &str =
    "[limits]\nmax_request_line = 1024\nmax_head = \"4k\"\nmax_headers = 20\nmax_body = 1024\n";

fn leak(v: Vec<u8>) -> &'static [u8] {
    v.leak()
}

fn get_with(path_len: usize, headers: &[String]) -> &'static [u8] {
    let mut r = format!("GET /{} HTTP/1.1\r\nHost: t\r\n", "p".repeat(path_len - 1));
    for h in headers {
        r.push_str(h);
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    leak(r.into_bytes())
}

fn chunked(sizes: &[usize]) -> (&'static [u8], &'static [u8]) {
    let mut r = b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let mut body = Vec::new();
    for &n in sizes {
        r.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        r.extend(std::iter::repeat_n(b'b', n));
        r.extend_from_slice(b"\r\n");
        body.extend(std::iter::repeat_n(b'b', n));
    }
    r.extend_from_slice(b"0\r\n\r\n");
    (leak(r), leak(body))
}

fn cases() -> Vec<Case> {
    // "GET " + target + " HTTP/1.1" is the request line.
    let line_fits = 1024 - "GET  HTTP/1.1".len();
    let many = |n: usize| (0..n).map(|i| format!("X-{i}: v")).collect::<Vec<_>>();
    let (ok_chunked, ok_body) = chunked(&[512, 511, 1]);
    let (big_chunked, _) = chunked(&[512, 512, 1]);
    let cl_body = leak(vec![b'a'; 1024]);
    let mut cl_ok = b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n".to_vec();
    cl_ok.extend_from_slice(cl_body);
    vec![
        case(
            "request line at the limit",
            get_with(line_fits, &[]),
            Passed(b""),
        ),
        case(
            "request line over the limit",
            get_with(line_fits + 1, &[]),
            Refused(414),
        ),
        case(
            "request line far over the limit",
            get_with(8000, &[]),
            Refused(414),
        ),
        case(
            "19 fields (20 with Host)",
            get_with(2, &many(19)),
            Passed(b""),
        ),
        case("21 fields", get_with(2, &many(20)), Refused(431)),
        case(
            "one field over the head size",
            get_with(2, &[format!("X-Big: {}", "v".repeat(4100))]),
            Refused(431),
        ),
        case(
            "many fields over the head size",
            get_with(
                2,
                &[
                    format!("X-A: {}", "v".repeat(2000)),
                    format!("X-B: {}", "v".repeat(2100)),
                ],
            ),
            Refused(431),
        ),
        case(
            "Content-Length at the body limit",
            leak(cl_ok),
            Passed(cl_body),
        ),
        case(
            "Content-Length over the body limit",
            b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n",
            Refused(413),
        ),
        case(
            "Content-Length over the limit, 100-continue",
            b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n",
            Refused(413),
        ),
        case(
            "chunked body at the body limit",
            ok_chunked,
            Passed(ok_body),
        ),
        case(
            "chunked body over the body limit",
            big_chunked,
            Refused(413),
        ),
        case(
            "one chunk over the body limit",
            b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n401\r\n",
            Refused(413),
        ),
    ]
}

#[test]
fn limits_refuse_before_the_upstream_sees_anything() {
    Bench::start(LIMITS).run(&cases());
}
