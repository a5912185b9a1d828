//! Content-Type by file extension.
//!
//! # How
//!
//! The extension is what follows the last `.` of the last path segment:
//! `"/a/archive.tar.gz"` has `gz`, `"/a.b/c"` has none (dots in directory
//! names do not count), and neither has a dotfile such as `"/.bashrc"`: a
//! leading dot marks a hidden name, not an extension, as with
//! [`std::path::Path::extension`]. `"/.bashrc.gz"` does have `gz`, and
//! `"/file."` has an empty extension, which nothing matches.
//!
//! [`MimeTable`] first consults the config's overrides (a short list,
//! scanned linearly, compared ASCII-case-insensitively), then [`builtin`],
//! and answers `application/octet-stream` for anything unknown, which
//! browsers download rather than sniff or render.
//!
//! [`builtin`] copies the extension into a 16-byte stack buffer, lowercases
//! it there and binary-searches a static slice sorted by bytes: no
//! allocation and about seven comparisons for the hundred entries. A longer
//! extension is unknown without a search. A test checks the slice is sorted
//! and free of duplicates.
//!
//! # The table
//!
//! It covers what nginx's `mime.types` covers for the web, plus the modern
//! formats nginx lacks (avif, apng, markdown, csv, yaml, toml, zstd, source
//! maps, web manifests, WebVTT). Where nginx keeps a legacy name the table
//! uses the registered one: `text/javascript` for `js`/`mjs` (RFC 9239 §6),
//! `application/xml` for `xml` (RFC 7303 §4.1 prefers it to `text/xml`),
//! `image/bmp`, `audio/mp4` for `m4a`, `application/vnd.rar`. Executables
//! and disk images (`bin exe dll deb dmg iso img msi msp msm`) are listed as
//! `application/octet-stream`, as nginx lists them.
//!
//! # The charset rule
//!
//! `; charset=utf-8` is appended exactly when the type is textual, decided by
//! the type, never the extension: every `text/*` type (which includes
//! `text/javascript`), the structured-syntax types whose base is `json`,
//! `xml`, `yaml` or `toml` (`application/json`, `application/xml`,
//! `application/yaml`, `application/toml`), and every `+json` or `+xml`
//! suffix type (`image/svg+xml`, `application/atom+xml`,
//! `application/manifest+json`, ...). Other types get no parameter. So `svgz`
//! carries the charset as `svg` does: it names the decoded text, and a server
//! that serves `.svgz` should also send `Content-Encoding: gzip`. A test
//! checks every entry against this rule.
//!
//! Override values from the config are used verbatim; the config layer
//! should check them with [`is_valid_media_type`] first, since they go
//! straight into a response header.

use ringside_http::grammar::is_token;

/// What unknown and extension-less names are served as.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// Longer extensions are unknown to [`builtin`]; the longest entry is
/// `webmanifest` (11 bytes).
const MAX_EXT: usize = 16;

