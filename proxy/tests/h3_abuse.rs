//! HTTP/3 under abuse, each attack bounded and checked for what matters:
//! Retry when `always_retry` is set (and none otherwise); a burst of
//! handshakes that never finish answered with Retry past `retry_above`,
//! the state held for them bounded (and dropped once idle) and a real
//! client served after; a stream flood held to `max_concurrent_streams`
//! (and a client that ignores the limit closed with STREAM_LIMIT_ERROR);
//! connection-ID floods (200 issued at once: CONNECTION_ID_LIMIT_ERROR;
//! 50 never-issued IDs retired: PROTOCOL_VIOLATION); QPACK references to the dynamic table we never allowed
//! (QPACK_DECOMPRESSION_FAILED, QPACK_ENCODER_STREAM_ERROR,
//! QPACK_DECODER_STREAM_ERROR); oversized, truncated and misplaced frames,
//! a second or closed control stream, each the error RFC 9114 names, none
//! reaching the upstream; and a client that never opens its window, given
//! up after the send timeout without its file held in memory, and given up
//! too when the answer is a memory-cached body sent whole from one buffer.
//! The misbehaving clients are `support/h3_abuse.py` on aioquic's
//! lower-level API; after each, a well-behaved client is still served.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::h2::Site;
use common::h3::aioquic;
use serde_json::{json, Value};

const PYTHON: &str = "/opt/ringside-test/venv/bin/python3";

/// Runs `support/h3_abuse.py MODE ARG` against `at`; its JSON report.
fn abuse(site: &Site, at: SocketAddr, mode: &str, arg: &str) -> Value {
    let out = abuse_cmd(site, at, mode, arg).output().unwrap();
    report(out)
}

