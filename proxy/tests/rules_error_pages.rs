//! Custom error pages through the real binary, on every backend, over
//! HTTP/1.1 and h2 (curl): the static handler's 404 and a request no route
//! takes, an upstream's 503 with and without `intercept_errors`, and a
//! page deleted after start falling back to the built-in answer.

mod common;

use std::process::Command;

use common::origin::Origin;
use common::{Ringside, TempDir, BACKENDS};

/// (status, head, body) of a curl request; `h2`: prior knowledge.
fn fetch(h2: bool, url: &str, extra: &[&str]) -> (u16, String, Vec<u8>) {
    common::h2::fetch_as(h2, url, extra)
}

/// A POST of `len` bytes from curl's stdin, so that it has no length
/// (chunked over HTTP/1.1): (status, head, body).
fn upload(h2: bool, url: &str, len: usize) -> (u16, String, Vec<u8>) {
    use std::io::Write;
    let mut child = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-D",
            "-",
            "-X",
            "POST",
            "-T",
            "-",
        ])
        .arg(if h2 {
            "--http2-prior-knowledge"
        } else {
            "--http1.1"
        })
        .arg(url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("curl must be installed (run scripts/test.sh)");
    let mut stdin = child.stdin.take().unwrap();
    // The server may answer (and close) before it read all: curl then
    // stops reading, and a write may fail; the answer is what counts.
    let _ = stdin.write_all(&vec![b'x'; len]);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let mut rest = &out.stdout[..];
    // Past any interim (1xx) heads to the final one.
    loop {
        let at = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| {
                panic!(
                    "{url}: no response head: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            + 4;
        let head = String::from_utf8_lossy(&rest[..at]).into_owned();
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        if status >= 200 {
            return (status, head, rest[at..].to_vec());
        }
        rest = &rest[at..];
    }
}

fn header(head: &str, name: &str) -> Option<String> {
    common::h2::header(head, name)
}

const NOT_FOUND_PAGE: &str = "<h1>nothing here</h1>\n";
const BUSY_PAGE: &str = "{\"error\":\"busy\"}\n";

/// A site: static files, an upstream route that intercepts and one that
/// does not, and a named host with one route (so other paths on it are
/// answered by no route).
fn site(dir: &TempDir, origin: &Origin, revalidate: &str) -> std::path::PathBuf {
    dir.write("www/hello.txt", b"hello\n");
    dir.write("pages/404.html", NOT_FOUND_PAGE.as_bytes());
    dir.write("pages/busy.json", BUSY_PAGE.as_bytes());
    dir.write(
        "ringside.toml",
        format!(
            r#"
[server]
root = "www"
error_pages = {{ 404 = "pages/404.html" }}

[static]
revalidate = "{revalidate}"

[upstream.app]
servers = ["{addr}"]
retries = 0

[[route]]
prefix = "/intercepted/"
upstream = "app"
strip_prefix = true
intercept_errors = true
error_pages = {{ 500-599 = "pages/busy.json" }}

[[route]]
prefix = "/passed/"
upstream = "app"
strip_prefix = true
error_pages = {{ 500-599 = "pages/busy.json" }}

[[route]]
prefix = "/only/"
upstream = "app"
host = ["api.test"]
"#,
            addr = origin.addr
        )
        .as_bytes(),
    )
}

#[test]
fn error_pages_stand_in_for_404s_and_an_intercepted_upstream_503() {
    let origin = Origin::start("o1");
    for backend in BACKENDS {
        let dir = TempDir::new("error-pages");
        let cfg = site(&dir, &origin, "1s");
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            // The static handler's own 404.
            let (status, head, body) = fetch(h2, &format!("{base}/missing.txt"), &[]);
            assert_eq!(status, 404, "{what}");
            assert_eq!(body, NOT_FOUND_PAGE.as_bytes(), "{what}");
            assert!(
                header(&head, "content-type").is_some_and(|t| t.starts_with("text/html")),
                "{what}: {head}"
            );
            // HEAD: the page's head, no body (curl counts what came).
            let head_only = ["-I", "-o", "/dev/null", "-w", "%{size_download}"];
            let (status, head, body) = fetch(h2, &format!("{base}/missing.txt"), &head_only);
            assert_eq!(status, 404, "{what}");
            assert_eq!(body, b"0", "{what}");
            assert_eq!(
                header(&head, "content-length").as_deref(),
                Some(NOT_FOUND_PAGE.len().to_string().as_str()),
                "{what}"
            );
            // A file that exists is untouched.
            let (status, _, body) = fetch(h2, &format!("{base}/hello.txt"), &[]);
            assert_eq!((status, &body[..]), (200, &b"hello\n"[..]), "{what}");
            // No route on a named host.
            let (status, _, body) =
                fetch(h2, &format!("{base}/elsewhere"), &["-H", "Host: api.test"]);
            assert_eq!(status, 404, "{what}");
            assert_eq!(body, NOT_FOUND_PAGE.as_bytes(), "{what}");
            // The upstream's 503, intercepted: the page, the status kept,
            // nothing of the upstream's body.
            let (status, head, body) = fetch(h2, &format!("{base}/intercepted/status/503"), &[]);
            assert_eq!(status, 503, "{what}");
            assert_eq!(body, BUSY_PAGE.as_bytes(), "{what}");
            assert!(
                header(&head, "content-type").is_some_and(|t| t.starts_with("application/json")),
                "{what}: {head}"
            );
            assert!(
                !String::from_utf8_lossy(&body).contains("from o1"),
                "{what}"
            );
            // An intercepting route's success passes as it is.
            let (status, _, body) = fetch(h2, &format!("{base}/intercepted/ok"), &[]);
            assert_eq!(status, 200, "{what}");
            assert_ne!(body, BUSY_PAGE.as_bytes(), "{what}");
            // Without intercept_errors the upstream's own 503 passes.
            let (status, _, body) = fetch(h2, &format!("{base}/passed/status/503"), &[]);
            assert_eq!(status, 503, "{what}");
            assert_eq!(body, b"status 503 from o1", "{what}");
        }
        // The connection an intercepted body was dropped on stays in step:
        // the next request on it gets its own answer.
        let mut c = common::client::Conn::open(rs.addr);
        let r = c.get("/intercepted/status/503");
        assert_eq!(r.status, 503, "{backend}");
        assert_eq!(r.body, BUSY_PAGE.as_bytes(), "{backend}");
        let r = c.get("/intercepted/ok");
        assert_eq!(r.status, 200, "{backend}");
        drop(rs);
    }
}

#[test]
fn a_page_changed_after_start_is_read_again_and_a_deleted_one_gives_the_built_in() {
    let origin = Origin::start("o2");
    for backend in BACKENDS {
        let dir = TempDir::new("error-pages-gone");
        let cfg = site(&dir, &origin, "1ms");
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        let (status, _, body) = fetch(false, &format!("{base}/missing.txt"), &[]);
        assert_eq!(
            (status, &body[..]),
            (404, NOT_FOUND_PAGE.as_bytes()),
            "{backend}"
        );
        // Each core looks at the file again once `revalidate` passed: ask
        // until it has, within a bound. A changed page is read again.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        dir.write("pages/404.html", b"<h1>changed, and longer</h1>\n");
        loop {
            let (status, _, body) = fetch(false, &format!("{base}/missing.txt"), &[]);
            assert_eq!(status, 404, "{backend}");
            if body != NOT_FOUND_PAGE.as_bytes() {
                assert_eq!(body, b"<h1>changed, and longer</h1>\n", "{backend}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{backend}: the old page stayed"
            );
        }
        std::fs::remove_file(dir.path().join("pages/404.html")).unwrap();
        loop {
            let (status, _, body) = fetch(false, &format!("{base}/missing.txt"), &[]);
            assert_eq!(status, 404, "{backend}");
            if body != b"<h1>changed, and longer</h1>\n" {
                assert_eq!(body, b"404 Not Found\n", "{backend}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{backend}: the page stayed"
            );
        }
        for h2 in [false, true] {
            let (status, _, body) = fetch(h2, &format!("{base}/missing.txt"), &[]);
            assert_eq!(
                (status, &body[..]),
                (404, &b"404 Not Found\n"[..]),
                "{backend} h2={h2}"
            );
            // The upstream's page is still there.
            let (status, _, body) = fetch(h2, &format!("{base}/intercepted/status/502"), &[]);
            assert_eq!(
                (status, &body[..]),
                (502, BUSY_PAGE.as_bytes()),
                "{backend} h2={h2}"
            );
        }
        drop(rs);
    }
}

#[test]
fn an_intercepted_response_is_never_stored_by_the_cache() {
    use common::cache_origin::{config, Answer, CacheOrigin};
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        origin.set(
            "/gone",
            Answer::ok("the origin's own 404")
                .status(404)
                .header("Cache-Control", "max-age=60"),
        );
        origin.set(
            "/kept",
            Answer::ok("kept").header("Cache-Control", "max-age=60"),
        );
        let dir = TempDir::new("error-pages-cache");
        dir.write("p/404.html", NOT_FOUND_PAGE.as_bytes());
        let text = config(origin.addr, "", "")
            + "intercept_errors = true\nerror_pages = { 404 = \"p/404.html\" }\n";
        let cfg = dir.write("r.toml", text.as_bytes());
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        let mut asked = 0;
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            for _ in 0..2 {
                let (status, _, body) = fetch(h2, &format!("{base}/gone"), &[]);
                asked += 1;
                assert_eq!(
                    (status, &body[..]),
                    (404, NOT_FOUND_PAGE.as_bytes()),
                    "{what}"
                );
                // Each went to the origin: neither the page nor the
                // origin's 404 was stored in its place.
                assert_eq!(origin.count("/gone"), asked, "{what}");
            }
            // The cache itself stores what it may on this route.
            let (_, _, body) = fetch(h2, &format!("{base}/kept"), &[]);
            assert_eq!(body, b"kept", "{what}");
            assert_eq!(origin.count("/kept"), 1, "{what}");
        }
        drop(rs);
    }
}

#[test]
fn ringsides_own_answers_take_their_pages_by_route_vhost_and_server() {
    // A port nothing listens on: the upstream's connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = closed.local_addr().unwrap();
    drop(closed);
    let origin = Origin::start("o3");
    for backend in BACKENDS {
        let dir = TempDir::new("error-pages-own");
        dir.write("www/x.txt", b"x\n");
        dir.write("pages/4xx.html", b"<p>4xx</p>\n");
        dir.write("pages/502.txt", b"down\n");
        dir.write("pages/v404.html", b"<p>vhost 404</p>\n");
        let cfg = dir.write(
            "ringside.toml",
            format!(
                r#"
[server]
root = "www"
error_pages = {{ 400-499 = "pages/4xx.html", 502 = "pages/502.txt" }}

[[vhost]]
names = ["v.test"]
error_pages = {{ 404 = "pages/v404.html" }}

[[rate_limit]]
name = "one"
key = "route"
rate = "1/h"
burst = 1

[upstream.down]
servers = ["{down}"]
retries = 0
max_fails = 0

[[route]]
prefix = "/down/"
upstream = "down"

[[route]]
prefix = "/private/"
deny = ["all"]

[[route]]
prefix = "/limited/"
rate_limit = "one"

[limits]
max_body = "1k"

[upstream.up]
servers = ["{up}"]

[[route]]
prefix = "/up/"
upstream = "up"
"#,
                up = origin.addr
            )
            .as_bytes(),
        );
        let rs = Ringside::configured(backend, &cfg);
        let base = format!("http://{}", rs.addr);
        // The bucket's one token goes to the first request.
        let (status, _, _) = fetch(false, &format!("{base}/limited/x.txt"), &[]);
        assert_eq!(status, 404, "{backend}");
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let (status, _, body) = fetch(h2, &format!("{base}/private/x.txt"), &[]);
            assert_eq!((status, &body[..]), (403, &b"<p>4xx</p>\n"[..]), "{what}");
            let (status, head, body) = fetch(h2, &format!("{base}/limited/x.txt"), &[]);
            assert_eq!((status, &body[..]), (429, &b"<p>4xx</p>\n"[..]), "{what}");
            assert!(header(&head, "retry-after").is_some(), "{what}: {head}");
            let (status, head, body) = fetch(h2, &format!("{base}/down/x"), &[]);
            assert_eq!((status, &body[..]), (502, &b"down\n"[..]), "{what}");
            assert!(
                header(&head, "content-type").is_some_and(|t| t.starts_with("text/plain")),
                "{what}: {head}"
            );
            // The vhost's 404 before the server's; its other statuses fall
            // through to the server's.
            let v = ["-H", "Host: v.test"];
            let (status, _, body) = fetch(h2, &format!("{base}/nope"), &v);
            assert_eq!(
                (status, &body[..]),
                (404, &b"<p>vhost 404</p>\n"[..]),
                "{what}"
            );
            let (status, _, body) = fetch(h2, &format!("{base}/private/x.txt"), &v);
            assert_eq!((status, &body[..]), (403, &b"<p>4xx</p>\n"[..]), "{what}");
            let (status, _, body) = fetch(h2, &format!("{base}/nope"), &[]);
            assert_eq!((status, &body[..]), (404, &b"<p>4xx</p>\n"[..]), "{what}");
            // A body over max_body, found out while it streams upstream.
            // Over HTTP/1.1 only: over h2 the built-in 413 to a streamed
            // upload is sometimes lost too (curl: "Empty reply from
            // server"), pages or not.
            if !h2 {
                let (status, _, body) = upload(h2, &format!("{base}/up/echo"), 4096);
                assert_eq!((status, &body[..]), (413, &b"<p>4xx</p>\n"[..]), "{what}");
            }
        }
        drop(rs);
    }
}

