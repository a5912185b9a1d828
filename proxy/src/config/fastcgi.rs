//! FastCGI in the config: `[upstream.NAME]` with `protocol = "fastcgi"`,
//! its `unix:` servers and capacity keys, and the `[[route]]`s that run
//! scripts through it.
//!
//! An upstream speaks HTTP unless it says `protocol = "fastcgi"`. The
//! FastCGI keys (`max_conns`, `capacity_probe`, `queue_size`, `queue_timeout`, `keep_conn`)
//! are refused on an HTTP upstream, where they would do nothing; the
//! `health_*` keys are refused on a FastCGI one, since active checks are
//! HTTP requests that a FastCGI server cannot answer (passive checks,
//! `max_fails`, work for both). Every other upstream key means the same for
//! both protocols.
//!
//! A FastCGI server may listen on a unix socket: `"unix:/run/php/php.sock"`,
//! a relative path being taken from the config file's directory. The path is
//! made absolute but not opened: php-fpm may well start after ringside. It
//! must fit in `sockaddr_un` (107 bytes on Linux, 103 elsewhere). Such
//! entries are parsed in `addr.rs`, with the other server addresses.
//!
//! A route to a FastCGI upstream runs scripts beneath its `root` (the
//! `[server] root` unless it names one), made absolute and free of symlinks
//! as static roots are. A path segment ending in `extension` is a script,
//! and `index` is run for a path ending in `/`, so `index` must end in
//! `extension`. The prefix is not rewritten and the Host not replaced:
//! SCRIPT_NAME is the request's own path, so `strip_prefix`,
//! `replace_prefix` and `proxy_host` are refused there.

use std::path::Path;

use toml::Spanned;

use super::cx::{duration, duration_or_zero, first_given, int_in, join, root_dir, Cx};
use super::error::ConfigError;
use super::file::{RouteSection, UpstreamSection};
use crate::upstream::settings::{FastCgiRoute, FastCgiSettings, Protocol, UpstreamConfig};

/// `protocol` names, with what each chooses.
pub const PROTOCOLS: [(&str, Protocol); 4] = [
    ("http", Protocol::Http),
    ("h2", Protocol::H2),
    ("auto", Protocol::Auto),
    ("fastcgi", Protocol::FastCgi),
];

pub const MAX_CONNS: i64 = 65535;
pub const MAX_QUEUE: i64 = 1_000_000;

/// A route's script extension when it names none.
pub const EXTENSION: &str = ".php";

/// `protocol = "http" | "h2" | "auto" | "fastcgi"`.
pub fn protocol(name: &str) -> Result<Protocol, String> {
    PROTOCOLS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, p)| p)
        .ok_or_else(|| format!("expected \"http\", \"h2\", \"auto\" or \"fastcgi\", got {name:?}"))
}

/// The config name of a protocol.
pub fn protocol_name(p: Protocol) -> &'static str {
    PROTOCOLS
        .iter()
        .find(|&&(_, q)| q == p)
        .map(|&(n, _)| n)
        .expect("every Protocol has a name")
}

/// A script extension: '.', then letters, digits, '_', '-' or '.'.
pub fn extension(e: &str) -> Result<String, String> {
    match e.strip_prefix('.') {
        Some(rest)
            if !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) =>
        {
            Ok(e.to_owned())
        }
        _ => Err(format!(
            "expected an extension like \".php\": '.' then letters, digits, '_', '-' or '.', got {e:?}"
        )),
    }
}

/// A route's index script: a file name, not hidden, ending in `ext`.
pub fn script_index(n: &str, ext: &str) -> Result<String, String> {
    if n.is_empty() || n.contains('/') || n.starts_with('.') || n.contains('\0') {
        return Err(format!(
            "expected a file name without '/' and not starting with '.', got {n:?}"
        ));
    }
    if !n.ends_with(ext) || n.len() == ext.len() {
        return Err(format!(
            "expected a script name ending in the extension {ext:?}, got {n:?}"
        ));
    }
    Ok(n.to_owned())
}

/// The index a route runs when it names none: `index` and its extension.
pub fn default_index(ext: &str) -> String {
    format!("index{ext}")
}

