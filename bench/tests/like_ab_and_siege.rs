//! The same server measured by ab and by ringside-bench with ab's flags,
//! and by siege and by ringside-bench --siege, counts the same: requests,
//! bytes received, body bytes; transactions and data transferred. ab and
//! siege are the real programs (scripts/test.sh installs them); a test
//! that cannot run one fails.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;

use common::{bench, bench_ok, field, num, Behavior, Origin};

fn ab(args: &[&str]) -> String {
    let out = Command::new("ab")
        .args(args)
        .output()
        .expect("ab (apache2-utils) is needed by this test");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ab {args:?}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// ab's counts and ours on one origin each, for the same flags.
fn same_counts_as_ab(flags: &[&str]) {
    let labels = [
        "Complete requests:",
        "Failed requests:",
        "Total transferred:",
        "HTML transferred:",
    ];
    let run = |tool: &dyn Fn(&[&str]) -> String| {
        let o = Origin::start(Behavior::default());
        let url = o.url("/doc");
        let mut args = flags.to_vec();
        args.push(&url);
        let r = tool(&args);
        let log = o.finish();
        (r, log)
    };
    let (theirs, their_log) = run(&ab);
    let (ours, our_log) = run(&|a: &[&str]| bench_ok(a));
    for l in labels {
        assert_eq!(
            field(&ours, l),
            field(&theirs, l),
            "{l}\nab:\n{theirs}\nringside-bench:\n{ours}"
        );
    }
    if flags.contains(&"-k") {
        assert_eq!(
            num(&ours, "Keep-Alive requests:"),
            num(&theirs, "Keep-Alive requests:")
        );
    }
    assert_eq!(our_log.answered, their_log.answered);
    // ab may open up to c - 1 connections more at the end, which carry no
    // request (it starts a connection per one finished until it counts n
    // done): the same connections as ab's that carried requests.
    let arg = |flag: &str| -> u64 {
        flags[flags.iter().position(|f| *f == flag).unwrap() + 1]
            .parse()
            .unwrap()
    };
    let (n, c) = (arg("-n"), arg("-c"));
    let ours = if flags.contains(&"-k") { c } else { n };
    assert_eq!(
        our_log.accepted, ours,
        "a connection per request, or per client with -k"
    );
    assert!(
        (our_log.accepted..our_log.accepted + c).contains(&their_log.accepted),
        "connections: ours {}, ab's {}",
        our_log.accepted,
        their_log.accepted
    );
    assert_eq!(
        our_log.first_head.lines().next(),
        their_log.first_head.lines().next()
    );
}

#[test]
fn abs_flags_count_what_ab_counts() {
    same_counts_as_ab(&["-q", "-n", "200", "-c", "4"]);
}

#[test]
fn abs_keepalive_counts_what_ab_counts() {
    same_counts_as_ab(&["-q", "-k", "-n", "200", "-c", "4"]);
}

/// A page with a stylesheet, a script and images (one twice, one in a
/// comment, one on another host), and assets big enough for siege's MB.
fn site() -> Arc<common::Site> {
    let page = br#"<html><head><link rel="stylesheet" href="/s.css">
<script src="js/app.js"></script></head><body>
<!-- <img src="/hidden.png"> -->
<img alt="logo" src="/a.png"><img src="/a.png"><img src="/b.png?v=2">
<img src="http://elsewhere.invalid/x.png"><a href="/other.html">other</a>
</body></html>"#;
    let mut s = HashMap::new();
    s.insert("/".to_string(), ("text/html; charset=utf-8", page.to_vec()));
    for (i, p) in ["/s.css", "/js/app.js", "/a.png", "/b.png"]
        .iter()
        .enumerate()
    {
        s.insert(
            p.to_string(),
            ("application/octet-stream", vec![b'x'; 40_000 + i * 7_919]),
        );
    }
    Arc::new(s)
}

#[test]
fn siege_mode_counts_what_siege_counts() {
    let dir = std::env::temp_dir().join(format!("rb-siege-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // siege's packaged defaults, less its chatter, for a repeatable run.
    let rc = dir.join("siegerc");
    std::fs::write(
        &rc,
        "verbose = false\nquiet = true\njson_output = true\nlogging = false\n\
         show-logfile = false\nparser = true\nprotocol = HTTP/1.1\nchunked = true\n\
         cache = false\nconnection = close\ndelay = 0\nbenchmark = true\n\
         accept-encoding = gzip, deflate\n",
    )
    .unwrap();
    let o = Origin::start(Behavior {
        site: Some(site()),
        ..Behavior::default()
    });
    let out = Command::new("siege")
        .arg("-R")
        .arg(&rc)
        .args(["-r", "3", "-c", "2", &o.url("/")])
        .env("HOME", &dir)
        .output()
        .expect("siege is needed by this test");
    let their_log = o.finish();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "siege: {}\n{text}", out.status);
    let json = &text[text.find('{').expect("siege's JSON")..];
    let theirs: serde_json::Value = serde_json::from_str(json).unwrap();

    let o = Origin::start(Behavior {
        site: Some(site()),
        ..Behavior::default()
    });
    let ours = bench_ok(&["--siege", "-q", "-c", "2", "-n", "6", &o.url("/")]);
    let our_log = o.finish();

    // 6 pages, each with 4 assets: the hidden, the foreign and the linked
    // ones are not fetched, the image shown twice is fetched once.
    assert_eq!(theirs["transactions"], 30, "{text}");
    assert_eq!(num(&ours, "Transactions:"), 30, "{ours}");
    assert_eq!(our_log.paths, their_log.paths);
    let theirs_mb = format!("{:.2}", theirs["data_transferred"].as_f64().unwrap());
    assert_eq!(field(&ours, "Data transferred:"), format!("{theirs_mb} MB"));
    assert_eq!(num(&ours, "Successful transactions:"), 30);
}

#[test]
fn siege_mode_without_the_parser_fetches_pages_only() {
    let o = Origin::start(Behavior {
        site: Some(site()),
        ..Behavior::default()
    });
    let ours = bench_ok(&[
        "--siege",
        "--no-parser",
        "-q",
        "-c",
        "2",
        "-n",
        "6",
        &o.url("/"),
    ]);
    assert_eq!(num(&ours, "Transactions:"), 6);
    assert_eq!(o.finish().answered, 6);
}

#[test]
fn help_names_the_shootout_command() {
    let out = bench(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("shootout FILE.toml"), "{help}");
    let out = bench(&["help", "shootout"]);
    assert_eq!(out.status.code(), Some(0));
    let usage = String::from_utf8_lossy(&out.stdout);
    assert!(
        usage.starts_with("usage: ringside-bench shootout FILE.toml"),
        "{usage}"
    );
}
