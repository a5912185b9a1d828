//! Choosing a precompressed sibling (`file.br`, `file.zst`, `file.gz`) by the
//! request's Accept-Encoding (RFC 9110 §12.5.3).
//!
//! # Grammar
//!
//! ```text
//! Accept-Encoding = #( codings [ weight ] )
//! codings         = content-coding / "identity" / "*"
//! weight          = OWS ";" OWS "q=" qvalue
//! qvalue          = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
//! ```
//!
//! # How
//!
//! One pass over the bytes, without allocating, records a weight (q times
//! 1000, so `0..=1000`) for each of `br`, `zstd` and `gzip` (`x-gzip` being
//! gzip's alias, RFC 9110 §18.6) and for `*`. Members are split on commas,
//! and parameters on semicolons, outside quoted strings; optional
//! whitespace (SP, HTAB) around each piece is dropped, empty list elements
//! are skipped (RFC 9110 §5.6.1). Coding names and the `q` parameter name
//! compare case-insensitively.
//!
//! A member whose q value does not match `qvalue` (`q=2`, `q=0.5000`, `q=.5`,
//! `q=abc`, `q="1"`, a `q` without `=`) is ignored as a whole, as if it were
//! not there: a malformed preference is not taken as consent. Other
//! parameters are skipped and the member kept. `q = 0.5` (spaces around the
//! `=`) is read as `q=0.5`, a harmless leniency. When a coding is listed more
//! than once the highest weight counts (`x-gzip;q=0, gzip` accepts gzip).
//!
//! A coding's weight is its own if listed, else `*`'s if `*` is listed, else
//! 0; a weight of 0 means "not acceptable". [`choose`] takes the highest
//! weight above 0 among the siblings that exist, the earlier in `available`
//! (the server's preference) on a tie. `identity` plays no part: identity is
//! always there to fall back on, so even `identity;q=0` or `*;q=0` gets the
//! plain file rather than a 406.
//!
//! No header means identity here. RFC 9110 lets a server send any coding
//! then, but a client that sent nothing may not decode anything, and nginx's
//! `gzip_static` does the same. An empty header value means "no coding"
//! (RFC 9110 §12.5.3).
//!
//! Several Accept-Encoding lines are to be joined with commas into one value
//! by the caller (RFC 9110 §5.3).

use crate::grammar::trim_ows;

/// A content coding that may have a precompressed sibling on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Br,
    Zstd,
    Gzip,
}

impl Coding {
    /// Every coding, in the usual server preference order (best ratio first).
    pub const ALL: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The sibling's file-name suffix: `".br"`, `".zst"`, `".gz"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Coding::Br => ".br",
            Coding::Zstd => ".zst",
            Coding::Gzip => ".gz",
        }
    }

    /// The Content-Encoding token: `"br"`, `"zstd"`, `"gzip"`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Picks the best coding among `available` (the siblings that exist, in
/// server preference order) for this Accept-Encoding value; `None` means
/// serve the file as it is. Never allocates.
pub fn choose(accept_encoding: Option<&[u8]>, available: &[Coding]) -> Option<Coding> {
    let weights = Weights::parse(accept_encoding?);
    let mut best: Option<(Coding, u16)> = None;
    for &c in available {
        let q = weights.of(c);
        if q > 0 && best.is_none_or(|(_, bq)| q > bq) {
            best = Some((c, q));
        }
    }
    best.map(|(c, _)| c)
}

/// Weights in thousandths, as the header gave them.
#[derive(Debug, Default)]
struct Weights {
    explicit: [Option<u16>; 3],
    star: Option<u16>,
}

