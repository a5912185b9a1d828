//! Compression on the fly: which responses may be compressed, with what,
//! and the compressors ([`encoder`]).
//!
//! A [`Policy`] is a route's: the media types it compresses, the smallest
//! body worth it and a level per coding. A handler's exchange carries its
//! route's policy ([`crate::Exchange::set_compression`]); a response
//! started from another server's head (a proxied or FastCGI one) is then
//! compressed as it streams when [`Policy::eligible`] says it may be and
//! the client accepts a coding. The static handler compresses files itself,
//! once per file and coding, and caches the result beside the file.
//!
//! Never compressed: a body with a Content-Encoding already, a 206 (or any
//! Content-Range), `Cache-Control: no-transform`, 1xx/204/304, a type not
//! in the list, or a body known to be shorter than `min_size`. An eligible
//! response carries `Vary: Accept-Encoding` whether or not this client
//! took a coding, so a cache never hands a compressed body to a client
//! that cannot read it, or the reverse.

pub mod encoder;
pub mod stats;

use crate::grammar::trim_ows;
use crate::semantics::negotiation::{self, Coding};

/// Compression levels, one per coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Levels {
    /// 1 (fastest) to 9.
    pub gzip: u32,
    /// 0 to 11.
    pub br: u32,
    /// 1 to 19.
    pub zstd: u32,
}

impl Default for Levels {
    /// gzip 6 (zlib's and nginx's usual choice), brotli 5 and zstd 3: each
    /// at or near gzip 6's speed with a better ratio.
    fn default() -> Self {
        Levels {
            gzip: 6,
            br: 5,
            zstd: 3,
        }
    }
}

impl Levels {
    pub fn of(&self, c: Coding) -> u32 {
        match c {
            Coding::Gzip => self.gzip,
            Coding::Br => self.br,
            Coding::Zstd => self.zstd,
        }
    }
}

/// The media types compressed when a config names none.
pub const DEFAULT_TYPES: &[&str] = &[
    "text/*",
    "application/json",
    "application/*+json",
    "application/javascript",
    "application/xml",
    "application/*+xml",
    "image/svg+xml",
    "application/wasm",
];

/// Bodies known to be shorter than this are sent as they are: a few
/// hundred bytes barely shrink, and the coding's own framing eats part.
pub const DEFAULT_MIN_SIZE: u64 = 256;

/// Codings for a body compressed once and cached: the best ratio first.
pub const CACHED_ORDER: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];
/// Codings for a body compressed as it streams, per request: zstd first,
/// as fast as gzip at a better ratio, then brotli, then gzip.
pub const STREAMED_ORDER: [Coding; 3] = [Coding::Zstd, Coding::Br, Coding::Gzip];

/// One media-type pattern: `type/subtype`, `type/*`, or one `*` within the
/// subtype (`application/*+json`). Lowercase.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pattern {
    prefix: Box<[u8]>,
    /// `None`: no `*`, the whole type must equal `prefix`.
    suffix: Option<Box<[u8]>>,
}

impl Pattern {
    fn matches(&self, t: &[u8]) -> bool {
        match &self.suffix {
            None => t == &*self.prefix,
            Some(s) => {
                t.len() >= self.prefix.len() + s.len()
                    && t.starts_with(&self.prefix)
                    && t.ends_with(s)
            }
        }
    }
}

/// What a route compresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    types: Vec<Pattern>,
    pub min_size: u64,
    pub levels: Levels,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(DEFAULT_TYPES, DEFAULT_MIN_SIZE, Levels::default())
            .expect("the default types are valid")
    }
}

impl Policy {
    /// Checks each type pattern; an error names the one refused.
    pub fn new<S: AsRef<str>>(
        types: &[S],
        min_size: u64,
        levels: Levels,
    ) -> Result<Policy, String> {
        let types = types
            .iter()
            .map(|t| parse_pattern(t.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            types,
            min_size,
            levels,
        })
    }

    /// Whether a Content-Type value (parameters and case aside) is one
    /// this policy compresses.
    pub fn type_matches(&self, content_type: &[u8]) -> bool {
        let t = content_type
            .split(|&b| b == b';')
            .next()
            .map(trim_ows)
            .unwrap_or_default();
        let mut low = [0u8; 128];
        if t.is_empty() || t.len() > low.len() {
            return false;
        }
        let low = &mut low[..t.len()];
        low.copy_from_slice(t);
        low.make_ascii_lowercase();
        self.types.iter().any(|p| p.matches(low))
    }

