//! Only whole responses are stored, through the binary: a body the origin
//! cut short, one above `max_object`, the empty body of a HEAD and the
//! part a Range request got are never kept as the response to a GET; a
//! malformed request is refused before the cache or the origin see it.

mod common;

use common::cache_origin::{config, fetch, is_hit, pattern, Answer, CacheOrigin};
use common::client::Conn;
use common::{Ringside, TempDir, BACKENDS};

const CC: &str = "max-age=60";

fn server(backend: &str, origin: &CacheOrigin, dir: &TempDir, cache: &str) -> Ringside {
    let cfg = dir.write("r.toml", config(origin.addr, cache, "").as_bytes());
    Ringside::workers(backend, 1, &cfg)
}

#[test]
fn a_cut_body_is_never_stored() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-cut");
        let srv = server(backend, &origin, &dir, "");
        let whole = pattern(10_000, 3);
        origin.set(
            "/cut",
            Answer::ok(&whole[..5000])
                .header("Cache-Control", CC)
                .cut(10_000),
        );
        let r = fetch(srv.addr, "GET", "/cut", &[]);
        assert!(
            !r.complete || r.status >= 500,
            "{backend}: a cut body reached the client as whole: {} ({} bytes)",
            r.head,
            r.body.len()
        );
        assert_eq!(origin.count("/cut"), 1, "{backend}");
        origin.set(
            "/cut",
            Answer::ok(whole.clone()).header("Cache-Control", CC),
        );
        let r = fetch(srv.addr, "GET", "/cut", &[]);
        assert_eq!(
            origin.count("/cut"),
            2,
            "{backend}: the cut response was stored"
        );
        assert!(!is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(r.status, 200, "{backend}");
        assert!(
            r.complete && r.body == whole,
            "{backend}: {} bytes",
            r.body.len()
        );
        let r = fetch(srv.addr, "GET", "/cut", &[]);
        assert!(is_hit(&r), "{backend}: the whole one is stored: {}", r.head);
        assert!(r.body == whole, "{backend}");
        srv.stop();
    }
}

#[test]
fn a_body_above_max_object_is_passed_whole_and_not_stored() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-big");
        let srv = server(backend, &origin, &dir, "max_object = \"16k\"");
        let big = pattern(64 * 1024, 4);
        let small = pattern(16 * 1024, 5);
        origin.set("/big", Answer::ok(big.clone()).header("Cache-Control", CC));
        origin.set(
            "/small",
            Answer::ok(small.clone()).header("Cache-Control", CC),
        );
        for i in 1..=3 {
            let r = fetch(srv.addr, "GET", "/big", &[]);
            assert_eq!(r.status, 200, "{backend}: {}", r.head);
            assert!(r.complete, "{backend}: cut");
            assert_eq!(r.body.len(), big.len(), "{backend}");
            assert!(r.body == big, "{backend}: body differs");
            assert!(!is_hit(&r), "{backend}: {}", r.head);
            assert_eq!(
                origin.count("/big"),
                i,
                "{backend}: stored above max_object"
            );
        }
        // At max_object exactly: stored.
        for _ in 0..2 {
            let r = fetch(srv.addr, "GET", "/small", &[]);
            assert!(r.body == small, "{backend}");
        }
        assert_eq!(origin.count("/small"), 1, "{backend}: 16 KiB not stored");
        srv.stop();
    }
}

#[test]
fn head_on_a_cold_key_does_not_store_an_empty_get() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-head");
        let srv = server(backend, &origin, &dir, "");
        let body = pattern(5000, 6);
        origin.set("/h", Answer::ok(body.clone()).header("Cache-Control", CC));
        let r = fetch(srv.addr, "HEAD", "/h", &[]);
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(
            r.header("content-length").as_deref(),
            Some("5000"),
            "{backend}"
        );
        assert_eq!(origin.seen("/h")[0].method, "HEAD", "{backend}");
        let r = fetch(srv.addr, "GET", "/h", &[]);
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert!(r.complete, "{backend}");
        assert_eq!(r.body.len(), 5000, "{backend}: GET after HEAD: {}", r.head);
        assert!(r.body == body, "{backend}");
        // Stored by the GET: GET and HEAD are hits now.
        let r = fetch(srv.addr, "GET", "/h", &[]);
        assert!(is_hit(&r) && r.body == body, "{backend}: {}", r.head);
        let r = fetch(srv.addr, "HEAD", "/h", &[]);
        assert!(is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(
            r.header("content-length").as_deref(),
            Some("5000"),
            "{backend}"
        );
        assert_eq!(origin.count("/h"), 2, "{backend}");
        srv.stop();
    }
}

