//! A request's pseudo-fields, checked in one place for the protocols that
//! carry a request line as fields: HTTP/2 (RFC 9113 §8.3.1) and HTTP/3,
//! which takes them over unchanged (RFC 9114 §4.3.1).
//!
//! What they hold becomes the request line an HTTP/1.1 upstream reads and
//! the target every route is chosen on, so a value the HTTP/1.1 parser
//! would refuse in a request line (RFC 9112 §3) is refused here too, before
//! anything is laid out: a method with a space in it would reach an
//! upstream as a second target (`GET /x / HTTP/1.1`), and a path without
//! its leading `/` would be read as another path than the one routed. A
//! refusal is a malformed request (RFC 9113 §8.1.1): a stream error
//! PROTOCOL_ERROR that reaches no handler.

use crate::authority::{split_host_port, valid_host_port};
use crate::grammar::is_token;

/// A request's pseudo-fields as received; `None` for one not sent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pseudo<'a> {
    pub method: Option<&'a [u8]>,
    pub scheme: Option<&'a [u8]>,
    pub path: Option<&'a [u8]>,
    pub authority: Option<&'a [u8]>,
    /// Extended CONNECT's `:protocol` (RFC 8441 §4, RFC 9220).
    pub protocol: Option<&'a [u8]>,
}

/// What well-formed pseudo-fields ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// A request for `:path` (origin-form, or `*` for OPTIONS).
    Path,
    /// CONNECT to `:authority` (RFC 9113 §8.5).
    Connect,
    /// An extended CONNECT: `:protocol` on `:path` (RFC 8441 §4).
    Extended,
}

/// Checks `p` as RFC 9113 §8.3.1 and §8.5 say; the reason when it is
/// malformed.
pub fn check(p: &Pseudo<'_>) -> Result<Form, &'static str> {
    let Some(method) = p.method else {
        return Err("no :method");
    };
    // RFC 9110 §9.1: a method is a token.
    if !is_token(method) {
        return Err("a :method that is not a token");
    }
    if let Some(a) = p.authority {
        // §8.3.1: no userinfo; the rest is Host's grammar (RFC 9110 §7.2).
        if a.contains(&b'@') {
            return Err("an :authority with userinfo");
        }
        if !valid_host_port(a) {
            return Err("an :authority that is not host[:port]");
        }
    }
    let connect = method == b"CONNECT";
    if p.protocol.is_some() {
        if !connect {
            return Err(":protocol without CONNECT");
        }
        if p.scheme.is_none() || p.authority.is_none() {
            return Err("extended CONNECT without :scheme or :authority");
        }
        scheme(p.scheme)?;
        return match p.path {
            Some(path) if origin_form(path) => Ok(Form::Extended),
            _ => Err("extended CONNECT without an origin-form :path"),
        };
    }
    if connect {
        if p.scheme.is_some() || p.path.is_some() {
            return Err("CONNECT with :scheme or :path");
        }
        // §8.5: the host and port to connect to.
        return match p.authority.and_then(split_host_port) {
            Some((host, Some(port))) if !host.is_empty() && !port.is_empty() => Ok(Form::Connect),
            Some(_) => Err("CONNECT to an :authority without host and port"),
            None => Err("CONNECT without :authority"),
        };
    }
    scheme(p.scheme)?;
    match p.path {
        None | Some(b"") => Err("no :path, or an empty one"),
        Some(b"*") if method == b"OPTIONS" => Ok(Form::Path),
        Some(b"*") => Err(":path * without OPTIONS"),
        Some(path) if origin_form(path) => Ok(Form::Path),
        Some(_) => Err("a :path not in origin form"),
    }
}

/// `http` or `https`, the schemes this server serves (§8.3.1).
fn scheme(s: Option<&[u8]>) -> Result<(), &'static str> {
    match s {
        None => Err("no :scheme"),
        Some(s) if s.eq_ignore_ascii_case(b"http") || s.eq_ignore_ascii_case(b"https") => Ok(()),
        Some(_) => Err("a :scheme other than http or https"),
    }
}

/// `absolute-path [ "?" query ]` (RFC 9112 §3.2.1) with the bytes an
/// HTTP/1.1 request-target may hold: no control, space, DEL, non-ASCII
/// or `#` (a fragment is never sent, and servers split on it otherwise).
fn origin_form(path: &[u8]) -> bool {
    path.first() == Some(&b'/') && path.iter().all(|&b| b > b' ' && b < 0x7f && b != b'#')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(method: &'a str, path: &'a str, authority: &'a str) -> Pseudo<'a> {
        Pseudo {
            method: Some(method.as_bytes()),
            scheme: Some(b"https"),
            path: Some(path.as_bytes()),
            authority: Some(authority.as_bytes()),
            protocol: None,
        }
    }

    #[test]
    fn what_an_http_1_1_request_line_could_not_carry_is_malformed() {
        assert_eq!(
            check(&get("GET", "/a?b=c", "a.example:8443")),
            Ok(Form::Path)
        );
        assert_eq!(check(&get("OPTIONS", "*", "a")), Ok(Form::Path));
        assert_eq!(check(&get("GET", "/", "")), Ok(Form::Path));
        assert_eq!(check(&get("GET", "/", "[::1]:80")), Ok(Form::Path));
        for (method, path, authority) in [
            ("GET /zqx", "/", "a"),
            ("GET\t", "/", "a"),
            ("", "/", "a"),
            ("GET", "private/x", "a"),
            ("GET", "http://a/x", "a"),
            ("GET", "*", "a"),
            ("GET", "/a#b", "a"),
            ("GET", "/a b", "a"),
            ("GET", "/\u{e9}", "a"),
            ("GET", "", "a"),
            ("GET", "/", "u@a"),
            ("GET", "/", "a/b"),
            ("GET", "/", "a:b"),
        ] {
            assert!(
                check(&get(method, path, authority)).is_err(),
                "{method:?} {path:?} {authority:?}"
            );
        }
        let ftp = Pseudo {
            scheme: Some(b"ftp"),
            ..get("GET", "/", "a")
        };
        assert_eq!(check(&ftp), Err("a :scheme other than http or https"));
        let none = Pseudo {
            scheme: None,
            ..get("GET", "/", "a")
        };
        assert!(check(&none).is_err());
    }

    #[test]
    fn connect_names_a_host_and_port_and_extended_connect_a_path() {
        let connect = |authority: Option<&'static str>| Pseudo {
            method: Some(b"CONNECT"),
            authority: authority.map(str::as_bytes),
            ..Pseudo::default()
        };
        assert_eq!(check(&connect(Some("a:443"))), Ok(Form::Connect));
        assert!(check(&connect(Some("a"))).is_err());
        assert!(check(&connect(Some("u@a:443"))).is_err());
        assert!(check(&connect(None)).is_err());
        let with_path = Pseudo {
            path: Some(b"/"),
            ..connect(Some("a:443"))
        };
        assert!(check(&with_path).is_err());
        let ws = Pseudo {
            protocol: Some(b"websocket"),
            ..get("CONNECT", "/chat", "a")
        };
        assert_eq!(check(&ws), Ok(Form::Extended));
        let relative = Pseudo {
            path: Some(b"chat"),
            ..ws
        };
        assert!(check(&relative).is_err());
        let not_connect = Pseudo {
            protocol: Some(b"websocket"),
            ..get("GET", "/chat", "a")
        };
        assert!(check(&not_connect).is_err());
    }
}
