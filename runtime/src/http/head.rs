//! Strict HTTP/1.1 request-head parser (RFC 9112) on top of httparse.
//!
//! # How it works
//!
//! [`parse_head`] is called with everything read so far on a connection,
//! starting at the first byte of a request. It never allocates and never
//! guesses:
//!
//! 1. Up to [`MAX_LEADING_EMPTY_LINES`] empty lines before the request line are
//!    skipped (RFC 9112 §2.2) and counted in [`ParsedHead::head_len`].
//! 2. httparse parses the request line and the header section with its default,
//!    strict [`httparse::ParserConfig`]: whitespace between a field name and
//!    the colon, obs-fold, bare CR and control bytes in values are rejected
//!    there. It only ever sees the first `max_head` bytes, so a head that is
//!    not complete within them is too large (431) and work is bounded.
//! 3. The request line length, header count and request-target form
//!    (RFC 9112 §3.2) are checked.
//! 4. One pass over the headers records their spans and the fields that decide
//!    framing and connection handling: `Host`, `Content-Length`,
//!    `Transfer-Encoding`, `Connection` and `Expect`. Framing is strict
//!    (RFC 9112 §6.1–6.3): a message whose length could be read two ways is a
//!    400, never a guess, since that is what request smuggling relies on.
//!
//! Everything returned refers to `buf` by [`Span`]s (`u16` offsets), so a
//! [`ParsedHead`] is plain data that can be kept while the buffer is reused
//! or moved; `max_head` is capped at 65 535 to keep every span in range.
//!
//! A lone LF is accepted as a line terminator in the head, as RFC 9112 §2.2
//! allows and httparse does; a lone CR is always an error.

use std::fmt;
use std::mem::MaybeUninit;

/// Header slots httparse is given; [`Limits::max_headers`] may only lower it.
pub const MAX_HEADERS: usize = 100;

/// Empty lines tolerated before the request line (RFC 9112 §2.2).
pub const MAX_LEADING_EMPTY_LINES: usize = 4;

/// Size limits applied while parsing a request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, without its CRLF (414 beyond).
    pub max_request_line: usize,
    /// Largest head, including leading empty lines and the final empty line
    /// (431 beyond). Values above 65 535 are treated as 65 535.
    pub max_head: usize,
    /// Most header fields (431 beyond). Values above [`MAX_HEADERS`] are
    /// treated as [`MAX_HEADERS`].
    pub max_headers: usize,
    /// Largest body a `Content-Length` may declare (413 beyond).
    pub max_body: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: 8192,
            max_head: 16384,
            max_headers: 64,
            max_body: 1024 * 1024,
        }
    }
}

/// Request method. Methods are case-sensitive (RFC 9110 §9.1); any other
/// token is [`Method::Other`] and its text is in [`ParsedHead::method_span`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Connect,
    Trace,
    Other,
}

impl Method {
    fn from_bytes(m: &[u8]) -> Method {
        match m {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"OPTIONS" => Method::Options,
            b"PATCH" => Method::Patch,
            b"CONNECT" => Method::Connect,
            b"TRACE" => Method::Trace,
            _ => Method::Other,
        }
    }
}

/// HTTP version of the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// How the request body is framed (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// No body: neither header, or `Content-Length: 0`.
    Empty,
    /// `Content-Length: n` with `n > 0`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A byte range `start..end` of the buffer a head was parsed from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u16,
    pub end: u16,
}

impl Span {
    /// The bytes this span covers in `buf` (the buffer given to [`parse_head`]).
    ///
    /// # Panics
    /// If `buf` is shorter than the span, i.e. not the parsed buffer.
    #[inline]
    pub fn get<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.start as usize..self.end as usize]
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether the span is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Span of `part`, a subslice of `buf` lying within its first 65 535 bytes.
    #[inline]
    fn of(buf: &[u8], part: &[u8]) -> Span {
        let start = part.as_ptr() as usize - buf.as_ptr() as usize;
        debug_assert!(start + part.len() <= buf.len() && start + part.len() <= u16::MAX as usize);
        Span {
            start: start as u16,
            end: (start + part.len()) as u16,
        }
    }
}

