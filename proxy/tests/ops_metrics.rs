//! The admin listener: `/metrics` read by Prometheus's own text-format
//! parser (the Python client's), `/healthz`, and what the counters say
//! after known traffic.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir};

/// The Debian interpreter, which python3-prometheus-client installs for
/// (a python3 earlier on PATH, pyenv's say, may not have it).
const PYTHON: &str = "/usr/bin/python3";

const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(sys.stdin.read()):
    out[f.name] = {"type": f.type, "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
"#;

type Families = BTreeMap<String, serde_json::Value>;

/// Parses a scrape with prometheus_client; fails if it refuses the text.
fn parse(text: &str) -> Families {
    let mut child = Command::new(PYTHON)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{PYTHON} (install python3-prometheus-client): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample `name` whose labels include all of `labels`,
/// summed over the samples that match.
fn value(f: &Families, family: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let fam = f
        .get(family)
        .unwrap_or_else(|| panic!("no family {family}"));
    fam["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == name && labels.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| s[2].as_f64().unwrap())
        .sum()
}

fn config(dir: &TempDir, origin: u16) -> std::path::PathBuf {
    dir.write("www/index.html", b"hello\n");
    dir.write("www/docs/a.txt", b"docs\n");
    dir.write(
        "ringside.toml",
        format!(
            "[server]\nroot = \"www\"\n\n[upstream.app]\nservers = [\"127.0.0.1:{origin}\"]\n\n\
             [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nstrip_prefix = true\n\n\
             [[route]]\nprefix = \"/docs/\"\n"
        )
        .as_bytes(),
    )
}

#[test]
fn a_scrape_parses_and_counts_what_was_served() {
    let dir = TempDir::new("metrics");
    let origin = Origin::start("app");
    let cfg = config(&dir, origin.port());
    let mut r = Ringside::with_admin(2, &cfg);
    let mut c = Conn::open(r.addr);
    for _ in 0..20 {
        assert_eq!(c.get("/index.html").status, 200);
    }
    for _ in 0..3 {
        assert_eq!(c.get("/missing").status, 404);
    }
    for _ in 0..4 {
        assert_eq!(c.get("/docs/a.txt").status, 200);
    }
    // One client connection lands on one worker: its pool opens one
    // upstream connection and reuses it.
    for _ in 0..10 {
        assert_eq!(c.get("/api/ok").status, 200);
    }
    let (status, text) = r.admin_get("/metrics");
    assert_eq!(status, 200);
    let f = parse(&text);

    assert_eq!(f["ringside_requests"]["type"], "counter");
    assert_eq!(f["ringside_request_duration_seconds"]["type"], "histogram");
    assert_eq!(f["ringside_open_connections"]["type"], "gauge");
    let req = |route: &str, class: &str| {
        value(
            &f,
            "ringside_requests",
            "ringside_requests_total",
            &[("route", route), ("class", class)],
        )
    };
    // Each static route counts apart: the root as "/".
    assert_eq!(req("/", "2xx"), 20.0);
    assert_eq!(req("/", "4xx"), 3.0);
    assert_eq!(req("/docs/", "2xx"), 4.0);
    assert!(!text.contains("route=\"static\""), "{text}");
    assert_eq!(req("/api/", "2xx"), 10.0);
    assert_eq!(req("/api/", "5xx"), 0.0);
    let dur = "ringside_request_duration_seconds";
    assert_eq!(
        value(
            &f,
            dur,
            "ringside_request_duration_seconds_count",
            &[("route", "/")]
        ),
        23.0
    );
    // Buckets from 25 µs, where a cached file's answer lands, not 250.
    let bounds: Vec<f64> = f[dur]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == "ringside_request_duration_seconds_bucket" && s[1]["route"] == "/")
        .map(|s| s[1]["le"].as_str().unwrap().parse().unwrap())
        .collect();
    for want in [25e-6, 50e-6, 100e-6, 250e-6, 1e-3, 10.0, f64::INFINITY] {
        assert!(bounds.contains(&want), "no le={want} in {bounds:?}");
    }
    assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
    assert_eq!(
        value(
            &f,
            dur,
            "ringside_request_duration_seconds_bucket",
            &[("route", "/api/"), ("le", "+Inf")]
        ),
        10.0
    );
    assert_eq!(
        value(
            &f,
            "ringside_response_body_bytes",
            "ringside_response_body_bytes_total",
            &[("route", "/")]
        ),
        20.0 * 6.0 + 3.0 * "404 Not Found\n".len() as f64
    );
    assert_process_metrics(&f);
    // An info metric's name ends in _info (OpenMetrics).
    assert!(!f.contains_key("ringside_info"));
    assert_eq!(
        value(
            &f,
            "ringside_build_info",
            "ringside_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    // The kept client connection is open on one of the two workers.
    assert_eq!(
        value(
            &f,
            "ringside_open_connections",
            "ringside_open_connections",
            &[]
        ),
        1.0
    );

    let server = format!("127.0.0.1:{}", origin.port());
    let up = |family: &str, name: &str| {
        value(
            &f,
            family,
            name,
            &[("upstream", "app"), ("server", server.as_str())],
        )
    };
    let opened = up(
        "ringside_upstream_connections_opened",
        "ringside_upstream_connections_opened_total",
    );
    let reused = up(
        "ringside_upstream_connection_reuses",
        "ringside_upstream_connection_reuses_total",
    );
    assert_eq!(opened, origin.conns() as f64);
    assert_eq!(opened, 1.0);
    assert_eq!(reused, 9.0);
    assert_eq!(
        up(
            "ringside_upstream_reuse_ratio",
            "ringside_upstream_reuse_ratio"
        ),
        0.9
    );
    assert_eq!(
        up(
            "ringside_upstream_idle_connections",
            "ringside_upstream_idle_connections"
        ),
        1.0
    );
    assert_eq!(
        up(
            "ringside_upstream_active_connections",
            "ringside_upstream_active_connections"
        ),
        0.0
    );
    assert_eq!(
        up("ringside_upstream_server_up", "ringside_upstream_server_up"),
        1.0
    );
    assert_eq!(
        up(
            "ringside_upstream_failures",
            "ringside_upstream_failures_total"
        ),
        0.0
    );
    drop(c);
    r.stop();
}

/// The process_* families by Prometheus's own names, with values that fit
/// this process.
fn assert_process_metrics(f: &Families) {
    let one = |family: &str, name: &str| value(f, family, name, &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = one("process_start_time_seconds", "process_start_time_seconds");
    assert!((now - started).abs() < 60.0, "started {started}, now {now}");
    let open = one("process_open_fds", "process_open_fds");
    assert!(open > 0.0, "{open}");
    assert!(one("process_max_fds", "process_max_fds") >= open);
    let rss = one(
        "process_resident_memory_bytes",
        "process_resident_memory_bytes",
    );
    assert!(rss > 1e6, "{rss}");
    assert!(
        one(
            "process_virtual_memory_bytes",
            "process_virtual_memory_bytes"
        ) >= rss
    );
    assert_eq!(f["process_cpu_seconds"]["type"], "counter");
    assert!(one("process_cpu_seconds", "process_cpu_seconds_total") >= 0.0);
}

#[test]
fn healthz_answers_ok_then_503_while_draining() {
    let dir = TempDir::new("healthz");
    let origin = Origin::start("app");
    let cfg = config(&dir, origin.port());
    let mut r = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--admin",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(r.admin_get("/healthz"), (200, "ok\n".to_owned()));
    assert_eq!(r.admin_get("/nothing").0, 404);
    // The traffic port does not serve the admin paths.
    assert_eq!(r.get("/metrics").0, 404);
    // A slow proxied request holds the drain open.
    let addr = r.addr;
    let slow = std::thread::spawn(move || {
        let mut c = Conn::open(addr);
        c.get("/api/slow").status
    });
    while origin.requests() == 0 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    r.signal(libc::SIGTERM);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let (status, body) = r.admin_get("/healthz");
        if status == 503 {
            assert_eq!(body, "draining\n");
            break;
        }
        assert!(std::time::Instant::now() < end, "healthz never said 503");
    }
    assert_eq!(slow.join().unwrap(), 200, "the drain lets it finish");
    assert!(r.wait(std::time::Duration::from_secs(10)).success());
}

/// What a worker keeps open on purpose, with its bound, so that a leak
/// check (bench/scripts/soak.py) can tell it from a lost descriptor.
#[test]
fn kept_descriptors_are_gauged_with_their_bounds() {
    let dir = TempDir::new("metrics-kept");
    let origin = Origin::start("app");
    // Above cache_max_file (64k): sent from disk, the file kept open.
    let big = vec![b'x'; 100 << 10];
    for name in ["a", "b", "c", "d", "e"] {
        dir.write(&format!("www/{name}.bin"), &big);
    }
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[server]\nroot = \"www\"\n\n[static]\ncache_max_open = 3\n\n\
             [upstream.app]\nservers = [\"127.0.0.1:{}\"]\nmax_idle = 7\n\n\
             [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nstrip_prefix = true\n",
            origin.port()
        )
        .as_bytes(),
    );
    let mut r = Ringside::with_admin(1, &cfg);
    let scrape = |r: &mut Ringside| parse(&r.admin_get("/metrics").1);
    let gauge = |f: &Families, name: &str| value(f, name, name, &[]);

    let f = scrape(&mut r);
    assert_eq!(gauge(&f, "ringside_file_cache_open_files"), 0.0);
    assert_eq!(gauge(&f, "ringside_file_cache_open_files_max"), 3.0);
    assert_eq!(gauge(&f, "ringside_spare_pipes"), 0.0);
    assert_eq!(gauge(&f, "ringside_spare_pipes_max"), 16.0);
    assert_eq!(gauge(&f, "ringside_upstream_max_idle_connections"), 7.0);

    let mut c = Conn::open(r.addr);
    assert_eq!(c.get("/a.bin").status, 200);
    assert_eq!(c.get("/api/ok").status, 200);
    let f = scrape(&mut r);
    assert_eq!(gauge(&f, "ringside_file_cache_open_files"), 1.0);
    // The file went out through a pipe, which came back empty to the pool.
    assert_eq!(gauge(&f, "ringside_spare_pipes"), 1.0);
    assert_eq!(gauge(&f, "ringside_upstream_idle_connections"), 1.0);
    // One connection's request slot (two 16 KiB buffers) and one upstream
    // read buffer, owned and pooled: sequential requests reuse them.
    let buffers = gauge(&f, "ringside_request_buffer_bytes");
    assert!(buffers >= 49152.0, "{buffers}");

    for name in ["b", "c", "d", "e"] {
        assert_eq!(c.get(&format!("/{name}.bin")).status, 200);
    }
    let f = scrape(&mut r);
    assert_eq!(
        gauge(&f, "ringside_file_cache_open_files"),
        3.0,
        "held at cache_max_open"
    );
    assert_eq!(gauge(&f, "ringside_spare_pipes"), 1.0, "one at a time");
    assert_eq!(gauge(&f, "ringside_request_buffer_bytes"), buffers);
    // A reload drops the old cache with its files once nothing uses it.
    drop(c);
    r.signal(libc::SIGHUP);
    r.wait_reloads("ok", 1);
    let open = "ringside_file_cache_open_files{worker=\"0\"}";
    let t0 = std::time::Instant::now();
    while r.metric(open) != 0.0 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "the old cache's files are still counted"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
