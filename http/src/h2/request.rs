//! A request's head, laid out field by field as HPACK (or HTTP/3's QPACK,
//! `crate::h3::request`) decodes it into the protocol-neutral
//! [`RequestHead`]: method, target and fields written one
//! after another into one buffer, with spans into it, so every handler
//! reads an HTTP/2 request exactly as it reads an HTTP/1.1 one, and
//! nothing is built in between.
//!
//! What RFC 9113 §8.2 and §8.3 call malformed is found here, each a stream
//! error PROTOCOL_ERROR that reaches no handler: names with uppercase or
//! outside the token grammar, connection-specific fields, a `TE` other
//! than `trailers`, values with NUL, CR or LF or with whitespace at either
//! end, pseudo-fields unknown, repeated or after a regular field, a `Host`
//! naming another host than `:authority` (or, without one, not a host),
//! and what the pseudo-fields hold, checked by [`crate::pseudo`] as HTTP/3
//! will check it: a `:method` that is not a token, a `:path` not in origin
//! form (`*` only for OPTIONS), an `:authority` with userinfo, a `:scheme`
//! other than `http` and `https`, and CONNECT's own rules.
//!
//! - `:authority` is the request's host (§8.3.1), given to the handlers as
//!   a `host` field first.
//! - Cookie fields sent apart are joined with `; ` (§8.2.3), as an
//!   HTTP/1.1 upstream expects one.
//! - A head past `max_head` or `max_headers` is 431; decoding goes on
//!   without copying, so the HPACK state stays in step (an HPACK bomb
//!   costs its decode, not its size).

use bytes::BytesMut;

use crate::error::{Error, Kind};
use crate::head::{BodyKind, Method, RequestHead, Span, Version};
use crate::pseudo::{Form, Pseudo};

/// Why a head is not served.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// A stream error PROTOCOL_ERROR (§8.1.1).
    Malformed(&'static str),
    /// Answered with the error's status on the stream.
    Answer(Error),
}

fn push(buf: &mut BytesMut, bytes: &[u8]) -> Span {
    let start = buf.len();
    buf.extend_from_slice(bytes);
    Span {
        start: start as u16,
        end: buf.len() as u16,
    }
}

/// A field name as §8.2.1 allows it: a token with no uppercase.
fn valid_name(n: &[u8]) -> bool {
    !n.is_empty()
        && n.iter()
            .all(|&b| crate::grammar::is_tchar(b) && !b.is_ascii_uppercase())
}

/// A field value as §8.2.1 allows it.
fn valid_value(v: &[u8]) -> bool {
    let blank = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    !blank(v.first()) && !blank(v.last()) && !crate::grammar::has_nul_cr_lf(v)
}

