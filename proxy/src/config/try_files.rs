//! Files first, then the application (nginx's `try_files`): a route lists
//! paths to try in order, and what happens when none names anything.
//!
//! ```toml
//! [upstream.rails]
//! servers = ["127.0.0.1:3000"]
//!
//! [[route]]                 # a Rails layout: public/ first, then the app
//! prefix = "/"
//! upstream = "rails"
//! root = "public"           # an HTTP upstream's route takes root with try_files
//! try_files = ["$uri", "$uri/index.html", "$uri.html"]
//! fallback = "@upstream"    # the default on a route to an upstream
//!
//! [[route]]                 # a single-page app
//! prefix = "/app/"
//! alias = "dist"
//! try_files = ["$uri", "/app/index.html"]
//! fallback = 404            # the default on a static route
//! ```
//!
//! An entry is `$uri` (the request's normalized path) with text before
//! (a path starting with `/`) or after it (`/`, `.html`, `/index.html`),
//! or a path of its own starting with `/`. Each is a path as a request
//! would name it, looked up beneath the route's directory as the request
//! would be (under `alias`, so beneath the prefix), hidden names and
//! escapes refused. One ending in `/` names a directory (served by its
//! index), any other a file. The first that names something is served,
//! by ringside, whatever its place in the list; when none does, the
//! `fallback` decides: `"@upstream"` hands the request, unchanged, to the
//! route's upstream, and a status (400-599) is answered (with its error
//! page, if one is set). A request no entry matches is answered as
//! nginx's `try_files ... =404` would be; so a single-page app's deep
//! link gets its index, and its assets, if they should 404 rather than
//! get the index, take a route of their own without `try_files`.
//!
//! A route to a FastCGI upstream tries beneath its own `root`: an entry
//! that names a script runs it (nginx's `try_files $uri /index.php`).

use std::fmt::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::cx::{join, root_dir, Cx};
use super::error::ConfigError;
use super::file::{FileConfig, RouteSection};

/// `fallback =` as written: `"@upstream"` or a status.
#[derive(Clone, Debug)]
pub enum FallbackValue {
    Name(String),
    Status(i64),
}

impl<'de> Deserialize<'de> for FallbackValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FallbackValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(FALLBACK_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<FallbackValue, E> {
                Ok(FallbackValue::Name(s.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<FallbackValue, E> {
                Ok(FallbackValue::Status(n))
            }
        }
        d.deserialize_any(V)
    }
}

const FALLBACK_EXPECTED: &str = "\"@upstream\" or a status from 400 to 599";

/// What answers when no entry names anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The route's upstream, as without `try_files`.
    Upstream,
    Status(u16),
}

/// One route's `try_files`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TryFiles {
    /// As written; each holds `$uri` at most once.
    pub entries: Vec<String>,
    pub fallback: Fallback,
    /// A route to an HTTP upstream: the directory tried beneath
    /// (absolute). Static routes use their own, FastCGI routes their
    /// scripts' root.
    pub root: Option<PathBuf>,
}

impl TryFiles {
    /// Splits an entry at its `$uri`: the text before it and after it,
    /// or the whole entry and `None` for a path of its own.
    pub fn split(entry: &str) -> (&str, Option<&str>) {
        match entry.split_once(URI) {
            Some((before, after)) => (before, Some(after)),
            None => (entry, None),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TryFilesConfig {
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<Option<TryFiles>>,
    /// Static routes that have it, by prefix.
    pub static_routes: Vec<(String, TryFiles)>,
}

impl TryFilesConfig {
    pub fn static_route(&self, prefix: &str) -> Option<&TryFiles> {
        self.static_routes
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, t)| t)
    }
}

const URI: &str = "$uri";

/// An entry: `$uri`-shaped or a path of its own, with nothing in it that
/// a request's normalized path could not hold (`..`, `.`, hidden names,
/// `//`, a query, escapes).
pub fn entry(s: &str) -> Result<String, String> {
    if let Some(b) = s
        .bytes()
        .find(|&b| !(0x21..0x7f).contains(&b) || matches!(b, b'%' | b'?' | b'#' | b'\\'))
    {
        return Err(format!(
            "{s:?} holds {:?}: an entry is a path as requests name it after normalizing, \
             visible ASCII without %, ?, # or \\",
            b as char
        ));
    }
    let shape = || {
        format!(
            "expected \"$uri\" with a path before it or text after it (\"$uri/\", \"$uri.html\") \
             or a path starting with \"/\" (\"/index.html\"), got {s:?}"
        )
    };
    let (before, after) = TryFiles::split(s);
    // The path an entry makes, with `x` standing for the request's.
    let path = match after {
        Some(after) => {
            let placed = before.is_empty() || (before.starts_with('/') && !before.ends_with('/'));
            if !placed || before.contains('$') || after.contains('$') {
                return Err(shape());
            }
            format!("{before}/x{after}")
        }
        None if before.starts_with('/') && !before.contains('$') => before.to_owned(),
        None => return Err(shape()),
    };
    let segments: Vec<&str> = path[1..].split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        if seg.is_empty() && i + 1 != segments.len() {
            return Err(format!("{s:?} has an empty path segment"));
        }
        if seg.starts_with('.') {
            return Err(format!(
                "{s:?} names a hidden file or a dot segment, which is never served"
            ));
        }
    }
    Ok(s.to_owned())
}

