//! Forwarding policy for header fields, both ways: the request head sent
//! upstream ([`write_request_head`]) and which fields of an upstream's
//! response reach the client ([`skip_response_header`]). The wire format
//! itself is `ringside_http::h1::encode`'s.
//!
//! # How it works
//!
//! [`write_request_head`] turns a client's parsed request into the head the
//! proxy sends, in one pass over the client's headers plus one short pass
//! for each joined field, writing into the caller's buffer and allocating
//! nothing else:
//!
//! 1. The request line, always `HTTP/1.1` (the proxy speaks 1.1 to upstreams
//!    whatever the client spoke), with the route's prefix replaced (see
//!    below) and the query appended back after `?`.
//! 2. `Host`, first, with the value the route chose.
//! 3. The client's end-to-end headers, in order, without:
//!    - `Host` (ours is above);
//!    - hop-by-hop fields (RFC 9110 §7.6.1): `Connection`, every name a
//!      `Connection` field lists, `Keep-Alive`, `TE`, `Trailer`,
//!      `Proxy-Connection`, `Upgrade`;
//!    - framing (`Content-Length`, `Transfer-Encoding`): regenerated from
//!      [`ReqBody`], so no framing text of the client's ever reaches the
//!      upstream and the two sides cannot read the body's length two ways;
//!    - `Expect`: the proxy answers `100-continue` to the client itself;
//!    - `Client-Cert` and `Client-Cert-Chain`, the proxy's alone
//!      (`client_cert`, RFC 9440 §4);
//!    - names with `_` (unless `underscores_in_headers = "pass"`, and even
//!      then those that read as `Content-Length`, `Host` or a hop-by-hop
//!      field with `-` for `_`): a backend that maps `-` and `_` alike (CGI,
//!      many frameworks) would take `X_Forwarded_For` for the real field,
//!      which is why nginx drops them by default too;
//!    - the fields the proxy writes itself below, where that is switched on:
//!      `X-Forwarded-For/-Proto/-Host`, `Forwarded`, `Via`; the client's
//!      spelling of them never reaches the upstream on its own;
//!    - `Forwarded` from a client outside `trusted_forwarders`, even with
//!      `forwarded` off: an upstream that reads it could not tell it from
//!      one the proxy vouched for (RFC 7239 §8.1);
//!    - for TRACE and OPTIONS, `Max-Forwards`, which goes on decremented
//!      (RFC 9110 §7.6.2; at 0 the edge answers itself).
//! 4. The framing field: `Content-Length: n` or `Transfer-Encoding: chunked`.
//! 5. With an upgrade, `Connection: upgrade` and `Upgrade:` the protocols
//!    asked for that the route allows ([`upgrade_protocols`]: `websocket`
//!    and the tokens the route lists, never `h2c`, which RFC 9113 dropped
//!    and which, passed on, smuggles an HTTP/2 connection past the proxy).
//!    Otherwise no `Connection` field at all: HTTP/1.1 is persistent by
//!    default and the upstream connection is the proxy's to pool, whatever
//!    the client asked for its own connection (RFC 9110 §7.6.1: Connection
//!    is per hop).
//! 6. `X-Forwarded-For` (the client's values, every such field joined with
//!    `", "`, then the client's address: the last element is the one the
//!    proxy vouches for, as nginx's `$proxy_add_x_forwarded_for`),
//!    `X-Forwarded-Proto`, `X-Forwarded-Host` (the client's replaced);
//!    `Forwarded` (RFC 7239: a trusted client's values, then
//!    `for=..;proto=..;host=..`); `Via` (RFC 9110 §7.6.3: the client's
//!    values, then `1.1 <pseudonym>`).
//! 7. `Early-Data: 1` for a request served from TLS early data (RFC 8470
//!    §5.1), unless the client sent the field (it goes on as sent).
//!
//! # Path rewriting
//!
//! The path is the normalized one the route was chosen on (or, with
//! `forward_path = "raw"`, the client's bytes). With `replace_prefix =
//! Some(r)`, a path that starts with the route's prefix has that prefix
//! replaced by `r`; a path equal to a `/`-ending prefix without its
//! slash (`/api` for `/api/`) counts as the prefix itself. Where `r` ends
//! and the rest starts with `/`, one of the two is dropped (so `strip_prefix`
//! on a prefix without a trailing slash gives `/x`, not `//x`), and the
//! result always starts with `/`. Other paths are sent as they are.

use std::fmt::Write as _;
use std::net::IpAddr;

use bytes::{BufMut, BytesMut};
use ringside_http::grammar::{is_tchar, list_elements, ConnectionTokens};
use ringside_http::h1::encode::{put_u64, write_content_length, write_header, write_request_line};
use ringside_http::hop::{is_hop_by_hop, HOP};
use ringside_runtime::cidr::Cidr;

