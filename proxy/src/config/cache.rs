//! `[cache.NAME]`: response caches, named and taken by routes to an
//! upstream (`cache = "NAME"` on a `[[route]]` with `upstream`), validated
//! into [`ringside_cache::Settings`]; every key left out takes
//! `Settings::named`'s default.
//!
//! ```toml
//! [cache.pages]               # name: [A-Za-z0-9_-]+
//! memory = "64m"              # per core
//! max_object = "4m"           # at most memory / 16 (and disk_size / 8)
//! disk = "/var/cache/ringside/pages"  # each core: core-<N>/ beneath it
//! disk_size = "1g"            # per core; needs disk; at least 1m
//! lock_timeout = "5s"
//! stale_while_revalidate_max = "24h"
//! stale_if_error_max = "24h"
//! heuristic_percent = 10      # 0 to 100; 0: no heuristic freshness
//! heuristic_max = "24h"
//! hit_for_miss = "2m"
//! ignore_query = ["utm_source"]
//! key_headers = ["accept-language"]
//! key_cookies = ["lang"]
//! purge_from = ["10.0.0.0/8"]  # besides loopback
//! ```
//!
//! The caches come out sorted by name (the file layer's `BTreeMap`, as the
//! upstreams), and a route's `cache` is an index into them. A static route
//! takes none: its files are already held by the static file cache.
//!
//! `disk` is taken from the config file's directory when relative, and
//! made absolute (not resolved: it need not exist yet; `ringside check`
//! and the start make it, see `check/`). Two caches may not name the same
//! directory: they would share its files.

use std::fmt::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ringside_cache::Settings;
use ringside_runtime::cidr::Cidr;
use toml::Spanned;

use super::cx::{duration_or_zero, int_in, join, size_in, Cx};
use super::emit::{dur, quote, size};
use super::error::ConfigError;
use super::file::{CacheSection, DurationValue, FileConfig, SizeValue};
use crate::upstream::settings::ProxyConfig;

/// A response may take at most this fraction of its cache's memory.
pub const MAX_OBJECT_SHARE: u64 = 16;

/// With a disk tier, a response may take at most this fraction of its
/// `disk_size` (the disk tier refuses larger ones).
pub const DISK_OBJECT_SHARE: u64 = 8;

/// The smallest `disk_size`: 1 MiB.
pub const MIN_DISK_SIZE: u64 = 1 << 20;

type List = Option<Spanned<Vec<Spanned<String>>>>;

