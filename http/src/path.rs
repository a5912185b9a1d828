//! Request-path normalization for the edge server.
//!
//! Every routing and access decision is made on one normalized path, and that
//! same path is forwarded to the backend. If router and backend could disagree
//! about which resource a path names, a request could pass the router under one
//! spelling (`/%70rivate`, `/a/../private`, `//private`) and be served as
//! another. Normalizing once, up front, closes that gap. One pass, per segment:
//!
//! * **Percent-decoding happens exactly once** (RFC 3986 §2.1), and only for
//!   *unreserved* characters (§2.3: ALPHA, DIGIT, `-`, `.`, `_`, `~`), whose
//!   two forms §2.3 and §6.2.2.2 make equivalent: the result is still a valid
//!   URI naming the same resource, so it can be forwarded as is. Other escapes
//!   stay encoded, in uppercase hex (§6.2.2.1): decoding them could change the
//!   meaning (`%3F` is data, `?` is not) or yield bytes a request-target may not
//!   hold. `%25` stays `%25`, so `%252e` never becomes a dot downstream.
//! * **Dangerous spellings are refused**, not repaired: `%00` (C-string
//!   truncation), `\` raw or encoded (a separator on Windows), `%2F` unless the
//!   caller opts in (backends disagree on whether it separates segments), raw
//!   bytes outside the request-target syntax, and decoded bytes that are not
//!   UTF-8, checked with RFC 3629 §4's second-byte ranges so that overlongs
//!   (`%C0%AE` for `.`), surrogates and code points above U+10FFFF, the forms
//!   lenient decoders have turned into `.` or `/`, are refused.
//! * **Slashes are merged and dot segments resolved** as RFC 3986 §5.2.4 does,
//!   on the decoded segment (`%2e%2E` is `..`), in place in the output. The one
//!   deliberate difference: where §5.2.4 clamps `..` at the root, this is
//!   [`PathError::AboveRoot`] (nginx answers 400 too). `/../etc/passwd` is a
//!   traversal probe, not a request for `/etc/passwd`; refusing is safer than
//!   guessing, and no backend can then resolve it differently.
//!
//! **Segment parameters** (`;x`, RFC 3986 §3.3) stay in the path that is
//! forwarded, but never decide a route: Tomcat, Jetty and Spring read
//! `/private;x/y` as `/private/y` and `..;` as `..`, so a route chosen on
//! the path as spelled could hand them a resource another route holds.
//! [`PathParameters::SetAside`] (the default) routes on the path with each
//! segment's parameters left out ([`set_aside_parameters`]); a `.` or `..`
//! segment that carries parameters is refused, since servers that read
//! them and servers that do not then climb to different places, and no
//! route could hold the request for both. [`PathParameters::Reject`]
//! refuses every path with a `;`.
//!
//! **Fast path.** Most paths are already normal, so one scan looks for anything
//! that might need work (`%`, `\`, a forbidden byte, `/` followed by `/` or
//! `.`); if there is none, [`normalize_into`] returns `Ok(false)` without
//! writing. A path that takes the slow path but comes out identical
//! (`/.well-known/x`, `/a%20b`) is compared with the input and also reported as
//! `Ok(false)`, with `out` truncated back: `Ok(false)` means exactly "the raw
//! path is the normalized path", so the caller forwards `raw` itself.

use std::fmt;

use crate::head::Span;

/// What to do with an encoded slash (`%2F`, any case) in a path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EncodedSlash {
    /// Refuse the path with [`PathError::EncodedSlash`].
    #[default]
    Reject,
    /// Keep it as `%2F`, as an ordinary part of its segment.
    Pass,
}

/// What segment parameters (`;x`) in a path do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathParameters {
    /// Routes match the path with them left out; they go upstream.
    #[default]
    SetAside,
    /// A path with a `;` is refused with [`PathError::Parameters`].
    Reject,
}

