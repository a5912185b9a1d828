//! What the proxy does to requests and responses on the way through:
//! hop-by-hop headers, forwarding headers, framing, interim responses,
//! bodies both ways, prefix rewriting and Host, on every backend.

mod common;

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir, BACKENDS};

fn proxy(
    backend: &str,
    dir: &TempDir,
    origin: &Origin,
    extra_routes: &str,
    proxy_section: &str,
) -> Ringside {
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[limits]\nmax_body = \"64k\"\n\n{proxy_section}\n\n[upstream.o]\nservers = [\"127.0.0.1:{}\"]\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n{extra_routes}",
            origin.port()
        )
        .as_bytes(),
    );
    Ringside::configured(backend, &cfg)
}

fn header_lines(head: &str) -> Vec<String> {
    head.lines().map(|l| l.to_ascii_lowercase()).collect()
}

#[test]
fn hop_by_hop_and_forwarding_headers() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("sem-headers");
        let rs = proxy(backend, &dir, &origin, "", "[proxy]\nforwarded = true");
        let mut c = Conn::open(rs.addr);
        let r = c
            .read_after(
                "GET /headers?q=1 HTTP/1.1\r\nHost: front.example\r\nConnection: keep-alive, X-Private\r\nX-Private: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\nX-Forwarded-For: 203.0.113.7\r\nVia: 1.0 edge\r\nX-Keep: yes\r\n\r\n",
            )
            .unwrap();
        assert_eq!(r.status, 200, "{backend}");
        let seen = header_lines(&r.text());
        assert_eq!(seen[0], "get /headers?q=1 http/1.1", "{backend}");
        for gone in [
            "x-private",
            "keep-alive",
            "te:",
            "proxy-connection",
            "connection",
        ] {
            assert!(
                !seen.iter().any(|l| l.starts_with(gone)),
                "{backend}: {gone} forwarded: {seen:?}"
            );
        }
        let has = |want: &str| seen.iter().any(|l| l == want);
        assert!(has("host: front.example"), "{backend}: {seen:?}");
        assert!(has("x-keep: yes"));
        assert!(has("x-forwarded-for: 203.0.113.7, 127.0.0.1"), "{seen:?}");
        assert!(has("x-forwarded-proto: http"));
        assert!(has("x-forwarded-host: front.example"));
        assert!(has("via: 1.0 edge, 1.1 ringside"), "{seen:?}");
        assert!(
            has("forwarded: for=127.0.0.1;proto=http;host=front.example"),
            "{seen:?}"
        );
        // And on the way back.
        let r = c.get("/hop");
        assert_eq!(r.status, 200);
        assert!(r.header("x-secret").is_none(), "{backend}: {}", r.head);
        assert!(r.header("keep-alive").is_none());
        assert_eq!(r.header("x-public").as_deref(), Some("1"));
        assert!(r.header("via").is_some_and(|v| v.contains("ringside")));
    }
}

#[test]
fn framing_is_regenerated() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("sem-framing");
        let rs = proxy(backend, &dir, &origin, "", "");
        let mut c = Conn::open(rs.addr);
        let r = c.get("/chunked");
        assert_eq!(
            (r.status, r.text().as_str(), r.complete),
            (200, "hello world", true),
            "{backend}"
        );
        // Read until close becomes chunked for a 1.1 client...
        let r = c.get("/close-delimited");
        assert_eq!(
            r.header("transfer-encoding").as_deref(),
            Some("chunked"),
            "{backend}: {}",
            r.head
        );
        assert_eq!((r.text().as_str(), r.complete), ("until the end", true));
        // ...and the client connection stays usable.
        assert_eq!(c.get("/ok").status, 200);
        // A 1.0 client gets it delimited by close.
        let mut c10 = Conn::open(rs.addr);
        let r = c10
            .read_after("GET /close-delimited HTTP/1.0\r\nHost: t\r\n\r\n")
            .unwrap();
        assert!(r.header("transfer-encoding").is_none());
        assert_eq!(r.text(), "until the end");
        // A large body streams through intact.
        let r = c.get("/big/3000000");
        assert_eq!(r.body.len(), 3_000_000);
        assert!(
            r.body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8),
            "{backend}: body corrupted"
        );
    }
}

#[test]
fn bodiless_responses_keep_the_upstream_connection() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("sem-bodiless");
        let rs = proxy(backend, &dir, &origin, "", "");
        let mut c = Conn::open(rs.addr);
        let first = c.get("/ok").header("x-conn").unwrap();
        let r = c
            .read_after("HEAD /big/1000 HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(
            r.header("content-length").as_deref(),
            Some("1000"),
            "{backend}: {}",
            r.head
        );
        assert_eq!(r.header("x-conn").unwrap(), first);
        let r = c.get("/nocontent");
        assert_eq!(r.status, 204);
        assert_eq!(r.header("x-conn").unwrap(), first);
        let r = c.get("/notmodified");
        assert_eq!(r.status, 304);
        assert_eq!(r.header("x-conn").unwrap(), first);
        assert_eq!(c.get("/ok").header("x-conn").unwrap(), first, "{backend}");
    }
}

#[test]
fn request_bodies_interim_responses_and_limits() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("sem-bodies");
        let rs = proxy(backend, &dir, &origin, "", "");
        let mut c = Conn::open(rs.addr);
        let r = c
            .read_after("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap();
        assert_eq!(r.text(), "hello", "{backend}");
        let r = c
            .read_after("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            .unwrap();
        assert_eq!(r.text(), "abcde", "{backend}");
        // 100-continue: the body is sent only after the interim response.
        c.send(
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
        );
        let mut line = [0u8; 25];
        std::io::Read::read_exact(&mut c.raw(), &mut line).unwrap();
        assert_eq!(&line, b"HTTP/1.1 100 Continue\r\n\r\n", "{backend}");
        c.send(b"wxyz");
        let r = c.read(false).unwrap();
        assert_eq!(r.text(), "wxyz");
        // An interim response from the origin is relayed.
        let r = c.get("/interim");
        assert_eq!(
            (r.interim.as_slice(), r.status, r.text().as_str()),
            (&[103][..], 200, "final"),
            "{backend}"
        );
        // Over the body limit: 413 without bothering the origin.
        let before = origin.requests();
        let mut c2 = Conn::open(rs.addr);
        let r = c2
            .read_after("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
            .unwrap();
        assert_eq!(r.status, 413, "{backend}");
        assert_eq!(origin.requests(), before);
    }
}

#[test]
fn prefixes_and_host_are_rewritten() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("sem-prefix");
        let routes = "\n[[route]]\nprefix = \"/api/\"\nupstream = \"o\"\nstrip_prefix = true\nproxy_host = \"upstream\"\n\n[[route]]\nprefix = \"/old/\"\nupstream = \"o\"\nreplace_prefix = \"/new/\"\nproxy_host = \"backend.internal\"\n";
        let rs = proxy(backend, &dir, &origin, routes, "");
        let mut c = Conn::open(rs.addr);
        let r = c.get("/api/headers?x=1");
        let seen = header_lines(&r.text());
        assert_eq!(seen[0], "get /headers?x=1 http/1.1", "{backend}");
        assert!(
            seen.contains(&format!("host: 127.0.0.1:{}", origin.port())),
            "{seen:?}"
        );
        let r = c.get("/old/headers");
        let seen = header_lines(&r.text());
        assert_eq!(seen[0], "get /new/headers http/1.1", "{backend}");
        assert!(
            seen.contains(&"host: backend.internal".to_owned()),
            "{seen:?}"
        );
    }
}
