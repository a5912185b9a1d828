//! The access log: combined and JSON lines, a route with logging off, and
//! the file reopened on SIGUSR1 after logrotate moved it.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir};

fn config(dir: &TempDir, origin: u16, format: &str) -> std::path::PathBuf {
    dir.write("www/index.html", b"hello\n");
    dir.write("www/quiet/x.txt", b"shh\n");
    dir.write(
        "ringside.toml",
        format!(
            r#"
[server]
root = "www"

[access_log]
path = "access.log"
format = "{format}"
flush_every = "20ms"

[upstream.app]
servers = ["127.0.0.1:{origin}"]

[[route]]
prefix = "/quiet/"
access_log = false

[[route]]
prefix = "/api/"
upstream = "app"
strip_prefix = true
"#
        )
        .as_bytes(),
    )
}

/// alice:secret, as `htpasswd -nbB -C 4 alice secret` wrote it.
const ALICE: &str = "alice:$2y$04$zATGeDHl0KNJruTS4s2hPOqVhYFLs64Iy1Yo5QXaY7b.1a.ELZxBe\n";

fn basic(user_password: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(user_password);
    format!("Authorization: Basic {b64}\r\n")
}

fn start(cfg: &Path, workers: &str) -> Ringside {
    Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        workers,
        "--admin",
        "off",
        "--config",
        cfg.to_str().unwrap(),
    ])
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until `path` holds `n` lines: the per-core buffers are handed to
/// the writer within `flush_every`.
fn wait_lines(path: &Path, n: usize) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let l = lines(path);
        if l.len() >= n {
            return l;
        }
        assert!(
            Instant::now() < end,
            "{} has {} lines, not {n}",
            path.display(),
            l.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn combined_lines_say_what_nginx_says() {
    let dir = TempDir::new("access-combined");
    let origin = Origin::start("app");
    let cfg = config(&dir, origin.port(), "combined");
    let r = start(&cfg, "2");
    let mut c = Conn::open(r.addr);
    c.send(b"GET /index.html?q=1 HTTP/1.1\r\nHost: t\r\nUser-Agent: agent \"q\"\r\nReferer: http://ref/\r\n\r\n");
    assert_eq!(c.read(false).unwrap().status, 200);
    assert_eq!(c.get("/quiet/x.txt").status, 200);
    assert_eq!(c.get("/api/status/503").status, 503);
    assert_eq!(c.get("/missing").status, 404);
    drop(c);
    // Refused before any route with no request line to name: logged with
    // "-" for the request, as nginx.
    let mut bad = Conn::open(r.addr);
    bad.send(b"GET / SPDY/3 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(bad.read(false).unwrap().status, 400);
    drop(bad);
    // A path no route may be decided on is refused too, but it was a
    // request: its line names it (a traversal probe is what one looks for).
    let mut probe = Conn::open(r.addr);
    probe.send(b"GET /../etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(probe.read(false).unwrap().status, 400);
    drop(probe);
    r.stop();
    // Each core hands over its own buffer: lines of one connection keep
    // their order, lines of two workers may interleave.
    let (refused, log): (Vec<String>, Vec<String>) = lines(&dir.path().join("access.log"))
        .into_iter()
        .partition(|l| l.contains("] \"-\" "));
    let (probes, log): (Vec<String>, Vec<String>) =
        log.into_iter().partition(|l| l.contains("/etc/passwd"));
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert!(
        probes[0].contains(r#"] "GET /../etc/passwd HTTP/1.1" 400 16 "-" "-" "#),
        "{}",
        probes[0]
    );
    assert_eq!(log.len(), 3, "the /quiet/ route is not logged: {log:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].starts_with("127.0.0.1 - - ["), "{}", refused[0]);
    assert!(
        refused[0].contains(r#"] "-" 400 16 "-" "-" "#),
        "{}",
        refused[0]
    );
    assert!(log[0].starts_with("127.0.0.1 - - ["), "{}", log[0]);
    let after_time = |l: &str| l.split_once("] ").unwrap().1.to_owned();
    let (first, secs) = after_time(&log[0])
        .rsplit_once(' ')
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .unwrap();
    assert_eq!(
        first,
        r#""GET /index.html?q=1 HTTP/1.1" 200 6 "http://ref/" "agent \"q\"""#
    );
    assert!(secs.parse::<f64>().unwrap() < 10.0);
    assert!(
        after_time(&log[1]).starts_with(r#""GET /api/status/503 HTTP/1.1" 503 "#),
        "{}",
        log[1]
    );
    assert!(
        after_time(&log[2]).starts_with(r#""GET /missing HTTP/1.1" 404 14 "-" "#),
        "{}",
        log[2]
    );
}

#[test]
fn json_lines_parse_one_object_each() {
    let dir = TempDir::new("access-json");
    let origin = Origin::start("app");
    let cfg = config(&dir, origin.port(), "json");
    let r = start(&cfg, "1");
    let mut c = Conn::open(r.addr);
    c.send(b"GET /index.html HTTP/1.1\r\nHost: Example.COM\r\nUser-Agent: caf\xe9 \"x\"\r\n\r\n");
    assert_eq!(c.read(false).unwrap().status, 200);
    drop(c);
    r.stop();
    let log = lines(&dir.path().join("access.log"));
    assert_eq!(log.len(), 1);
    let v: serde_json::Value = serde_json::from_str(&log[0]).unwrap();
    assert_eq!(v["method"], "GET");
    assert_eq!(v["uri"], "/index.html");
    assert_eq!(v["status"], 200);
    assert_eq!(v["body_bytes"], 6);
    assert_eq!(v["host"], "Example.COM");
    assert_eq!(v["user_agent"], "caf\u{e9} \"x\"");
    assert_eq!(v["referer"], serde_json::Value::Null);
    assert_eq!(v["remote"], "127.0.0.1");
    assert!(v["time"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn sigusr1_reopens_the_file_logrotate_moved() {
    let dir = TempDir::new("access-reopen");
    let origin = Origin::start("app");
    let cfg = config(&dir, origin.port(), "combined");
    let r = start(&cfg, "1");
    let log = dir.path().join("access.log");
    let rotated = dir.path().join("access.log.1");
    let mut c = Conn::open(r.addr);
    for _ in 0..3 {
        assert_eq!(c.get("/index.html").status, 200);
    }
    wait_lines(&log, 3);
    std::fs::rename(&log, &rotated).unwrap();
    r.signal(libc::SIGUSR1);
    // The writer creates the file again when it reopens it.
    let end = Instant::now() + Duration::from_secs(10);
    while !log.exists() {
        assert!(Instant::now() < end, "SIGUSR1 did not reopen the log");
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..2 {
        assert_eq!(c.get("/missing").status, 404);
    }
    wait_lines(&log, 2);
    drop(c);
    let stderr = r.stop();
    assert!(stderr.contains("access log reopened"), "{stderr}");
    let old = lines(&rotated);
    let new = lines(&log);
    assert_eq!(old.len(), 3, "{old:?}");
    assert!(old.iter().all(|l| l.contains("/index.html")));
    assert_eq!(new.len(), 2, "{new:?}");
    assert!(new.iter().all(|l| l.contains("/missing")));
}

/// Basic auth's user is logged once it took the request, as nginx's
/// `$remote_user` (combined's third field, JSON's `user`); a request it
/// refused, or a route without it, has none.
#[test]
fn the_user_basic_auth_took_is_logged() {
    for format in ["combined", "json"] {
        let dir = TempDir::new("access-user");
        dir.write("www/staff/x", b"staff\n");
        dir.write("www/open", b"open\n");
        dir.write("staff.htpasswd", ALICE.as_bytes());
        let cfg = dir.write(
            "ringside.toml",
            format!(
                "[server]\nroot = \"www\"\n\n\
                 [access_log]\npath = \"access.log\"\nformat = \"{format}\"\n\n\
                 [[route]]\nprefix = \"/staff/\"\n\
                 basic_auth = {{ realm = \"Staff\", users = \"staff.htpasswd\" }}\n"
            )
            .as_bytes(),
        );
        let r = start(&cfg, "1");
        let mut c = Conn::open(r.addr);
        for (auth, status) in [
            (basic("alice:secret"), 200),
            (basic("alice:wrong"), 401),
            (String::new(), 401),
        ] {
            let resp = c.read_after(&format!("GET /staff/x HTTP/1.1\r\nHost: t\r\n{auth}\r\n"));
            assert_eq!(resp.unwrap().status, status, "{format} {auth}");
        }
        let resp = c.read_after(&format!(
            "GET /open HTTP/1.1\r\nHost: t\r\n{}\r\n",
            basic("alice:secret")
        ));
        assert_eq!(resp.unwrap().status, 200);
        drop(c);
        r.stop();
        let log = lines(&dir.path().join("access.log"));
        assert_eq!(log.len(), 4, "{log:?}");
        let users: Vec<String> = log
            .iter()
            .map(|l| match format {
                "combined" => l.split(' ').nth(2).unwrap().to_owned(),
                _ => {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    v["user"].as_str().unwrap_or("null").to_owned()
                }
            })
            .collect();
        let none = if format == "combined" { "-" } else { "null" };
        assert_eq!(users, ["alice", none, none, none], "{format}: {log:?}");
    }
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// Requests refused before a handler ran are logged with their request
/// line whenever it was read (a body over `max_body`, a client over its
/// connection limit, a head that stopped coming), and a head that timed
/// out with the time it was given, not 0.
#[test]
fn refused_requests_keep_their_request_line_and_time() {
    let dir = TempDir::new("access-refused");
    dir.write("www/index.html", b"hello\n");
    let cfg = dir.write(
        "ringside.toml",
        b"[server]\nroot = \"www\"\n\n\
          [limits]\nmax_body = \"1k\"\nmax_client_connections = 1\n\n\
          [timeouts]\nheader_read = \"1s\"\n\n\
          [access_log]\npath = \"access.log\"\nformat = \"json\"\n",
    );
    let r = start(&cfg, "1");
    // Each case from an address of its own: the connection limit counts a
    // connection until the server has seen it close.
    let from = |last: u8| std::net::IpAddr::from([127, 0, 0, last]);
    let mut big = Conn::open_from(r.addr, from(1));
    big.send(b"POST /upload?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 99999\r\n\r\n");
    assert_eq!(big.read(false).unwrap().status, 413);
    drop(big);
    // A second connection of the same client while the first is open.
    let mut first = Conn::open_from(r.addr, from(2));
    assert_eq!(first.get("/index.html").status, 200);
    let mut second = Conn::open_from(r.addr, from(2));
    second.send(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(second.read(false).unwrap().status, 429);
    drop(second);
    drop(first);
    // The request line and part of the head, then nothing: 408 once
    // header_read has passed.
    let mut slow = Conn::open_from(r.addr, from(3));
    slow.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n");
    assert_eq!(slow.read(false).unwrap().status, 408);
    drop(slow);
    r.stop();
    let log: Vec<serde_json::Value> = lines(&dir.path().join("access.log"))
        .iter()
        .map(|l| json(l))
        .collect();
    let by_status = |status: u64| {
        log.iter()
            .find(|v| v["status"] == status)
            .unwrap_or_else(|| panic!("no {status} in {log:?}"))
    };
    let big = by_status(413);
    assert_eq!(
        (big["method"].as_str(), big["uri"].as_str()),
        (Some("POST"), Some("/upload?x=1"))
    );
    assert_eq!(big["protocol"], "HTTP/1.1");
    let over = by_status(429);
    assert_eq!(
        (over["method"].as_str(), over["uri"].as_str()),
        (Some("GET"), Some("/index.html"))
    );
    assert_eq!(over["limited"], "connections");
    let slow = by_status(408);
    assert_eq!(
        (slow["method"].as_str(), slow["uri"].as_str()),
        (Some("GET"), Some("/slow"))
    );
    let took = slow["request_time"].as_f64().unwrap();
    assert!(took >= 1.0, "a 408 after header_read (1s) logged as {took}");
}
