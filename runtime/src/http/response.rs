//! Response heads: status line, the headers the server adds itself, and the
//! small canned responses for protocol errors.

use bytes::{BufMut, BytesMut};

use super::Version;

pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Whether a response with this status to this method carries no body
/// (RFC 9110 §6.4.1).
pub fn bodyless(status: u16, is_head: bool) -> bool {
    is_head || (100..200).contains(&status) || status == 204 || status == 304
}

pub fn write_status_line(out: &mut BytesMut, version: Version, status: u16) {
    out.put_slice(match version {
        Version::Http10 => b"HTTP/1.0 ",
        Version::Http11 => b"HTTP/1.1 ",
    });
    put_u64(out, u64::from(status));
    out.put_u8(b' ');
    out.put_slice(reason(status).as_bytes());
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
    out.put_slice(b"Server: ringside\r\nDate: ");
    super::date::with_date(|d| out.put_slice(d));
    out.put_slice(b"\r\n");
}

/// Decimal digits without allocating.
#[inline]
pub fn put_u64(out: &mut BytesMut, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.put_slice(&tmp[i..]);
}

/// A complete response for a request that failed before any handler ran; the
/// connection closes after it. Returns the body's length.
pub fn write_error(out: &mut BytesMut, status: u16) -> u64 {
    let reason = reason(status);
    let body_len = (4 + reason.len() + 1) as u64;
    write_status_line(out, Version::Http11, status);
    write_server_headers(out);
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
