//! Addresses and host names as the config writes them: listen addresses
//! (`[server] listen`, `[admin] listen`), upstream servers (`HOST:PORT`,
//! `[V6]:PORT`, and `unix:PATH`), and the host names of routes
//! and vhosts.
//!
//! Several sections parse the same forms, and the command line (`cli.rs`:
//! `--listen`, `--upstream`, `--fastcgi`) and the writer (`emit.rs`) with
//! them. Kept in one leaf module, beside [`cx`](super::cx), so that no
//! section imports another for them, which is how the imports among
//! `upstream.rs`, `fastcgi.rs` and `tls.rs` went round in circles.
//!
//! A listen address is resolved here, when the config is loaded; a server
//! address is checked for its shape only, its DNS name being resolved by
//! the proxy at run time (see `upstream.rs`).

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use super::cx::join;
use super::error::io_reason;
use crate::upstream::settings::{Protocol, ServerSpec};

/// What a server address must look like, for error messages.
pub const ADDR_EXPECTED: &str =
    "HOST:PORT like \"127.0.0.1:9000\", \"[::1]:9000\" or \"app.internal:9000\"";

/// How a `servers` entry names a unix socket.
pub const UNIX_PREFIX: &str = "unix:";

/// The longest socket path `sockaddr_un` holds, without its NUL.
pub const MAX_UNIX_PATH: usize = if cfg!(any(target_os = "linux", target_os = "android")) {
    107
} else {
    103
};

/// Resolves one listen address and adds what it names to `out`, refusing
/// addresses already there. A host name adds every address it resolves to.
pub fn add_listen(out: &mut Vec<SocketAddr>, text: &str) -> Result<(), String> {
    let addrs = resolve_listen(text)?;
    if let Some(dup) = addrs.iter().find(|a| out.contains(a)) {
        return Err(format!("{dup} is listed twice"));
    }
    out.extend(addrs);
    Ok(())
}

/// `127.0.0.1:8080`, `[::1]:8080` or `localhost:8080`.
pub fn resolve_listen(text: &str) -> Result<Vec<SocketAddr>, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let shaped = text
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !shaped {
        return Err(format!(
            "expected HOST:PORT like \"127.0.0.1:8080\", \"[::1]:8080\" or \"localhost:8080\", got {text:?}"
        ));
    }
    let resolved = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {text:?}: {}", io_reason(&e)))?;
    let mut seen = HashSet::new();
    let addrs: Vec<SocketAddr> = resolved.filter(|a| seen.insert(*a)).collect();
    if addrs.is_empty() {
        return Err(format!("{text:?} resolves to no address"));
    }
    Ok(addrs)
}

/// One `servers` entry's address, for an upstream speaking `protocol`:
/// `HOST:PORT`, or `unix:PATH` (a relative path taken from `base`). Its
/// weight is 1.
pub fn server_entry(text: &str, protocol: Protocol, base: &Path) -> Result<ServerSpec, String> {
    if let Some(path) = unix_socket(text, base) {
        return path.map(|p| unix_server(p, 1));
    }
    if text.starts_with('/') {
        let kind = if protocol == Protocol::FastCgi {
            "FastCGI "
        } else {
            ""
        };
        return Err(format!(
            "expected {ADDR_EXPECTED}, got {text:?} (a {kind}unix socket is written \"{UNIX_PREFIX}{text}\")"
        ));
    }
    let (host, port) = server_addr(text)?;
    Ok(ServerSpec {
        host,
        port,
        weight: 1,
        unix: None,
    })
}

/// A server address: `HOST:PORT` or `[V6]:PORT`, with `HOST` an IPv4
/// literal or a DNS name. Returns the host (IPv6 without brackets, names in
/// lower case) and the port.
pub fn server_addr(text: &str) -> Result<(String, u16), String> {
    if let Some((scheme, rest)) = text.split_once("://") {
        let rest = rest.split('/').next().unwrap_or(rest);
        return Err(format!(
            "expected {ADDR_EXPECTED} without a scheme, got {text:?} (write {rest:?}; {scheme}:// is not needed)"
        ));
    }
    let shape = || format!("expected {ADDR_EXPECTED}, got {text:?}");
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or_else(shape)?;
        let ip: Ipv6Addr = inside
            .parse()
            .map_err(|_| format!("{inside:?} is not an IPv6 address (in {text:?})"))?;
        let port = after.strip_prefix(':').ok_or_else(|| {
            format!("expected a port after the address, like \"[{ip}]:9000\", got {text:?}")
        })?;
        (ip.to_string(), port)
    } else {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("{} (no port)", shape()))?;
        if host.contains(':') {
            let hint = match host.parse::<Ipv6Addr>() {
                Ok(ip) => format!("\"[{ip}]:{port}\""),
                Err(_) => "\"[::1]:9000\"".to_owned(),
            };
            return Err(format!(
                "{}: an IPv6 address takes brackets, like {hint}",
                shape()
            ));
        }
        (
            dns_or_ipv4(host).map_err(|m| format!("{m} (in {text:?})"))?,
            port,
        )
    };
    Ok((
        host,
        port_number(port).map_err(|m| format!("{m} (in {text:?})"))?,
    ))
}