fn connection_specific(n: &[u8]) -> bool {
    matches!(
        n,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

pub(crate) struct Builder<'a> {
    head: &'a mut RequestHead,
    buf: &'a mut BytesMut,
    limits: &'a crate::Limits,
    max: usize,
    method: Option<Span>,
    scheme: Option<Span>,
    path: Option<Span>,
    authority: Option<Span>,
    /// Extended CONNECT's `:protocol` (RFC 8441).
    protocol: Option<Span>,
    regular: bool,
    cookie: Option<Span>,
    content_length: Option<u64>,
    failed: Option<Refusal>,
    /// HTTP/2, or HTTP/3, whose requests follow the same rules (RFC 9114
    /// §4.2, §4.3).
    version: Version,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(
        head: &'a mut RequestHead,
        buf: &'a mut BytesMut,
        limits: &'a crate::Limits,
        version: Version,
    ) -> Builder<'a> {
        buf.clear();
        head.fields.clear();
        head.host = None;
        head.expect_continue = false;
        Builder {
            head,
            buf,
            limits,
            max: limits.max_head.min(u16::MAX as usize),
            method: None,
            scheme: None,
            path: None,
            authority: None,
            protocol: None,
            regular: false,
            cookie: None,
            content_length: None,
            failed: None,
            version,
        }
    }

    fn refuse(&mut self, r: Refusal) -> bool {
        self.failed = Some(r);
        false
    }

    fn malformed(&mut self, why: &'static str) -> bool {
        self.refuse(Refusal::Malformed(why))
    }

    /// Takes one decoded field; `false` once the head is refused (the
    /// decoder then decodes the rest without handing it on).
    pub(crate) fn field(&mut self, n: &[u8], v: &[u8]) -> bool {
        if self.buf.len() + n.len() + v.len() + 4 > self.max {
            return self.refuse(Refusal::Answer(Error::new(
                Kind::HeadersTooLarge,
                "request head over max_head",
            )));
        }
        if !valid_value(v) {
            return self.malformed("a field value with whitespace, NUL, CR or LF");
        }
        if let Some(pseudo) = n.strip_prefix(b":") {
            return self.pseudo(pseudo, v);
        }
        if !valid_name(n) {
            return self.malformed("a field name with uppercase or outside the token grammar");
        }
        if connection_specific(n) {
            return self.malformed("a connection-specific field");
        }
        if !self.regular {
            self.regular = true;
            self.host_first();
        }
        if self.head.fields.len() >= self.limits.max_headers {
            return self.refuse(Refusal::Answer(Error::new(
                Kind::HeadersTooLarge,
                "too many header fields",
            )));
        }
        match n {
            b"te" if v != b"trailers" => return self.malformed("TE other than trailers"),
            b"host" => {
                return match self.head.host {
                    Some(h) if !h.get(self.buf).eq_ignore_ascii_case(v) => {
                        self.malformed("Host differs from :authority")
                    }
                    Some(_) => true,
                    None if !crate::authority::valid_host_port(v) => {
                        self.malformed("a Host that is not host[:port]")
                    }
                    None => {
                        let name = push(self.buf, b"host");
                        let value = push(self.buf, v);
                        self.head.fields.push(name, value);
                        self.head.host = Some(value);
                        true
                    }
                };
            }
            b"content-length" => match parse_length(v) {
                Ok(len) if self.content_length.is_some_and(|l| l != len) => {
                    return self.malformed("content-length fields disagree")
                }
                Ok(len) => self.content_length = Some(len),
                Err(e) => return self.refuse(Refusal::Answer(e)),
            },
            b"expect" if v.eq_ignore_ascii_case(b"100-continue") => {
                self.head.expect_continue = true
            }
            b"cookie" => {
                self.cookie = Some(match self.cookie {
                    None => push(self.buf, v),
                    Some(c) => {
                        // Rare enough to copy: the value joined so far, again.
                        let mut joined = c.get(self.buf).to_vec();
                        joined.extend_from_slice(b"; ");
                        joined.extend_from_slice(v);
                        push(self.buf, &joined)
                    }
                });
                return true;
            }
            _ => {}
        }
        let name = push(self.buf, n);
        let value = push(self.buf, v);
        self.head.fields.push(name, value);
        true
    }

    fn pseudo(&mut self, p: &[u8], v: &[u8]) -> bool {
        if self.regular {
            return self.malformed("a pseudo-field after a regular field");
        }
        let slot = match p {
            b"method" => &mut self.method,
            b"path" => &mut self.path,
            b"authority" => &mut self.authority,
            b"protocol" => &mut self.protocol,
            b"scheme" => &mut self.scheme,
            _ => return self.malformed("an unknown pseudo-field"),
        };
        if slot.is_some() {
            return self.malformed("a repeated pseudo-field");
        }
        let start = self.buf.len();
        self.buf.extend_from_slice(v);
        *slot = Some(Span {
            start: start as u16,
            end: self.buf.len() as u16,
        });
        true
    }

    /// An extended CONNECT (RFC 8441 §4) is laid out as the HTTP/1.1
    /// upgrade it stands for, so the proxy relays it as any WebSocket:
    /// `GET :path` with `Connection: upgrade`, `Upgrade: :protocol`, and
    /// for a WebSocket the `Sec-WebSocket-Key` HTTP/2 does without.
    fn extended_connect(&mut self, protocol: Span, path: Span) {
        self.head.method = Method::Get;
        self.head.method_span = push(self.buf, b"GET");
        self.head.target = path;
        let name = push(self.buf, b"connection");
        let value = push(self.buf, b"upgrade");
        self.head.fields.push(name, value);
        let name = push(self.buf, b"upgrade");
        self.head.fields.push(name, protocol);
        let websocket = protocol.get(self.buf).eq_ignore_ascii_case(b"websocket");
        let has_key = self
            .head
            .headers(self.buf)
            .any(|(n, _)| n == b"sec-websocket-key");
        if websocket && !has_key {
            let name = push(self.buf, b"sec-websocket-key");
            let value = push(self.buf, &websocket_key());
            self.head.fields.push(name, value);
        }
    }

    /// `:authority` goes first among the fields, as `host`.
    fn host_first(&mut self) {
        if let Some(a) = self.authority {
            let name = push(self.buf, b"host");
            self.head.fields.push(name, a);
            self.head.host = Some(a);
        }
    }

    /// The head is whole; `end` says whether its HEADERS frame ended the
    /// stream. Returns the declared content-length.
    pub(crate) fn finish(mut self, end: bool) -> Result<Option<u64>, Refusal> {
        if let Some(r) = self.failed.take() {
            return Err(r);
        }
        if !self.regular {
            self.host_first();
        }
        let span = |s: Option<Span>| s.map(|s| s.get(self.buf));
        let fields = Pseudo {
            method: span(self.method),
            scheme: span(self.scheme),
            path: span(self.path),
            authority: span(self.authority),
            protocol: span(self.protocol),
        };
        let form = crate::pseudo::check(&fields).map_err(Refusal::Malformed)?;
        // `check` found each of these where its form needs it.
        let (method, path) = (
            self.method.unwrap_or_default(),
            self.path.unwrap_or_default(),
        );
        self.head.method = Method::from_bytes(method.get(self.buf));
        self.head.method_span = method;
        match form {
            Form::Extended => {
                let protocol = self.protocol.unwrap_or_default();
                self.extended_connect(protocol, path);
            }
            Form::Connect => self.head.target = self.authority.unwrap_or_default(),
            Form::Path => {
                if path.end - path.start > self.limits.max_request_line as u16 {
                    return Err(Refusal::Answer(Error::new(
                        Kind::UriTooLong,
                        "request target too long",
                    )));
                }
                self.head.target = path;
            }
        }
        // An extended CONNECT stands for a GET from here on.
        let m = self.head.method;
        if let Some(c) = self.cookie {
            let name = push(self.buf, b"cookie");
            self.head.fields.push(name, c);
        }
        if self.buf.len() > self.max {
            return Err(Refusal::Answer(Error::new(
                Kind::HeadersTooLarge,
                "request head over max_head",
            )));
        }
        if self.head.host.is_none() && m != Method::Connect {
            // RFC 9113 §8.3.1: a request without :authority carries Host; an
            // HTTP/2 request with neither has no host to route on.
            return Err(Refusal::Answer(Error::new(
                Kind::BadRequest,
                "no :authority or Host",
            )));
        }
        if let Some(len) = self.content_length {
            if len > self.limits.max_body {
                return Err(Refusal::Answer(Error::new(
                    Kind::BodyTooLarge,
                    "content-length over max_body",
                )));
            }
            if end && len > 0 {
                return Err(Refusal::Malformed("content-length with no DATA"));
            }
        }
        self.head.version = self.version;
        self.head.body = match self.content_length {
            _ if end => BodyKind::Empty,
            Some(0) => BodyKind::Empty,
            Some(n) => BodyKind::Length(n),
            None => BodyKind::Stream,
        };
        if self.protocol.is_some() {
            // The tunnel's bytes follow the switch, not as a body.
            self.head.body = BodyKind::Empty;
        }
        self.head.keep_alive = true;
        self.head.head_len = self.buf.len();
        Ok(self.content_length)
    }
}

