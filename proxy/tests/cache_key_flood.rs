//! A flood of keys requested once each (a crawler, a cache-busting query)
//! cannot grow the cache past its memory tier, nor flush the hot set: the
//! store admits a new key to its small queue only, so a one-off key never
//! reaches the main queue the hot keys live in (S3-FIFO).
//!
//! One worker with `memory = "8m"`, an origin that answers any path with a
//! 100-byte body fresh for an hour; a Zipf load over 6,000 hot keys (about half of what the tier holds) alone,
//! then the same load beside a flood of distinct keys (200,000 by default,
//! about 14 times what the tier holds; `RINGSIDE_FLOOD_KEYS` sets it, e.g.
//! to 1,000,000). The hot set's hit ratio with the flood stays within 10%
//! of its ratio without, and the server's resident memory grows by no more
//! than the tier plus a bound (`SLACK`: the allocator's free lists, the
//! bounded ghost and pass tables, the connections).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{Ringside, TempDir};

const TIER: u64 = 8 << 20;
/// What the process may grow by beyond the tier.
const SLACK: u64 = 24 << 20;
const HOT: usize = 6000;
const HOT_REQUESTS: usize = 60_000;
const CONNS: usize = 8;
const DEPTH: usize = 32;

/// An origin answering every path with 100 bytes fresh for an hour.
fn origin() -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let n = count.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            let n = n.clone();
            std::thread::spawn(move || {
                let mut w = c.try_clone().unwrap();
                let mut r = BufReader::new(c);
                let mut line = String::new();
                let body = [b'x'; 100];
                loop {
                    // A request head: lines to the blank one (GETs only).
                    let mut got = false;
                    loop {
                        line.clear();
                        match r.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line == "\r\n" => break,
                            Ok(_) => got = true,
                        }
                    }
                    if !got {
                        return;
                    }
                    n.fetch_add(1, Ordering::Relaxed);
                    let head = "HTTP/1.1 200 OK\r\nCache-Control: max-age=3600\r\n\
                                Content-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\n";
                    let mut out = head.as_bytes().to_vec();
                    out.extend_from_slice(&body);
                    if w.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, count)
}

/// Sends `paths` over one keep-alive connection, `DEPTH` pipelined at a
/// time; returns how many answers were cache hits.
fn run(addr: SocketAddr, paths: impl Iterator<Item = String>) -> (u64, u64) {
    let w = TcpStream::connect(addr).unwrap();
    let mut r = BufReader::new(w.try_clone().unwrap());
    let mut w = w;
    let (mut hits, mut total) = (0, 0);
    let mut paths = paths.peekable();
    let mut head = String::new();
    while paths.peek().is_some() {
        let batch: Vec<String> = paths.by_ref().take(DEPTH).collect();
        let mut out = String::new();
        for p in &batch {
            out.push_str(&format!("GET {p} HTTP/1.1\r\nHost: t\r\n\r\n"));
        }
        w.write_all(out.as_bytes()).unwrap();
        for _ in &batch {
            let (mut len, mut hit) = (0usize, false);
            let mut first = true;
            loop {
                head.clear();
                r.read_line(&mut head).unwrap();
                if first {
                    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                    first = false;
                }
                if head == "\r\n" {
                    break;
                }
                let low = head.to_ascii_lowercase();
                if let Some(v) = low.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if low.starts_with("cache-status:") && low.contains("; hit") {
                    hit = true;
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            total += 1;
            hits += u64::from(hit);
        }
    }
    (hits, total)
}

/// A deterministic Zipf (s = 1) draw over `HOT` keys.
struct Zipf {
    cdf: Vec<f64>,
    state: u64,
}

impl Zipf {
    fn new(seed: u64) -> Zipf {
        let w: Vec<f64> = (1..=HOT).map(|k| 1.0 / k as f64).collect();
        let sum: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cdf = w
            .iter()
            .map(|x| {
                acc += x / sum;
                acc
            })
            .collect();
        Zipf {
            cdf,
            state: seed | 1,
        }
    }
}

impl Iterator for Zipf {
    type Item = String;
    fn next(&mut self) -> Option<String> {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let u = (self.state >> 11) as f64 / (1u64 << 53) as f64;
        let k = self.cdf.partition_point(|&c| c < u);
        Some(format!("/hot/{k}"))
    }
}

/// The hot set's hit ratio over `HOT_REQUESTS` Zipf requests on `CONNS`
/// connections.
fn hot_ratio(addr: SocketAddr, seed: u64) -> f64 {
    let each = HOT_REQUESTS / CONNS;
    let clients: Vec<_> = (0..CONNS as u64)
        .map(|i| std::thread::spawn(move || run(addr, Zipf::new(seed + i).take(each))))
        .collect();
    let (mut hits, mut total) = (0, 0);
    for c in clients {
        let (h, t) = c.join().unwrap();
        hits += h;
        total += t;
    }
    hits as f64 / total as f64
}

fn rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn a_key_flood_stays_within_the_tier_and_keeps_the_hot_set() {
    let keys: usize = std::env::var("RINGSIDE_FLOOD_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let (origin, fetched) = origin();
    let dir = TempDir::new("cache-key-flood");
    let cfg = dir.write(
        "r.toml",
        format!(
            "[cache.c]\nmemory = \"8m\"\nmax_object = \"64k\"\n\n\
             [upstream.o]\nservers = [\"{origin}\"]\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"o\"\ncache = \"c\"\n"
        )
        .as_bytes(),
    );
    let srv = Ringside::workers("io-uring", 1, &cfg);
    let addr = srv.addr;
    let pid = srv.child.id();
    // Warm: every hot key stored, then the ratio without a flood (the
    // second run's, once the load has settled in the store).
    run(addr, (0..HOT).map(|k| format!("/hot/{k}")));
    hot_ratio(addr, 1);
    let calm = hot_ratio(addr, 7);
    let before = rss(pid);
    // The flood, on its own connections, beside the same hot load.
    let per = keys / CONNS;
    let flood: Vec<_> = (0..CONNS)
        .map(|c| {
            std::thread::spawn(move || {
                run(
                    addr,
                    (c * per..(c + 1) * per).map(|k| format!("/flood/{k}")),
                )
            })
        })
        .collect();
    let flooded = hot_ratio(addr, 99);
    for f in flood {
        let (hits, total) = f.join().unwrap();
        assert_eq!(hits, 0, "a key requested once was a hit");
        assert_eq!(total, per as u64);
    }
    let after = rss(pid);
    let grew = after.saturating_sub(before);
    eprintln!(
        "hot hit ratio {calm:.4} alone, {flooded:.4} beside {keys} one-off keys; \
         RSS {} MiB before, {} MiB after the flood (tier {} MiB); origin fetches {}",
        before >> 20,
        after >> 20,
        TIER >> 20,
        fetched.load(Ordering::Relaxed)
    );
    assert!(
        flooded >= 0.9 * calm,
        "the flood cut the hot set's hit ratio from {calm:.4} to {flooded:.4}"
    );
    assert!(
        grew <= TIER + SLACK,
        "RSS grew by {} MiB with the flood (tier {} MiB, slack {} MiB)",
        grew >> 20,
        TIER >> 20,
        SLACK >> 20
    );
    srv.stop();
}
