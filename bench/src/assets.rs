//! siege's HTML parser (`parser = true`, its default): the images,
//! scripts and stylesheets of a page, which siege fetches after the page,
//! each as a transaction of its own.
//!
//! It reads tags as siege 4.0.7's `parser.c` does, so that the same page
//! yields the same fetches: comments are skipped; a tag's text (up to
//! 4095 bytes, to its `>`) is cut into words at spaces and `=`, and a value
//! after a name at quotes and spaces (and `=` for a `rel`); `img` takes
//! its `src` (not a `data:image` one), `script` its `src`, `link` its
//! `href` when its `rel` is `stylesheet`, `body` its `background`. Names
//! match by prefix and case-insensitively, as siege's `strncasecmp` does.
//! Each URL is fetched once per page, fragment dropped, in the reverse
//! order of the page (siege pops them off a stack).
//!
//! Kept bounded and simple, unlike siege: only assets on the page's own
//! host and port are fetched (siege follows any http(s) host not on its
//! `nofollow` list), assets are not parsed in turn, and a `<meta>`
//! refresh is not followed.

use crate::url::{parse_url, Url};

/// siege's BUFSZ less its NUL: the most of a tag it reads.
const MAX_TAG: usize = 4095;

/// strtok_r over a tag's text: words between delimiters; each call may
/// name its own delimiters, and the delimiter ending a word is used up.
struct Words<'a> {
    rest: &'a [u8],
}

const NAME_DELIMS: &[u8] = b" =";
/// A `rel`'s or an `href`'s value in a plain `<a>`: `=` ends it too.
const VALUE_PLUS: &[u8] = b" =\"'";
/// A `src`'s or a stylesheet's `href`: a query's `=` does not end it.
const VALUE_QUOTES: &[u8] = b" \"'";

impl<'a> Words<'a> {
    fn next(&mut self, delims: &[u8]) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|b| !delims.contains(b))?;
        let rest = &self.rest[start..];
        let end = rest
            .iter()
            .position(|b| delims.contains(b))
            .unwrap_or(rest.len());
        self.rest = &rest[(end + 1).min(rest.len())..];
        Some(&rest[..end])
    }
}

fn starts(word: &[u8], name: &str) -> bool {
    word.len() >= name.len() && word[..name.len()].eq_ignore_ascii_case(name.as_bytes())
}

/// The raw asset references of a page, in page order.
pub fn references(html: &[u8]) -> Vec<Vec<u8>> {
    // siege drops every backslash from the page before reading it.
    let html: Vec<u8> = html.iter().copied().filter(|&b| b != b'\\').collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < html.len() {
        if html[i] == b'<' {
            i += 1;
            if html[i..].starts_with(b"!--") {
                i += 3;
                match html[i..].windows(3).position(|w| w == b"-->") {
                    Some(p) => i += p + 3,
                    None => break,
                }
            } else {
                let len = html[i..]
                    .iter()
                    .take(MAX_TAG)
                    .position(|&b| b == b'>')
                    .unwrap_or_else(|| (html.len() - i).min(MAX_TAG));
                tag(&html[i..i + len], &mut out);
                i += len;
            }
        }
        i += 1;
    }
    out
}