/// Lowercase extension -> type, sorted by the bytes of the extension.
static TABLE: &[(&str, &str)] = &[
    ("3gp", "video/3gpp"),
    ("3gpp", "video/3gpp"),
    ("7z", "application/x-7z-compressed"),
    ("ai", "application/postscript"),
    ("apng", "image/apng"),
    ("asf", "video/x-ms-asf"),
    ("asx", "video/x-ms-asf"),
    ("atom", "application/atom+xml; charset=utf-8"),
    ("avi", "video/x-msvideo"),
    ("avif", "image/avif"),
    ("bin", "application/octet-stream"),
    ("bmp", "image/bmp"),
    ("br", "application/x-brotli"),
    ("css", "text/css; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("deb", "application/octet-stream"),
    ("dll", "application/octet-stream"),
    ("dmg", "application/octet-stream"),
    ("doc", "application/msword"),
    ("ear", "application/java-archive"),
    ("eot", "application/vnd.ms-fontobject"),
    ("eps", "application/postscript"),
    ("exe", "application/octet-stream"),
    ("flv", "video/x-flv"),
    ("gif", "image/gif"),
    ("gz", "application/gzip"),
    ("hqx", "application/mac-binhex40"),
    ("htm", "text/html; charset=utf-8"),
    ("html", "text/html; charset=utf-8"),
    ("ico", "image/x-icon"),
    ("ics", "text/calendar; charset=utf-8"),
    ("img", "application/octet-stream"),
    ("iso", "application/octet-stream"),
    ("jar", "application/java-archive"),
    ("jng", "image/x-jng"),
    ("jpeg", "image/jpeg"),
    ("jpg", "image/jpeg"),
    ("js", "text/javascript; charset=utf-8"),
    ("json", "application/json; charset=utf-8"),
    ("kar", "audio/midi"),
    ("kml", "application/vnd.google-earth.kml+xml; charset=utf-8"),
    ("kmz", "application/vnd.google-earth.kmz"),
    ("m3u8", "application/vnd.apple.mpegurl"),
    ("m4a", "audio/mp4"),
    ("m4v", "video/x-m4v"),
    ("map", "application/json; charset=utf-8"),
    ("md", "text/markdown; charset=utf-8"),
    ("mid", "audio/midi"),
    ("midi", "audio/midi"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("mng", "video/x-mng"),
    ("mov", "video/quicktime"),
    ("mp3", "audio/mpeg"),
    ("mp4", "video/mp4"),
    ("mpeg", "video/mpeg"),
    ("mpg", "video/mpeg"),
    ("msi", "application/octet-stream"),
    ("msm", "application/octet-stream"),
    ("msp", "application/octet-stream"),
    ("ogg", "audio/ogg"),
    ("otf", "font/otf"),
    ("pdf", "application/pdf"),
    ("png", "image/png"),
    ("ps", "application/postscript"),
    ("ra", "audio/x-realaudio"),
    ("rar", "application/vnd.rar"),
    ("rpm", "application/x-redhat-package-manager"),
    ("rss", "application/rss+xml; charset=utf-8"),
    ("rtf", "application/rtf"),
    ("sea", "application/x-sea"),
    ("shtml", "text/html; charset=utf-8"),
    ("svg", "image/svg+xml; charset=utf-8"),
    ("svgz", "image/svg+xml; charset=utf-8"),
    ("swf", "application/x-shockwave-flash"),
    ("tar", "application/x-tar"),
    ("tif", "image/tiff"),
    ("tiff", "image/tiff"),
    ("toml", "application/toml; charset=utf-8"),
    ("ts", "video/mp2t"),
    ("tsv", "text/tab-separated-values; charset=utf-8"),
    ("ttf", "font/ttf"),
    ("txt", "text/plain; charset=utf-8"),
    ("vtt", "text/vtt; charset=utf-8"),
    ("war", "application/java-archive"),
    ("wasm", "application/wasm"),
    ("wbmp", "image/vnd.wap.wbmp"),
    ("webm", "video/webm"),
    ("webmanifest", "application/manifest+json; charset=utf-8"),
    ("webp", "image/webp"),
    ("wmv", "video/x-ms-wmv"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("xhtml", "application/xhtml+xml; charset=utf-8"),
    ("xml", "application/xml; charset=utf-8"),
    ("xspf", "application/xspf+xml; charset=utf-8"),
    ("xz", "application/x-xz"),
    ("yaml", "application/yaml; charset=utf-8"),
    ("yml", "application/yaml; charset=utf-8"),
    ("zip", "application/zip"),
    ("zst", "application/zstd"),
];

/// The built-in type for an extension given without its dot, in any case.
/// `None` for unknown, empty or over-long extensions. Never allocates.
pub fn builtin(ext: &str) -> Option<&'static str> {
    let ext = ext.as_bytes();
    if ext.is_empty() || ext.len() > MAX_EXT {
        return None;
    }
    let mut buf = [0u8; MAX_EXT];
    let key = &mut buf[..ext.len()];
    key.copy_from_slice(ext);
    key.make_ascii_lowercase();
    let key = &*key;
    TABLE
        .binary_search_by(|(e, _)| e.as_bytes().cmp(key))
        .ok()
        .map(|i| TABLE[i].1)
}

/// The extension of the last segment of `path`, without its dot; see the
/// module docs for what counts.
fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(i) if i > 0 => Some(&name[i + 1..]),
        _ => None,
    }
}

