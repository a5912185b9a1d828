//! slowhttptest (Debian's package), at a small scale, in its three slow
//! modes against one worker: slow headers (slowloris), slow body (R-U-Dead-
//! Yet, through the proxy so the body is really read) and slow read of a
//! large file. In each, its probe must find the service available at every
//! sample, and ringside must have cut every slow connection by the end.
//! slowhttptest must be installed (scripts/test.sh does); the test fails,
//! never skips, without it.

mod common;

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

use common::recorder::Recorder;
use common::{Ringside, TempDir};

struct Sample {
    second: u32,
    connected: u32,
    available: bool,
}

/// Runs slowhttptest with `mode` flags against `url`, calling `during`
/// while it runs: its CSV samples, and whether it ended because the server
/// had closed every connection.
fn run(
    dir: &Path,
    name: &str,
    mode: &[&str],
    url: &str,
    during: impl FnOnce(&mut Child),
) -> (Vec<Sample>, bool) {
    let prefix = dir.join(name);
    let stdout = File::create(prefix.with_extension("out")).unwrap();
    let mut child = Command::new("slowhttptest")
        .args(mode)
        // 100 connections at 100/s, follow-up data every second, at most
        // 12 s, the probe given 3 s.
        .args(["-c", "100", "-r", "100", "-i", "1", "-l", "12", "-p", "3"])
        .args(["-u", url, "-g", "-o", prefix.to_str().unwrap()])
        .stdout(stdout)
        .spawn()
        .expect("slowhttptest is not installed (scripts/test.sh installs it)");
    during(&mut child);
    let status = child.wait().unwrap();
    assert!(status.success(), "slowhttptest {mode:?} failed: {status}");
    let out = std::fs::read_to_string(prefix.with_extension("out")).unwrap();
    let csv = std::fs::read_to_string(prefix.with_extension("csv")).expect("slowhttptest CSV");
    let all_closed = out.contains("No open connections left");
    // Seconds,Closed,Pending,Connected,Service Available
    let samples = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<u32> = l.split(',').map(|v| v.trim().parse().unwrap()).collect();
            Sample {
                second: f[0],
                connected: f[3],
                // Plotted as the connection count when the probe got an
                // answer, 0 when it did not.
                available: f[4] > 0,
            }
        })
        .collect();
    (samples, all_closed)
}

/// The probe found the service up at every sample and the attack got
/// going; `cut` says ringside must have closed every slow connection.
fn check(name: &str, (samples, all_closed): (Vec<Sample>, bool), cut: bool) {
    assert!(samples.len() >= 2, "{name}: too few samples");
    for s in &samples {
        assert!(
            s.available,
            "{name}: service unavailable at second {}",
            s.second
        );
    }
    let peak = samples.iter().map(|s| s.connected).max().unwrap();
    assert!(
        peak >= 50,
        "{name}: the attack never got going (peak {peak} connections)"
    );
    assert!(
        all_closed || !cut,
        "{name}: slow connections still open when the test ended"
    );
}

#[test]
fn slowhttptest_modes_are_cut_off_and_service_stays_up() {
    let rec = Recorder::start();
    let dir = TempDir::new("slowhttptest");
    dir.write("index.html", b"<p>hello</p>\n");
    dir.write("big.bin", &vec![b'x'; 16 << 20]);
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[server]\nroot = \".\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n\n[timeouts]\nheader_read = \"2s\"\nbody_read = \"2s\"\nsend = \"2s\"\n\n[upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n[[route]]\nprefix = \"/up/\"\nupstream = \"rec\"\n",
            rec.port()
        )
        .as_bytes(),
    );
    let mut rs = Ringside::configured("io-uring", &cfg);
    let base = format!("http://{}", rs.addr);
    let headers = run(
        dir.path(),
        "headers",
        &["-H"],
        &format!("{base}/index.html"),
        |_| {},
    );
    check("slow headers", headers, true);
    let body = run(
        dir.path(),
        "body",
        &["-B"],
        &format!("{base}/up/form"),
        |_| {},
    );
    check("slow body", body, true);
    // In slow-read mode slowhttptest does not notice a reset and counts the
    // connection as open to the end, so ringside's own count says whether
    // it cut them while the attacker still held on.
    let open = "ringside_open_connections{worker=\"0\"}";
    let read = run(
        dir.path(),
        "read",
        // Windows of 1-16 bytes, 4 bytes read a second.
        &["-X", "-k", "1", "-n", "1", "-w", "1", "-y", "16", "-z", "4"],
        &format!("{base}/big.bin"),
        |attacker| {
            let end = Instant::now() + Duration::from_secs(20);
            while rs.metric(open) < 50.0 {
                assert!(Instant::now() < end, "the slow readers never connected");
                thread::sleep(Duration::from_millis(20));
            }
            while rs.metric(open) > 1.0 {
                assert!(
                    attacker.try_wait().unwrap().is_none(),
                    "slow readers still connected when slowhttptest ended"
                );
                thread::sleep(Duration::from_millis(50));
            }
        },
    );
    check("slow read", read, false);
    let log = rs.stop();
    assert!(!log.contains("panicked"), "{log}");
}
