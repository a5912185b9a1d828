//! URLs: ab's one `http://host[:port]/path`, or siege's URL file (`--file`).
//!
//! A URL file holds one URL a line, optionally followed by `POST` and the
//! body, inline or as `<file` (read relative to the URL file), as siege
//! reads it. Blank lines and `#` comments are skipped; a URL without a
//! scheme gets `http://`. Names are resolved once, before the run, so no
//! DNS lookup is ever timed.
//!
//! Each URL becomes a [`Target`] with its request built once (see
//! [`crate::request`]); requests go to the targets in turn, request `i` to
//! target `i % targets`.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;

use crate::args::{Config, H2};
use crate::request;
pub use crate::url::{parse_url, Url};

/// One URL ready to send to.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: Url,
    pub addr: SocketAddr,
    /// The whole request, head and body, built once.
    pub request: Vec<u8>,
    /// HEAD: responses carry no body whatever their framing says.
    pub head: bool,
    /// Request body bytes.
    pub body_len: u64,
    /// With --h2/--h2c: the request's HPACK header blocks, built once:
    /// every field a literal (`plain`), or the first request on a
    /// connection indexing them and the later ones indices (see
    /// [`request::build_h2`]; for one URL only, as other URLs' entries
    /// would move the indices).
    pub h2: request::H2Blocks,
    /// With --h2/--h2c: the request body, sent in DATA frames.
    pub body: Vec<u8>,
    /// With --h3: the request's bytes on its stream, HEADERS and DATA
    /// frames (see [`crate::h3::request`]).
    pub h3: Vec<u8>,
}

/// A line of a URL file: the URL and, for `POST`, its body.
#[derive(Debug, PartialEq, Eq)]
pub struct UrlLine {
    pub url: Url,
    pub post: Option<Vec<u8>>,
}

/// Reads siege's URL file format; `dir` is where `<file` bodies are found.
pub fn parse_url_file(text: &str, dir: &Path) -> Result<Vec<UrlLine>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("line {}: {e}", i + 1);
        let mut parts = line.splitn(3, char::is_whitespace);
        let url = parse_url(parts.next().unwrap_or_default()).map_err(at)?;
        let post = match parts.next() {
            None => None,
            Some(m) if m.eq_ignore_ascii_case("POST") => {
                let data = parts.next().unwrap_or("").trim();
                Some(match data.strip_prefix('<') {
                    Some(file) => {
                        let p = dir.join(file.trim());
                        std::fs::read(&p)
                            .map_err(|e| at(format!("cannot read {}: {e}", p.display())))?
                    }
                    None => data.as_bytes().to_vec(),
                })
            }
            Some(other) => return Err(at(format!("expected POST after the URL, got {other:?}"))),
        };
        out.push(UrlLine { url, post });
    }
    if out.is_empty() {
        return Err("no URLs in the file".into());
    }
    Ok(out)
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))
}