/// Why a path was refused (the server answers 400 to each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    /// The path does not start with `/`.
    NotOrigin,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// `%00`.
    Nul,
    /// `%2F` with [`EncodedSlash::Reject`].
    EncodedSlash,
    /// A raw `\` or `%5C`.
    Backslash,
    /// A raw control, space, DEL, non-ASCII, `#` or `?` byte.
    BadByte,
    /// The fully decoded path is not valid UTF-8.
    BadUtf8,
    /// A `..` segment would rise above `/`.
    AboveRoot,
    /// A `;` with [`PathParameters::Reject`].
    Parameters,
    /// A `.` or `..` segment with parameters (`..;x`).
    DotParameters,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::NotOrigin => "path does not start with '/'",
            PathError::BadEscape => "malformed percent escape",
            PathError::Nul => "encoded nul byte",
            PathError::EncodedSlash => "encoded slash",
            PathError::Backslash => "backslash in path",
            PathError::BadByte => "forbidden byte in path",
            PathError::BadUtf8 => "path is not valid utf-8",
            PathError::AboveRoot => "path rises above the root",
            PathError::Parameters => "path parameters (';')",
            PathError::DotParameters => "a dot segment with parameters",
        })
    }
}

impl std::error::Error for PathError {}

/// Normalizes `raw` (a path without query) for routing and forwarding.
///
/// `Ok(false)`: `raw` is already normal and `out` is untouched (use `raw`).
/// `Ok(true)`: the normalized path was appended to `out` (which the caller
/// cleared). On error, `out` is left as it was.
pub fn normalize_into(
    raw: &[u8],
    encoded_slash: EncodedSlash,
    out: &mut Vec<u8>,
) -> Result<bool, PathError> {
    if !needs_work(raw) {
        return Ok(false);
    }
    let mode = match encoded_slash {
        EncodedSlash::Reject => Slash::Reject,
        EncodedSlash::Pass => Slash::Keep,
    };
    let start = out.len();
    normalize(raw, mode, out)?;
    if out[start..] == *raw {
        out.truncate(start);
        return Ok(false);
    }
    Ok(true)
}

/// For routing with [`EncodedSlash::Pass`]: `path` is a normalized path that
/// may hold `%2F`; appends the same path with each `%2F` decoded to `/`, then
/// dot segments resolved and slashes merged again (so the router decides on
/// the path a backend that decodes `%2F` would see).
///
/// Errors as [`normalize_into`] (`AboveRoot` can arise here); on error, `out`
/// is left as it was.
pub fn decode_slashes_into(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    normalize(path, Slash::Split, out)
}

/// Whether `path` contains an encoded slash (`%2F` as [`normalize_into`]
/// writes it).
pub fn has_encoded_slash(path: &[u8]) -> bool {
    // In a normalized path every '%' starts an escape, so no match can
    // straddle two escapes (`%252F` holds no `%2F`).
    path.windows(3).any(|w| w == b"%2F")
}

/// A request's normalized path and its routing form, where each differs
/// from the one before it (empty otherwise): kept in the connection's
/// pooled slot, so the exchange holds one pointer to them, and a request
/// whose path is already normal copies nothing.
#[derive(Debug, Default)]
pub struct Normalized {
    /// The normalized path, where it differs from the raw one.
    pub path: Vec<u8>,
    /// The path routes match, where it differs from `path`: encoded
    /// slashes decoded (with [`EncodedSlash::Pass`]) and segment
    /// parameters set aside.
    pub route: Vec<u8>,
    /// The raw path, found once: a span of the head's buffer, empty for
    /// an absolute-form target without a path (whose path is `/`).
    raw: Span,
}

