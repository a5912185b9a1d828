//! A path and query a handler's rewrite put in place of the request's
//! ([`crate::Exchange::rewrite`]). The new path goes through the same
//! normalizer as a client's ([`crate::path::Normalized`]), so a rewrite can
//! produce no spelling the server would refuse from a client: what it
//! refuses is refused here too, and nothing of it is passed on. The
//! client's own target stays as it was, for logs and for a FastCGI
//! script's `REQUEST_URI`.

use crate::head::Span;
use crate::path::{EncodedSlash, Normalized, PathError, PathParameters};

/// Why a rewrite's output was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteError {
    /// The path is one the normalizer refuses (`..` above the root, `%2F`
    /// where encoded slashes are refused, a raw byte a target may not hold).
    Path(PathError),
    /// The query holds a byte a request-target may not (RFC 3986 §3.4).
    Query,
    /// The path is longer than a head's span can hold.
    TooLong,
}

/// The rewritten path, normalized, and its query.
#[derive(Debug, Default)]
pub struct Rewritten {
    /// The path as the rewrite wrote it, then the query.
    buf: Vec<u8>,
    path_end: usize,
    has_query: bool,
    paths: Normalized,
    /// Rewrites so far, for the handler's bound on them.
    passes: u8,
}

impl Rewritten {
    /// Replaces the path and query, normalizing the path as a client's is;
    /// on error nothing changes.
    pub fn set(
        &mut self,
        path: &[u8],
        query: Option<&[u8]>,
        slash: EncodedSlash,
        params: PathParameters,
    ) -> Result<(), RewriteError> {
        if path.len() > usize::from(u16::MAX) {
            return Err(RewriteError::TooLong);
        }
        if !path.starts_with(b"/") {
            return Err(RewriteError::Path(PathError::NotOrigin));
        }
        if query.is_some_and(|q| !q.iter().all(|&b| is_query_byte(b))) {
            return Err(RewriteError::Query);
        }
        let mut paths = Normalized::default();
        let raw = Span {
            start: 0,
            end: path.len() as u16,
        };
        // A path's own `?` or `#` is a byte the normalizer refuses: the
        // query never leaks into it.
        paths
            .set(path, raw, true, slash, params)
            .map_err(RewriteError::Path)?;
        self.buf.clear();
        self.buf.extend_from_slice(path);
        self.path_end = path.len();
        self.has_query = query.is_some();
        self.buf.extend_from_slice(query.unwrap_or_default());
        self.paths = paths;
        self.passes = self.passes.saturating_add(1);
        Ok(())
    }

    /// The normalized path.
    pub fn path(&self) -> &[u8] {
        self.paths.path(&self.buf[..self.path_end])
    }

    /// The path routes match.
    pub fn route(&self) -> &[u8] {
        self.paths.route(&self.buf[..self.path_end])
    }

    pub fn query(&self) -> Option<&[u8]> {
        self.has_query.then(|| &self.buf[self.path_end..])
    }

    /// How many rewrites this request had.
    pub fn passes(&self) -> u8 {
        self.passes
    }
}

/// A byte a query may hold as it is (RFC 3986 §3.4: pchar, `/` and `?`;
/// `%` as the escapes' start): visible ASCII but `#` and the characters
/// §2 leaves out of URIs.
fn is_query_byte(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(
            b,
            b'#' | b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(path: &str, query: Option<&str>) -> Result<Rewritten, RewriteError> {
        let mut r = Rewritten::default();
        r.set(
            path.as_bytes(),
            query.map(str::as_bytes),
            EncodedSlash::Reject,
            PathParameters::SetAside,
        )?;
        Ok(r)
    }

    #[test]
    fn the_path_is_normalized_and_the_query_kept() {
        let r = set("/a/./b//%63/../d", Some("q=1&x=%20")).unwrap();
        assert_eq!(r.path(), b"/a/b/d");
        assert_eq!(r.query(), Some(&b"q=1&x=%20"[..]));
        assert_eq!(r.passes(), 1);
        let r = set("/admin;x/y", None).unwrap();
        assert_eq!(r.path(), b"/admin;x/y");
        assert_eq!(r.route(), b"/admin/y");
        assert_eq!(r.query(), None);
    }

    #[test]
    fn what_the_normalizer_refuses_is_refused() {
        for (path, why) in [
            ("/../etc/passwd", PathError::AboveRoot),
            ("/a%2Fb", PathError::EncodedSlash),
            ("/a%00", PathError::Nul),
            ("/a b", PathError::BadByte),
            ("/a?b", PathError::BadByte),
            ("/a#b", PathError::BadByte),
            ("a", PathError::NotOrigin),
            ("", PathError::NotOrigin),
        ] {
            assert_eq!(
                set(path, None).err(),
                Some(RewriteError::Path(why)),
                "{path}"
            );
        }
        for q in ["a b", "a#b", "a\nb", "é"] {
            assert_eq!(set("/x", Some(q)).err(), Some(RewriteError::Query), "{q}");
        }
    }
}
