//! The reports' layouts (ab's, siege's, JSON, ab's -e CSV), progress on
//! stderr, and the request flags as the origin sees them.

mod common;

use std::process::Command;

use common::{bench, bench_json, bench_ok, field, num, u, Behavior, Origin, BODY};

/// ab's report from "Server Software:" on, in order, without the
/// (timing-dependent) WARNING/ERROR notes under the Connection Times table.
const AB_LAYOUT: &[&str] = &[
    "Server Software: T",
    "Server Hostname: N",
    "Server Port: N",
    "",
    "Document Path: /",
    "Document Length: N bytes",
    "",
    "Concurrency Level: N",
    "Time taken for tests: N seconds",
    "Complete requests: N",
    "Failed requests: N",
    "Keep-Alive requests: N",
    "Total transferred: N bytes",
    "HTML transferred: N bytes",
    "Requests per second: N [#/sec] (mean)",
    "Time per request: N [ms] (mean)",
    "Time per request: N [ms] (mean, across all concurrent requests)",
    "Transfer rate: N [Kbytes/sec] received",
    "",
    "Connection Times (ms)",
    " min mean[+/-sd] median max",
    "Connect: N N N N N",
    "Processing: N N N N N",
    "Waiting: N N N N N",
    "Total: N N N N N",
    "",
    "Percentage of the requests served within a certain time (ms)",
    " N% N",
    " N% N",
    " N% N",
    " N% N",
    " N% N",
    " N% N",
    " N% N",
    " N% N",
    " N% N (longest request)",
];

/// Numbers become N, runs of spaces one space, the server name T.
fn shape(report: &str) -> Vec<String> {
    let start = report.find("Server Software:").expect("a report");
    let mut out = Vec::new();
    let mut skip = false;
    for line in report[start..].lines() {
        if line.starts_with("WARNING:") || line.starts_with("ERROR:") {
            skip = true;
            continue;
        }
        if skip && line.starts_with(' ') && !line.trim_start().starts_with(char::is_numeric) {
            continue; // the note's second line
        }
        skip = false;
        let line = line.replace("test-origin/1", "T");
        let mut s = String::new();
        for tok in line.split(' ').filter(|t| !t.is_empty()) {
            let end = tok
                .find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(tok.len());
            let (num, rest) = tok.split_at(end);
            s.push(' ');
            if num.is_empty() || num == "." {
                s.push_str(tok);
            } else {
                s.push('N');
                s.push_str(rest);
            }
        }
        out.push(if line.starts_with(' ') {
            s
        } else {
            s.trim_start().to_string()
        });
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// The column where each "Label:" line's value starts.
fn value_columns(report: &str) -> Vec<(String, usize)> {
    report
        .lines()
        .take_while(|l| !l.starts_with("Connection Times"))
        .filter(|l| !l.starts_with(' ') && l.contains(":  "))
        .map(|l| {
            let label = l.split(':').next().unwrap().to_string();
            let col = l.find(':').unwrap()
                + 1
                + l[l.find(':').unwrap() + 1..]
                    .find(|c| c != ' ')
                    .unwrap_or(0);
            (label, col)
        })
        .collect()
}

#[test]
fn ab_layout_line_by_line() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&["-k", "-c", "2", "-n", "200", &o.url("/")]);
    let ab = Command::new("ab")
        .args(["-k", "-c", "2", "-n", "200", &o.url("/")])
        .output();
    o.finish();
    let want: Vec<String> = AB_LAYOUT.iter().map(|s| s.to_string()).collect();
    assert_eq!(shape(&r), want, "report:\n{r}");
    assert!(r.contains("Benchmarking 127.0.0.1 (be patient)\n"));
    for (label, col) in value_columns(&r) {
        assert_eq!(col, 24, "{label}: values start in column 25 in ab");
    }
    assert!(
        r.contains("\nConnect:        0    0   0.0      0       0\n")
            || r.contains("\nConnect:    ")
    );
    // ab (apache2-utils), on the same origin with the same flags: the same lines.
    let out = ab.expect("ab (apache2-utils) is needed by this test");
    assert!(out.status.success());
    let ab = String::from_utf8_lossy(&out.stdout);
    assert_eq!(shape(&r), shape(&ab), "ab:\n{ab}\nringside-bench:\n{r}");
    assert_eq!(value_columns(&r), value_columns(&ab));
}

#[test]
fn quiet_and_failures_layout() {
    let o = Origin::start(Behavior {
        reset_every: Some(10),
        ..Behavior::default()
    });
    let out = bench(&["-q", "-c", "1", "-n", "100", &o.url("/")]);
    o.finish();
    let r = String::from_utf8_lossy(&out.stdout);
    assert!(
        r.contains("Benchmarking 127.0.0.1 (be patient).....done\n\n\nServer Software:"),
        "{r}"
    );
    assert!(r.contains("\nFailed requests:        10\n   (Connect: 0, Receive: 10, Length: 0, Exceptions: 0)\nTotal transferred:"), "{r}");
    assert!(!r.contains("Keep-Alive requests"), "{r}");
    assert!(out.stderr.is_empty(), "-q prints no progress");
}

#[test]
fn progress_lines_like_ab() {
    let o = Origin::start(Behavior::default());
    let out = bench(&["--progress", "lines", "-k", "-n", "1000", &o.url("/")]);
    o.finish();
    let err = String::from_utf8_lossy(&out.stderr);
    let want: String = (1..=10)
        .map(|i| format!("Completed {} requests\n", i * 100))
        .collect::<String>()
        + "Finished 1000 requests\n";
    assert_eq!(err, want);
}

