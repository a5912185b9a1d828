//! Stale responses through the binary: `stale-if-error` stands in when the
//! origin refuses connections, hangs past the response timeout or answers
//! 5xx, never beyond its window and never for `must-revalidate`; a stale
//! response is revalidated with its validators and a 304 refreshes it.
//!
//! The origin sends `Age: 100` with `max-age=60`, so what is stored is
//! stale from the start: no test waits for a lifetime to pass.

mod common;

use common::cache_origin::{cache_status, config, fetch, is_hit, Answer, CacheOrigin};
use common::{Ringside, TempDir, BACKENDS};

/// The upstream's timeouts: a hang is a 504 after 300 ms.
const UPSTREAM: &str = "response_timeout = \"300ms\"\nconnect_timeout = \"1s\"";

fn server(backend: &str, origin: &CacheOrigin, dir: &TempDir) -> Ringside {
    let cfg = dir.write("r.toml", config(origin.addr, "", UPSTREAM).as_bytes());
    Ringside::workers(backend, 1, &cfg)
}

/// Stores `body` for `path` (stale at once) and checks it was a miss.
fn store_stale(srv: &Ringside, origin: &CacheOrigin, path: &str, cc: &str, body: &str) {
    origin.set(
        path,
        Answer::ok(body)
            .header("Cache-Control", cc)
            .header("Age", "100"),
    );
    let r = fetch(srv.addr, "GET", path, &[]);
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.text(), body);
    assert!(!is_hit(&r), "first request was a hit: {}", r.head);
    assert_eq!(origin.count(path), 1);
}

fn assert_stale_if_error(r: &common::client::Resp, body: &str, what: &str) {
    assert_eq!(r.status, 200, "{what}: {}", r.head);
    assert_eq!(r.text(), body, "{what}");
    let cs = cache_status(r);
    assert!(
        cs.contains("detail=stale-if-error"),
        "{what}: Cache-Status {cs:?}"
    );
}

#[test]
fn stale_if_error_serves_when_the_origin_is_down() {
    for backend in BACKENDS {
        let mut origin = CacheOrigin::start();
        let dir = TempDir::new("cache-stale-down");
        let srv = server(backend, &origin, &dir);
        let cc = "max-age=60, stale-if-error=600";
        store_stale(&srv, &origin, "/down", cc, "kept for bad days");
        origin.down();
        let r = fetch(srv.addr, "GET", "/down", &[]);
        assert_stale_if_error(&r, "kept for bad days", &format!("{backend}: refused"));
        // Nothing stored for another path: the error goes to the client.
        let r = fetch(srv.addr, "GET", "/never-stored", &[]);
        assert_eq!(r.status, 502, "{backend}: {}", r.head);
        origin.up();
        // Back up: revalidated (no validators: a full 200), new body.
        origin.set(
            "/down",
            Answer::ok("fresh again").header("Cache-Control", "max-age=60"),
        );
        let r = fetch(srv.addr, "GET", "/down", &[]);
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(r.text(), "fresh again", "{backend}");
        assert_eq!(origin.count("/down"), 2, "{backend}");
        srv.stop();
    }
}

#[test]
fn stale_if_error_serves_when_the_origin_hangs_or_fails() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-stale-hang");
        let srv = server(backend, &origin, &dir);
        let cc = "max-age=60, stale-if-error=600";
        store_stale(&srv, &origin, "/hang", cc, "kept while it hangs");
        origin.set("/hang", Answer::ok("never sent").hang());
        let r = fetch(srv.addr, "GET", "/hang", &[]);
        assert_stale_if_error(&r, "kept while it hangs", &format!("{backend}: hang"));
        assert_eq!(
            origin.count("/hang"),
            2,
            "{backend}: the stale one was tried"
        );

        store_stale(&srv, &origin, "/fail", cc, "kept while it fails");
        origin.set("/fail", Answer::ok("origin error page").status(503));
        let r = fetch(srv.addr, "GET", "/fail", &[]);
        assert_stale_if_error(&r, "kept while it fails", &format!("{backend}: 503"));
        assert_eq!(origin.count("/fail"), 2, "{backend}");
        srv.stop();
    }
}

#[test]
fn must_revalidate_and_an_expired_window_are_not_served_stale() {
    for backend in BACKENDS {
        let mut origin = CacheOrigin::start();
        let dir = TempDir::new("cache-stale-mustrev");
        let srv = server(backend, &origin, &dir);
        let strict = "max-age=60, must-revalidate, stale-if-error=600";
        store_stale(
            &srv,
            &origin,
            "/strict-hang",
            strict,
            "must not be served stale",
        );
        store_stale(
            &srv,
            &origin,
            "/strict-fail",
            strict,
            "must not be served stale",
        );
        // Stale by 40 s, but stale-if-error allows only 10.
        let short = "max-age=60, stale-if-error=10";
        store_stale(&srv, &origin, "/short", short, "too stale");

        origin.set("/strict-hang", Answer::ok("x").hang());
        let r = fetch(srv.addr, "GET", "/strict-hang", &[]);
        assert_eq!(
            r.status, 504,
            "{backend}: must-revalidate, hang: {}",
            r.head
        );
        assert_ne!(r.text(), "must not be served stale", "{backend}");

        origin.set("/strict-fail", Answer::ok("origin says 500").status(500));
        let r = fetch(srv.addr, "GET", "/strict-fail", &[]);
        assert_eq!(r.status, 500, "{backend}: must-revalidate, 500: {}", r.head);
        assert_eq!(r.text(), "origin says 500", "{backend}");

        origin.down();
        let r = fetch(srv.addr, "GET", "/strict-fail", &[]);
        assert_eq!(
            r.status, 502,
            "{backend}: must-revalidate, down: {}",
            r.head
        );
        assert_ne!(r.text(), "must not be served stale", "{backend}");
        let r = fetch(srv.addr, "GET", "/short", &[]);
        assert_eq!(r.status, 502, "{backend}: past stale-if-error: {}", r.head);
        assert_ne!(r.text(), "too stale", "{backend}");
        srv.stop();
    }
}

