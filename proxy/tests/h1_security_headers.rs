//! Header hygiene: whitespace before the colon, obs-fold, bare CR or LF,
//! NUL and other controls, empty and invalid names, Host rules. Each case is
//! followed by a pipelined request; see `common/security.rs`.

mod common;

use common::security::{case, Bench, Case, Want::*};

#[rustfmt::skip]
const HYGIENE: &[Case] = &[
    case("space before colon", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A : 1\r\n\r\n", Refused(400)),
    case("tab before colon", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A\t: 1\r\n\r\n", Refused(400)),
    case("space before colon of Host", b"GET /c HTTP/1.1\r\nHost : t\r\n\r\n", Refused(400)),
    case("obs-fold with space", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n 2\r\n\r\n", Refused(400)),
    case("obs-fold with tab", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\t2\r\n\r\n", Refused(400)),
    case("whitespace before the first field", b"GET /c HTTP/1.1\r\n Host: t\r\n\r\n", Refused(400)),
    case("bare CR inside a value", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: 1\r2\r\n\r\n", Refused(400)),
    case("bare CR ends a field line", b"GET /c HTTP/1.1\r\nHost: t\rX-A: 1\r\n\r\n", Refused(400)),
    case("bare CR ends the request line", b"GET /c HTTP/1.1\rHost: t\r\n\r\n", Refused(400)),
    case("CR CR LF", b"GET /c HTTP/1.1\r\nHost: t\r\r\n\r\n", Refused(400)),
    case("NUL in a value", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: 1\x002\r\n\r\n", Refused(400)),
    case("NUL in a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX\x00A: 1\r\n\r\n", Refused(400)),
    case("DEL in a value", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: 1\x7f\r\n\r\n", Refused(400)),
    case("SOH in a value", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: \x01\r\n\r\n", Refused(400)),
    case("vertical tab in a value", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: a\x0bb\r\n\r\n", Refused(400)),
    case("empty name", b"GET /c HTTP/1.1\r\nHost: t\r\n: 1\r\n\r\n", Refused(400)),
    case("space inside a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX A: 1\r\n\r\n", Refused(400)),
    case("parenthesis in a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX(A): 1\r\n\r\n", Refused(400)),
    case("quote in a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX\"A: 1\r\n\r\n", Refused(400)),
    case("slash in a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX/A: 1\r\n\r\n", Refused(400)),
    case("brace in a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX{A}: 1\r\n\r\n", Refused(400)),
    case("equals sign in a name", b"GET /c HTTP/1.1\r\nHost: t\r\nX=A: 1\r\n\r\n", Refused(400)),
    case("non-ASCII name", b"GET /c HTTP/1.1\r\nHost: t\r\nX\xc3\xa9: 1\r\n\r\n", Refused(400)),
    case("line without a colon", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A 1\r\n\r\n", Refused(400)),
    case("obs-text in a value passes", b"GET /c HTTP/1.1\r\nHost: t\r\nX-A: caf\xc3\xa9\r\n\r\n", Passed(b"")),
    case("bare LF line ends are read as CRLF", b"GET /c HTTP/1.1\nHost: t\nX-A: 1\n\n", Passed(b"")),
];

#[rustfmt::skip]
const HOST: &[Case] = &[
    case("Host twice", b"GET /c HTTP/1.1\r\nHost: t\r\nHost: t\r\n\r\n", Refused(400)),
    case("Host twice, other case", b"GET /c HTTP/1.1\r\nHost: t\r\nhOST: u\r\n\r\n", Refused(400)),
    case("Host missing on 1.1", b"GET /c HTTP/1.1\r\nX-A: 1\r\n\r\n", Refused(400)),
    case("Host with userinfo", b"GET /c HTTP/1.1\r\nHost: user@t\r\n\r\n", Refused(400)),
    case("Host with a space", b"GET /c HTTP/1.1\r\nHost: t u\r\n\r\n", Refused(400)),
    case("Host with a path", b"GET /c HTTP/1.1\r\nHost: t/x\r\n\r\n", Refused(400)),
    case("Host with a bad port", b"GET /c HTTP/1.1\r\nHost: t:8x\r\n\r\n", Refused(400)),
    case("Host with two ports", b"GET /c HTTP/1.1\r\nHost: t:80:80\r\n\r\n", Refused(400)),
    case("Host list", b"GET /c HTTP/1.1\r\nHost: t, u\r\n\r\n", Refused(400)),
    case("Host missing on 1.0 passes", b"GET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", Passed(b"")),
    case("Host empty passes", b"GET /c HTTP/1.1\r\nHost: \r\n\r\n", Passed(b"")),
    case("Host IPv6 literal passes", b"GET /c HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", Passed(b"")),
];

#[test]
fn header_hygiene() {
    Bench::start("").run(HYGIENE);
}

#[test]
fn host_rules() {
    Bench::start("").run(HOST);
}

#[test]
fn accepted_heads_go_upstream_in_one_reading() {
    let bench = Bench::start("");
    bench.run(&HYGIENE[HYGIENE.len() - 2..]);
    let reqs = bench.rec.requests();
    let obs_text = reqs.iter().find(|r| !r.header("x-a").is_empty()).unwrap();
    assert_eq!(obs_text.header("x-a"), ["caf\u{e9}"]);
    // The bare-LF request reaches the upstream as CRLF lines (the recorder
    // refuses bare LF), with its one field.
    let last = reqs.iter().rev().find(|r| r.target == "/c").unwrap();
    assert_eq!(last.header("x-a"), ["1"]);
    assert_eq!(last.header("host"), ["t"]);
}
