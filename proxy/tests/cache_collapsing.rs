//! Request collapsing through the binary: concurrent misses for one key
//! wait for the first request's fetch and are answered from what it
//! stored; a response the cache may not keep makes the key a pass
//! (hit-for-miss), whose requests go to the origin side by side.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::cache_origin::{cache_status, config, is_hit, pattern, Answer, CacheOrigin};
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
        eprintln!("{backend}: {collapsed} of {} waited for the fetch", rs.len());
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
