//! What the proxy passes on of a client's header fields, and the small
//! points of HTTP it answers itself, as seen at a recording backend:
//! - names with `_` are dropped by default (`underscores_in_headers`);
//! - the proxy's own X-Forwarded-Proto and -Host replace the client's, its
//!   X-Forwarded-For is appended to the client's, and a client's
//!   `Forwarded` goes on only from `trusted_forwarders`;
//! - an upgrade reaches the backend only for `websocket` and what the route
//!   lists, never `h2c`;
//! - TRACE is 405 unless `allow_trace`;
//! - TRACE and OPTIONS with `Max-Forwards: 0` are answered here, other
//!   values go on decremented (RFC 9110 §7.6.2); `OPTIONS *` has `Allow`;
//! - a later HTTP/1 minor version is served as 1.1 (RFC 9110 §2.5);
//! - a 103 from the backend keeps its reason phrase.

mod common;

use std::io::Read;

use common::client::Conn;
use common::origin::Origin;
use common::recorder::Recorder;
use common::{Ringside, TempDir};

fn start(dir: &TempDir, port: u16, proxy: &str, route: &str) -> Ringside {
    let cfg = format!(
        "[proxy]\n{proxy}\n[upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n{route}\n"
    );
    Ringside::configured("io-uring", &dir.write("ringside.toml", cfg.as_bytes()))
}

/// Sends `head` (a request without a body) and returns the response.
fn send(rs: &Ringside, head: &str) -> common::client::Resp {
    let mut c = Conn::open(rs.addr);
    c.send(head.as_bytes());
    c.read(false).expect("a response")
}