use super::settings::{ForwardHeaders, Underscores};

/// How the request body sent upstream is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqBody {
    /// No framing field (a request without a body).
    None,
    /// `Content-Length: n` (`Length(0)` writes `Content-Length: 0`).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// What one forwarded request's head is made of, beside the client's headers.
#[derive(Clone, Copy, Debug)]
pub struct Forward<'a> {
    pub method: &'a [u8],
    /// The request's path (as sent, still percent-encoded), without query.
    pub path: &'a [u8],
    /// The query, without its `?`; `Some(b"")` keeps a lone `?`.
    pub query: Option<&'a [u8]>,
    /// The route's prefix, compared with the raw path bytes.
    pub prefix: &'a [u8],
    /// What replaces `prefix`; `None` keeps the path.
    pub replace_prefix: Option<&'a [u8]>,
    /// The Host value to send.
    pub host: &'a [u8],
    /// The client's Host as received (for X-Forwarded-Host and Forwarded
    /// `host=`), if it sent one.
    pub client_host: Option<&'a [u8]>,
    pub client_ip: IpAddr,
    /// The client came on a unix socket (`client_ip` is then unspecified):
    /// X-Forwarded-For says `unix:`, as nginx's `$remote_addr`, and
    /// Forwarded `for=unknown` (RFC 7239 §6.2).
    pub client_unix: bool,
    /// The scheme the client used: `"http"`.
    pub proto: &'a str,
    pub body: ReqBody,
    /// The protocols of the client's upgrade that the route allows (see
    /// [`upgrade_protocols`]); when there are any, `Connection: upgrade` and
    /// `Upgrade:` with them are sent.
    pub upgrade: &'a [&'a [u8]],
    /// The request came in TLS early data, served before the handshake
    /// ended: `Early-Data: 1` goes on (RFC 8470 §5.1).
    pub early_data: bool,
    pub settings: &'a ForwardHeaders,
}

/// Writes the request line (always HTTP/1.1), the client's end-to-end
/// headers, and the proxy's own into `out`, ending with the blank line.
/// `client_headers` are the client's (name, value) pairs in order, as the
/// server's parser gave them; it is walked a few times, hence `Clone`.
pub fn write_request_head<'h>(
    out: &mut BytesMut,
    f: &Forward<'_>,
    client_headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) {
    write_request_head_from(out, f, b"1.1 ", client_headers)
}