/// A `unix:PATH` server's socket: `base` joined to a relative path, made
/// absolute (without touching the file system). `None` when `text` does
/// not start with `unix:`.
pub fn unix_socket(text: &str, base: &Path) -> Option<Result<PathBuf, String>> {
    let path = text.strip_prefix(UNIX_PREFIX)?;
    if path.starts_with("//") {
        return Some(Err(format!(
            "expected \"unix:\" and a path like \"unix:/run/php/php-fpm.sock\", got {text:?} (write \"unix:/{}\")",
            path.trim_start_matches('/')
        )));
    }
    Some(socket_path(path, base).map_err(|m| format!("{m} (in {text:?})")))
}

/// A socket path as written after `unix:` (or given to `--fastcgi`).
pub fn socket_path(path: &str, base: &Path) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err(
            "expected a socket path after \"unix:\", like \"unix:/run/php/php-fpm.sock\"".into(),
        );
    }
    if path.contains('\0') {
        return Err("a socket path may not contain NUL".into());
    }
    if path.ends_with('/') {
        return Err(format!(
            "expected the path of a socket file, got the directory {path:?}"
        ));
    }
    let joined = join(base, path);
    let abs =
        std::path::absolute(&joined).map_err(|e| format!("cannot make {path:?} absolute: {e}"))?;
    let len = abs.as_os_str().len();
    if len > MAX_UNIX_PATH {
        return Err(format!(
            "the socket path {abs:?} is {len} bytes; a unix socket path may have at most {MAX_UNIX_PATH}"
        ));
    }
    Ok(abs)
}

/// A unix-socket server: its path as `host`, port 0.
pub fn unix_server(path: PathBuf, weight: u32) -> ServerSpec {
    ServerSpec {
        host: path.to_string_lossy().into_owned(),
        port: 0,
        weight,
        unix: Some(path),
    }
}

/// A server as a `servers` entry writes it: `unix:/PATH` or `HOST:PORT`.
pub fn server_text(s: &ServerSpec) -> String {
    match &s.unix {
        Some(path) => format!("{UNIX_PREFIX}{}", path.to_string_lossy()),
        None => host_port(&s.host, s.port),
    }
}

/// `host:port` with IPv6 hosts in brackets.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// 1..=65535 in decimal digits.
pub(super) fn port_number(port: &str) -> Result<u16, String> {
    match port.parse::<u16>() {
        Ok(p) if p >= 1 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(format!("expected a port from 1 to 65535, got {port:?}")),
    }
}

/// An IPv4 literal, or a DNS name (RFC 1123 §2.1, with '_' allowed as
/// container and service names use it), in lower case.
fn dns_or_ipv4(host: &str) -> Result<String, String> {
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(ip.to_string());
    }
    let bad = |why: &str| format!("{host:?} is not a host name: {why}");
    if host.is_empty() {
        return Err("expected a host name or IP address before the port".to_owned());
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.len() > 253 {
        return Err(bad("longer than 253 characters"));
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(bad("each dot-separated label needs 1 to 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(bad("expected letters, digits, '-', '_' and '.'"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(bad("a label may not start or end with '-'"));
        }
    }
    if name.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("{host:?} is not an IPv4 address"));
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("its last label may not be all digits"));
    }
    Ok(host.to_ascii_lowercase())
}

/// A route's `host` entry: a name, `*.` and a name, an IPv4 literal or a
/// bracketed IPv6 literal, without a port; in lower case.
pub fn route_host(h: &str) -> Result<String, String> {
    if let Some(inside) = h.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return inside
            .parse::<Ipv6Addr>()
            .map(|ip| format!("[{ip}]"))
            .map_err(|_| format!("{inside:?} is not an IPv6 address"));
    }
    let (wild, name) = match h.strip_prefix("*.") {
        Some(rest) => ("*.", rest),
        None => ("", h),
    };
    if name.contains('*') {
        return Err(format!(
            "a wildcard is only allowed as a leading \"*.\", like \"*.example.com\", got {h:?}"
        ));
    }
    if name.contains(':') {
        return Err(format!(
            "expected a host name without a port (routes match any port), got {h:?}"
        ));
    }
    let name = dns_or_ipv4(name)?;
    if !wild.is_empty() && name.parse::<Ipv4Addr>().is_ok() {
        return Err(format!("a wildcard needs a name after \"*.\", got {h:?}"));
    }
    Ok(format!("{wild}{}", name.trim_end_matches('.')))
}
