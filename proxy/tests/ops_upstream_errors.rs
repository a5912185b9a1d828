//! Upstream failures say why, at the default log level: a warning with the
//! cause for the first failure of each kind per server (then rate-limited),
//! the reason in the access log's `upstream_error` beside
//! `upstream_status`, and in the failures metric's `reason` label.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir, BIN};

/// A port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// One worker with an admin listener, on the default log level whatever
/// the test's environment says.
fn start(cfg: &Path, extra: &[&str]) -> Ringside {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("RUST_LOG").args([
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--admin",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    cmd.args(extra);
    Ringside::start_with(&mut cmd)
}

fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_refused_connect_is_warned_once_with_its_cause_and_logged_per_request() {
    let dir = TempDir::new("upstream-refused");
    let origin = Origin::start("app");
    let dead = closed_port();
    dir.write("www/index.html", b"hello\n");
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[server]\nroot = \"www\"\n\n[access_log]\npath = \"access.log\"\nformat = \"json\"\n\n\
             [upstream.dead]\nservers = [\"127.0.0.1:{dead}\"]\n\n\
             [upstream.app]\nservers = [\"127.0.0.1:{}\"]\n\n\
             [[route]]\nprefix = \"/dead/\"\nupstream = \"dead\"\n\n\
             [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nstrip_prefix = true\n",
            origin.port()
        )
        .as_bytes(),
    );
    let mut r = start(&cfg, &[]);
    let mut c = Conn::open(r.addr);
    const N: usize = 5;
    for _ in 0..N {
        assert_eq!(c.get("/dead/x").status, 502);
    }
    assert_eq!(c.get("/api/ok").status, 200);
    assert_eq!(c.get("/index.html").status, 200);
    drop(c);
    let server = format!("127.0.0.1:{dead}");
    let failures = |r: &mut Ringside, reason: &str| {
        r.metric(&format!(
            "ringside_upstream_failures_total{{upstream=\"dead\",server=\"{server}\",reason=\"{reason}\"}}"
        ))
    };
    assert_eq!(failures(&mut r, "connect_refused"), N as f64);
    assert_eq!(failures(&mut r, "connect_timeout"), 0.0);
    let stderr = r.stop();

    // One line for the N failures: the rest fall in the same window.
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("upstream connect() failed"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains(" WARN "), "{}", warned[0]);
    assert!(
        warned[0].contains(&format!("upstream \"dead\" server {server}")),
        "{}",
        warned[0]
    );
    assert!(warned[0].contains("Connection refused"), "{}", warned[0]);
    assert!(!stderr.contains("not logged"), "{stderr}");
    assert!(!stderr.contains("no live upstream"), "{stderr}");

    let log = json_lines(&dir.path().join("access.log"));
    assert_eq!(log.len(), N + 2, "{log:?}");
    for l in &log[..N] {
        assert_eq!(l["status"], 502);
        assert_eq!(l["upstream_status"], "-");
        assert_eq!(l["upstream_error"], "connect_refused");
    }
    assert_eq!(log[N]["upstream_status"], "200");
    assert_eq!(log[N]["upstream_error"], "-");
    // Not proxied: no upstream at all.
    assert_eq!(log[N + 1]["upstream_status"], "-");
    assert_eq!(log[N + 1]["upstream_error"], "-");
}

#[test]
fn a_retried_status_is_listed_before_the_answer_that_followed() {
    let dir = TempDir::new("upstream-retried");
    let bad = Origin::start("bad");
    let good = Origin::start("good");
    bad.set_health(503);
    good.set_health(200);
    // Round robin from the first server on one core: the first request
    // goes to the one answering 503 and on to the other.
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[access_log]\npath = \"access.log\"\nformat = \"json\"\n\n\
             [upstream.app]\nservers = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\n\
             retries = 1\nretry_on = [\"http_503\"]\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"app\"\n",
            bad.port(),
            good.port()
        )
        .as_bytes(),
    );
    let r = start(&cfg, &["--root", dir.path().to_str().unwrap()]);
    let mut c = Conn::open(r.addr);
    let mut statuses = Vec::new();
    for _ in 0..2 {
        assert_eq!(c.get("/health").status, 200);
    }
    drop(c);
    r.stop();
    for l in json_lines(&dir.path().join("access.log")) {
        statuses.push(l["upstream_status"].as_str().unwrap().to_owned());
        assert_eq!(l["upstream_error"], "-", "{l}");
    }
    // Whichever server round robin starts on, one of two requests meets
    // the 503 first.
    assert_eq!(statuses.len(), 2);
    assert!(
        statuses.iter().all(|s| s == "200" || s == "503, 200"),
        "{statuses:?}"
    );
    assert!(statuses.iter().any(|s| s == "503, 200"), "{statuses:?}");
}

#[test]
fn a_fastcgi_socket_that_is_not_there_is_named_with_the_cause() {
    let dir = TempDir::new("upstream-fcgi-missing");
    dir.write("www/index.php", b"<?php echo 1;\n");
    let sock = dir.path().join("php-fpm.sock");
    let fastcgi = format!("unix:{}", sock.display());
    let cfg = dir.write(
        "ringside.toml",
        b"[access_log]\npath = \"access.log\"\nformat = \"json\"\n",
    );
    let root = dir.path().join("www");
    let r = start(
        &cfg,
        &["--root", root.to_str().unwrap(), "--fastcgi", &fastcgi],
    );
    let mut c = Conn::open(r.addr);
    for _ in 0..3 {
        assert_eq!(c.get("/index.php").status, 502);
    }
    drop(c);
    let stderr = r.stop();
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("upstream connect() failed"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].contains(&format!("upstream \"fastcgi\" server {fastcgi}")),
        "{}",
        warned[0]
    );
    assert!(
        warned[0].contains("No such file or directory"),
        "{}",
        warned[0]
    );
    assert!(!stderr.contains("no live upstream"), "{stderr}");
    let log = json_lines(&dir.path().join("access.log"));
    assert_eq!(log.len(), 3);
    for l in &log {
        assert_eq!(l["upstream_status"], "-");
        assert_eq!(l["upstream_error"], "connect_failed");
    }
}

/// A server whose status line is not HTTP/1.x: its warning says what was
/// malformed once, not "malformed response head: malformed response
/// head: ...".
#[test]
fn a_malformed_response_head_is_said_once() {
    use std::io::{Read, Write};
    let dir = TempDir::new("upstream-malformed");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Answers each connection's first read with an HTTP/2.0 status line,
    // until ringside is gone and the listener is dropped with the thread.
    let server = std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = [0u8; 4096];
            if conn.read(&mut buf).unwrap_or(0) == 0 {
                return;
            }
            let _ = conn.write_all(b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[upstream.odd]\nservers = [\"127.0.0.1:{port}\"]\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"odd\"\n"
        )
        .as_bytes(),
    );
    let r = start(&cfg, &["--root", dir.path().to_str().unwrap()]);
    let mut c = Conn::open(r.addr);
    assert_eq!(c.get("/x").status, 502);
    drop(c);
    let stderr = r.stop();
    // Ends the server's accept loop: a connection read as closed.
    drop(std::net::TcpStream::connect(("127.0.0.1", port)));
    server.join().unwrap();
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("upstream sent an invalid response"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].contains(
            "upstream sent an invalid response: malformed response head: \
             HTTP version other than 1.0 or 1.1"
        ),
        "{}",
        warned[0]
    );
    assert_eq!(warned[0].matches("malformed").count(), 1, "{}", warned[0]);
}