    /// Whether a response with this status, these fields and (where known)
    /// this body length may be compressed.
    pub fn eligible<'h>(
        &self,
        status: u16,
        fields: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        len: Option<u64>,
    ) -> bool {
        if status < 200 || matches!(status, 204 | 206 | 304) {
            return false;
        }
        if len.is_some_and(|n| n < self.min_size) {
            return false;
        }
        let mut typed = false;
        for (name, value) in fields {
            if name.eq_ignore_ascii_case(b"content-type") {
                if !self.type_matches(value) {
                    return false;
                }
                typed = true;
            } else if name.eq_ignore_ascii_case(b"content-encoding") {
                if !trim_ows(value).eq_ignore_ascii_case(b"identity") {
                    return false;
                }
            } else if name.eq_ignore_ascii_case(b"content-range")
                || (name.eq_ignore_ascii_case(b"cache-control") && no_transform(value))
            {
                return false;
            }
        }
        typed
    }

    /// The coding to use for a client's Accept-Encoding, in `order` on a
    /// tie; `None` when it takes none of them.
    pub fn choose(&self, accept_encoding: Option<&[u8]>, order: &[Coding]) -> Option<Coding> {
        accept_encoding?;
        negotiation::choose(accept_encoding, order)
    }
}

fn parse_pattern(t: &str) -> Result<Pattern, String> {
    let low = t.trim().to_ascii_lowercase();
    let bad = || {
        format!("expected a media type like \"text/html\", \"text/*\" or \"application/*+json\", got {t:?}")
    };
    let (major, minor) = low.split_once('/').ok_or_else(bad)?;
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    if !token(major) {
        return Err(bad());
    }
    match minor.split_once('*') {
        None if token(minor) => Ok(Pattern {
            prefix: low.as_bytes().into(),
            suffix: None,
        }),
        Some((before, after))
            if !after.contains('*')
                && (before.is_empty() || token(before))
                && (after.is_empty() || token(after)) =>
        {
            Ok(Pattern {
                prefix: format!("{major}/{before}").into_bytes().into(),
                suffix: Some(after.as_bytes().into()),
            })
        }
        _ => Err(bad()),
    }
}

/// Whether a Cache-Control value holds the `no-transform` directive.
fn no_transform(v: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|d| trim_ows(d).eq_ignore_ascii_case(b"no-transform"))
}

/// `Vary` for a compressed or compressible response: the upstream's own
/// value with `Accept-Encoding` added where it lacks it. `None`: the value
/// already covers it (it names it, or is `*`).
pub fn vary_with_accept_encoding(existing: Option<&[u8]>) -> Option<Vec<u8>> {
    const AE: &[u8] = b"Accept-Encoding";
    match existing.map(trim_ows) {
        None | Some(b"") => Some(AE.to_vec()),
        Some(v) => {
            let covered = v.split(|&b| b == b',').any(|t| {
                let t = trim_ows(t);
                t == b"*" || t.eq_ignore_ascii_case(AE)
            });
            if covered {
                None
            } else {
                let mut out = v.to_vec();
                out.extend_from_slice(b", ");
                out.extend_from_slice(AE);
                Some(out)
            }
        }
    }
}

/// The ETag of a compressed variant of a response whose ETag is `etag`:
/// weak, with the coding inside the quotes (`"x"` → `W/"x-gzip"`), so it
/// never matches the identity's. `None` for a value that is no entity-tag.
pub fn variant_etag(etag: &[u8], c: Coding) -> Option<Vec<u8>> {
    let v = trim_ows(etag);
    let inner = v.strip_prefix(b"W/").unwrap_or(v);
    if inner.len() < 2 || inner[0] != b'"' || inner[inner.len() - 1] != b'"' {
        return None;
    }
    let mut out = Vec::with_capacity(inner.len() + 8);
    out.extend_from_slice(b"W/");
    out.extend_from_slice(&inner[..inner.len() - 1]);
    out.push(b'-');
    out.extend_from_slice(c.token().as_bytes());
    out.push(b'"');
    Some(out)
}

#[cfg(test)]
mod tests;
