//! The CGI/1.1 meta-variables a FastCGI request sends as its PARAMS.
//!
//! # Background
//!
//! A FastCGI responder gets its request as CGI meta-variables (FastCGI
//! specification §6.2), name-value pairs in the PARAMS stream. RFC 3875 §4.1
//! defines them; servers add a few that PHP and its frameworks rely on
//! (`REQUEST_URI`, `SCRIPT_FILENAME`, `DOCUMENT_ROOT`, `DOCUMENT_URI`,
//! `REQUEST_SCHEME`, `HTTPS`, `REDIRECT_STATUS`), named as nginx's
//! `fastcgi_params` and Apache's mod_proxy_fcgi name them.
//!
//! # The rules
//!
//! - `QUERY_STRING` and `PATH_INFO` are always sent, empty when there is
//!   none (RFC 3875 §4.1.7); `PATH_TRANSLATED` only with a path info
//!   (§4.1.6), as the document root joined with it.
//! - `REDIRECT_STATUS=200` satisfies php-cgi's `cgi.force_redirect`.
//! - `CONTENT_TYPE` and `CONTENT_LENGTH` only when the request has them
//!   (§4.1.2, §4.1.3).
//! - Every request header becomes `HTTP_` + its name upper-cased with `-`
//!   as `_` (§4.1.18). Several fields of one name are joined with `", "`
//!   (RFC 9110 §5.3), `Cookie` with `"; "` (RFC 6265 §5.4), in one
//!   variable at the place of the first. `Content-Type` and
//!   `Content-Length` are not repeated as `HTTP_CONTENT_*`.
//! - A header whose name has anything but letters, digits and `-` is
//!   dropped, so that `X_Foo` cannot pose as `X-Foo` (both would map to
//!   `HTTP_X_FOO`; nginx's `underscores_in_headers off`), and so is one whose
//!   name is longer than [`MAX_HEADER_NAME`].
//! - `HTTP_PROXY` is never sent: a `Proxy` request header is dropped
//!   (httpoxy, CVE-2016-5385: CGI programs read `HTTP_PROXY` as their
//!   outgoing proxy).
//! - Nor `HTTP_CLIENT_CERT` or `HTTP_CLIENT_CERT_CHAIN`: RFC 9440's fields
//!   are the proxy's alone (`upstream::client_cert`).
//! - A request served from TLS early data (HTTP/3's 0-RTT) gets
//!   `HTTP_EARLY_DATA=1`, as if it carried `Early-Data: 1`, as an HTTP
//!   upstream is told (RFC 8470 §5.1): the script may refuse it with 425.
//!   A client's own `Early-Data` field goes on as any other.
//!
//! Encoding allocates nothing beyond `out` growing: names are built in a
//! stack buffer, joined values are written piece by piece after their total
//! length is known. Joining looks at the headers once per header
//! (quadratic), which for the at most 100 fields a request head may carry
//! costs less than a hash map would.

use std::io::Write as _;
use std::net::IpAddr;

use bytes::{BufMut, BytesMut};

use super::record::{write_name_value, write_name_value_lengths};
use ringside_http::grammar::decimal;

/// Longest header name passed on as `HTTP_*`; longer ones are dropped.
pub const MAX_HEADER_NAME: usize = 256;

/// Everything a FastCGI request's PARAMS need (RFC 3875 §4.1 and the common
/// extras).
#[derive(Clone, Debug)]
pub struct CgiRequest<'a> {
    pub method: &'a [u8],
    /// The request-target as sent, with the query.
    pub request_uri: &'a [u8],
    /// The query without `?`; empty if none.
    pub query: &'a [u8],
    /// The URL path of the script, e.g. `/index.php`.
    pub script_name: &'a [u8],
    /// The script's absolute file path.
    pub script_filename: &'a [u8],
    /// The URL path after the script's; may be empty.
    pub path_info: &'a [u8],
    pub document_root: &'a [u8],
    pub server_name: &'a [u8],
    pub server_port: u16,
    /// E.g. `HTTP/1.1`.
    pub server_protocol: &'a [u8],
    pub server_addr: IpAddr,
    pub remote_addr: IpAddr,
    /// The client came on a unix socket: REMOTE_ADDR is `unix:`, as
    /// nginx's `$remote_addr`.
    pub remote_unix: bool,
    pub remote_port: u16,
    pub https: bool,
    pub content_type: Option<&'a [u8]>,
    pub content_length: Option<u64>,
    pub server_software: &'a [u8],
    /// Served from TLS early data, before the handshake ended.
    pub early_data: bool,
}

