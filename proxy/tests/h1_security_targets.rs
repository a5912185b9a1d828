//! The request line: request-target forms (RFC 9112 §3.2), methods and
//! versions. Each case is followed by a pipelined request; see
//! `common/security.rs`.

mod common;

use common::security::{case, Bench, Case, Want::*};

#[rustfmt::skip]
const TARGETS: &[Case] = &[
    case("absolute-form", b"GET http://t/c HTTP/1.1\r\nHost: t\r\n\r\n", Passed(b"")),
    case("absolute-form https", b"GET https://t/c HTTP/1.1\r\nHost: t\r\n\r\n", Passed(b"")),
    case("absolute-form, other scheme", b"GET ftp://t/c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("absolute-form without authority", b"GET http:///c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("absolute-form with userinfo", b"GET http://u@t/c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("authority-form without CONNECT", b"GET t:80 HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("asterisk-form without OPTIONS", b"GET * HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("CONNECT with origin-form", b"CONNECT /c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("relative path", b"GET c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("fragment", b"GET /c#frag HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("space inside the target", b"GET /c d HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("non-ASCII target", b"GET /c\xff HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("NUL in the target", b"GET /c\x00 HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("empty target", b"GET  HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
];

#[rustfmt::skip]
const REQUEST_LINE: &[Case] = &[
    case("HTTP/0.9", b"GET /c\r\n\r\n", Refused(400)),
    // A later 1.x is served as 1.1 (RFC 9110 §2.5), as nginx and lighttpd do.
    case("HTTP/1.2", b"GET /c HTTP/1.2\r\nHost: t\r\n\r\n", Passed(b"")),
    case("HTTP/2.1 over HTTP/1 syntax", b"GET /c HTTP/2.1\r\nHost: t\r\n\r\n", Refused(505)),
    case("HTTP/2.0", b"GET /c HTTP/2.0\r\nHost: t\r\n\r\n", Refused(505)),
    case("lowercase version", b"GET /c http/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("two spaces", b"GET  /c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("trailing space", b"GET /c HTTP/1.1 \r\nHost: t\r\n\r\n", Refused(400)),
    case("tab as separator", b"GET\t/c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("empty method", b" /c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("method with a delimiter", b"GE(T /c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("five empty lines first", b"\r\n\r\n\r\n\r\n\r\nGET /c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("bare CR before the request line", b"\rGET /c HTTP/1.1\r\nHost: t\r\n\r\n", Refused(400)),
    case("four empty lines first pass", b"\r\n\r\n\n\r\nGET /c HTTP/1.1\r\nHost: t\r\n\r\n", Passed(b"")),
];

#[test]
fn request_target_forms() {
    Bench::start("").run(TARGETS);
}

#[test]
fn request_line_syntax() {
    Bench::start("").run(REQUEST_LINE);
}

#[test]
fn absolute_form_authority_wins_over_host() {
    // RFC 9112 §3.2.2: the target's authority, not the Host field, names
    // the host; the upstream gets origin-form and that host.
    let bench = Bench::start("");
    let case = case(
        "absolute-form, other Host",
        b"GET http://a.example/c?q=1 HTTP/1.1\r\nHost: b.example\r\n\r\n",
        Passed(b""),
    );
    bench.run(&[case]);
    let req = bench
        .rec
        .requests()
        .into_iter()
        .find(|r| r.target.starts_with("/c"))
        .unwrap();
    assert_eq!(req.target, "/c?q=1");
    assert_eq!(req.header("host"), ["a.example"]);
}

#[test]
fn options_asterisk_is_answered_not_rewritten() {
    // `OPTIONS *` asks about the server, not a resource: it must not reach
    // the upstream as a request for `/`.
    let bench = Bench::start("");
    let status = bench.status_of(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(status, 200);
    assert!(
        bench.rec.requests().iter().all(|r| r.target != "/"),
        "{:?}",
        bench.rec.requests()
    );
}

#[test]
fn connect_is_not_implemented_and_closes() {
    // What follows a CONNECT is tunnel data: it must never be read as a
    // request, so the pipelined request must not run.
    let bench = Bench::start("");
    bench.run(&[case(
        "CONNECT authority-form",
        b"CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n",
        Refused(501),
    )]);
}
