//! 0-RTT on HTTP/3 (`[http3] early_data`), with aioquic resuming a
//! session and sending its requests before the handshake ends: with it on,
//! a safe request is served from early data and goes upstream with
//! `Early-Data: 1` (RFC 8470 §5.1), a POST waits for the handshake and goes
//! without it, an upstream's 425 sends the request again once the
//! handshake has ended (§5.2) and reaches the client only when the second
//! answer is 425 too or the client sent `Early-Data` itself, and a
//! client's own `Early-Data` goes on once, untouched; a `client_auth`
//! listener's resumed session brings its certificate to requests served
//! from early data. Off (the default),
//! the server's tickets allow no early data and early data sent anyway is
//! refused, the requests then served after the handshake with no
//! `Early-Data` of ours. A missing client fails the test (scripts/test.sh
//! installs aioquic).

mod common;

use common::h2::Site;
use common::h3::{aioquic_0rtt, sum};
use serde_json::{json, Value};

const QUIC_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

/// Sent on the resumed connection at once: in 0-RTT where it is taken.
fn requests() -> Value {
    json!([
        {"path": "/app/headers"},
        {"path": "/app/headers", "method": "POST", "body": "x=1",
         "headers": [["content-type", "application/x-www-form-urlencoded"]]},
        {"path": "/app/status/425"},
        {"path": "/app/headers?own", "headers": [["early-data", "1"]]},
        {"path": "/app/early-425"},
        {"path": "/app/early-425?own", "headers": [["early-data", "1"]]},
    ])
}

/// The request head the origin echoed (`/headers`).
fn echoed_head(answer: &Value) -> String {
    use base64::Engine as _;
    let body = answer["body"].as_str().expect("a body");
    let head = base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("base64");
    String::from_utf8_lossy(&head).into_owned()
}

/// The `Early-Data` lines of a head the origin echoed.
fn early_data_lines(answer: &Value) -> Vec<String> {
    echoed_head(answer)
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("early-data:"))
        .map(str::to_owned)
        .collect()
}

fn answers(report: &Value) -> &Vec<Value> {
    assert_eq!(report["alpn"], "h3", "{report}");
    assert_eq!(report["resumed"], true, "the session resumed: {report}");
    report["answers"].as_array().expect("answers")
}

#[test]
fn with_early_data_safe_requests_are_served_from_0rtt_and_others_wait() {
    for backend in QUIC_BACKENDS {
        let mut site = Site::start("h3-0rtt", backend, "\n[http3]\nearly_data = true\n");
        let at = site.tls.expect("a TLS listener");
        let report = aioquic_0rtt(at, &site.ca_pem, "h2.test", "/small.txt", &[], &requests());
        assert_eq!(
            report["ticket_allows_early_data"], true,
            "{backend}: {report}"
        );
        assert_eq!(report["all_sent_in_0rtt"], true, "{backend}: {report}");
        assert_eq!(report["early_data_accepted"], true, "{backend}: {report}");
        let a = answers(&report);
        // GET from early data: served, and the upstream told so.
        assert_eq!(a[0]["status"], 200, "{backend}: {}", a[0]);
        assert_eq!(early_data_lines(&a[0]), ["Early-Data: 1"], "{backend}");
        // POST: held until the handshake ended, then sent as any request.
        assert_eq!(a[1]["status"], 200, "{backend}: {}", a[1]);
        assert!(early_data_lines(&a[1]).is_empty(), "{backend}: {}", a[1]);
        // An upstream that answers 425 Too Early to anything: the request
        // went again after the handshake, and the second 425 came back.
        assert_eq!(a[2]["status"], 425, "{backend}: {}", a[2]);
        // The client's own field, once and as sent.
        assert_eq!(a[3]["status"], 200, "{backend}: {}", a[3]);
        assert_eq!(early_data_lines(&a[3]), ["early-data: 1"], "{backend}");
        // 425 to early data only: answered, by the try after the handshake,
        // which went without Early-Data (§5.2).
        assert_eq!(a[4]["status"], 200, "{backend}: {}", a[4]);
        assert!(early_data_lines(&a[4]).is_empty(), "{backend}: {}", a[4]);
        // The client's own Early-Data: its 425 is the client's (§5.2: an
        // intermediary MUST forward it), after one try.
        assert_eq!(a[5]["status"], 425, "{backend}: {}", a[5]);
        let heads = site.origin.heads();
        let tries = |p: &str| {
            heads
                .iter()
                .filter(|h| h.starts_with(p))
                .collect::<Vec<_>>()
        };
        let ours = tries("GET /early-425 ");
        assert_eq!(ours.len(), 2, "{backend}: {heads:?}");
        assert!(ours[0].contains("\r\nEarly-Data: 1\r\n"), "{}", ours[0]);
        assert!(
            !ours[1].to_ascii_lowercase().contains("early-data"),
            "{}",
            ours[1]
        );
        assert_eq!(
            tries("GET /early-425?own ").len(),
            1,
            "{backend}: {heads:?}"
        );
        assert_eq!(tries("GET /status/425 ").len(), 2, "{backend}: {heads:?}");
        let post = heads.iter().find(|h| h.starts_with("POST /headers"));
        let post = post.unwrap_or_else(|| panic!("{backend}: no POST upstream: {heads:?}"));
        assert!(!post.to_ascii_lowercase().contains("early-data"), "{post}");
        let (_, metrics) = site.srv.admin_get("/metrics");
        assert_eq!(
            sum(&metrics, "ringside_http3_early_requests_total"),
            5.0,
            "{backend}: the five GETs, not the POST: {metrics}"
        );
    }
}

