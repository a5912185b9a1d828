//! `[[route]] alias`: nginx's alias, where the prefix is replaced by the
//! directory (root looks the whole path up beneath it), without nginx's
//! pitfalls: a prefix takes whole segments only, nothing climbs out of the
//! directory, and the per-core cache keys on the file, not the spelling.
//! Runs on every backend.

mod common;

use common::client::{Conn, Resp};
use common::{Ringside, TempDir, BACKENDS};

/// `www` is the server root; `srv/assets` is aliased twice (`/assets/`,
/// and `/bare` without a trailing slash), `srv/other` holds the same names
/// with other bytes, and `srv/assetsfoo` is the sibling an off-by-a-slash
/// alias would reach.
fn site() -> TempDir {
    let dir = TempDir::new("alias");
    dir.write("srv/assets/css/a.css", b"a.css from srv/assets\n");
    dir.write("srv/assets/index.html", b"<p>assets index</p>\n");
    dir.write("srv/assets/page.html", b"<p>plain</p>\n");
    dir.write("srv/assets/page.html.gz", b"the bytes of the .gz sibling");
    dir.write("srv/assets/.secret", b"hidden\n");
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    dir.write("srv/assets/big.bin", &big);
    dir.write("srv/other/css/a.css", b"a.css from srv/other\n");
    dir.write("srv/assetsfoo/x.txt", b"SIBLING OF THE ALIAS\n");
    dir.write("srv/acme/token", b"acme token\n");
    dir.write("www/assetsfoo/x.txt", b"from the server root\n");
    dir.write(
        "www/assets/css/a.css",
        b"what root would serve: www/assets/css/a.css\n",
    );
    std::os::unix::fs::symlink(
        dir.path().join("srv/assetsfoo"),
        dir.path().join("srv/assets/out"),
    )
    .unwrap();
    dir.write(
        "ringside.toml",
        br#"
[server]
root = "www"

[static]
cache_max_file = "64k"

[[route]]
prefix = "/assets/"
alias = "srv/assets"
cache_control = "max-age=7"

[[route]]
prefix = "/bare"
alias = "srv/assets"

[[route]]
prefix = "/other/"
alias = "srv/other"

[[route]]
prefix = "/.well-known/acme-challenge/"
alias = "srv/acme"
"#,
    );
    dir
}

fn get(c: &mut Conn, path: &str, extra: &str) -> Resp {
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n").as_bytes());
    c.read(false).expect("a response")
}

#[test]
fn alias_replaces_the_prefix() {
    let dir = site();
    for backend in BACKENDS {
        let srv = Ringside::configured(backend, &dir.path().join("ringside.toml"));
        let mut c = Conn::open(srv.addr);
        // Twice each, alternating: the second is a cache hit, and the two
        // directories' files with the same name never answer for each other.
        for _ in 0..2 {
            let r = get(&mut c, "/assets/css/a.css", "");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "a.css from srv/assets\n"),
                "{backend}"
            );
            assert_eq!(r.header("Cache-Control").as_deref(), Some("max-age=7"));
            let r = get(&mut c, "/other/css/a.css", "");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "a.css from srv/other\n"),
                "{backend}"
            );
        }
        // A prefix without its slash replaces whole segments too.
        let r = get(&mut c, "/bare/css/a.css", "");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "a.css from srv/assets\n"),
            "{backend}"
        );

        // Validators are the file's, whichever route reached it.
        let etag = get(&mut c, "/assets/css/a.css", "").header("ETag").unwrap();
        assert_eq!(
            get(&mut c, "/bare/css/a.css", "").header("ETag"),
            Some(etag.clone())
        );
        let r = get(
            &mut c,
            "/assets/css/a.css",
            &format!("If-None-Match: {etag}\r\n"),
        );
        assert_eq!(r.status, 304, "{backend}");
        assert!(r.body.is_empty());

        // The directory itself: redirected to its slash form, then its index.
        for (path, to) in [
            ("/assets", "/assets/"),
            ("/bare", "/bare/"),
            ("/assets/css", "/assets/css/"),
            ("/bare?v=1", "/bare/?v=1"),
        ] {
            let r = get(&mut c, path, "");
            assert_eq!(r.status, 301, "{backend} {path}");
            assert_eq!(
                r.header("Location").as_deref(),
                Some(to),
                "{backend} {path}"
            );
        }
        for path in ["/assets/", "/bare/"] {
            let r = get(&mut c, path, "");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "<p>assets index</p>\n"),
                "{backend} {path}"
            );
        }

        // Precompressed siblings, and a file too large for the memory cache.
        let r = get(&mut c, "/assets/page.html", "Accept-Encoding: gzip\r\n");
        assert_eq!(
            r.header("Content-Encoding").as_deref(),
            Some("gzip"),
            "{backend}"
        );
        assert_eq!(r.text(), "the bytes of the .gz sibling");
        assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
        let r = get(&mut c, "/assets/page.html", "");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "<p>plain</p>\n"),
            "{backend}"
        );
        let r = get(&mut c, "/bare/big.bin", "");
        assert_eq!(r.status, 200, "{backend}");
        assert_eq!(
            r.body,
            std::fs::read(dir.path().join("srv/assets/big.bin")).unwrap()
        );

        // A hidden prefix is the route's own spelling; below it dotfiles stay hidden.
        let r = get(&mut c, "/.well-known/acme-challenge/token", "");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "acme token\n"),
            "{backend}"
        );
        assert_eq!(get(&mut c, "/assets/.secret", "").status, 404, "{backend}");
        drop(srv);
    }
}

/// What nginx's alias gets wrong by a slash, and what a spelling might
/// sneak past: `/assets` must not take `/assetsfoo`, and no path leaves
/// the aliased directory for its sibling.
#[test]
fn alias_never_leaves_its_directory() {
    let dir = site();
    let srv = Ringside::configured("io-uring", &dir.path().join("ringside.toml"));
    #[rustfmt::skip]
    let cases: &[(&str, u16, &str)] = &[
        // Not under the prefix: the server root answers.
        ("/assetsfoo/x.txt",               200, "from the server root\n"),
        ("/barefoo/x.txt",                 404, "404 Not Found\n"),
        // Dot segments are resolved before routing, in any spelling.
        ("/bare/../assetsfoo/x.txt",       200, "from the server root\n"),
        ("/bare/%2e%2e/assetsfoo/x.txt",   200, "from the server root\n"),
        ("/assets/css/%2E%2E/css/a.css",   200, "a.css from srv/assets\n"),
        ("/%61ssets/css/a.css",            200, "a.css from srv/assets\n"),
        ("//assets//css/a.css",            200, "a.css from srv/assets\n"),
        // An escape above the top, or an encoded slash, is refused.
        ("/bare/../../srv/assetsfoo/x.txt", 400, "400 Bad Request\n"),
        ("/bare%2F..%2Fassetsfoo/x.txt",   400, "400 Bad Request\n"),
        ("/bare/..%2fassetsfoo/x.txt",     400, "400 Bad Request\n"),
        // A symlink out of the directory is not followed.
        ("/assets/out/x.txt",              403, "403 Forbidden\n"),
    ];
    for &(path, status, body) in cases {
        // Its own connection each: a 400 closes the one it came on.
        let r = get(&mut Conn::open(srv.addr), path, "");
        assert_eq!((r.status, r.text().as_str()), (status, body), "{path}");
    }
}
