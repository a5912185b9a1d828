//! An in-process HTTP/1.1 origin for the integration tests, on port 0, one
//! thread per connection, which counts every request it answers (its
//! "access log"), every connection it accepts, and misbehaves on request:
//! resets, stalls, hangs, varying lengths, silent closes.
//!
//! Counts are read with [`Origin::finish`], which waits for every
//! connection thread to end (they end when ringside-bench, which has exited
//! by then, closed its side), so the figures are final: no sleeps.

#![allow(dead_code)]

pub mod nginx;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the origin misbehaves. Request numbers count every request the
/// origin reads, across connections, from 0.
#[derive(Clone, Default)]
pub struct Behavior {
    /// Requests `i % n == n - 1` get a reset instead of an answer.
    pub reset_every: Option<u64>,
    /// Requests `i % n == n - 1` get half a head, then a reset.
    pub reset_mid_every: Option<u64>,
    /// Requests `i % n == n - 1` with `i >= n` get a longer body.
    pub vary_every: Option<u64>,
    /// Requests `i % n == n - 1` get a 404.
    pub not_found_every: Option<u64>,
    /// Request `i` is answered after this pause.
    pub stall_at: Option<(u64, Duration)>,
    /// Request `i` is never answered (the connection stays open).
    pub hang_at: Option<u64>,
    /// Close a connection, without saying so, after this many answers on it.
    pub close_after: Option<u64>,
    /// Pause before every answer.
    pub delay: Option<Duration>,
    /// Serves these paths (without the query) with their Content-Type and
    /// body instead of [`BODY`].
    pub site: Option<Arc<Site>>,
}

/// Path to (Content-Type, body).
pub type Site = HashMap<String, (&'static str, Vec<u8>)>;

pub const BODY: &[u8] = b"hello from the test origin";

#[derive(Default)]
pub struct Log {
    pub answered: AtomicU64,
    pub accepted: AtomicU64,
    pub received: AtomicU64,
    pub resets: AtomicU64,
    pub inflight: AtomicU64,
    pub max_inflight: AtomicU64,
    pub body_bytes: AtomicU64,
    pub paths: Mutex<HashMap<String, u64>>,
    pub first_head: Mutex<Option<String>>,
}

pub struct Origin {
    pub addr: SocketAddr,
    pub log: Arc<Log>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// The final counts.
#[derive(Debug)]
pub struct Counts {
    pub answered: u64,
    pub accepted: u64,
    pub received: u64,
    pub resets: u64,
    pub max_inflight: u64,
    pub body_bytes: u64,
    pub paths: HashMap<String, u64>,
    pub first_head: String,
}

impl Origin {
    pub fn start(b: Behavior) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Log::default());
        let stop = Arc::new(AtomicBool::new(false));
        let b = Arc::new(b);
        let (log2, stop2) = (log.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for s in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(s) = s else { continue };
                log2.accepted.fetch_add(1, Ordering::SeqCst);
                let (log, b) = (log2.clone(), b.clone());
                conns.push(std::thread::spawn(move || serve(s, &log, &b)));
            }
            for c in conns {
                let _ = c.join();
            }
        });
        Origin {
            addr,
            log,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops accepting, waits for every connection to end, returns the log.
    pub fn finish(mut self) -> Counts {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes accept
        if let Some(a) = self.accept.take() {
            a.join().unwrap();
        }
        let l = &self.log;
        Counts {
            answered: l.answered.load(Ordering::SeqCst),
            // The wake-up connection is not counted: accept stops before.
            accepted: l.accepted.load(Ordering::SeqCst),
            received: l.received.load(Ordering::SeqCst),
            resets: l.resets.load(Ordering::SeqCst),
            max_inflight: l.max_inflight.load(Ordering::SeqCst),
            body_bytes: l.body_bytes.load(Ordering::SeqCst),
            paths: l.paths.lock().unwrap().clone(),
            first_head: l.first_head.lock().unwrap().clone().unwrap_or_default(),
        }
    }
}

fn hits(every: Option<u64>, i: u64) -> bool {
    every.is_some_and(|n| i % n == n - 1)
}

