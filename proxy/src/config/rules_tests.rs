//! Unit tests for `error_pages`, `intercept_errors` and `try_files`: what
//! is refused (with file, line and key), what is read, and the round trip
//! through `to_toml`.

use std::fs;
use std::path::{Path, PathBuf};

use super::error_pages::status_range;
use super::try_files::{entry, Fallback};
use super::Config;

/// A directory with the files the configs name, removed on drop; configs
/// are parsed as if read from `ringside.toml` in it.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ringside-rules-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("pages")).unwrap();
        fs::create_dir_all(d.join("public")).unwrap();
        fs::write(d.join("pages/404.html"), "<p>404</p>").unwrap();
        fs::write(d.join("pages/5xx.json"), "{}").unwrap();
        Dir(d)
    }

    fn file(&self) -> PathBuf {
        self.0.join("ringside.toml")
    }

    fn parse(&self, text: &str) -> Result<Config, String> {
        Config::parse(text, &self.file()).map_err(|e| e.to_string())
    }

    fn error(&self, text: &str) -> String {
        let e = self.parse(text).unwrap_err();
        let shown = self.file().display().to_string();
        e.strip_prefix(&shown).unwrap_or(&e).to_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const UPSTREAM: &str = "[upstream.app]\nservers = [\"127.0.0.1:9\"]\n";

#[test]
fn status_ranges_are_error_statuses() {
    assert_eq!(status_range("404"), Ok((404, 404)));
    assert_eq!(status_range("500-599"), Ok((500, 599)));
    for bad in [
        "200", "600", "4xx", "599-500", "", "404-", "-404", "399-404",
    ] {
        assert!(status_range(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn try_files_entries_are_uri_shaped_or_absolute() {
    for good in [
        "$uri",
        "$uri/",
        "$uri.html",
        "$uri/index.html",
        "/index.html",
        "/app/index.html",
        "/cache$uri.html",
    ] {
        assert_eq!(entry(good).as_deref(), Ok(good), "{good}");
    }
    for bad in [
        "index.html",
        "uri",
        "$uri$uri",
        "$args",
        "/x/$uri",
        "cache$uri",
        "$uri/../x",
        "/.git/config",
        "$uri/.env",
        "/a//b",
        "/a b",
        "/a?b",
        "/%2e",
        "$uri//",
    ] {
        assert!(entry(bad).is_err(), "{bad:?} taken");
    }
}

#[test]
fn error_pages_are_read_at_every_level() {
    let d = Dir::new("levels");
    let c = d
        .parse(&format!(
            "[server]\nerror_pages = {{ 404 = \"pages/404.html\", 500-599 = \"pages/5xx.json\" }}\n\
             [[vhost]]\nnames = [\"a.test\"]\nerror_pages = {{ 404 = \"pages/5xx.json\" }}\n\
             {UPSTREAM}\
             [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nintercept_errors = true\n\
             error_pages = {{ 503 = {{ file = \"pages/5xx.json\", status = 200 }} }}\n\
             [[route]]\nprefix = \"/s/\"\nerror_pages = {{ 400-499 = \"pages/404.html\" }}\n"
        ))
        .unwrap();
    let p = &c.error_pages;
    // Narrowest range first.
    let server: Vec<_> = p.server.iter().map(|p| (p.lo, p.hi)).collect();
    assert_eq!(server, [(404, 404), (500, 599)]);
    assert!(p.server[0].content_type.starts_with("text/html"));
    assert!(p.server[1].content_type.starts_with("application/json"));
    assert!(p.server[0].file.is_absolute());
    assert_eq!(p.vhosts.len(), 1);
    assert_eq!(p.vhosts[0][0].lo, 404);
    let (route, intercept) = &p.proxy_routes[0];
    assert!(intercept);
    assert_eq!((route[0].lo, route[0].status), (503, Some(200)));
    assert_eq!(p.static_route("/s/").unwrap()[0].hi, 499);
}

#[test]
fn error_page_mistakes_name_the_line_and_key() {
    let d = Dir::new("errors");
    let cases: &[(&str, &str)] = &[
        (
            "[server]\nerror_pages = { 200 = \"pages/404.html\" }\n",
            ":2:\0[server] error_pages: expected an error status from 400 to 599",
        ),
        (
            "[server]\nerror_pages = { 599-500 = \"pages/404.html\" }\n",
            ":2:\0[server] error_pages: the range \"599-500\" is empty",
        ),
        (
            "[server]\nerror_pages = { 404 = \"pages/nope.html\" }\n",
            ":2:\0[server] error_pages: cannot open",
        ),
        (
            "[server]\nerror_pages = { 404 = \"pages\" }\n",
            "is not a file",
        ),
        (
            "[server]\nerror_pages = {}\n",
            ":2:\0[server] error_pages: expected at least one status",
        ),
        (
            "[server]\nerror_pages = { 404 = { file = \"pages/404.html\", status = 304 } }\n",
            "[server] error_pages: expected a status from 200 to 599 that carries a body, got 304",
        ),
        (
            "[[vhost]]\nnames = [\"a.test\"]\nerror_pages = { 4040 = \"pages/404.html\" }\n",
            ":3:\0[[vhost]] error_pages: expected an error status",
        ),
        (
            "[[route]]\nprefix = \"/s/\"\nintercept_errors = true\n",
            ":3:\0[[route]] intercept_errors: only for a route to an upstream",
        ),
    ];
    for (text, want) in cases {
        let e = d.error(text);
        // ":LINE:\0MESSAGE": the line, any column, then the message.
        let taken = match want.split_once('\0') {
            Some((line, message)) => e.starts_with(line) && e.contains(message),
            None => e.contains(want),
        };
        assert!(taken, "{text}\ngave {e}\nwanted {want:?}");
    }
    // A page over the cap.
    fs::write(d.0.join("pages/big.html"), vec![b'x'; 65 * 1024]).unwrap();
    let e = d.error("[server]\nerror_pages = { 404 = \"pages/big.html\" }\n");
    assert!(e.contains("at most 65536 bytes"), "{e}");
}

#[test]
fn try_files_is_read_with_its_fallback() {
    let d = Dir::new("try");
    let c = d
        .parse(&format!(
            "{UPSTREAM}\
             [[route]]\nprefix = \"/\"\nupstream = \"app\"\nroot = \"public\"\n\
             try_files = [\"$uri\", \"$uri/index.html\", \"$uri.html\"]\n\
             [[route]]\nprefix = \"/app/\"\nalias = \"public\"\ntry_files = [\"$uri\", \"/app/index.html\"]\n\
             [[route]]\nprefix = \"/b/\"\ntry_files = [\"$uri\"]\nfallback = 410\n"
        ))
        .unwrap();
    let t = c.try_files.proxy_routes[0].as_ref().unwrap();
    assert_eq!(t.fallback, Fallback::Upstream);
    assert_eq!(
        t.root.as_deref(),
        Some(fs::canonicalize(d.0.join("public")).unwrap().as_path())
    );
    assert_eq!(t.entries.len(), 3);
    let spa = c.try_files.static_route("/app/").unwrap();
    assert_eq!(spa.fallback, Fallback::Status(404));
    assert_eq!(spa.root, None);
    assert_eq!(
        c.try_files.static_route("/b/").unwrap().fallback,
        Fallback::Status(410)
    );
}

#[test]
fn try_files_mistakes_name_the_line_and_key() {
    let d = Dir::new("try-errors");
    let cases: &[(&str, &str)] = &[
        (
            "[[route]]\nprefix = \"/\"\ntry_files = [\"index.html\"]\n",
            ":3:\0[[route]] try_files: expected \"$uri\"",
        ),
        (
            "[[route]]\nprefix = \"/\"\ntry_files = []\n",
            ":3:\0[[route]] try_files: expected at least one entry",
        ),
        (
            "[[route]]\nprefix = \"/\"\ntry_files = [\"$uri\"]\nfallback = \"@upstream\"\n",
            ":4:\0[[route]] fallback: \"@upstream\" names nothing: this route has no upstream",
        ),
        (
            "[[route]]\nprefix = \"/\"\ntry_files = [\"$uri\"]\nfallback = \"@app\"\n",
            ":4:\0[[route]] fallback: \"@app\" names nothing",
        ),
        (
            "[[route]]\nprefix = \"/\"\ntry_files = [\"$uri\"]\nfallback = 200\n",
            ":4:\0[[route]] fallback: expected \"@upstream\" or a status from 400 to 599, got 200",
        ),
        (
            "[[route]]\nprefix = \"/\"\nfallback = 404\n",
            ":3:\0[[route]] fallback: only with try_files",
        ),
        (
            "[[route]]\nprefix = \"/app/\"\nalias = \"public\"\ntry_files = [\"$uri\", \"/index.html\"]\n",
            ":4:\0[[route]] try_files: \"/index.html\": beneath alias",
        ),
        (
            "[upstream.app]\nservers = [\"127.0.0.1:9\"]\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\nroot = \"public\"\n",
            ":6:\0[[route]] root: only for a static route or one to a FastCGI upstream",
        ),
        (
            "[upstream.app]\nservers = [\"127.0.0.1:9\"]\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\nroot = \"nope\"\ntry_files = [\"$uri\"]\n",
            ":6:\0[[route]] root: cannot open",
        ),
    ];
    for (text, want) in cases {
        let e = d.error(text);
        // ":LINE:\0MESSAGE": the line, any column, then the message.
        let taken = match want.split_once('\0') {
            Some((line, message)) => e.starts_with(line) && e.contains(message),
            None => e.contains(want),
        };
        assert!(taken, "{text}\ngave {e}\nwanted {want:?}");
    }
}

#[test]
fn the_rules_round_trip_through_to_toml() {
    let d = Dir::new("round-trip");
    let c = d
        .parse(&format!(
            "[server]\nerror_pages = {{ 404 = \"pages/404.html\", 500-599 = \"pages/5xx.json\" }}\n\
             [[vhost]]\nnames = [\"a.test\"]\nerror_pages = {{ 404 = \"pages/5xx.json\" }}\n\
             {UPSTREAM}\
             [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nintercept_errors = true\n\
             error_pages = {{ 503 = {{ file = \"pages/5xx.json\", status = 200 }} }}\n\
             [[route]]\nprefix = \"/\"\nupstream = \"app\"\nroot = \"public\"\n\
             try_files = [\"$uri\", \"$uri/\", \"$uri.html\"]\nfallback = 404\n\
             [[route]]\nprefix = \"/s/\"\nalias = \"public\"\nerror_pages = {{ 400-499 = \"pages/404.html\" }}\n\
             try_files = [\"$uri\", \"/s/index.html\"]\n"
        ))
        .unwrap();
    let text = c.to_toml();
    for line in [
        "intercept_errors = true",
        "try_files = [\"$uri\", \"$uri/\", \"$uri.html\"]",
        "fallback = 404",
        "fallback = \"@upstream\"",
    ] {
        // The SPA route has no upstream: its fallback is a status.
        if line.contains("@upstream") {
            assert!(!text.contains(line), "{text}");
            continue;
        }
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    let back = crate::config::tests::written_back(&c, &d.file());
    assert_eq!(back.error_pages, c.error_pages, "{text}");
    assert_eq!(back.try_files, c.try_files, "{text}");
    assert_eq!(back.proxy, c.proxy, "{text}");
}

#[test]
fn a_config_without_the_rules_has_none() {
    let c = Config::parse("", Path::new("ringside.toml")).unwrap();
    assert!(c.error_pages.is_empty());
    assert!(c.try_files.proxy_routes.is_empty() && c.try_files.static_routes.is_empty());
}

#[test]
fn the_modules_examples_are_valid() {
    let d = Dir::new("docs");
    for f in ["errors/404.html", "errors/5xx.html", "errors/busy.json"] {
        fs::create_dir_all(d.0.join("errors")).unwrap();
        fs::write(d.0.join(f), "<p>error</p>").unwrap();
    }
    fs::create_dir_all(d.0.join("dist")).unwrap();
    for (module, src) in [
        ("error_pages.rs", include_str!("error_pages.rs")),
        ("try_files.rs", include_str!("try_files.rs")),
    ] {
        let doc: Vec<&str> = src
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        let doc = doc.join("\n");
        let block = doc
            .split("```toml\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap_or_else(|| panic!("{module}: no example"));
        d.parse(block)
            .unwrap_or_else(|e| panic!("{module}'s example: {e}\n{block}"));
    }
}
