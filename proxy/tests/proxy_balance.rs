//! Load balancing and health across several in-process origins.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir};

fn config(dir: &TempDir, upstream: &str) -> std::path::PathBuf {
    dir.write(
        "ringside.toml",
        format!("[upstream.o]\n{upstream}\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n")
            .as_bytes(),
    )
}

fn tally(rs: &Ringside, n: usize, req: impl Fn(usize) -> String) -> HashMap<String, usize> {
    let mut c = Conn::open(rs.addr);
    let mut seen = HashMap::new();
    for i in 0..n {
        let r = c.read_after(&req(i)).unwrap();
        assert_eq!(r.status, 200, "{}", r.head);
        *seen.entry(r.header("x-origin").unwrap()).or_insert(0) += 1;
    }
    seen
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}

#[test]
fn weighted_round_robin_splits_by_weight() {
    let (a, b) = (Origin::start("a"), Origin::start("b"));
    let dir = TempDir::new("lb-rr");
    let cfg = config(
        &dir,
        &format!(
            "servers = [{{ addr = \"127.0.0.1:{}\", weight = 3 }}, \"127.0.0.1:{}\"]",
            a.port(),
            b.port()
        ),
    );
    let rs = Ringside::configured("io-uring", &cfg);
    let seen = tally(&rs, 40, |_| get("/ok"));
    assert_eq!((seen["a"], seen["b"]), (30, 10));
}

#[test]
fn hash_on_a_header_is_sticky_and_spreads() {
    let (a, b) = (Origin::start("a"), Origin::start("b"));
    let dir = TempDir::new("lb-hash");
    let cfg = config(
        &dir,
        &format!(
            "servers = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\nbalance = \"hash\"\nhash_key = \"header:X-User\"",
            a.port(),
            b.port()
        ),
    );
    let rs = Ringside::configured("epoll", &cfg);
    let mut owners = HashMap::new();
    for user in 0..40 {
        let seen = tally(&rs, 3, |_| {
            format!("GET /ok HTTP/1.1\r\nHost: t\r\nX-User: u{user}\r\n\r\n")
        });
        assert_eq!(seen.len(), 1, "user {user} moved between servers: {seen:?}");
        owners.insert(user, seen.into_keys().next().unwrap());
    }
    let on_a = owners.values().filter(|o| *o == "a").count();
    assert!((8..=32).contains(&on_a), "40 users, {on_a} on a");
}

#[test]
fn least_conn_and_p2c_use_every_server() {
    let (a, b) = (Origin::start("a"), Origin::start("b"));
    for balance in ["least_conn", "p2c"] {
        let dir = TempDir::new("lb-lc");
        let cfg = config(
            &dir,
            &format!(
                "servers = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\nbalance = \"{balance}\"",
                a.port(),
                b.port()
            ),
        );
        let rs = Ringside::configured("glommio", &cfg);
        let seen = tally(&rs, 40, |_| get("/ok"));
        assert!(
            seen.contains_key("a") && seen.contains_key("b"),
            "{balance}: {seen:?}"
        );
    }
}

#[test]
fn passive_health_takes_a_failing_server_out() {
    let live = Origin::start("live");
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = TempDir::new("lb-passive");
    let cfg = config(
        &dir,
        &format!(
            "servers = [\"{dead}\", \"127.0.0.1:{}\"]\nretries = 0\nmax_fails = 1\nfail_cooldown = \"60s\"",
            live.port()
        ),
    );
    let rs = Ringside::configured("io-uring", &cfg);
    let mut failed = 0;
    for _ in 0..10 {
        match rs.get("/ok").0 {
            200 => {}
            502 => failed += 1,
            s => panic!("status {s}"),
        }
    }
    assert!(failed <= 1, "{failed} requests went to the dead server");
}

#[test]
fn active_health_checks_once_per_interval_for_all_cores() {
    let (a, b) = (Origin::start("a"), Origin::start("b"));
    let dir = TempDir::new("lb-active");
    let cfg = config(
        &dir,
        &format!(
            "servers = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\nhealth_path = \"/health\"\nhealth_interval = \"100ms\"\nhealth_timeout = \"100ms\"\nhealth_fall = 1\nhealth_rise = 1",
            a.port(),
            b.port()
        ),
    );
    let rs = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    b.set_health(503);
    // Wait for the monitor to see it: all traffic then goes to a.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = tally(&rs, 6, |_| get("/ok"));
        if !seen.contains_key("b") {
            break;
        }
        assert!(Instant::now() < end, "b never taken out: {seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    b.set_health(200);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = tally(&rs, 6, |_| get("/ok"));
        if seen.contains_key("b") {
            break;
        }
        assert!(Instant::now() < end, "b never back: {seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Probe traffic: one probe per server per interval, not per core.
    let probes = |o: &Origin| {
        o.heads()
            .iter()
            .filter(|h| h.starts_with("GET /health"))
            .count()
    };
    let before = probes(&a);
    std::thread::sleep(Duration::from_secs(1));
    let in_a_second = probes(&a) - before;
    assert!(
        (5..=14).contains(&in_a_second),
        "{in_a_second} probes in 1 s at a 100 ms interval with 2 workers"
    );
}

#[test]
fn status_retries_only_for_replayable_requests() {
    let (a, b) = (Origin::start("a"), Origin::start("b"));
    let dir = TempDir::new("lb-retry");
    let cfg = config(
        &dir,
        &format!(
            "servers = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\nretries = 1\nretry_on = [\"http_503\"]",
            a.port(),
            b.port()
        ),
    );
    let rs = Ringside::configured("epoll", &cfg);
    let mut c = Conn::open(rs.addr);
    for _ in 0..6 {
        let r = c.read_after(&get("/fails-on-a")).unwrap();
        assert_eq!(
            (r.status, r.header("x-origin").unwrap().as_str()),
            (200, "b")
        );
    }
    // A POST is never sent twice: a's 503 reaches the client.
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let r = c
            .read_after("POST /fails-on-a HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx")
            .unwrap();
        statuses.push(r.status);
    }
    assert!(statuses.contains(&503), "{statuses:?}");
}