/// Encodes all params of `req` and its request `headers` (name as sent,
/// value) as name-value pairs into one contiguous block appended to `out`;
/// the caller wraps it in PARAMS records with
/// [`write_stream`](super::record::write_stream). See the module docs for
/// the rules.
pub fn encode_params<'h>(
    out: &mut BytesMut,
    req: &CgiRequest<'_>,
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) {
    let mut num = [0u8; 20];
    let mut ip = [0u8; 48];
    let nv = |out: &mut BytesMut, name: &str, value: &[u8]| {
        write_name_value(out, name.as_bytes(), value);
    };

    nv(out, "GATEWAY_INTERFACE", b"CGI/1.1");
    nv(out, "SERVER_SOFTWARE", req.server_software);
    nv(out, "REQUEST_METHOD", req.method);
    nv(out, "REQUEST_URI", req.request_uri);
    nv(out, "QUERY_STRING", req.query);
    nv(out, "SCRIPT_NAME", req.script_name);
    nv(out, "SCRIPT_FILENAME", req.script_filename);
    nv(out, "PATH_INFO", req.path_info);
    if !req.path_info.is_empty() {
        // One slash where the root ends with one and the path starts with one.
        let root = match (req.document_root.last(), req.path_info.first()) {
            (Some(b'/'), Some(b'/')) => &req.document_root[..req.document_root.len() - 1],
            _ => req.document_root,
        };
        nv_parts(out, "PATH_TRANSLATED", root, req.path_info);
    }
    nv(out, "DOCUMENT_ROOT", req.document_root);
    nv_parts(out, "DOCUMENT_URI", req.script_name, req.path_info);
    nv(out, "SERVER_NAME", req.server_name);
    nv(
        out,
        "SERVER_PORT",
        decimal(req.server_port.into(), &mut num),
    );
    nv(out, "SERVER_ADDR", ip_text(req.server_addr, &mut ip));
    nv(out, "SERVER_PROTOCOL", req.server_protocol);
    let remote: &[u8] = if req.remote_unix {
        b"unix:"
    } else {
        ip_text(req.remote_addr, &mut ip)
    };
    nv(out, "REMOTE_ADDR", remote);
    nv(
        out,
        "REMOTE_PORT",
        decimal(req.remote_port.into(), &mut num),
    );
    nv(
        out,
        "REQUEST_SCHEME",
        if req.https { b"https" } else { b"http" },
    );
    if req.https {
        nv(out, "HTTPS", b"on");
    }
    nv(out, "REDIRECT_STATUS", b"200");
    if let Some(ct) = req.content_type {
        nv(out, "CONTENT_TYPE", ct);
    }
    if let Some(len) = req.content_length {
        nv(out, "CONTENT_LENGTH", decimal(len, &mut num));
    }
    if req.early_data
        && !headers
            .clone()
            .any(|(n, _)| n.eq_ignore_ascii_case(b"early-data"))
    {
        nv(out, "HTTP_EARLY_DATA", b"1");
    }
    encode_headers(out, headers);
}

/// A pair whose value is `a` followed by `b`, without joining them first.
fn nv_parts(out: &mut BytesMut, name: &str, a: &[u8], b: &[u8]) {
    write_name_value_lengths(out, name.len(), a.len() + b.len());
    out.put_slice(name.as_bytes());
    out.put_slice(a);
    out.put_slice(b);
}

/// `ip` as text, in `buf`. An IPv4-mapped IPv6 address (a v4 client of a
/// dual-stack listener) is written as the IPv4 address it is.
fn ip_text(ip: IpAddr, buf: &mut [u8; 48]) -> &[u8] {
    let left = {
        let mut w = &mut buf[..];
        write!(w, "{}", ip.to_canonical()).expect("an IP address fits 48 bytes");
        w.len()
    };
    &buf[..buf.len() - left]
}

/// Whether a request header goes on as `HTTP_*` (see the module docs).
fn passed_on(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= MAX_HEADER_NAME
        && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        && !name.eq_ignore_ascii_case(b"content-type")
        && !name.eq_ignore_ascii_case(b"content-length")
        && !name.eq_ignore_ascii_case(b"proxy")
        && !crate::upstream::client_cert::is_client_cert_field(name)
}

