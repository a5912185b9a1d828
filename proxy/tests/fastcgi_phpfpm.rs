//! `ringside` in front of a real php-fpm (Debian's, started by the test on
//! a TCP port or a unix socket with `deploy/bench/php-fpm.conf`), on every
//! I/O backend: scripts, bodies both ways, status and headers set by PHP,
//! CGI variables, script stderr, and php-fpm restarted under a running
//! server. `fastcgi_capacity.rs` shows the kept connections within php-fpm's
//! children.

mod common;

use std::time::Duration;

use common::client::{Conn, Resp};
use common::phpfpm::PhpFpm;
use common::{Ringside, TempDir, BACKENDS};

fn post(c: &mut Conn, path: &str, body: &[u8]) -> Resp {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    c.send(head.as_bytes());
    c.send(body);
    c.read(false).expect("response to POST")
}

/// Byte `i` of stream.php's body.
fn stream_byte(i: usize) -> u8 {
    const BLOCK: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-\n";
    BLOCK[i % 64]
}

/// `KEY=value` lines from headers.php, as pairs.
fn vars(r: &Resp) -> Vec<(String, String)> {
    r.text()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn var(vars: &[(String, String)], key: &str) -> String {
    vars.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("{key} missing from {vars:?}"))
}

/// Everything the "must show" list asks of one php-fpm, through
/// one ringside on `backend`.
fn serves_scripts(fpm: &PhpFpm, backend: &str) {
    let dir = TempDir::new("fcgi-scripts");
    let cfg = fpm.ringside_config(&dir, "max_conns = 4");
    let srv = Ringside::configured(backend, &cfg);
    assert!(srv.banner.contains("FastCGI"), "{}", srv.banner);
    let mut c = Conn::open(srv.addr);

    let r = c.get("/hello.php");
    assert_eq!(
        (r.status, r.text().as_str()),
        (200, "Hello, World!"),
        "{backend}"
    );
    assert!(r.complete);

    // A 1 MiB body out as STDIN and back as STDOUT, byte for byte.
    let body: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(31) >> 3) as u8)
        .collect();
    let r = post(&mut c, "/echo.php", &body);
    assert_eq!(r.status, 200, "{backend}: {}", r.head);
    assert!(r.complete && r.body == body, "{backend}: echo differs");

    // Status and headers set by PHP.
    let r = c.get("/status.php?redirect=1");
    assert_eq!(r.status, 302, "{backend}: {}", r.head);
    assert_eq!(r.header("location").as_deref(), Some("/elsewhere"));
    let r = c.get("/status.php?code=404");
    assert_eq!(
        (r.status, r.text().as_str()),
        (404, "not here"),
        "{backend}"
    );

    // 10 MiB streamed out.
    let r = c.get("/stream.php?mb=10");
    assert_eq!(r.status, 200, "{backend}");
    assert!(r.complete, "{backend}: stream cut");
    assert_eq!(r.body.len(), 10 << 20, "{backend}");
    assert!(
        r.body.iter().enumerate().all(|(i, &b)| b == stream_byte(i)),
        "{backend}: stream content differs"
    );

    // Index files and the PATH_INFO split.
    assert_eq!(c.get("/").text(), "index", "{backend}");
    assert_eq!(c.get("/sub/").text(), "sub index", "{backend}");
    let r = c.read_after(
        "GET /headers.php/extra/x?a=1&b=2 HTTP/1.1\r\nHost: t\r\nX-Test: yes\r\nProxy: evil\r\n\r\n",
    );
    let r = r.expect("response");
    assert_eq!(r.status, 200, "{backend}: {}", r.text());
    let v = vars(&r);
    let root = PhpFpm::docroot();
    assert_eq!(var(&v, "SCRIPT_NAME"), "/headers.php");
    assert_eq!(
        var(&v, "SCRIPT_FILENAME"),
        root.join("headers.php").to_str().unwrap()
    );
    assert_eq!(var(&v, "PATH_INFO"), "/extra/x");
    assert_eq!(var(&v, "QUERY_STRING"), "a=1&b=2");
    assert_eq!(var(&v, "REQUEST_URI"), "/headers.php/extra/x?a=1&b=2");
    assert_eq!(var(&v, "REQUEST_METHOD"), "GET");
    assert_eq!(var(&v, "DOCUMENT_ROOT"), root.to_str().unwrap());
    assert_eq!(var(&v, "SERVER_PROTOCOL"), "HTTP/1.1");
    assert_eq!(var(&v, "GATEWAY_INTERFACE"), "CGI/1.1");
    assert_eq!(var(&v, "REMOTE_ADDR"), "127.0.0.1");
    assert_eq!(var(&v, "HTTP_X_TEST"), "yes");
    assert_eq!(var(&v, "HTTP_PROXY"), "unset", "httpoxy");

    // A missing script is a 404 from ringside: php-fpm is never asked.
    drop(c);
    let before = stop_and_count(srv, fpm);
    let srv = Ringside::configured(backend, &cfg);
    let mut c = Conn::open(srv.addr);
    let r = c.get("/missing.php");
    assert_eq!(r.status, 404, "{backend}");
    let r = c.get("/sub/missing.php/extra");
    assert_eq!(r.status, 404, "{backend}");

    // Script stderr: a PHP warning comes over FastCGI and lands in
    // ringside's log with the script's name; php://stderr lands in
    // php-fpm's own log.
    let tag = format!("warned-{backend}-{}", std::process::id());
    assert_eq!(c.get(&format!("/warn.php?msg={tag}")).text(), "warned");
    let tag2 = format!("logged-{backend}-{}", std::process::id());
    assert_eq!(c.get(&format!("/stderr.php?msg={tag2}")).text(), "logged");
    fpm.wait_for_log(&tag2, Duration::from_secs(10));
    drop(c);
    let log = srv.stop();
    let line = log
        .lines()
        .find(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("{backend}: {tag} not in ringside's log:\n{log}"));
    assert!(line.contains("/warn.php"), "no script name in {line:?}");
    // Two requests reached php-fpm (warn and stderr); the 404s did not.
    // php-fpm also counts the FCGI_GET_VALUES that opened the kept
    // connection, and its wait after the last request.
    let after = fpm.accepted_conn_excluding_probes();
    assert_eq!(
        after - before,
        1 + 2 + 1,
        "{backend}: php-fpm asked for a missing script"
    );
}

