//! An in-process origin for the cache tests: what it answers on each path
//! is set by the test ([`CacheOrigin::set`]), and it counts what reached
//! it (requests per path, their heads, requests in flight at once).
//!
//! Threads and std only; HTTP/1.1 with keep-alive; binds 127.0.0.1:0.
//! Every response carries `X-Count: N`, the number of the request to its
//! path, so a test can tell which origin response a client was given
//! (a stored one repeats the count it was stored with).
//!
//! Besides plain answers a path can be `delay`ed, `cut` (a Content-Length
//! larger than what is sent, then close) or `hang` (never answered); the
//! whole origin can go [`CacheOrigin::down`] (listener closed, open
//! connections shut: connecting is refused) and come [`CacheOrigin::up`]
//! again on the same port.
//!
//! A request with `If-None-Match` naming the path's `ETag` is answered 304
//! (with the path's headers, no body); one with `Range: bytes=A-B` on a
//! 200 is answered 206 with that part.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a path is answered with.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Waited before the head is written.
    pub delay: Duration,
    pub mode: Mode,
    /// A request field whose value (or `-`) is appended to the body.
    pub echo: Option<String>,
    /// Held until the gate opens ([`CacheOrigin::open_gate`]).
    pub gated: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// `Content-Length: declared`, then the body (shorter), then close.
    Cut {
        declared: usize,
    },
    /// Read the request and never answer (until the origin is dropped or
    /// goes down).
    Hang,
    /// The head and the body's first `sent` bytes, then the rest only
    /// once the gate opens.
    Part {
        sent: usize,
    },
}

impl Answer {
    pub fn ok(body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            status: 200,
            headers: Vec::new(),
            body: body.into(),
            delay: Duration::ZERO,
            mode: Mode::Normal,
            echo: None,
            gated: false,
        }
    }
    pub fn status(mut self, status: u16) -> Answer {
        self.status = status;
        self
    }
    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
    pub fn delay(mut self, d: Duration) -> Answer {
        self.delay = d;
        self
    }
    pub fn cut(mut self, declared: usize) -> Answer {
        self.mode = Mode::Cut { declared };
        self
    }
    /// Appends the request's `name` field (or `-`) to the body.
    pub fn echo(mut self, name: &str) -> Answer {
        self.echo = Some(name.to_owned());
        self
    }
    /// Answered only once the gate is open.
    pub fn gated(mut self) -> Answer {
        self.gated = true;
        self
    }
    /// The head and `sent` bytes of the body at once, the rest when the
    /// gate opens ([`CacheOrigin::open_gate`]).
    pub fn part_then_gate(mut self, sent: usize) -> Answer {
        self.mode = Mode::Part { sent };
        self
    }

    pub fn hang(mut self) -> Answer {
        self.mode = Mode::Hang;
        self
    }
    fn etag(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
            .map(|(_, v)| v.as_str())
    }
}

/// One request as the origin read it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    pub head: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<String> {
        super::client::header_in(&self.head, name)
    }
}

#[derive(Default)]
struct State {
    answers: Mutex<HashMap<String, Answer>>,
    /// Requests per path (without the query), in order.
    seen: Mutex<HashMap<String, Vec<Seen>>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Open connections, to shut when the origin goes down.
    conns: Mutex<Vec<TcpStream>>,
    accepted: AtomicUsize,
    stop: AtomicBool,
    down: AtomicBool,
    /// Whether gated answers are held.
    gate_closed: Mutex<bool>,
    gate: Condvar,
}

pub struct CacheOrigin {
    pub addr: SocketAddr,
    state: Arc<State>,
    acceptor: Option<JoinHandle<()>>,
}

impl CacheOrigin {
    pub fn start() -> CacheOrigin {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let state = Arc::new(State::default());
        let acceptor = Some(accept_loop(l, state.clone()));
        CacheOrigin {
            addr,
            state,
            acceptor,
        }
    }

    /// Answers `path` (without query) with `a` from now on.
    pub fn set(&self, path: &str, a: Answer) {
        self.state
            .answers
            .lock()
            .unwrap()
            .insert(path.to_owned(), a);
    }

    /// Requests that reached `path` so far.
    pub fn count(&self, path: &str) -> usize {
        self.state
            .seen
            .lock()
            .unwrap()
            .get(path)
            .map_or(0, Vec::len)
    }

