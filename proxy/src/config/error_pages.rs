//! Custom error pages (nginx's `error_page`): `error_pages` on `[server]`,
//! on each `[[vhost]]` and on each `[[route]]`, a table from a status or a
//! status range to a file, and `intercept_errors` on a route to an
//! upstream (nginx's `proxy_intercept_errors`/`fastcgi_intercept_errors`).
//!
//! ```toml
//! [server]
//! error_pages = { 404 = "errors/404.html", 500-599 = "errors/5xx.html" }
//!
//! [upstream.app]
//! servers = ["127.0.0.1:3000"]
//!
//! [[route]]
//! prefix = "/api/"
//! upstream = "app"
//! intercept_errors = true   # the upstream's own 4xx/5xx replaced too
//! error_pages = { 503 = { file = "errors/busy.json", status = 200 } }
//! ```
//!
//! A key is a status or a range of them, within 400-599; a value is the
//! file (relative to the config file's directory), or a table with the
//! file and the status sent instead (nginx's `error_page 404 =200`). The
//! page's Content-Type comes from its extension by the static files' table
//! (`[static] mime` first). The levels fall through status by status: a
//! status the route has no page for takes its vhost's, else the server's.
//! Within a level a narrower range wins over a wider one.
//!
//! A page is read when the config is (a missing file, or one over
//! [`MAX_PAGE`], is an error), and again by each core when it changed on
//! disk, checked at most every `[static] revalidate`; a page that is gone
//! or unreadable then gives the built-in answer.

use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::cx::{join, Cx};
use super::error::{io_reason, ConfigError};
use super::file::FileConfig;

/// The largest page: each core keeps each page in memory.
pub const MAX_PAGE: u64 = 64 << 10;

/// `error_pages = { ... }` as written: status or range to page.
pub type PagesTable = BTreeMap<String, Spanned<PageValue>>;

/// A page as written: its file, or `{ file = "...", status = N }`.
#[derive(Clone, Debug)]
pub enum PageValue {
    File(String),
    Table(PageTable),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageTable {
    pub file: String,
    pub status: Option<i64>,
}

impl<'de> Deserialize<'de> for PageValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PageValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a file path, or a table like { file = \"PATH\", status = 200 }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<PageValue, E> {
                Ok(PageValue::File(s.to_owned()))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<PageValue, A::Error> {
                PageTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(PageValue::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// One page: the statuses `lo..=hi` it stands in for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub lo: u16,
    pub hi: u16,
    /// Absolute.
    pub file: PathBuf,
    /// The status sent instead of the error's (nginx's `=CODE`).
    pub status: Option<u16>,
    pub content_type: String,
}

impl Page {
    pub fn covers(&self, status: u16) -> bool {
        (self.lo..=self.hi).contains(&status)
    }

    fn key(&self) -> String {
        if self.lo == self.hi {
            self.lo.to_string()
        } else {
            format!("{}-{}", self.lo, self.hi)
        }
    }
}

/// One level's pages, narrowest range first.
pub type Pages = Vec<Page>;

/// The pages of every level, validated; empty where none were given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPagesConfig {
    pub server: Pages,
    /// By index in `TlsConfig::vhosts`.
    pub vhosts: Vec<Pages>,
    /// By index in `ProxyConfig::routes`: the pages, and whether the
    /// upstream's own errors are replaced.
    pub proxy_routes: Vec<(Pages, bool)>,
    /// Static routes that have pages, by prefix.
    pub static_routes: Vec<(String, Pages)>,
}

impl ErrorPagesConfig {
    pub fn is_empty(&self) -> bool {
        self.server.is_empty()
            && self.vhosts.iter().all(Vec::is_empty)
            && self.proxy_routes.iter().all(|(p, _)| p.is_empty())
            && self.static_routes.is_empty()
    }

    pub fn static_route(&self, prefix: &str) -> Option<&Pages> {
        self.static_routes
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, r)| r)
    }
}

/// A status or a range of them, within 400-599: `"404"`, `"500-599"`.
pub fn status_range(s: &str) -> Result<(u16, u16), String> {
    let one = |t: &str| -> Result<u16, String> {
        match t.trim().parse::<u16>() {
            Ok(n) if (400..=599).contains(&n) => Ok(n),
            _ => Err(format!(
                "expected an error status from 400 to 599 or a range like \"500-599\", got {s:?}"
            )),
        }
    };
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (one(a)?, one(b)?),
        None => {
            let n = one(s)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(format!(
            "the range {s:?} is empty: write the lower status first"
        ));
    }
    Ok((lo, hi))
}

/// The status a page is sent with instead: one that carries a body.
fn sent_status(n: i64) -> Result<u16, String> {
    match u16::try_from(n) {
        Ok(s) if (200..=599).contains(&s) && !ringside_http::status::no_content(s) => Ok(s),
        _ => Err(format!(
            "expected a status from 200 to 599 that carries a body, got {n}"
        )),
    }
}

