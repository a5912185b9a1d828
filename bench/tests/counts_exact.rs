//! The counts in the report are the origin's access log, exactly, and -n,
//! -c, -k, --cores, --duration, --pipeline and --http1.1 mean what they say.

mod common;

use std::time::Duration;

use common::{bench_json, bench_ok, num, u, Behavior, Origin};

#[test]
fn keepalive_n_requests_on_c_connections() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&["-q", "-k", "-c", "8", "-n", "1000", &o.url("/x")]);
    let log = o.finish();
    assert_eq!(num(&r, "Complete requests:"), 1000);
    assert_eq!(num(&r, "Failed requests:"), 0);
    assert_eq!(num(&r, "Keep-Alive requests:"), 1000);
    assert_eq!(
        log.answered, 1000,
        "the origin answered exactly -n requests"
    );
    assert_eq!(log.received, 1000, "and no request more was sent");
    assert_eq!(log.accepted, 8, "one connection per -c, kept alive");
}

#[test]
fn without_keepalive_one_connection_per_request() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&["-q", "-c", "4", "-n", "200", &o.url("/")]);
    let log = o.finish();
    assert_eq!(num(&r, "Complete requests:"), 200);
    assert_eq!(log.answered, 200);
    assert_eq!(log.accepted, 200);
    assert!(
        !r.contains("Keep-Alive requests:"),
        "ab prints it only with -k:\n{r}"
    );
    // ab's HTTP/1.0 request closes by default: it says nothing more.
    assert!(
        log.first_head.starts_with("GET / HTTP/1.0\r\n"),
        "{}",
        log.first_head
    );
    assert!(
        !log.first_head.contains("Connection:"),
        "{}",
        log.first_head
    );
}

#[test]
fn concurrency_is_requests_in_flight() {
    // A slow origin: every connection has a request waiting at once.
    let o = Origin::start(Behavior {
        delay: Some(Duration::from_millis(5)),
        ..Behavior::default()
    });
    bench_ok(&["-q", "-k", "-c", "5", "-n", "100", &o.url("/")]);
    let log = o.finish();
    assert_eq!(log.answered, 100);
    assert_eq!(
        log.max_inflight, 5,
        "-c 5 means 5 requests in flight, no more"
    );
}

#[test]
fn cores_share_the_requests_exactly() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&["--cores", "2", "-k", "-c", "5", "-n", "1001", &o.url("/")]);
    let log = o.finish();
    assert_eq!(u(&j, &["cores"]), 2);
    assert_eq!(u(&j, &["complete_requests"]), 1001);
    assert_eq!(log.answered, 1001);
    assert_eq!(log.received, 1001);
    assert_eq!(log.accepted, 5);
}

#[test]
fn duration_counts_match_the_log() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&["-k", "-c", "3", "--duration", "500ms", &o.url("/")]);
    let log = o.finish();
    let done = u(&j, &["complete_requests"]);
    assert!(done > 100, "{done}");
    assert_eq!(
        done, log.answered,
        "every request answered is counted, none more"
    );
    assert_eq!(log.received, log.answered);
    let t = j["time_taken_s"].as_f64().unwrap();
    assert!((0.5..1.5).contains(&t), "{t}");
}

#[test]
fn timelimit_stops_early_or_at_n() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&["-k", "-t", "0.3", "-n", "200", &o.url("/")]);
    let log = o.finish();
    assert_eq!(u(&j, &["complete_requests"]), 200, "-n reached before -t");
    assert_eq!(log.answered, 200);
}

#[test]
fn pipeline_sends_batches_and_counts_each_response() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&["--pipeline", "8", "-c", "2", "-n", "1003", &o.url("/")]);
    let log = o.finish();
    assert_eq!(u(&j, &["complete_requests"]), 1003);
    assert_eq!(log.answered, 1003);
    assert_eq!(log.accepted, 2);
}

#[test]
fn keepalive_is_abs_http10_keep_alive() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&["-q", "-k", "-c", "2", "-n", "50", &o.url("/")]);
    let log = o.finish();
    assert!(
        log.first_head.starts_with("GET / HTTP/1.0\r\n"),
        "{}",
        log.first_head
    );
    assert!(log.first_head.contains("Connection: Keep-Alive\r\n"));
    assert_eq!(num(&r, "Keep-Alive requests:"), 50);
    assert_eq!(num(&r, "Complete requests:"), 50);
    assert_eq!(log.accepted, 2);
}

#[test]
fn http11_without_keepalive_says_close() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&["-q", "--http1.1", "-c", "2", "-n", "20", &o.url("/")]);
    let log = o.finish();
    assert!(
        log.first_head.starts_with("GET / HTTP/1.1\r\n")
            && log.first_head.contains("Connection: close\r\n"),
        "{}",
        log.first_head
    );
    assert_eq!(num(&r, "Complete requests:"), 20);
    assert_eq!(log.accepted, 20);
}

#[test]
fn server_closing_kept_alive_connections_costs_no_request() {
    // The origin closes each connection after 10 answers without a
    // Connection: close: the next request on it is sent again, not failed.
    let o = Origin::start(Behavior {
        close_after: Some(10),
        ..Behavior::default()
    });
    let j = bench_json(&["-k", "-c", "2", "-n", "500", &o.url("/")]);
    let log = o.finish();
    assert_eq!(u(&j, &["complete_requests"]), 500);
    assert_eq!(u(&j, &["failed_requests"]), 0);
    assert_eq!(log.answered, 500);
    assert!(log.accepted >= 50, "{}", log.accepted);
    assert!(u(&j, &["counts", "reconnects"]) > 0);
}

#[test]
fn url_file_spreads_requests_over_the_urls() {
    let o = Origin::start(Behavior::default());
    let dir = std::env::temp_dir().join(format!("rb-urlfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("urls.txt");
    std::fs::write(
        &file,
        format!("# two pages\n{}\n{} POST a=1\n", o.url("/a"), o.url("/b")),
    )
    .unwrap();
    let j = bench_json(&[
        "-k",
        "-c",
        "2",
        "-n",
        "100",
        "--file",
        file.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let log = o.finish();
    assert_eq!(u(&j, &["complete_requests"]), 100);
    assert_eq!(log.paths.get("/a"), Some(&50));
    assert_eq!(log.paths.get("/b"), Some(&50));
    assert_eq!(log.body_bytes, 50 * 3, "the POST line's body, on every /b");
}