#[test]
fn a_range_on_a_cold_key_does_not_store_a_part() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-range");
        let srv = server(backend, &origin, &dir, "");
        let body = pattern(5000, 7);
        origin.set("/rg", Answer::ok(body.clone()).header("Cache-Control", CC));
        let r = fetch(srv.addr, "GET", "/rg", &[("Range", "bytes=100-199")]);
        assert_eq!(r.status, 206, "{backend}: {}", r.head);
        assert!(r.body == body[100..200], "{backend}");
        let r = fetch(srv.addr, "GET", "/rg", &[]);
        assert_eq!(r.status, 200, "{backend}: GET after a range: {}", r.head);
        assert_eq!(r.body.len(), 5000, "{backend}: {}", r.head);
        assert!(r.body == body, "{backend}");
        assert_eq!(origin.count("/rg"), 2, "{backend}");
        // Stored whole now: a range is answered from it.
        let r = fetch(srv.addr, "GET", "/rg", &[("Range", "bytes=4990-4999")]);
        assert_eq!(r.status, 206, "{backend}: {}", r.head);
        assert!(is_hit(&r), "{backend}: {}", r.head);
        assert!(r.body == body[4990..], "{backend}");
        assert_eq!(
            r.header("content-range").as_deref(),
            Some("bytes 4990-4999/5000"),
            "{backend}"
        );
        assert_eq!(origin.count("/rg"), 2, "{backend}");
        srv.stop();
    }
}

#[test]
fn a_malformed_request_gets_400_and_reaches_nobody() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-bad");
        let srv = server(backend, &origin, &dir, "");
        origin.set("/x", Answer::ok("x").header("Cache-Control", CC));
        for bad in [
            "GET /x HTTP/1.1\r\nHost: t\r\nBad Header: 1\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n",
            "PURGE /x HTTP/1.1\r\nHost: t\r\nBad Header: 1\r\n\r\n",
        ] {
            let mut c = Conn::open(srv.addr);
            let r = c.read_after(bad).expect("a response");
            assert_eq!(r.status, 400, "{backend}: {bad:?}: {}", r.head);
        }
        assert_eq!(
            origin.total(),
            0,
            "{backend}: a malformed request reached the origin"
        );
        // The key was not touched: a good request is a plain miss.
        let r = fetch(srv.addr, "GET", "/x", &[]);
        assert_eq!(r.status, 200, "{backend}");
        assert!(!is_hit(&r), "{backend}");
        assert_eq!(origin.count("/x"), 1, "{backend}");
        srv.stop();
    }
}

/// `Date` as now, in IMF-fixdate.
fn http_date_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    format!(
        "{wd}, {d:02} {mon} {y} {:02}:{:02}:{:02} GMT",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A hit carries the origin's Date as it came, an Age at least the
/// origin's, and a ttl of what is left of max-age; the host's case does
/// not make another key.
#[test]
fn a_hit_carries_the_origins_date_and_its_age() {
    for backend in ["io-uring", "epoll"] {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-date");
        let srv = server(backend, &origin, &dir, "");
        let date = http_date_now();
        origin.set(
            "/d",
            Answer::ok("dated")
                .header("Cache-Control", "max-age=60")
                .header("Date", &date)
                .header("Age", "10"),
        );
        fetch(srv.addr, "GET", "/d", &[]);
        let mut c = Conn::open(srv.addr);
        let r = c
            .read_after("GET /d HTTP/1.1\r\nHost: T\r\n\r\n")
            .expect("response");
        assert!(is_hit(&r), "{backend}: Host T is another key: {}", r.head);
        assert_eq!(r.header("date").as_deref(), Some(&date[..]), "{backend}");
        let age: u64 = r.header("age").expect("Age").parse().unwrap();
        assert!((10..60).contains(&age), "{backend}: Age {age}");
        let cs = common::cache_origin::cache_status(&r);
        let ttl: i64 = cs
            .split("ttl=")
            .nth(1)
            .and_then(|t| t.split(';').next())
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("{backend}: no ttl in {cs:?}"));
        assert_eq!(ttl, 60 - age as i64, "{backend}: {cs:?} with Age {age}");
        assert_eq!(origin.count("/d"), 1, "{backend}");
        srv.stop();
    }
}

/// A request with `Cache-Control: no-store` leaves nothing stored.
#[test]
fn a_no_store_request_is_not_stored() {
    for backend in ["io-uring", "epoll"] {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-nostore");
        let srv = server(backend, &origin, &dir, "");
        origin.set(
            "/ns",
            Answer::ok("ns").header("Cache-Control", "max-age=60"),
        );
        fetch(srv.addr, "GET", "/ns", &[("Cache-Control", "no-store")]);
        let r = fetch(srv.addr, "GET", "/ns", &[]);
        assert!(!is_hit(&r), "{backend}: {}", r.head);
        assert_eq!(origin.count("/ns"), 2, "{backend}");
        srv.stop();
    }
}

