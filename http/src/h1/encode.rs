//! The HTTP/1 wire format, written: status and request lines, header
//! lines, the headers the server adds itself, and the small canned response
//! for a request refused before any handler ran. The server's responses and
//! the proxy's upstream requests both go out through these.

use bytes::{BufMut, BytesMut};

use crate::status::reason;
use crate::Version;

pub fn write_status_line(out: &mut BytesMut, version: Version, status: u16) {
    out.put_slice(match version {
        Version::Http10 => b"HTTP/1.0 ",
        Version::Http11 | Version::Http2 | Version::Http3 => b"HTTP/1.1 ",
    });
    put_u64(out, u64::from(status));
    out.put_u8(b' ');
    out.put_slice(reason(status).as_bytes());
    out.put_slice(b"\r\n");
}

/// `METHOD path?query HTTP/1.1`: the path given in parts (a route's
/// replacement prefix and the rest), the query without its `?`.
pub fn write_request_line(out: &mut BytesMut, method: &[u8], path: &[&[u8]], query: Option<&[u8]>) {
    out.put_slice(method);
    out.put_u8(b' ');
    for part in path {
        out.put_slice(part);
    }
    if let Some(q) = query {
        out.put_u8(b'?');
        out.put_slice(q);
    }
    out.put_slice(b" HTTP/1.1\r\n");
}

/// `Content-Length: n`.
#[inline]
pub fn write_content_length(out: &mut BytesMut, n: u64) {
    out.put_slice(b"Content-Length: ");
    put_u64(out, n);
    out.put_slice(b"\r\n");
}

#[inline]
pub fn write_header(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.put_slice(name);
    out.put_slice(b": ");
    out.put_slice(value);
    out.put_slice(b"\r\n");
}

/// Date and Server, which every response carries.
#[inline]
pub fn write_server_headers(out: &mut BytesMut) {
    crate::fields::with_server_line(|l| out.put_slice(l));
    out.put_slice(b"Date: ");
    crate::date::with_date(|d| out.put_slice(d));
    out.put_slice(b"\r\n");
}

/// Decimal digits without allocating.
#[inline]
pub fn put_u64(out: &mut BytesMut, v: u64) {
    out.put_slice(crate::grammar::decimal(v, &mut [0u8; 20]));
}

/// A complete response for a request that failed before any handler ran; the
/// connection closes after it. Returns the body's length.
pub fn write_error(out: &mut BytesMut, status: u16) -> u64 {
    write_error_with(out, status, b"")
}

/// [`write_error`] with header lines of its own (`Name: value\r\n` each).
pub fn write_error_with(out: &mut BytesMut, status: u16, lines: &[u8]) -> u64 {
    let reason = reason(status);
    let body_len = (4 + reason.len() + 1) as u64;
    write_status_line(out, Version::Http11, status);
    write_server_headers(out);
    out.put_slice(lines);
    out.put_slice(
        b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ",
    );
    put_u64(out, body_len);
    out.put_slice(b"\r\n\r\n");
    put_u64(out, u64::from(status));
    out.put_u8(b' ');
    out.put_slice(reason.as_bytes());
    out.put_u8(b'\n');
    body_len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        for (v, s) in [
            (0u64, "0"),
            (7, "7"),
            (10, "10"),
            (1234567890, "1234567890"),
            (u64::MAX, "18446744073709551615"),
        ] {
            let mut b = BytesMut::new();
            put_u64(&mut b, v);
            assert_eq!(&b[..], s.as_bytes());
        }
    }

    #[test]
    fn error_response_is_framed() {
        let mut b = BytesMut::new();
        write_error(&mut b, 431);
        let text = std::str::from_utf8(&b).unwrap();
        assert!(text.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("Connection: close"));
        let cl: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(cl, body.len());
    }
}
