//! 0-RTT on HTTP/3 (`[http3] early_data`), with aioquic resuming a
//! session and sending its requests before the handshake ends: with it on,
//! a safe request is served from early data and goes upstream with
//! `Early-Data: 1` (RFC 8470 §5.1), a POST waits for the handshake and goes
//! without it, an upstream's 425 reaches the client as it is, and a
//! client's own `Early-Data` goes on once, untouched. Off (the default),
//! the server's tickets allow no early data and early data sent anyway is
//! refused, the requests then served after the handshake with no
//! `Early-Data` of ours. A missing client fails the test (scripts/test.sh
//! installs aioquic).

mod common;

use common::h2::Site;
use common::h3::aioquic_0rtt;
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
    ])
}

/// The `Early-Data` lines of a head the origin echoed (`/headers`).
fn early_data_lines(answer: &Value) -> Vec<String> {
    use base64::Engine as _;
    let body = answer["body"].as_str().expect("a body");
    let head = base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("base64");
    String::from_utf8_lossy(&head)
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

/// A metric's samples summed over the workers.
fn sum(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn with_early_data_safe_requests_are_served_from_0rtt_and_others_wait() {
    for backend in QUIC_BACKENDS {
        let mut site = Site::start("h3-0rtt", backend, "\n[http3]\nearly_data = true\n");
        let at = site.tls.expect("a TLS listener");
        let report = aioquic_0rtt(
            at,
            &site.ca_pem,
            "h2.test",
            "/small.txt",
            false,
            &requests(),
        );
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
        // The upstream's 425 Too Early, passed back.
        assert_eq!(a[2]["status"], 425, "{backend}: {}", a[2]);
        // The client's own field, once and as sent.
        assert_eq!(a[3]["status"], 200, "{backend}: {}", a[3]);
        assert_eq!(early_data_lines(&a[3]), ["early-data: 1"], "{backend}");
        let heads = site.origin.heads();
        let post = heads.iter().find(|h| h.starts_with("POST /headers"));
        let post = post.unwrap_or_else(|| panic!("{backend}: no POST upstream: {heads:?}"));
        assert!(!post.to_ascii_lowercase().contains("early-data"), "{post}");
        let (_, metrics) = site.srv.admin_get("/metrics");
        assert_eq!(
            sum(&metrics, "ringside_http3_early_requests_total"),
            3.0,
            "{backend}: the three GETs, not the POST: {metrics}"
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
            let report = aioquic_0rtt(
                at,
                &site.ca_pem,
                "h2.test",
                "/small.txt",
                force,
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
        }
        let (_, metrics) = site.srv.admin_get("/metrics");
        assert_eq!(
            sum(&metrics, "ringside_http3_early_requests_total"),
            0.0,
            "{backend}: {metrics}"
        );
    }
}
