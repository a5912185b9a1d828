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

    async fn serve(&self, ex: &mut Exchange<'_>) -> io::Result<()> {
        if !matches!(ex.method(), Method::Get | Method::Head) {
            return ex.send(
                405,
                &[("Allow", b"GET, HEAD"), ("Content-Type", b"text/plain")],
                b"405 Method Not Allowed\n",
            );
        }
        let mut rel = match decode_path(ex.path()) {
            Ok(p) => p,
            Err(PathError::Hidden) => return not_found(ex),
            Err(_) => {
                return ex.send(
                    400,
                    &[("Content-Type", b"text/plain")],
                    b"400 Bad Request\n",
                )
            }
        };
        let file = match open::open_beneath(&self.root, &rel) {
            Ok(f) => f,
            Err(e)
                if e.raw_os_error() == Some(libc::ENOENT)
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                return not_found(ex)
            }
            Err(_) => return ex.send(403, &[("Content-Type", b"text/plain")], b"403 Forbidden\n"),
        };
        let mut meta = file.metadata()?;
        let mut file = file;
        if meta.is_dir() {
            if !ex.path().ends_with(b"/") {
                let mut loc = ex.path().to_vec();
                loc.push(b'/');
                if let Some(q) = ex.query() {
                    loc.push(b'?');
                    loc.extend_from_slice(q);
                }
                return ex.send(
                    301,
                    &[("Location", &loc), ("Content-Type", b"text/plain")],
                    b"301 Moved Permanently\n",
                );
            }
            rel.push_str(self.index);
            file = match open::open_beneath(&self.root, &rel) {
                Ok(f) => f,
                Err(_) => return not_found(ex),
            };
            meta = file.metadata()?;
            if !meta.is_file() {
                return not_found(ex);
            }
        } else if !meta.is_file() {
            return not_found(ex);
        }
        let len = meta.len();
        let mtime = std::os::unix::fs::MetadataExt::mtime(&meta);
        let mut lm = [0u8; 29];
        ringside_runtime::http::date::format_imf_fixdate(mtime.max(0) as u64, &mut lm);
        let ctype = mime::for_path(&rel);
        let headers: [(&str, &[u8]); 2] =
            [("Content-Type", ctype.as_bytes()), ("Last-Modified", &lm)];
        if len <= INLINE_MAX && !ex.is_head() {
            let mut body = vec![0u8; len as usize];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut body, 0)?;
            return ex.send(200, &headers, &body);
        }
        ex.send_file(200, &headers, &file, 0, len).await
    }
}

fn not_found(ex: &mut Exchange<'_>) -> io::Result<()> {
    ex.send(404, &[("Content-Type", b"text/plain")], b"404 Not Found\n")
}

impl Handler for StaticFiles {
    async fn handle(&self, ex: &mut Exchange<'_>) -> io::Result<()> {
        self.serve(ex).await
    }
}