/// Closes with a reset: SO_LINGER with a zero timeout, then close.
fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads the linger struct we pass, on our own socket.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(s);
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn serve(mut s: TcpStream, log: &Log, b: &Behavior) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut served_here = 0u64;
    loop {
        // One whole request (head and body) in `buf`.
        let (head_end, body_len) = loop {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                if buf.len() >= end + 4 + len {
                    break (end + 4, len);
                }
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end + body_len);
        let i = log.received.fetch_add(1, Ordering::SeqCst);
        log.body_bytes.fetch_add(body_len as u64, Ordering::SeqCst);
        {
            let mut first = log.first_head.lock().unwrap();
            if first.is_none() {
                *first = Some(head.clone());
            }
        }
        let path = head.split(' ').nth(1).unwrap_or("").to_string();
        *log.paths.lock().unwrap().entry(path.clone()).or_default() += 1;
        let lower = head.to_ascii_lowercase();
        let http10 = head.lines().next().is_some_and(|l| l.ends_with("HTTP/1.0"));
        let close = lower.contains("connection: close")
            || (http10 && !lower.contains("connection: keep-alive"));

        if hits(b.reset_every, i) {
            log.resets.fetch_add(1, Ordering::SeqCst);
            return reset(s);
        }
        if hits(b.reset_mid_every, i) {
            log.resets.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Le");
            return reset(s);
        }
        if b.hang_at == Some(i) {
            // Never answer; wait for the client to go away.
            while let Ok(n) = s.read(&mut chunk) {
                if n == 0 {
                    break;
                }
            }
            return;
        }
        let now = log.inflight.fetch_add(1, Ordering::SeqCst) + 1;
        log.max_inflight.fetch_max(now, Ordering::SeqCst);
        if let Some((at, d)) = b.stall_at {
            if at == i {
                std::thread::sleep(d);
            }
        }
        if let Some(d) = b.delay {
            std::thread::sleep(d);
        }
        let page = b.site.as_ref().and_then(|site| {
            let plain = path.split(['?', '#']).next().unwrap_or("");
            site.get(plain).cloned()
        });
        let content_type = page
            .as_ref()
            .map(|(t, _)| format!("Content-Type: {t}\r\n"))
            .unwrap_or_default();
        let mut body = page.map_or_else(|| BODY.to_vec(), |(_, b)| b);
        if hits(b.vary_every, i) && i >= b.vary_every.unwrap() {
            body.extend_from_slice(b" and then some");
        }
        let status = if hits(b.not_found_every, i) {
            "404 Not Found"
        } else {
            "200 OK"
        };
        let mut resp = format!(
            "HTTP/1.1 {status}\r\nServer: test-origin/1\r\n{content_type}Content-Length: {}\r\n{}\r\n",
            body.len(),
            match (close, http10) {
                (true, _) => "Connection: close\r\n",
                (false, true) => "Connection: keep-alive\r\n",
                (false, false) => "",
            }
        )
        .into_bytes();
        if !lower.starts_with("head ") {
            resp.extend_from_slice(&body);
        }
        // Counted before the write: once written, the client may exit, and
        // the test read the log, at once.
        log.answered.fetch_add(1, Ordering::SeqCst);
        log.inflight.fetch_sub(1, Ordering::SeqCst);
        if s.write_all(&resp).is_err() {
            log.answered.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        served_here += 1;
        if close || b.close_after == Some(served_here) {
            return;
        }
    }
}

/// Runs ringside-bench with `args`.
pub fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringside-bench"))
        .args(args)
        .output()
        .expect("run ringside-bench")
}

/// Runs ringside-bench, expecting success; returns stdout.
pub fn bench_ok(args: &[&str]) -> String {
    let out = bench(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ringside-bench {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs ringside-bench with `--json -q`, returns the parsed report.
pub fn bench_json(args: &[&str]) -> serde_json::Value {
    let mut v = vec!["--json", "-q"];
    v.extend_from_slice(args);
    let out = bench_ok(&v);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The value after `label` in an ab report, e.g. field(r, "Complete requests:").
pub fn field<'a>(report: &'a str, label: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{report}"))
        .trim()
}

pub fn num(report: &str, label: &str) -> u64 {
    field(report, label)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

pub fn u(v: &serde_json::Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{path:?} is not a count: {x}"))
}

pub fn f(v: &serde_json::Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number: {x}"))
}
