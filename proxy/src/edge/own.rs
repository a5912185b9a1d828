//! Requests the edge answers itself, before or instead of any handler:
//! those about the server rather than a resource (`OPTIONS *`, CONNECT),
//! TRACE unless the config allows it, and TRACE or OPTIONS that may go no
//! further (`Max-Forwards: 0`, RFC 9110 §7.6.2).

use ringside_http::grammar::parse_length;
use ringside_http::{Error, Exchange, Method};

/// What every route takes: static files answer GET and HEAD; a proxy
/// passes any method on.
const STATIC_METHODS: &[u8] = b"GET, HEAD, OPTIONS";
const PROXY_METHODS: &[u8] = b"GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS";

/// `OPTIONS *` (the parser allows `*` only there) gets a 200 with what the
/// server as a whole allows, and CONNECT a 501, since ringside is not a
/// forward proxy. What follows a CONNECT on the connection is tunnel data,
/// never a request, so it closes.
#[cold]
pub fn server_wide(ex: &mut Exchange<'_>, proxies: bool) -> Result<(), Error> {
    if ex.method() == Method::Connect {
        ex.set_close();
        return ex.send_status(501);
    }
    ex.send(200, &[("Allow", allowed(proxies))], b"")
}

/// Whether the request is a TRACE or OPTIONS that stops here: its
/// Max-Forwards is 0.
#[inline]
pub fn last_hop(ex: &Exchange<'_>) -> bool {
    matches!(ex.method(), Method::Trace | Method::Options)
        && ex
            .header("max-forwards")
            .and_then(|v| parse_length(v, u64::MAX))
            == Some(0)
}

/// TRACE, unless the config allows it: 405, as nginx answers. A reflected
/// request shows a script what the browser added to it, and scanners flag
/// a server that reflects; RFC 9110 §9.3.8 leaves TRACE optional. `Allow`
/// is what the route takes (RFC 9110 §15.5.6).
#[cold]
pub fn trace_refused(ex: &mut Exchange<'_>, proxied: bool) -> Result<(), Error> {
    ex.send(
        405,
        &[("Allow", allowed(proxied)), ("Content-Type", b"text/plain")],
        b"405 Method Not Allowed\n",
    )
}

/// Answers a request that may go no further, for a route that is a proxy
/// (`proxied`) or static files: OPTIONS with what the route allows, TRACE
/// with the request as received (RFC 9110 §9.3.8), its credentials left
/// out.
#[cold]
pub fn answer_last_hop(ex: &mut Exchange<'_>, proxied: bool) -> Result<(), Error> {
    if ex.method() == Method::Options {
        return ex.send(200, &[("Allow", allowed(proxied))], b"");
    }
    let mut echo = Vec::with_capacity(256);
    echo.extend_from_slice(ex.method_bytes());
    echo.push(b' ');
    echo.extend_from_slice(ex.target());
    echo.push(b' ');
    echo.extend_from_slice(ex.version().as_str().as_bytes());
    echo.extend_from_slice(b"\r\n");
    for (name, value) in ex.headers().filter(|(n, _)| !sensitive(n)) {
        echo.extend_from_slice(name);
        echo.extend_from_slice(b": ");
        echo.extend_from_slice(value);
        echo.extend_from_slice(b"\r\n");
    }
    echo.extend_from_slice(b"\r\n");
    ex.send(200, &[("Content-Type", b"message/http")], &echo)
}

fn allowed(proxies: bool) -> &'static [u8] {
    if proxies {
        PROXY_METHODS
    } else {
        STATIC_METHODS
    }
}

/// Fields a reflected TRACE must not give back: a script on another origin
/// could read them from it (cross-site tracing).
fn sensitive(name: &[u8]) -> bool {
    ["cookie", "authorization", "proxy-authorization"]
        .iter()
        .any(|s| name.eq_ignore_ascii_case(s.as_bytes()))
}
