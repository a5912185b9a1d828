//! Table-driven tests of the request-head parser, one line per case.
use super::*;

/// The status the error type decides for a refused head.
fn status(e: HeadError) -> u16 {
    crate::Error::from(e).status()
}

/// `Ok(Some(()))` parsed, `Ok(None)` incomplete, `Err(status)` refused.
type Outcome = Result<Option<()>, u16>;

/// Parse with default limits, reduce to the status code.
fn code(input: &[u8]) -> Outcome {
    parse_head(input, &Limits::default())
        .map(|h| h.map(|_| ()))
        .map_err(status)
}

fn ok(input: &[u8]) -> RequestHead {
    match parse_head(input, &Limits::default()) {
        Ok(Some(h)) => h,
        other => panic!("{:?}: {:?}", String::from_utf8_lossy(input), other),
    }
}

const OK: Outcome = Ok(Some(()));
const MORE: Outcome = Ok(None);

#[test]
fn status_table() {
    #[rustfmt::skip]
    let cases: &[(&[u8], Outcome)] = &[
        // positive
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", OK),
        (b"GET / HTTP/1.0\r\n\r\n", OK),
        (b"GET /a/b?c=d&e HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", OK),
        (b"GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n", OK),
        (b"GET HTTPS://Example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", OK),
        (b"GET http://[::1]:80/ HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", OK),
        (b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", OK),
        (b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", OK),
        (b"OPTIONS /x HTTP/1.1\r\nHost: a\r\n\r\n", OK),
        (b"BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost:\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: xn--bcher-kva.example\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: a%2Eb\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length:  12  \r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n\r\n", OK),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", OK),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tChunked\t\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n\r\n", OK),
        (b"GET / HTTP/1.0\r\nExpect: something-else\r\n\r\n", OK),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-Any: \x80\xff obs-text\r\n\r\n", OK),
        (b"GET / HTTP/1.1\nHost: a\n\n", OK),
        (b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", OK),
        (b"\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", OK),
        // incomplete
        (b"", MORE),
        (b"\r", MORE),
        (b"\r\n", MORE),
        (b"G", MORE),
        (b"GET / HTTP/1.1\r\nHost: a\r\n", MORE),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r", MORE),
        // leading empty lines
        (b"\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b" GET / HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        // request line
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", Err(505)),
        (b"GET / HTTP/1.2\r\nHost: a\r\n\r\n", OK),
        (b"GET / HTTP/2.1\r\nHost: a\r\n\r\n", Err(505)),
        (b"GET / HTTP/3\r\nHost: a\r\n\r\n", Err(505)),
        (b"GET / HTTP/1.1x\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET / FOO/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET / http/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", Err(400)),
        (b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\rHost: a\r\n\r\n", Err(400)),
        // request-target
        (b"GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET /\xff HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET example.com:80 HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET ftp://example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET http:/example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET http://user@example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"CONNECT example.com HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"CONNECT example.com: HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"CONNECT http://example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        (b"CONNECT * HTTP/1.1\r\nHost: a\r\n\r\n", Err(400)),
        // header syntax (httparse)
        (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tc\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\rX-A: b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x01c\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x1fc\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x7fc\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: \x0bc\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A\x00: b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX(A): b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", Err(400)),
        // Host
        (b"GET / HTTP/1.1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nX-Host: a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a:80:80\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a?b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a#b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\\b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: \xc3\xa9\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: []\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a,b\r\n\r\n", OK), // sub-delims are valid in reg-name
        // Content-Length
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n", Err(413)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1048577\r\n\r\n", Err(413)),
        // Transfer-Encoding
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", Err(501)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip,, chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", Err(400)),
        (b"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", Err(400)),
        // Expect
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue-x\r\n\r\n", Err(417)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", Err(417)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect:\r\n\r\n", Err(417)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nExpect: x\r\n\r\n", Err(417)),
        // framing errors win over 413/417
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nExpect: x\r\n\r\n", Err(400)),
        (b"GET / HTTP/1.1\r\nHost: a\r\nExpect: x\r\nContent-Length: 2000000\r\n\r\n", Err(413)),
    ];
    for (i, (input, want)) in cases.iter().enumerate() {
        assert_eq!(
            code(input),
            *want,
            "case {i}: {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn keep_alive_table() {
    #[rustfmt::skip]
    let cases: &[(&[u8], bool)] = &[
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n", false),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, CLOSE\r\n\r\n", false),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", true),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n", true),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: ,,\r\n\r\n", true),
        (b"GET / HTTP/1.0\r\n\r\n", false),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true),
        (b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        (b"GET / HTTP/1.0\r\nConnection: te ,\tkeep-alive \r\n\r\n", true),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive-x\r\n\r\n", false),
    ];
    for (i, (input, want)) in cases.iter().enumerate() {
        assert_eq!(
            ok(input).keep_alive,
            *want,
            "case {i}: {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn body_table() {
    #[rustfmt::skip]
    let cases: &[(&[u8], BodyKind)] = &[
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", BodyKind::Empty),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", BodyKind::Empty),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 42\r\n\r\n", BodyKind::Length(42)),
        (b"POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 007\r\n\r\n", BodyKind::Length(7)),
        (b"POST / HTTP/1.0\r\nContent-Length: 5\r\n\r\n", BodyKind::Length(5)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", BodyKind::Stream),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTRANSFER-ENCODING: CHUNKED\r\n\r\n", BodyKind::Stream),
    ];
    for (i, (input, want)) in cases.iter().enumerate() {
        assert_eq!(ok(input).body, *want, "case {i}");
    }
}

#[test]
fn fields_and_lookup() {
    let buf: &[u8] = b"\r\nPOST http://Example.com/up?x=1 HTTP/1.1\r\nHost: example.com\r\nX-Empty:\r\nAccept:  */*  \r\nexpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc";
    let h = ok(buf);
    assert_eq!(h.head_len, buf.len() - 3);
    assert_eq!(&buf[h.head_len..], b"abc");
    assert_eq!(h.method, Method::Post);
    assert_eq!(h.method_str(buf), b"POST");
    assert_eq!(h.target(buf), b"http://Example.com/up?x=1");
    assert_eq!(h.version, Version::Http11);
    assert_eq!(h.host.map(|s| s.get(buf)), Some(&b"Example.com"[..]));
    assert!(h.expect_continue);
    assert!(h.keep_alive);
    assert_eq!(h.body, BodyKind::Length(3));
    assert_eq!(h.header_count(), 5);
    assert_eq!(h.header(buf, "accept"), Some(&b"*/*"[..]));
    assert_eq!(h.header(buf, "X-EMPTY"), Some(&b""[..]));
    assert_eq!(h.header(buf, "content-length"), Some(&b"3"[..]));
    assert_eq!(h.header(buf, "missing"), None);
    let names: Vec<&[u8]> = h.headers(buf).map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            &b"Host"[..],
            b"X-Empty",
            b"Accept",
            b"expect",
            b"Content-Length"
        ]
    );
    assert!(format!("{h:?}").contains("head_len"));
}

#[test]
fn first_header_match_wins() {
    let buf: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a: 2\r\n\r\n";
    assert_eq!(ok(buf).header(buf, "X-a"), Some(&b"1"[..]));
}

#[test]
fn methods() {
    let cases: &[(&[u8], Method)] = &[
        (b"GET", Method::Get),
        (b"HEAD", Method::Head),
        (b"POST", Method::Post),
        (b"PUT", Method::Put),
        (b"DELETE", Method::Delete),
        (b"OPTIONS", Method::Options),
        (b"PATCH", Method::Patch),
        (b"TRACE", Method::Trace),
        (b"get", Method::Other),
        (b"PROPFIND", Method::Other),
    ];
    for (m, want) in cases {
        let mut buf = m.to_vec();
        buf.extend_from_slice(b" / HTTP/1.1\r\nHost: a\r\n\r\n");
        let h = ok(&buf);
        assert_eq!(h.method, *want);
        assert_eq!(h.method_str(&buf), *m);
    }
    let buf = b"CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\n\r\n";
    assert_eq!(ok(buf).method, Method::Connect);
}

#[test]
fn every_split_point() {
    let reqs: &[&[u8]] = &[
        b"\r\nPOST /submit?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n",
        b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
    ];
    for req in reqs {
        let full = ok(req);
        assert_eq!(full.head_len, req.len());
        for cut in 0..req.len() {
            assert_eq!(
                parse_head(&req[..cut], &Limits::default()),
                Ok(None),
                "cut {cut}"
            );
        }
        // Trailing body bytes after the head change nothing.
        let mut more = req.to_vec();
        more.extend_from_slice(b"hello");
        assert_eq!(ok(&more), full);
    }
}

#[test]
fn request_line_limit() {
    let limits = Limits {
        max_request_line: 32,
        ..Limits::default()
    };
    let line = |target_len: usize| {
        let mut v = b"GET /".to_vec();
        v.resize(4 + target_len, b'a');
        v.extend_from_slice(b" HTTP/1.1");
        v
    };
    // "GET " + target + " HTTP/1.1" = 13 + target_len bytes.
    let exact = line(32 - 13);
    assert_eq!(exact.len(), 32);
    let mut req = exact.clone();
    req.extend_from_slice(b"\r\nHost: a\r\n\r\n");
    assert!(parse_head(&req, &limits).unwrap().is_some());
    // Every prefix of the exact-limit line is incomplete, not too long.
    for cut in 0..req.len() {
        assert_eq!(parse_head(&req[..cut], &limits), Ok(None), "cut {cut}");
    }

    let long = line(32 - 12);
    let mut req = long.clone();
    req.extend_from_slice(b"\r\nHost: a\r\n\r\n");
    assert_eq!(parse_head(&req, &limits), Err(HeadError::UriTooLong));
    // Incomplete, no CRLF yet, already longer than the limit.
    assert_eq!(parse_head(&long, &limits), Err(HeadError::UriTooLong));
    assert_eq!(parse_head(&long[..32], &limits), Ok(None));
    // Line complete but too long, headers incomplete.
    assert_eq!(
        parse_head(&req[..long.len() + 4], &limits),
        Err(HeadError::UriTooLong)
    );
    // Leading empty lines are not part of the request line.
    let mut req = b"\r\n\r\n".to_vec();
    req.extend_from_slice(&exact);
    req.extend_from_slice(b"\r\nHost: a\r\n\r\n");
    assert!(parse_head(&req, &limits).unwrap().is_some());
}

#[test]
fn head_size_limit() {
    let limits = Limits {
        max_head: 64,
        ..Limits::default()
    };
    let mut req = b"GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ".to_vec();
    let fixed = req.len() + 4;
    req.resize(64 - 4, b'p');
    req.extend_from_slice(b"\r\n\r\n");
    assert!(fixed < 64);
    assert_eq!(req.len(), 64);
    assert_eq!(parse_head(&req, &limits).unwrap().unwrap().head_len, 64);
    // With a body after the head it is still fine.
    let mut with_body = req.clone();
    with_body.extend_from_slice(&[b'b'; 100]);
    assert!(parse_head(&with_body, &limits).unwrap().is_some());
    // One byte more: too large, complete or not.
    let mut big = req[..req.len() - 4].to_vec();
    big.extend_from_slice(b"p\r\n\r\n");
    assert_eq!(parse_head(&big, &limits), Err(HeadError::HeadersTooLarge));
    assert_eq!(parse_head(&big[..64], &limits), Ok(None));
    assert_eq!(
        parse_head(&big[..65], &limits),
        Err(HeadError::HeadersTooLarge)
    );
    // Limits above u16 are clamped, not a panic.
    let huge = Limits {
        max_head: 1 << 20,
        max_request_line: 1 << 20,
        ..Limits::default()
    };
    let mut req = b"GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ".to_vec();
    req.resize(70_000, b'p');
    assert_eq!(parse_head(&req, &huge), Err(HeadError::HeadersTooLarge));
    req.extend_from_slice(b"\r\n\r\n");
    assert_eq!(parse_head(&req, &huge), Err(HeadError::HeadersTooLarge));
}

#[test]
fn header_count_limit() {
    let build = |n: usize| {
        let mut v = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 1..n {
            v.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        v.extend_from_slice(b"\r\n");
        v
    };
    let count = |n: usize, limits: &Limits| {
        parse_head(&build(n), limits).map(|h| h.unwrap().header_count())
    };
    // 100 by default, as nginx and lighttpd take.
    let limits = Limits::default();
    assert_eq!(count(100, &limits), Ok(100));
    assert_eq!(count(101, &limits), Err(HeadError::HeadersTooLarge));
    // Lower, and higher than the slots kept on the stack.
    let few = Limits {
        max_headers: 64,
        ..limits
    };
    assert_eq!(count(64, &few), Ok(64));
    assert_eq!(count(65, &few), Err(HeadError::HeadersTooLarge));
    let many = Limits {
        max_headers: 1000,
        max_head: 65535,
        ..limits
    };
    assert_eq!(count(101, &many), Ok(101));
    assert_eq!(count(1000, &many), Ok(1000));
    assert_eq!(count(1001, &many), Err(HeadError::HeadersTooLarge));
    // The spans of a head parsed with the larger array are right too.
    let buf = build(300);
    let head = parse_head(&buf, &many).unwrap().unwrap();
    assert_eq!(head.header(&buf, "x-299"), Some(&b"v"[..]));
    assert_eq!(head.host.map(|h| h.get(&buf)), Some(&b"a"[..]));
}

#[test]
fn later_http1_minor_is_read_as_1_1() {
    // RFC 9110 §2.5: answered as the highest 1.x the server speaks.
    for line in ["GET /x?y HTTP/1.2", "\r\nGET /x?y HTTP/1.9"] {
        let buf = format!("{line}\r\nHost: a\r\nContent-Length: 2\r\n\r\nab");
        let head = parse_head(buf.as_bytes(), &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(head.version, Version::Http11, "{line:?}");
        assert_eq!(head.target(buf.as_bytes()), b"/x?y");
        assert_eq!(head.body, BodyKind::Length(2));
        assert_eq!(&buf.as_bytes()[head.head_len..], b"ab");
    }
    let refused = |req: &[u8]| parse_head(req, &Limits::default()).map(|h| h.is_some());
    assert_eq!(
        refused(b"GET / HTTP/1.2\r\n\r\n"),
        Err(HeadError::BadRequest("missing Host header"))
    );
    assert_eq!(refused(b"GET / HTTP/1.2\r\nHost: a\r\n"), Ok(false));
    // Every prefix waits for more, as the whole does (found by fuzzing).
    for cut in 0..b"GET / HTTP/1.5\n".len() {
        assert_eq!(refused(&b"GET / HTTP/1.5\n"[..cut]), Ok(false), "cut {cut}");
    }
    assert_eq!(
        refused(b"GET / HTTP/1.56\r\n"),
        Err(HeadError::BadRequest("invalid HTTP version (httparse)"))
    );
}

#[test]
fn body_limit() {
    let limits = Limits {
        max_body: 10,
        ..Limits::default()
    };
    let req = |n: u64| format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {n}\r\n\r\n");
    assert_eq!(
        parse_head(req(10).as_bytes(), &limits)
            .unwrap()
            .unwrap()
            .body,
        BodyKind::Length(10)
    );
    assert_eq!(
        parse_head(req(11).as_bytes(), &limits),
        Err(HeadError::PayloadTooLarge)
    );
}

#[test]
fn error_status_and_display() {
    let cases = [
        (HeadError::BadRequest("x"), 400),
        (HeadError::UriTooLong, 414),
        (HeadError::HeadersTooLarge, 431),
        (HeadError::PayloadTooLarge, 413),
        (HeadError::ExpectationFailed, 417),
        (HeadError::VersionNotSupported, 505),
        (HeadError::NotImplemented, 501),
    ];
    for (e, want) in cases {
        assert_eq!(status(e), want);
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(
        HeadError::BadRequest("missing Host header").to_string(),
        "bad request: missing Host header"
    );
}

#[test]
fn reasons_name_the_rule() {
    let reason = |input: &[u8]| match parse_head(input, &Limits::default()) {
        Err(HeadError::BadRequest(r)) => r,
        other => panic!("{other:?}"),
    };
    assert!(reason(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n").contains("httparse"));
    assert!(reason(b"GET / HTTP/1.1\r\n\r\n").contains("Host"));
    assert!(
        reason(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n")
            .contains("Content-Length")
    );
}

#[test]
fn absolute_form_authority_is_the_host() {
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"GET http://a.example/x HTTP/1.1\r\nHost: b\r\n\r\n",
            b"a.example",
        ),
        (
            b"GET HTTPS://a.example:8443?q HTTP/1.1\r\nHost: b\r\n\r\n",
            b"a.example:8443",
        ),
        (
            b"GET http://[::1]:80 HTTP/1.1\r\nHost: b\r\n\r\n",
            b"[::1]:80",
        ),
        (b"GET /x HTTP/1.1\r\nHost: b\r\n\r\n", b"b"),
        (b"CONNECT a.example:443 HTTP/1.1\r\nHost: b\r\n\r\n", b"b"),
        (b"OPTIONS * HTTP/1.1\r\nHost: b\r\n\r\n", b"b"),
    ];
    for (req, host) in cases {
        let h = ok(req);
        assert_eq!(
            h.host.map(|s| s.get(req)),
            Some(*host),
            "{}",
            String::from_utf8_lossy(req)
        );
    }
    // The Host field is still required on HTTP/1.1.
    assert_eq!(
        parse_head(b"GET http://a/ HTTP/1.1\r\n\r\n", &Limits::default()).map_err(status),
        Err(400)
    );
}

#[test]
fn fragment_in_target_is_refused() {
    for req in [
        &b"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"GET http://a/#x HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        assert_eq!(
            parse_head(req, &Limits::default()).map_err(status),
            Err(400)
        );
    }
}
