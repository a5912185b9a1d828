//! Error pages at the edge: after routing, the request's table (its
//! route's pages, then its vhost's, then the server's, status by status)
//! is set on the exchange, which consults it wherever an error is
//! answered (`ringside_http::error_page`). A request on a route with no
//! pages at any level gets no table, and pays nothing.
//!
//! Each core keeps each page file in memory, read when the handler is
//! built (at start and at each reload) and again when a look at the file
//! (at most once per `[static] revalidate`) finds it changed; a page that
//! is gone or no longer fits gives the built-in answer, and a page's own
//! answer never looks a page up, so a missing page can never loop.

use std::cell::RefCell;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ringside_http::error_page::{self, Page};
use ringside_http::Exchange;

use crate::config::error_pages::{ErrorPagesConfig, Pages, MAX_PAGE};
use crate::config::tls::TlsConfig;

/// One page file, as this core last read it.
struct PageFile {
    path: PathBuf,
    content_type: Bytes,
    every: Duration,
    state: RefCell<Loaded>,
}

#[derive(Default)]
struct Loaded {
    body: Option<Bytes>,
    /// What the file was when read: inode, size, modification time.
    stamp: Option<(u64, u64, i64, i64)>,
    checked: Option<Instant>,
}

fn stamp(m: &fs::Metadata) -> (u64, u64, i64, i64) {
    (m.ino(), m.len(), m.mtime(), m.mtime_nsec())
}

impl PageFile {
    fn new(path: &Path, content_type: &str, every: Duration) -> PageFile {
        let f = PageFile {
            path: path.to_path_buf(),
            content_type: Bytes::copy_from_slice(content_type.as_bytes()),
            every,
            state: RefCell::new(Loaded {
                checked: Some(ringside_runtime::clock::now()),
                ..Loaded::default()
            }),
        };
        f.reload(&mut f.state.borrow_mut());
        f
    }

    /// Reads the file again if it changed (blocking, but once per
    /// `every` at most, and a page is small).
    fn reload(&self, s: &mut Loaded) {
        let m = fs::metadata(&self.path)
            .ok()
            .filter(|m| m.is_file() && m.len() <= MAX_PAGE);
        let Some(m) = m else {
            *s = Loaded {
                checked: s.checked,
                ..Loaded::default()
            };
            return;
        };
        if s.body.is_some() && s.stamp == Some(stamp(&m)) {
            return;
        }
        s.body = fs::read(&self.path)
            .ok()
            .filter(|b| b.len() as u64 <= MAX_PAGE)
            .map(Bytes::from);
        s.stamp = Some(stamp(&m));
    }

    fn body(&self) -> Option<Bytes> {
        let mut s = self.state.borrow_mut();
        let now = ringside_runtime::clock::now();
        if s.checked
            .is_none_or(|t| now.saturating_duration_since(t) >= self.every)
        {
            s.checked = Some(now);
            self.reload(&mut s);
        }
        s.body.clone()
    }
}

struct Entry {
    lo: u16,
    hi: u16,
    status: Option<u16>,
    file: Rc<PageFile>,
}

/// One request's pages: the first entry that covers a status is its page.
struct Table {
    entries: Vec<Entry>,
    intercept: bool,
}

impl error_page::ErrorPages for Table {
    fn page(&self, status: u16) -> Option<Page> {
        let e = self
            .entries
            .iter()
            .find(|e| (e.lo..=e.hi).contains(&status))?;
        Some(Page {
            status: e.status.unwrap_or(status),
            content_type: e.file.content_type.clone(),
            body: e.file.body()?,
        })
    }

    fn intercepts(&self) -> bool {
        self.intercept
    }
}

/// By route tag: the request's table, if it has any pages.
type ByTag = Vec<Option<Rc<Table>>>;

pub struct ErrorPages {
    /// By route tag (see `super::per_tag`): route, then server pages.
    by_tag: ByTag,
    /// Where a vhost has pages: host names to their index, and by vhost
    /// then route tag: route, vhost, then server pages.
    vhosts: Option<(TlsConfig, Vec<ByTag>)>,
}

impl ErrorPages {
    /// `routes`: by route tag, each route's pages and whether it
    /// intercepts (see `super::Edge::per_tag`). `None` when no level has
    /// pages.
    pub fn new(
        cfg: &ErrorPagesConfig,
        tls: &TlsConfig,
        routes: &[Option<(&Pages, bool)>],
        every: Duration,
    ) -> Option<ErrorPages> {
        if cfg.is_empty() {
            return None;
        }
        // One file per path on this core, whichever levels name it.
        let mut files: Vec<Rc<PageFile>> = Vec::new();
        let mut table = |levels: &[&Pages], intercept: bool| -> Option<Rc<Table>> {
            let entries: Vec<Entry> = levels
                .iter()
                .flat_map(|l| l.iter())
                .map(|p| {
                    let file = match files.iter().find(|f| f.path == p.file) {
                        Some(f) => f.clone(),
                        None => {
                            let f = Rc::new(PageFile::new(&p.file, &p.content_type, every));
                            files.push(f.clone());
                            f
                        }
                    };
                    Entry {
                        lo: p.lo,
                        hi: p.hi,
                        status: p.status,
                        file,
                    }
                })
                .collect();
            (!entries.is_empty()).then(|| Rc::new(Table { entries, intercept }))
        };
        let none = Pages::new();
        let mut tables = |vhost: &Pages| -> ByTag {
            routes
                .iter()
                .map(|r| {
                    let (route, intercept) = r.unwrap_or((&none, false));
                    table(&[route, vhost, &cfg.server], intercept)
                })
                .collect()
        };
        let by_tag = tables(&none);
        let vhosts = cfg
            .vhosts
            .iter()
            .any(|v| !v.is_empty())
            .then(|| cfg.vhosts.iter().map(&mut tables).collect());
        Some(ErrorPages {
            by_tag,
            vhosts: vhosts.map(|v| (tls.clone(), v)),
        })
    }

    /// Sets the pages of the request's route (tag `tag`) and host.
    pub fn apply(&self, ex: &mut Exchange<'_>, tag: usize) {
        let vhost = self.vhosts.as_ref().and_then(|(tls, tables)| {
            let host = super::router::normalize_host(ex.host()?)?;
            tables.get(tls.vhost_index(&host)?)
        });
        let t = vhost.unwrap_or(&self.by_tag).get(tag);
        if let Some(Some(t)) = t {
            ex.set_error_pages(t.clone());
        }
    }
}