/// Whether `s` is fit to be sent as a Content-Type: `type "/" subtype`, both
/// RFC 9110 tokens, then optionally `;` and parameters of visible ASCII,
/// spaces and tabs (RFC 9110 §8.3.1). Rejects CR, LF and other controls, so
/// a config value cannot add a header.
pub fn is_valid_media_type(s: &str) -> bool {
    let (essence, params) = s.split_once(';').unwrap_or((s, ""));
    let Some((ty, sub)) = essence.trim_end_matches([' ', '\t']).split_once('/') else {
        return false;
    };
    let token = |t: &str| is_token(t.as_bytes());
    token(ty)
        && token(sub)
        && params
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
}

/// The built-in table with the config's overrides in front of it.
#[derive(Debug, Clone, Default)]
pub struct MimeTable {
    /// Lowercase extension without a dot -> type, at most one per extension.
    overrides: Vec<(Box<str>, Box<str>)>,
}

impl MimeTable {
    /// `overrides` maps extensions (any case, with or without a leading dot)
    /// to types. An empty extension is dropped; for a repeated one the last
    /// value wins.
    pub fn new(overrides: impl IntoIterator<Item = (String, String)>) -> MimeTable {
        let mut list: Vec<(Box<str>, Box<str>)> = Vec::new();
        for (ext, ty) in overrides {
            let ext = ext.strip_prefix('.').unwrap_or(&ext).to_ascii_lowercase();
            if ext.is_empty() {
                continue;
            }
            match list.iter_mut().find(|(e, _)| **e == *ext) {
                Some(slot) => slot.1 = ty.into(),
                None => list.push((ext.into(), ty.into())),
            }
        }
        MimeTable { overrides: list }
    }

