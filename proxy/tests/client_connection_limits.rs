//! `[limits] max_client_connections`: a client address holding as many
//! connections as it may gets the configured status (429, or 503) with
//! Retry-After on the next one, over HTTP/1.1 and HTTP/2, counted in
//! /metrics and the access log, while other clients are served; and a
//! connection it closes is room for a new one.

mod common;

use std::time::{Duration, Instant};

use common::client::{Conn, Resp};
use common::h2::curl;
use common::{Ringside, TempDir};

fn start(dir: &TempDir, limits: &str) -> Ringside {
    dir.write("www/x", b"x\n");
    let cfg = format!(
        "[server]\nroot = {root:?}\n\n[limits]\n{limits}\n\n\
         [access_log]\npath = {log:?}\nformat = \"json\"\nflush_every = \"10ms\"\n",
        root = dir.path().join("www"),
        log = dir.path().join("access.log"),
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::with_admin(1, &file)
}

/// A kept connection from `from` that has been served once: counted.
fn held(rs: &Ringside, from: &str) -> Conn {
    let mut c = Conn::open_from(rs.addr, from.parse().unwrap());
    assert_eq!(c.get("/x").status, 200);
    c
}

/// One request on a new connection from `from`, and whether the server
/// then closed it (asked only of a refusal: a served one is kept).
fn once(rs: &Ringside, from: &str) -> (Resp, bool) {
    let mut c = Conn::open_from(rs.addr, from.parse().unwrap());
    let r = c.get("/x");
    let closed = r.status != 200 && c.closed();
    (r, closed)
}

#[test]
fn a_client_past_its_limit_is_refused_while_others_are_served() {
    let dir = TempDir::new("client-conns");
    let mut rs = start(&dir, "max_client_connections = 2");
    let first = held(&rs, "127.0.0.1");
    let _second = held(&rs, "127.0.0.1");

    let (r, closed) = once(&rs, "127.0.0.1");
    assert_eq!(r.status, 429, "{}", r.head);
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
    assert!(closed, "the refused connection ends");
    // The held ones go on, and another client is served meanwhile.
    let mut other = held(&rs, "127.0.0.2");
    assert_eq!(other.get("/x").status, 200);
    let _other2 = held(&rs, "127.0.0.2");

    // HTTP/2 (h2c) is refused the same way.
    let out = curl(&[
        "--http2-prior-knowledge",
        "--interface",
        "127.0.0.1",
        &format!("http://{}/x", rs.addr),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/2 429"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );

    // A connection closed is room for one more, once the server has seen
    // the close.
    drop(first);
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let (r, _) = once(&rs, "127.0.0.1");
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 429);
        assert!(
            Instant::now() < end,
            "the closed connection was never uncounted"
        );
    }
    let refused = rs.metric("ringside_client_connections_refused_total{worker=\"0\"}");
    assert!(refused >= 2.0, "{refused}");
    // Each refusal (HTTP/1.1 and HTTP/2 alike) logged once, marked, once
    // the log's writer has flushed.
    loop {
        let log = std::fs::read_to_string(dir.path().join("access.log")).unwrap_or_default();
        let marked = "\"status\":429,";
        let lines = log
            .lines()
            .filter(|l| l.contains(marked) && l.contains("\"limited\":\"connections\""))
            .count();
        if lines as f64 == refused {
            break;
        }
        assert!(
            lines as f64 <= refused,
            "{lines} marked, {refused} refused: {log}"
        );
        assert!(
            Instant::now() < end,
            "{refused} refused, not all marked in the access log: {log}"
        );
    }
}

#[test]
fn the_status_may_be_503_and_no_limit_is_the_default() {
    let dir = TempDir::new("client-conns-503");
    let rs = start(
        &dir,
        "max_client_connections = 1\nclient_connections_status = 503",
    );
    let _first = held(&rs, "127.0.0.1");
    let (r, _) = once(&rs, "127.0.0.1");
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));

    let dir = TempDir::new("client-conns-none");
    let rs = start(&dir, "");
    let kept: Vec<Conn> = (0..20).map(|_| held(&rs, "127.0.0.1")).collect();
    assert_eq!(once(&rs, "127.0.0.1").0.status, 200);
    drop(kept);
}