impl Weights {
    fn parse(value: &[u8]) -> Weights {
        let mut w = Weights::default();
        for member in split_unquoted(value, b',') {
            let mut parts = split_unquoted(member, b';');
            let name = trim_ows(parts.next().unwrap_or_default());
            if name.is_empty() {
                continue;
            }
            let Some(q) = weight(parts) else {
                continue;
            };
            let slot = if name == b"*" {
                &mut w.star
            } else if name.eq_ignore_ascii_case(b"br") {
                &mut w.explicit[Coding::Br.index()]
            } else if name.eq_ignore_ascii_case(b"zstd") {
                &mut w.explicit[Coding::Zstd.index()]
            } else if name.eq_ignore_ascii_case(b"gzip") || name.eq_ignore_ascii_case(b"x-gzip") {
                &mut w.explicit[Coding::Gzip.index()]
            } else {
                continue;
            };
            *slot = Some(slot.map_or(q, |old| old.max(q)));
        }
        w
    }

    fn of(&self, c: Coding) -> u16 {
        self.explicit[c.index()].or(self.star).unwrap_or(0)
    }
}

/// The member's weight from its parameters: 1000 without a `q`, `None` if a
/// `q` is malformed.
fn weight<'a>(params: impl Iterator<Item = &'a [u8]>) -> Option<u16> {
    let mut q = 1000;
    for p in params {
        let p = trim_ows(p);
        let (name, value) = match p.iter().position(|&b| b == b'=') {
            Some(i) => (trim_ows(&p[..i]), Some(trim_ows(&p[i + 1..]))),
            None => (p, None),
        };
        if name.eq_ignore_ascii_case(b"q") {
            q = parse_qvalue(value?)?;
        }
    }
    Some(q)
}

/// RFC 9110 §12.4.2 `qvalue`, in thousandths.
fn parse_qvalue(v: &[u8]) -> Option<u16> {
    let (&first, rest) = v.split_first()?;
    let frac = match rest {
        [] => &[][..],
        [b'.', frac @ ..] if frac.len() <= 3 => frac,
        _ => return None,
    };
    match first {
        b'0' => {
            let mut q = 0u16;
            for i in 0..3 {
                let d = match frac.get(i) {
                    Some(&d) if d.is_ascii_digit() => d - b'0',
                    Some(_) => return None,
                    None => 0,
                };
                q = q * 10 + u16::from(d);
            }
            Some(q)
        }
        b'1' if frac.iter().all(|&d| d == b'0') => Some(1000),
        _ => None,
    }
}

/// Splits on `sep` outside quoted strings (with `\` escapes inside them).
fn split_unquoted(s: &[u8], sep: u8) -> SplitUnquoted<'_> {
    SplitUnquoted { rest: Some(s), sep }
}

struct SplitUnquoted<'a> {
    rest: Option<&'a [u8]>,
    sep: u8,
}