/// [`write_request_head`] for a request received in `received` (Via's
/// received-protocol with its space: `Version::via_protocol`).
pub fn write_request_head_from<'h>(
    out: &mut BytesMut,
    f: &Forward<'_>,
    received: &[u8],
    client_headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
) {
    let s = f.settings;
    let tokens = ConnectionTokens::from_values(
        client_headers
            .clone()
            .filter(|(n, _)| n.eq_ignore_ascii_case(b"connection"))
            .map(|(_, v)| v),
    );
    // Past the tokens kept inline, ask the client's Connection fields again.
    let listed = |name: &[u8]| {
        tokens.contains(name)
            || (tokens.overflowed()
                && client_headers.clone().any(|(n, v)| {
                    n.eq_ignore_ascii_case(b"connection")
                        && list_elements(v).any(|t| t.eq_ignore_ascii_case(name))
                }))
    };

    // Request line and Host.
    let path = path_parts(f.path, f.prefix, f.replace_prefix);
    write_request_line(out, f.method, &path, f.query);
    write_header(out, b"Host", f.host);

    // The client's end-to-end fields.
    let hops = max_forwards(f.method, client_headers.clone());
    let trusted = Cidr::any_holds(&s.trusted_forwarders, f.client_ip);
    for (name, value) in client_headers.clone() {
        let skipped = not_forwarded(name, s, trusted)
            || listed(name)
            || (hops.is_some() && is_max_forwards(name));
        if !skipped {
            write_header(out, name, value);
        }
    }

    // Framing, regenerated.
    match f.body {
        ReqBody::None => {}
        ReqBody::Length(n) => write_content_length(out, n),
        ReqBody::Chunked => out.put_slice(b"Transfer-Encoding: chunked\r\n"),
    }
    if let [first, rest @ ..] = f.upgrade {
        out.put_slice(b"Connection: upgrade\r\nUpgrade: ");
        out.put_slice(first);
        for p in rest {
            out.put_slice(b", ");
            out.put_slice(p);
        }
        out.put_slice(b"\r\n");
    }
    if let Some(n) = hops {
        out.put_slice(b"Max-Forwards: ");
        put_u64(out, n - 1);
        out.put_slice(b"\r\n");
    }

    // The proxy's own, after the client's values of the same field.
    let client_ip = f.client_ip.to_canonical();
    let existing = |out: &mut BytesMut, field: &[u8]| {
        for (name, value) in client_headers.clone() {
            if name.eq_ignore_ascii_case(field) && !value.is_empty() && !listed(name) {
                out.put_slice(value);
                out.put_slice(b", ");
            }
        }
    };
    if s.x_forwarded {
        out.put_slice(b"X-Forwarded-For: ");
        existing(out, b"x-forwarded-for");
        if f.client_unix {
            out.put_slice(b"unix:");
        } else {
            put_ip(out, client_ip);
        }
        out.put_slice(b"\r\nX-Forwarded-Proto: ");
        out.put_slice(f.proto.as_bytes());
        out.put_slice(b"\r\n");
        if let Some(host) = f.client_host {
            write_header(out, b"X-Forwarded-Host", host);
        }
    }
    if s.forwarded {
        out.put_slice(b"Forwarded: ");
        if trusted {
            existing(out, b"forwarded");
        }
        out.put_slice(b"for=");
        match client_ip {
            _ if f.client_unix => out.put_slice(b"unknown"),
            IpAddr::V4(_) => put_ip(out, client_ip),
            // RFC 7239 §6: an IPv6 node is bracketed, which needs quotes.
            IpAddr::V6(ip) => {
                let _ = write!(out, "\"[{ip}]\"");
            }
        }
        out.put_slice(b";proto=");
        put_token_or_quoted(out, f.proto.as_bytes());
        if let Some(host) = f.client_host.filter(|h| !h.is_empty()) {
            out.put_slice(b";host=");
            put_token_or_quoted(out, host);
        }
        out.put_slice(b"\r\n");
    }
    if let Some(pseudonym) = &s.via {
        out.put_slice(b"Via: ");
        existing(out, b"via");
        out.put_slice(received);
        out.put_slice(pseudonym.as_bytes());
        out.put_slice(b"\r\n");
    }
    // The upstream may answer 425 Too Early, which goes back as it is. A
    // client's own Early-Data went on above, untouched (§5.1: no proxy
    // removes it), and is not written twice.
    if f.early_data
        && !client_headers
            .clone()
            .any(|(n, _)| n.eq_ignore_ascii_case(b"early-data"))
    {
        out.put_slice(b"Early-Data: 1\r\n");
    }
    out.put_slice(b"\r\n");
}

/// An address in its usual text. IPv4, every proxied request's, without
/// `fmt` (its machinery cost more than the rest of the field).
fn put_ip(out: &mut BytesMut, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            put_u64(out, a.into());
            for o in [b, c, d] {
                out.put_u8(b'.');
                put_u64(out, o.into());
            }
        }
        IpAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

/// Client fields never passed on as they are (besides those `Connection`
/// lists); `trusted`: the client is among `trusted_forwarders`.
fn not_forwarded(name: &[u8], s: &ForwardHeaders, trusted: bool) -> bool {
    let is = |other: &[u8]| name.eq_ignore_ascii_case(other);
    is(b"host")
        || is_hop_by_hop(name)
        || is(b"content-length")
        || is(b"expect")
        || super::client_cert::is_client_cert_field(name)
        || (s.x_forwarded
            && (is(b"x-forwarded-for") || is(b"x-forwarded-proto") || is(b"x-forwarded-host")))
        || ((s.forwarded || !trusted) && is(b"forwarded"))
        || (s.via.is_some() && is(b"via"))
        || (name.contains(&b'_')
            && (s.underscores == Underscores::Drop || framing_look_alike(name)))
}

fn is_max_forwards(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"max-forwards")
}

/// The client's `Max-Forwards` of a TRACE or OPTIONS request, when it is a
/// number above 0 (at 0 the edge answered; an unreadable one goes on as
/// the client sent it, as RFC 9110 §7.6.2 leaves it).
fn max_forwards<'h>(
    method: &[u8],
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
) -> Option<u64> {
    if !matches!(method, b"TRACE" | b"OPTIONS") {
        return None;
    }
    headers
        .filter(|(n, _)| is_max_forwards(n))
        .find_map(|(_, v)| ringside_http::grammar::parse_length(v, u64::MAX))
        .filter(|&n| n > 0)
}

