//! An upstream's response head, parsed strictly (RFC 9112): the client side
//! of HTTP/1, for the proxy's forwarding and its health checks alike.
//!
//! # How it works
//!
//! [`parse_response`] is called with everything read so far from an upstream
//! connection, starting at the first byte of a response. Like the server's
//! request parser (`ringside_runtime::http::head`) it never allocates and
//! never guesses:
//!
//! 1. httparse parses the status line and the header section with its
//!    default, strict [`httparse::ParserConfig`]: whitespace before a field's
//!    colon, obs-fold (RFC 9112 §5.2), bare CR and control bytes in values are
//!    errors. It only sees the first `max_head` bytes, so a head that is not
//!    complete within them is [`RespError::TooLarge`] and work is bounded.
//!    Partial input is `Ok(false)`, never an error.
//! 2. The version must be HTTP/1.0 or HTTP/1.1 (httparse) and the status a
//!    three-digit code in `100..=599` (RFC 9110 §15).
//! 3. One pass over the headers records their spans and what decides framing
//!    and reuse: `Content-Length`, `Transfer-Encoding` and `Connection`.
//! 4. The body's framing follows RFC 9112 §6.3, in this order:
//!    - a response to HEAD, any 1xx, 204 and 304 has no body, whatever
//!      `Content-Length` or `Transfer-Encoding` say (rules 1 and 2); those
//!      fields are then not checked at all;
//!    - `Transfer-Encoding` together with `Content-Length` is refused: a
//!      message whose length can be read two ways is what response splitting
//!      and smuggling rely on (rule 3 lets a recipient go by the chunked
//!      coding; a proxy that is strict loses nothing by refusing);
//!    - `Transfer-Encoding` must be exactly `chunked`, in one field: any other
//!      coding (`gzip, chunked`, an unknown one) would make us decode
//!      something we do not understand; in an HTTP/1.0 response it is
//!      malformed (RFC 9112 §6.1: a 1.0 recipient cannot have asked for it);
//!    - `Content-Length` must be 1*DIGIT, at most 2^62. Several fields, or a
//!      comma list, are accepted when every value is the same (RFC 9110
//!      §8.6 allows a recipient to do so); differing values are refused;
//!    - neither: the body runs until the upstream closes (rule 8).
//!
//! The upstream connection is reusable ([`ResponseHead::reusable`]) after an
//! HTTP/1.1 response without `Connection: close`, or an HTTP/1.0 response
//! with `Connection: keep-alive` (RFC 9112 §9.3), and never after a body
//! that runs until close or after `101 Switching Protocols`.
//!
//! Everything returned refers to the buffer by [`Span`]s (`u16` offsets), so
//! a [`ResponseHead`] is plain data; `max_head` is capped at 65 535 to keep
//! every span in range.

use std::mem::MaybeUninit;

use crate::grammar::{
    list_elements, parse_length, trim_ows, ConnectionTokens, MAX_CONNECTION_TOKENS,
};
use crate::head::{Fields, Span};

/// Header fields kept for one response; more is [`RespError::TooLarge`].
pub const MAX_RESP_HEADERS: usize = 100;

/// Largest `Content-Length` accepted (2^62): far beyond any real body, and
/// small enough that sums of lengths and offsets cannot overflow a `u64`.
pub const MAX_CONTENT_LENGTH: u64 = 1 << 62;

/// How the response body is framed (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespBody {
    /// No body: a response to HEAD, 1xx, 204 or 304.
    None,
    /// `Content-Length: n` (`n` may be 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Neither header: the body ends when the upstream closes.
    UntilClose,
}