fn abuse_cmd(site: &Site, at: SocketAddr, mode: &str, arg: &str) -> Command {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/h3_abuse.py");
    let mut cmd = Command::new("timeout");
    cmd.arg("90")
        .arg(PYTHON)
        .arg(script)
        .arg(at.ip().to_string())
        .arg(at.port().to_string())
        .arg("--ca")
        .arg(&site.ca_pem)
        .arg(mode)
        .arg(arg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn report(out: std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "h3_abuse.py failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client's JSON report")
}

/// A family's samples summed over the workers.
fn total(site: &mut Site, family: &str) -> f64 {
    let (_, text) = site.srv.admin_get("/metrics");
    text.lines()
        .filter(|l| l.starts_with(family) && l[family.len()..].starts_with('{'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// One GET by a well-behaved client on a fresh connection: its status.
fn served(site: &Site, at: SocketAddr, path: &str) -> u64 {
    let r = aioquic(at, &site.ca_pem, "h2.test", &json!([{ "path": path }]));
    assert_eq!(r["alpn"], "h3", "{r}");
    r["answers"][0]["status"].as_u64().unwrap_or(0)
}

#[test]
fn always_retry_still_serves_and_default_sends_none() {
    let mut site = Site::start("h3-retry", "io-uring", "[http3]\nalways_retry = true\n");
    let at = site.tls.unwrap();
    assert_eq!(served(&site, at, "/small.txt"), 200);
    assert!(total(&mut site, "ringside_http3_retries_total") >= 1.0);
    assert_eq!(total(&mut site, "ringside_http3_connections_total"), 1.0);

    let mut site = Site::start("h3-noretry", "io-uring", "");
    let at = site.tls.unwrap();
    assert_eq!(served(&site, at, "/small.txt"), 200);
    assert_eq!(total(&mut site, "ringside_http3_retries_total"), 0.0);
    assert_eq!(total(&mut site, "ringside_http3_connections_total"), 1.0);
}

#[test]
fn unfinished_handshakes_are_retried_past_retry_above() {
    const RETRY_ABOVE: f64 = 8.0;
    const SILENT: f64 = 200.0;
    // Handshakes are given up after the idle timeout (`keepalive`).
    let mut site = Site::start(
        "h3-silent",
        "io-uring",
        "[http3]\nretry_above = 8\n\n[timeouts]\nkeepalive = \"1s\"\n",
    );
    let at = site.tls.unwrap();
    let r = abuse(&site, at, "silent", "200");
    assert_eq!(r["sent"], 200, "{r}");
    // Every Initial was read and answered: a handshake begun for the
    // first 8, a Retry (no state kept) for the rest.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = total(&mut site, "ringside_http3_connections_total")
            + total(&mut site, "ringside_http3_retries_total")
            + total(&mut site, "ringside_http3_refused_total");
        if seen >= SILENT {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{seen} of {SILENT} Initials answered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let conns = total(&mut site, "ringside_http3_connections_total");
    let retries = total(&mut site, "ringside_http3_retries_total");
    assert!(conns <= RETRY_ABOVE, "{conns} handshakes held");
    assert!(retries >= SILENT - RETRY_ABOVE, "{retries} Retry sent");
    // A real client, right after, proves its address and is served.
    assert_eq!(served(&site, at, "/small.txt"), 200);
    let conns = total(&mut site, "ringside_http3_connections_total");
    assert!(conns <= RETRY_ABOVE + 1.0, "{conns} connections");
    assert_eq!(total(&mut site, "ringside_http3_refused_total"), 0.0);
    // The 8 held are dropped once idle, and counted as failed; with no
    // handshake in progress, the next client needs no Retry.
    let deadline = Instant::now() + Duration::from_secs(10);
    while total(&mut site, "ringside_http3_handshakes_failed_total") < RETRY_ABOVE {
        assert!(
            Instant::now() < deadline,
            "unfinished handshakes still held"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let retries = total(&mut site, "ringside_http3_retries_total");
    assert_eq!(served(&site, at, "/small.txt"), 200);
    assert_eq!(total(&mut site, "ringside_http3_retries_total"), retries);
}

#[test]
fn a_stream_flood_is_held_to_max_concurrent_streams() {
    let mut site = Site::start(
        "h3-flood",
        "io-uring",
        "[http3]\nmax_concurrent_streams = 10\n",
    );
    let at = site.tls.unwrap();
    // 40 requests at once on one connection: QUIC's stream credit lets 10
    // be open at a time, the rest wait for MAX_STREAMS, and all complete.
    let reqs: Vec<Value> = (0..40)
        .map(|i| {
            if i % 2 == 0 {
                json!({"path": "/small.txt"})
            } else {
                json!({"path": format!("/app/ok{i}")})
            }
        })
        .collect();
    let r = aioquic(at, &site.ca_pem, "h2.test", &Value::Array(reqs));
    for (i, a) in r["answers"].as_array().unwrap().iter().enumerate() {
        assert_eq!(a["status"], 200, "{i}: {a}");
    }
    assert_eq!(total(&mut site, "ringside_http3_streams_total"), 40.0);
    assert_eq!(site.origin.heads().len(), 20);

    // A client that takes the limit to be 1000 and opens 30 at once: the
    // 11th stream is a STREAM_LIMIT_ERROR (0x4) closing the connection,
    // and no more than 10 requests were ever served.
    let r = abuse(&site, at, "over_limit", "30");
    assert_eq!(r["terminated"], 0x4, "{r}");
    let after = site.origin.heads().len() - 20;
    assert!(
        after <= 10,
        "{after} requests of the flood reached the upstream"
    );
    assert_eq!(served(&site, at, "/small.txt"), 200);
}

#[test]
fn connection_id_floods_close_the_connection_and_cost_nothing_after() {
    let mut site = Site::start("h3-cids", "io-uring", "");
    let at = site.tls.unwrap();
    // 200 connection IDs issued at once, past the limit the server
    // advertised: CONNECTION_ID_LIMIT_ERROR (0x9), the connection ends.
    let r = abuse(&site, at, "cid_flood", "200");
    assert_eq!(r["terminated"], 0x9, "{r}");
    assert!(r["issued"].as_u64().unwrap() >= 200, "{r}");
    // Retiring 50 IDs the server never issued: PROTOCOL_VIOLATION (0xa).
    let r = abuse(&site, at, "retire_flood", "50");
    assert_eq!(r["terminated"], 0xa, "{r}");
    // Both connections are gone (none left in a handshake or open), and
    // the server goes on serving.
    assert_eq!(served(&site, at, "/small.txt"), 200);
    assert_eq!(total(&mut site, "ringside_http3_connections_total"), 3.0);
}

#[test]
fn dynamic_table_references_fail_the_connection() {
    let site = Site::start("h3-qpack", "io-uring", "");
    let at = site.tls.unwrap();
    let r = abuse(
        &site,
        at,
        "raw",
        "qpack_insert_count,qpack_dynamic_index,qpack_encoder_insert,qpack_decoder_increment",
    );
    // QPACK_DECOMPRESSION_FAILED: we advertised a table of capacity 0.
    assert_eq!(r["qpack_insert_count"]["terminated"], 0x200, "{r}");
    assert_eq!(r["qpack_dynamic_index"]["terminated"], 0x200, "{r}");
    // QPACK_ENCODER_STREAM_ERROR: an insertion into that table.
    assert_eq!(r["qpack_encoder_insert"]["terminated"], 0x201, "{r}");
    // QPACK_DECODER_STREAM_ERROR: an acknowledgment of insertions never
    // made.
    assert_eq!(r["qpack_decoder_increment"]["terminated"], 0x202, "{r}");
    assert!(site.origin.heads().is_empty(), "{:?}", site.origin.heads());
    assert_eq!(served(&site, at, "/small.txt"), 200);
}

#[test]
fn oversized_truncated_and_misplaced_frames() {
    let site = Site::start("h3-frames", "io-uring", "");
    let at = site.tls.unwrap();
    let r = abuse(
        &site,
        at,
        "raw",
        "oversized_headers,truncated_headers,data_first,second_settings,close_control,goaway_too_long,huge_settings,second_control_stream",
    );
    // A HEADERS frame over 4 x max_head + 64: H3_EXCESSIVE_LOAD.
    assert_eq!(r["oversized_headers"]["terminated"], 0x107, "{r}");
    // A request stream ending inside its HEADERS frame: that stream reset
    // with H3_REQUEST_INCOMPLETE, the connection still serving.
    let t = &r["truncated_headers"];
    assert_eq!(t["reset"], 0x10d, "{r}");
    assert_eq!(t["after"], 200, "{r}");
    // DATA before HEADERS; a second SETTINGS: H3_FRAME_UNEXPECTED.
    assert_eq!(r["data_first"]["terminated"], 0x105, "{r}");
    assert_eq!(r["second_settings"]["terminated"], 0x105, "{r}");
    // The client's control stream ended: H3_CLOSED_CRITICAL_STREAM.
    assert_eq!(r["close_control"]["terminated"], 0x104, "{r}");
    // A GOAWAY longer than its one varint: H3_FRAME_ERROR (§7.1).
    assert_eq!(r["goaway_too_long"]["terminated"], 0x106, "{r}");
    // SETTINGS over the control stream's 16 KiB bound: H3_EXCESSIVE_LOAD.
    assert_eq!(r["huge_settings"]["terminated"], 0x107, "{r}");
    // A second control stream: H3_STREAM_CREATION_ERROR.
    assert_eq!(r["second_control_stream"]["terminated"], 0x103, "{r}");

    // A field section just over max_head (16 KiB) within the frame bound:
    // 431 on that stream, the connection serving on.
    let big = "v".repeat(16 * 1024 + 100);
    let r = aioquic(
        at,
        &site.ca_pem,
        "h2.test",
        &json!([{"path": "/app/big", "headers": [["x-big", big]]}, {"path": "/small.txt"}]),
    );
    assert_eq!(r["answers"][0]["status"], 431, "{}", r["answers"][0]);
    assert_eq!(r["answers"][1]["status"], 200, "{}", r["answers"][1]);
    assert!(site.origin.heads().is_empty(), "{:?}", site.origin.heads());
    assert_eq!(served(&site, at, "/app/ok"), 200);
    assert_eq!(site.origin.heads().len(), 1);
}

/// The server's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[test]
fn a_reader_that_never_opens_its_window_is_given_up() {
    let site = Site::start("h3-stall", "io-uring", "[timeouts]\nsend = \"2s\"\n");
    let at = site.tls.unwrap();
    site.dir.write("root/x.bin", &common::h2::pattern(10 << 20));
    // The paths a download takes, warmed on another connection first.
    assert_eq!(served(&site, at, "/small.txt"), 200);
    let pid = site.srv.child.id();
    let before = rss_kib(pid);
    let mut child = abuse_cmd(&site, at, "stall", "/x.bin").spawn().unwrap();
    let mut peak = before;
    let status = loop {
        peak = peak.max(rss_kib(pid));
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    assert!(status.success());
    let r = report(out);
    assert_eq!(r["status"], 200, "{r}");
    // Given up: reset (H3_INTERNAL_ERROR) once the send timeout passed,
    // with no more sent than the client's window allowed.
    assert_eq!(r["reset"], 0x102, "{r}");
    let after = r["after_s"].as_f64().unwrap();
    assert!((1.5..15.0).contains(&after), "{r}");
    assert!(r["received"].as_u64().unwrap() <= 64 << 10, "{r}");
    let grew = peak.saturating_sub(before);
    assert!(
        grew < 8 << 10,
        "RSS grew {grew} KiB for a stalled 10 MiB file"
    );
    assert_eq!(served(&site, at, "/small.txt"), 200);
}

/// An HTTP/1.1 upstream whose every answer is `len` bytes, fresh for ten
/// minutes (so a cache keeps it in memory); the count of requests it read.
fn cacheable_origin(len: usize) -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let count = count.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 4096];
                loop {
                    let Ok(n) = c.read(&mut b) else { return };
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&b[..n]);
                    while let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        head.drain(..end + 4);
                        count.fetch_add(1, Ordering::SeqCst);
                        let top = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\
                             Cache-Control: max-age=600\r\n\r\n"
                        );
                        let mut all = top.into_bytes();
                        all.extend(common::h2::pattern(len));
                        if c.write_all(&all).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (at, asked)
}

#[test]
fn a_stalled_reader_of_a_cached_object_is_given_up() {
    // A response served from the memory cache goes out whole from one
    // buffer, not a piece at a time as a file does: the send timeout
    // must give that up too.
    let len = 1_000_000;
    let (up, asked) = cacheable_origin(len);
    let site = Site::start(
        "h3-stall-cached",
        "io-uring",
        &format!(
            "[timeouts]\nsend = \"2s\"\n\n[cache.c]\nmemory = \"64m\"\nmax_object = \"4m\"\n\n\
             [upstream.c]\nservers = [\"{up}\"]\n\n\
             [[route]]\nprefix = \"/cached/\"\nupstream = \"c\"\ncache = \"c\"\n"
        ),
    );
    let at = site.tls.unwrap();
    let path = "/cached/obj";
    let r = aioquic(at, &site.ca_pem, "h2.test", &json!([{ "path": path }]));
    assert_eq!(r["answers"][0]["length"], len, "{}", r["answers"][0]);
    let r = aioquic(at, &site.ca_pem, "h2.test", &json!([{ "path": path }]));
    assert_eq!(r["answers"][0]["length"], len, "{}", r["answers"][0]);
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the second from the cache");
    let r = abuse(&site, at, "stall", path);
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(
        r["reset"], 0x102,
        "not given up after the send timeout: {r}"
    );
    let after = r["after_s"].as_f64().unwrap();
    assert!((1.5..15.0).contains(&after), "{r}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(served(&site, at, "/small.txt"), 200);
}