/// One tag's text, as siege's `__parse_control` reads it. Its quirks are
/// kept: a `continue` there re-reads the current word as a tag name.
fn tag(text: &[u8], out: &mut Vec<Vec<u8>>) {
    let mut w = Words { rest: text };
    let top = w.next(NAME_DELIMS);
    let mut word = top;
    while let Some(cur) = word {
        if starts(cur, "img") {
            let Some(first) = w.next(NAME_DELIMS) else {
                break;
            };
            if w.rest.starts_with(b"\"\"") {
                word = Some(first); // src="": siege's continue
                continue;
            }
            if starts(first, "src") {
                if let Some(v) = w.next(VALUE_QUOTES) {
                    if starts(v, "data:image") {
                        word = Some(v);
                        continue;
                    }
                    if !v.ends_with(b"+") {
                        out.push(v.to_vec());
                    }
                }
            } else {
                while let Some(n) = w.next(NAME_DELIMS) {
                    if starts(n, "src") {
                        match w.next(VALUE_QUOTES) {
                            Some(v) if v.len() > 1 && !starts(v, "data:image") => {
                                out.push(v.to_vec())
                            }
                            _ => {}
                        }
                    }
                }
            }
        } else if starts(cur, "link") {
            let mut stylesheet = false;
            let mut href = None;
            while let Some(mut n) = w.next(NAME_DELIMS) {
                if starts(n, "rel") {
                    match w.next(VALUE_PLUS) {
                        Some(v) => n = v,
                        None => break,
                    }
                    if starts(n, "stylesheet") {
                        stylesheet = true;
                    }
                    if starts(n, "next") || starts(n, "alternate") {
                        stylesheet = false;
                    }
                }
                if starts(n, "href") {
                    if let Some(v) = w.next(VALUE_QUOTES) {
                        href = Some(v.to_vec());
                    }
                }
            }
            if stylesheet {
                out.extend(href);
            }
        } else if starts(cur, "script") {
            while let Some(n) = w.next(NAME_DELIMS) {
                if starts(n, "src") {
                    match w.next(VALUE_QUOTES) {
                        Some(v) if !v.starts_with(b"+") => out.push(v.to_vec()),
                        _ => {}
                    }
                }
            }
        } else if starts(cur, "meta") || starts(cur, "frame") {
            // siege reads these to the end of the tag (a refresh URL, a
            // frame's src) and fetches none of it as an asset.
            while w.next(NAME_DELIMS).is_some() {}
        } else if starts(cur, "background") {
            if let Some(v) = w.next(VALUE_QUOTES) {
                if top == Some(b"body".as_slice()) {
                    out.push(v.to_vec());
                }
            }
        } else if starts(cur, "href") || starts(cur, "location.href") {
            // Read and dropped by siege too: a link is not an asset.
            w.next(VALUE_PLUS);
        }
        word = w.next(NAME_DELIMS);
    }
}

