//! A request's HPACK-decoded head, laid out as the protocol-neutral
//! [`RequestHead`]: method, target and fields written one after another
//! into one buffer, with spans into it, so every handler reads an HTTP/2
//! request exactly as it reads an HTTP/1.1 one.
//!
//! The codec has refused what RFC 9113 §8.2 calls malformed already
//! (uppercase names, connection-specific fields, a `TE` other than
//! `trailers`, pseudo-fields out of place); what is left to decide here:
//!
//! - What the codec lets through but §8.2.1 and §8.3 call malformed
//!   ([`malformed`]): a field value with whitespace at either end, a
//!   `Host` naming another host than `:authority` (both could be believed
//!   by different parts), a CONNECT without `:authority`. Such a stream is
//!   reset with PROTOCOL_ERROR (§8.1.1) and reaches no handler.
//! - `:authority` is the request's host (RFC 9113 §8.3.1), given to the
//!   handlers as a `host` field first.
//! - Cookie fields sent apart are joined with `; ` (§8.2.3), as an
//!   HTTP/1.1 upstream expects one.
//! - `content-length` must be one number, within `max_body`; DATA that
//!   disagrees with it is the codec's stream error.

use bytes::BytesMut;
use http::request::Parts;

use crate::error::{Error, Kind};
use crate::head::{BodyKind, Method, RequestHead, Span, Version};

fn push(buf: &mut BytesMut, bytes: &[u8]) -> Span {
    let start = buf.len();
    buf.extend_from_slice(bytes);
    Span {
        start: start as u16,
        end: buf.len() as u16,
    }
}

/// Fills `head` and `buf` from the decoded request; `end` says whether its
/// HEADERS frame ended the stream (no body).
pub(crate) fn lay_out(
    parts: &Parts,
    end: bool,
    limits: &crate::Limits,
    head: &mut RequestHead,
    buf: &mut BytesMut,
) -> Result<(), Error> {
    buf.clear();
    head.fields.clear();
    let too_large = || Error::new(Kind::HeadersTooLarge, "request head over max_head");
    let max = limits.max_head.min(u16::MAX as usize);
    let method = parts.method.as_str().as_bytes();
    head.method = Method::from_bytes(method);
    head.method_span = push(buf, method);
    let authority = parts.uri.authority().map(|a| a.as_str().as_bytes());
    let target: &[u8] = if head.method == Method::Connect {
        authority.unwrap_or_default()
    } else {
        parts
            .uri
            .path_and_query()
            .map_or(b"/", |p| p.as_str().as_bytes())
    };
    if target.len() > limits.max_request_line {
        return Err(Error::new(Kind::UriTooLong, "request target too long"));
    }
    head.target = push(buf, target);
    head.version = Version::Http2;
    head.host = None;
    if let Some(a) = authority {
        let name = push(buf, b"host");
        let value = push(buf, a);
        head.fields.push(name, value);
        head.host = Some(value);
    }
    let mut body = if end {
        BodyKind::Empty
    } else {
        BodyKind::Stream
    };
    let mut cookie: Option<Span> = None;
    head.expect_continue = false;
    for (name, value) in parts.headers.iter() {
        let (n, v) = (name.as_str().as_bytes(), value.as_bytes());
        if head.fields.len() >= limits.max_headers {
            return Err(Error::new(Kind::HeadersTooLarge, "too many header fields"));
        }
        if buf.len() + n.len() + v.len() + 4 > max {
            return Err(too_large());
        }
        match n {
            b"host" => {
                match head.host {
                    Some(h) if !h.get(buf).eq_ignore_ascii_case(v) => {
                        return Err(Error::new(Kind::BadRequest, "Host differs from :authority"))
                    }
                    Some(_) => {}
                    None => {
                        let name = push(buf, b"host");
                        let value = push(buf, v);
                        head.fields.push(name, value);
                        head.host = Some(value);
                    }
                }
                continue;
            }
            b"content-length" => {
                let len = parse_length(v)?;
                if len > limits.max_body {
                    return Err(Error::new(
                        Kind::BodyTooLarge,
                        "content-length over max_body",
                    ));
                }
                if !end {
                    body = if len == 0 {
                        BodyKind::Empty
                    } else {
                        BodyKind::Length(len)
                    };
                }
            }
            b"expect" if v.eq_ignore_ascii_case(b"100-continue") => head.expect_continue = true,
            _ => {}
        }
        if n == b"cookie" {
            cookie = Some(match cookie {
                None => push(buf, v),
                Some(c) => {
                    // Rare enough to copy: the value joined so far, again.
                    let mut joined = c.get(buf).to_vec();
                    joined.extend_from_slice(b"; ");
                    joined.extend_from_slice(v);
                    push(buf, &joined)
                }
            });
            continue;
        }
        let name = push(buf, n);
        let value = push(buf, v);
        head.fields.push(name, value);
    }
    if let Some(c) = cookie {
        let name = push(buf, b"cookie");
        head.fields.push(name, c);
    }
    if buf.len() > max {
        return Err(too_large());
    }
    if head.host.is_none() && head.method != Method::Connect {
        // RFC 9113 §8.3.1: a request without :authority carries Host; an
        // HTTP/2 request with neither has no host to route on.
        return Err(Error::new(Kind::BadRequest, "no :authority or Host"));
    }
    head.body = body;
    head.keep_alive = true;
    head.head_len = buf.len();
    Ok(())
}

