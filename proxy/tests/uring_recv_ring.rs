//! Multishot receive into the core's buffer ring (io_uring): a ring run
//! dry must slow receives down, never lose or reorder bytes. The ring here
//! is four 256-byte buffers, so that many clients at once, pipelined
//! requests, and a body far larger than the ring all exhaust it; the
//! worker's metrics say it ran dry or paused, and that every buffer came
//! back once the connections closed.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use common::client::Conn;
use common::origin::Origin;
use common::Ringside;

/// The worker's ring figures (buffers, held, dry, paused) once its sweep
/// (every 100 ms) has published a state that `done` accepts, or after 10 s.
fn ring_when(srv: &mut Ringside, done: impl Fn([f64; 4]) -> bool) -> [f64; 4] {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        // One scrape for all four: the sweep may publish between scrapes.
        let (_, text) = srv.admin_get("/metrics");
        let now = [
            "ringside_recv_ring_buffers",
            "ringside_recv_ring_buffers_held",
            "ringside_recv_ring_dry_total",
            "ringside_recv_ring_paused_total",
        ]
        .map(|m| {
            let series = format!("{m}{{worker=\"0\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(&series))
                .map_or(0.0, |v| v.trim().parse().unwrap())
        });
        if done(now) || std::time::Instant::now() > deadline {
            return now;
        }
        std::thread::yield_now();
    }
}

/// After every connection closed: no buffer held, and the ring ran short
/// at least once (or the test tested nothing).
fn assert_ran_short_and_all_came_back(srv: &mut Ringside) {
    // The four figures are four words, published one after the other at
    // the sweep: a scrape during the first publication can read the
    // ring's size from before it (0) and its counters from after it (seen
    // once on a loaded machine), so a state counts only with the size in.
    let [buffers, held, dry, paused] =
        ring_when(srv, |[b, h, d, p]| b > 0.0 && h == 0.0 && d + p > 0.0);
    assert_eq!(buffers, 4.0, "the worker receives through its ring");
    assert_eq!(
        held, 0.0,
        "ring buffers still held after every connection closed"
    );
    assert!(
        dry + paused > 0.0,
        "the ring never ran short: the test tests nothing"
    );
}

/// One io_uring worker proxying to `origin`, with its admin listener and
/// the environment `env`.
fn proxy(origin: &Origin, env: &[(&str, &str)]) -> Ringside {
    let up = origin.addr.to_string();
    let mut cmd = Command::new(common::BIN);
    cmd.envs(env.iter().copied());
    cmd.args(["--listen", "127.0.0.1:0", "--workers", "1"])
        .args(["--backend", "io-uring", "--admin", "127.0.0.1:0"])
        .args(["--upstream", &up]);
    Ringside::start_with(&mut cmd)
}

fn tiny_ring_proxy(origin: &Origin) -> Ringside {
    // RINGSIDE_URING_RECV whatever the suite runs under (scripts/test.sh
    // runs it again with RINGSIDE_URING_RECV=poll).
    proxy(
        origin,
        &[
            ("RINGSIDE_URING_RING", "4x256"),
            ("RINGSIDE_URING_RECV", "multishot"),
        ],
    )
}

#[test]
fn many_clients_at_once_through_a_tiny_ring_all_get_their_own_answers() {
    let origin = Origin::start("ring");
    let mut srv = tiny_ring_proxy(&origin);
    let addr = srv.addr;
    let clients: Vec<_> = (0..32)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr);
                for j in 0..20 {
                    // A long path: each request head spans several buffers.
                    let pad = "p".repeat(700);
                    let path = format!("/echo-{i}-{j}-{pad}/headers");
                    let r = c.get(&path);
                    assert_eq!(r.status, 200);
                    assert!(r.text().contains(&path), "client {i} request {j}");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    assert_ran_short_and_all_came_back(&mut srv);
    srv.stop();
}

#[test]
fn pipelined_requests_and_a_large_body_arrive_whole_and_in_order() {
    let origin = Origin::start("ring");
    let mut srv = tiny_ring_proxy(&origin);
    // 1 MiB of a pattern that shows any lost or reordered chunk.
    let body: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    let mut s = TcpStream::connect(srv.addr).unwrap();
    let mut req = Vec::new();
    for i in 0..8 {
        req.extend_from_slice(format!("GET /p{i}/headers HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    }
    req.extend_from_slice(
        format!(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    let writer = {
        let mut w = s.try_clone().unwrap();
        let body = body.clone();
        std::thread::spawn(move || {
            w.write_all(&req).unwrap();
            w.write_all(&body).unwrap();
        })
    };
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    writer.join().unwrap();
    let text = String::from_utf8_lossy(&got);
    let mut at = 0;
    for i in 0..8 {
        let found = text[at..].find(&format!("/p{i}/headers")).map(|k| k + at);
        assert!(found.is_some(), "response {i} missing or out of order");
        at = found.unwrap();
    }
    let tail = &got[got.len() - body.len()..];
    assert!(
        tail == &body[..],
        "the echoed body differs from what was sent"
    );
    assert_ran_short_and_all_came_back(&mut srv);
    srv.stop();
}

#[test]
fn with_the_ring_turned_off_the_worker_says_so_and_serves_the_same() {
    let origin = Origin::start("plain");
    let mut srv = proxy(&origin, &[("RINGSIDE_URING_RECV", "poll")]);
    let mut c = Conn::open(srv.addr);
    for j in 0..5 {
        let r = c.get(&format!("/q{j}/headers"));
        assert_eq!(r.status, 200);
        assert!(r.text().contains(&format!("/q{j}/headers")));
    }
    assert_eq!(srv.metric("ringside_recv_ring_buffers{worker=\"0\"}"), 0.0);
    srv.stop();
}
