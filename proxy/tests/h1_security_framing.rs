//! Request framing attacks (request smuggling): Content-Length and
//! Transfer-Encoding conflicts, their syntax, chunk sizes, chunk extensions
//! and trailers. Each case is followed by a pipelined request; see
//! `common/security.rs` for what is checked at both ends.

mod common;

use common::security::{case, Bench, Case, Want::*};

#[rustfmt::skip]
const CL_TE: &[Case] = &[
    case("CL then TE", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE then CL", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", Refused(400)),
    case("CL 0 with TE", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("CL and TE in odd case", b"POST /c HTTP/1.1\r\nHost: t\r\ncontent-length: 5\r\nTRANSFER-ENCODING: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("CL with TE identity", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: identity\r\n\r\nhello", Refused(400)),
    case("Connection names Content-Length", b"POST /c HTTP/1.1\r\nHost: t\r\nConnection: Content-Length\r\nContent-Length: 3\r\n\r\nabc", Passed(b"abc")),
    case("Connection names Transfer-Encoding", b"POST /c HTTP/1.1\r\nHost: t\r\nConnection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", Passed(b"abc")),
];

#[rustfmt::skip]
const CL_SYNTAX: &[Case] = &[
    case("CL twice, same value", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", Refused(400)),
    case("CL twice, different values", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", Refused(400)),
    case("CL list, same values", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\n\r\nabc", Refused(400)),
    case("CL list, different values", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3,4\r\n\r\nabcd", Refused(400)),
    case("CL with plus sign", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc", Refused(400)),
    case("CL negative", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: -3\r\n\r\nabc", Refused(400)),
    case("CL in hex", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 0x3\r\n\r\nabc", Refused(400)),
    case("CL decimal point", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3.0\r\n\r\nabc", Refused(400)),
    case("CL empty", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: \r\n\r\nabc", Refused(400)),
    case("CL inner space", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 1 3\r\n\r\nabc", Refused(400)),
    case("CL quoted", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: \"3\"\r\n\r\nabc", Refused(400)),
    case("CL overflows u64", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551616\r\n\r\nabc", Refused(400)),
    case("CL with leading zeros", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 0003\r\n\r\nabc", Passed(b"abc")),
    case("CL with trailing whitespace", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3 \t\r\n\r\nabc", Passed(b"abc")),
    case("CL on a GET", b"GET /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", Passed(b"abc")),
    case("CL_ look-alike is not framing", b"POST /c HTTP/1.1\r\nHost: t\r\nContent_Length: 9\r\nContent-Length: 3\r\n\r\nabc", Passed(b"abc")),
];

#[rustfmt::skip]
const TE_VARIANTS: &[Case] = &[
    case("TE twice", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE list chunked, chunked", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE unknown coding before chunked", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", Refused(501)),
    case("TE chunked not last", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE identity", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n", Refused(400)),
    case("TE unknown token", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE leading comma", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: , chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE trailing comma", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked,\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE with a parameter", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE quoted", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE on HTTP/1.0", b"POST /c HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE with vertical tab", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\x0b\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE space before colon", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", Refused(400)),
    case("TE empty", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: \r\n\r\n", Refused(400)),
    case("TE in capitals", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Passed(b"hello")),
    case("TE with tabs around", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\tchunked\t\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Passed(b"hello")),
    case("TE_ look-alike is not framing", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer_Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello", Passed(b"hello")),
];

#[rustfmt::skip]
const CHUNK_SIZE: &[Case] = &[
    case("size with 0x prefix", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size with plus sign", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size negative", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size with leading space", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size with trailing space", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size empty", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size not hex", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size of 17 digits", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size past the body limit", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nhello\r\n0\r\n\r\n", Refused(413)),
    case("data longer than its size", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("size line ends in bare LF", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", Refused(400)),
    case("data ends in bare LF", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n", Refused(400)),
    case("size line ends in bare CR", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\rhello\r\n0\r\n\r\n", Refused(400)),
    case("size with leading zeros", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0005\r\nhello\r\n000\r\n\r\n", Passed(b"hello")),
    case("several chunks", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\nA\r\nllo world\n\r\n0\r\n\r\n", Passed(b"hello world\n")),
];

#[rustfmt::skip]
const CHUNK_EXT: &[Case] = &[
    case("extension name=value", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n0;last\r\n\r\n", Passed(b"hello")),
    case("extension after whitespace", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5 \t;a\r\nhello\r\n0\r\n\r\n", Passed(b"hello")),
    case("extension quoted value", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"x;y\"\r\nhello\r\n0\r\n\r\n", Passed(b"hello")),
    case("extension with bare CR", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;a\rb\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("extension with bare LF", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;a\nhello\r\n0\r\n\r\n", Refused(400)),
    case("extension with NUL", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;a\x00b\r\nhello\r\n0\r\n\r\n", Refused(400)),
    case("whitespace without extension", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\t\r\nhello\r\n0\r\n\r\n", Refused(400)),
];

#[rustfmt::skip]
const TRAILERS: &[Case] = &[
    case("trailer field", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n", Passed(b"hello")),
    case("trailer Content-Length", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n", Passed(b"hello")),
    case("trailer Transfer-Encoding", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n", Passed(b"hello")),
    case("trailer Host", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nHost: evil\r\n\r\n", Passed(b"hello")),
    case("trailer without colon", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\ngarbage\r\n\r\n", Refused(400)),
    case("trailer obs-fold", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-A: 1\r\n 2\r\n\r\n", Refused(400)),
    case("trailer bare LF", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-A: 1\n\r\n", Refused(400)),
    case("trailer NUL", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-A: \x001\r\n\r\n", Refused(400)),
    case("trailer space before colon", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-A : 1\r\n\r\n", Refused(400)),
];

#[rustfmt::skip]
const SMUGGLED_BODIES: &[Case] = &[
    case("a request inside a CL body", b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n", Passed(b"GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n")),
    case("a request inside a chunk", b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n23\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n\r\n0\r\n\r\n", Passed(b"GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n")),
    case("HTTP/1.0 keep-alive with CL", b"POST /c HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc", Passed(b"abc")),
];

#[test]
fn content_length_and_transfer_encoding_conflicts() {
    Bench::start("").run(CL_TE);
}

#[test]
fn content_length_syntax() {
    Bench::start("").run(CL_SYNTAX);
}

#[test]
fn transfer_encoding_variants() {
    Bench::start("").run(TE_VARIANTS);
}

#[test]
fn chunk_size_syntax() {
    Bench::start("").run(CHUNK_SIZE);
}

#[test]
fn chunk_extensions() {
    Bench::start("").run(CHUNK_EXT);
}

#[test]
fn chunk_extension_length_is_capped() {
    let bench = Bench::start("");
    let mut req = b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;x=".to_vec();
    req.extend(std::iter::repeat_n(b'a', 5000));
    req.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    let req: &'static [u8] = req.leak();
    bench.run(&[case("extension of 5000 bytes", req, Refused(400))]);
}

#[test]
fn trailers_are_never_promoted() {
    let bench = Bench::start("");
    bench.run(TRAILERS);
    // A large trailer section is refused as a whole.
    let mut req =
        b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
            .to_vec();
    for i in 0..200 {
        req.extend_from_slice(format!("X-Trailer-{i}: {}\r\n", "v".repeat(40)).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    let req: &'static [u8] = req.leak();
    bench.run(&[case("trailers of 10 kB", req, Refused(400))]);
    // And the one the upstream got for "trailer Host" still says t.
    let host_case = &TRAILERS[3];
    bench.run(std::slice::from_ref(host_case));
    let req = bench.rec.requests();
    let req = req.iter().rev().find(|r| r.target == "/c").unwrap();
    assert_eq!(req.header("host"), ["t"]);
    assert!(req.header("x-trailer").is_empty());
}

#[test]
fn bodies_that_look_like_requests_stay_bodies() {
    let bench = Bench::start("");
    bench.run(SMUGGLED_BODIES);
    assert!(
        bench.rec.requests().iter().all(|r| r.target != "/smuggled"),
        "a request smuggled in a body reached the upstream"
    );
}
