//! Strict HTTP/1.1 request-head parser (RFC 9112) on top of httparse.
//!
//! # How it works
//!
//! [`parse_head`] is called with everything read so far on a connection,
//! starting at the first byte of a request. It never allocates and never
//! guesses:
//!
//! 1. Up to [`MAX_LEADING_EMPTY_LINES`] empty lines before the request line are
//!    skipped (RFC 9112 §2.2) and counted in [`RequestHead::head_len`].
//! 2. httparse parses the request line and the header section with its default,
//!    strict [`httparse::ParserConfig`]: whitespace between a field name and
//!    the colon, obs-fold, bare CR and control bytes in values are rejected
//!    there. It only ever sees the first `max_head` bytes, so a head that is
//!    not complete within them is too large (431) and work is bounded.
//!    A version `HTTP/1.x` with x > 1 is read as 1.1 (RFC 9110 §2.5); any
//!    other version but 1.0 and 1.1 is a 505.
//! 3. The request line length, header count and request-target form
//!    (RFC 9112 §3.2) are checked. A header limit above the 100 slots kept
//!    on the stack parses once more with room for that many.
//! 4. One pass over the headers records their spans and the fields that decide
//!    framing and connection handling: `Host`, `Content-Length`,
//!    `Transfer-Encoding`, `Connection` and `Expect`. Framing is strict
//!    (RFC 9112 §6.1–6.3): a message whose length could be read two ways is a
//!    400, never a guess, since that is what request smuggling relies on.
//!
//! Everything returned refers to `buf` by [`Span`]s (`u16` offsets), so a
//! [`RequestHead`] is plain data that can be kept while the buffer is reused
//! or moved; `max_head` is capped at 65 535 to keep every span in range.
//!
//! A lone LF is accepted as a line terminator in the head, as RFC 9112 §2.2
//! allows and httparse does; a lone CR is always an error.

use std::mem::MaybeUninit;

use crate::authority::{split_host_port, valid_host_port};
use crate::grammar::{is_token, parse_length, trim_ows};
use crate::head::{BodyKind, Method, RequestHead, Span, Version};
use crate::Limits;

/// Header slots httparse is given on the stack; a limit above it parses
/// again with room for that many.
const STACK_HEADERS: usize = 100;

/// Empty lines tolerated before the request line (RFC 9112 §2.2).
pub const MAX_LEADING_EMPTY_LINES: usize = 4;

/// Why a request head was refused; [`HeadError::status`] is the response code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("bad request: {0}")]
    BadRequest(&'static str),
    #[error("request line too long")]
    UriTooLong,
    #[error("request header section too large or too many header fields")]
    HeadersTooLarge,
    #[error("declared Content-Length exceeds the body limit")]
    PayloadTooLarge,
    #[error("unsupported Expect value")]
    ExpectationFailed,
    #[error("HTTP version not supported")]
    VersionNotSupported,
    #[error("transfer coding other than chunked")]
    NotImplemented,
}

impl From<HeadError> for crate::Error {
    fn from(e: HeadError) -> crate::Error {
        use crate::error::Kind;
        let kind = match e {
            HeadError::BadRequest(_) => Kind::BadRequest,
            HeadError::UriTooLong => Kind::UriTooLong,
            HeadError::HeadersTooLarge => Kind::HeadersTooLarge,
            HeadError::PayloadTooLarge => Kind::BodyTooLarge,
            HeadError::ExpectationFailed => Kind::ExpectationFailed,
            HeadError::VersionNotSupported => Kind::VersionNotSupported,
            HeadError::NotImplemented => Kind::NotImplemented,
        };
        crate::Error::new(kind, "request head refused").because(e)
    }
}

use HeadError::BadRequest;

/// Parses the request head at the start of `buf`.
///
/// Returns `Ok(None)` when the head is not complete yet (read more and call
/// again with the longer buffer), `Ok(Some(head))` when it is complete and
/// valid, and an error, whose status the error type decides, when the
/// request must be refused.
pub fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<RequestHead>, HeadError> {
    let mut head = RequestHead::empty();
    Ok(parse_head_into(buf, limits, &mut head)?.then_some(head))
}