/// Stops `srv` (closing its kept connections, so php-fpm's children are
/// free for the status page) and returns php-fpm's `accepted conn`.
fn stop_and_count(srv: Ringside, fpm: &PhpFpm) -> u64 {
    srv.stop();
    fpm.accepted_conn_excluding_probes()
}

#[test]
fn scripts_over_tcp() {
    let fpm = PhpFpm::start_tcp(4);
    for backend in BACKENDS {
        serves_scripts(&fpm, backend);
    }
}

#[test]
fn scripts_over_a_unix_socket() {
    let fpm = PhpFpm::start_unix(4);
    for backend in BACKENDS {
        serves_scripts(&fpm, backend);
    }
}

/// php-fpm stopped and started again under a running ringside: the kept
/// connections die with it, and requests afterwards succeed, replayable or
/// not.
#[test]
fn php_fpm_restarted_mid_run() {
    for unix in [false, true] {
        let mut fpm = PhpFpm::start_with(unix, 2, "");
        let dir = TempDir::new("fcgi-restart");
        let cfg = fpm.ringside_config(&dir, "max_conns = 2");
        let srv = Ringside::configured("io-uring", &cfg);
        let mut c = Conn::open(srv.addr);
        for _ in 0..5 {
            assert_eq!(c.get("/hello.php").text(), "Hello, World!");
        }
        let old = fpm.workers();
        fpm.restart();
        assert_ne!(fpm.workers(), old);
        for i in 0..5 {
            let r = c.get("/hello.php");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "Hello, World!"),
                "GET {i}"
            );
            let r = post(&mut c, "/echo.php", b"after restart");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "after restart"),
                "POST {i}"
            );
        }
        drop(c);
        srv.stop();
    }
}

/// An HTTP/1.0 keep-alive client keeps its connection across script
/// responses without a length (held, up to 64 KiB, to learn it); a longer
/// one goes out as it comes and ends at the close, whole.
#[test]
fn http10_keep_alive_survives_scripts_without_a_length() {
    let fpm = PhpFpm::start_unix(2);
    let dir = TempDir::new("fcgi-http10");
    let cfg = fpm.ringside_config(&dir, "");
    let srv = Ringside::configured("io-uring", &cfg);
    let mut c = Conn::open(srv.addr);
    let ask =
        |path: &str| format!("GET {path} HTTP/1.0\r\nHost: t\r\nConnection: keep-alive\r\n\r\n");
    for _ in 0..3 {
        let r = c.read_after(&ask("/hello.php")).expect("response");
        assert_eq!((r.status, r.text().as_str()), (200, "Hello, World!"));
        assert_eq!(
            r.header("content-length").as_deref(),
            Some("13"),
            "{}",
            r.head
        );
        assert!(
            r.header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("keep-alive")),
            "{}",
            r.head
        );
    }
    // 1 MiB streamed: no length, so the close ends it.
    let r = c.read_after(&ask("/stream.php?mb=1")).expect("response");
    assert_eq!(r.status, 200);
    assert!(r.header("content-length").is_none(), "{}", r.head);
    assert_eq!(r.body.len(), 1 << 20);
    assert!(
        r.body.chunks(64).all(|b| b == &r.body[..64]),
        "body mangled"
    );
    assert!(c.closed(), "a close-delimited body must end the connection");
    srv.stop();
}

/// A FastCGI route with a `root` of its own serves its files that are not
/// scripts from that root, as its scripts run from it (nginx's `root` in a
/// `location` holds for the whole location), never from the server's.
#[test]
fn a_route_root_serves_its_other_files_too() {
    let fpm = PhpFpm::start_tcp(1);
    let dir = TempDir::new("fcgi-route-root");
    let headers = std::fs::read(PhpFpm::docroot().join("headers.php")).unwrap();
    dir.write("app-root/app/headers.php", &headers);
    dir.write("app-root/app/note.txt", b"route's\n");
    dir.write("app-root/app/docs/index.html", b"route's index\n");
    dir.write("www/app/note.txt", b"server's\n");
    dir.write("www/app/docs/index.html", b"server's index\n");
    dir.write("www/other.txt", b"server's other\n");
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[server]\nroot = \"www\"\n\n\
             [upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"{}\"]\n\n\
             [[route]]\nprefix = \"/app/\"\nupstream = \"php\"\nroot = \"app-root\"\n",
            fpm.listen
        )
        .as_bytes(),
    );
    let srv = Ringside::configured(BACKENDS[0], &cfg);
    let mut c = Conn::open(srv.addr);
    let r = c.get("/app/note.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "route's\n"));
    let r = c.get("/app/docs/");
    assert_eq!((r.status, r.text().as_str()), (200, "route's index\n"));
    let r = c.get("/app/headers.php");
    assert_eq!(r.status, 200, "{}", r.text());
    let root = std::fs::canonicalize(dir.path().join("app-root")).unwrap();
    assert_eq!(var(&vars(&r), "DOCUMENT_ROOT"), root.to_str().unwrap());
    // Outside the route, the server's root as before.
    let r = c.get("/other.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "server's other\n"));
    drop(c);
    srv.stop();
}