#[test]
fn progress_bar_shows_the_rate() {
    let o = Origin::start(Behavior::default());
    let out = bench(&[
        "--progress",
        "bar",
        "-k",
        "--duration",
        "400ms",
        &o.url("/"),
    ]);
    o.finish();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\r[") && err.contains(" req/s"), "{err:?}");
    assert!(
        err.ends_with(" requests\n") && err.contains("Finished "),
        "{err:?}"
    );
}

#[test]
fn siege_layout() {
    let o = Origin::start(Behavior::default());
    let out = bench(&["--siege", "-k", "-c", "2", "-n", "100", &o.url("/")]);
    o.finish();
    let r = String::from_utf8_lossy(&out.stdout);
    let labels: Vec<&str> = r
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(['\t', ':']).next().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "Transactions",
            "Availability",
            "Elapsed time",
            "Data transferred",
            "Response time",
            "Transaction rate",
            "Throughput",
            "Concurrency",
            "Successful transactions",
            "Failed transactions",
            "Longest transaction",
            "Shortest transaction"
        ]
    );
    assert!(r.contains("Transactions:\t\t         100 hits\n"), "{r}");
    assert!(r.contains("Availability:\t\t      100.00 %\n"), "{r}");
    assert!(r.contains("Successful transactions:         100\n"), "{r}");
    assert!(r.contains("Failed transactions:\t           0\n"), "{r}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The server is now under siege...")
            && err.contains("Lifting the server siege...")
    );
}

#[test]
fn json_report() {
    let o = Origin::start(Behavior::default());
    let j = bench_json(&["-k", "-c", "2", "-n", "300", &o.url("/p")]);
    o.finish();
    assert_eq!(j["server_software"], "test-origin/1");
    assert_eq!(j["document_path"], "/p");
    assert_eq!(u(&j, &["document_length"]), BODY.len() as u64);
    assert_eq!(u(&j, &["counts", "keepalive"]), 300);
    assert_eq!(u(&j, &["counts", "body_bytes"]), 300 * BODY.len() as u64);
    assert_eq!(j["counts"]["status_classes"][1], 300);
    assert_eq!(u(&j, &["latency", "count"]), 300);
    for k in ["connect", "processing", "waiting", "total"] {
        assert_eq!(u(&j, &["connection_times", k, "count"]), 300, "{k}");
    }
    assert!(j["client_cpu"]["us_per_request"].as_f64().unwrap() > 0.0);
    assert!(j["latency"]["percentiles"]["99.9"].is_number());
}

#[test]
fn csv_percentages() {
    let o = Origin::start(Behavior::default());
    let path = std::env::temp_dir().join(format!("rb-csv-{}.csv", std::process::id()));
    bench_ok(&[
        "-q",
        "-k",
        "-n",
        "200",
        "-e",
        path.to_str().unwrap(),
        &o.url("/"),
    ]);
    o.finish();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 102);
    assert_eq!(lines[0], "Percentage served,Time in ms");
    let mut last = 0.0;
    for (i, l) in lines[1..].iter().enumerate() {
        let (p, t) = l.split_once(',').unwrap();
        assert_eq!(p, i.to_string());
        let t: f64 = t.parse().unwrap();
        assert!(t >= last, "percentiles never decrease");
        last = t;
    }
}

#[test]
fn request_flags_reach_the_origin() {
    let o = Origin::start(Behavior::default());
    let dir = std::env::temp_dir().join(format!("rb-post-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    std::fs::write(&body, b"k=v&x=1").unwrap();
    let r = bench_ok(&[
        "-q",
        "-k",
        "-n",
        "10",
        "-p",
        body.to_str().unwrap(),
        "-T",
        "application/x-www-form-urlencoded",
        "-H",
        "X-Test: yes",
        "-C",
        "session=abc",
        "-A",
        "user:pw",
        &o.url("/form"),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let log = o.finish();
    let h = &log.first_head;
    assert!(h.starts_with("POST /form HTTP/1.0\r\n"), "{h}");
    for want in [
        "X-Test: yes\r\n",
        "Cookie: session=abc\r\n",
        "Authorization: Basic dXNlcjpwdw==\r\n",
        // ab's spelling.
        "Content-length: 7\r\n",
        "Content-type: application/x-www-form-urlencoded\r\n",
    ] {
        assert!(h.contains(want), "{want:?} not in {h}");
    }
    assert_eq!(log.body_bytes, 70);
    assert_eq!(field(&r, "Total body sent:"), "70");
    assert_eq!(num(&r, "Complete requests:"), 10);
}

#[test]
fn head_and_method() {
    let o = Origin::start(Behavior::default());
    let r = bench_ok(&["-q", "-k", "-i", "-n", "5", &o.url("/")]);
    let log = o.finish();
    assert!(log.first_head.starts_with("HEAD / "));
    assert_eq!(field(&r, "Document Length:"), "0 bytes");
    assert_eq!(num(&r, "Failed requests:"), 0);
    let o = Origin::start(Behavior::default());
    bench_ok(&["-q", "-m", "DELETE", "-n", "1", &o.url("/")]);
    assert!(o.finish().first_head.starts_with("DELETE / "));
}

#[test]
fn bad_arguments_exit_1() {
    for args in [
        &["-c", "5", "-n", "2", "http://127.0.0.1:1/"][..],
        &["https://h/"],
        &["--duration", "soon", "http://h/"],
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}
