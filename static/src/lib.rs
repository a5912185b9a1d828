//! ringside-static: files from a docroot, the way an edge server should.
//!
//! A request is matched to a route (longest prefix), its path decoded once
//! into a per-core scratch buffer, and looked up in this core's cache. A hit
//! that is fresh needs no system call: validators, conditional requests and
//! ranges are answered from the entry, and the body goes out with the head in
//! one write. A miss opens the file beneath the route's root with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`; small files are read
//! and cached, larger ones are cached open and sent from the file without a
//! copy (splice on io_uring, sendfile on epoll). Precompressed siblings
//! (`.br`, `.zst`, `.gz`) are chosen by Accept-Encoding and cached like any
//! file.

mod cache;
mod compressed;
pub mod listing;
pub mod mime;
pub mod open;
mod path;
mod respond;
mod settings;

use std::cell::RefCell;
use std::io;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use ringside_http::semantics::negotiation::{self as encoding, Coding};
use ringside_http::{Error, Exchange, Handler, Method};

use crate::cache::{Cache, Entry, Lookup, Meta};
pub use crate::path::{decode_path, PathError};
use crate::respond::{respond, Job, Source};
pub use crate::settings::{CacheConfig, RouteConfig, StaticConfig};

/// Codings looked for on disk, in the server's order of preference; bit `i`
/// of an entry's `variants` says whether `CODINGS[i]` exists.
const CODINGS: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

/// Set in a cache key's first byte (the route id) for a precompressed
/// sibling served in place of its file, so that it never shares a key with
/// a request for the sibling by its own name (whose Content-Type differs).
const VARIANT_KEY: u8 = 0x80;

/// What a path names, as [`StaticFiles::probe`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    File,
    Dir,
    Nothing,
}

/// A docroot of [`StaticFiles::add_docroot`].
#[derive(Debug)]
pub struct Docroot(usize);

/// The cache key id of directory `root`: one per directory, so routes on
/// one directory share entries and routes on different ones never do.
fn dir_id(dirs: &mut Vec<std::path::PathBuf>, root: &std::path::Path) -> io::Result<u8> {
    let id = dirs.iter().position(|d| d == root).unwrap_or_else(|| {
        dirs.push(root.to_path_buf());
        dirs.len() - 1
    });
    u8::try_from(id)
        .ok()
        .filter(|&id| id & VARIANT_KEY == 0)
        .ok_or_else(|| io::Error::other("at most 127 static route directories"))
}

struct Route {
    prefix: Box<[u8]>,
    root: OwnedFd,
    /// nginx's `alias`: the prefix is replaced by `root`, not looked up
    /// beneath it.
    alias: bool,
    cache_control: Option<Box<[u8]>>,
    listing: bool,
    /// First byte of this route's cache keys: one per directory, not per
    /// route, since a key's path is relative to the directory. Routes on
    /// one directory then share entries (a file is the same file whichever
    /// prefix reached it), and routes on different directories never do.
    id: u8,
}

/// The static handler of one worker; its cache is this core's own.
pub struct StaticFiles {
    /// By longest prefix, then the root's (prefix empty), then the
    /// docroots [`StaticFiles::add_docroot`] added, which no path finds.
    routes: Vec<Route>,
    /// How many of `routes` a path is matched against.
    matched: usize,
    /// Each directory's path, by its cache key id.
    dirs: Vec<std::path::PathBuf>,
    cache: RefCell<Cache>,
    scratch: RefCell<Vec<u8>>,
    mime: mime::MimeTable,
    index: Vec<String>,
    precompressed: bool,
}

impl StaticFiles {
    /// Serves `root` with the default settings.
    pub fn new(root: &std::path::Path) -> io::Result<StaticFiles> {
        Self::from_config(&StaticConfig::new(root.to_path_buf()))
    }

    pub fn from_config(cfg: &StaticConfig) -> io::Result<StaticFiles> {
        let mut routes = Vec::new();
        let cc = |c: &Option<String>| c.as_ref().map(|s| s.as_bytes().into());
        // The config layer hands over canonical paths, so one directory is
        // one path here.
        let mut dirs = vec![cfg.root.clone()];
        for r in &cfg.routes {
            let root = r.root.as_deref().unwrap_or(&cfg.root);
            routes.push(Route {
                prefix: r.prefix.as_bytes().into(),
                root: open::open_root(root)?,
                alias: r.alias,
                cache_control: cc(&r.cache_control).or_else(|| cc(&cfg.cache_control)),
                listing: r.listing.unwrap_or(cfg.listing),
                id: dir_id(&mut dirs, root)?,
            });
        }
        routes.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        routes.push(Route {
            prefix: Box::new([]),
            root: open::open_root(&cfg.root)?,
            alias: false,
            cache_control: cc(&cfg.cache_control),
            listing: cfg.listing,
            id: 0,
        });
        Ok(StaticFiles {
            matched: routes.len(),
            routes,
            dirs,
            cache: RefCell::new(Cache::new(
                cfg.cache.max_bytes,
                cfg.cache.max_file,
                cfg.cache.max_open,
                cfg.cache.revalidate,
            )),
            scratch: RefCell::new(Vec::with_capacity(256)),
            mime: mime::MimeTable::new(cfg.mime.iter().cloned()),
            index: cfg.index.clone(),
            precompressed: cfg.precompressed,
        })
    }