#[test]
fn a_304_refreshes_the_stored_response() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-stale-304");
        let srv = server(backend, &origin, &dir);
        origin.set(
            "/r",
            Answer::ok("the stored body")
                .header("Cache-Control", "max-age=60")
                .header("ETag", "\"v1\"")
                .header("Age", "100"),
        );
        let r = fetch(srv.addr, "GET", "/r", &[]);
        assert_eq!(r.text(), "the stored body", "{backend}");
        // Unchanged by its ETag (so a 304), though this body differs: a
        // client given it was not answered from the store. No Age now: the
        // refreshed response is fresh.
        origin.set(
            "/r",
            Answer::ok("not the stored body")
                .header("Cache-Control", "max-age=60")
                .header("ETag", "\"v1\""),
        );
        // The client's own condition is not what goes upstream.
        let r = fetch(srv.addr, "GET", "/r", &[("If-None-Match", "\"client\"")]);
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(r.text(), "the stored body", "{backend}");
        let cs = cache_status(&r);
        assert!(
            cs.contains("fwd=stale") && cs.contains("fwd-status=304"),
            "{backend}: Cache-Status {cs:?}"
        );
        let seen = origin.seen("/r");
        assert_eq!(seen.len(), 2, "{backend}");
        assert_eq!(seen[0].header("if-none-match"), None, "{backend}");
        assert_eq!(
            seen[1].header("if-none-match").as_deref(),
            Some("\"v1\""),
            "{backend}: revalidation: {}",
            seen[1].head
        );
        // Refreshed: a hit now, from the same stored body.
        let r = fetch(srv.addr, "GET", "/r", &[]);
        assert!(is_hit(&r), "{backend}: not refreshed: {}", r.head);
        assert_eq!(r.text(), "the stored body", "{backend}");
        assert_eq!(origin.count("/r"), 2, "{backend}");

        // Last-Modified alone: revalidated with If-Modified-Since.
        let lm = "Tue, 01 Jul 2025 10:00:00 GMT";
        origin.set(
            "/lm",
            Answer::ok("dated")
                .header("Cache-Control", "max-age=60")
                .header("Last-Modified", lm)
                .header("Age", "100"),
        );
        fetch(srv.addr, "GET", "/lm", &[]);
        fetch(srv.addr, "GET", "/lm", &[]);
        let seen = origin.seen("/lm");
        assert_eq!(seen.len(), 2, "{backend}");
        assert_eq!(
            seen[1].header("if-modified-since").as_deref(),
            Some(lm),
            "{backend}: {}",
            seen[1].head
        );
        srv.stop();
    }
}

#[test]
fn stale_while_revalidate_answers_stale_then_refreshes_once() {
    for backend in BACKENDS {
        let mut origin = CacheOrigin::start();
        let dir = TempDir::new("cache-stale-swr");
        let srv = server(backend, &origin, &dir);
        let cc = "max-age=60, stale-while-revalidate=600";
        origin.set(
            "/swr",
            Answer::ok("v1")
                .header("Cache-Control", cc)
                .header("ETag", "\"v1\"")
                .header("Age", "100"),
        );
        assert_eq!(fetch(srv.addr, "GET", "/swr", &[]).text(), "v1");
        // Stale within the window: answered at once from the store, and
        // the request then revalidates it (the origin sees its ETag).
        origin.set(
            "/swr",
            Answer::ok("v2")
                .header("Cache-Control", "max-age=60")
                .header("ETag", "\"v2\""),
        );
        let r = fetch(srv.addr, "GET", "/swr", &[]);
        assert_eq!(r.text(), "v1", "{backend}: {}", r.head);
        assert!(
            cache_status(&r).contains("fwd=stale"),
            "{backend}: {}",
            r.head
        );
        origin.wait_count("/swr", 2);
        let seen = origin.seen("/swr");
        assert_eq!(
            seen[1].header("if-none-match").as_deref(),
            Some("\"v1\""),
            "{backend}: the refresh did not revalidate"
        );
        // The refresh stored the new response: fresh now, from the store.
        let r = fetch(srv.addr, "GET", "/swr", &[]);
        assert_eq!(r.text(), "v2", "{backend}: {}", r.head);
        assert!(is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(origin.count("/swr"), 2, "{backend}");
        // With the origin down, a stale answer still comes at once.
        origin.set(
            "/down",
            Answer::ok("old")
                .header("Cache-Control", cc)
                .header("Age", "100"),
        );
        assert_eq!(fetch(srv.addr, "GET", "/down", &[]).text(), "old");
        origin.down();
        let r = fetch(srv.addr, "GET", "/down", &[]);
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "old"),
            "{backend}: {}",
            r.head
        );
        srv.stop();
    }
}