    /// Requests that reached any path so far.
    pub fn total(&self) -> usize {
        self.state.seen.lock().unwrap().values().map(Vec::len).sum()
    }

    /// The requests `path` got, in order.
    pub fn seen(&self, path: &str) -> Vec<Seen> {
        self.state
            .seen
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .unwrap_or_default()
    }

    /// Waits until `path` has had `n` requests (bounded).
    pub fn wait_count(&self, path: &str, n: usize) {
        let end = Instant::now() + Duration::from_secs(20);
        while self.count(path) < n {
            assert!(
                Instant::now() < end,
                "{path} reached {} times, never {n}",
                self.count(path)
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The most requests it was answering at once since the last reset.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    pub fn reset_max_in_flight(&self) {
        self.state.max_in_flight.store(0, Ordering::SeqCst);
    }

    /// Holds gated answers from now on.
    pub fn close_gate(&self) {
        *self.state.gate_closed.lock().unwrap() = true;
    }

    /// Lets gated answers go.
    pub fn open_gate(&self) {
        *self.state.gate_closed.lock().unwrap() = false;
        self.state.gate.notify_all();
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }

    /// Stops listening and shuts every open connection: connecting is
    /// refused until [`CacheOrigin::up`].
    pub fn down(&mut self) {
        self.state.down.store(true, Ordering::SeqCst);
        if let Some(h) = self.acceptor.take() {
            let _ = TcpStream::connect(self.addr);
            h.join().unwrap();
        }
        for c in self.state.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Listens again on the same port.
    pub fn up(&mut self) {
        assert!(self.acceptor.is_none(), "origin is up");
        self.state.down.store(false, Ordering::SeqCst);
        let l = TcpListener::bind(self.addr).unwrap();
        self.acceptor = Some(accept_loop(l, self.state.clone()));
    }
}

impl Drop for CacheOrigin {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        self.open_gate();
        self.down();
    }
}

fn accept_loop(l: TcpListener, st: Arc<State>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for c in l.incoming() {
            if st.down.load(Ordering::SeqCst) || st.stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(c) = c else { continue };
            st.accepted.fetch_add(1, Ordering::SeqCst);
            if let Ok(k) = c.try_clone() {
                st.conns.lock().unwrap().push(k);
            }
            let st = st.clone();
            std::thread::spawn(move || serve(c, &st));
        }
    })
}

fn read_req(r: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let first = head.lines().next()?.to_owned();
    let mut parts = first.split(' ');
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let seen = Seen {
        method,
        target,
        head,
    };
    // Request bodies are read and dropped (Content-Length only).
    if let Some(n) = seen
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut body = vec![0; n];
        r.read_exact(&mut body).ok()?;
    }
    Some(seen)
}

/// `bytes=A-B` (both given) within `len`.
fn range_of(v: &str, len: usize) -> Option<(usize, usize)> {
    let (a, b) = v.strip_prefix("bytes=")?.split_once('-')?;
    let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b && b < len).then_some((a, b))
}

