//! FastCGI faults: malformed records, a silent backend, a refusing one,
//! kept connections closed by the backend, and a pool with no connection
//! free. The misbehaving backend is in-process (`common/fcgi_fake.rs`); the
//! queue is shown against a real php-fpm.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::client::{Conn, Resp};
use common::fcgi_fake::{big_body, End, Fake};
use common::phpfpm::PhpFpm;
use common::{Ringside, TempDir, BACKENDS};

/// ringside on `backend` with one FastCGI upstream on the fake (keys
/// `extra` added), running `.php` files in a docroot that has each of the
/// fake's scripts.
fn in_front_of_fake(fake: &Fake, backend: &str, extra: &str) -> (Ringside, TempDir) {
    let dir = TempDir::new("fcgi-faults");
    let names = [
        "garbage",
        "wrong-id",
        "cut",
        "cut-body",
        "stall",
        "overloaded",
        "big",
        "once",
        "ok",
    ];
    for n in names {
        dir.write(&format!("www/{n}.php"), b"<?php // answered by the fake\n");
    }
    let text = format!(
        "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"127.0.0.1:{}\"]\nmax_conns = 4\n{extra}\n\
         [[route]]\nprefix = \"/\"\nupstream = \"php\"\nroot = \"{}\"\n",
        fake.port,
        dir.path().join("www").display()
    );
    let cfg = dir.write("ringside.toml", text.as_bytes());
    (Ringside::configured(backend, &cfg), dir)
}

fn post(c: &mut Conn, path: &str, body: &str) -> Resp {
    c.read_after(&format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
    .expect("response to POST")
}

/// Malformed records: 502, the backend connection dropped (never pooled),
/// and the client connection still serves the next request.
#[test]
fn malformed_records_are_502_and_drop_the_connection() {
    for backend in BACKENDS {
        let fake = Fake::start();
        let (srv, _dir) = in_front_of_fake(&fake, backend, "");
        let mut c = Conn::open(srv.addr);
        for script in ["/garbage.php", "/wrong-id.php", "/cut.php"] {
            let r = c.get(script);
            assert_eq!(r.status, 502, "{backend} {script}: {}", r.head);
            let end = fake.next_end();
            if script != "/cut.php" {
                assert_eq!(end, End::Closed, "{backend} {script}: kept");
            }
            let r = c.get("/ok.php");
            assert_eq!((r.status, r.text().as_str()), (200, "ok"), "{backend}");
        }
        // Every malformed answer cost its connection; the good ones shared
        // one kept connection.
        assert_eq!(fake.conns(), 4, "{backend}");

        // Cut after the response began: the client connection ends without
        // a clean end (no last chunk), never a short body passed off as
        // complete.
        let r = c.get("/cut-body.php");
        assert_eq!((r.status, r.text().as_str()), (200, "half"), "{backend}");
        assert!(!r.complete, "{backend}: a cut body ended cleanly");
        assert!(c.closed(), "{backend}: client connection kept after a cut");
        srv.stop();
    }
}

/// A backend that says nothing within response_timeout: 504, and its
/// connection is closed.
#[test]
fn a_silent_backend_is_504() {
    let fake = Fake::start();
    let (srv, _dir) = in_front_of_fake(&fake, "io-uring", "response_timeout = \"300ms\"");
    let mut c = Conn::open(srv.addr);
    let r = c.get("/stall.php");
    assert_eq!(r.status, 504, "{}", r.head);
    assert_eq!(fake.next_end(), End::Closed);
    assert_eq!(c.get("/ok.php").text(), "ok");
    srv.stop();
}

/// END_REQUEST with FCGI_OVERLOADED and no output: 503.
#[test]
fn an_overloaded_backend_is_503() {
    let fake = Fake::start();
    let (srv, _dir) = in_front_of_fake(&fake, "io-uring", "");
    let mut c = Conn::open(srv.addr);
    assert_eq!(c.get("/overloaded.php").status, 503);
    assert_eq!(c.get("/ok.php").text(), "ok");
    srv.stop();
}

/// Padding of 255 and 1 bytes and a record of 65535 bytes arrive intact,
/// and the connection is kept for the next request.
#[test]
fn padded_and_largest_records() {
    for backend in BACKENDS {
        let fake = Fake::start();
        let (srv, _dir) = in_front_of_fake(&fake, backend, "");
        let mut c = Conn::open(srv.addr);
        for _ in 0..3 {
            let r = c.get("/big.php");
            assert_eq!(r.status, 200, "{backend}");
            assert_eq!(
                r.header("content-type").as_deref(),
                Some("application/x-big")
            );
            assert!(
                r.complete && r.body == big_body(),
                "{backend}: body differs"
            );
        }
        assert_eq!(c.get("/ok.php").text(), "ok");
        assert_eq!(fake.conns(), 1, "{backend}: connection not kept");
        srv.stop();
    }
}

/// The backend closes a kept connection after a response: the next
/// requests, replayable or not, go on a fresh connection and succeed.
#[test]
fn a_kept_connection_closed_by_the_backend() {
    for backend in BACKENDS {
        let fake = Fake::start();
        let (srv, _dir) = in_front_of_fake(&fake, backend, "");
        let mut c = Conn::open(srv.addr);
        for i in 0..3 {
            assert_eq!(c.get("/once.php").text(), "once", "{backend} {i}");
            assert_eq!(fake.next_end(), End::Dropped);
            let r = c.get("/ok.php");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "ok"),
                "{backend} GET {i}"
            );
            assert_eq!(c.get("/once.php").text(), "once", "{backend} {i}");
            assert_eq!(fake.next_end(), End::Dropped);
            let r = post(&mut c, "/ok.php", "data");
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "ok"),
                "{backend} POST {i}"
            );
        }
        srv.stop();
    }
}

