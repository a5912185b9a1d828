//! A request head as every protocol hands it to the handlers: method,
//! target, version, header fields and how the body is framed, each kept as
//! a [`Span`] into the bytes the head was read from, so a head is plain data
//! that owns nothing and can be kept in a pooled slot while its buffer is
//! reused. HTTP/1 fills it straight from the wire ([`crate::h1::parse`]);
//! a protocol with binary heads lays the decoded fields out in a buffer of
//! its own and fills the same spans.

use std::fmt;

/// Request method. Methods are case-sensitive (RFC 9110 §9.1); any other
/// token is [`Method::Other`] and its text is in [`RequestHead::method_span`].
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
    pub fn from_bytes(m: &[u8]) -> Method {
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

    /// RFC 9110 §9.2.1: a request that asks for no change on the server,
    /// so may be served from early data, which can be replayed (RFC 8470).
    pub fn safe(self) -> bool {
        matches!(
            self,
            Method::Get | Method::Head | Method::Options | Method::Trace
        )
    }

    /// RFC 9110 §9.2.2: a request that may be sent twice with the effect of once.
    pub fn idempotent(self) -> bool {
        matches!(
            self,
            Method::Get
                | Method::Head
                | Method::Options
                | Method::Trace
                | Method::Put
                | Method::Delete
        )
    }
}

/// The protocol version the request came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
    Http2,
    Http3,
}

impl Version {
    /// As access logs and CGI's SERVER_PROTOCOL write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2.0",
            Version::Http3 => "HTTP/3.0",
        }
    }

    /// As Via's received-protocol writes it, with the space after it
    /// (RFC 9110 §7.6.3: the name "HTTP" left out; HTTP/2 is "2", HTTP/3
    /// "3").
    pub fn via_protocol(self) -> &'static [u8] {
        match self {
            Version::Http10 => b"1.0 ",
            Version::Http11 => b"1.1 ",
            Version::Http2 => b"2 ",
            Version::Http3 => b"3 ",
        }
    }
}

/// How much request body follows the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// No body.
    Empty,
    /// Exactly this many bytes, more than zero.
    Length(u64),
    /// A body whose length is known only at its end (HTTP/1.1's chunked
    /// coding).
    Stream,
}

/// A byte range `start..end` of the buffer a head was read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u16,
    pub end: u16,
}

impl Span {
    /// The bytes this span covers in `buf` (the buffer the head was read from).
    ///
    /// # Panics
    /// If `buf` is shorter than the span, i.e. not that buffer.
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
    pub fn of(buf: &[u8], part: &[u8]) -> Span {
        let start = part.as_ptr() as usize - buf.as_ptr() as usize;
        debug_assert!(start + part.len() <= buf.len() && start + part.len() <= u16::MAX as usize);
        Span {
            start: start as u16,
            end: (start + part.len()) as u16,
        }
    }
}

/// Header fields as (name, value) spans, in order: the one list every head
/// (request, upstream response, CGI response) keeps. Its capacity is kept
/// when it is cleared, so a pooled head stops allocating once it has grown.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Fields {
    list: Vec<(Span, Span)>,
}

impl Fields {
    pub fn with_capacity(n: usize) -> Fields {
        Fields {
            list: Vec::with_capacity(n),
        }
    }

    #[inline]
    pub fn clear(&mut self) {
        self.list.clear();
    }

    #[inline]
    pub fn push(&mut self, name: Span, value: Span) {
        self.list.push((name, value));
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The fields in order, as (name, value) bytes of `buf`.
    #[inline]
    pub fn iter<'a>(
        &'a self,
        buf: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone + 'a {
        self.list.iter().map(move |(n, v)| (n.get(buf), v.get(buf)))
    }

