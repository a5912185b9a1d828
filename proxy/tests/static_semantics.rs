//! Static files over raw sockets: validators, conditional requests, ranges,
//! directories, precompressed siblings, routes, and a docroot nothing
//! escapes. Runs on every backend.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Ringside, TempDir, BACKENDS};

struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(": ")?;
            n.eq_ignore_ascii_case(name).then(|| v.to_string())
        })
    }
}

/// One request on its own connection, read to close.
fn request(srv: &Ringside, raw: &str) -> Resp {
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let at = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    let head = String::from_utf8_lossy(&all[..at - 4]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Resp {
        status,
        head,
        body: all[at..].to_vec(),
    }
}

fn get(srv: &Ringside, path: &str, extra: &str) -> Resp {
    request(
        srv,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}\r\n"),
    )
}

fn site() -> (TempDir, TempDir) {
    let dir = TempDir::new("site");
    dir.write("hello.txt", b"hello from ringside 26 B.\n");
    dir.write("digits.txt", b"0123456789abcdefghij");
    dir.write("app.wasm2", b"\0asm");
    dir.write("docs/index.html", b"<p>docs</p>\n");
    dir.write("empty/.keep", b"");
    dir.write(".env", b"SECRET=1\n");
    dir.write("gz/page.html", b"<p>plain</p>\n");
    dir.write(
        "gz/page.html.gz",
        b"not really gzip, but the bytes of the .gz sibling",
    );
    dir.write("files/<b>&'x'.txt", b"listed\n");
    dir.write("priv/x.txt", b"private\n");
    dir.write("private.txt", b"not under /priv\n");
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
    dir.write("big.bin", &big);
    let outside = TempDir::new("outside");
    outside.write("secret.txt", b"SECRET-OUTSIDE\n");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("secret-link.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink("hello.txt", dir.path().join("inner-link.txt")).unwrap();
    let cfg = format!(
        "[server]\nroot = {:?}\n\n[static]\nmime = {{ wasm2 = \"application/x-test\" }}\ncache_max_file = \"64k\"\n\n\
         [[route]]\nprefix = \"/docs/\"\ncache_control = \"max-age=60\"\n\n[[route]]\nprefix = \"/files/\"\nlisting = true\n\n\
         [[route]]\nprefix = \"/priv\"\ncache_control = \"no-store\"\n",
        dir.path()
    );
    dir.write("ringside.toml", cfg.as_bytes());
    (dir, outside)
}

fn start(dir: &TempDir, backend: &str) -> Ringside {
    let cfg = dir.path().join("ringside.toml");
    Ringside::configured(backend, &cfg)
}

#[test]
fn validators_and_conditional_requests() {
    let (dir, _out) = site();
    for backend in BACKENDS {
        let srv = start(&dir, backend);
        let r = get(&srv, "/hello.txt", "");
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("Content-Type").as_deref(),
            Some("text/plain; charset=utf-8")
        );
        let etag = r.header("ETag").expect("etag");
        assert!(
            etag.starts_with('"') && etag.ends_with('"'),
            "strong: {etag}"
        );
        let lm = r.header("Last-Modified").expect("last-modified");
        assert_eq!(r.header("Accept-Ranges").as_deref(), Some("bytes"));
        let table: &[(String, u16)] = &[
            (format!("If-None-Match: {etag}\r\n"), 304),
            (format!("If-None-Match: \"other\", W/{etag}\r\n"), 304),
            ("If-None-Match: \"other\"\r\n".into(), 200),
            (format!("If-Modified-Since: {lm}\r\n"), 304),
            (
                "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n".into(),
                200,
            ),
            ("If-Match: \"other\"\r\n".into(), 412),
            (format!("If-Match: {etag}\r\n"), 200),
            (
                "If-Unmodified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n".into(),
                412,
            ),
            (
                format!("If-None-Match: \"x\"\r\nIf-Modified-Since: {lm}\r\n"),
                200,
            ),
        ];
        for (extra, want) in table {
            let r = get(&srv, "/hello.txt", extra);
            assert_eq!(r.status, *want, "{backend}: {extra}");
            if r.status == 304 {
                assert!(r.body.is_empty());
                assert_eq!(r.header("ETag").as_deref(), Some(etag.as_str()));
            }
        }
        // Cache-Control per route; MIME override from the config.
        assert_eq!(
            get(&srv, "/docs/", "").header("Cache-Control").as_deref(),
            Some("max-age=60")
        );
        assert_eq!(get(&srv, "/hello.txt", "").header("Cache-Control"), None);
        assert_eq!(
            get(&srv, "/app.wasm2", "")
                .header("Content-Type")
                .as_deref(),
            Some("application/x-test")
        );
        // HEAD: the same head, no body; other methods: 405 with Allow.
        let r = request(
            &srv,
            "HEAD /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        );
        assert_eq!((r.status, r.body.len()), (200, 0));
        assert_eq!(r.header("Content-Length").as_deref(), Some("300000"));
        let r = request(
            &srv,
            "DELETE /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(r.status, 405);
        assert_eq!(r.header("Allow").as_deref(), Some("GET, HEAD"));
    }
}

#[test]
fn ranges() {
    let (dir, _out) = site();
    let big = std::fs::read(dir.path().join("big.bin")).unwrap();
    for backend in BACKENDS {
        let srv = start(&dir, backend);
        for path in ["/digits.txt", "/big.bin"] {
            let whole = std::fs::read(dir.path().join(&path[1..])).unwrap();
            let len = whole.len();
            let r = get(&srv, path, "Range: bytes=2-5\r\n");
            assert_eq!(r.status, 206, "{backend} {path}");
            assert_eq!(r.header("Content-Range"), Some(format!("bytes 2-5/{len}")));
            assert_eq!(r.body, &whole[2..6]);
            let r = get(&srv, path, "Range: bytes=-3\r\n");
            assert_eq!(r.body, &whole[len - 3..]);
            let r = get(&srv, path, &format!("Range: bytes={len}-\r\n"));
            assert_eq!(r.status, 416);
            assert_eq!(r.header("Content-Range"), Some(format!("bytes */{len}")));
            // Several ranges: multipart/byteranges with each part framed.
            let r = get(&srv, path, "Range: bytes=0-1,4-6\r\n");
            assert_eq!(r.status, 206);
            let ct = r.header("Content-Type").unwrap();
            let boundary = ct
                .strip_prefix("multipart/byteranges; boundary=")
                .expect(&ct);
            let text = String::from_utf8_lossy(&r.body);
            assert!(
                text.contains(&format!("--{boundary}\r\n"))
                    && text.ends_with(&format!("--{boundary}--\r\n"))
            );
            assert!(text.contains(&format!("Content-Range: bytes 0-1/{len}")));
            assert_eq!(
                r.header("Content-Length")
                    .unwrap()
                    .parse::<usize>()
                    .unwrap(),
                r.body.len()
            );
            // Overlapping or too many ranges: refused, the whole file instead.
            let r = get(&srv, path, "Range: bytes=0-5,3-8\r\n");
            assert_eq!((r.status, r.body.len()), (200, len));
            let many: Vec<String> = (0..50).map(|_| "0-".to_string()).collect();
            let r = get(&srv, path, &format!("Range: bytes={}\r\n", many.join(",")));
            assert_eq!(r.status, 200);
            // If-Range: a stale validator gets the whole file.
            let r = get(&srv, path, "Range: bytes=0-1\r\nIf-Range: \"stale\"\r\n");
            assert_eq!(r.status, 200);
            let etag = get(&srv, path, "").header("ETag").unwrap();
            let r = get(
                &srv,
                path,
                &format!("Range: bytes=0-1\r\nIf-Range: {etag}\r\n"),
            );
            assert_eq!(r.status, 206);
        }
        assert_eq!(big.len(), 300_000);
    }
}

#[test]
fn directories_listing_and_precompressed() {
    let (dir, _out) = site();
    for backend in BACKENDS {
        let srv = start(&dir, backend);
        let r = get(&srv, "/docs?x=1", "");
        assert_eq!(
            (r.status, r.header("Location").as_deref()),
            (301, Some("/docs/?x=1"))
        );
        assert_eq!(get(&srv, "/docs/", "").body, b"<p>docs</p>\n");
        // No index and no listing: refused.
        assert_eq!(get(&srv, "/empty/", "").status, 403);
        // Listing, where the route turns it on, escapes what it shows.
        let r = get(&srv, "/files/", "");
        assert_eq!(r.status, 200);
        let page = String::from_utf8_lossy(&r.body);
        assert!(page.contains("&lt;b&gt;&amp;"), "{page}");
        assert!(!page.contains("<b>&"), "{page}");
        // Precompressed sibling by Accept-Encoding, with Vary either way.
        let r = get(&srv, "/gz/page.html", "Accept-Encoding: gzip, br;q=0.5\r\n");
        assert_eq!(r.header("Content-Encoding").as_deref(), Some("gzip"));
        assert_eq!(
            r.header("Content-Type").as_deref(),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(r.body, b"not really gzip, but the bytes of the .gz sibling");
        assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
        let r = get(&srv, "/gz/page.html", "Accept-Encoding: gzip;q=0\r\n");
        assert_eq!(r.header("Content-Encoding"), None);
        assert_eq!(r.body, b"<p>plain</p>\n");
        assert_eq!(r.header("Vary").as_deref(), Some("Accept-Encoding"));
        assert_eq!(get(&srv, "/gz/page.html", "").body, b"<p>plain</p>\n");
        // The sibling asked for by its own name is a file of its own type,
        // even right after it was served in place of page.html.
        let r = get(&srv, "/gz/page.html.gz", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.header("Content-Encoding"), None, "{backend}");
        assert_eq!(
            r.header("Content-Type").as_deref(),
            Some("application/gzip"),
            "{backend}"
        );
        // Routes match the decoded path, at segment boundaries.
        assert_eq!(
            get(&srv, "/%64ocs/", "").header("Cache-Control").as_deref(),
            Some("max-age=60")
        );
        assert_eq!(
            get(&srv, "/priv/x.txt", "")
                .header("Cache-Control")
                .as_deref(),
            Some("no-store")
        );
        assert_eq!(get(&srv, "/private.txt", "").header("Cache-Control"), None);
    }
}

#[test]
fn traversal_table() {
    let (dir, _out) = site();
    // Sent over raw sockets: curl would normalise these paths away.
    let table: &[(&str, u16)] = &[
        ("/hello.txt", 200),
        ("/inner-link.txt", 200),
        ("/../etc/passwd", 400),
        ("/docs/../../etc/passwd", 400),
        ("/%2e%2e/%2e%2e/etc/passwd", 400),
        ("/%2E%2E/etc/passwd", 400),
        ("/docs/..%2f..%2fetc%2fpasswd", 400),
        ("/..%5c..%5cetc%5cpasswd", 400),
        ("/%252e%252e/etc/passwd", 404),
        ("/hello.txt%00.html", 400),
        ("/%c0%ae%c0%ae/etc/passwd", 400),
        ("/%e0%80%ae%e0%80%ae/", 400),
        ("/%ff", 400),
        ("/.env", 404),
        ("/%2eenv", 404),
        // Dot segments within the root are resolved (RFC 3986 §5.2.4), so
        // this is /.env: hidden.
        ("/docs/.%2e/.env", 404),
        ("/escape/secret.txt", 403),
        ("/secret-link.txt", 403),
        ("/hello.txt/", 404),
        ("http://t/../etc/passwd", 400),
        ("/./hello.txt", 200),
        ("//hello.txt", 200),
        ("/docs/./../hello.txt", 200),
    ];
    let srv = start(&dir, "io-uring");
    for (path, want) in table {
        let r = get(&srv, path, "");
        assert_eq!(r.status, *want, "{path}");
        assert!(
            !String::from_utf8_lossy(&r.body).contains("SECRET"),
            "{path}"
        );
    }
}

/// A config serving `dir`, with `lines` in its `[static]` section.
fn static_config(dir: &TempDir, lines: &str) -> std::path::PathBuf {
    let text = format!("[server]\nroot = {:?}\n[static]\n{lines}", dir.path());
    dir.write("r.toml", text.as_bytes())
}

#[test]
fn changed_file_is_served_fresh_after_revalidation() {
    let dir = TempDir::new("fresh");
    let cfg = static_config(&dir, "revalidate = \"200ms\"\n");
    // A small file is cached with its bytes, a large one (past
    // cache_max_file) as an open descriptor: both must notice.
    let small = (b"version one\n".to_vec(), b"version two, longer\n".to_vec());
    let large = (vec![b'1'; 100_000], vec![b'2'; 120_000]);
    for backend in BACKENDS {
        for (v1, v2) in [&small, &large] {
            dir.write("f.txt", v1);
            let srv = Ringside::configured(backend, &cfg);
            assert!(get(&srv, "/f.txt", "").body == *v1);
            // Replaced by a new file (new inode), the way deploys do it.
            dir.write("f.txt.new", v2);
            std::fs::rename(dir.path().join("f.txt.new"), dir.path().join("f.txt")).unwrap();
            // No signal exists for "the cache looked again": poll, bounded.
            let end = Instant::now() + Duration::from_secs(10);
            loop {
                let body = get(&srv, "/f.txt", "").body;
                if body == *v2 {
                    break;
                }
                assert!(body == *v1, "{backend}: neither version");
                assert!(Instant::now() < end, "{backend}: still stale");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Files under `dir` that the process `pid` holds open.
fn open_under(pid: u32, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.starts_with(dir) && p != dir)
        .collect()
}

#[test]
fn large_files_stay_open_up_to_cache_max_open() {
    let dir = TempDir::new("fds");
    let cfg = static_config(&dir, "revalidate = \"1h\"\ncache_max_open = 2\n");
    let big = |i: u8| vec![b'a' + i; 100_000 + usize::from(i)];
    for backend in BACKENDS {
        for i in 0..4u8 {
            dir.write(&format!("f{i}.bin"), &big(i));
        }
        let srv = Ringside::configured(backend, &cfg);
        for i in 0..4u8 {
            let r = get(&srv, &format!("/f{i}.bin"), "");
            assert_eq!((r.status, r.body == big(i)), (200, true), "{backend} f{i}");
        }
        // The two used last are held open; the first two were let go.
        let mut held = open_under(srv.child.id(), dir.path());
        held.sort();
        assert_eq!(
            held,
            [dir.path().join("f2.bin"), dir.path().join("f3.bin")],
            "{backend}"
        );
        // Within the revalidation interval a held file is served from its
        // descriptor, even once deleted (as nginx's open_file_cache does);
        // one let go is looked up again.
        std::fs::remove_file(dir.path().join("f3.bin")).unwrap();
        std::fs::remove_file(dir.path().join("f0.bin")).unwrap();
        let r = get(&srv, "/f3.bin", "");
        assert_eq!((r.status, r.body == big(3)), (200, true), "{backend}");
        assert_eq!(get(&srv, "/f0.bin", "").status, 404, "{backend}");
    }
}
