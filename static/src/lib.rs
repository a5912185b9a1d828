//! ringside-static: files from a docroot.
//!
//! This is the first, minimal handler: GET and HEAD, index files, a redirect
//! for a directory without its slash, MIME types, Last-Modified, and every
//! path opened beneath the root with `openat2(RESOLVE_BENEATH)`. Small files
//! go out in one write with the head; larger ones from the file to the socket
//! without a copy through user space.

mod mime;
mod open;
mod path;

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use ringside_runtime::http::{Exchange, Handler, Method};

pub use path::{decode_path, PathError};

/// Files up to this size are read into the response buffer and sent with the
/// head in one write.
const INLINE_MAX: u64 = 32 * 1024;

pub struct StaticFiles {
    root: OwnedFd,
    index: &'static str,
}

impl StaticFiles {
    pub fn new(root: &Path) -> io::Result<StaticFiles> {
        Ok(StaticFiles {
            root: open::open_root(root)?,
            index: "index.html",
        })
    }

    /// The canonical docroot, for logs.
    pub fn canonical(root: &Path) -> io::Result<PathBuf> {
        root.canonicalize()
    }

    /// Answers everything that needs no waiting; a large file comes back as
    /// a transfer for [`send_large`]. Kept synchronous so that none of its
    /// locals become part of the connection's future, which every idle
    /// connection holds.
    fn prepare(&self, ex: &mut Exchange<'_>) -> io::Result<Option<Large>> {
        if !matches!(ex.method(), Method::Get | Method::Head) {
            ex.send(
                405,
                &[("Allow", b"GET, HEAD"), ("Content-Type", b"text/plain")],
                b"405 Method Not Allowed\n",
            )?;
            return Ok(None);
        }
        let mut rel = match decode_path(ex.path()) {
            Ok(p) => p,
            Err(PathError::Hidden) => return not_found(ex),
            Err(_) => {
                ex.send(
                    400,
                    &[("Content-Type", b"text/plain")],
                    b"400 Bad Request\n",
                )?;
                return Ok(None);
            }
        };
        let mut file = match open::open_beneath(&self.root, &rel) {
            Ok(f) => f,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return not_found(ex)
            }
            Err(_) => {
                ex.send(403, &[("Content-Type", b"text/plain")], b"403 Forbidden\n")?;
                return Ok(None);
            }
        };
        let mut meta = file.metadata()?;
        if meta.is_dir() {
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
            rel.push_str(self.index);
            file = match open::open_beneath(&self.root, &rel) {
                Ok(f) => f,
                Err(_) => return not_found(ex),
            };
            meta = file.metadata()?;
        }
        if !meta.is_file() {
            return not_found(ex);
        }
        let len = meta.len();
        let mut last_modified = [0u8; 29];
        let mtime = std::os::unix::fs::MetadataExt::mtime(&meta);
        ringside_runtime::http::date::format_imf_fixdate(mtime.max(0) as u64, &mut last_modified);
        let ctype = mime::for_path(&rel);
        if len <= INLINE_MAX || ex.is_head() {
            let headers: [(&str, &[u8]); 2] = [
                ("Content-Type", ctype.as_bytes()),
                ("Last-Modified", &last_modified),
            ];
            let mut body = Vec::new();
            if !ex.is_head() {
                body.resize(len as usize, 0);
                std::os::unix::fs::FileExt::read_exact_at(&file, &mut body, 0)?;
                ex.send(200, &headers, &body)?;
            } else {
                ex.send_head_only(200, &headers, len)?;
            }
            return Ok(None);
        }
        Ok(Some(Large {
            file,
            len,
            ctype,
            last_modified,
        }))
    }
}

/// A body to send from the file.
struct Large {
    file: std::fs::File,
    len: u64,
    ctype: &'static str,
    last_modified: [u8; 29],
}

async fn send_large(ex: &mut Exchange<'_>, l: Large) -> io::Result<()> {
    let headers: [(&str, &[u8]); 2] = [
        ("Content-Type", l.ctype.as_bytes()),
        ("Last-Modified", &l.last_modified),
    ];
    ex.send_file(200, &headers, &l.file, 0, l.len).await
}

fn not_found(ex: &mut Exchange<'_>) -> io::Result<Option<Large>> {
    ex.send(404, &[("Content-Type", b"text/plain")], b"404 Not Found\n")?;
    Ok(None)
}

impl Handler for StaticFiles {
    async fn handle(&self, ex: &mut Exchange<'_>) -> io::Result<()> {
        match self.prepare(ex)? {
            None => Ok(()),
            // Boxed: only large files pay for the transfer's future.
            Some(large) => Box::pin(send_large(ex, large)).await,
        }
    }
}