/// A parsed, validated request head. All spans refer to the parsed buffer.
#[derive(Clone, PartialEq, Eq)]
pub struct ParsedHead {
    /// Bytes of the head, from the start of the buffer (leading empty lines
    /// included) through the final empty line. The body starts here.
    pub head_len: usize,
    pub method: Method,
    pub method_span: Span,
    pub target: Span,
    pub version: Version,
    headers: [(Span, Span); MAX_HEADERS],
    header_count: u8,
    pub body: BodyKind,
    /// Whether the connection may be reused after this request (RFC 9112 §9.3).
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request.
    pub expect_continue: bool,
    /// The request's host: an absolute-form target's authority, else the
    /// `Host` field value (may be empty); `None` only on HTTP/1.0.
    pub host: Option<Span>,
}

impl ParsedHead {
    /// A blank slot for [`parse_head_into`].
    pub fn empty() -> ParsedHead {
        ParsedHead {
            head_len: 0,
            method: Method::Other,
            method_span: Span::default(),
            target: Span::default(),
            version: Version::Http11,
            headers: [(Span::default(), Span::default()); MAX_HEADERS],
            header_count: 0,
            body: BodyKind::Empty,
            keep_alive: false,
            expect_continue: false,
            host: None,
        }
    }

    /// Header fields in order, as (name, value); values have no leading or
    /// trailing whitespace.
    pub fn headers<'a>(
        &'a self,
        buf: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone + 'a {
        self.headers[..self.header_count as usize]
            .iter()
            .map(move |(n, v)| (n.get(buf), v.get(buf)))
    }

    /// Value of the first header named `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
        find_header(&self.headers[..self.header_count as usize], buf, name)
    }

    /// Number of header fields.
    pub fn header_count(&self) -> usize {
        self.header_count as usize
    }

    /// The method as sent.
    pub fn method_str<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.method_span.get(buf)
    }

    /// The request-target as sent.
    pub fn target<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.target.get(buf)
    }
}

impl fmt::Debug for ParsedHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedHead")
            .field("head_len", &self.head_len)
            .field("method", &self.method)
            .field("method_span", &self.method_span)
            .field("target", &self.target)
            .field("version", &self.version)
            .field("headers", &&self.headers[..self.header_count as usize])
            .field("body", &self.body)
            .field("keep_alive", &self.keep_alive)
            .field("expect_continue", &self.expect_continue)
            .field("host", &self.host)
            .finish()
    }
}

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

impl HeadError {
    /// The HTTP status code to answer with.
    pub fn status(&self) -> u16 {
        match self {
            HeadError::BadRequest(_) => 400,
            HeadError::UriTooLong => 414,
            HeadError::HeadersTooLarge => 431,
            HeadError::PayloadTooLarge => 413,
            HeadError::ExpectationFailed => 417,
            HeadError::VersionNotSupported => 505,
            HeadError::NotImplemented => 501,
        }
    }
}

use HeadError::BadRequest;

/// Parses the request head at the start of `buf`.
///
/// Returns `Ok(None)` when the head is not complete yet (read more and call
/// again with the longer buffer), `Ok(Some(head))` when it is complete and
/// valid, and an error, with its status code, when the request must be
/// refused.
pub fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<ParsedHead>, HeadError> {
    let mut head = ParsedHead::empty();
    Ok(parse_head_into(buf, limits, &mut head)?.then_some(head))
}

