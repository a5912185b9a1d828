//! PURGE through the binary: by URL, by path prefix, by tag
//! (`Surrogate-Key`, `Cache-Tag`), soft (`Soft-Purge: 1`: marked stale,
//! so revalidated), only from the cache's `purge_from` addresses (403
//! from others), and on every worker.

mod common;

use std::net::{IpAddr, SocketAddr};

use common::cache_origin::{config, fetch, is_hit, request, Answer, CacheOrigin};
use common::client::{Conn, Resp};
use common::{Ringside, TempDir, BACKENDS};

const ALLOWED: &str = "127.0.0.2";
const REFUSED: &str = "127.0.0.1";

fn purge_config(origin: &CacheOrigin) -> String {
    config(origin.addr, "purge_from = [\"127.0.0.2/32\"]", "")
}

fn purge_from(addr: SocketAddr, from: &str, path: &str, extra: &[(&str, &str)]) -> Resp {
    let mut c = Conn::open_from(addr, from.parse::<IpAddr>().unwrap());
    c.read_after(&request("PURGE", path, extra))
        .expect("a response to PURGE")
}

/// The `purged_here` count of a purge's JSON answer.
fn purged_here(r: &Resp) -> usize {
    assert_eq!(r.status, 200, "{}", r.head);
    let t = r.text();
    let n = t
        .split("\"purged_here\":")
        .nth(1)
        .unwrap_or_else(|| panic!("no purged_here in {t:?}"));
    n.trim()
        .trim_end_matches('}')
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("purged_here in {t:?}"))
}

/// Stores `path` (fresh for a minute) with `extra` fields, and checks the
/// next request is a hit.
fn stored(srv: &Ringside, origin: &CacheOrigin, path: &str, extra: &[(&str, &str)]) {
    let mut a = Answer::ok(format!("body of {path}")).header("Cache-Control", "max-age=60");
    for (n, v) in extra {
        a = a.header(n, v);
    }
    origin.set(path, a);
    let before = origin.count(path);
    let r = fetch(srv.addr, "GET", path, &[]);
    assert_eq!(r.status, 200, "{}", r.head);
    let r = fetch(srv.addr, "GET", path, &[]);
    assert!(is_hit(&r), "{path} not stored: {}", r.head);
    assert_eq!(origin.count(path), before + 1);
}

/// Whether a GET of `path` is answered from the store (checked against
/// the origin's count, not the Cache-Status alone).
fn hit(srv: &Ringside, origin: &CacheOrigin, path: &str) -> bool {
    let before = origin.count(path);
    let r = fetch(srv.addr, "GET", path, &[]);
    assert_eq!(r.status, 200, "{}", r.head);
    let reached = origin.count(path) > before;
    assert_eq!(
        is_hit(&r),
        !reached,
        "{path}: Cache-Status vs origin: {}",
        r.head
    );
    !reached
}

#[test]
fn purge_by_url_only_from_purge_from() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-url");
        let cfg = dir.write("r.toml", purge_config(&origin).as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        stored(&srv, &origin, "/p", &[]);
        stored(&srv, &origin, "/q", &[]);

        let r = purge_from(srv.addr, REFUSED, "/p", &[]);
        assert_eq!(r.status, 403, "{backend}: PURGE from {REFUSED}: {}", r.head);
        assert!(
            hit(&srv, &origin, "/p"),
            "{backend}: a refused PURGE purged"
        );

        let r = purge_from(srv.addr, ALLOWED, "/p", &[]);
        assert_eq!(purged_here(&r), 1, "{backend}");
        assert!(!hit(&srv, &origin, "/p"), "{backend}: purged /p was a hit");
        assert!(hit(&srv, &origin, "/p"), "{backend}: /p stored again");
        assert!(hit(&srv, &origin, "/q"), "{backend}: /q was purged too");
        // Nothing stored there: nothing purged.
        let r = purge_from(srv.addr, ALLOWED, "/absent", &[]);
        assert_eq!(purged_here(&r), 0, "{backend}");
        srv.stop();
    }
}

