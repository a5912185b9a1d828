//! What a stored response may be given to, through the binary: `Vary`
//! variants kept and served apart (Accept-Encoding by which of gzip, br
//! and zstd the client takes), `Vary: *` never served from the store, a
//! response to a request with `Authorization` kept only when it says it
//! may be shared, and a response setting a cookie never served again.

mod common;

use common::cache_origin::{cache_status, config, fetch, is_hit, Answer, CacheOrigin};
use common::client::Resp;
use common::{Ringside, TempDir, BACKENDS};

fn server(backend: &str, origin: &CacheOrigin, dir: &TempDir) -> Ringside {
    let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
    Ringside::workers(backend, 1, &cfg)
}

fn get(srv: &Ringside, path: &str, extra: &[(&str, &str)]) -> Resp {
    let r = fetch(srv.addr, "GET", path, extra);
    assert_eq!(r.status, 200, "{}", r.head);
    r
}

#[test]
fn vary_accept_language_keeps_a_variant_per_language() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-vary-lang");
        let srv = server(backend, &origin, &dir);
        origin.set(
            "/lang",
            Answer::ok("lang:")
                .header("Cache-Control", "max-age=60")
                .header("Vary", "Accept-Language")
                .echo("accept-language"),
        );
        let en = [("Accept-Language", "en")];
        let fr = [("Accept-Language", "fr")];
        let r = get(&srv, "/lang", &en);
        assert_eq!(r.text(), "lang:en", "{backend}");
        assert!(
            cache_status(&r).contains("fwd=uri-miss"),
            "{backend}: {}",
            r.head
        );
        let r = get(&srv, "/lang", &fr);
        assert_eq!(r.text(), "lang:fr", "{backend}: fr given en's variant");
        assert!(
            cache_status(&r).contains("fwd=vary-miss"),
            "{backend}: {}",
            r.head
        );
        assert_eq!(origin.count("/lang"), 2, "{backend}");
        for _ in 0..3 {
            let r = get(&srv, "/lang", &en);
            assert_eq!(r.text(), "lang:en", "{backend}");
            assert!(is_hit(&r), "{backend}: {}", r.head);
            let r = get(&srv, "/lang", &fr);
            assert_eq!(r.text(), "lang:fr", "{backend}");
            assert!(is_hit(&r), "{backend}: {}", r.head);
        }
        // A third language, and none: variants of their own.
        let r = get(&srv, "/lang", &[("Accept-Language", "de")]);
        assert_eq!(r.text(), "lang:de", "{backend}");
        let r = get(&srv, "/lang", &[]);
        assert_eq!(r.text(), "lang:-", "{backend}");
        assert_eq!(origin.count("/lang"), 4, "{backend}");
        srv.stop();
    }
}

#[test]
fn vary_accept_encoding_counts_only_the_codings_it_knows() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-vary-ae");
        let srv = server(backend, &origin, &dir);
        origin.set(
            "/ae",
            Answer::ok("ae:")
                .header("Cache-Control", "max-age=60")
                .header("Vary", "Accept-Encoding")
                .echo("accept-encoding"),
        );
        let r = get(&srv, "/ae", &[("Accept-Encoding", "gzip")]);
        assert_eq!(r.text(), "ae:gzip", "{backend}");
        // gzip and deflate: deflate does not count, gzip's variant serves.
        let r = get(&srv, "/ae", &[("Accept-Encoding", "gzip, deflate")]);
        assert_eq!(r.text(), "ae:gzip", "{backend}: {}", r.head);
        assert!(is_hit(&r), "{backend}: {}", r.head);
        let r = get(&srv, "/ae", &[("Accept-Encoding", "br")]);
        assert_eq!(r.text(), "ae:br", "{backend}: br given gzip's variant");
        let r = get(&srv, "/ae", &[]);
        assert_eq!(r.text(), "ae:-", "{backend}: none given another's variant");
        // deflate alone is as none.
        let r = get(&srv, "/ae", &[("Accept-Encoding", "deflate")]);
        assert_eq!(r.text(), "ae:-", "{backend}");
        assert!(is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(origin.count("/ae"), 3, "{backend}");
        let r = get(&srv, "/ae", &[("Accept-Encoding", "br")]);
        assert_eq!(r.text(), "ae:br", "{backend}");
        assert!(is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(origin.count("/ae"), 3, "{backend}");
        srv.stop();
    }
}

#[test]
fn vary_star_and_set_cookie_are_never_served_from_the_store() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-vary-star");
        let srv = server(backend, &origin, &dir);
        origin.set(
            "/star",
            Answer::ok("star")
                .header("Cache-Control", "max-age=60")
                .header("Vary", "*"),
        );
        origin.set(
            "/cookie",
            Answer::ok("cookie for ")
                .header("Cache-Control", "max-age=60")
                .header("Set-Cookie", "sid=secret-of-the-first")
                .echo("x-client"),
        );
        for i in 1..=3 {
            let r = get(&srv, "/star", &[]);
            assert!(!is_hit(&r), "{backend}: Vary: * was a hit: {}", r.head);
            assert_eq!(origin.count("/star"), i, "{backend}: Vary: *");
        }
        let r = get(&srv, "/cookie", &[("X-Client", "first")]);
        assert_eq!(r.text(), "cookie for first", "{backend}");
        let r = get(&srv, "/cookie", &[("X-Client", "second")]);
        assert_eq!(
            r.text(),
            "cookie for second",
            "{backend}: another client's Set-Cookie response: {}",
            r.head
        );
        assert!(!is_hit(&r), "{backend}: {}", r.head);
        assert_ne!(
            r.header("set-cookie").as_deref(),
            None,
            "{backend}: the origin's own Set-Cookie is passed on"
        );
        assert_eq!(origin.count("/cookie"), 2, "{backend}");
        srv.stop();
    }
}

#[test]
fn authorization_gets_only_what_may_be_shared() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-vary-auth");
        let srv = server(backend, &origin, &dir);
        let alice = [("Authorization", "Bearer alice")];
        let bob = [("Authorization", "Bearer bob")];
        // max-age alone: a response to Alice is not kept.
        origin.set(
            "/me",
            Answer::ok("for ")
                .header("Cache-Control", "max-age=60")
                .echo("authorization"),
        );
        let r = get(&srv, "/me", &alice);
        assert_eq!(r.text(), "for Bearer alice", "{backend}");
        let r = get(&srv, "/me", &bob);
        assert_eq!(
            r.text(),
            "for Bearer bob",
            "{backend}: Bob given Alice's: {}",
            r.head
        );
        let r = get(&srv, "/me", &[]);
        assert_eq!(
            r.text(),
            "for -",
            "{backend}: anonymous given a user's: {}",
            r.head
        );
        assert_eq!(origin.count("/me"), 3, "{backend}");

        // public, s-maxage, must-revalidate: shared on purpose.
        for (path, cc) in [
            ("/pub", "public, max-age=60"),
            ("/smax", "s-maxage=60"),
            ("/mustrev", "max-age=60, must-revalidate"),
        ] {
            origin.set(
                path,
                Answer::ok("shared ")
                    .header("Cache-Control", cc)
                    .echo("authorization"),
            );
            let r = get(&srv, path, &alice);
            assert_eq!(r.text(), "shared Bearer alice", "{backend} {cc}");
            let r = get(&srv, path, &bob);
            assert_eq!(
                r.text(),
                "shared Bearer alice",
                "{backend} {cc}: {}",
                r.head
            );
            assert!(is_hit(&r), "{backend} {cc}: {}", r.head);
            assert_eq!(origin.count(path), 1, "{backend} {cc}");
        }
        srv.stop();
    }
}