impl<'a> Iterator for SplitUnquoted<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let s = self.rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, &b) in s.iter().enumerate() {
            if escaped {
                escaped = false;
            } else if quoted && b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                quoted = !quoted;
            } else if b == self.sep && !quoted {
                self.rest = Some(&s[i + 1..]);
                return Some(&s[..i]);
            }
        }
        self.rest = None;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::Coding::{Br, Gzip, Zstd};
    use super::*;

    const ALL: &[Coding] = &[Br, Zstd, Gzip];

    #[test]
    fn choose_cases() {
        let cases: &[(Option<&str>, &[Coding], Option<Coding>)] = &[
            (None, ALL, None),
            (Some(""), ALL, None),
            (Some("   "), ALL, None),
            (Some(","), ALL, None),
            (Some("gzip, deflate, br"), ALL, Some(Br)),
            (Some("gzip, deflate, br, zstd"), ALL, Some(Br)),
            (Some("gzip, deflate, br"), &[Zstd, Gzip], Some(Gzip)),
            (Some("gzip, deflate, br"), &[Gzip, Br], Some(Gzip)),
            (Some("gzip, deflate, br"), &[], None),
            (Some("gzip;q=1, br;q=0.5"), ALL, Some(Gzip)),
            (Some("br;q=0.5, zstd;q=0.9, gzip;q=0.7"), ALL, Some(Zstd)),
            (Some("br;q=0"), ALL, None),
            (Some("br;q=0, gzip"), ALL, Some(Gzip)),
            (Some("br;q=0, *"), ALL, Some(Zstd)),
            (Some("*"), ALL, Some(Br)),
            (Some("*"), &[Gzip, Br], Some(Gzip)),
            (Some("*;q=0, gzip"), ALL, Some(Gzip)),
            (Some("*;q=0"), ALL, None),
            (Some("*;q=0.5, gzip;q=0.6"), ALL, Some(Gzip)),
            (Some("*;q=0.7, gzip;q=0.6"), ALL, Some(Br)),
            (Some("identity"), ALL, None),
            (Some("identity;q=0"), ALL, None),
            (Some("identity, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("deflate, compress"), ALL, None),
            (Some("GZIP"), ALL, Some(Gzip)),
            (Some("Br, GZip"), ALL, Some(Br)),
            (Some("ZSTD"), ALL, Some(Zstd)),
            (Some("x-gzip"), ALL, Some(Gzip)),
            (Some("X-GZIP;q=0.3"), ALL, Some(Gzip)),
            (Some("x-gzip;q=0, gzip"), ALL, Some(Gzip)),
            (Some("gzip;q=0, gzip;q=0.2"), ALL, Some(Gzip)),
            (Some("gzip;Q=0.8, br;q=0.7"), ALL, Some(Gzip)),
            (Some("gzip;q=0.000, br;q=0.001"), ALL, Some(Br)),
            (Some("gzip;q=1.000, br;q=0.999"), ALL, Some(Gzip)),
            (Some("gzip;q=1., br;q=0."), ALL, Some(Gzip)),
            (Some("br;q=0.001"), ALL, Some(Br)),
            (Some("br;q=2, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=1.5, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=1.001, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=0.5000, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=.5, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=abc, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=-1, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=\"1\", gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=0.5;q=x, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("*;q=bad, gzip;q=0.1"), ALL, Some(Gzip)),
            (Some("br;q=bad"), ALL, None),
            (Some("br;level=5"), ALL, Some(Br)),
            (Some("br;x=\"a,b;q=0\", gzip;q=0.1"), ALL, Some(Br)),
            (Some("br;x=\"a\\\"b,\", gzip;q=0.1"), ALL, Some(Br)),
            (Some("gzip,br"), ALL, Some(Br)),
            (Some("  gzip ,\tbr  "), ALL, Some(Br)),
            (Some("gzip ; q=0.5 ,br ;q=0.4"), ALL, Some(Gzip)),
            (Some("gzip;\tq=0.5, br; q=0.4"), ALL, Some(Gzip)),
            (Some("gzip;q = 0.5, br;q=0.4"), ALL, Some(Gzip)),
            (Some(",,gzip,,"), ALL, Some(Gzip)),
            (Some("gzip;"), ALL, Some(Gzip)),
            (Some("gzipx, brotli, zst"), ALL, None),
        ];
        for &(header, avail, want) in cases {
            assert_eq!(
                choose(header.map(str::as_bytes), avail),
                want,
                "{header:?} {avail:?}"
            );
        }
    }

    #[test]
    fn qvalues() {
        let cases: &[(&str, Option<u16>)] = &[
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.123", Some(123)),
            ("0.000", Some(0)),
            ("1", Some(1000)),
            ("1.0", Some(1000)),
            ("1.000", Some(1000)),
            ("1.", Some(1000)),
            ("", None),
            ("0.1234", None),
            ("1.001", None),
            ("1.0000", None),
            ("2", None),
            ("00", None),
            (".5", None),
            ("0,5", None),
            ("0.a", None),
        ];
        for &(v, want) in cases {
            assert_eq!(parse_qvalue(v.as_bytes()), want, "{v:?}");
        }
    }

    #[test]
    fn suffixes_and_tokens() {
        let cases: &[(Coding, &str, &str)] = &[
            (Br, ".br", "br"),
            (Zstd, ".zst", "zstd"),
            (Gzip, ".gz", "gzip"),
        ];
        for &(c, suffix, token) in cases {
            assert_eq!((c.suffix(), c.token()), (suffix, token), "{c:?}");
        }
    }
}