#[test]
fn purge_from_loopback_by_default() {
    for backend in ["io-uring", "epoll"] {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-default");
        let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        stored(&srv, &origin, "/p", &[]);
        let r = purge_from(srv.addr, REFUSED, "/p", &[]);
        assert_eq!(purged_here(&r), 1, "{backend}: loopback, no purge_from");
        assert!(!hit(&srv, &origin, "/p"), "{backend}");
        srv.stop();
    }
}

#[test]
fn purge_by_tag_and_prefix() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-tag");
        let cfg = dir.write("r.toml", purge_config(&origin).as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        stored(&srv, &origin, "/t1", &[("Surrogate-Key", "red blue")]);
        stored(&srv, &origin, "/t2", &[("Cache-Tag", "green,blue")]);
        stored(&srv, &origin, "/t3", &[("Surrogate-Key", "red")]);

        let r = purge_from(srv.addr, REFUSED, "/", &[("Surrogate-Key", "blue")]);
        assert_eq!(r.status, 403, "{backend}: {}", r.head);
        assert!(hit(&srv, &origin, "/t1"), "{backend}: refused tag purge");

        let r = purge_from(srv.addr, ALLOWED, "/", &[("Surrogate-Key", "blue")]);
        assert_eq!(purged_here(&r), 2, "{backend}: tag blue");
        assert!(!hit(&srv, &origin, "/t1"), "{backend}: /t1 tagged blue");
        assert!(!hit(&srv, &origin, "/t2"), "{backend}: /t2 tagged blue");
        assert!(hit(&srv, &origin, "/t3"), "{backend}: /t3 is red only");

        stored(&srv, &origin, "/pre/a", &[]);
        stored(&srv, &origin, "/pre/b/c", &[]);
        stored(&srv, &origin, "/prelude", &[]);
        stored(&srv, &origin, "/other", &[]);
        let r = purge_from(srv.addr, ALLOWED, "/pre/*", &[]);
        assert_eq!(purged_here(&r), 2, "{backend}: prefix /pre/");
        assert!(!hit(&srv, &origin, "/pre/a"), "{backend}");
        assert!(!hit(&srv, &origin, "/pre/b/c"), "{backend}");
        assert!(hit(&srv, &origin, "/prelude"), "{backend}: not under /pre/");
        assert!(hit(&srv, &origin, "/other"), "{backend}");
        srv.stop();
    }
}

#[test]
fn soft_purge_revalidates() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-soft");
        let cfg = dir.write("r.toml", purge_config(&origin).as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        stored(&srv, &origin, "/s", &[("ETag", "\"s1\"")]);
        let r = purge_from(srv.addr, ALLOWED, "/s", &[("Soft-Purge", "1")]);
        assert_eq!(purged_here(&r), 1, "{backend}");
        let r = fetch(srv.addr, "GET", "/s", &[]);
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(r.text(), "body of /s", "{backend}");
        let seen = origin.seen("/s");
        assert_eq!(seen.len(), 2, "{backend}: soft-purged, not revalidated");
        assert_eq!(
            seen[1].header("if-none-match").as_deref(),
            Some("\"s1\""),
            "{backend}: {}",
            seen[1].head
        );
        // The 304 made it fresh again.
        assert!(hit(&srv, &origin, "/s"), "{backend}");
        srv.stop();
    }
}