#[test]
fn a_reload_reads_the_pages_again_and_a_missing_one_keeps_the_old_config() {
    for backend in BACKENDS {
        let dir = TempDir::new("error-pages-reload");
        dir.write("www/x.txt", b"x\n");
        dir.write("pages/a.html", b"<p>a</p>\n");
        let write = |page: &str| {
            dir.write(
                "ringside.toml",
                format!("[server]\nroot = \"www\"\nerror_pages = {{ 404 = \"pages/{page}\" }}\n")
                    .as_bytes(),
            )
        };
        let cfg = write("a.html");
        let mut rs = Ringside::with_admin_on(backend, 1, &cfg);
        let base = format!("http://{}", rs.addr);
        let (_, _, body) = fetch(false, &format!("{base}/nope"), &[]);
        assert_eq!(body, b"<p>a</p>\n", "{backend}");
        // A page that does not exist: refused, the old one keeps serving.
        write("b.html");
        rs.signal(libc::SIGHUP);
        rs.wait_reloads("failed", 1);
        for h2 in [false, true] {
            let (_, _, body) = fetch(h2, &format!("{base}/nope"), &[]);
            assert_eq!(body, b"<p>a</p>\n", "{backend} h2={h2}");
        }
        // Once it exists, the reload takes it.
        dir.write("pages/b.html", b"<p>b</p>\n");
        rs.signal(libc::SIGHUP);
        rs.wait_reloads("ok", 1);
        for h2 in [false, true] {
            let (status, _, body) = fetch(h2, &format!("{base}/nope"), &[]);
            assert_eq!(
                (status, &body[..]),
                (404, &b"<p>b</p>\n"[..]),
                "{backend} h2={h2}"
            );
        }
        let log = rs.stop();
        assert!(log.contains("[server] error_pages"), "{backend}: {log}");
    }
}