    /// The type for a file name or path, by its last extension; unknown or
    /// none gives [`OCTET_STREAM`].
    pub fn for_path<'a>(&'a self, path: &str) -> &'a str {
        let Some(ext) = extension(path) else {
            return OCTET_STREAM;
        };
        if let Some((_, ty)) = self
            .overrides
            .iter()
            .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        {
            return ty;
        }
        builtin(ext).unwrap_or(OCTET_STREAM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_unique_and_short() {
        for w in TABLE.windows(2) {
            assert!(
                w[0].0.as_bytes() < w[1].0.as_bytes(),
                "{} / {}",
                w[0].0,
                w[1].0
            );
        }
        for (ext, _) in TABLE {
            assert!(ext.len() <= MAX_EXT && !ext.is_empty(), "{ext}");
            assert_eq!(*ext, ext.to_ascii_lowercase(), "{ext}");
        }
    }

    #[test]
    fn charset_rule_holds_for_every_entry() {
        for (ext, ty) in TABLE {
            let (essence, param) = ty.split_once("; ").unwrap_or((ty, ""));
            let (top, sub) = essence.split_once('/').unwrap();
            let textual = top == "text"
                || matches!(sub, "json" | "xml" | "yaml" | "toml")
                || sub.ends_with("+json")
                || sub.ends_with("+xml");
            let want = if textual { "charset=utf-8" } else { "" };
            assert_eq!(param, want, "{ext}: {ty}");
            assert!(is_valid_media_type(ty), "{ext}: {ty}");
        }
    }

    #[test]
    fn builtin_lookup() {
        let cases: &[(&str, Option<&str>)] = &[
            ("html", Some("text/html; charset=utf-8")),
            ("HTML", Some("text/html; charset=utf-8")),
            ("Js", Some("text/javascript; charset=utf-8")),
            ("mjs", Some("text/javascript; charset=utf-8")),
            ("json", Some("application/json; charset=utf-8")),
            ("svg", Some("image/svg+xml; charset=utf-8")),
            ("PNG", Some("image/png")),
            ("3gp", Some("video/3gpp")),
            ("zst", Some("application/zstd")),
            (
                "webmanifest",
                Some("application/manifest+json; charset=utf-8"),
            ),
            (
                "WEBMANIFEST",
                Some("application/manifest+json; charset=utf-8"),
            ),
            ("exe", Some("application/octet-stream")),
            ("", None),
            ("nope", None),
            ("htmlx", None),
            ("aaaaaaaaaaaaaaaaaaaaaaaaaaaa", None),
            ("webmanifestwebman", None),
            ("é", None),
        ];
        for &(ext, want) in cases {
            assert_eq!(builtin(ext), want, "{ext:?}");
        }
    }

    #[test]
    fn paths() {
        let t = MimeTable::default();
        let cases: &[(&str, &str)] = &[
            ("/index.html", "text/html; charset=utf-8"),
            ("index.HTM", "text/html; charset=utf-8"),
            ("/a/b/style.css", "text/css; charset=utf-8"),
            ("/app.mjs", "text/javascript; charset=utf-8"),
            ("/img/Photo.JPG", "image/jpeg"),
            ("/archive.tar.gz", "application/gzip"),
            ("/archive.tar", "application/x-tar"),
            ("/font.woff2", "font/woff2"),
            ("/m.wasm", "application/wasm"),
            ("/README", OCTET_STREAM),
            ("/", OCTET_STREAM),
            ("", OCTET_STREAM),
            ("/file.", OCTET_STREAM),
            ("/file.unknown", OCTET_STREAM),
            ("/.bashrc", OCTET_STREAM),
            ("/.html", OCTET_STREAM),
            ("/dir/.html", OCTET_STREAM),
            ("/.bashrc.txt", "text/plain; charset=utf-8"),
            ("/..", OCTET_STREAM),
            ("/a.b/c", OCTET_STREAM),
            ("/a.html/", OCTET_STREAM),
            ("/a.html/c.txt", "text/plain; charset=utf-8"),
            ("rel/name.md", "text/markdown; charset=utf-8"),
        ];
        for &(path, want) in cases {
            assert_eq!(t.for_path(path), want, "{path:?}");
        }
    }

    #[test]
    fn overrides_win() {
        let t = MimeTable::new([
            (".HTML".to_string(), "text/x-custom".to_string()),
            ("foo".to_string(), "application/x-foo".to_string()),
            ("Bar".to_string(), "application/x-bar".to_string()),
            ("bar".to_string(), "application/x-bar2".to_string()),
            (".".to_string(), "application/x-empty".to_string()),
            ("".to_string(), "application/x-empty".to_string()),
        ]);
        let cases: &[(&str, &str)] = &[
            ("/a.html", "text/x-custom"),
            ("/a.HtMl", "text/x-custom"),
            ("/a.foo", "application/x-foo"),
            ("/a.FOO", "application/x-foo"),
            ("/a.bar", "application/x-bar2"),
            ("/a.css", "text/css; charset=utf-8"),
            ("/a.", OCTET_STREAM),
            ("/a", OCTET_STREAM),
            ("/.foo", OCTET_STREAM),
        ];
        for &(path, want) in cases {
            assert_eq!(t.for_path(path), want, "{path:?}");
        }
    }

    #[test]
    fn media_type_validation() {
        let cases: &[(&str, bool)] = &[
            ("text/plain", true),
            ("text/plain; charset=utf-8", true),
            ("application/vnd.api+json", true),
            ("text/plain;charset=\"utf-8\"", true),
            ("text", false),
            ("/plain", false),
            ("text/", false),
            ("te xt/plain", false),
            ("text/plain\r\nSet-Cookie: a=b", false),
            ("text/plain; a=\n", false),
            ("", false),
        ];
        for &(s, want) in cases {
            assert_eq!(is_valid_media_type(s), want, "{s:?}");
        }
    }
}