    /// Adds a docroot that no path is matched to, served by
    /// [`StaticFiles::handle_in`] with the root's settings: the files of a
    /// handler that chose the directory itself (a FastCGI route's own
    /// `root`, whose non-script files are its own).
    pub fn add_docroot(&mut self, root: &std::path::Path) -> io::Result<Docroot> {
        let root_route = &self.routes[self.matched - 1];
        let route = Route {
            prefix: Box::new([]),
            root: open::open_root(root)?,
            alias: false,
            cache_control: root_route.cache_control.clone(),
            listing: root_route.listing,
            id: dir_id(&mut self.dirs, root)?,
        };
        self.routes.push(route);
        Ok(Docroot(self.routes.len() - 1))
    }

    /// Serves a request's path beneath `docroot`, whatever its prefix.
    pub async fn handle_in(&self, ex: &mut Exchange<'_>, docroot: &Docroot) -> Result<(), Error> {
        match self.prepare(ex, Some(docroot), None)? {
            None => Ok(()),
            Some(job) => Box::pin(job.run(ex)).await,
        }
    }

    /// Serves the file (or directory) at `path`, a normalized path in
    /// place of the request's, from the route the request's path chose
    /// (or from `docroot`): what `try_files` found (see [`Self::probe`]).
    pub async fn handle_path(
        &self,
        ex: &mut Exchange<'_>,
        docroot: Option<&Docroot>,
        path: &[u8],
    ) -> Result<(), Error> {
        match self.prepare(ex, docroot, Some(path))? {
            None => Ok(()),
            Some(job) => Box::pin(job.run(ex)).await,
        }
    }

    /// What `path` (a normalized path) names beneath the route that
    /// `route_path` chooses (or beneath `docroot`), looked up as a request
    /// for it would be: opened beneath the route's directory, hidden names
    /// and escapes refused. A path ending in `/` names a directory, any
    /// other a file, as nginx's `try_files` tests them; a fresh cache
    /// entry answers for a file without a system call.
    pub fn probe(&self, route_path: &[u8], docroot: Option<&Docroot>, path: &[u8]) -> Found {
        let route = match docroot {
            Some(d) => &self.routes[d.0],
            None => self.route(route_path),
        };
        let mut key = self.scratch.borrow_mut();
        key.clear();
        key.push(route.id);
        let rel = if route.alias {
            path::alias_rest(path, &route.prefix)
        } else {
            Some(path)
        };
        if rel.map(|p| path::decode_path_into(p, &mut key)) != Some(Ok(())) {
            return Found::Nothing;
        }
        let dir = path.ends_with(b"/");
        let now = ringside_runtime::clock::now();
        if !dir && matches!(self.cache.borrow_mut().lookup(&key, now), Lookup::Fresh(_)) {
            return Found::File;
        }
        match open::open_beneath(&route.root, rel_path(&key)).and_then(|f| f.metadata()) {
            Ok(m) if dir && m.is_dir() => Found::Dir,
            Ok(m) if !dir && m.is_file() => Found::File,
            _ => Found::Nothing,
        }
    }