/// [`parse_head`] into a caller's slot: `Ok(true)` when `head` now holds a
/// complete head, `Ok(false)` when more input is needed (`head` is then
/// unspecified). A pooled slot keeps its field list's capacity.
pub fn parse_head_into(
    buf: &[u8],
    limits: &Limits,
    head: &mut RequestHead,
) -> Result<bool, HeadError> {
    match parse(buf, limits, head) {
        // RFC 9110 §2.5: a request of a later HTTP/1 minor version is
        // answered as the highest 1.x this server speaks. httparse knows
        // only 1.0 and 1.1, so it reads a copy that says 1.1; the copy's
        // spans hold for `buf`, which differs in that digit only. Rare, so
        // the copy costs the common path nothing.
        Err(HeadError::VersionNotSupported) => match later_minor(buf) {
            Some(digit) => {
                let mut copy = buf.to_vec();
                copy[digit] = b'1';
                parse(&copy, limits, head)
            }
            None => Err(HeadError::VersionNotSupported),
        },
        r => r,
    }
}

/// Where the minor digit of a well-formed `HTTP/1.x` version with x > 1
/// is, if the request line (after any leading empty lines) has one, ended
/// or not yet: a prefix must get the answer its completion gets.
fn later_minor(buf: &[u8]) -> Option<usize> {
    let skip = skip_empty_lines(buf).ok()??;
    let line = &buf[skip..];
    let end = line
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(line.len());
    let line = &line[..end];
    let start = line.iter().rposition(|&b| b == b' ')? + 1;
    match &line[start..] {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if (b'2'..=b'9').contains(minor) => {
            Some(skip + start + 7)
        }
        _ => None,
    }
}

fn parse(buf: &[u8], limits: &Limits, head: &mut RequestHead) -> Result<bool, HeadError> {
    let max_head = limits.max_head.min(u16::MAX as usize);
    let max_headers = limits.max_headers;

    let Some(skip) = skip_empty_lines(buf)? else {
        return Ok(false);
    };
    // httparse only sees the first `max_head` bytes: a head that is not
    // complete within them is too large, however much more was read.
    let window = &buf[..buf.len().min(max_head)];
    let Some(line) = window.get(skip..) else {
        return partial(buf, skip, limits, max_head).map(|()| false);
    };

    let mut stack = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; STACK_HEADERS];
    let mut heap = Vec::new();
    let mut req = httparse::Request::new(&mut []);
    let mut parsed = req.parse_with_uninit_headers(line, &mut stack);
    if matches!(parsed, Err(httparse::Error::TooManyHeaders)) && max_headers > STACK_HEADERS {
        // Only a config that allows more than the stack holds pays for this.
        heap.resize_with(max_headers + 1, MaybeUninit::uninit);
        req = httparse::Request::new(&mut []);
        parsed = req.parse_with_uninit_headers(line, &mut heap);
    }
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return partial(buf, skip, limits, max_head).map(|()| false)
        }
        Err(e) => return Err(map_httparse_error(e, &buf[skip..])),
    };
    let head_len = skip + len;

    // httparse guarantees these are set (and slices of `line`) on Complete.
    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(BadRequest("incomplete request line"));
    };
    let method_span = Span::of(buf, method.as_bytes());
    let target = Span::of(buf, path.as_bytes());
    // Strict httparse: exactly one SP, then the 8-byte version.
    if target.end as usize + 9 - skip > limits.max_request_line {
        return Err(HeadError::UriTooLong);
    }
    if req.headers.len() > max_headers {
        return Err(HeadError::HeadersTooLarge);
    }
    let method = Method::from_bytes(method.as_bytes());
    let version = if minor == 1 {
        Version::Http11
    } else {
        Version::Http10
    };
    check_target(method, path.as_bytes())?;

    head.head_len = head_len;
    head.method = method;
    head.method_span = method_span;
    head.target = target;
    head.version = version;
    head.fields.clear();
    head.body = BodyKind::Empty;
    head.keep_alive = false;
    head.expect_continue = false;
    head.host = None;

    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut expect_other = false;
    let mut te_unsupported = false;

    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        let value = h.value;
        let value_span = Span::of(buf, value);
        head.fields.push(Span::of(buf, name), value_span);
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => {
                if head.host.is_some() {
                    return Err(BadRequest("more than one Host header"));
                }
                if !valid_host_port(value) {
                    return Err(BadRequest("invalid Host header"));
                }
                head.host = Some(value_span);
            }
            // HTTP/1.0 predates Expect: ignored there (RFC 9110 §10.1.1).
            6 if version == Version::Http11 && name.eq_ignore_ascii_case(b"expect") => {
                if trim_ows(value).eq_ignore_ascii_case(b"100-continue") {
                    head.expect_continue = true;
                } else {
                    expect_other = true;
                }
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in value.split(|&b| b == b',') {
                    let token = trim_ows(token);
                    if token.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep_alive = true;
                    }
                }
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                if content_length.is_some() {
                    return Err(BadRequest("more than one Content-Length header"));
                }
                content_length = Some(
                    parse_length(value, u64::MAX).ok_or(BadRequest("invalid Content-Length"))?,
                );
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                if chunked {
                    return Err(BadRequest("more than one Transfer-Encoding header"));
                }
                te_unsupported = check_transfer_encoding(value)?;
                chunked = true;
            }
            _ => {}
        }
    }

    if chunked && content_length.is_some() {
        return Err(BadRequest("both Content-Length and Transfer-Encoding"));
    }
    if chunked && version == Version::Http10 {
        return Err(BadRequest("Transfer-Encoding in an HTTP/1.0 request"));
    }
    if te_unsupported {
        return Err(HeadError::NotImplemented);
    }
    if head.host.is_none() && version == Version::Http11 {
        return Err(BadRequest("missing Host header"));
    }
    // RFC 9112 §3.2.2: with an absolute-form target, its authority is the
    // host and the Host field is ignored (but still required above), so
    // routing and the upstream see the host the target names.
    if let Some(authority) = absolute_form_authority(buf, target) {
        head.host = Some(authority);
    }
    head.body = match content_length {
        _ if chunked => BodyKind::Stream,
        Some(n) if n > limits.max_body => return Err(HeadError::PayloadTooLarge),
        Some(0) | None => BodyKind::Empty,
        Some(n) => BodyKind::Length(n),
    };
    if expect_other {
        return Err(HeadError::ExpectationFailed);
    }
    head.keep_alive = match version {
        Version::Http11 | Version::Http2 | Version::Http3 => !conn_close,
        Version::Http10 => conn_keep_alive && !conn_close,
    };
    Ok(true)
}

