//! HTTP/2 attacks, each written frame by frame with Python's h2 family
//! (`support/h2_attacks.py`) against a running ringside: Rapid Reset and
//! MadeYouReset, CONTINUATION and HPACK bombs, PING, SETTINGS, PRIORITY,
//! WINDOW_UPDATE and empty-DATA floods, too many streams, clients that
//! open no window or never read, and framing errors. Each must end in the
//! stream or connection error RFC 9113 names (or ENHANCE_YOUR_CALM past
//! the flood budget), leave the server serving, and pass nothing of a
//! malformed request to the upstream (pseudo-fields included: a method
//! that is not a token, a path not in origin form, an authority with
//! userinfo, a scheme not served). A missing python3-h2 fails the test.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use common::h2::Site;
use common::recorder::Recorder;

/// Runs the cases named against `site`'s h2c listener; returns each
/// case's line.
fn attack(site: &Site, cases: &[&str]) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/h2_attacks.py");
    let out = Command::new("/usr/bin/python3")
        .arg(script)
        .arg(site.h2c.to_string())
        .args(cases)
        .output()
        .expect("/usr/bin/python3 must be installed (run scripts/test.sh)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    // What each case saw, for `--nocapture`.
    print!("{text}");
    assert!(out.status.success(), "{text}{err}");
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for case in cases {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("ok {case}:"))),
            "{case}: {text}{err}"
        );
    }
    lines
}

/// A flood budget small enough to reach quickly, a short send timeout.
const LIMITS: &str = "\n[http2]\nflood_budget = 200\n\n[timeouts]\nsend = \"2s\"\n";

#[test]
fn floods_end_in_enhance_your_calm() {
    let mut site = Site::start("h2flood", "io-uring", LIMITS);
    let lines = attack(
        &site,
        &[
            "rapid_reset",
            "made_you_reset",
            "ping_flood",
            "settings_flood",
            "priority_flood",
            "window_update_flood",
            "empty_data_flood",
        ],
    );
    let goaways = site
        .srv
        .metric("ringside_http2_goaways_total{worker=\"0\",direction=\"sent\"}");
    assert!(goaways >= 7.0, "GOAWAYs sent: {goaways}; {lines:#?}");
    let resets = site
        .srv
        .metric("ringside_http2_resets_total{worker=\"0\",direction=\"received\"}");
    // Rapid Reset ends at the codec's own limit of resets before accept
    // (20) at the latest.
    assert!(resets >= 20.0, "resets received: {resets}");
}

#[test]
fn header_bombs_are_bounded_by_max_head() {
    let site = Site::start("h2bomb", "io-uring", LIMITS);
    attack(&site, &["continuation_flood", "hpack_bomb"]);
}

#[test]
fn stream_limits_and_slow_readers() {
    let mut site = Site::start("h2slow", "io-uring", LIMITS);
    attack(
        &site,
        &["too_many_streams", "zero_window_reader", "never_reads"],
    );
    // 72 streams refused and one cancelled, whoever wrote the frames.
    let sent = site
        .srv
        .metric("ringside_http2_resets_total{worker=\"0\",direction=\"sent\"}");
    assert!(sent >= 73.0, "resets sent: {sent}");
}

#[test]
fn framing_errors_are_the_errors_rfc_9113_names() {
    let site = Site::start("h2framing", "io-uring", LIMITS);
    attack(
        &site,
        &[
            "oversized_frame",
            "stream_id_backwards",
            "stream_id_reuse",
            "data_on_closed_stream",
            "bad_preface",
        ],
    );
}

#[test]
fn malformed_requests_never_reach_the_upstream() {
    let site = Site::start("h2malformed", "io-uring", LIMITS);
    attack(
        &site,
        &[
            "uppercase_field",
            "connection_specific_field",
            "transfer_encoding",
            "content_length_short",
            "content_length_long",
        ],
    );
    // Each case's next stream went to the static file; none of the
    // malformed ones reached the origin whole.
    let whole = site.origin.requests() - site.origin.cut_uploads();
    assert_eq!(whole, 0, "origin saw {:#?}", site.origin.heads());
}

/// RFC 9113 §8.3.1: what the pseudo-fields hold is checked before
/// anything is forwarded; each case names `/rec/`, a route to a recording
/// upstream, once read as ringside used to read it.
#[test]
fn malformed_pseudo_fields_never_reach_the_upstream() {
    let rec = Recorder::start();
    let extra = format!(
        "\n[upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n[[route]]\nprefix = \"/rec/\"\nupstream = \"rec\"\n",
        rec.port()
    );
    let site = Site::start("h2pseudo", "io-uring", &format!("{extra}{LIMITS}"));
    attack(
        &site,
        &[
            "method_not_a_token",
            "path_not_origin_form",
            "asterisk_path_without_options",
            "authority_with_userinfo",
            "unknown_scheme",
        ],
    );
    assert_eq!(rec.count(), 0, "the upstream got {:#?}", rec.requests());
    assert!(rec.anomalies().is_empty(), "{:?}", rec.anomalies());
    assert_eq!(site.origin.requests(), 0);
}

#[test]
fn a_drain_sends_goaway_and_finishes_the_streams_in_flight() {
    let site = Site::start("h2drain", "io-uring", LIMITS);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/h2_attacks.py");
    let mut child = Command::new("/usr/bin/python3")
        .args([script, &site.h2c.to_string(), "drain"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 must be installed (run scripts/test.sh)");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "{line}");
    // The origin answers /slow after 3 s; the drain starts meanwhile.
    site.srv.signal(libc::SIGTERM);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");
    assert!(rest.starts_with("ok drain:"), "{rest}");
}