impl Cx<'_> {
    /// Every `[cache.NAME]`, by name, and each proxy route's `cache`
    /// (set on `proxy`'s routes, which are the file's routes with
    /// `upstream`, in order).
    pub(super) fn caches(
        &self,
        f: &FileConfig,
        base: &Path,
        proxy: &mut ProxyConfig,
    ) -> Result<Vec<Settings>, ConfigError> {
        let mut caches = Vec::with_capacity(f.cache.len());
        for (name, section) in &f.cache {
            self.check(name, &format!("[cache.{:?}]", name.get_ref()), |n| {
                cache_name(n)
            })?;
            caches.push(self.cache(name.get_ref(), section.get_ref(), base)?);
        }
        self.shared_disks(f, &caches)?;
        let mut proxied = proxy.routes.iter_mut();
        for r in &f.routes {
            let r = r.get_ref();
            let route = match r.upstream {
                Some(_) => proxied.next(),
                None => None,
            };
            let Some(v) = &r.cache else { continue };
            let Some(route) = route else {
                return Err(self.err(
                    v.span(),
                    "[[route]] cache",
                    "only for a route to an upstream (HTTP or FastCGI): static files are served from the static file cache and are not stored again".into(),
                ));
            };
            route.cache = Some(self.check(v, "[[route]] cache", |n| {
                caches.iter().position(|c| &c.name == n).ok_or_else(|| {
                    let names: Vec<String> =
                        caches.iter().map(|c| format!("{:?}", c.name)).collect();
                    if names.is_empty() {
                        format!("no [cache.{n}] is defined (there are no caches)")
                    } else {
                        format!("no [cache.{n}] is defined (caches: {})", names.join(", "))
                    }
                })
            })?);
        }
        Ok(caches)
    }

    fn cache(&self, name: &str, c: &CacheSection, base: &Path) -> Result<Settings, ConfigError> {
        let d = Settings::named(name);
        let key = |k: &str| format!("[cache.{name}] {k}");
        let memory = self.or(&c.memory, &key("memory"), d.memory, |v| {
            size_in(v, 1, u64::MAX)
        })?;
        let most = memory / MAX_OBJECT_SHARE;
        let max_object = match &c.max_object {
            Some(v) => self.check(v, &key("max_object"), |v| max_object(v, most))?,
            None if d.max_object > most => {
                // Only a given memory can get here: the defaults fit.
                let v = c.memory.as_ref().expect("the defaults fit together");
                return Err(self.err(
                    v.span(),
                    &key("memory"),
                    format!(
                        "expected at least {} ({MAX_OBJECT_SHARE} times the default max_object, {}: one response may take at most 1/{MAX_OBJECT_SHARE} of the cache), got {}; or give a smaller max_object",
                        size(d.max_object * MAX_OBJECT_SHARE),
                        size(d.max_object),
                        v.get_ref()
                    ),
                ));
            }
            None => d.max_object,
        };
        let disk = match &c.disk {
            Some(v) => Some(self.check(v, &key("disk"), |s| disk_dir(base, s))?),
            None => None,
        };
        let disk_size = match (&c.disk_size, &disk) {
            (Some(v), None) => {
                return Err(self.err(
                    v.span(),
                    &key("disk_size"),
                    format!("needs [cache.{name}] disk"),
                ))
            }
            (v, _) => self.or(v, &key("disk_size"), d.disk_size, |v| {
                size_in(v, MIN_DISK_SIZE, u64::MAX)
            })?,
        };
        let disk_most = disk_size / DISK_OBJECT_SHARE;
        if disk.is_some() && max_object > disk_most {
            return Err(match (&c.max_object, &c.disk_size) {
                (Some(v), _) => self.err(
                    v.span(),
                    &key("max_object"),
                    format!(
                        "expected at most {} (disk_size / {DISK_OBJECT_SHARE}: the disk tier takes an object of at most 1/{DISK_OBJECT_SHARE} of its size), got {}",
                        size(disk_most),
                        v.get_ref()
                    ),
                ),
                // A default max_object: only a given disk_size can get here.
                (None, v) => {
                    let v = v.as_ref().expect("the defaults fit together");
                    self.err(
                        v.span(),
                        &key("disk_size"),
                        format!(
                            "expected at least {} ({DISK_OBJECT_SHARE} times max_object, {}: the disk tier takes an object of at most 1/{DISK_OBJECT_SHARE} of its size), got {}; or give a smaller max_object",
                            size(max_object.saturating_mul(DISK_OBJECT_SHARE)),
                            size(max_object),
                            v.get_ref()
                        ),
                    )
                }
            });
        }
        let time = |v: &Option<Spanned<DurationValue>>, k: &str, d: Duration| {
            self.or(v, &key(k), d, duration_or_zero)
        };
        Ok(Settings {
            memory,
            max_object,
            disk,
            disk_size,
            lock_timeout: time(&c.lock_timeout, "lock_timeout", d.lock_timeout)?,
            stale_while_revalidate_max: time(
                &c.stale_while_revalidate_max,
                "stale_while_revalidate_max",
                d.stale_while_revalidate_max,
            )?,
            stale_if_error_max: time(
                &c.stale_if_error_max,
                "stale_if_error_max",
                d.stale_if_error_max,
            )?,
            heuristic_percent: self.or(
                &c.heuristic_percent,
                &key("heuristic_percent"),
                d.heuristic_percent,
                |&n| int_in(n, 0, 100).map(|n| n as u32),
            )?,
            heuristic_max: time(&c.heuristic_max, "heuristic_max", d.heuristic_max)?,
            hit_for_miss: time(&c.hit_for_miss, "hit_for_miss", d.hit_for_miss)?,
            ignore_query: self.names(&c.ignore_query, &key("ignore_query"), query_name)?,
            key_headers: self.names(&c.key_headers, &key("key_headers"), header_name)?,
            key_cookies: self.names(&c.key_cookies, &key("key_cookies"), cookie_name)?,
            purge_from: self.purge_from(&c.purge_from, &key("purge_from"))?,
            name: d.name,
        })
    }

    /// No two caches on one disk directory: they would write each other's
    /// files. The error is at the later of the two in the file.
    fn shared_disks(&self, f: &FileConfig, caches: &[Settings]) -> Result<(), ConfigError> {
        // `caches` is in `f.cache`'s order (by name); this is the file's.
        let mut given: Vec<(&Spanned<String>, &Settings)> = f
            .cache
            .values()
            .zip(caches)
            .filter_map(|(section, c)| Some((section.get_ref().disk.as_ref()?, c)))
            .collect();
        given.sort_by_key(|(v, _)| v.span().start);
        for (i, (v, c)) in given.iter().enumerate() {
            if let Some((_, first)) = given[..i].iter().find(|(_, o)| o.disk == c.disk) {
                let dir = c.disk.as_deref().unwrap_or(Path::new(""));
                return Err(self.err(
                    v.span(),
                    &format!("[cache.{}] disk", c.name),
                    format!(
                        "{} is [cache.{}]'s disk too: two caches would share its files; give each cache a directory of its own",
                        dir.display(),
                        first.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A list of names, each checked by `check`, none twice; empty when
    /// left out.
    fn names(
        &self,
        list: &List,
        key: &str,
        check: fn(&str) -> Result<String, String>,
    ) -> Result<Vec<String>, ConfigError> {
        match list {
            None => Ok(Vec::new()),
            Some(list) => self.unique(list, key, check),
        }
    }

    /// `purge_from`: addresses and CIDR blocks, as `allow` and `deny`.
    fn purge_from(&self, list: &List, key: &str) -> Result<Vec<Cidr>, ConfigError> {
        let mut out: Vec<Cidr> = Vec::new();
        for entry in list.iter().flat_map(|l| l.get_ref()) {
            let blocks = self.check(entry, key, |s| {
                let blocks = Cidr::parse(s)?;
                match blocks.iter().find(|b| out.contains(b)) {
                    Some(b) => Err(format!("{b} is listed twice")),
                    None => Ok(blocks),
                }
            })?;
            out.extend(blocks);
        }
        Ok(out)
    }
}

/// A cache's name, as an upstream's: letters, digits, '_' and '-'.
fn cache_name(n: &str) -> Result<(), String> {
    super::names::section_name("a cache", n)
}

/// `max_object`: at least a byte, at most `most` (memory / 16).
fn max_object(v: &SizeValue, most: u64) -> Result<u64, String> {
    let n = size_in(v, 1, u64::MAX)?;
    if n > most {
        return Err(format!(
            "expected at most {} (memory / {MAX_OBJECT_SHARE}: one response may take at most 1/{MAX_OBJECT_SHARE} of the cache), got {v}",
            size(most)
        ));
    }
    Ok(n)
}

/// `disk`: a directory path, taken from `base` (the config file's
/// directory) and made absolute; it need not exist yet.
fn disk_dir(base: &Path, s: &str) -> Result<PathBuf, String> {
    if s.is_empty() || s.contains('\0') {
        return Err(format!("expected a directory path, got {s:?}"));
    }
    std::path::absolute(join(base, s))
        // Without `.` parts and a trailing '/', so that equal paths look
        // alike; `..` is kept (it depends on symlinks).
        .map(|p| p.components().collect())
        .map_err(|e| format!("cannot make {s:?} absolute: {e}"))
}

/// A query parameter's name as written in the query: visible ASCII
/// without `&`, `=` or `#`.
fn query_name(n: &str) -> Result<String, String> {
    if n.is_empty()
        || !n
            .bytes()
            .all(|b| (0x21..0x7f).contains(&b) && !b"&=#".contains(&b))
    {
        return Err(format!(
            "expected a query parameter name (visible ASCII without '&', '=' or '#'), got {n:?}"
        ));
    }
    Ok(n.to_owned())
}

/// A request header's name (a token), in lower case.
fn header_name(n: &str) -> Result<String, String> {
    if !ringside_http::grammar::is_token(n.as_bytes()) {
        return Err(format!(
            "expected a header name (a token like \"accept-language\"), got {n:?}"
        ));
    }
    Ok(n.to_ascii_lowercase())
}

/// A cookie's name (a token, RFC 6265 §4.1.1), as written: cookie names
/// are case-sensitive.
fn cookie_name(n: &str) -> Result<String, String> {
    if !ringside_http::grammar::is_token(n.as_bytes()) {
        return Err(format!(
            "expected a cookie name (a token like \"session\"), got {n:?}"
        ));
    }
    Ok(n.to_owned())
}

/// A TOML list of string literals.
fn list<T: ToString>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(|i| quote(&i.to_string())).collect();
    format!("[{}]", items.join(", "))
}

/// Every `[cache.NAME]`, as the file has it, every key included.
pub fn write_caches(out: &mut String, caches: &[Settings]) -> fmt::Result {
    for c in caches {
        // Names are checked to be bare keys.
        writeln!(out, "\n[cache.{}]", c.name)?;
        writeln!(out, "memory = {}", size(c.memory))?;
        writeln!(out, "max_object = {}", size(c.max_object))?;
        if let Some(d) = &c.disk {
            writeln!(out, "disk = {}", quote(&d.to_string_lossy()))?;
            writeln!(out, "disk_size = {}", size(c.disk_size))?;
        }
        writeln!(out, "lock_timeout = {}", dur(c.lock_timeout))?;
        let swr = dur(c.stale_while_revalidate_max);
        writeln!(out, "stale_while_revalidate_max = {swr}")?;
        writeln!(out, "stale_if_error_max = {}", dur(c.stale_if_error_max))?;
        writeln!(out, "heuristic_percent = {}", c.heuristic_percent)?;
        writeln!(out, "heuristic_max = {}", dur(c.heuristic_max))?;
        writeln!(out, "hit_for_miss = {}", dur(c.hit_for_miss))?;
        writeln!(out, "ignore_query = {}", list(&c.ignore_query))?;
        writeln!(out, "key_headers = {}", list(&c.key_headers))?;
        writeln!(out, "key_cookies = {}", list(&c.key_cookies))?;
        writeln!(out, "purge_from = {}", list(&c.purge_from))?;
    }
    Ok(())
}

/// A route's `cache = "NAME"` line.
pub fn write_route(out: &mut String, caches: &[Settings], cache: Option<usize>) -> fmt::Result {
    match cache.and_then(|i| caches.get(i)) {
        Some(c) => writeln!(out, "cache = {}", quote(&c.name)),
        None => Ok(()),
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