fn encode_headers<'h>(
    out: &mut BytesMut,
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) {
    let mut var = [0u8; 5 + MAX_HEADER_NAME];
    var[..5].copy_from_slice(b"HTTP_");
    for (i, (name, _)) in headers.clone().enumerate() {
        if !passed_on(name) {
            continue;
        }
        // Fields of one name go out together, at the first of them.
        let same = |(n, _): &(&[u8], &[u8])| n.eq_ignore_ascii_case(name);
        if headers.clone().take(i).any(|h| same(&h)) {
            continue;
        }
        let sep: &[u8] = if name.eq_ignore_ascii_case(b"cookie") {
            b"; "
        } else {
            b", "
        };
        let values = || headers.clone().skip(i).filter(same).map(|(_, v)| v);
        let (count, bytes) = values().fold((0, 0), |(c, b), v| (c + 1, b + v.len()));
        let value_len = bytes + sep.len() * (count - 1);

        let var_len = 5 + name.len();
        for (dst, &b) in var[5..var_len].iter_mut().zip(name) {
            *dst = if b == b'-' {
                b'_'
            } else {
                b.to_ascii_uppercase()
            };
        }
        write_name_value_lengths(out, var_len, value_len);
        out.reserve(var_len + value_len);
        out.put_slice(&var[..var_len]);
        for (k, v) in values().enumerate() {
            if k > 0 {
                out.put_slice(sep);
            }
            out.put_slice(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fastcgi::record::name_values;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn base() -> CgiRequest<'static> {
        CgiRequest {
            method: b"GET",
            request_uri: b"/index.php/a/b?x=1&y=2",
            query: b"x=1&y=2",
            script_name: b"/index.php",
            script_filename: b"/srv/www/index.php",
            path_info: b"/a/b",
            document_root: b"/srv/www",
            server_name: b"example.com",
            server_port: 8080,
            server_protocol: b"HTTP/1.1",
            server_addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            remote_addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)),
            remote_unix: false,
            remote_port: 54321,
            https: false,
            content_type: None,
            content_length: None,
            server_software: b"ringside/0.1.0",
            early_data: false,
        }
    }

    /// The params for `req` and `headers`, decoded back.
    fn encode(req: &CgiRequest<'_>, headers: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut out = BytesMut::new();
        let iter = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        encode_params(&mut out, req, iter);
        name_values(&out)
            .map(|p| {
                let (n, v) = p.expect("well-formed pairs");
                let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                (s(n), s(v))
            })
            .collect()
    }

    fn get<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
        let mut found = params.iter().filter(|(n, _)| n == name);
        let first = found.next().map(|(_, v)| v.as_str());
        assert!(found.next().is_none(), "{name} sent twice");
        first
    }

    #[test]
    fn base_request_in_order() {
        let got = encode(&base(), &[("Host", "example.com")]);
        #[rustfmt::skip]
        let want: &[(&str, &str)] = &[
            ("GATEWAY_INTERFACE", "CGI/1.1"),
            ("SERVER_SOFTWARE", "ringside/0.1.0"),
            ("REQUEST_METHOD", "GET"),
            ("REQUEST_URI", "/index.php/a/b?x=1&y=2"),
            ("QUERY_STRING", "x=1&y=2"),
            ("SCRIPT_NAME", "/index.php"),
            ("SCRIPT_FILENAME", "/srv/www/index.php"),
            ("PATH_INFO", "/a/b"),
            ("PATH_TRANSLATED", "/srv/www/a/b"),
            ("DOCUMENT_ROOT", "/srv/www"),
            ("DOCUMENT_URI", "/index.php/a/b"),
            ("SERVER_NAME", "example.com"),
            ("SERVER_PORT", "8080"),
            ("SERVER_ADDR", "10.0.0.1"),
            ("SERVER_PROTOCOL", "HTTP/1.1"),
            ("REMOTE_ADDR", "192.0.2.7"),
            ("REMOTE_PORT", "54321"),
            ("REQUEST_SCHEME", "http"),
            ("REDIRECT_STATUS", "200"),
            ("HTTP_HOST", "example.com"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    type Edit = fn(&mut CgiRequest<'static>);

    #[test]
    fn request_fields_table() {
        // (edit of the base request, variable, value or None for absent)
        #[rustfmt::skip]
        let cases: &[(Edit, &str, Option<&str>)] = &[
            (|_| {}, "HTTPS", None),
            (|r| r.https = true, "HTTPS", Some("on")),
            (|r| r.https = true, "REQUEST_SCHEME", Some("https")),
            (|_| {}, "CONTENT_TYPE", None),
            (|_| {}, "CONTENT_LENGTH", None),
            (|r| r.content_type = Some(b"text/plain"), "CONTENT_TYPE", Some("text/plain")),
            (|r| r.content_length = Some(0), "CONTENT_LENGTH", Some("0")),
            (|r| r.content_length = Some(u64::MAX), "CONTENT_LENGTH", Some("18446744073709551615")),
            (|r| r.path_info = b"", "PATH_INFO", Some("")),
            (|r| r.path_info = b"", "PATH_TRANSLATED", None),
            (|r| r.path_info = b"", "DOCUMENT_URI", Some("/index.php")),
            (|r| r.document_root = b"/srv/www/", "PATH_TRANSLATED", Some("/srv/www/a/b")),
            (|r| r.document_root = b"/srv/www/", "DOCUMENT_ROOT", Some("/srv/www/")),
            (|r| r.path_info = b"x", "PATH_TRANSLATED", Some("/srv/wwwx")),
            (|r| { r.query = b""; r.request_uri = b"/index.php" }, "QUERY_STRING", Some("")),
            (|r| r.server_port = 0, "SERVER_PORT", Some("0")),
            (|r| r.remote_port = 65535, "REMOTE_PORT", Some("65535")),
            (|r| r.remote_addr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)), "REMOTE_ADDR", Some("2001:db8::1")),
            (|r| r.remote_addr = IpAddr::V6(Ipv4Addr::new(198, 51, 100, 9).to_ipv6_mapped()), "REMOTE_ADDR", Some("198.51.100.9")),
            (|r| r.server_addr = IpAddr::V6(Ipv6Addr::new(0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff)), "SERVER_ADDR", Some("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")),
            (|r| r.method = b"POST", "REQUEST_METHOD", Some("POST")),
            (|r| r.remote_unix = true, "REMOTE_ADDR", Some("unix:")),
        ];
        for (i, (edit, var, want)) in cases.iter().enumerate() {
            let mut req = base();
            edit(&mut req);
            let params = encode(&req, &[]);
            assert_eq!(get(&params, var), *want, "case {i}: {var}");
        }
    }

    #[test]
    fn headers_table() {
        type Fields<'a> = &'a [(&'a str, &'a str)];
        // (request headers, variable, value or None for absent)
        #[rustfmt::skip]
        let cases: &[(Fields, &str, Option<&str>)] = &[
            (&[("User-Agent", "curl/8")], "HTTP_USER_AGENT", Some("curl/8")),
            (&[("x-forwarded-for", "1.2.3.4")], "HTTP_X_FORWARDED_FOR", Some("1.2.3.4")),
            (&[("X-A1-b2", "v")], "HTTP_X_A1_B2", Some("v")),
            (&[("Accept", "a"), ("Host", "h"), ("accept", "b")], "HTTP_ACCEPT", Some("a, b")),
            (&[("Accept", "a"), ("ACCEPT", ""), ("Accept", "c")], "HTTP_ACCEPT", Some("a, , c")),
            (&[("Cookie", "a=1"), ("cookie", "b=2"), ("Cookie", "c=3")], "HTTP_COOKIE", Some("a=1; b=2; c=3")),
            (&[("X-Empty", "")], "HTTP_X_EMPTY", Some("")),
            // not repeated: the request fields carry them
            (&[("Content-Type", "text/plain")], "HTTP_CONTENT_TYPE", None),
            (&[("content-length", "5")], "HTTP_CONTENT_LENGTH", None),
            // httpoxy
            (&[("Proxy", "http://evil:8080")], "HTTP_PROXY", None),
            (&[("PROXY", "http://evil:8080")], "HTTP_PROXY", None),
            (&[("Proxy-Authorization", "x")], "HTTP_PROXY_AUTHORIZATION", Some("x")),
            // names that could pose as others, or are not tokens we pass
            (&[("X_Foo", "evil")], "HTTP_X_FOO", None),
            (&[("X_Foo", "evil"), ("X-Foo", "good")], "HTTP_X_FOO", Some("good")),
            (&[("X-Foo", "good"), ("X_Foo", "evil")], "HTTP_X_FOO", Some("good")),
            (&[("X.Foo", "v")], "HTTP_X_FOO", None),
            (&[("X.Foo", "v")], "HTTP_X.FOO", None),
            (&[("X~Foo", "v")], "HTTP_X~FOO", None),
        ];
        for (i, (headers, var, want)) in cases.iter().enumerate() {
            let params = encode(&base(), headers);
            assert_eq!(get(&params, var), *want, "case {i}: {headers:?}");
        }
    }

    #[test]
    fn header_order_and_skips() {
        let headers = [
            ("Host", "h"),
            ("X-A", "1"),
            ("X_B", "no"),
            ("Proxy", "no"),
            ("Content-Length", "3"),
            ("x-a", "2"),
            ("Cookie", "c=1"),
        ];
        let params = encode(&base(), &headers);
        let http: Vec<(&str, &str)> = params
            .iter()
            .filter(|(n, _)| n.starts_with("HTTP_"))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let want = [
            ("HTTP_HOST", "h"),
            ("HTTP_X_A", "1, 2"),
            ("HTTP_COOKIE", "c=1"),
        ];
        assert_eq!(http, want);
    }

    #[test]
    fn early_data_is_said_once() {
        let early = CgiRequest {
            early_data: true,
            ..base()
        };
        let count =
            |p: &[(String, String)]| p.iter().filter(|(n, _)| n == "HTTP_EARLY_DATA").count();
        let params = encode(&early, &[("Host", "h")]);
        assert_eq!(get(&params, "HTTP_EARLY_DATA"), Some("1"));
        assert_eq!(count(&params), 1);
        // The client's own field goes on, once, as it came.
        let params = encode(&early, &[("Early-Data", "1")]);
        assert_eq!(count(&params), 1);
        // Not early: nothing added.
        let params = encode(&base(), &[("Host", "h")]);
        assert_eq!(get(&params, "HTTP_EARLY_DATA"), None);
    }

    #[test]
    fn header_name_length_limit() {
        let ok = "X".repeat(MAX_HEADER_NAME);
        let long = "Y".repeat(MAX_HEADER_NAME + 1);
        let params = encode(&base(), &[(&ok, "1"), (&long, "2")]);
        assert_eq!(get(&params, &format!("HTTP_{ok}")), Some("1"));
        assert_eq!(get(&params, &format!("HTTP_{long}")), None);
    }

    #[test]
    fn long_values_use_four_byte_lengths() {
        // (value length, bytes of its length)
        let cases: &[(usize, usize)] = &[(0, 1), (127, 1), (128, 4), (70000, 4)];
        for &(len, width) in cases {
            let value = "v".repeat(len);
            let mut out = BytesMut::new();
            let headers = [(&b"X-Long"[..], value.as_bytes())];
            encode_params(&mut out, &base(), headers.iter().copied());
            // The last pair: name length 11, then the value length.
            let tail = 1 + width + "HTTP_X_LONG".len() + len;
            let pair = &out[out.len() - tail..];
            assert_eq!(pair[0], 11, "len {len}");
            let want_len: Vec<u8> = if width == 1 {
                vec![len as u8]
            } else {
                (len as u32 | 0x8000_0000).to_be_bytes().to_vec()
            };
            assert_eq!(&pair[1..1 + width], &want_len[..], "len {len}");
            let params = encode(&base(), &[("X-Long", &value)]);
            assert_eq!(
                get(&params, "HTTP_X_LONG"),
                Some(value.as_str()),
                "len {len}"
            );
        }
    }

    #[test]
    fn joined_value_over_128_bytes() {
        let a = "a".repeat(100);
        let params = encode(&base(), &[("X-J", &a), ("X-J", &a)]);
        assert_eq!(get(&params, "HTTP_X_J"), Some(format!("{a}, {a}").as_str()));
    }

    #[test]
    fn decimal_table() {
        let cases: &[(u64, &str)] = &[
            (0, "0"),
            (7, "7"),
            (10, "10"),
            (65535, "65535"),
            (u64::MAX, "18446744073709551615"),
        ];
        for &(n, want) in cases {
            let mut buf = [0; 20];
            assert_eq!(decimal(n, &mut buf), want.as_bytes());
        }
    }
}