#[test]
fn client_fields_that_could_pose_as_the_proxys_are_not_passed_on() {
    let rec = Recorder::start();
    let dir = TempDir::new("hyg-fields");
    let rs = start(&dir, rec.port(), "", "");
    let r = send(
        &rs,
        "GET /a HTTP/1.1\r\nHost: t\r\nX_Forwarded_For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\n\
         X-Forwarded-Host: evil\r\nmy_header: 1\r\nX-Kept: 2\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let got = &rec.requests()[0];
    assert!(got.header("x_forwarded_for").is_empty(), "{got:?}");
    assert!(got.header("my_header").is_empty(), "{got:?}");
    assert_eq!(got.header("x-kept"), ["2"]);
    assert_eq!(got.header("x-forwarded-for"), ["127.0.0.1"]);
    assert_eq!(got.header("x-forwarded-proto"), ["http"]);
    assert_eq!(got.header("x-forwarded-host"), ["t"]);

    // Passed on when asked, and refused when asked.
    for (setting, status, passed) in [("pass", 200, true), ("reject", 400, false)] {
        let rec = Recorder::start();
        let dir = TempDir::new("hyg-underscore");
        let rs = start(
            &dir,
            rec.port(),
            &format!("underscores_in_headers = \"{setting}\""),
            "",
        );
        let r = send(
            &rs,
            "GET /a HTTP/1.1\r\nHost: t\r\nmy_header: 1\r\nContent_Length: 5\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(r.status, status, "{setting}");
        let got = rec.requests();
        assert_eq!(got.len(), usize::from(passed), "{setting}");
        if passed {
            assert_eq!(got[0].header("my_header"), ["1"]);
            // A framing look-alike never goes on.
            assert!(got[0].header("content_length").is_empty());
        }
    }
}

#[test]
fn a_clients_forwarded_goes_on_only_from_a_trusted_address() {
    const HEAD: &str = "GET /a HTTP/1.1\r\nHost: t\r\nForwarded: for=6.6.6.6\r\n\
                        X-Forwarded-For: 5.5.5.5\r\nConnection: close\r\n\r\n";
    #[rustfmt::skip]
    let cases: &[(&str, &[&str])] = &[
        // ([proxy] settings, the Forwarded the backend got)
        ("", &[]),
        ("forwarded = true", &["for=127.0.0.1;proto=http;host=t"]),
        ("trusted_forwarders = [\"127.0.0.1\"]", &["for=6.6.6.6"]),
        ("trusted_forwarders = [\"10.0.0.0/8\"]", &[]),
        ("forwarded = true\ntrusted_forwarders = [\"127.0.0.0/8\"]",
            &["for=6.6.6.6, for=127.0.0.1;proto=http;host=t"]),
    ];
    for (proxy, want) in cases {
        let rec = Recorder::start();
        let dir = TempDir::new("hyg-forwarded");
        let rs = start(&dir, rec.port(), proxy, "");
        assert_eq!(send(&rs, HEAD).status, 200, "{proxy}");
        let got = &rec.requests()[0];
        assert_eq!(got.header("forwarded"), *want, "{proxy}");
        // X-Forwarded-For is appended to, whoever sent it: its last
        // element is the proxy's word.
        assert_eq!(
            got.header("x-forwarded-for"),
            ["5.5.5.5, 127.0.0.1"],
            "{proxy}"
        );
    }
}

#[test]
fn trace_is_refused_unless_allowed() {
    let rec = Recorder::start();
    let dir = TempDir::new("hyg-trace");
    let rs = start(&dir, rec.port(), "", "");
    for hops in ["", "Max-Forwards: 0\r\n", "Max-Forwards: 3\r\n"] {
        let r = send(
            &rs,
            &format!(
                "TRACE /t HTTP/1.1\r\nHost: t\r\n{hops}Cookie: c=1\r\nConnection: close\r\n\r\n"
            ),
        );
        assert_eq!(r.status, 405, "{hops:?}: {}", r.head);
        assert!(r.header("allow").unwrap().contains("GET"), "{}", r.head);
        assert!(!r.text().contains("c=1"), "{hops:?}: reflected");
    }
    assert_eq!(rec.count(), 0, "TRACE reached the backend");
    // Allowed, it goes on.
    let rec = Recorder::start();
    let dir = TempDir::new("hyg-trace-on");
    let rs = start(&dir, rec.port(), "allow_trace = true", "");
    let r = send(
        &rs,
        "TRACE /t HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(rec.requests()[0].method, "TRACE");
}

#[test]
fn upgrades_go_on_only_for_protocols_the_route_allows() {
    let rec = Recorder::start();
    let dir = TempDir::new("hyg-upgrade");
    let rs = start(&dir, rec.port(), "", "upgrade = [\"my-proto\"]");
    #[rustfmt::skip]
    let cases: &[(&str, Option<&str>)] = &[
        // (Upgrade asked for, Upgrade the backend got)
        ("h2c", None),
        ("h2c, websocket", Some("websocket")),
        ("websocket", Some("websocket")),
        ("my-proto/1", Some("my-proto/1")),
        ("other", None),
    ];
    for (i, (asked, want)) in cases.iter().enumerate() {
        let r = send(
            &rs,
            &format!(
                "GET /u HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\n\
                 Upgrade: {asked}\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"
            ),
        );
        // The recorder answers 200 to all: no tunnel opens without a 101.
        assert_eq!(r.status, 200, "{asked}");
        let got = &rec.requests()[i];
        assert_eq!(got.header("upgrade").first().copied(), *want, "{asked}");
        assert!(got.header("http2-settings").is_empty(), "{asked}");
        match want {
            Some(_) => assert_eq!(got.header("connection"), ["upgrade"], "{asked}"),
            None => assert!(got.header("connection").is_empty(), "{asked}"),
        }
    }
}

#[test]
fn trace_and_options_stop_where_max_forwards_says() {
    let rec = Recorder::start();
    let dir = TempDir::new("hyg-hops");
    let rs = start(&dir, rec.port(), "allow_trace = true", "");
    let r = send(
        &rs,
        "TRACE /t HTTP/1.1\r\nHost: t\r\nMax-Forwards: 0\r\nCookie: secret=1\r\nX-A: b\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type").as_deref(), Some("message/http"));
    let echo = r.text();
    assert!(echo.starts_with("TRACE /t HTTP/1.1\r\n"), "{echo}");
    assert!(
        echo.contains("X-A: b\r\n") && !echo.contains("secret"),
        "{echo}"
    );
    let r = send(
        &rs,
        "OPTIONS /o HTTP/1.1\r\nHost: t\r\nMax-Forwards: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert!(r.header("allow").unwrap().contains("POST"), "{}", r.head);
    assert_eq!(rec.count(), 0, "answered here, never forwarded");
    // A hop left: forwarded, one fewer.
    let r = send(
        &rs,
        "OPTIONS /o HTTP/1.1\r\nHost: t\r\nMax-Forwards: 5\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(rec.requests()[0].header("max-forwards"), ["4"]);
    // The server as a whole.
    let r = send(
        &rs,
        "OPTIONS * HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("allow").as_deref(),
        Some("GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS")
    );
    assert_eq!(rec.count(), 1);
}

#[test]
fn later_minor_versions_and_interim_reasons() {
    let origin = Origin::start("o");
    let dir = TempDir::new("hyg-versions");
    let rs = start(&dir, origin.port(), "", "");
    // HTTP/1.2 is answered as 1.1, on a connection kept open.
    let mut c = Conn::open(rs.addr);
    c.send(b"GET /ok HTTP/1.2\r\nHost: t\r\n\r\n");
    let r = c.read(false).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.head);
    assert_eq!(c.get("/ok").status, 200);
    // A 103 goes on with its own reason phrase.
    let mut c = Conn::open(rs.addr);
    c.send(b"GET /interim HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let mut all = Vec::new();
    c.raw().read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 103 Early Hints\r\n"), "{text}");
}