impl Normalized {
    /// Normalizes the raw path at `raw` in `buf` into this slot; `*` and
    /// an authority (`is_path` false) have none to normalize.
    pub fn set(
        &mut self,
        buf: &[u8],
        raw: Span,
        is_path: bool,
        slash: EncodedSlash,
        params: PathParameters,
    ) -> Result<(), PathError> {
        self.path.clear();
        self.route.clear();
        self.raw = raw;
        if !is_path {
            return Ok(());
        }
        let raw = self.raw(buf);
        // The scan that finds nothing to normalize finds no `%` and no
        // `;` either: such a path routes as it is.
        if !needs_work(raw) {
            return Ok(());
        }
        if !normalize_into(raw, slash, &mut self.path)? {
            self.path.clear();
        }
        if slash == EncodedSlash::Pass {
            let normal = if self.path.is_empty() {
                raw
            } else {
                &self.path[..]
            };
            if has_encoded_slash(normal) {
                decode_slashes_into(normal, &mut self.route)?;
            }
        }
        let routed = if self.route.is_empty() {
            self.path(buf)
        } else {
            &self.route[..]
        };
        if routed.contains(&b';') {
            if params == PathParameters::Reject {
                return Err(PathError::Parameters);
            }
            if self.route.is_empty() {
                let normal = if self.path.is_empty() {
                    raw
                } else {
                    &self.path[..]
                };
                self.route.extend_from_slice(normal);
            }
            set_aside_parameters(&mut self.route)?;
        }
        Ok(())
    }

    /// The path as the client sent it, in `buf`.
    #[inline]
    pub fn raw<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        if self.raw.is_empty() {
            b"/"
        } else {
            self.raw.get(buf)
        }
    }

    /// The normalized path.
    #[inline]
    pub fn path<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        if self.path.is_empty() {
            self.raw(buf)
        } else {
            &self.path
        }
    }

    /// The path routes match.
    #[inline]
    pub fn route<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        if self.route.is_empty() {
            self.path(buf)
        } else {
            &self.route
        }
    }
}

/// Whether the normalized `path` falls under the route `prefix` (itself a
/// normalized path): the prefix matches whole segments, so `/api` takes
/// `/api` and `/api/x` but not `/apix`, and `/api/` takes `/api` too.
/// The router and the static files both decide by this one rule.
pub fn prefix_matches(path: &[u8], prefix: &[u8]) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => prefix.ends_with(b"/") || rest.is_empty() || rest[0] == b'/',
        None => prefix.len() > 1 && prefix.ends_with(b"/") && path == &prefix[..prefix.len() - 1],
    }
}

/// Leaves each segment's parameters (from its first `;`) out of `path`, a
/// normalized path, in place, and merges the slashes of segments left
/// empty: `/a;x/b;y=1/` becomes `/a/b/`, as a server that reads them
/// (Tomcat, Jetty, Spring) routes it. A `.` or `..` segment with
/// parameters is [`PathError::DotParameters`], `path` then unchanged.
pub fn set_aside_parameters(path: &mut Vec<u8>) -> Result<(), PathError> {
    let dot = |seg: &[u8]| {
        let name = seg.split(|&b| b == b';').next().unwrap_or_default();
        seg.contains(&b';') && matches!(name, b"." | b"..")
    };
    if path.split(|&b| b == b'/').any(dot) {
        return Err(PathError::DotParameters);
    }
    let len = path.len();
    // Written at `w`, read at `r`: a segment's name is never longer than
    // the segment, and a separator is written only after a name was, in
    // place of the one read.
    let (mut w, mut r) = (1, 1);
    let mut last_empty = false;
    while r <= len {
        let end = path[r..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(len, |i| r + i);
        let name = path[r..end]
            .iter()
            .position(|&b| b == b';')
            .map_or(end, |i| r + i);
        last_empty = name == r;
        if !last_empty {
            if path[w - 1] != b'/' {
                path[w] = b'/';
                w += 1;
            }
            path.copy_within(r..name, w);
            w += name - r;
        }
        r = end + 1;
    }
    if last_empty && path[w - 1] != b'/' {
        path[w] = b'/';
        w += 1;
    }
    path.truncate(w);
    Ok(())
}

/// How the shared pass treats a decoded `/`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slash {
    Reject,
    Keep,
    /// As a segment separator: what [`decode_slashes_into`] needs.
    Split,
}