/// `fallback =` on a route with an upstream or without one.
fn fallback(v: &FallbackValue, upstream: bool) -> Result<Fallback, String> {
    match v {
        FallbackValue::Name(n) if n == "@upstream" && upstream => Ok(Fallback::Upstream),
        FallbackValue::Name(n) if n == "@upstream" => {
            Err("\"@upstream\" names nothing: this route has no upstream \
             (give a status, or the route an upstream)"
                .into())
        }
        FallbackValue::Name(n) => Err(format!("{n:?} names nothing: expected {FALLBACK_EXPECTED}")),
        FallbackValue::Status(n) => match u16::try_from(*n) {
            Ok(s) if (400..=599).contains(&s) => Ok(Fallback::Status(s)),
            _ => Err(format!("expected {FALLBACK_EXPECTED}, got {n}")),
        },
    }
}

/// Whether an entry names a path beneath an alias route's prefix: only
/// those are looked up beneath its directory.
fn beneath_alias(entry: &str, prefix: &str) -> bool {
    match TryFiles::split(entry) {
        (before, Some(_)) => before.is_empty(),
        (path, None) => ringside_http::path::prefix_matches(path.as_bytes(), prefix.as_bytes()),
    }
}

impl Cx<'_> {
    /// `server_root`: where an HTTP upstream's route without `root` tries.
    pub(super) fn try_files(
        &self,
        f: &FileConfig,
        base: &Path,
        server_root: &Path,
    ) -> Result<TryFilesConfig, ConfigError> {
        let mut out = TryFilesConfig::default();
        for r in &f.routes {
            let r = r.get_ref();
            let t = self.route_try_files(r, f, base, server_root)?;
            match (&r.upstream, t) {
                (Some(_), t) => out.proxy_routes.push(t),
                (None, Some(t)) => out.static_routes.push((r.prefix.get_ref().clone(), t)),
                (None, None) => {}
            }
        }
        Ok(out)
    }

    fn route_try_files(
        &self,
        r: &RouteSection,
        f: &FileConfig,
        base: &Path,
        server_root: &Path,
    ) -> Result<Option<TryFiles>, ConfigError> {
        let Some(list) = &r.try_files else {
            if let Some(fb) = &r.fallback {
                return Err(self.err(
                    fb.span(),
                    "[[route]] fallback",
                    "only with try_files, whose entries it follows".into(),
                ));
            }
            return Ok(None);
        };
        let key = "[[route]] try_files";
        if list.get_ref().is_empty() {
            return Err(self.err(
                list.span(),
                key,
                "expected at least one entry (leave the key out for none)".into(),
            ));
        }
        let prefix = r.prefix.get_ref();
        let mut entries = Vec::new();
        for e in list.get_ref() {
            entries.push(self.check(e, key, |s| {
                let s = entry(s)?;
                if r.alias.is_some() && !beneath_alias(&s, prefix) {
                    return Err(format!(
                        "{s:?}: beneath alias a path is looked up below the prefix {prefix:?}, \
                         so an entry is \"$uri...\" or a path starting with the prefix"
                    ));
                }
                Ok(s)
            })?);
        }
        let upstream = r.upstream.as_ref();
        let fallback = match &r.fallback {
            None if upstream.is_some() => Fallback::Upstream,
            None => Fallback::Status(404),
            Some(v) => self.check(v, "[[route]] fallback", |v| fallback(v, upstream.is_some()))?,
        };
        // An HTTP upstream's route takes `root` for its files; a FastCGI
        // one has its scripts' root already, and a static route its own.
        let http = upstream.is_some_and(|u| {
            f.upstream
                .iter()
                .find(|(n, _)| n.get_ref() == u.get_ref())
                .is_none_or(|(_, s)| {
                    s.get_ref()
                        .protocol
                        .as_ref()
                        .is_none_or(|p| p.get_ref() != "fastcgi")
                })
        });
        let root = match (&r.root, http) {
            (Some(v), true) => Some(self.check(v, "[[route]] root", |s| root_dir(&join(base, s)))?),
            (None, true) => Some(server_root.to_path_buf()),
            (_, false) => None,
        };
        Ok(Some(TryFiles {
            entries,
            fallback,
            root,
        }))
    }
}

/// `try_files` and `fallback` (and an HTTP upstream's route's `root`).
pub fn write(out: &mut String, t: Option<&TryFiles>) -> fmt::Result {
    let Some(t) = t else { return Ok(()) };
    if let Some(root) = &t.root {
        writeln!(
            out,
            "root = {}",
            super::emit::quote(&root.to_string_lossy())
        )?;
    }
    let entries: Vec<String> = t.entries.iter().map(|e| super::emit::quote(e)).collect();
    writeln!(out, "try_files = [{}]", entries.join(", "))?;
    match t.fallback {
        Fallback::Upstream => writeln!(out, "fallback = \"@upstream\""),
        Fallback::Status(s) => writeln!(out, "fallback = {s}"),
    }
}