/// Starts `GET /slow.php?s=SECS` on its own connection; the receiver gets
/// its status when it ends.
fn slow_request(srv: &Ringside, secs: u32) -> mpsc::Receiver<u16> {
    let (tx, rx) = mpsc::channel();
    let addr = srv.addr;
    std::thread::spawn(move || {
        let r = Conn::open(addr).get(&format!("/slow.php?s={secs}"));
        let _ = tx.send(r.status);
    });
    rx
}

/// The pool exhausted (max_conns = 1, held by a slow script): with no
/// queue, 503 at once; with a queue, 503 after queue_timeout, both while
/// the slow script still runs; with a long enough queue_timeout, the
/// waiting request gets the connection when it comes free.
#[test]
fn an_exhausted_pool_queues_then_503() {
    let fpm = PhpFpm::start_tcp(2);
    let cases = [
        ("queue_size = 0", 503),
        ("queue_timeout = \"300ms\"", 503),
        ("queue_timeout = \"20s\"", 200),
    ];
    for (keys, want) in cases {
        let dir = TempDir::new("fcgi-queue");
        let cfg = fpm.ringside_config(&dir, &format!("max_conns = 1\n{keys}"));
        let srv = Ringside::configured("io-uring", &cfg);
        let slow = slow_request(&srv, 2);
        fpm.wait_open(1);
        let r = Conn::open(srv.addr).get("/hello.php");
        assert_eq!(r.status, want, "{keys}: {}", r.head);
        if want == 503 {
            assert!(
                slow.try_recv().is_err(),
                "{keys}: the 503 waited for the slow script"
            );
        } else {
            assert_eq!(r.text(), "Hello, World!");
        }
        assert_eq!(
            slow.recv_timeout(Duration::from_secs(20)).unwrap(),
            200,
            "{keys}"
        );
        // Never more than the one connection.
        assert!(fpm.open_connections() <= 1, "{keys}");
        srv.stop();
    }
}