/// The same over an HTTP/2 upstream (the python3-h2 origin): its 425 to
/// early data sends the request again after the handshake, and a
/// client's own `Early-Data` gets the 425.
#[test]
fn an_h2_upstreams_425_to_early_data_sends_the_request_again_after_the_handshake() {
    use common::script;
    let (_origin, port) = script::start("/usr/bin/python3", "h2_origin.py", &[]);
    let extra = format!(
        r#"
[http3]
early_data = true

[upstream.h2o]
protocol = "h2"
servers = ["127.0.0.1:{port}"]

[[route]]
prefix = "/h2/"
upstream = "h2o"
strip_prefix = true
"#
    );
    for backend in QUIC_BACKENDS {
        let mut site = Site::start("h3-0rtt-h2", backend, &extra);
        let at = site.tls.expect("a TLS listener");
        let asked = json!([
            {"path": "/h2/early-425"},
            {"path": "/h2/early-425", "headers": [["early-data", "1"]]},
        ]);
        let report = aioquic_0rtt(at, &site.ca_pem, "h2.test", "/small.txt", &[], &asked);
        assert_eq!(report["early_data_accepted"], true, "{backend}: {report}");
        let a = answers(&report);
        assert_eq!(a[0]["status"], 200, "{backend}: {}", a[0]);
        // The origin's 200 comes only to a request without Early-Data.
        assert_eq!(echoed_head(&a[0]), "not early", "{backend}");
        assert_eq!(a[1]["status"], 425, "{backend}: {}", a[1]);
        let (_, metrics) = site.srv.admin_get("/metrics");
        assert_eq!(
            sum(&metrics, "ringside_http3_early_requests_total"),
            2.0,
            "{backend}: both from early data: {metrics}"
        );
    }
}

