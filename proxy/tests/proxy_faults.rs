//! Upstream faults, each against the in-process misbehaving origin
//! (`common/origin.rs`), on every backend: the client gets the right status
//! or a connection that ends without a clean end, and a connection that
//! misbehaved is never pooled.

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

use common::client::Conn;
use common::origin::Origin;
use common::{Ringside, TempDir, BACKENDS};

fn proxy_to(backend: &str, dir: &TempDir, servers: &str, extra: &str) -> Ringside {
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[upstream.o]\nservers = [{servers}]\nresponse_timeout = \"1s\"\nconnect_timeout = \"500ms\"\nmax_fails = 0\n{extra}\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n"
        )
        .as_bytes(),
    );
    Ringside::configured(backend, &cfg)
}

fn dead_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn malformed_responses_are_502_and_never_pooled() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-malformed");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "",
        );
        for path in ["/bad-cl", "/dup-cl", "/cl-te", "/bad-status"] {
            let mut c = Conn::open(rs.addr);
            let first = c.get("/ok");
            assert_eq!(first.status, 200, "{backend}");
            let conn = first.header("x-conn").unwrap();
            let bad = c.get(path);
            assert_eq!(bad.status, 502, "{backend} {path}: {}", bad.head);
            // The misbehaving connection was closed: the next request
            // comes on another one.
            let after = c.get("/ok");
            assert_eq!(after.status, 200);
            assert_ne!(
                after.header("x-conn").unwrap(),
                conn,
                "{backend} {path} pooled a bad connection"
            );
        }
    }
}

#[test]
fn cut_bodies_never_look_complete() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-cut");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "",
        );
        for path in ["/cut-cl", "/cut-chunked", "/bad-chunk"] {
            let mut c = Conn::open(rs.addr);
            let r = c.read_after(&format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
            match r {
                // A bad chunk seen before anything was sent may still be
                // answered with 502.
                Some(r) if r.status == 502 => assert_eq!(path, "/bad-chunk"),
                Some(r) => {
                    assert_eq!(r.status, 200, "{backend} {path}");
                    assert!(
                        !r.complete,
                        "{backend} {path}: a cut body passed for complete"
                    );
                    assert!(c.closed(), "{backend} {path}: connection left open");
                }
                None => {}
            }
        }
    }
}

#[test]
fn extra_bytes_after_a_response_unpool_the_connection() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-extra");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "",
        );
        let mut c = Conn::open(rs.addr);
        let r = c.get("/extra");
        assert_eq!((r.status, r.text().as_str()), (200, "ok"), "{backend}");
        let conn = r.header("x-conn").unwrap();
        let next = c.get("/ok");
        assert_ne!(next.header("x-conn").unwrap(), conn, "{backend}");
    }
}

#[test]
fn refused_goes_to_the_next_server_or_502() {
    let origin = Origin::start("live");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-refused");
        let dead = dead_port();
        let rs = proxy_to(backend, &dir, &format!("\"127.0.0.1:{dead}\""), "");
        assert_eq!(rs.get("/ok").0, 502, "{backend}");
        drop(rs);
        let dir = TempDir::new("faults-refused2");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{dead}\", \"127.0.0.1:{}\"", origin.port()),
            "retries = 1\nretry_on = [\"connect\"]",
        );
        for _ in 0..4 {
            let (status, body) = rs.get("/ok");
            assert_eq!(
                (status, String::from_utf8_lossy(&body).as_ref()),
                (200, "ok from live"),
                "{backend}"
            );
        }
    }
}

#[test]
fn head_timeout_is_504() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-slow");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "",
        );
        let started = std::time::Instant::now();
        assert_eq!(rs.get("/slow").0, 504, "{backend}");
        assert!(
            started.elapsed() < Duration::from_millis(2900),
            "{backend}: timeout not applied"
        );
    }
}

#[test]
fn connect_timeout_is_504() {
    // A listener whose accept queue is full drops further SYNs, so a
    // connect to it hangs until the connect timeout.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.set_nonblocking(true).unwrap();
        let _ = s.connect(&addr.into());
        fillers.push(s);
    }
    std::thread::sleep(Duration::from_millis(100));
    for backend in BACKENDS {
        let dir = TempDir::new("faults-connect");
        let rs = proxy_to(backend, &dir, &format!("\"{addr}\""), "");
        assert_eq!(rs.get("/ok").0, 504, "{backend}");
    }
}

#[test]
fn stale_pooled_connection_retried_only_when_replayable() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-stale");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "",
        );
        let mut c = Conn::open(rs.addr);
        // First request opens a connection; the origin closes it without
        // answering the second one, as a keep-alive race looks.
        assert_eq!(c.get("/second-closes").status, 200, "{backend}");
        let r = c.get("/second-closes");
        assert_eq!(
            r.status, 200,
            "{backend}: GET not retried on a fresh connection"
        );
        // POST is not idempotent: no retry, 502.
        let r =
            c.read_after("POST /second-closes HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi");
        assert_eq!(r.map(|r| r.status), Some(502), "{backend}");
    }
}

#[test]
fn idle_connection_closed_by_the_origin_is_not_used() {
    for backend in BACKENDS {
        // The origin closes each connection right after answering.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let acc = accepted.clone();
        std::thread::spawn(move || {
            for c in l.incoming().flatten().take(2) {
                acc.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut c = c;
                let mut buf = [0u8; 4096];
                let _ = std::io::Read::read(&mut c, &mut buf);
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                // Closing after a keep-alive response: the proxy pools it,
                // then must notice the EOF.
                drop(c);
            }
        });
        let dir = TempDir::new("faults-idle-eof");
        let rs = proxy_to(backend, &dir, &format!("\"127.0.0.1:{port}\""), "");
        let mut c = Conn::open(rs.addr);
        assert_eq!(c.get("/a").status, 200);
        std::thread::sleep(Duration::from_millis(100));
        let r = c.get("/b");
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}

#[test]
fn client_abort_mid_upload_closes_the_upstream_connection() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-abort");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "",
        );
        let before = origin.cut_uploads();
        {
            let mut c = Conn::open(rs.addr);
            c.send(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
            c.send(&[b'x'; 1000]);
            // Dropped here: the client is gone mid-body.
        }
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while origin.cut_uploads() == before {
            assert!(
                std::time::Instant::now() < end,
                "{backend}: upstream never saw the cut"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // And the proxy still serves.
        assert_eq!(rs.get("/ok").0, 200);
    }
}

#[test]
fn a_stalled_body_is_cut_at_the_body_timeout() {
    let origin = Origin::start("o");
    for backend in BACKENDS {
        let dir = TempDir::new("faults-stall");
        let rs = proxy_to(
            backend,
            &dir,
            &format!("\"127.0.0.1:{}\"", origin.port()),
            "body_timeout = \"1s\"",
        );
        let started = std::time::Instant::now();
        let mut c = Conn::open(rs.addr);
        let r = c.get("/stall");
        assert_eq!(r.status, 200, "{backend}");
        assert!(!r.complete, "{backend}: a stalled body passed for complete");
        assert!(
            r.body.len() >= 100_000,
            "{backend}: got {} bytes",
            r.body.len()
        );
        assert!(
            started.elapsed() < Duration::from_millis(3500),
            "{backend}: body timeout not applied"
        );
    }
}
