//! Which script a request runs: the path is decoded once (as for static
//! files: no `..`, no NUL, no encoded `/`, no dotfiles), split into the
//! script and PATH_INFO at the first segment ending in the extension
//! (`/index.php/extra` is `/index.php` with `/extra`, nginx's
//! `fastcgi_split_path_info ^(.+?\.php)(/.*)$`), or given the index for a
//! path ending in `/`. The script must exist as a regular file beneath the
//! root, opened with `openat2(RESOLVE_BENEATH)`; a missing one is a 404
//! that never reaches the backend.
//!
//! Lookups are cached per core for a second, so a busy script costs no
//! system call per request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use ringside_static::PathError;

use crate::upstream::settings::FastCgiRoute;

/// How long a lookup's answer is trusted.
const RECHECK: Duration = Duration::from_secs(1);

pub enum Resolved {
    Script {
        /// Decoded URL path of the script, with its leading `/`.
        script_name: String,
        /// Decoded, possibly empty.
        path_info: String,
    },
    /// Not a script path: for the static files.
    NotScript,
    /// A script path whose file does not exist.
    Missing,
    /// A path that may not be served (400 or 404 as for static files).
    Refused(PathError),
}

/// One route's docroot on this core.
pub struct Scripts {
    root: OwnedFd,
    route: FastCgiRoute,
    known: RefCell<HashMap<String, (bool, Instant)>>,
}

impl Scripts {
    pub fn new(route: &FastCgiRoute) -> std::io::Result<Scripts> {
        Ok(Scripts {
            root: ringside_static::open::open_root(&route.root)?,
            route: route.clone(),
            known: RefCell::new(HashMap::new()),
        })
    }

    pub fn route(&self) -> &FastCgiRoute {
        &self.route
    }

    pub fn resolve(&self, raw_path: &[u8]) -> Resolved {
        let rel = match ringside_static::decode_path(raw_path) {
            Ok(r) => r,
            Err(e) => return Resolved::Refused(e),
        };
        let (script_rel, path_info) = match split(&rel, &self.route.extension) {
            Some((script, info)) if self.exists(script) => (script.to_owned(), info.to_owned()),
            Some(_) => return Resolved::Missing,
            None if rel.is_empty() || rel.ends_with('/') => {
                let index = format!("{rel}{}", self.route.index);
                if !self.exists(&index) {
                    // Left to the static files: index.html, a listing or 404.
                    return Resolved::NotScript;
                }
                (index, String::new())
            }
            None => return Resolved::NotScript,
        };
        Resolved::Script {
            script_name: format!("/{script_rel}"),
            path_info,
        }
    }

    fn exists(&self, rel: &str) -> bool {
        let now = Instant::now();
        if let Some(&(yes, at)) = self.known.borrow().get(rel) {
            if now.duration_since(at) < RECHECK {
                return yes;
            }
        }
        let yes = ringside_static::open::open_beneath(&self.root, rel)
            .and_then(|f| f.metadata())
            .is_ok_and(|m| m.is_file());
        let mut known = self.known.borrow_mut();
        if known.len() > 4096 {
            known.clear();
        }
        known.insert(rel.to_owned(), (yes, now));
        yes
    }
}

/// Splits a decoded relative path at the first segment ending in `ext`.
fn split<'a>(rel: &'a str, ext: &str) -> Option<(&'a str, &'a str)> {
    let mut from = 0;
    while let Some(i) = rel[from..].find(ext) {
        let end = from + i + ext.len();
        let seg_start = rel[..from + i].rfind('/').map_or(0, |j| j + 1);
        // The extension must end a segment and follow a non-empty name.
        if from + i > seg_start && (end == rel.len() || rel.as_bytes()[end] == b'/') {
            return Some((&rel[..end], &rel[end..]));
        }
        from = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_at_the_first_script_segment() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("index.php", Some(("index.php", ""))),
            ("index.php/extra/x", Some(("index.php", "/extra/x"))),
            ("a/b.php/c.php", Some(("a/b.php", "/c.php"))),
            ("a.php.d/x", None),
            ("a.phpx", None),
            ("dir/.php", None),
            ("style.css", None),
            ("", None),
            ("sub/", None),
        ];
        for (rel, want) in cases {
            assert_eq!(split(rel, ".php"), *want, "{rel}");
        }
    }
}