/// The targets of this run, requests built, addresses resolved.
pub fn load(cfg: &Config) -> Result<Vec<Target>, String> {
    let lines = match &cfg.url_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--file: cannot read {}: {e}", path.display()))?;
            let dir = path.parent().unwrap_or(Path::new("."));
            parse_url_file(&text, dir).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => vec![UrlLine {
            url: parse_url(cfg.url.as_deref().unwrap_or_default())?,
            post: None,
        }],
    };
    let mut targets = Vec::with_capacity(lines.len());
    for line in lines {
        // Through a proxy (-X) every request goes to the proxy.
        let addr = match &cfg.proxy {
            Some((host, port)) => resolve(host, *port)?,
            None => resolve(&line.url.host, line.url.port)?,
        };
        let (method, body) = match &line.post {
            Some(b) => ("POST", Some(b.as_slice())),
            None => (cfg.method.as_str(), cfg.body.as_deref()),
        };
        let request = request::build(cfg, &line.url, method, body);
        let mut h2 = request::H2Blocks::default();
        if let Some(mode) = cfg.h2 {
            match (mode, line.url.tls) {
                (H2::Tls, false) => {
                    return Err(
                        "--h2 is HTTP/2 over TLS: give https:// URLs (--h2c for http://)".into(),
                    )
                }
                (H2::Cleartext, true) => {
                    return Err(
                        "--h2c is HTTP/2 without TLS: give http:// URLs (--h2 for https://)".into(),
                    )
                }
                _ => {}
            }
            // The peer's initial stream window, which this client does not
            // wait beyond.
            if body.map_or(0, <[u8]>::len) > 65_535 {
                return Err("--h2/--h2c: request bodies over 65535 bytes are not supported".into());
            }
            h2 = request::build_h2(cfg, &line.url, method, body);
        }
        if cfg.h3 && !line.url.tls {
            return Err("--h3 is HTTP/3 over QUIC, always encrypted: give https:// URLs".into());
        }
        let h3 = if cfg.h3 {
            crate::h3::request(cfg, &line.url, method, body)
        } else {
            Vec::new()
        };
        targets.push(Target {
            h2,
            h3,
            body: if cfg.h2.is_some() {
                body.map(<[u8]>::to_vec).unwrap_or_default()
            } else {
                Vec::new()
            },
            url: line.url,
            addr,
            request,
            head: method.eq_ignore_ascii_case("HEAD"),
            body_len: body.map_or(0, |b| b.len() as u64),
        });
    }
    if targets.len() > 1 {
        for t in &mut targets {
            t.h2.first = t.h2.plain.clone();
            t.h2.again = t.h2.plain.clone();
            t.h2.table = 0;
        }
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        // (input, host, port, path, Host header)
        let ok = [
            (
                "http://127.0.0.1:8080/a/b?x=1",
                "127.0.0.1",
                8080,
                "/a/b?x=1",
                "127.0.0.1:8080",
            ),
            ("http://example.com", "example.com", 80, "/", "example.com"),
            (
                "http://example.com?q",
                "example.com",
                80,
                "/?q",
                "example.com",
            ),
            ("localhost:81/x", "localhost", 81, "/x", "localhost:81"),
            ("http://[::1]:9000/", "::1", 9000, "/", "[::1]:9000"),
            ("http://[::1]/p", "::1", 80, "/p", "[::1]"),
        ];
        for (s, host, port, path, auth) in ok {
            let u = parse_url(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(
                (
                    u.host.as_str(),
                    u.port,
                    u.path.as_str(),
                    u.authority.as_str()
                ),
                (host, port, path, auth),
                "{s}"
            );
        }
        let u = parse_url("https://h/x").unwrap();
        assert_eq!((u.tls, u.port, u.authority.as_str()), (true, 443, "h"));
        let u = parse_url("https://h:8443/").unwrap();
        assert_eq!(
            (u.tls, u.port, u.authority.as_str()),
            (true, 8443, "h:8443")
        );
        assert!(!parse_url("http://h/").unwrap().tls);
        for bad in [
            "ftp://h/",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "https://h:0/",
            "http://[::1/",
            "http://h/a b",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn url_file() {
        let dir = std::env::temp_dir().join(format!("rb-urls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("body.txt"), b"from file").unwrap();
        let text = "# comment\n\nhttp://h/a\nh:81/b POST x=1&y=2\nhttp://h/c POST <body.txt\n";
        let lines = parse_url_file(text, &dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].url.path, "/a");
        assert_eq!(lines[0].post, None);
        assert_eq!(lines[1].url.port, 81);
        assert_eq!(lines[1].post.as_deref(), Some(&b"x=1&y=2"[..]));
        assert_eq!(lines[2].post.as_deref(), Some(&b"from file"[..]));
        assert!(parse_url_file("http://h/ GET\n", &dir)
            .unwrap_err()
            .starts_with("line 1"));
        assert!(parse_url_file("# nothing\n", &dir).is_err());
    }
}