    /// The route for a request's normalized path: the longest prefix that
    /// matches whole segments, by the rule the router uses too, so `/priv`
    /// does not take `/private` and `/%61ssets/` finds the `/assets/` route.
    fn route(&self, path: &[u8]) -> &Route {
        self.routes[..self.matched]
            .iter()
            .find(|r| r.prefix.is_empty() || ringside_http::path::prefix_matches(path, &r.prefix))
            .expect("the last route matches every path")
    }
    /// Answers everything that needs no waiting, and returns the transfer
    /// that does. Synchronous so that none of its locals become part of the
    /// connection's future, which every idle connection holds.
    fn prepare(
        &self,
        ex: &mut Exchange<'_>,
        docroot: Option<&Docroot>,
        instead: Option<&[u8]>,
    ) -> Result<Option<Job>, Error> {
        if !matches!(ex.method(), Method::Get | Method::Head) {
            ex.send(
                405,
                &[("Allow", b"GET, HEAD"), ("Content-Type", b"text/plain")],
                b"405 Method Not Allowed\n",
            )?;
            return Ok(None);
        }
        let route = match docroot {
            Some(d) => &self.routes[d.0],
            None => self.route(ex.route_path()),
        };
        let mut scratch = self.scratch.borrow_mut();
        scratch.clear();
        scratch.push(route.id);
        let asked = instead.unwrap_or(ex.path());
        let rel = if route.alias {
            path::alias_rest(asked, &route.prefix)
        } else {
            Some(asked)
        };
        match rel.map(|p| path::decode_path_into(p, &mut scratch)) {
            Some(Ok(())) => {}
            Some(Err(PathError::Hidden)) => return status(ex, 404),
            Some(Err(PathError::Invalid)) | None => return status(ex, 400),
        }
        let now = ringside_runtime::clock::now();
        let mut cache = self.cache.borrow_mut();
        let hit = match cache.lookup(&scratch, now) {
            Lookup::Fresh(i) => Some(i),
            Lookup::Stale(i) => self.revalidate(&mut cache, i, route, &scratch[1..], now),
            Lookup::Miss => None,
        };
        if let Some(i) = hit {
            return self.serve_entry(ex, &mut cache, i, route, &mut scratch, now);
        }
        drop(cache);
        self.serve_miss(ex, route, &mut scratch, now)
    }

    /// A stale entry: one open and stat; unchanged files stay cached.
    fn revalidate(
        &self,
        cache: &mut Cache,
        i: usize,
        route: &Route,
        rel: &[u8],
        now: Instant,
    ) -> Option<usize> {
        let rel = std::str::from_utf8(rel).expect("decode_path_into checked UTF-8");
        let same = open::open_beneath(&route.root, rel)
            .and_then(|f| f.metadata())
            .is_ok_and(|st| st.is_file() && cache.get(i).meta.same_file(&st));
        if same {
            cache.confirm(i, now);
            Some(i)
        } else {
            cache.remove(i);
            None
        }
    }

    fn serve_entry(
        &self,
        ex: &mut Exchange<'_>,
        cache: &mut Cache,
        i: usize,
        route: &Route,
        scratch: &mut Vec<u8>,
        now: Instant,
    ) -> Result<Option<Job>, Error> {
        let variants = cache.get(i).variants;
        if variants != 0 {
            let available = available(variants);
            if let Some(coding) =
                encoding::choose(ex.header("accept-encoding"), available.as_slice())
            {
                if let Some(job) = self.serve_variant(ex, cache, route, scratch, coding, now)? {
                    return Ok(job);
                }
            }
        }
        let squeeze = compressed::compressible(ex.compression().map(|p| &**p), cache.get(i));
        // The policy is held only for a file it compresses.
        if let Some(p) = ex.compression().filter(|_| squeeze).cloned() {
            if let Some(job) = compressed::serve(ex, cache, i, route, scratch, &p, now)? {
                return Ok(job);
            }
        }
        let e = cache.get(i);
        let src = Source::of(e);
        let (meta, ctype) = (e.meta.clone(), e.ctype.clone());
        if matches!(src, Source::File(_))
            && compressed::variant_not_modified(ex, &meta, &ctype, route.cache_control.as_deref())?
        {
            return Ok(None);
        }
        respond(
            ex,
            &meta,
            &ctype,
            src,
            route.cache_control.as_deref(),
            variants != 0 || squeeze,
            None,
        )
    }