/// A parsed, validated response head. All spans refer to the parsed buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// The status line said HTTP/1.0 (otherwise HTTP/1.1).
    pub http10: bool,
    /// Bytes of the head, through the final empty line. The body starts here.
    pub head_len: usize,
    pub body: RespBody,
    /// The upstream connection may be reused after this response (1.1
    /// without `Connection: close`, or 1.0 with keep-alive; never with
    /// [`RespBody::UntilClose`] or after 101).
    pub reusable: bool,
    /// The valid `Content-Length` even where it does not frame a body (HEAD,
    /// 304), for a server that wants to pass it on; `None` if absent, or
    /// invalid on a bodiless response.
    pub declared_length: Option<u64>,
    /// Header fields in order, as (name as sent, value) spans; values
    /// have no leading or trailing whitespace.
    pub fields: Fields,
}

impl ResponseHead {
    /// A blank slot for [`parse_response`].
    pub fn empty() -> Self {
        ResponseHead {
            status: 0,
            http10: false,
            head_len: 0,
            body: RespBody::None,
            reusable: false,
            declared_length: None,
            fields: Fields::with_capacity(MAX_RESP_HEADERS),
        }
    }

    /// The field names this head's `Connection` fields list. A head
    /// [`parse_response`] accepted never overflows.
    pub fn connection_tokens<'a>(&self, buf: &'a [u8]) -> ConnectionTokens<'a> {
        ConnectionTokens::from_values(self.fields.all(buf, "connection"))
    }

    /// An interim response (1xx other than 101): the final one follows on
    /// the same connection.
    pub fn is_interim(&self) -> bool {
        crate::status::is_interim(self.status)
    }
}

/// Why an upstream's response head was refused: the proxy answers the
/// client 502 and closes the upstream connection. Each says what was wrong
/// with the head, not that it was a head: the error it becomes
/// (`From<RespError> for Error`) says that once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RespError {
    #[error("{0}")]
    Malformed(&'static str),
    #[error("too large or too many header fields")]
    TooLarge,
    #[error("invalid or conflicting Content-Length")]
    BadLength,
    #[error("both Content-Length and Transfer-Encoding")]
    LengthAndChunked,
    #[error("Transfer-Encoding other than a single chunked")]
    BadTransferEncoding,
}

use RespError::Malformed;

/// Parses the response head at the start of `buf` into `out`.
///
/// `Ok(false)`: the head is not complete yet (read more and call again with
/// the longer buffer; `out` is then unspecified). `Ok(true)`: `out` holds a
/// complete, valid head. `request_was_head`: the request's method was HEAD,
/// so the response has no body whatever its headers say.
pub fn parse_response(
    buf: &[u8],
    request_was_head: bool,
    max_head: usize,
    out: &mut ResponseHead,
) -> Result<bool, RespError> {
    let max_head = max_head.min(u16::MAX as usize);
    let window = &buf[..buf.len().min(max_head)];

    let mut raw = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_RESP_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let head_len = match httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut resp, window, &mut raw)
    {
        Ok(httparse::Status::Complete(n)) => n,
        // A full window that is still partial can never complete within it.
        Ok(httparse::Status::Partial) if window.len() >= max_head => {
            return Err(RespError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(false),
        Err(e) => return Err(map_httparse_error(e)),
    };
    let (Some(minor), Some(status)) = (resp.version, resp.code) else {
        return Err(Malformed("incomplete status line"));
    };
    if !(100..=599).contains(&status) {
        return Err(Malformed("status code outside 100..=599"));
    }

    out.status = status;
    out.http10 = minor == 0;
    out.head_len = head_len;
    out.fields.clear();
    out.declared_length = None;

    let mut length = Length::Absent;
    let mut te_fields = 0u32;
    let mut te_chunked = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut conn_tokens = 0usize;

    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        let value = h.value;
        out.fields.push(Span::of(buf, name), Span::of(buf, value));
        match name.len() {
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in list_elements(value) {
                    conn_tokens += 1;
                    if token.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep_alive = true;
                    }
                }
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                length = length.add(value);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                te_fields += 1;
                te_chunked = trim_ows(value).eq_ignore_ascii_case(b"chunked");
            }
            _ => {}
        }
    }
    if conn_tokens > MAX_CONNECTION_TOKENS {
        return Err(Malformed("too many Connection tokens"));
    }
    if let Length::Value(n) = length {
        out.declared_length = Some(n);
    }

    let bodiless = request_was_head || (100..200).contains(&status) || matches!(status, 204 | 304);
    out.body = if bodiless {
        RespBody::None
    } else if te_fields > 0 {
        if length != Length::Absent {
            return Err(RespError::LengthAndChunked);
        }
        if te_fields > 1 || !te_chunked {
            return Err(RespError::BadTransferEncoding);
        }
        if out.http10 {
            return Err(Malformed("Transfer-Encoding in an HTTP/1.0 response"));
        }
        RespBody::Chunked
    } else {
        match length {
            Length::Absent => RespBody::UntilClose,
            Length::Value(n) => RespBody::Length(n),
            Length::Invalid => return Err(RespError::BadLength),
        }
    };

    out.reusable = !conn_close
        && (!out.http10 || conn_keep_alive)
        && out.body != RespBody::UntilClose
        && status != 101;
    Ok(true)
}