/// Why RFC 9113 calls the request malformed (a stream error), if it does.
pub(crate) fn malformed(parts: &Parts) -> Option<&'static str> {
    let authority = parts.uri.authority().map(|a| a.as_str().as_bytes());
    if parts.method == http::Method::CONNECT && authority.is_none() {
        return Some("CONNECT without :authority");
    }
    for (name, value) in parts.headers.iter() {
        let v = value.as_bytes();
        let blank = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
        if blank(v.first()) || blank(v.last()) {
            return Some("whitespace around a field value");
        }
        if name == http::header::HOST {
            if let Some(a) = authority {
                if !a.eq_ignore_ascii_case(v) {
                    return Some("Host differs from :authority");
                }
            }
        }
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

    fn parts(req: http::Request<()>) -> Parts {
        req.into_parts().0
    }

    fn lay(req: http::Request<()>, end: bool) -> Result<(RequestHead, BytesMut), Error> {
        let mut head = RequestHead::empty();
        let mut buf = BytesMut::new();
        lay_out(
            &parts(req),
            end,
            &crate::Limits::default(),
            &mut head,
            &mut buf,
        )?;
        Ok((head, buf))
    }

    #[test]
    fn authority_becomes_the_host_field_and_cookies_are_joined() {
        let req = http::Request::get("https://example.com/a/b?q=1")
            .header("cookie", "a=1")
            .header("accept", "*/*")
            .header("cookie", "b=2")
            .body(())
            .unwrap();
        let (head, buf) = lay(req, true).unwrap();
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
        let req = |host: &str, extra: &str| {
            parts(
                http::Request::get("https://a.example/")
                    .header("host", host)
                    .header("x-extra", extra)
                    .body(())
                    .unwrap(),
            )
        };
        assert_eq!(malformed(&req("A.example", "v")), None);
        assert!(malformed(&req("b.example", "v")).is_some());
        assert!(malformed(&req("a.example", " v")).is_some());
        assert!(malformed(&req("a.example", "v\t")).is_some());
        let connect = http::Request::connect("/").body(()).unwrap();
        assert!(malformed(&parts(connect)).is_some());
    }

    #[test]
    fn a_host_the_same_as_the_authority_is_given_once() {
        let same = http::Request::get("https://a.example/")
            .header("host", "A.example")
            .body(())
            .unwrap();
        let (head, buf) = lay(same, true).unwrap();
        assert_eq!(head.header_count(), 1);
        assert_eq!(head.host.unwrap().get(&buf), b"a.example");
    }

    #[test]
    fn content_length_frames_the_body() {
        let req = |cl: &str| {
            http::Request::post("https://a.example/")
                .header("content-length", cl)
                .body(())
                .unwrap()
        };
        assert_eq!(lay(req("12"), false).unwrap().0.body, BodyKind::Length(12));
        assert_eq!(lay(req("0"), false).unwrap().0.body, BodyKind::Empty);
        assert_eq!(lay(req("1x"), false).unwrap_err().status(), 400);
        assert_eq!(lay(req("99999999999"), false).unwrap_err().status(), 413);
        let no_len = http::Request::post("https://a.example/").body(()).unwrap();
        assert_eq!(lay(no_len, false).unwrap().0.body, BodyKind::Stream);
    }

    #[test]
    fn a_head_over_max_head_is_431() {
        let req = http::Request::get("https://a.example/")
            .header("x-big", "v".repeat(20_000))
            .body(())
            .unwrap();
        assert_eq!(lay(req, true).unwrap_err().status(), 431);
    }
}