/// `reference` resolved against the page at `base`: None for another host
/// or port, another scheme, or what does not parse.
pub fn resolve(base: &Url, reference: &[u8]) -> Option<Url> {
    let r = std::str::from_utf8(reference).ok()?.trim();
    let r = r.split('#').next().unwrap_or("");
    if r.is_empty() {
        return None;
    }
    // Relative references keep the page's scheme.
    let scheme = if base.tls { "https" } else { "http" };
    let absolute = if let Some(rest) = r.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if r.contains("://") {
        r.to_string()
    } else if r.contains(':') && !r.starts_with('/') && !r.starts_with('.') {
        return None; // data:, javascript:, mailto:...
    } else {
        let path = if r.starts_with('/') {
            r.to_string()
        } else {
            let page = base.path.split('?').next().unwrap_or("/");
            let dir = &page[..page.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{r}")
        };
        format!("{scheme}://{}{}", base.authority, normalize(&path))
    };
    let url = parse_url(&absolute).ok()?;
    // The same origin: scheme, host and port.
    let same = url.tls == base.tls && url.host.eq_ignore_ascii_case(&base.host);
    (same && url.port == base.port).then_some(url)
}

/// Removes `.` and `..` segments (RFC 3986 §5.2.4), keeping the query.
fn normalize(path: &str) -> String {
    let (p, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let mut segs: Vec<&str> = Vec::new();
    let parts: Vec<&str> = p.split('/').skip(1).collect();
    for (i, s) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match *s {
            "." if last => segs.push(""),
            "." => {}
            ".." => {
                segs.pop();
                if last {
                    segs.push("");
                }
            }
            s => segs.push(s),
        }
    }
    let mut out = format!("/{}", segs.join("/"));
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// The page's assets to fetch after it, in siege's order: each URL once,
/// last in the page first.
pub fn assets(html: &[u8], base: &Url) -> Vec<Url> {
    let mut seen: Vec<Url> = Vec::new();
    for r in references(html) {
        if let Some(u) = resolve(base, &r) {
            if !seen.iter().any(|s| s.path == u.path) {
                seen.push(u);
            }
        }
    }
    seen.reverse();
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page siege 4.0.7 was seen fetching /c.png?v=1, /sub/b.png,
    /// /h.css, /s2.js, /a2.png, /a1.png, /app.js and /style.css for, in
    /// that order, and nothing else.
    const PAGE: &str = r#"<html><head><link rel="stylesheet" href="/style.css"><link rel="icon" href="/fav.ico">
<script src="app.js"></script><script>var x=1;</script></head><body>
<!-- <img src="/hidden.png"> -->
<img alt="x" src="/a1.png"><img src="/a2.png"><img src="/a2.png"><script type="text/javascript" src="/s2.js"></script><link href="/h.css" rel="stylesheet"><IMG SRC='sub/b.png'>
<a href="/other.html">o</a><img src="http://127.0.0.1:8080/c.png?v=1#f"><img src="http://elsewhere/x.png">
<img src="data:image/png;base64,AAAA">
</body></html>"#;

    #[test]
    fn fetches_what_siege_fetches() {
        let base = parse_url("http://127.0.0.1:8080/dir/page.html").unwrap();
        let got: Vec<String> = assets(PAGE.as_bytes(), &base)
            .into_iter()
            .map(|u| u.path)
            .collect();
        assert_eq!(
            got,
            [
                "/c.png?v=1",
                "/dir/sub/b.png",
                "/h.css",
                "/s2.js",
                "/a2.png",
                "/a1.png",
                "/dir/app.js",
                "/style.css"
            ]
        );
    }

    #[test]
    fn sieges_quirks() {
        let refs = |page: &str| -> Vec<String> {
            references(page.as_bytes())
                .into_iter()
                .map(|r| String::from_utf8(r).unwrap())
                .collect()
        };
        assert_eq!(refs(r#"<img src="/q.png?a=1&b=2">"#), ["/q.png?a=1&b=2"]);
        assert_eq!(
            refs(r#"<img src="" alt=x><img src="data:image/png,x">"#),
            [] as [&str; 0]
        );
        assert_eq!(
            refs(r#"<link rel="alternate stylesheet" href="/alt.css">"#),
            [] as [&str; 0]
        );
        assert_eq!(
            refs(r#"<link rel=next href=/n.css><link rel=stylesheet href=/s.css>"#),
            ["/s.css"]
        );
        assert_eq!(
            refs(r#"<body background="/bg.png"><div background="/no.png">"#),
            ["/bg.png"]
        );
        assert_eq!(
            refs(r#"<script src="+x"></script><img src="/a\b.png">"#),
            ["/ab.png"]
        );
    }

    #[test]
    fn resolves_relative_references() {
        let base = parse_url("http://h:81/a/b/page?x=1").unwrap();
        let r = |s: &str| resolve(&base, s.as_bytes()).map(|u| u.path);
        assert_eq!(r("c.png").as_deref(), Some("/a/b/c.png"));
        assert_eq!(r("../c.png").as_deref(), Some("/a/c.png"));
        assert_eq!(r("./c.png?v=2#top").as_deref(), Some("/a/b/c.png?v=2"));
        assert_eq!(r("//h:81/x").as_deref(), Some("/x"));
        assert_eq!(r("//h/x"), None, "port 80 is another origin");
        assert_eq!(r("https://h:81/x"), None, "another scheme");
        let tls = parse_url("https://h/p").unwrap();
        let r = |s: &str| resolve(&tls, s.as_bytes()).map(|u| (u.tls, u.path));
        assert_eq!(r("c.png"), Some((true, "/c.png".into())));
        assert_eq!(r("//h/x"), Some((true, "/x".into())));
        assert_eq!(r("http://h:443/x"), None, "another scheme");
        assert_eq!(r("javascript:void(0)"), None);
        assert_eq!(r("#top"), None);
    }

    #[test]
    fn a_tag_without_its_end_is_read_to_the_limit() {
        let mut page = b"<img src=/a.png ".to_vec();
        page.resize(10_000, b'x');
        assert_eq!(references(&page), [b"/a.png".to_vec()]);
    }
}