    /// The precompressed sibling, cached under its own key. `Ok(None)` when
    /// it vanished, so the caller serves the identity file.
    fn serve_variant(
        &self,
        ex: &mut Exchange<'_>,
        cache: &mut Cache,
        route: &Route,
        scratch: &mut Vec<u8>,
        coding: Coding,
        now: Instant,
    ) -> Result<Option<Option<Job>>, Error> {
        let base_len = scratch.len();
        scratch.extend_from_slice(coding.suffix().as_bytes());
        scratch[0] |= VARIANT_KEY;
        let ctype = self.mime.for_path(rel_path(&scratch[..base_len]));
        let hit = match cache.lookup(scratch, now) {
            Lookup::Fresh(i) => Some(i),
            Lookup::Stale(i) => self.revalidate(cache, i, route, &scratch[1..], now),
            Lookup::Miss => None,
        };
        let result = match hit {
            Some(i) => {
                let e = cache.get(i);
                let (meta, src) = (e.meta.clone(), Source::of(e));
                Some(respond(
                    ex,
                    &meta,
                    ctype,
                    src,
                    route.cache_control.as_deref(),
                    true,
                    Some(coding),
                )?)
            }
            None => {
                let rel = rel_path(scratch);
                match open::open_beneath(&route.root, rel) {
                    Ok(file) => {
                        let st = file.metadata()?;
                        if !st.is_file() {
                            None
                        } else {
                            let meta = Meta::of(&st);
                            let src = self.load(cache, scratch, file, &meta, ctype, 0, now)?;
                            Some(respond(
                                ex,
                                &meta,
                                ctype,
                                src,
                                route.cache_control.as_deref(),
                                true,
                                Some(coding),
                            )?)
                        }
                    }
                    Err(_) => None,
                }
            }
        };
        scratch.truncate(base_len);
        scratch[0] &= !VARIANT_KEY;
        Ok(result)
    }

    fn serve_miss(
        &self,
        ex: &mut Exchange<'_>,
        route: &Route,
        scratch: &mut Vec<u8>,
        now: Instant,
    ) -> Result<Option<Job>, Error> {
        let rel = rel_path(scratch).to_owned();
        let file = match open::open_beneath(&route.root, &rel) {
            Ok(f) => f,
            Err(e) => return status(ex, open_error_status(&e)),
        };
        let st = file.metadata()?;
        if st.is_dir() {
            return self.serve_dir(ex, route, scratch, now);
        }
        // A file named with a trailing slash is not a directory.
        if !st.is_file() || rel.ends_with('/') {
            return status(ex, 404);
        }
        self.serve_file(ex, route, scratch, file, &st, now)
    }

    fn serve_file(
        &self,
        ex: &mut Exchange<'_>,
        route: &Route,
        scratch: &mut Vec<u8>,
        file: std::fs::File,
        st: &std::fs::Metadata,
        now: Instant,
    ) -> Result<Option<Job>, Error> {
        let meta = Meta::of(st);
        let rel = rel_path(scratch);
        let ctype = self.mime.for_path(rel);
        let variants = if self.precompressed {
            self.probe_variants(route, rel)
        } else {
            0
        };
        if variants != 0 {
            let available = available(variants);
            if let Some(coding) =
                encoding::choose(ex.header("accept-encoding"), available.as_slice())
            {
                let mut cache = self.cache.borrow_mut();
                // Cache the identity file first, so its variants bits persist.
                let _ = self.load(
                    &mut cache,
                    scratch,
                    file.try_clone()?,
                    &meta,
                    ctype,
                    variants,
                    now,
                )?;
                if let Some(job) =
                    self.serve_variant(ex, &mut cache, route, scratch, coding, now)?
                {
                    return Ok(job);
                }
            }
        }
        let mut cache = self.cache.borrow_mut();
        let src = self.load(&mut cache, scratch, file, &meta, ctype, variants, now)?;
        let mut squeeze = false;
        if let (Source::Bytes(_), Lookup::Fresh(i)) = (&src, cache.lookup(scratch, now)) {
            squeeze = compressed::compressible(ex.compression().map(|p| &**p), cache.get(i));
            if let Some(p) = ex.compression().filter(|_| squeeze).cloned() {
                if let Some(job) = compressed::serve(ex, &mut cache, i, route, scratch, &p, now)? {
                    return Ok(job);
                }
            }
        }
        drop(cache);
        if matches!(src, Source::File(_))
            && compressed::variant_not_modified(ex, &meta, ctype, route.cache_control.as_deref())?
        {
            return Ok(None);
        }
        respond(
            ex,
            &meta,
            ctype,
            src,
            route.cache_control.as_deref(),
            variants != 0 || squeeze,
            None,
        )
    }

    /// Small files are read and cached (and served from memory); larger ones
    /// are served from the open file, which is cached open.
    #[allow(clippy::too_many_arguments)]
    fn load(
        &self,
        cache: &mut Cache,
        key: &[u8],
        file: std::fs::File,
        meta: &Meta,
        ctype: &str,
        variants: u8,
        now: Instant,
    ) -> io::Result<Source> {
        if meta.len > cache.max_file {
            let file = Rc::new(file);
            cache.insert(
                key,
                Entry::open(meta.clone(), file.clone(), Rc::from(ctype), variants, now),
            );
            return Ok(Source::File(file));
        }
        let mut body = vec![0u8; meta.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut body, 0)?;
        let body = Bytes::from(body);
        cache.insert(
            key,
            Entry::new(meta.clone(), body.clone(), Rc::from(ctype), variants, now),
        );
        Ok(Source::Bytes(body))
    }