/// Whether `raw` might not be normal; the slow path also reports every error.
///
/// One pass without a branch per byte: it runs on every request.
fn needs_work(raw: &[u8]) -> bool {
    if raw.first() != Some(&b'/') {
        return true;
    }
    let mut prev = 0u8;
    let mut hit = false;
    for &b in raw {
        hit |= SPECIAL[b as usize] | ((prev == b'/') & ((b == b'/') | (b == b'.')));
        prev = b;
    }
    hit
}

/// Bytes that always need the slow path: `%`, `\\`, the forbidden ones,
/// and `;` (segment parameters, set aside for routing by `Normalized`).
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b == b'%'
            || b == b'\\'
            || b == b';'
            || b <= 0x20
            || b >= 0x7F
            || b == b'#'
            || b == b'?';
        i += 1;
    }
    t
};

fn forbidden(b: u8) -> bool {
    b <= 0x20 || b >= 0x7F || b == b'#' || b == b'?'
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(b: Option<&u8>) -> Option<u8> {
    char::from(*b?).to_digit(16).map(|d| d as u8)
}

fn push_escaped(out: &mut Vec<u8>, v: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(&[b'%', HEX[usize::from(v >> 4)], HEX[usize::from(v & 15)]]);
}

/// The shared slow path; restores `out` on error.
fn normalize(raw: &[u8], mode: Slash, out: &mut Vec<u8>) -> Result<(), PathError> {
    if raw.first() != Some(&b'/') {
        return Err(PathError::NotOrigin);
    }
    let start = out.len();
    normalize_at(raw, mode, out, start).inspect_err(|_| out.truncate(start))
}

fn normalize_at(raw: &[u8], mode: Slash, out: &mut Vec<u8>, start: usize) -> Result<(), PathError> {
    // Output is never longer than input: a reused buffer never reallocates.
    out.reserve(raw.len());
    out.push(b'/');
    // Invariant: at the start of each segment, `out` ends with '/'.
    let mut seg = out.len();
    let mut utf8 = Utf8::default();
    let mut i = 1;
    loop {
        let Some(&b) = raw.get(i) else {
            if utf8.need > 0 {
                return Err(PathError::BadUtf8);
            }
            return finish_segment(out, start, seg);
        };
        i += 1;
        let (v, escaped) = match b {
            b'%' => match (hex(raw.get(i)), hex(raw.get(i + 1))) {
                (Some(h), Some(l)) => {
                    i += 2;
                    (h << 4 | l, true)
                }
                _ => return Err(PathError::BadEscape),
            },
            b'\\' => return Err(PathError::Backslash),
            b if forbidden(b) => return Err(PathError::BadByte),
            b => (b, false),
        };
        utf8.push(v)?;
        match v {
            b'/' if !escaped || mode == Slash::Split => {
                finish_segment(out, start, seg)?;
                // Only a kept (ordinary) segment still needs its separator.
                if out.len() > seg {
                    out.push(b'/');
                }
                seg = out.len();
            }
            b'/' if mode == Slash::Reject => return Err(PathError::EncodedSlash),
            0 => return Err(PathError::Nul),
            b'\\' => return Err(PathError::Backslash),
            _ if !escaped || unreserved(v) => out.push(v),
            _ => push_escaped(out, v),
        }
    }
}

/// Resolves the decoded segment `out[seg..]` if it is a dot segment
/// (RFC 3986 §5.2.4); an ordinary segment is left as it is.
fn finish_segment(out: &mut Vec<u8>, start: usize, seg: usize) -> Result<(), PathError> {
    match &out[seg..] {
        // Empty (doubled slash) and "." leave `out` ending in '/', which is
        // also the trailing slash that RFC 3986 keeps for "/a/." and "/a/..".
        b"" => {}
        b"." => out.truncate(seg),
        b".." => {
            // `out[start..seg]` is "/" followed by complete "name/" segments.
            if seg - start == 1 {
                return Err(PathError::AboveRoot);
            }
            let prev = out[start..seg - 1].iter().rposition(|&c| c == b'/');
            out.truncate(start + prev.unwrap_or(0) + 1);
        }
        _ => {}
    }
    Ok(())
}

/// Incremental UTF-8 validation over decoded bytes (RFC 3629 §4).
#[derive(Default)]
struct Utf8 {
    /// Continuation bytes still expected, and the range allowed for the next
    /// one (narrowed after a lead byte to rule out overlongs and the rest).
    need: u8,
    lo: u8,
    hi: u8,
}

impl Utf8 {
    fn push(&mut self, b: u8) -> Result<(), PathError> {
        if self.need > 0 {
            if b < self.lo || b > self.hi {
                return Err(PathError::BadUtf8);
            }
            self.need -= 1;
            (self.lo, self.hi) = (0x80, 0xBF);
            return Ok(());
        }
        (self.need, self.lo, self.hi) = match b {
            0x00..=0x7F => return Ok(()),
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
            0xED => (2, 0x80, 0x9F),
            0xF0 => (3, 0x90, 0xBF),
            0xF1..=0xF3 => (3, 0x80, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => return Err(PathError::BadUtf8),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PathError::{AboveRoot, Backslash, BadByte, BadEscape, BadUtf8, NotOrigin, Nul};

    fn norm(raw: &str, mode: EncodedSlash) -> Result<(bool, String), PathError> {
        let mut out = Vec::new();
        let changed = normalize_into(raw.as_bytes(), mode, &mut out)?;
        if !changed {
            assert!(out.is_empty(), "{raw:?}: Ok(false) but out was written");
            return Ok((false, raw.to_owned()));
        }
        Ok((true, String::from_utf8(out).unwrap()))
    }

    fn check(cases: &[(&str, Result<&str, PathError>)], mode: EncodedSlash) {
        for &(input, expected) in cases {
            let got = norm(input, mode);
            match (got, expected) {
                (Ok((changed, out)), Ok(want)) => {
                    assert_eq!(out, want, "{input:?}");
                    assert_eq!(changed, want != input, "{input:?}: Ok(changed) flag");
                }
                (got, want) => {
                    assert_eq!(got.map(|(_, s)| s), want.map(str::to_owned), "{input:?}")
                }
            }
        }
    }

    #[test]
    fn table_reject() {
        check(
            &[
                // RFC 3986 §5.4.1, base "http://a/b/c/d;p?q"; each input is the
                // merged path (§5.2.3) of the reference named in the comment.
                ("/b/c/g", Ok("/b/c/g")),         // "g"
                ("/b/c/./g", Ok("/b/c/g")),       // "./g"
                ("/b/c/g/", Ok("/b/c/g/")),       // "g/"
                ("/g", Ok("/g")),                 // "/g"
                ("/b/c/g;x", Ok("/b/c/g;x")),     // "g;x"
                ("/b/c/d;p", Ok("/b/c/d;p")),     // "" (the base path)
                ("/b/c/.", Ok("/b/c/")),          // "."
                ("/b/c/./", Ok("/b/c/")),         // "./"
                ("/b/c/..", Ok("/b/")),           // ".."
                ("/b/c/../", Ok("/b/")),          // "../"
                ("/b/c/../g", Ok("/b/g")),        // "../g"
                ("/b/c/../..", Ok("/")),          // "../.."
                ("/b/c/../../", Ok("/")),         // "../../"
                ("/b/c/../../g", Ok("/g")),       // "../../g"
                ("/b/c/;x", Ok("/b/c/;x")),       // ";x"
                ("/b/c/d;p/../../g", Ok("/b/g")), // base kept whole: why merge drops "d;p"
                // ("?y", "g?y", "#s", ... differ only in query or fragment.)
                // RFC 3986 §5.4.2 abnormal examples.
                ("/b/c/../../../g", Err(AboveRoot)), // "../../../g": RFC clamps to "/g"
                ("/b/c/../../../../g", Err(AboveRoot)), // "../../../../g": RFC clamps to "/g"
                ("/./g", Ok("/g")),                  // "/./g"
                ("/../g", Err(AboveRoot)),           // "/../g": RFC clamps to "/g"
                ("/b/c/g.", Ok("/b/c/g.")),          // "g."
                ("/b/c/.g", Ok("/b/c/.g")),          // ".g"
                ("/b/c/g..", Ok("/b/c/g..")),        // "g.."
                ("/b/c/..g", Ok("/b/c/..g")),        // "..g"
                ("/b/c/./../g", Ok("/b/g")),         // "./../g"
                ("/b/c/./g/.", Ok("/b/c/g/")),       // "./g/."
                ("/b/c/g/./h", Ok("/b/c/g/h")),      // "g/./h"
                ("/b/c/g/../h", Ok("/b/c/h")),       // "g/../h"
                ("/b/c/g;x=1/./y", Ok("/b/c/g;x=1/y")), // "g;x=1/./y"
                ("/b/c/g;x=1/../y", Ok("/b/c/y")),   // "g;x=1/../y"
                ("/b/c/g#s/../x", Err(BadByte)),     // "g#s/../x": fragment never reaches us
                // Abuse cases.
                ("/%70rivate/x", Ok("/private/x")),
                ("/a/../private/x", Ok("/private/x")),
                ("//private/x", Ok("/private/x")),
                ("/a//b///c", Ok("/a/b/c")),
                ("/public/..%2fprivate", Err(PathError::EncodedSlash)),
                ("/%2e%2e/etc/passwd", Err(AboveRoot)),
                ("/.%2e/x", Err(AboveRoot)),
                ("/a/%2E%2e/b", Ok("/b")),
                ("/a/%2e/b", Ok("/a/b")),
                ("/a%00b", Err(Nul)),
                ("/a%2fb", Err(PathError::EncodedSlash)),
                ("/a%2Fb", Err(PathError::EncodedSlash)),
                ("/a%5cb", Err(Backslash)),
                ("/a\\b", Err(Backslash)),
                ("/%zz", Err(BadEscape)),
                ("/%2", Err(BadEscape)),
                ("/%", Err(BadEscape)),
                ("/%2g", Err(BadEscape)),
                ("/%c0%ae", Err(BadUtf8)),       // overlong '.'
                ("/%e0%80%af", Err(BadUtf8)),    // overlong '/'
                ("/%ed%a0%80", Err(BadUtf8)),    // surrogate U+D800
                ("/%f4%90%80%80", Err(BadUtf8)), // U+110000
                ("/%c3", Err(BadUtf8)),          // truncated at the end
                ("/%c3x", Err(BadUtf8)),         // ASCII inside a sequence
                ("/%c3/", Err(BadUtf8)),
                ("/%80", Err(BadUtf8)), // lone continuation byte
                ("/%ff", Err(BadUtf8)),
                ("/%c3%a9", Ok("/%C3%A9")), // é stays encoded
                ("/%F0%9F%98%80", Ok("/%F0%9F%98%80")),
                ("/%f4%8f%bf%bf", Ok("/%F4%8F%BF%BF")), // U+10FFFF
                ("/%252e%252e/x", Ok("/%252e%252e/x")), // never decoded twice
                ("/a%20b", Ok("/a%20b")),
                ("/%7Euser", Ok("/~user")),
                ("/a%2Db", Ok("/a-b")),
                ("/%41%42", Ok("/AB")),
                ("/a%3fb", Ok("/a%3Fb")),
                ("relative", Err(NotOrigin)),
                ("", Err(NotOrigin)),
                ("/a b", Err(BadByte)),
                ("/a#b", Err(BadByte)),
                ("/a?b", Err(BadByte)),
                ("/a\u{7f}", Err(BadByte)),
                ("/é", Err(BadByte)),
                ("/", Ok("/")),
                ("/.", Ok("/")),
                ("/..", Err(AboveRoot)),
                ("/a/b/", Ok("/a/b/")),
                ("/.well-known/x", Ok("/.well-known/x")),
                ("/a/.hidden", Ok("/a/.hidden")), // hiding dotfiles is another module's rule
                ("/a/.../b", Ok("/a/.../b")),
            ],
            EncodedSlash::Reject,
        );
    }

    #[test]
    fn table_pass_and_decode_slashes() {
        check(
            &[
                ("/a%2fb", Ok("/a%2Fb")),
                ("/a%2F..%2Fb", Ok("/a%2F..%2Fb")),
                ("/a/%2f/../b", Ok("/a/b")),
                ("/a%5Cb", Err(Backslash)),
            ],
            EncodedSlash::Pass,
        );
        let cases: &[(&str, Result<&str, PathError>)] = &[
            ("/private%2Fx", Ok("/private/x")),
            ("/a%2F..%2Fb", Ok("/b")),
            ("/a%2F..%2F..%2Fb", Err(AboveRoot)),
            ("/a%2F%2Fb", Ok("/a/b")),
            ("/a%2F.%2F", Ok("/a/")),
            ("/%252F", Ok("/%252F")),
            ("/plain", Ok("/plain")),
        ];
        for &(input, expected) in cases {
            let mut out = b"keep".to_vec();
            let got = decode_slashes_into(input.as_bytes(), &mut out);
            let got = got.map(|()| String::from_utf8(out[4..].to_vec()).unwrap());
            assert_eq!(got, expected.map(str::to_owned), "{input:?}");
            if expected.is_err() {
                assert_eq!(out, b"keep", "{input:?}: out restored on error");
            }
        }
        assert!(has_encoded_slash(b"/a%2Fb"));
        assert!(!has_encoded_slash(b"/a%252Fb"));
        assert!(!has_encoded_slash(b"/a/b"));
    }

    #[test]
    fn segment_parameters_are_set_aside_for_routing() {
        for (path, want) in [
            ("/private;x/y", Ok("/private/y")),
            ("/private;jsessionid=1", Ok("/private")),
            ("/a;x/b;y=1/", Ok("/a/b/")),
            ("/;x/private/y", Ok("/private/y")),
            ("/a/;x", Ok("/a/")),
            ("/a/b;", Ok("/a/b")),
            ("/;", Ok("/")),
            ("/a/..;/private", Err(PathError::DotParameters)),
            ("/a/.;x/b", Err(PathError::DotParameters)),
            ("/a/..x;y/b", Ok("/a/..x/b")),
        ] {
            let mut p = path.as_bytes().to_vec();
            let got = set_aside_parameters(&mut p).map(|()| String::from_utf8(p.clone()).unwrap());
            assert_eq!(got, want.map(str::to_owned), "{path}");
            if want.is_err() {
                assert_eq!(p, path.as_bytes(), "{path}: unchanged on error");
            }
        }
        let mut n = Normalized::default();
        let set = |n: &mut Normalized, raw: &[u8], slash, params| {
            let span = Span {
                start: 0,
                end: raw.len() as u16,
            };
            n.set(raw, span, true, slash, params)
        };
        let raw = b"/a/%2e/private;v=1/x";
        assert_eq!(
            set(&mut n, raw, EncodedSlash::Reject, PathParameters::SetAside),
            Ok(())
        );
        assert_eq!(n.path(raw), b"/a/private;v=1/x");
        assert_eq!(n.route(raw), b"/a/private/x");
        let raw = b"/a%2Fb;c/d";
        assert_eq!(
            set(&mut n, raw, EncodedSlash::Pass, PathParameters::SetAside),
            Ok(())
        );
        assert_eq!((n.path(raw), n.route(raw)), (&raw[..], &b"/a/b/d"[..]));
        let raw = b"/a%2F..;/b";
        let got = set(&mut n, raw, EncodedSlash::Pass, PathParameters::SetAside);
        assert_eq!(got, Err(PathError::DotParameters));
        let raw = b"/a;b";
        let got = set(&mut n, raw, EncodedSlash::Reject, PathParameters::Reject);
        assert_eq!(got, Err(PathError::Parameters));
        let raw = b"/a/b";
        assert_eq!(
            set(&mut n, raw, EncodedSlash::Reject, PathParameters::Reject),
            Ok(())
        );
        assert_eq!(n.route(raw), raw);
    }

    #[test]
    fn fast_path_writes_nothing() {
        for raw in ["/", "/index.html", "/api/v1/items", "/a-b_c~d.e"] {
            let mut out = Vec::new();
            assert_eq!(
                normalize_into(raw.as_bytes(), EncodedSlash::Reject, &mut out),
                Ok(false)
            );
            assert!(out.is_empty());
            assert!(
                !needs_work(raw.as_bytes()),
                "{raw:?} should not leave the fast path"
            );
        }
    }

    #[test]
    fn error_leaves_out_untouched() {
        let mut out = b"x".to_vec();
        assert_eq!(
            normalize_into(b"/a/b/../../..", EncodedSlash::Reject, &mut out),
            Err(AboveRoot)
        );
        assert_eq!(out, b"x");
    }

    fn assert_normal(out: &[u8], mode: EncodedSlash, input: &[u8]) {
        let show = String::from_utf8_lossy(input);
        assert_eq!(out.first(), Some(&b'/'), "{show:?}");
        assert!(!out.windows(2).any(|w| w == b"//"), "{show:?}");
        assert!(
            !out.split(|&c| c == b'/').any(|s| s == b"." || s == b".."),
            "{show:?}"
        );
        let mut again = Vec::new();
        match normalize_into(out, mode, &mut again) {
            Ok(false) => {}
            Ok(true) => assert_eq!(again, out, "{show:?}: not idempotent"),
            Err(e) => panic!(
                "{show:?}: output {:?} refused: {e}",
                String::from_utf8_lossy(out)
            ),
        }
    }

    #[test]
    fn random_paths_normalize_to_fixed_points() {
        const ALPHABET: &[&str] = &[
            "/", "//", ".", "..", "a", "b", "%2e", "%2E", "%2f", "%41", "%c3%a9", "%25", "%", "%0",
            "~", ";x=1", "\\", " ",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut raw, mut out, mut decoded) = (Vec::new(), Vec::new(), Vec::new());
        let mut accepted = 0;
        for _ in 0..20_000 {
            raw.clear();
            raw.push(b'/');
            for _ in 0..next() % 10 {
                raw.extend_from_slice(
                    ALPHABET[(next() % ALPHABET.len() as u64) as usize].as_bytes(),
                );
            }
            for mode in [EncodedSlash::Reject, EncodedSlash::Pass] {
                out.clear();
                let Ok(changed) = normalize_into(&raw, mode, &mut out) else {
                    continue;
                };
                accepted += 1;
                let result = if changed { &out[..] } else { &raw[..] };
                assert!(result.len() <= raw.len());
                assert_normal(result, mode, &raw);
                let mut routed = result.to_vec();
                if set_aside_parameters(&mut routed).is_ok() {
                    assert!(!routed.contains(&b';'));
                    assert_normal(&routed, mode, &raw);
                }
                if mode == EncodedSlash::Pass {
                    decoded.clear();
                    if decode_slashes_into(result, &mut decoded).is_ok() {
                        assert!(!has_encoded_slash(&decoded));
                        assert_normal(&decoded, EncodedSlash::Reject, &raw);
                    }
                }
            }
        }
        assert!(accepted > 4_000, "only {accepted} paths accepted");
    }

    fn utf8_ok(bytes: &[u8]) -> bool {
        let mut v = Utf8::default();
        bytes.iter().all(|&b| v.push(b).is_ok()) && v.need == 0
    }

    #[test]
    fn utf8_state_machine_matches_std() {
        let check = |bytes: &[u8]| {
            assert_eq!(
                utf8_ok(bytes),
                std::str::from_utf8(bytes).is_ok(),
                "{bytes:02X?}"
            );
        };
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                check(&[a, b]);
            }
        }
        for a in 0xC0..=0xFFu8 {
            for b in 0..=255u8 {
                for c in 0..=255u8 {
                    check(&[a, b, c]);
                }
            }
        }
        for a in 0xF0..=0xF7u8 {
            for b in 0x80..=0xBFu8 {
                for c in 0x80..=0xBFu8 {
                    for d in [0x00, 0x7F, 0x80, 0xBF, 0xC0] {
                        check(&[a, b, c, d]);
                    }
                }
            }
        }
    }
}
