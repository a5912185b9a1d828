//! Open loop (-R): the rate is held, and latency is measured from each
//! request's intended send time, so a stall shows in the percentiles
//! (coordinated omission corrected), where a closed loop hides it; the
//! run ends on time whatever the rate, and its report says what it achieved.

mod common;

use std::time::Duration;

use common::{bench_json, f, u, Behavior, Origin};

#[test]
fn rate_holds_the_target_within_two_percent() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&[
        "-k",
        "-c",
        "8",
        "-R",
        "2000",
        "--duration",
        "3s",
        &o.url("/"),
    ]);
    let log = o.finish();
    let rps = f(&j, &["requests_per_second"]);
    let done = u(&j, &["complete_requests"]);
    assert!((rps - 2000.0).abs() / 2000.0 < 0.02, "achieved {rps} req/s");
    assert!(
        (done as f64 - 6000.0).abs() / 6000.0 < 0.02,
        "{done} requests"
    );
    assert_eq!(done, log.answered);
    assert_eq!(u(&j, &["failed_requests"]), 0);
    assert_eq!(j["latency"]["corrected"], true);
}

#[test]
fn rate_over_two_cores() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&[
        "--cores",
        "2",
        "-k",
        "-c",
        "4",
        "-R",
        "1000",
        "--duration",
        "2s",
        &o.url("/"),
    ]);
    let log = o.finish();
    let rps = f(&j, &["requests_per_second"]);
    assert!((rps - 1000.0).abs() / 1000.0 < 0.02, "achieved {rps} req/s");
    assert_eq!(u(&j, &["complete_requests"]), log.answered);
}

fn stall() -> Behavior {
    Behavior {
        stall_at: Some((300, Duration::from_millis(500))),
        ..Behavior::default()
    }
}

#[test]
fn corrected_p99_shows_a_500ms_stall() {
    let o = Origin::start(stall());
    let j = bench_json(&[
        "-k",
        "-c",
        "1",
        "-R",
        "1000",
        "--duration",
        "2s",
        &o.url("/"),
    ]);
    let log = o.finish();
    assert_eq!(u(&j, &["complete_requests"]), log.answered);
    // About 500 requests were due during the stall and waited for it.
    let p99 = f(&j, &["latency", "percentiles", "99"]);
    assert!(p99 >= 400.0, "corrected p99 {p99} ms hides the stall");
    assert!(f(&j, &["latency", "max"]) >= 500.0);
    // From the actual send, only the one stalled request is slow.
    let service_p99 = f(&j, &["service_time", "percentiles", "99"]);
    assert!(service_p99 < 100.0, "service p99 {service_p99} ms");
}

#[test]
fn closed_loop_hides_the_same_stall() {
    // What ab and wrk report: one slow sample among many fast ones.
    let o = Origin::start(stall());
    let j = bench_json(&["-k", "-c", "1", "-n", "3000", &o.url("/")]);
    o.finish();
    assert!(f(&j, &["latency", "max"]) >= 500.0);
    let p99 = f(&j, &["latency", "percentiles", "99"]);
    assert!(p99 < 100.0, "closed-loop p99 {p99} ms");
    assert_eq!(j["latency"]["corrected"], false);
}

#[test]
fn an_unreachable_rate_stops_at_the_deadline_and_says_so() {
    // 100 times what one in-process origin thread per connection can do.
    let o = Origin::start(Behavior {
        delay: Some(Duration::from_millis(1)),
        ..Behavior::default()
    });
    let out = common::bench(&[
        "--json",
        "-q",
        "-k",
        "-c",
        "2",
        "-R",
        "200000",
        "--duration",
        "1s",
        &o.url("/"),
    ]);
    let log = o.finish();
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let secs = f(&j, &["time_taken_s"]);
    assert!(secs < 1.3, "ran {secs} s for a 1 s run");
    assert_eq!(u(&j, &["complete_requests"]), log.answered);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("WARNING: achieved"), "{err}");
    assert!(err.contains("of the -R target of 200000.00"), "{err}");
}

#[test]
fn rate_report_gives_the_real_mean_latency() {
    let o = Origin::start(Behavior::default());
    let r = common::bench_ok(&[
        "-q",
        "-k",
        "-c",
        "8",
        "-R",
        "200",
        "--duration",
        "1s",
        &o.url("/"),
    ]);
    o.finish();
    // ab's formula, concurrency x time / requests, would say 8 x 1 s / 200
    // = 40 ms; the origin answers in well under a millisecond.
    let per_request: f64 = common::field(&r, "Time per request:")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        per_request < 20.0,
        "Time per request {per_request} ms:\n{r}"
    );
    assert!(
        r.contains("Target rate:            200.00 [#/sec] (-R)"),
        "{r}"
    );
    assert!(!r.contains("WARNING: achieved"), "{r}");
    assert!(
        r.contains("(-R: from each request's intended send time"),
        "{r}"
    );
}