/// A page file: a regular file of at most [`MAX_PAGE`] bytes.
fn page_file(path: &Path) -> Result<PathBuf, String> {
    let m =
        std::fs::metadata(path).map_err(|e| format!("cannot open {path:?}: {}", io_reason(&e)))?;
    if !m.is_file() {
        return Err(format!("{path:?} is not a file"));
    }
    if m.len() > MAX_PAGE {
        return Err(format!(
            "{path:?} is {} bytes; an error page is kept in memory by each core, at most {MAX_PAGE} bytes",
            m.len()
        ));
    }
    std::fs::canonicalize(path).map_err(|e| format!("cannot open {path:?}: {}", io_reason(&e)))
}

type Table = Option<Spanned<PagesTable>>;

impl Cx<'_> {
    /// `mime`: the static files' table, for each page's Content-Type.
    pub(super) fn error_pages(
        &self,
        f: &FileConfig,
        base: &Path,
        mime: &ringside_static::mime::MimeTable,
    ) -> Result<ErrorPagesConfig, ConfigError> {
        let level = |t: &Table, section: &str| self.pages(t, section, base, mime);
        let server = level(&f.server.error_pages, "[server]")?;
        let mut vhosts = Vec::with_capacity(f.vhosts.len());
        for v in &f.vhosts {
            vhosts.push(level(&v.get_ref().error_pages, "[[vhost]]")?);
        }
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let pages = level(&r.error_pages, "[[route]]")?;
            match (&r.upstream, &r.intercept_errors) {
                (Some(_), i) => {
                    proxy_routes.push((pages, i.as_ref().is_some_and(|i| *i.get_ref())))
                }
                (None, Some(i)) => {
                    return Err(self.err(
                        i.span(),
                        "[[route]] intercept_errors",
                        "only for a route to an upstream, whose own error responses it replaces"
                            .into(),
                    ))
                }
                (None, None) if pages.is_empty() => {}
                (None, None) => static_routes.push((r.prefix.get_ref().clone(), pages)),
            }
        }
        Ok(ErrorPagesConfig {
            server,
            vhosts,
            proxy_routes,
            static_routes,
        })
    }

    fn pages(
        &self,
        table: &Table,
        section: &str,
        base: &Path,
        mime: &ringside_static::mime::MimeTable,
    ) -> Result<Pages, ConfigError> {
        let Some(table) = table else {
            return Ok(Vec::new());
        };
        let key = format!("{section} error_pages");
        if table.get_ref().is_empty() {
            return Err(self.err(
                table.span(),
                &key,
                "expected at least one status and its page (leave the key out for none)".into(),
            ));
        }
        let mut out: Pages = Vec::new();
        for (range, value) in table.get_ref() {
            let (lo, hi) = self.check(value, &key, |_| {
                let (lo, hi) = status_range(range)?;
                if let Some(o) = out.iter().find(|o| (o.lo, o.hi) == (lo, hi)) {
                    return Err(format!("{range:?} is {:?} written again", o.key()));
                }
                Ok((lo, hi))
            })?;
            let (file, status) = match value.get_ref() {
                PageValue::File(f) => (f, None),
                PageValue::Table(t) => (&t.file, t.status),
            };
            let file = self.check(value, &key, |_| page_file(&join(base, file)))?;
            let status = match status {
                Some(n) => Some(self.check(value, &key, |_| sent_status(n))?),
                None => None,
            };
            let name = file.to_string_lossy();
            let content_type = mime.for_path(&name).to_owned();
            out.push(Page {
                lo,
                hi,
                file,
                status,
                content_type,
            });
        }
        out.sort_by_key(|p| (p.hi - p.lo, p.lo));
        Ok(out)
    }
}

/// `error_pages = { ... }` for one level's pages, where it has any.
pub fn write_pages(out: &mut String, pages: &Pages) -> fmt::Result {
    if pages.is_empty() {
        return Ok(());
    }
    let entries: Vec<String> = pages
        .iter()
        .map(|p| {
            let file = super::emit::quote(&p.file.to_string_lossy());
            match p.status {
                None => format!("\"{}\" = {file}", p.key()),
                Some(s) => format!("\"{}\" = {{ file = {file}, status = {s} }}", p.key()),
            }
        })
        .collect();
    writeln!(out, "error_pages = {{ {} }}", entries.join(", "))
}

/// A proxy route's `error_pages` and `intercept_errors`.
pub fn write_proxy_route(out: &mut String, c: &ErrorPagesConfig, i: usize) -> fmt::Result {
    let Some((pages, intercept)) = c.proxy_routes.get(i) else {
        return Ok(());
    };
    write_pages(out, pages)?;
    if *intercept {
        writeln!(out, "intercept_errors = true")?;
    }
    Ok(())
}
