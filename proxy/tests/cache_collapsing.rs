//! Request collapsing through the binary: concurrent misses for one key
//! join the first request's fetch and stream its response as it arrives
//! (a fetch that breaks cuts theirs too); a response the cache may not
//! keep makes the key a pass (hit-for-miss), whose requests go to the
//! origin side by side.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::cache_origin::{cache_status, config, fetch, is_hit, pattern, Answer, CacheOrigin};
use common::client::{Conn, Resp};
use common::{Ringside, TempDir, BACKENDS};

const THREADS: usize = 50;
const CONNS: usize = 20;
const BODY: usize = 64 * 1024;
const DELAY: Duration = Duration::from_millis(300);

/// `threads` × `conns` connections, all opened first; then every thread
/// sends `GET path` on each of its connections before reading any answer.
fn burst(addr: SocketAddr, path: &str, threads: usize, conns: usize) -> Vec<Resp> {
    let ready = Arc::new(Barrier::new(threads));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let ready = ready.clone();
            let path = path.to_owned();
            std::thread::spawn(move || {
                let mut cs: Vec<Conn> = (0..conns).map(|_| Conn::open(addr)).collect();
                ready.wait();
                let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
                for c in &mut cs {
                    c.send(req.as_bytes());
                }
                cs.iter_mut()
                    .map(|c| c.read(false).expect("a response"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    hs.into_iter()
        .flat_map(|h| h.join().expect("client thread"))
        .collect()
}

fn check_all(rs: &[Resp], want: &[u8], backend: &str) {
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.status, 200, "{backend}: response {i}: {}", r.head);
        assert!(r.complete, "{backend}: response {i} cut: {}", r.head);
        assert_eq!(r.body.len(), want.len(), "{backend}: response {i} length");
        assert!(r.body == want, "{backend}: response {i} body differs");
    }
}

#[test]
fn a_thousand_concurrent_misses_reach_the_origin_once() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let body = pattern(BODY, 1);
        origin.set(
            "/cold",
            Answer::ok(body.clone())
                .header("Cache-Control", "max-age=60")
                .delay(DELAY),
        );
        let dir = TempDir::new("cache-collapse");
        let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        let rs = burst(srv.addr, "/cold", THREADS, CONNS);
        assert_eq!(rs.len(), THREADS * CONNS);
        check_all(&rs, &body, backend);
        assert_eq!(
            origin.count("/cold"),
            1,
            "{backend}: {} concurrent requests for a cold key",
            rs.len()
        );
        // All but the one that fetched were answered from the store, and
        // some waited for that fetch (they came while it was under way).
        let hits = rs.iter().filter(|r| is_hit(r)).count();
        assert_eq!(hits, rs.len() - 1, "{backend}: hits");
        let collapsed = rs
            .iter()
            .filter(|r| cache_status(r).contains("detail=collapsed"))
            .count();
        assert!(collapsed > 0, "{backend}: no request waited for the fetch");
        eprintln!(
            "{backend}: {collapsed} of {} waited for the fetch",
            rs.len()
        );
        srv.stop();
    }
}

#[test]
fn a_private_response_is_not_collapsed_after_the_first() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let body = pattern(BODY, 2);
        origin.set(
            "/private",
            Answer::ok(body.clone())
                .header("Cache-Control", "private, max-age=60")
                .delay(DELAY),
        );
        let dir = TempDir::new("cache-collapse-private");
        let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        let rs = burst(srv.addr, "/private", THREADS, CONNS);
        assert_eq!(rs.len(), THREADS * CONNS);
        check_all(&rs, &body, backend);
        assert!(
            rs.iter().all(|r| !is_hit(r)),
            "{backend}: a private response was answered from the store"
        );
        assert_eq!(
            origin.count("/private"),
            rs.len(),
            "{backend}: each request for a private response reaches the origin"
        );
        // The key is a pass now: 20 concurrent requests all go to the
        // origin, side by side rather than one after another.
        let before = origin.count("/private");
        origin.reset_max_in_flight();
        let rs = burst(srv.addr, "/private", 20, 1);
        check_all(&rs, &body, backend);
        assert!(rs.iter().all(|r| !is_hit(r)), "{backend}: hit on a pass");
        assert_eq!(origin.count("/private"), before + 20, "{backend}");
        let most = origin.max_in_flight();
        assert!(
            most > 1,
            "{backend}: requests for a hit-for-miss key were serialised (at most {most} at once)"
        );
        srv.stop();
    }
}