fn serve(c: TcpStream, st: &State) {
    let mut w = c.try_clone().unwrap();
    let mut r = BufReader::new(c);
    while let Some(req) = read_req(&mut r) {
        let path = req.target.split('?').next().unwrap_or("").to_owned();
        let nth = {
            let mut seen = st.seen.lock().unwrap();
            let v = seen.entry(path.clone()).or_default();
            v.push(req.clone());
            v.len()
        };
        let now = st.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        st.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let a = st.answers.lock().unwrap().get(&path).cloned();
        let mut a = a.unwrap_or_else(|| Answer::ok(format!("default {path}")));
        if let Some(name) = &a.echo {
            let v = req.header(name).unwrap_or_else(|| "-".to_owned());
            a.body.extend_from_slice(v.as_bytes());
        }
        if a.gated {
            let mut closed = st.gate_closed.lock().unwrap();
            while *closed && !st.stop.load(Ordering::SeqCst) {
                closed = st.gate.wait(closed).unwrap();
            }
        }
        if !a.delay.is_zero() {
            std::thread::sleep(a.delay);
        }
        let go_on = match a.mode {
            Mode::Hang => {
                while !st.stop.load(Ordering::SeqCst) && !st.down.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                false
            }
            Mode::Part { sent } => {
                let mut out = head(a.status, &a.headers, a.body.len(), nth, "");
                out.extend_from_slice(&a.body[..sent]);
                let ok = w.write_all(&out).is_ok();
                let mut closed = st.gate_closed.lock().unwrap();
                while *closed && !st.stop.load(Ordering::SeqCst) {
                    closed = st.gate.wait(closed).unwrap();
                }
                drop(closed);
                ok && w.write_all(&a.body[sent..]).is_ok()
            }
            Mode::Cut { declared } => {
                let mut out = head(a.status, &a.headers, declared, nth, "");
                out.extend_from_slice(&a.body);
                let _ = w.write_all(&out);
                false
            }
            Mode::Normal => {
                let inm = req.header("if-none-match");
                let not_modified = a.etag().is_some_and(|e| {
                    inm.as_deref()
                        .is_some_and(|i| i.split(',').any(|t| t.trim() == e))
                });
                let out = if not_modified {
                    let hs: Vec<_> = a
                        .headers
                        .iter()
                        .filter(|(n, _)| !n.eq_ignore_ascii_case("content-length"))
                        .cloned()
                        .collect();
                    head_no_length(304, &hs, nth)
                } else if let Some((s, e)) = req
                    .header("range")
                    .filter(|_| a.status == 200)
                    .and_then(|v| range_of(&v, a.body.len()))
                {
                    let cr = format!("Content-Range: bytes {s}-{e}/{}\r\n", a.body.len());
                    let mut out = head(206, &a.headers, e - s + 1, nth, &cr);
                    if req.method != "HEAD" {
                        out.extend_from_slice(&a.body[s..=e]);
                    }
                    out
                } else {
                    let mut out = head(a.status, &a.headers, a.body.len(), nth, "");
                    if req.method != "HEAD" {
                        out.extend_from_slice(&a.body);
                    }
                    out
                };
                w.write_all(&out).is_ok()
            }
        };
        st.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !go_on {
            let _ = w.shutdown(Shutdown::Both);
            return;
        }
    }
}

fn head(status: u16, hs: &[(String, String)], len: usize, nth: usize, extra: &str) -> Vec<u8> {
    let mut s = format!("HTTP/1.1 {status} X\r\nX-Count: {nth}\r\nContent-Length: {len}\r\n");
    for (n, v) in hs {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str(extra);
    s.push_str("\r\n");
    s.into_bytes()
}

fn head_no_length(status: u16, hs: &[(String, String)], nth: usize) -> Vec<u8> {
    let mut s = format!("HTTP/1.1 {status} X\r\nX-Count: {nth}\r\n");
    for (n, v) in hs {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// A config proxying every path to `origin` through the cache `c`, with
/// `cache` and `upstream` lines added to their sections. The upstream is
/// never marked down (`max_fails = 0`), so each request tries it.
pub fn config(origin: SocketAddr, cache: &str, upstream: &str) -> String {
    format!(
        "[cache.c]\n{cache}\n\n\
         [upstream.o]\nservers = [\"{origin}\"]\nmax_fails = 0\n{upstream}\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"o\"\ncache = \"c\"\n"
    )
}

/// A request for `path` with Host `t` and the fields `extra`.
pub fn request(method: &str, path: &str, extra: &[(&str, &str)]) -> String {
    let mut s = format!("{method} {path} HTTP/1.1\r\nHost: t\r\n");
    for (n, v) in extra {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s
}

/// `n` bytes of a pattern that `seed` changes.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i * 7 + seed as usize) % 251) as u8)
        .collect()
}

/// Sends one request on a connection of its own and reads the response.
pub fn fetch(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
) -> super::client::Resp {
    let mut c = super::client::Conn::open(addr);
    c.read_after(&request(method, path, extra))
        .unwrap_or_else(|| panic!("no response to {method} {path}"))
}

/// The `Cache-Status` of `r`, "" when it has none.
pub fn cache_status(r: &super::client::Resp) -> String {
    r.header("cache-status").unwrap_or_default()
}

/// Whether `r` was answered from the store (a hit).
pub fn is_hit(r: &super::client::Resp) -> bool {
    cache_status(r).split(';').any(|p| p.trim() == "hit")
}