/// What the `Content-Length` fields seen so far say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Length {
    Absent,
    Value(u64),
    /// Malformed, or values that differ.
    Invalid,
}

impl Length {
    /// Adds one field's value: a comma list of identical 1*DIGIT values.
    fn add(self, value: &[u8]) -> Length {
        let mut acc = self;
        // `split` yields at least one (maybe empty, so invalid) element.
        for element in value.split(|&b| b == b',') {
            acc = match (acc, parse_length(trim_ows(element), MAX_CONTENT_LENGTH)) {
                (Length::Invalid, _) | (_, None) => return Length::Invalid,
                (Length::Absent, Some(n)) => Length::Value(n),
                (Length::Value(a), Some(n)) if a == n => Length::Value(a),
                (Length::Value(_), Some(_)) => return Length::Invalid,
            };
        }
        acc
    }
}

#[cold]
fn map_httparse_error(e: httparse::Error) -> RespError {
    match e {
        httparse::Error::TooManyHeaders => RespError::TooLarge,
        httparse::Error::Version => Malformed("HTTP version other than 1.0 or 1.1 (httparse)"),
        httparse::Error::Status => Malformed("invalid status code (httparse)"),
        httparse::Error::HeaderName => Malformed("invalid header name (httparse)"),
        httparse::Error::HeaderValue => Malformed("invalid header value (httparse)"),
        httparse::Error::NewLine => Malformed("invalid line ending (httparse)"),
        httparse::Error::Token => Malformed("invalid token (httparse)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RespBody::{Chunked, Length as Len, None as NoBody, UntilClose};
    use RespError::*;

    /// `Ok(Some((status, body, reusable)))` parsed, `Ok(None)` incomplete.
    type Outcome = Result<Option<(u16, RespBody, bool)>, RespError>;

    fn parse(input: &[u8], head: bool, max_head: usize) -> Outcome {
        let mut out = ResponseHead::empty();
        parse_response(input, head, max_head, &mut out)
            .map(|done| done.then_some((out.status, out.body, out.reusable)))
    }

    fn ok(input: &[u8]) -> ResponseHead {
        let mut out = ResponseHead::empty();
        match parse_response(input, false, 8192, &mut out) {
            Ok(true) => out,
            other => panic!("{:?}: {:?}", String::from_utf8_lossy(input), other),
        }
    }

    const MORE: Outcome = Ok(None);
    const fn done(status: u16, body: RespBody, reusable: bool) -> Outcome {
        Ok(Some((status, body, reusable)))
    }
    const M: RespError = Malformed("");

    /// Malformed's message is not part of the contract.
    fn loose(o: Outcome) -> Outcome {
        o.map_err(|e| match e {
            Malformed(_) => M,
            e => e,
        })
    }

    #[test]
    fn framing_table() {
        #[rustfmt::skip]
        let cases: &[(&[u8], bool, Outcome)] = &[
            // Content-Length
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", false, done(200, Len(5), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, done(200, Len(0), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length:  7 \r\n\r\n", false, done(200, Len(7), true)),
            (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nContent-Length: 5\r\n\r\n", false, done(200, Len(5), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5,5\r\n\r\n", false, done(200, Len(5), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n", false, done(200, Len(1 << 62), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387905\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", false, Err(BadLength)),
            (b"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", false, Err(BadLength)),
            // Transfer-Encoding
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, done(200, Chunked, true)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding:\tChunKed \r\n\r\n", false, done(200, Chunked, true)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, Err(BadTransferEncoding)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", false, Err(BadTransferEncoding)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false, Err(BadTransferEncoding)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n", false, Err(BadTransferEncoding)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n", false, Err(BadTransferEncoding)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n", false, Err(BadTransferEncoding)),
            (b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, Err(M)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", false, Err(LengthAndChunked)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", false, Err(LengthAndChunked)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\nTransfer-Encoding: gzip\r\n\r\n", false, Err(LengthAndChunked)),
            // neither: until close, never reusable
            (b"HTTP/1.1 200 OK\r\n\r\n", false, done(200, UntilClose, false)),
            (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", false, done(200, UntilClose, false)),
            // bodiless: HEAD, 1xx, 204, 304; CL/TE ignored, reuse kept
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, done(200, NoBody, true)),
            (b"HTTP/1.1 200 OK\r\n\r\n", true, done(200, NoBody, true)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", true, done(200, NoBody, true)),
            (b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", false, done(204, NoBody, true)),
            (b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: gzip\r\n\r\n", false, done(204, NoBody, true)),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5, 6\r\n\r\n", false, done(304, NoBody, true)),
            (b"HTTP/1.1 304 Not Modified\r\n\r\n", false, done(304, NoBody, true)),
            (b"HTTP/1.1 100 Continue\r\n\r\n", false, done(100, NoBody, true)),
            (b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", false, done(103, NoBody, true)),
            (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", false, done(101, NoBody, false)),
            (b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", false, done(204, NoBody, false)),
            // Connection and version decide reuse
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", false, done(200, Len(0), false)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: X-Foo, CLOSE\r\n\r\n", false, done(200, Len(0), false)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n", false, done(200, Len(0), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: closed\r\n\r\n", false, done(200, Len(0), true)),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false, done(200, Len(0), false)),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: Keep-Alive\r\n\r\n", false, done(200, Len(0), true)),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false, done(200, Len(0), false)),
            (b"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n", false, done(204, NoBody, true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p\r\n\r\n", false, done(200, Len(0), true)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\r\n\r\n", false, Err(M)),
        ];
        for (i, (input, head, want)) in cases.iter().enumerate() {
            let got = loose(parse(input, *head, 8192));
            assert_eq!(got, *want, "case {i}: {:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn syntax_table() {
        #[rustfmt::skip]
        let cases: &[(&[u8], usize, Outcome)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 8192, done(200, Len(0), true)),
            (b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 8192, done(200, Len(0), true)),
            (b"HTTP/1.1 599 Whatever\r\nContent-Length: 0\r\n\r\n", 8192, done(599, Len(0), true)),
            (b"HTTP/1.1 200 OK\nContent-Length: 0\n\n", 8192, done(200, Len(0), true)),
            // incomplete
            (b"", 8192, MORE),
            (b"HTTP/1.", 8192, MORE),
            (b"HTTP/1.1 200 OK\r\n", 8192, MORE),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r", 8192, MORE),
            // too large: a full window that is still partial
            (b"HTTP/1.1 200 OK\r\nX-Long: aaaaaaaaaaaaaaaaaaaa\r\n\r\n", 30, Err(TooLarge)),
            (b"HTTP/1.1 200 OK\r\nX: y\r\n", 23, Err(TooLarge)),
            (b"HTTP/1.1 200 OK\r\nX: y\r\n", 24, MORE),
            (b"HTTP/1.1 200 OK\r\nX: y\r\n\r\n", 25, done(200, UntilClose, false)),
            // status line
            (b"HTTP/2.0 200 OK\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.2 200 OK\r\n\r\n", 8192, Err(M)),
            (b"http/1.1 200 OK\r\n\r\n", 8192, Err(M)),
            (b"ICY 200 OK\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 099 Low\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 000 Zero\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 600 High\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 20 OK\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 2000 OK\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 2x0 OK\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1  200 OK\r\n\r\n", 8192, Err(M)),
            // header syntax
            (b"HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\nContent-Length: 0\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 200 OK\r\nX-A : b\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 200 OK\r\nX(A): b\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 200 OK\r\nX\x00A: b\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 200 OK\r\nX-A: b\x00c\r\n\r\n", 8192, Err(M)),
            (b"HTTP/1.1 200 OK\r\n: b\r\n\r\n", 8192, Err(M)),
        ];
        for (i, (input, max, want)) in cases.iter().enumerate() {
            let got = loose(parse(input, false, *max));
            assert_eq!(got, *want, "case {i}: {:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn too_many_headers() {
        let mut input = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..=MAX_RESP_HEADERS {
            input.extend_from_slice(b"X: y\r\n");
        }
        input.extend_from_slice(b"\r\n");
        assert_eq!(parse(&input, false, 65535), Err(TooLarge));
    }

    #[test]
    fn head_fields() {
        let buf = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nX-Dup: 1\r\nx-dup: 2\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc";
        let h = ok(buf);
        assert!(h.http10);
        assert_eq!(h.head_len, buf.len() - 3);
        assert_eq!(h.body, Len(3));
        assert!(h.reusable);
        assert_eq!(h.declared_length, Some(3));
        assert_eq!(h.fields.iter(buf).count(), 5);
        assert_eq!(h.fields.get(buf, "content-type"), Some(&b"text/plain"[..]));
        assert_eq!(h.fields.get(buf, "X-DUP"), Some(&b"1"[..]));
        assert_eq!(h.fields.get(buf, "missing"), None);
        let all: Vec<_> = h.fields.iter(buf).collect();
        assert_eq!(all[2], (&b"x-dup"[..], &b"2"[..]));
        assert_eq!(all[0].0, b"Content-Type");
        assert!(!h.is_interim());
    }

    #[test]
    fn declared_length_on_bodiless() {
        #[rustfmt::skip]
        let cases: &[(&[u8], bool, Option<u64>)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", true, Some(42)),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 42\r\n\r\n", false, Some(42)),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 4, 2\r\n\r\n", false, None),
            (b"HTTP/1.1 304 Not Modified\r\n\r\n", false, None),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, None),
        ];
        for (i, (input, head, want)) in cases.iter().enumerate() {
            let mut out = ResponseHead::empty();
            assert_eq!(
                parse_response(input, *head, 8192, &mut out),
                Ok(true),
                "case {i}"
            );
            assert_eq!(out.declared_length, *want, "case {i}");
        }
    }

    #[test]
    fn interim() {
        #[rustfmt::skip]
        let cases: &[(&[u8], bool)] = &[
            (b"HTTP/1.1 100 Continue\r\n\r\n", true),
            (b"HTTP/1.1 102 Processing\r\n\r\n", true),
            (b"HTTP/1.1 103 Early Hints\r\n\r\n", true),
            (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", false),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        ];
        for (input, want) in cases {
            assert_eq!(
                ok(input).is_interim(),
                *want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn a_slot_is_reused_cleanly() {
        let mut out = ResponseHead::empty();
        let a = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nA: 1\r\nB: 2\r\n\r\n";
        assert_eq!(parse_response(a, false, 8192, &mut out), Ok(true));
        let b = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(parse_response(b, false, 8192, &mut out), Ok(true));
        assert_eq!(
            (out.status, out.body, out.declared_length),
            (204, NoBody, None)
        );
        assert_eq!(out.fields.iter(b).count(), 0);
    }
}
