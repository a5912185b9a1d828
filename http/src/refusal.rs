//! What a handler is told of a request refused before it ran
//! ([`crate::Handler::refused`]): enough for an access log line as nginx
//! writes one, the request line included whenever it was read whole.

use std::net::SocketAddr;
use std::time::Duration;

use crate::head::Version;

/// A request refused before any handler ran.
pub struct Refusal<'a> {
    /// The status sent.
    pub status: u16,
    /// The length of the body sent with it.
    pub body_bytes: u64,
    /// The request line, where it was read whole (a head over a limit, or
    /// one that stopped coming, may still have had one).
    pub line: Option<RequestLine<'a>>,
    /// From the request's first byte to the refusal: a head that timed
    /// out took the whole header timeout.
    pub elapsed: Duration,
    /// The client's address, found only when asked for.
    pub peer: &'a dyn Fn() -> Option<SocketAddr>,
}

/// A request line's three parts, as the client sent them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLine<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub version: Version,
}

impl<'a> RequestLine<'a> {
    /// The HTTP/1 request line at the start of `buf`, if it is there whole
    /// and has the form `method SP target SP HTTP/1.x` (RFC 9112 §3);
    /// whatever else the head holds, valid or not, is not looked at.
    pub fn parse(buf: &'a [u8]) -> Option<RequestLine<'a>> {
        // Empty lines before it are skipped, as the parser does (RFC 9112
        // §2.2).
        let start = buf.iter().position(|&b| b != b'\r' && b != b'\n')?;
        let buf = &buf[start..];
        let end = buf.iter().position(|&b| b == b'\n')?;
        let line = buf[..end].strip_suffix(b"\r").unwrap_or(&buf[..end]);
        let mut parts = line.split(|&b| b == b' ');
        let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || method.is_empty() || target.is_empty() {
            return None;
        }
        let version = match version {
            b"HTTP/1.1" => Version::Http11,
            b"HTTP/1.0" => Version::Http10,
            _ => return None,
        };
        Some(RequestLine {
            method,
            target,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_line_of_three_parts_only() {
        let line = RequestLine::parse(b"POST /up?x=1 HTTP/1.1\r\nContent-Length: 9999999\r\n");
        assert_eq!(
            line,
            Some(RequestLine {
                method: b"POST",
                target: b"/up?x=1",
                version: Version::Http11
            })
        );
        assert_eq!(
            RequestLine::parse(b"\r\nGET / HTTP/1.0\n").map(|l| l.version),
            Some(Version::Http10)
        );
        for no in [
            &b"GET / HTTP/1.1"[..],
            b"GET /a b HTTP/1.1\r\n",
            b"GET  / HTTP/1.1\r\n",
            b"GET / HTTP/2.0\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n",
            b"\r\n",
        ] {
            assert_eq!(RequestLine::parse(no), None, "{no:?}");
        }
    }
}