    /// The value of the first field named `name` (ASCII case-insensitive).
    pub fn get<'a>(&self, buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
        let name = name.as_bytes();
        self.list
            .iter()
            .find(|(n, _)| n.len() == name.len() && n.get(buf).eq_ignore_ascii_case(name))
            .map(|(_, v)| v.get(buf))
    }

    /// The values of every field named `name`, in order.
    pub fn all<'s, 'b: 's>(
        &'s self,
        buf: &'b [u8],
        name: &'s str,
    ) -> impl Iterator<Item = &'b [u8]> + 's {
        let name = name.as_bytes();
        self.list
            .iter()
            .filter(move |(n, _)| n.len() == name.len() && n.get(buf).eq_ignore_ascii_case(name))
            .map(move |(_, v)| v.get(buf))
    }
}

impl fmt::Debug for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.list).finish()
    }
}

/// A complete, validated request head. All spans refer to the buffer it was
/// read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// Bytes of the head as received, from the start of the buffer through
    /// its end (for HTTP/1 the final empty line). The body starts here.
    pub head_len: usize,
    pub method: Method,
    pub method_span: Span,
    /// The request-target as sent: origin-form `/p?q`, absolute-form
    /// `http://h/p`, authority-form (CONNECT) or `*` (OPTIONS).
    pub target: Span,
    pub version: Version,
    pub fields: Fields,
    pub body: BodyKind,
    /// Whether the client means to send another request on this connection
    /// (HTTP/1: RFC 9112 §9.3).
    pub keep_alive: bool,
    /// The client waits for `100 Continue` before sending its body.
    pub expect_continue: bool,
    /// The request's host: an absolute-form target's authority, else the
    /// `Host` field value (may be empty); `None` only on HTTP/1.0.
    pub host: Option<Span>,
}

impl RequestHead {
    /// A blank slot to parse into.
    pub fn empty() -> RequestHead {
        RequestHead {
            head_len: 0,
            method: Method::Other,
            method_span: Span::default(),
            target: Span::default(),
            version: Version::Http11,
            fields: Fields::with_capacity(crate::DEFAULT_MAX_HEADERS),
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
        self.fields.iter(buf)
    }

    /// Value of the first header named `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &str) -> Option<&'a [u8]> {
        self.fields.get(buf, name)
    }

    /// Number of header fields.
    pub fn header_count(&self) -> usize {
        self.fields.len()
    }

    /// The method as sent.
    pub fn method_str<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.method_span.get(buf)
    }

    /// The request-target as sent.
    pub fn target<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        self.target.get(buf)
    }

    /// The path of the target as sent, up to `?`; for an absolute-form
    /// target (`http://host/p`) the part from the first `/` after the
    /// authority (`/` when there is none). For `*` and CONNECT's
    /// authority-form, the target itself.
    pub fn raw_path<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        match self.raw_path_span(buf) {
            s if s.is_empty() => b"/",
            s => s.get(buf),
        }
    }

    /// [`RequestHead::raw_path`] as a span of `buf`: empty for an
    /// absolute-form target without a path, whose path is `/`.
    pub fn raw_path_span(&self, buf: &[u8]) -> Span {
        let target = self.target;
        let t = target.get(buf);
        if self.method == Method::Connect || t == b"*" {
            return target;
        }
        let start = if t.first() == Some(&b'/') {
            0
        } else {
            let after_scheme = t.windows(3).position(|w| w == b"://").map_or(0, |i| i + 3);
            match t[after_scheme..]
                .iter()
                .position(|&b| b == b'/' || b == b'?')
            {
                Some(i) if t[after_scheme + i] == b'/' => after_scheme + i,
                _ => t.len(),
            }
        };
        let end = t[start..]
            .iter()
            .position(|&b| b == b'?')
            .map_or(t.len(), |i| start + i);
        Span {
            start: target.start + start as u16,
            end: target.start + end as u16,
        }
    }

    /// The query of the target, without its `?`; `Some(b"")` for a lone `?`.
    pub fn query<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        let t = self.target(buf);
        t.iter().position(|&b| b == b'?').map(|i| &t[i + 1..])
    }
}