/// Length of the empty lines (CRLF or LF) before the request line, or `None`
/// if the buffer holds nothing else yet.
#[inline]
fn skip_empty_lines(buf: &[u8]) -> Result<Option<usize>, HeadError> {
    let mut i = 0;
    let mut lines = 0;
    loop {
        match buf.get(i) {
            None => return Ok(None),
            Some(b'\r') => match buf.get(i + 1) {
                None => return Ok(None),
                Some(b'\n') => i += 2,
                Some(_) => return Err(BadRequest("bare CR before the request line")),
            },
            Some(b'\n') => i += 1,
            Some(_) => return Ok(Some(i)),
        }
        lines += 1;
        if lines > MAX_LEADING_EMPTY_LINES {
            return Err(BadRequest("too many empty lines before the request line"));
        }
    }
}

/// The verdict on an incomplete head: wait for more, or refuse it as too long.
#[cold]
fn partial(buf: &[u8], skip: usize, limits: &Limits, max_head: usize) -> Result<(), HeadError> {
    let line = &buf[skip..];
    if line.len() > limits.max_request_line {
        let scan = &line[..line.len().min(limits.max_request_line + 1)];
        if !scan.iter().any(|&b| b == b'\r' || b == b'\n') {
            return Err(HeadError::UriTooLong);
        }
    }
    if buf.len() > max_head {
        return Err(HeadError::HeadersTooLarge);
    }
    Ok(())
}

#[cold]
fn map_httparse_error(e: httparse::Error, line: &[u8]) -> HeadError {
    match e {
        httparse::Error::TooManyHeaders => HeadError::HeadersTooLarge,
        httparse::Error::Version => version_error(line),
        httparse::Error::HeaderName => BadRequest("invalid header name (httparse)"),
        httparse::Error::HeaderValue => BadRequest("invalid header value (httparse)"),
        httparse::Error::NewLine => BadRequest("invalid line ending (httparse)"),
        httparse::Error::Token => BadRequest("invalid request line token (httparse)"),
        httparse::Error::Status => BadRequest("invalid status (httparse)"),
    }
}