impl Cx<'_> {
    /// The upstream's `protocol`.
    pub(super) fn protocol(
        &self,
        u: &UpstreamSection,
        key: &dyn Fn(&str) -> String,
    ) -> Result<Protocol, ConfigError> {
        self.or(&u.protocol, &key("protocol"), Protocol::Http, |p| {
            protocol(p)
        })
    }

    /// The FastCGI keys of a FastCGI upstream; on an HTTP one, refuses
    /// them. On a FastCGI upstream, refuses the `health_*` keys.
    pub(super) fn fastcgi_settings(
        &self,
        u: &UpstreamSection,
        key: &dyn Fn(&str) -> String,
        protocol: Protocol,
    ) -> Result<FastCgiSettings, ConfigError> {
        let d = FastCgiSettings::default();
        if protocol.is_http() {
            let given = first_given(&[
                ("max_conns", u.max_conns.as_ref().map(Spanned::span)),
                (
                    "capacity_probe",
                    u.capacity_probe.as_ref().map(Spanned::span),
                ),
                ("queue_size", u.queue_size.as_ref().map(Spanned::span)),
                ("queue_timeout", u.queue_timeout.as_ref().map(Spanned::span)),
                ("keep_conn", u.keep_conn.as_ref().map(Spanned::span)),
            ]);
            if let Some((k, span)) = given {
                return Err(self.err(
                    span,
                    &key(k),
                    "only for protocol = \"fastcgi\" (this upstream speaks HTTP)".into(),
                ));
            }
            return Ok(d);
        }
        let health = first_given(&[
            ("health_path", u.health_path.as_ref().map(Spanned::span)),
            (
                "health_interval",
                u.health_interval.as_ref().map(Spanned::span),
            ),
            (
                "health_timeout",
                u.health_timeout.as_ref().map(Spanned::span),
            ),
            ("health_status", u.health_status.as_ref().map(Spanned::span)),
            ("health_fall", u.health_fall.as_ref().map(Spanned::span)),
            ("health_rise", u.health_rise.as_ref().map(Spanned::span)),
        ]);
        if let Some((k, span)) = health {
            return Err(self.err(
                span,
                &key(k),
                "not for protocol = \"fastcgi\": active health checks are HTTP requests, which a FastCGI server cannot answer (passive checks, max_fails, still apply)".into(),
            ));
        }
        Ok(FastCgiSettings {
            max_conns: match &u.max_conns {
                None => d.max_conns,
                Some(n) => Some(self.check(n, &key("max_conns"), |&n| {
                    int_in(n, 1, MAX_CONNS).map(|n| n as u32)
                })?),
            },
            capacity_probe: self.or(
                &u.capacity_probe,
                &key("capacity_probe"),
                d.capacity_probe,
                duration_or_zero,
            )?,
            queue_size: self.or(&u.queue_size, &key("queue_size"), d.queue_size, |&n| {
                int_in(n, 0, MAX_QUEUE).map(|n| n as usize)
            })?,
            queue_timeout: self.or(
                &u.queue_timeout,
                &key("queue_timeout"),
                d.queue_timeout,
                duration,
            )?,
            keep_conn: u.keep_conn.as_ref().map_or(d.keep_conn, |v| *v.get_ref()),
        })
    }

    /// Refuses `extension` and `index` on a route that is not to a FastCGI
    /// upstream; `what` says what the route is instead.
    pub(super) fn no_script_keys(&self, r: &RouteSection, what: &str) -> Result<(), ConfigError> {
        let given = first_given(&[
            ("extension", r.extension.as_ref().map(Spanned::span)),
            ("index", r.index.as_ref().map(Spanned::span)),
        ]);
        match given {
            Some((k, span)) => Err(self.err(
                span,
                &format!("[[route]] {k}"),
                format!("only for a route to an upstream with protocol = \"fastcgi\"; {what}"),
            )),
            None => Ok(()),
        }
    }

    /// What a route to the FastCGI upstream `u` runs: refuses the keys that
    /// rewrite the request, then takes `root` (relative to `base`, else
    /// `server_root`), `extension` and `index`.
    pub(super) fn script_route(
        &self,
        r: &RouteSection,
        u: &UpstreamConfig,
        base: &Path,
        server_root: &Path,
    ) -> Result<FastCgiRoute, ConfigError> {
        let rewriting = first_given(&[
            ("strip_prefix", r.strip_prefix.as_ref().map(Spanned::span)),
            (
                "replace_prefix",
                r.replace_prefix.as_ref().map(Spanned::span),
            ),
            ("proxy_host", r.proxy_host.as_ref().map(Spanned::span)),
        ]);
        if let Some((k, span)) = rewriting {
            let why = if k == "proxy_host" {
                "the client's Host goes to the script as HTTP_HOST"
            } else {
                "the script sees the request's own path as SCRIPT_NAME"
            };
            return Err(self.err(
                span,
                &format!("[[route]] {k}"),
                format!(
                    "not for a route to a FastCGI upstream (upstream {:?}): {why}",
                    u.name
                ),
            ));
        }
        let root = match &r.root {
            Some(v) => self.check(v, "[[route]] root", |s| root_dir(&join(base, s)))?,
            None => server_root.to_path_buf(),
        };
        let extension = self.or(
            &r.extension,
            "[[route]] extension",
            EXTENSION.to_owned(),
            |e| extension(e),
        )?;
        let index = match &r.index {
            Some(v) => self.check(v, "[[route]] index", |n| script_index(n, &extension))?,
            None => default_index(&extension),
        };
        Ok(FastCgiRoute {
            root,
            extension,
            index,
        })
    }
}