/// After one response the cache may not keep, the key is a pass for
/// `hit_for_miss`: concurrent requests for it all reach the origin while
/// none has been answered yet (the origin holds them all at a gate), none
/// waiting for another's fetch. `lock_timeout` is long, so a request that
/// did wait would not reach the origin before the gate opens.
fn side_by_side(cases: &[(&'static str, Answer)]) {
    const N: usize = 20;
    for backend in ["io-uring", "epoll"] {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-collapse-pass");
        let cache = "lock_timeout = \"60s\"\nmax_object = \"16k\"";
        let cfg = dir.write("r.toml", config(origin.addr, cache, "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        for (path, answer) in cases {
            let path = *path;
            origin.set(path, answer.clone());
            let first = fetch(srv.addr, "GET", path, &[]);
            assert_eq!(first.status, 200, "{backend} {path}");
            assert!(first.body == answer.body, "{backend} {path}: body");
            origin.set(path, answer.clone().gated());
            origin.close_gate();
            let ready = Arc::new(Barrier::new(N));
            let addr = srv.addr;
            let hs: Vec<_> = (0..N)
                .map(|_| {
                    let ready = ready.clone();
                    std::thread::spawn(move || {
                        let mut c = Conn::open(addr);
                        ready.wait();
                        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
                        c.read(false).expect("a response")
                    })
                })
                .collect();
            // Bounded (20 s): fails when the requests wait for one another.
            origin.wait_count(path, 1 + N);
            origin.open_gate();
            for h in hs {
                let r = h.join().expect("client");
                assert_eq!(r.status, 200, "{backend} {path}");
                assert!(r.body == answer.body, "{backend} {path}: body");
                assert!(!is_hit(&r), "{backend} {path}: {}", r.head);
            }
        }
        srv.stop();
    }
}

#[test]
fn a_pass_key_is_fetched_side_by_side() {
    side_by_side(&[
        (
            "/private",
            Answer::ok("p").header("Cache-Control", "private"),
        ),
        (
            "/no-store",
            Answer::ok("n").header("Cache-Control", "no-store"),
        ),
        (
            "/cookie",
            Answer::ok("c")
                .header("Cache-Control", "max-age=60")
                .header("Set-Cookie", "a=b"),
        ),
    ]);
}

/// A body above `max_object` is not storable either: its key is a pass
/// too, not collapsed onto each first request's whole transfer again.
#[test]
fn a_key_above_max_object_is_a_pass() {
    side_by_side(&[(
        "/above-max-object",
        Answer::ok(pattern(BODY, 3)).header("Cache-Control", "max-age=60"),
    )]);
}

/// Reads a response's head and then `n` bytes of its body from a raw
/// connection, without waiting for the rest.
fn head_and_first(c: &mut Conn, n: usize) -> (String, Vec<u8>) {
    use std::io::{BufRead, Read};
    let r = c.raw();
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(
            r.read_line(&mut line).unwrap() > 0,
            "closed in the head: {head}"
        );
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; n];
    r.read_exact(&mut body).unwrap();
    (head, body)
}

#[test]
fn a_waiter_streams_the_fetch_as_it_arrives() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-collapse-stream");
        let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        let whole = pattern(BODY, 9);
        origin.close_gate();
        origin.set(
            "/slow",
            Answer::ok(whole.clone())
                .header("Cache-Control", "max-age=60")
                .part_then_gate(1000),
        );
        // The first request fetches; its head and first bytes come.
        let mut first = Conn::open(srv.addr);
        first.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
        let (_, got) = head_and_first(&mut first, 1000);
        assert_eq!(got, &whole[..1000], "{backend}");
        // A second request joins the fetch and gets what came so far while
        // the origin still holds the rest: streamed, not waited out.
        let mut second = Conn::open(srv.addr);
        second.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
        let (head, got) = head_and_first(&mut second, 1000);
        assert!(head.contains("detail=collapsed"), "{backend}: {head}");
        assert_eq!(got, &whole[..1000], "{backend}");
        origin.open_gate();
        for c in [&mut first, &mut second] {
            use std::io::Read;
            let mut rest = vec![0; BODY - 1000];
            c.raw().read_exact(&mut rest).unwrap();
            assert_eq!(rest, &whole[1000..], "{backend}");
        }
        assert_eq!(origin.count("/slow"), 1, "{backend}");
        assert!(is_hit(&fetch(srv.addr, "GET", "/slow", &[])), "{backend}");
        srv.stop();
    }
}

#[test]
fn a_waiter_on_a_broken_fetch_gets_no_whole_response() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-collapse-broken");
        let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        let whole = pattern(BODY, 4);
        origin.close_gate();
        origin.set(
            "/breaks",
            Answer::ok(whole[..2000].to_vec())
                .header("Cache-Control", "max-age=60")
                .cut(BODY)
                .gated(),
        );
        let mut first = Conn::open(srv.addr);
        first.send(b"GET /breaks HTTP/1.1\r\nHost: t\r\n\r\n");
        origin.wait_count("/breaks", 1);
        let mut second = Conn::open(srv.addr);
        second.send(b"GET /breaks HTTP/1.1\r\nHost: t\r\n\r\n");
        origin.open_gate();
        for c in [&mut first, &mut second] {
            let r = c.read(false);
            assert!(
                r.as_ref().is_none_or(|r| !r.complete || r.status >= 500),
                "{backend}: a cut fetch reached a client as whole: {:?}",
                r.map(|r| (r.status, r.body.len()))
            );
        }
        srv.stop();
    }
}
