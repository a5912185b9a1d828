//! Failed requests, by kind, against origins that reset, cut responses
//! short, vary their lengths, hang, answer 404, or are not there; the
//! complete count still equals the origin's log.

mod common;

use std::time::Duration;

use common::{bench, bench_json, bench_ok, field, num, u, Behavior, Origin};

#[test]
fn resets_before_answering_are_receive_failures() {
    let o = Origin::start(Behavior {
        reset_every: Some(5),
        ..Behavior::default()
    });
    let r = bench_ok(&["-q", "-c", "4", "-n", "500", &o.url("/")]);
    let log = o.finish();
    assert_eq!(log.resets, 100);
    assert_eq!(num(&r, "Complete requests:"), 400);
    assert_eq!(num(&r, "Failed requests:"), 100);
    assert_eq!(
        field(&r, "   (Connect:"),
        "0, Receive: 100, Length: 0, Exceptions: 0)"
    );
    assert_eq!(log.answered, 400);
}

#[test]
fn resets_mid_response_on_kept_alive_connections() {
    let o = Origin::start(Behavior {
        reset_mid_every: Some(4),
        ..Behavior::default()
    });
    let j = bench_json(&["-k", "-c", "3", "-n", "400", &o.url("/")]);
    let log = o.finish();
    assert_eq!(log.resets, 100);
    assert_eq!(u(&j, &["counts", "failed_receive"]), 100);
    assert_eq!(u(&j, &["counts", "resets"]), 100);
    assert_eq!(u(&j, &["complete_requests"]), 300);
    assert_eq!(log.answered, 300);
    assert_eq!(log.received, 400, "a request is sent once, failed or not");
}

#[test]
fn varying_lengths_are_length_failures_unless_l() {
    let behavior = Behavior {
        vary_every: Some(4),
        ..Behavior::default()
    };
    let o = Origin::start(behavior.clone());
    let r = bench_ok(&["-q", "-k", "-c", "4", "-n", "1000", &o.url("/")]);
    let log = o.finish();
    // Requests 7, 11, ..., 999 differ from the first response.
    assert_eq!(
        field(&r, "   (Connect:"),
        "0, Receive: 0, Length: 249, Exceptions: 0)"
    );
    assert_eq!(
        num(&r, "Complete requests:"),
        1000,
        "a Length failure is still complete"
    );
    assert_eq!(log.answered, 1000);
    assert_eq!(field(&r, "Document Length:"), "26 bytes");

    let o = Origin::start(behavior);
    let r = bench_ok(&["-q", "-l", "-k", "-c", "4", "-n", "1000", &o.url("/")]);
    o.finish();
    assert_eq!(num(&r, "Failed requests:"), 0);
    assert_eq!(field(&r, "Document Length:"), "Variable");
}

#[test]
fn a_response_that_never_comes_is_a_timeout() {
    let o = Origin::start(Behavior {
        hang_at: Some(10),
        ..Behavior::default()
    });
    let j = bench_json(&["-k", "-s", "0.3", "-c", "1", "-n", "20", &o.url("/")]);
    let log = o.finish();
    assert_eq!(u(&j, &["counts", "timeouts"]), 1);
    assert_eq!(u(&j, &["counts", "failed_receive"]), 1);
    assert_eq!(u(&j, &["complete_requests"]), 19);
    assert_eq!(log.answered, 19);
}

#[test]
fn non_2xx_responses_are_counted_not_failed() {
    let o = Origin::start(Behavior {
        not_found_every: Some(2),
        ..Behavior::default()
    });
    let r = bench_ok(&["-q", "-k", "-c", "2", "-n", "100", &o.url("/")]);
    o.finish();
    assert_eq!(num(&r, "Non-2xx responses:"), 50);
    assert_eq!(num(&r, "Failed requests:"), 0);
}

/// A port nothing listens on: bound, then closed.
fn refused_url() -> String {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    format!("http://127.0.0.1:{port}/")
}

#[test]
fn nothing_listening_exits_111_like_ab() {
    let url = refused_url();
    let out = bench(&["-q", "-c", "2", "-n", "10", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(111), "stderr:\n{err}");
    assert!(
        err.contains("apr_socket_recv: Connection refused (111)"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Complete requests:"));
    // ab itself, on the same port.
    let ab = std::process::Command::new("ab")
        .args(["-q", "-c", "2", "-n", "10", &url])
        .output()
        .expect("ab (apache2-utils) is needed by this test");
    assert_eq!(ab.status.code(), Some(111));
    assert!(String::from_utf8_lossy(&ab.stderr).contains("Connection refused (111)"));
}

#[test]
fn nothing_listening_is_connect_failures_in_json() {
    let j = common::bench(&["--json", "-q", "-c", "2", "-n", "10", &refused_url()]);
    assert_eq!(j.status.code(), Some(1), "no response at all is an error");
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(u(&v, &["complete_requests"]), 0);
    assert_eq!(u(&v, &["failed_requests"]), 10);
}

#[test]
fn a_stalled_server_holds_no_extra_requests() {
    // Closed loop: a stall delays, but the total is still exact.
    let o = Origin::start(Behavior {
        stall_at: Some((5, Duration::from_millis(200))),
        ..Behavior::default()
    });
    let j = bench_json(&["-k", "-c", "2", "-n", "50", &o.url("/")]);
    let log = o.finish();
    assert_eq!(u(&j, &["complete_requests"]), 50);
    assert_eq!(log.answered, 50);
    assert!(j["service_time"]["max"].as_f64().unwrap() >= 200.0);
}