#[test]
fn without_early_data_0rtt_is_refused_and_requests_are_served_after_the_handshake() {
    for backend in QUIC_BACKENDS {
        let mut site = Site::start("h3-no-0rtt", backend, "");
        let at = site.tls.expect("a TLS listener");
        // The server's tickets allow none; sent anyway, it is refused and
        // the client sends it again once the handshake is done.
        for force in [false, true] {
            let extra: &[&str] = if force { &["--force-early-data"] } else { &[] };
            let report = aioquic_0rtt(
                at,
                &site.ca_pem,
                "h2.test",
                "/small.txt",
                extra,
                &requests(),
            );
            assert_eq!(
                report["ticket_allows_early_data"], false,
                "{backend}: {report}"
            );
            assert_eq!(report["all_sent_in_0rtt"], force, "{backend}: {report}");
            assert_eq!(report["early_data_accepted"], false, "{backend}: {report}");
            let a = answers(&report);
            assert_eq!(a[0]["status"], 200, "{backend} {force}: {}", a[0]);
            assert!(
                early_data_lines(&a[0]).is_empty(),
                "{backend} {force}: {}",
                a[0]
            );
            assert_eq!(a[1]["status"], 200, "{backend} {force}: {}", a[1]);
            assert!(
                early_data_lines(&a[1]).is_empty(),
                "{backend} {force}: {}",
                a[1]
            );
            assert_eq!(a[2]["status"], 425, "{backend} {force}: {}", a[2]);
            assert_eq!(
                early_data_lines(&a[3]),
                ["early-data: 1"],
                "{backend} {force}"
            );
            // Nothing early, so nothing goes twice.
            assert_eq!(a[4]["status"], 200, "{backend} {force}: {}", a[4]);
            assert_eq!(a[5]["status"], 425, "{backend} {force}: {}", a[5]);
        }
        let (_, metrics) = site.srv.admin_get("/metrics");
        assert_eq!(
            sum(&metrics, "ringside_http3_early_requests_total"),
            0.0,
            "{backend}: {metrics}"
        );
    }
}

/// A `client_auth` listener keeps its own session store, stateful already:
/// a resumed session's certificate is known before the handshake ends, so
/// a route that needs one serves a GET from early data, and the upstream
/// gets the certificate's RFC 9440 field beside `Early-Data`.
#[test]
fn with_client_auth_a_resumed_sessions_certificate_serves_early_requests() {
    use common::origin::Origin;
    use common::pki::Ca;
    use common::{Ringside, TempDir};
    for backend in QUIC_BACKENDS {
        let dir = TempDir::new("h3-0rtt-mtls");
        let server = Ca::new("0-RTT server CA");
        server.leaf(&dir, "site", "site", &["localhost"]);
        let ca_pem = dir.write("ca.pem", server.pem().as_bytes());
        let clients = Ca::new("0-RTT clients CA");
        dir.write("clients.pem", clients.pem().as_bytes());
        clients.client(&dir, "alice", "alice", 1001, false);
        dir.write("root/index.html", b"static\n");
        let origin = Origin::start("o");
        let cfg = format!(
            r#"
[server]
listen = [{{ addr = "127.0.0.1:0", tls = {{ cert = "site.pem", key = "site.key", client_auth = "require", client_ca = "clients.pem" }} }}]
root = "root"

[admin]
listen = "127.0.0.1:0"

[http3]
early_data = true

[upstream.o]
servers = ["127.0.0.1:{}"]

[[route]]
prefix = "/o/"
upstream = "o"
strip_prefix = true
require_client_cert = true
"#,
            origin.port()
        );
        let cfg = dir.write("ringside.toml", cfg.as_bytes());
        let mut srv = Ringside::as_configured(backend, &cfg);
        let (cert, key) = (dir.0.join("alice.pem"), dir.0.join("alice.key"));
        let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
        let report = aioquic_0rtt(
            srv.addr,
            &ca_pem,
            "localhost",
            "/",
            &["--cert", cert, "--key", key],
            &json!([{"path": "/o/headers"}]),
        );
        assert_eq!(report["all_sent_in_0rtt"], true, "{backend}: {report}");
        assert_eq!(report["early_data_accepted"], true, "{backend}: {report}");
        let a = &answers(&report)[0];
        assert_eq!(a["status"], 200, "{backend}: {a}");
        assert_eq!(early_data_lines(a), ["Early-Data: 1"], "{backend}");
        let head = echoed_head(a);
        assert!(head.contains("\r\nClient-Cert: :"), "{backend}: {head}");
        let (_, metrics) = srv.admin_get("/metrics");
        assert_eq!(
            sum(&metrics, "ringside_http3_early_requests_total"),
            1.0,
            "{backend}: {metrics}"
        );
    }
}
