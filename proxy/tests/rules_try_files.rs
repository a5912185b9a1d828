//! `try_files` through the real binary, on every backend, over HTTP/1.1
//! and h2 (curl): a Rails layout (files under public/ answered by
//! ringside, the rest by a Ruby WEBrick app server) and a single-page app
//! (a deep link gets the index, an asset is itself, a missing asset 404s
//! on the assets' own route).

mod common;

use common::{Ringside, TempDir, BACKENDS};

/// (status, head, body) of a curl request; `h2`: prior knowledge.
fn fetch(h2: bool, url: &str) -> (u16, String, Vec<u8>) {
    common::h2::fetch_as(h2, url, &[])
}

fn header(head: &str, name: &str) -> Option<String> {
    common::h2::header(head, name)
}

#[test]
fn a_rails_layout_serves_public_files_and_hands_the_rest_to_the_app() {
    let (_app, port) = common::script::start("ruby", "webrick_app.rb", &[]);
    for backend in BACKENDS {
        let dir = TempDir::new("try-files-rails");
        dir.write("app/public/robots.txt", b"User-agent: *\n");
        dir.write("app/public/about.html", b"<p>about</p>\n");
        dir.write("app/public/docs/index.html", b"<p>docs</p>\n");
        dir.write("app/public/.env", b"SECRET=1\n");
        let cfg = dir.write(
            "ringside.toml",
            format!(
                r#"
[upstream.rails]
servers = ["127.0.0.1:{port}"]

[[route]]
prefix = "/"
upstream = "rails"
root = "app/public"
try_files = ["$uri", "$uri/index.html", "$uri.html"]
"#
            )
            .as_bytes(),
        );
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            // A file under public/: ringside's, with the static files'
            // validators; WEBrick never sets an ETag.
            let (status, head, body) = fetch(h2, &format!("{base}/robots.txt"));
            assert_eq!(
                (status, &body[..]),
                (200, &b"User-agent: *\n"[..]),
                "{what}"
            );
            assert!(header(&head, "etag").is_some(), "{what}: {head}");
            assert!(header(&head, "content-type").is_some_and(|t| t.starts_with("text/plain")));
            // `$uri.html` and `$uri/index.html`.
            let (status, _, body) = fetch(h2, &format!("{base}/about"));
            assert_eq!((status, &body[..]), (200, &b"<p>about</p>\n"[..]), "{what}");
            let (status, _, body) = fetch(h2, &format!("{base}/docs/"));
            assert_eq!((status, &body[..]), (200, &b"<p>docs</p>\n"[..]), "{what}");
            // The rest: the app's.
            let (status, head, body) = fetch(h2, &format!("{base}/hello"));
            assert_eq!(
                (status, &body[..]),
                (200, &b"hello from webrick"[..]),
                "{what}"
            );
            assert!(header(&head, "etag").is_none(), "{what}: {head}");
            // A hidden file is never served from public/: the app answers.
            let (status, _, body) = fetch(h2, &format!("{base}/.env"));
            assert_ne!(body, b"SECRET=1\n", "{what}");
            assert_eq!(status, 404, "{what}");
            // Nor anything outside it.
            let (_, _, body) = fetch(h2, &format!("{base}/%2e%2e/ringside.toml"));
            assert!(
                !String::from_utf8_lossy(&body).contains("upstream"),
                "{what}"
            );
        }
        drop(rs);
    }
}