/// A fresh Sec-WebSocket-Key: 16 bytes, base64. The upstream only echoes
/// it hashed; it guards against caches, not attackers, so a clock and a
/// counter mixed are enough.
fn websocket_key() -> [u8; 24] {
    use std::cell::Cell;
    use std::hash::{BuildHasher, Hasher};
    thread_local!(static N: Cell<u64> = const { Cell::new(0) });
    let n = N.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let mut raw = [0u8; 16];
    for (i, half) in raw.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_usize(i);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = [b'='; 24];
    for (i, c) in raw.chunks(3).enumerate() {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for j in 0..=c.len() {
            out[i * 4 + j] = B64[(v >> (18 - 6 * j) & 63) as usize];
        }
    }
    out
}

/// Checks one trailer field (§8.1): no pseudo-fields, the same grammar.
pub(crate) fn trailer_malformed(n: &[u8], v: &[u8]) -> Option<&'static str> {
    if n.starts_with(b":") {
        return Some("a pseudo-field in trailers");
    }
    if !valid_name(n) || !valid_value(v) {
        return Some("a malformed trailer field");
    }
    if connection_specific(n) {
        return Some("a connection-specific trailer field");
    }
    None
}

fn parse_length(v: &[u8]) -> Result<u64, Error> {
    let bad = || Error::new(Kind::BadRequest, "invalid content-length");
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fields<'a> = &'a [(&'a str, &'a str)];

    fn lay(fields: Fields<'_>, end: bool) -> Result<(RequestHead, BytesMut), Refusal> {
        let mut head = RequestHead::empty();
        let mut buf = BytesMut::new();
        let limits = crate::Limits::default();
        let mut b = Builder::new(&mut head, &mut buf, &limits, Version::Http2);
        for (n, v) in fields {
            if !b.field(n.as_bytes(), v.as_bytes()) {
                break;
            }
        }
        b.finish(end)?;
        Ok((head, buf))
    }

    const GET: Fields<'static> = &[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/a/b?q=1"),
        (":authority", "example.com"),
    ];

    fn with(extra: Fields<'_>) -> Vec<(&str, &str)> {
        GET.iter().chain(extra).copied().collect()
    }

    fn malformed(fields: &[(&str, &str)]) -> bool {
        matches!(lay(fields, true), Err(Refusal::Malformed(_)))
    }

    #[test]
    fn authority_becomes_the_host_field_and_cookies_are_joined() {
        let f = with(&[("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2")]);
        let (head, buf) = lay(&f, true).unwrap();
        assert_eq!(head.method, Method::Get);
        assert_eq!(head.target(&buf), b"/a/b?q=1");
        assert_eq!(head.host.unwrap().get(&buf), b"example.com");
        let fields: Vec<_> = head.headers(&buf).collect();
        assert_eq!(fields[0], (&b"host"[..], &b"example.com"[..]));
        assert_eq!(head.header(&buf, "cookie"), Some(&b"a=1; b=2"[..]));
        assert_eq!(head.header(&buf, "accept"), Some(&b"*/*"[..]));
        assert_eq!(head.body, BodyKind::Empty);
        assert_eq!(head.version.as_str(), "HTTP/2.0");
    }

    #[test]
    fn what_rfc_9113_calls_malformed_is_named() {
        assert!(!malformed(&with(&[("host", "Example.com")])));
        assert!(malformed(&with(&[("host", "b.example")])));
        assert!(malformed(&with(&[("x-a", " v")])));
        assert!(malformed(&with(&[("x-a", "v\t")])));
        assert!(malformed(&with(&[("x-a", "a\0b")])));
        assert!(malformed(&with(&[("X-Upper", "1")])));
        assert!(malformed(&with(&[("connection", "close")])));
        assert!(malformed(&with(&[("te", "gzip")])));
        assert!(!malformed(&with(&[("te", "trailers")])));
        assert!(malformed(&with(&[("x-a", "1"), (":path", "/")])));
        assert!(malformed(&with(&[(":status", "200")])));
        assert!(malformed(&with(&[(":method", "GET")])));
        assert!(malformed(&[
            (":method", "GET"),
            (":path", "/"),
            (":authority", "a")
        ]));
        assert!(malformed(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "")
        ]));
        assert!(malformed(&[(":method", "CONNECT"), (":path", "/")]));
        assert!(!malformed(&[
            (":method", "CONNECT"),
            (":authority", "a:443")
        ]));
    }

    #[test]
    fn an_extended_connect_is_laid_out_as_the_upgrade_it_stands_for() {
        let ws = [
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "https"),
            (":path", "/chat"),
            (":authority", "a.example"),
            ("sec-websocket-version", "13"),
        ];
        let (head, buf) = lay(&ws, false).unwrap();
        assert_eq!(head.method, Method::Get);
        assert_eq!(head.method_span.get(&buf), b"GET");
        assert_eq!(head.target(&buf), b"/chat");
        assert_eq!(head.header(&buf, "connection"), Some(&b"upgrade"[..]));
        assert_eq!(head.header(&buf, "upgrade"), Some(&b"websocket"[..]));
        let key = head.header(&buf, "sec-websocket-key").unwrap();
        assert_eq!((key.len(), &key[22..]), (24, &b"=="[..]));
        assert_eq!(head.body, BodyKind::Empty);
        assert!(malformed(&with(&[(":protocol", "websocket")])));
        assert!(malformed(&[
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":authority", "a")
        ]));
    }

    #[test]
    fn content_length_frames_the_body() {
        fn post(cl: &str) -> Vec<(&str, &str)> {
            vec![
                (":method", "POST"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "a"),
                ("content-length", cl),
            ]
        }
        assert_eq!(
            lay(&post("12"), false).unwrap().0.body,
            BodyKind::Length(12)
        );
        assert_eq!(lay(&post("0"), false).unwrap().0.body, BodyKind::Empty);
        let status = |r: Result<_, Refusal>| match r {
            Err(Refusal::Answer(e)) => e.status(),
            other => panic!("{:?}", other.map(|_| ())),
        };
        assert_eq!(status(lay(&post("1x"), false)), 400);
        assert_eq!(status(lay(&post("99999999999"), false)), 413);
        let no_len = &post("1")[..4];
        assert_eq!(lay(no_len, false).unwrap().0.body, BodyKind::Stream);
    }

    #[test]
    fn a_head_over_max_head_is_431() {
        let big = "v".repeat(20_000);
        let extra = [("x-big", big.as_str())];
        let f = with(&extra);
        match lay(&f, true) {
            Err(Refusal::Answer(e)) => assert_eq!(e.status(), 431),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
