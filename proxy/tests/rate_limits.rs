//! `[[rate_limit]]`: a route's requests past its rate get 429 (or the
//! configured 503) with Retry-After, per key, counted in /metrics; under
//! `wrk -c50` the rate served holds within 10% of the configured one.

mod common;

use std::time::Instant;

use common::client::Conn;
use common::h2::curl;
use common::load::wrk;
use common::{Ringside, TempDir};

fn start(dir: &TempDir, limits: &str) -> Ringside {
    dir.write("www/x", b"x\n");
    dir.write("www/open/x", b"x\n");
    let cfg = format!(
        "[server]\nroot = {root:?}\n\n{limits}\n",
        root = dir.path().join("www")
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::with_admin(1, &file)
}

fn get(rs: &Ringside, from: &str, path: &str, extra: &str) -> common::client::Resp {
    let mut c = Conn::open_from(rs.addr, from.parse().unwrap());
    c.send(
        format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n").as_bytes(),
    );
    c.read(false).expect("a response")
}

#[test]
fn the_rate_served_holds_under_load() {
    let dir = TempDir::new("rate-load");
    let rs = start(
        &dir,
        "[[rate_limit]]\nname = \"all\"\nkey = \"route\"\nrate = \"500/s\"\nburst = 50\n\n\
         [[route]]\nprefix = \"/x\"\nrate_limit = \"all\"\n",
    );
    let t0 = Instant::now();
    let report = wrk(rs.addr, "/x", 50, 3);
    let secs = t0.elapsed().as_secs_f64();
    let served = report.requests - report.non_2xx_3xx;
    // The bucket starts full (the burst) and fills at the rate; wrk's run
    // is within the time measured here, so this bounds it from above.
    let most = 50.0 + 500.0 * secs;
    let least = 50.0 + 500.0 * 3.0;
    eprintln!("served {served} of {} in {secs:.2}s", report.requests);
    assert!(
        report.non_2xx_3xx > 0 && (served as f64) <= most * 1.1 && (served as f64) >= least * 0.9,
        "served {served} in {secs:.2}s (want {least:.0} to {most:.0}):\n{}",
        report.text
    );
}

#[test]
fn each_key_has_its_bucket_and_the_refused_learn_when_to_retry() {
    let dir = TempDir::new("rate-keys");
    let mut rs = start(
        &dir,
        "[[rate_limit]]\nname = \"per-client\"\nkey = \"client_ip\"\nrate = \"1/h\"\nburst = 3\n\n\
         [[rate_limit]]\nname = \"per-key\"\nkey = \"header:X-Api-Key\"\nrate = \"2/m\"\nburst = 1\nstatus = 503\n\n\
         [[route]]\nprefix = \"/x\"\nrate_limit = \"per-client\"\n\n\
         [[route]]\nprefix = \"/open/\"\nrate_limit = \"per-key\"\n",
    );
    for _ in 0..3 {
        assert_eq!(get(&rs, "127.0.0.1", "/x", "").status, 200);
    }
    let r = get(&rs, "127.0.0.1", "/x", "");
    assert_eq!(r.status, 429);
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((3500..=3600).contains(&retry), "{retry}");
    // Every spelling of the path is the same route, and the same bucket.
    assert_eq!(get(&rs, "127.0.0.1", "/./%78", "").status, 429);
    // Another client is counted apart.
    assert_eq!(get(&rs, "127.0.0.2", "/x", "").status, 200);
    // By header: each value its bucket; without the header, no limit.
    let key = |k: &str| format!("X-Api-Key: {k}\r\n");
    assert_eq!(get(&rs, "127.0.0.1", "/open/x", &key("a")).status, 200);
    let r = get(&rs, "127.0.0.1", "/open/x", &key("a"));
    assert_eq!(
        (r.status, r.header("retry-after").as_deref()),
        (503, Some("30"))
    );
    assert_eq!(get(&rs, "127.0.0.1", "/open/x", &key("b")).status, 200);
    for _ in 0..3 {
        assert_eq!(get(&rs, "127.0.0.1", "/open/x", "").status, 200);
    }
    // HTTP/2 meets the same buckets.
    let url = format!("http://{}/x", rs.addr);
    let out = curl(&[
        "--http2-prior-knowledge",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &url,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("429")
    );
    let x = rs.metric("ringside_rate_limited_total{route=\"/x\",host=\"\"}");
    let open = rs.metric("ringside_rate_limited_total{route=\"/open/\",host=\"\"}");
    assert_eq!((x, open), (3.0, 1.0));
}

#[test]
fn refused_requests_are_marked_in_the_access_log() {
    let dir = TempDir::new("rate-log");
    let log = dir.path().join("access.log");
    let rs = start(
        &dir,
        &format!(
            "[access_log]\npath = {log:?}\nformat = \"json\"\nflush_every = \"10ms\"\n\n\
             [[rate_limit]]\nname = \"one\"\nkey = \"route\"\nrate = \"1/h\"\nburst = 1\n\n\
             [[route]]\nprefix = \"/x\"\nrate_limit = \"one\"\n"
        ),
    );
    assert_eq!(get(&rs, "127.0.0.1", "/x", "").status, 200);
    assert_eq!(get(&rs, "127.0.0.1", "/x", "").status, 429);
    let end = Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() >= 2 {
            assert!(lines[0].contains("\"status\":200,"), "{text}");
            assert!(lines[0].contains("\"limited\":null,"), "{text}");
            assert!(lines[1].contains("\"status\":429,"), "{text}");
            assert!(lines[1].contains("\"limited\":\"rate\","), "{text}");
            break;
        }
        assert!(Instant::now() < end, "two lines never logged: {text}");
    }
}