#[test]
fn a_single_page_app_gets_its_index_for_deep_links() {
    for backend in BACKENDS {
        let dir = TempDir::new("try-files-spa");
        let index = b"<!doctype html><div id=app></div>\n";
        dir.write("dist/index.html", index);
        dir.write("dist/assets/app.js", b"console.log(1)\n");
        dir.write("dist/robots.txt", b"ok\n");
        let cfg = dir.write(
            "ringside.toml",
            br#"
[[route]]
prefix = "/app/"
alias = "dist"
try_files = ["$uri", "/app/index.html"]

[[route]]
prefix = "/app/assets/"
alias = "dist/assets"
"#,
        );
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            for deep in ["/app/users/7", "/app/", "/app/settings/profile"] {
                let (status, head, body) = fetch(h2, &format!("{base}{deep}"));
                assert_eq!((status, &body[..]), (200, &index[..]), "{what} {deep}");
                assert!(
                    header(&head, "content-type").is_some_and(|t| t.starts_with("text/html")),
                    "{what}: {head}"
                );
            }
            let (status, _, body) = fetch(h2, &format!("{base}/app/robots.txt"));
            assert_eq!((status, &body[..]), (200, &b"ok\n"[..]), "{what}");
            let (status, head, body) = fetch(h2, &format!("{base}/app/assets/app.js"));
            assert_eq!(
                (status, &body[..]),
                (200, &b"console.log(1)\n"[..]),
                "{what}"
            );
            assert!(
                header(&head, "content-type").is_some_and(|t| t.contains("javascript")),
                "{what}: {head}"
            );
            // The assets' own route has no try_files: a missing one 404s.
            let (status, _, body) = fetch(h2, &format!("{base}/app/assets/x.js"));
            assert_eq!(status, 404, "{what}");
            assert_ne!(body, &index[..], "{what}");
        }
        drop(rs);
    }
}

#[test]
fn a_static_route_answers_its_fallback_status_with_its_error_page() {
    for backend in BACKENDS {
        let dir = TempDir::new("try-files-status");
        dir.write("www/a.txt", b"a\n");
        dir.write("gone.html", b"<p>gone</p>\n");
        let cfg = dir.write(
            "ringside.toml",
            br#"
[[route]]
prefix = "/"
root = "www"
try_files = ["$uri"]
fallback = 410
error_pages = { 410 = "gone.html" }
"#,
        );
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let (status, _, body) = fetch(h2, &format!("{base}/a.txt"));
            assert_eq!((status, &body[..]), (200, &b"a\n"[..]), "{what}");
            let (status, _, body) = fetch(h2, &format!("{base}/b.txt"));
            assert_eq!((status, &body[..]), (410, &b"<p>gone</p>\n"[..]), "{what}");
        }
        drop(rs);
    }
}

#[test]
fn a_fastcgi_front_controller_runs_for_what_is_not_a_file() {
    let fpm = common::phpfpm::PhpFpm::start_tcp(2);
    let dir = TempDir::new("try-files-fcgi");
    dir.write(
        "app/index.php",
        b"<?php echo 'front:' . $_SERVER['SCRIPT_NAME'] . ' ' . $_SERVER['REQUEST_URI'];",
    );
    dir.write(
        "app/status.php",
        b"<?php http_response_code((int) $_GET['code']); echo 'php body';",
    );
    dir.write("app/style.css", b"p{}\n");
    dir.write("pages/5xx.html", b"<p>down</p>\n");
    let cfg = dir.write(
        "ringside.toml",
        format!(
            r#"
[upstream.php]
protocol = "fastcgi"
servers = ["{}"]

[[route]]
prefix = "/"
upstream = "php"
root = "app"
try_files = ["$uri", "$uri/", "/index.php"]
intercept_errors = true
error_pages = {{ 500-599 = "pages/5xx.html" }}
"#,
            fpm.listen
        )
        .as_bytes(),
    );
    for backend in BACKENDS {
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let (status, head, body) = fetch(h2, &format!("{base}/style.css"));
            assert_eq!((status, &body[..]), (200, &b"p{}\n"[..]), "{what}");
            assert!(header(&head, "etag").is_some(), "{what}: {head}");
            let (status, _, body) = fetch(h2, &format!("{base}/blog/post-1?x=1"));
            assert_eq!(status, 200, "{what}");
            assert_eq!(body, b"front:/index.php /blog/post-1?x=1", "{what}");
            // A script that exists runs as itself; its 503 gets the page.
            let (status, _, body) = fetch(h2, &format!("{base}/status.php?code=200"));
            assert_eq!((status, &body[..]), (200, &b"php body"[..]), "{what}");
            let (status, _, body) = fetch(h2, &format!("{base}/status.php?code=503"));
            assert_eq!((status, &body[..]), (503, &b"<p>down</p>\n"[..]), "{what}");
        }
        drop(rs);
    }
}
