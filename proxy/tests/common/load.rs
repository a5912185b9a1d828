//! Real load generators for tests, run as a user would run them, and
//! their reports read back: ApacheBench (`ab`, HTTP/1.0 with `-k`) and
//! `wrk` (HTTP/1.1). And a network namespace of the test's own, so that
//! what a test counts in `/proc/net` is its own whatever else runs.
//!
//! Both tools fail the test when missing (`scripts/test.sh` installs
//! apache2-utils and wrk).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::Command;

/// Set in the copy of a test that runs in its own network namespace: the
/// namespace it was started from.
const IN_NETNS: &str = "RINGSIDE_TEST_IN_NETNS";

/// This process's network namespace, as the kernel names it.
fn netns() -> String {
    let link = std::fs::read_link("/proc/self/ns/net").expect("/proc/self/ns/net");
    link.to_string_lossy().into_owned()
}

/// Whether this is the copy of a test that [`in_own_netns`] runs in a
/// network namespace of its own, where the kernel's per-namespace counters
/// (/proc/net/snmp) count this test's sockets only. The namespace itself
/// is compared, not only the variable: one set by hand, or inherited into
/// the starting namespace, does not pass.
pub fn is_own_netns() -> bool {
    std::env::var_os(IN_NETNS).is_some_and(|from| from.to_string_lossy() != netns())
}

/// Runs the test `name` (of this test binary) again in a network
/// namespace of its own with loopback up (`unshare --net`), and checks it
/// passed there. Returns true in that copy, which does the work; false in
/// the caller, which should return.
pub fn in_own_netns(name: &str) -> bool {
    if is_own_netns() {
        return true;
    }
    // One at a time: these tests load the machine, and a second at once
    // would make each other's slowest requests.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("unshare")
        .args([
            "--net",
            "sh",
            "-c",
            "ip link set lo up && exec \"$0\" \"$@\"",
        ])
        .arg(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(IN_NETNS, netns())
        .status()
        .expect("unshare (util-linux) and ip (iproute2)");
    assert!(
        status.success(),
        "{name} in its own network namespace failed"
    );
    false
}

/// Runs a load tool to its end: what it printed, stdout then stderr.
pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

/// What `ab` reported.
#[derive(Debug)]
pub struct AbReport {
    pub complete: u64,
    pub failed: u64,
    pub non_2xx: u64,
    pub keep_alive: u64,
    /// The longest request, in milliseconds.
    pub longest_ms: u64,
    pub text: String,
}

/// `ab -k -n N -c C -s 10 URL`: HTTP/1.0 keep-alive requests.
pub fn ab(addr: SocketAddr, path: &str, n: u32, c: u32) -> AbReport {
    let text = run(
        Command::new("ab")
            .args([
                "-k",
                "-q",
                "-s",
                "10",
                "-n",
                &n.to_string(),
                "-c",
                &c.to_string(),
            ])
            .arg(format!("http://{addr}{path}")),
        "ab (apache2-utils)",
    );
    let field = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let longest_ms = text
        .lines()
        .find(|l| l.contains("(longest request)"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no longest request in:\n{text}"));
    AbReport {
        complete: field("Complete requests"),
        failed: field("Failed requests"),
        non_2xx: field("Non-2xx responses"),
        keep_alive: field("Keep-Alive requests"),
        longest_ms,
        text,
    }
}

/// What `wrk` reported.
#[derive(Debug)]
pub struct WrkReport {
    pub requests: u64,
    /// Connect, read, write and timeout errors together.
    pub socket_errors: u64,
    pub non_2xx_3xx: u64,
    /// The slowest request, in milliseconds.
    pub max_ms: f64,
    pub text: String,
}

/// `wrk -t1 -c C -d SECSs --timeout 5s URL` (one thread: the machine may
/// have two cores, one of them the server's).
pub fn wrk(addr: SocketAddr, path: &str, conns: u32, secs: u32) -> WrkReport {
    let text = run(
        Command::new("wrk")
            .args(["-t1", "-c", &conns.to_string(), "-d", &format!("{secs}s")])
            .args(["--timeout", "5s"])
            .arg(format!("http://{addr}{path}")),
        "wrk",
    );
    parse_wrk(text)
}

pub fn parse_wrk(text: String) -> WrkReport {
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no request count in:\n{text}"));
    let socket_errors = text
        .lines()
        .find(|l| l.contains("Socket errors:"))
        .map(|l| {
            l.split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    let non_2xx_3xx = text
        .lines()
        .find(|l| l.contains("Non-2xx or 3xx responses:"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let max_ms = text
        .lines()
        .find(|l| l.trim_start().starts_with("Latency"))
        .and_then(|l| l.split_whitespace().nth(3))
        .map(duration_ms)
        .unwrap_or_else(|| panic!("no latency in:\n{text}"));
    WrkReport {
        requests,
        socket_errors,
        non_2xx_3xx,
        max_ms,
        text,
    }
}

/// wrk's "12.34ms", "850.00us", "1.02s", "2.00m".
fn duration_ms(v: &str) -> f64 {
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().unwrap_or_else(|_| panic!("wrk duration {v:?}"));
    match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        _ => panic!("wrk duration unit {v:?}"),
    }
}