/// [`parse_head`] into a caller's slot: `Ok(true)` when `head` now holds a
/// complete head, `Ok(false)` when more input is needed (`head` is then
/// unspecified). Saves moving the ~830-byte result on the hot path.
pub fn parse_head_into(
    buf: &[u8],
    limits: &Limits,
    head: &mut ParsedHead,
) -> Result<bool, HeadError> {
    let max_head = limits.max_head.min(u16::MAX as usize);
    let max_headers = limits.max_headers.min(MAX_HEADERS);

    let Some(skip) = skip_empty_lines(buf)? else {
        return Ok(false);
    };
    // httparse only sees the first `max_head` bytes: a head that is not
    // complete within them is too large, however much more was read.
    let window = &buf[..buf.len().min(max_head)];
    let Some(line) = window.get(skip..) else {
        return partial(buf, skip, limits, max_head).map(|()| false);
    };

    let mut raw = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(line, &mut raw) {
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
    head.header_count = req.headers.len() as u8;
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

    for (slot, h) in head.headers.iter_mut().zip(req.headers.iter()) {
        let name = h.name.as_bytes();
        let value = h.value;
        *slot = (Span::of(buf, name), Span::of(buf, value));
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => {
                if head.host.is_some() {
                    return Err(BadRequest("more than one Host header"));
                }
                if !valid_host_port(value) {
                    return Err(BadRequest("invalid Host header"));
                }
                head.host = Some(slot.1);
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
                content_length = Some(parse_content_length(value)?);
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
        _ if chunked => BodyKind::Chunked,
        Some(n) if n > limits.max_body => return Err(HeadError::PayloadTooLarge),
        Some(0) | None => BodyKind::Empty,
        Some(n) => BodyKind::Length(n),
    };
    if expect_other {
        return Err(HeadError::ExpectationFailed);
    }
    head.keep_alive = match version {
        Version::Http11 => !conn_close,
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

/// `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2). Empty is valid:
/// it is what a client sends when the target URI has no authority.
#[inline]
fn valid_host_port(v: &[u8]) -> bool {
    v.is_empty() || split_host_port(v).is_some()
}

/// Splits and validates `uri-host [ ":" port ]`; `None` if invalid.
fn split_host_port(v: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let (host, rest) = if let Some(inner) = v.strip_prefix(b"[") {
        // IP-literal: IPv6address or IPvFuture, loosely.
        let close = inner.iter().position(|&b| b == b']')?;
        let ip = &inner[..close];
        if ip.is_empty() || !ip.iter().all(|&b| REG_NAME[b as usize] == 1 || b == b':') {
            return None;
        }
        (&v[..close + 2], &inner[close + 1..])
    } else {
        let end = v.iter().position(|&b| b == b':').unwrap_or(v.len());
        let host = &v[..end];
        if !valid_reg_name(host) {
            return None;
        }
        (host, &v[end..])
    };
    match rest {
        [] => Some((host, None)),
        [b':', port @ ..] if port.iter().all(u8::is_ascii_digit) => Some((host, Some(port))),
        _ => None,
    }
}

/// reg-name = *( unreserved / pct-encoded / sub-delims ); IPv4 addresses fit too.
fn valid_reg_name(h: &[u8]) -> bool {
    // Fast path without `%`: branch-free, no dependency between bytes.
    if h.iter()
        .fold(true, |ok, &b| ok & (REG_NAME[b as usize] == 1))
    {
        return true;
    }
    let mut i = 0;
    while i < h.len() {
        match REG_NAME[h[i] as usize] {
            1 => i += 1,
            2 if h.len() > i + 2
                && h[i + 1].is_ascii_hexdigit()
                && h[i + 2].is_ascii_hexdigit() =>
            {
                i += 3
            }
            _ => return false,
        }
    }
    true
}

/// 1: unreserved or sub-delims; 2: `%` (starts pct-encoded); 0: not allowed.
static REG_NAME: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        if b.is_ascii_alphanumeric() {
            t[i] = 1;
        }
        i += 1;
    }
    let extra = b"-._~!$&'()*+,;=";
    let mut j = 0;
    while j < extra.len() {
        t[extra[j] as usize] = 1;
        j += 1;
    }
    t[b'%' as usize] = 2;
    t
};

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
        if coding.is_empty() || !coding.iter().all(|&b| is_tchar(b)) {
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

/// tchar (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `Content-Length = 1*DIGIT` (RFC 9110 §8.6); lists, signs and overflow are errors.
#[inline]
fn parse_content_length(v: &[u8]) -> Result<u64, HeadError> {
    if v.is_empty() {
        return Err(BadRequest("empty Content-Length"));
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return Err(BadRequest("invalid Content-Length"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(BadRequest("Content-Length overflows"))?;
    }
    Ok(n)
}

#[inline]
fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;

/// The value of the first (name, value) span pair whose name is `name`
/// (ASCII case-insensitive); for any head kept as spans into its buffer.
pub fn find_header<'a>(pairs: &[(Span, Span)], buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let name = name.as_bytes();
    pairs
        .iter()
        .find(|(n, _)| n.len() == name.len() && n.get(buf).eq_ignore_ascii_case(name))
        .map(|(_, v)| v.get(buf))
}