/// A revalidation whose 200 is cut leaves the stale response in place:
/// with the origin down afterwards, stale-if-error still serves it.
#[test]
fn a_cut_refetch_keeps_the_stale_response() {
    for backend in ["io-uring", "epoll"] {
        let mut origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-cut-stale");
        let srv = server(backend, &origin, &dir, "");
        let cc = "max-age=60, stale-if-error=600";
        origin.set(
            "/cs",
            Answer::ok("the old one")
                .header("Cache-Control", cc)
                .header("Age", "100"),
        );
        fetch(srv.addr, "GET", "/cs", &[]);
        origin.set(
            "/cs",
            Answer::ok("the new o")
                .header("Cache-Control", "max-age=60")
                .cut(100),
        );
        let r = fetch(srv.addr, "GET", "/cs", &[]);
        assert!(!r.complete || r.status >= 500, "{backend}: {}", r.head);
        origin.down();
        let r = fetch(srv.addr, "GET", "/cs", &[]);
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(r.text(), "the old one", "{backend}");
        srv.stop();
    }
}

#[test]
fn a_get_with_a_body_goes_to_the_origin_with_it_and_is_not_stored() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-get-body");
        let srv = server(backend, &origin, &dir, "");
        origin.set("/q", Answer::ok("answer").header("Cache-Control", CC));
        // Stored by a plain GET first: a GET with a body still goes on.
        assert_eq!(fetch(srv.addr, "GET", "/q", &[]).status, 200);
        for n in 0..2 {
            let mut c = Conn::open(srv.addr);
            c.send(b"GET /q HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nquery");
            let r = c.read(false).expect("response");
            assert_eq!(r.status, 200, "{backend}: {}", r.head);
            assert!(
                !is_hit(&r),
                "{backend}: a GET with a body was answered from the store"
            );
            let cs = r.header("cache-status").unwrap_or_default();
            assert!(cs.contains("fwd=bypass"), "{backend}: {}", r.head);
            assert_eq!(origin.count("/q"), 2 + n, "{backend}");
        }
        // ...and left the stored response alone.
        assert!(is_hit(&fetch(srv.addr, "GET", "/q", &[])), "{backend}");
        srv.stop();
    }
}

#[test]
fn targeted_fields_decide_and_are_not_sent_on() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-targeted");
        let srv = server(backend, &origin, &dir, "");
        // Cache-Control forbids storing; the fields aimed at ringside allow it.
        origin.set(
            "/t",
            Answer::ok("targeted")
                .header("Cache-Control", "no-store")
                .header("CDN-Cache-Control", "no-store")
                .header("Ringside-Cache-Control", "max-age=60"),
        );
        for n in 0..3 {
            let r = fetch(srv.addr, "GET", "/t", &[]);
            assert_eq!(r.text(), "targeted", "{backend}");
            assert_eq!(is_hit(&r), n > 0, "{backend}: {}", r.head);
            for f in ["cdn-cache-control", "ringside-cache-control"] {
                assert_eq!(r.header(f), None, "{backend}: {f} sent on: {}", r.head);
            }
            assert_eq!(
                r.header("cache-control").as_deref(),
                Some("no-store"),
                "{backend}"
            );
        }
        assert_eq!(origin.count("/t"), 1, "{backend}");
        srv.stop();
    }
}

#[test]
fn a_range_on_a_cold_key_leaves_its_requests_collapsed() {
    for backend in BACKENDS {
        let origin = CacheOrigin::start();
        let dir = TempDir::new("cache-int-range-pass");
        let srv = server(backend, &origin, &dir, "");
        let whole = pattern(4000, 5);
        origin.set("/r", Answer::ok(whole.clone()).header("Cache-Control", CC));
        let r = fetch(srv.addr, "GET", "/r", &[("Range", "bytes=0-99")]);
        assert_eq!(r.status, 206, "{backend}: {}", r.head);
        // The 206 made no pass of the key: two misses now share one
        // fetch (a pass would send both to the origin).
        origin.close_gate();
        origin.set(
            "/r",
            Answer::ok(whole.clone())
                .header("Cache-Control", CC)
                .part_then_gate(100),
        );
        let mut a = Conn::open(srv.addr);
        a.send(b"GET /r HTTP/1.1\r\nHost: t\r\n\r\n");
        origin.wait_count("/r", 2);
        let mut b = Conn::open(srv.addr);
        b.send(b"GET /r HTTP/1.1\r\nHost: t\r\n\r\n");
        // b's head comes from the fill while the origin holds the rest.
        let mut line = String::new();
        std::io::BufRead::read_line(b.raw(), &mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{backend}: {line}");
        origin.open_gate();
        let ra = a.read(false).expect("a");
        assert_eq!(ra.body, whole, "{backend}");
        assert_eq!(
            origin.count("/r"),
            2,
            "{backend}: the second miss was not collapsed"
        );
        srv.stop();
    }
}