#[test]
fn a_purge_reaches_every_worker() {
    const WORKERS: usize = 2;
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-workers");
        let cfg = dir.write("r.toml", purge_config(&origin).as_bytes());
        let srv = Ringside::workers(backend, WORKERS as u32, &cfg);
        origin.set(
            "/w",
            Answer::ok("old").header("Cache-Control", "max-age=60"),
        );
        // Each worker keeps its own copy: new connections (spread over
        // the workers' listeners by the kernel) until both fetched one.
        let mut tries = 0;
        while origin.count("/w") < WORKERS {
            tries += 1;
            assert!(tries < 500, "{backend}: one worker took 500 connections");
            let r = fetch(srv.addr, "GET", "/w", &[]);
            assert_eq!(r.text(), "old", "{backend}");
        }
        assert_eq!(
            origin.count("/w"),
            WORKERS,
            "{backend}: one copy per worker"
        );

        origin.set(
            "/w",
            Answer::ok("new").header("Cache-Control", "max-age=60"),
        );
        let r = purge_from(srv.addr, ALLOWED, "/w", &[]);
        assert_eq!(purged_here(&r), 1, "{backend}: here");
        for i in 0..100 {
            let r = fetch(srv.addr, "GET", "/w", &[]);
            assert_eq!(
                r.text(),
                "new",
                "{backend}: request {i} after the purge got the old body: {}",
                r.head
            );
        }
        let after = origin.count("/w") - WORKERS;
        assert!(
            (1..=WORKERS).contains(&after),
            "{backend}: {after} fetches after the purge"
        );
        srv.stop();
    }
}

/// A successful POST, PUT, DELETE or PATCH drops its target and the same
/// host's `Location` / `Content-Location`; a failed one drops nothing.
#[test]
fn unsafe_methods_invalidate() {
    for backend in ["io-uring", "epoll"] {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-unsafe");
        let cfg = dir.write("r.toml", purge_config(&origin).as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        for m in ["POST", "PUT", "DELETE", "PATCH"] {
            let [doc, made, also, kept] =
                ["doc", "made", "also", "kept"].map(|n| format!("/{n}-{m}"));
            for p in [&doc, &made, &also, &kept] {
                stored(&srv, &origin, p, &[]);
            }
            origin.set(
                &doc,
                Answer::ok("done")
                    .status(201)
                    .header("Location", &made)
                    .header("Content-Location", &format!("http://t{also}")),
            );
            let r = fetch(srv.addr, m, &doc, &[("Content-Length", "0")]);
            assert_eq!(r.status, 201, "{backend} {m}: {}", r.head);
            origin.set(
                &doc,
                Answer::ok("again").header("Cache-Control", "max-age=60"),
            );
            for p in [&doc, &made, &also] {
                assert!(!hit(&srv, &origin, p), "{backend} {m}: {p} not invalidated");
            }
            assert!(hit(&srv, &origin, &kept), "{backend} {m}");
        }
        // A 4xx answer invalidates nothing.
        stored(&srv, &origin, "/doc", &[]);
        origin.set("/doc", Answer::ok("no").status(409));
        let r = fetch(srv.addr, "POST", "/doc", &[("Content-Length", "0")]);
        assert_eq!(r.status, 409, "{backend}");
        origin.set(
            "/doc",
            Answer::ok("body of /doc").header("Cache-Control", "max-age=60"),
        );
        assert!(
            hit(&srv, &origin, "/doc"),
            "{backend}: a failed POST invalidated"
        );
        srv.stop();
    }
}

/// A purge by URL drops all the key's Vary variants.
#[test]
fn purge_drops_every_variant() {
    for backend in ["io-uring", "epoll"] {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-purge-vary");
        let cfg = dir.write("r.toml", purge_config(&origin).as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        origin.set(
            "/v",
            Answer::ok("v:")
                .header("Cache-Control", "max-age=60")
                .header("Vary", "Accept-Language")
                .echo("accept-language"),
        );
        for l in ["en", "fr", "en", "fr"] {
            fetch(srv.addr, "GET", "/v", &[("Accept-Language", l)]);
        }
        assert_eq!(origin.count("/v"), 2, "{backend}");
        let r = purge_from(srv.addr, ALLOWED, "/v", &[]);
        assert!(purged_here(&r) >= 1, "{backend}");
        for l in ["en", "fr"] {
            let r = fetch(srv.addr, "GET", "/v", &[("Accept-Language", l)]);
            assert!(!is_hit(&r), "{backend}: {l} variant left: {}", r.head);
            assert_eq!(r.text(), format!("v:{l}"), "{backend}");
        }
        assert_eq!(origin.count("/v"), 4, "{backend}");
        srv.stop();
    }
}
