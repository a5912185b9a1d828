//! From request path to a relative path beneath the docroot. Percent-decoding
//! happens exactly once; what could change meaning after it is refused.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// Not origin-form, bad escape, NUL, encoded `/`, `..`, invalid UTF-8.
    Invalid,
    /// A segment starting with `.`: hidden by default.
    Hidden,
}

/// Decodes `path` (the request path before `?`) into a relative path with
/// no leading slash; a trailing slash is kept.
pub fn decode_path(path: &[u8]) -> Result<String, PathError> {
    let mut out = Vec::with_capacity(path.len());
    decode_path_into(path, &mut out)?;
    String::from_utf8(out).map_err(|_| PathError::Invalid)
}

/// [`decode_path`] appending to a reused buffer: no allocation once the
/// buffer has grown. On success the appended bytes are valid UTF-8.
pub fn decode_path_into(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    let rest = path.strip_prefix(b"/").ok_or(PathError::Invalid)?;
    let base = out.len();
    for seg in rest.split(|&b| b == b'/') {
        let start = out.len();
        let mut i = 0;
        while i < seg.len() {
            let b = seg[i];
            if b == b'%' {
                let hex = seg.get(i + 1..i + 3).ok_or(PathError::Invalid)?;
                let v = u8::from_str_radix(
                    std::str::from_utf8(hex).map_err(|_| PathError::Invalid)?,
                    16,
                )
                .map_err(|_| PathError::Invalid)?;
                if v == b'/' || v == 0 || v == b'\\' {
                    return Err(PathError::Invalid);
                }
                out.push(v);
                i += 3;
            } else {
                if b == 0 {
                    return Err(PathError::Invalid);
                }
                out.push(b);
                i += 1;
            }
        }
        let decoded = &out[start..];
        if decoded == b".." || decoded == b"." {
            return Err(PathError::Invalid);
        }
        if decoded.first() == Some(&b'.') {
            return Err(PathError::Hidden);
        }
        out.push(b'/');
    }
    out.pop();
    std::str::from_utf8(&out[base..]).map_err(|_| PathError::Invalid)?;
    Ok(())
}

/// What an alias route looks up beneath its directory: the normalized
/// `path` with the route's `prefix` taken off, as a path from `/`, so
/// [`decode_path_into`] checks it as it checks any path. The prefix ends at
/// a segment boundary (the router's rule), so `/assets` never takes
/// `/assetsfoo`, and what is left cannot climb out of the directory: `..`
/// was resolved before routing and is refused here. `None` when `path` does
/// not start with the prefix, which only a path the router matched in
/// another spelling (an encoded slash passed on) can do.
pub fn alias_rest<'a>(path: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let dir = prefix.strip_suffix(b"/").unwrap_or(prefix);
    match path.strip_prefix(dir)? {
        b"" => Some(b"/"),
        rest if rest[0] == b'/' => Some(rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_rest_replaces_whole_segments() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("/assets/css/a.css", "/assets/", Some("/css/a.css")),
            ("/assets/", "/assets/", Some("/")),
            ("/assets", "/assets/", Some("/")),
            ("/assets/x", "/assets", Some("/x")),
            ("/assets", "/assets", Some("/")),
            ("/assetsfoo/x", "/assets", None),
            ("/assets%2Fx", "/assets/", None),
            ("/x", "/", Some("/x")),
            ("/", "/", Some("/")),
        ];
        for (path, prefix, want) in cases {
            assert_eq!(
                alias_rest(path.as_bytes(), prefix.as_bytes()),
                want.map(str::as_bytes),
                "{path} under {prefix}"
            );
        }
    }

    #[test]
    fn table() {
        let cases: &[(&[u8], Result<&str, PathError>)] = &[
            (b"/", Ok("")),
            (b"/a/b.txt", Ok("a/b.txt")),
            (b"/dir/", Ok("dir/")),
            (b"/a%20b", Ok("a b")),
            (b"/..", Err(PathError::Invalid)),
            (b"/a/../b", Err(PathError::Invalid)),
            (b"/%2e%2e/etc/passwd", Err(PathError::Invalid)),
            (b"/a%2fb", Err(PathError::Invalid)),
            (b"/a%00", Err(PathError::Invalid)),
            (b"/%2", Err(PathError::Invalid)),
            (b"/%zz", Err(PathError::Invalid)),
            (b"/%c0%ae", Err(PathError::Invalid)),
            (b"/.git/config", Err(PathError::Hidden)),
            (b"/%2egit", Err(PathError::Hidden)),
            (b"relative", Err(PathError::Invalid)),
            (b"/%252e%252e", Ok("%2e%2e")),
        ];
        for (input, want) in cases {
            assert_eq!(
                decode_path(input).as_deref(),
                want.as_deref(),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
