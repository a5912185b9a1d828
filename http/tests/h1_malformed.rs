//! Malformed or ambiguous requests: each gets its status, the connection
//! closes, and nothing pipelined behind it runs.

mod common;

use std::time::Duration;

use ringside_runtime::config::BackendChoice;

const MALFORMED: &[(&str, &[u8], u16)] = &[
    ("CL with TE", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("TE with CL", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400),
    ("duplicate CL", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("CL list", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\n\r\nabc", 400),
    ("CL non-digit", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3a\r\n\r\nabc", 400),
    ("CL signed", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc", 400),
    ("CL overflow", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400),
    ("TE gzip, chunked", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    ("TE chunked twice", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("TE identity", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n", 400),
    ("TE on HTTP/1.0", b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("space before colon", b"GET /hello HTTP/1.1\r\nHost : t\r\n\r\n", 400),
    ("obs-fold", b"GET /hello HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\n\r\n", 400),
    ("bare CR in value", b"GET /hello HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n", 400),
    ("bare CR line end", b"GET /hello HTTP/1.1\rHost: t\r\n\r\n", 400),
    ("NUL in value", b"GET /hello HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n", 400),
    ("missing Host", b"GET /hello HTTP/1.1\r\n\r\n", 400),
    ("two Hosts", b"GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("bad Host", b"GET /hello HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
    ("bad target", b"GET hello HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    ("space in method", b"G ET /hello HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    ("HTTP/2.0 line", b"GET /hello HTTP/2.0\r\nHost: t\r\n\r\n", 505),
    ("invalid chunk size", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk size overflow", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", 400),
    ("chunk missing CRLF", b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", 400),
    ("unknown Expect", b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nExpect: teapot\r\n\r\na", 417),
];

fn malformed_requests_get_status_and_close(b: BackendChoice) {
    let srv = common::start(b);
    for (name, req, status) in MALFORMED {
        let mut c = srv.connect();
        // A valid request pipelined behind the bad one must never run.
        let mut bytes = req.to_vec();
        bytes.extend_from_slice(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
        c.send(&bytes);
        let r = c
            .try_response(false)
            .unwrap_or_else(|e| panic!("{name}: no response: {e}"));
        assert_eq!(r.status, *status, "{name}");
        assert_eq!(r.header("Connection"), Some("close"), "{name}");
        c.expect_closed();
    }
}

fn request_line_too_long_is_414(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    let long = "a".repeat(9000);
    c.send(format!("GET /{long} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    assert_eq!(c.response(false).status, 414);
    c.expect_closed();
}

fn head_too_large_is_431(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    let mut req = b"GET /hello HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..40 {
        req.extend_from_slice(format!("X-Filler-{i}: {}\r\n", "v".repeat(500)).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    c.send(&req);
    assert_eq!(c.response(false).status, 431);
    c.expect_closed();
}

fn too_many_headers_is_431(b: BackendChoice) {
    let srv = common::start(b);
    let mut c = srv.connect();
    // Host and 100 more: one over the default of 100 (nginx's and lighttpd's).
    let mut req = b"GET /hello HTTP/1.1\r\nHost: t\r\n".to_vec();
    for i in 0..100 {
        req.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    c.send(&req);
    assert_eq!(c.response(false).status, 431);
}

fn body_over_limit_is_413(b: BackendChoice) {
    let mut cfg = common::server_config();
    cfg.limits.max_body = 1000;
    let srv = common::start_with(b, cfg);
    let mut c = srv.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n");
    assert_eq!(c.response(false).status, 413);
    c.expect_closed();
    // Chunked bodies are counted as they stream.
    let mut c = srv.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = format!("200\r\n{}\r\n", "x".repeat(0x200));
    for _ in 0..3 {
        c.send(chunk.as_bytes());
    }
    assert_eq!(c.response(false).status, 413);
    c.expect_closed();
}

fn slow_head_gets_408(b: BackendChoice) {
    let mut cfg = common::server_config();
    cfg.timeouts.header_read = Duration::from_millis(300);
    let srv = common::start_with(b, cfg);
    let mut c = srv.connect();
    // Half a head, then silence: the header timeout answers 408 and closes.
    c.send(b"GET /hello HTTP/1.1\r\nHo");
    assert_eq!(c.response(false).status, 408);
    c.expect_closed();
    // A connection that never sends a byte is closed quietly.
    let mut c = srv.connect();
    c.expect_closed();
}

fn idle_keepalive_times_out(b: BackendChoice) {
    let mut cfg = common::server_config();
    cfg.timeouts.keepalive_idle = Duration::from_millis(200);
    let srv = common::start_with(b, cfg);
    let mut c = srv.connect();
    c.send(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).status, 200);
    c.expect_closed();
}

per_backend!(
    malformed_requests_get_status_and_close,
    request_line_too_long_is_414,
    head_too_large_is_431,
    too_many_headers_is_431,
    body_over_limit_is_413,
    slow_head_gets_408,
    idle_keepalive_times_out,
);