/// httparse reports any bad version as `Version`; only a well-formed
/// `HTTP/x.y` (or `HTTP/x`) other than 1.0/1.1 is a 505, the rest is a 400.
fn version_error(line: &[u8]) -> HeadError {
    let end = line
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(line.len());
    let line = &line[..end];
    let version = match line.iter().rposition(|&b| b == b' ') {
        Some(i) => &line[i + 1..],
        None => line,
    };
    let well_formed = match version.strip_prefix(b"HTTP/") {
        Some([major]) => major.is_ascii_digit(),
        Some([major, b'.', minor]) => major.is_ascii_digit() && minor.is_ascii_digit(),
        _ => false,
    };
    let has_delims = line.iter().filter(|&&b| b == b' ').count() == 2;
    if well_formed && has_delims && version != b"HTTP/1.0" && version != b"HTTP/1.1" {
        HeadError::VersionNotSupported
    } else {
        BadRequest("invalid HTTP version (httparse)")
    }
}

/// RFC 9112 §3.2: origin-form, absolute-form (http/https), authority-form
/// only with CONNECT, asterisk-form only with OPTIONS.
#[inline]
fn check_target(method: Method, t: &[u8]) -> Result<(), HeadError> {
    // Branch-free so it vectorizes; httparse already stops at SP and CTLs.
    // `#`: a fragment is never part of a request-target (RFC 9112 §3.2),
    // and servers disagree on where a path that has one ends.
    if !t
        .iter()
        .fold(true, |ok, &b| ok & (b > b' ') & (b < 0x7f) & (b != b'#'))
    {
        return Err(BadRequest(
            "control, space, '#' or non-ASCII byte in the request-target",
        ));
    }
    if method == Method::Connect {
        return match split_host_port(t) {
            Some((host, Some(port))) if !host.is_empty() && !port.is_empty() => Ok(()),
            _ => Err(BadRequest("CONNECT needs an authority-form request-target")),
        };
    }
    match t {
        [b'/', ..] => Ok(()),
        b"*" if method == Method::Options => Ok(()),
        b"*" => Err(BadRequest("asterisk-form request-target without OPTIONS")),
        _ => {
            let rest = strip_prefix_ignore_case(t, b"http://")
                .or_else(|| strip_prefix_ignore_case(t, b"https://"))
                .ok_or(BadRequest("invalid request-target form"))?;
            let end = rest
                .iter()
                .position(|&b| matches!(b, b'/' | b'?' | b'#'))
                .unwrap_or(rest.len());
            match split_host_port(&rest[..end]) {
                Some((host, _)) if !host.is_empty() => Ok(()),
                _ => Err(BadRequest(
                    "invalid authority in absolute-form request-target",
                )),
            }
        }
    }
}

/// The authority of an absolute-form target (already validated by
/// [`check_target`]), as a span of `buf`.
fn absolute_form_authority(buf: &[u8], target: Span) -> Option<Span> {
    let t = target.get(buf);
    if matches!(t.first(), Some(b'/' | b'*') | None) {
        return None;
    }
    let start = t.windows(3).position(|w| w == b"://")? + 3;
    let len = t[start..]
        .iter()
        .position(|&b| matches!(b, b'/' | b'?'))
        .unwrap_or(t.len() - start);
    Some(Span {
        start: target.start + start as u16,
        end: target.start + (start + len) as u16,
    })
}

fn strip_prefix_ignore_case<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    if s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix) {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

/// `Transfer-Encoding = #transfer-coding` (RFC 9112 §6.1): `Ok(false)` for
/// `chunked`, `Ok(true)` for a well-formed list that ends in `chunked` but
/// has other codings before it (501: understood framing, unsupported
/// coding). A list whose final coding is not `chunked` cannot be framed
/// (RFC 9112 §6.3: 400), and neither can an odd list: empty elements,
/// parameters, quotes or `chunked` twice.
fn check_transfer_encoding(value: &[u8]) -> Result<bool, HeadError> {
    let value = trim_ows(value);
    if value.eq_ignore_ascii_case(b"chunked") {
        return Ok(false);
    }
    let mut codings = value.split(|&b| b == b',').map(trim_ows).peekable();
    while let Some(coding) = codings.next() {
        if !is_token(coding) {
            return Err(BadRequest("malformed Transfer-Encoding"));
        }
        let chunked = coding.eq_ignore_ascii_case(b"chunked");
        match (chunked, codings.peek().is_none()) {
            (true, true) => return Ok(true),
            (true, false) => return Err(BadRequest("chunked is not the final transfer coding")),
            (false, true) => return Err(BadRequest("final transfer coding is not chunked")),
            (false, false) => {}
        }
    }
    Err(BadRequest("malformed Transfer-Encoding"))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
