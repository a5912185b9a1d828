//! A cached response is compressed once per coding and kept beside its
//! identity body: a hit sends the client's coding from the store, with
//! the variant ETag and `Vary: Accept-Encoding` a response compressed on
//! its way out has, and a client that takes no coding gets the identity
//! body that was stored (never a compressed one).

mod common;

use common::cache_origin::{config, fetch, is_hit, Answer, CacheOrigin};
use common::python::decode;
use common::{Ringside, TempDir, BACKENDS};

#[test]
fn a_hit_is_sent_compressed_from_the_store_in_the_clients_coding() {
    let text: Vec<u8> = (0..400)
        .flat_map(|i| format!("line {i} of a page worth compressing\n").into_bytes())
        .collect();
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-compression");
        let cfg = dir.write("r.toml", config(origin.addr, "", "").as_bytes());
        let srv = Ringside::workers(backend, 1, &cfg);
        origin.set(
            "/page",
            Answer::ok(text.clone())
                .header("Content-Type", "text/html")
                .header("ETag", "\"p1\"")
                .header("Cache-Control", "max-age=60"),
        );
        // The miss is compressed on its way out; the store keeps identity.
        let first = fetch(srv.addr, "GET", "/page", &[("Accept-Encoding", "gzip")]);
        assert_eq!(
            first.header("content-encoding").as_deref(),
            Some("gzip"),
            "{backend}"
        );
        assert_eq!(decode("gzip", &first.body), text, "{backend}");
        for coding in ["gzip", "br", "zstd", "gzip"] {
            let r = fetch(srv.addr, "GET", "/page", &[("Accept-Encoding", coding)]);
            assert!(is_hit(&r), "{backend} {coding}: {}", r.head);
            assert_eq!(
                r.header("content-encoding").as_deref(),
                Some(coding),
                "{backend}"
            );
            assert!(
                r.body.len() < text.len() / 2,
                "{backend} {coding}: not compressed"
            );
            assert_eq!(decode(coding, &r.body), text, "{backend} {coding}");
            let etag = format!("W/\"p1-{coding}\"");
            assert_eq!(r.header("etag"), Some(etag.clone()), "{backend}");
            assert_eq!(
                r.header("vary").as_deref(),
                Some("Accept-Encoding"),
                "{backend}"
            );
            // Its own variant's tag gets a 304 from the store.
            let r = fetch(
                srv.addr,
                "GET",
                "/page",
                &[("Accept-Encoding", coding), ("If-None-Match", &etag)],
            );
            assert_eq!(r.status, 304, "{backend} {coding}: {}", r.head);
        }
        let plain = fetch(srv.addr, "GET", "/page", &[]);
        assert!(is_hit(&plain), "{backend}: {}", plain.head);
        assert_eq!(plain.header("content-encoding"), None, "{backend}");
        assert_eq!(plain.body, text, "{backend}");
        assert_eq!(plain.header("etag").as_deref(), Some("\"p1\""), "{backend}");
        assert_eq!(
            plain.header("vary").as_deref(),
            Some("Accept-Encoding"),
            "{backend}"
        );
        assert_eq!(origin.count("/page"), 1, "{backend}");
        srv.stop();
    }
}