    fn probe_variants(&self, route: &Route, rel: &str) -> u8 {
        let mut bits = 0;
        let mut name = String::with_capacity(rel.len() + 4);
        for (i, c) in CODINGS.iter().enumerate() {
            name.clear();
            name.push_str(rel);
            name.push_str(c.suffix());
            if open::open_beneath(&route.root, &name)
                .and_then(|f| f.metadata())
                .is_ok_and(|m| m.is_file())
            {
                bits |= 1 << i;
            }
        }
        bits
    }

    fn serve_dir(
        &self,
        ex: &mut Exchange<'_>,
        route: &Route,
        scratch: &mut Vec<u8>,
        now: Instant,
    ) -> Result<Option<Job>, Error> {
        if !ex.path().ends_with(b"/") {
            let mut loc = ex.path().to_vec();
            loc.push(b'/');
            if let Some(q) = ex.query() {
                loc.push(b'?');
                loc.extend_from_slice(q);
            }
            ex.send(
                301,
                &[("Location", &loc), ("Content-Type", b"text/plain")],
                b"301 Moved Permanently\n",
            )?;
            return Ok(None);
        }
        let base_len = scratch.len();
        for index in &self.index {
            scratch.truncate(base_len);
            scratch.extend_from_slice(index.as_bytes());
            let rel = rel_path(scratch).to_owned();
            if let Ok(file) = open::open_beneath(&route.root, &rel) {
                let st = file.metadata()?;
                if st.is_file() {
                    return self.serve_file(ex, route, scratch, file, &st, now);
                }
            }
        }
        scratch.truncate(base_len);
        if !route.listing {
            return status(ex, 403);
        }
        let rel = rel_path(scratch).to_owned();
        let page = list_dir(&route.root, &rel, &String::from_utf8_lossy(ex.path()))?;
        ex.send(200, &[("Content-Type", b"text/html; charset=utf-8")], &page)?;
        Ok(None)
    }
}

fn available(bits: u8) -> Codings {
    let mut out = Codings {
        flat: [Coding::Br; 3],
        len: 0,
    };
    for (i, c) in CODINGS.iter().enumerate() {
        if bits & (1 << i) != 0 {
            out.flat[out.len] = *c;
            out.len += 1;
        }
    }
    out
}

/// The codings on disk for one file, on the stack.
struct Codings {
    flat: [Coding; 3],
    len: usize,
}

impl Codings {
    fn as_slice(&self) -> &[Coding] {
        &self.flat[..self.len]
    }
}

fn list_dir(root: &OwnedFd, rel: &str, url_path: &str) -> io::Result<Vec<u8>> {
    let dir = open::open_beneath(root, rel)?;
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir));
    let mut names = Vec::new();
    for e in std::fs::read_dir(path)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let md = e.metadata()?;
        let mtime = std::os::unix::fs::MetadataExt::mtime(&md).max(0) as u64;
        names.push((name, md.is_dir(), md.len(), mtime));
    }
    let mut entries: Vec<listing::Entry<'_>> = names
        .iter()
        .map(|(name, is_dir, size, mtime)| listing::Entry {
            name,
            is_dir: *is_dir,
            size: *size,
            mtime: *mtime,
        })
        .collect();
    let mut out = Vec::new();
    listing::render(url_path, &mut entries, &mut out);
    Ok(out)
}

/// The relative path in a cache key (after its route byte). decode_path_into
/// checked it is UTF-8, and index names and coding suffixes are ASCII.
fn rel_path(key: &[u8]) -> &str {
    std::str::from_utf8(&key[1..]).expect("decode_path_into checked UTF-8")
}

fn open_error_status(e: &io::Error) -> u16 {
    match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => 404,
        // RESOLVE_BENEATH refusing an escape (EXDEV), a magic link (ELOOP).
        _ => 403,
    }
}

fn status(ex: &mut Exchange<'_>, code: u16) -> Result<Option<Job>, Error> {
    let body: &[u8] = match code {
        400 => b"400 Bad Request\n",
        403 => b"403 Forbidden\n",
        _ => b"404 Not Found\n",
    };
    ex.send(code, &[("Content-Type", b"text/plain")], body)?;
    Ok(None)
}

impl Handler for StaticFiles {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        match self.prepare(ex, None, None)? {
            None => Ok(()),
            // Boxed: only file transfers pay for their future.
            Some(job) => Box::pin(job.run(ex)).await,
        }
    }
}