/// The protocols a client's upgrade asks for that `allowed` (or
/// `websocket`, always allowed) names, in its order, into `out`; how many.
/// The client asks when a `Connection` field lists `upgrade` and an
/// `Upgrade` field names protocols (RFC 9110 §7.8). `h2c` is never allowed.
pub fn upgrade_protocols<'h>(
    headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
    allowed: &[String],
    out: &mut [&'h [u8]],
) -> usize {
    let asks = headers
        .clone()
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"connection"))
        .any(|(_, v)| ringside_http::grammar::list_has(v, b"upgrade"));
    if !asks {
        return 0;
    }
    let mut n = 0;
    let offered = headers
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"upgrade"))
        .flat_map(|(_, v)| list_elements(v));
    for p in offered {
        let name = protocol_name(p);
        let ok = !name.eq_ignore_ascii_case(b"h2c")
            && (name.eq_ignore_ascii_case(b"websocket")
                || allowed
                    .iter()
                    .any(|a| name.eq_ignore_ascii_case(a.as_bytes())));
        if ok && n < out.len() && !out[..n].contains(&p) {
            out[n] = p;
            n += 1;
        }
    }
    n
}

/// Whether a 101's `Upgrade` switches to protocols the request offered
/// (RFC 9110 §7.8: the server names what it switches to).
pub fn upgrade_agreed(response: &[u8], offered: &[&[u8]]) -> bool {
    let mut any = false;
    for p in list_elements(response) {
        any = true;
        let name = protocol_name(p);
        if !offered
            .iter()
            .any(|o| protocol_name(o).eq_ignore_ascii_case(name))
        {
            return false;
        }
    }
    any
}

/// `protocol-name` of `protocol-name ["/" protocol-version]`.
fn protocol_name(p: &[u8]) -> &[u8] {
    p.split(|&b| b == b'/').next().unwrap_or(p)
}

/// `Content_Length`, `Transfer_Encoding`, `Host`-like names: not framing
/// here, but a backend that reads `_` as `-` (CGI-style servers do) would
/// take them for the real field, so they are not passed on (nginx drops
/// every name with `_` by default; this drops only the dangerous ones).
fn framing_look_alike(name: &[u8]) -> bool {
    let dashed = |other: &[u8]| {
        name.len() == other.len()
            && name.iter().zip(other).all(|(&a, &b)| {
                let a = if a == b'_' { b'-' } else { a };
                a.eq_ignore_ascii_case(&b)
            })
    };
    dashed(b"host") || dashed(b"content-length") || HOP.iter().any(|h| dashed(h))
}

/// The path sent upstream (see the module docs), in the pieces written
/// one after another: a leading `/` where needed, the replacement, the rest.
fn path_parts<'a>(path: &'a [u8], prefix: &[u8], replace: Option<&'a [u8]>) -> [&'a [u8]; 3] {
    let Some(repl) = replace else {
        return [path, b"", b""];
    };
    let rest = match path.strip_prefix(prefix) {
        Some(rest) => rest,
        None if prefix.len() > 1
            && prefix.ends_with(b"/")
            && path == &prefix[..prefix.len() - 1] =>
        {
            &[][..]
        }
        None => return [path, b"", b""],
    };
    let rest = match rest {
        [b'/', tail @ ..] if repl.ends_with(b"/") => tail,
        _ => rest,
    };
    let leading = if repl.is_empty() { rest } else { repl };
    let slash: &[u8] = if leading.starts_with(b"/") { b"" } else { b"/" };
    [slash, repl, rest]
}

/// RFC 7239 §4 `value = token / quoted-string`.
fn put_token_or_quoted(out: &mut BytesMut, v: &[u8]) {
    if !v.is_empty() && v.iter().all(|&b| is_tchar(b)) {
        out.put_slice(v);
        return;
    }
    out.put_u8(b'"');
    for &b in v {
        if b == b'"' || b == b'\\' {
            out.put_u8(b'\\');
        }
        out.put_u8(b);
    }
    out.put_u8(b'"');
}

/// Whether a response header is not forwarded to the client: hop-by-hop
/// (`Connection` and the names it lists, `Keep-Alive`, `TE`, `Trailer`,
/// `Proxy-Connection`, `Upgrade` unless `tunnel`; RFC 9110 §7.6.1), framing
/// (`Transfer-Encoding`, `Content-Length`: the server regenerates them), and
/// `Date`/`Server` (the server writes its own). With `tunnel` (a 101 that
/// is passed on) `Upgrade` is kept even when `Connection` lists it.
pub fn skip_response_header(
    name: &[u8],
    connection_tokens: &ConnectionTokens<'_>,
    tunnel: bool,
) -> bool {
    let is = |other: &str| name.eq_ignore_ascii_case(other.as_bytes());
    if is("upgrade") {
        return !tunnel;
    }
    is_hop_by_hop(name)
        || is("content-length")
        || is("date")
        || is("server")
        || connection_tokens.contains(name)
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
