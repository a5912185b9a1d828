//! HTTP/3 clients for the tests: aioquic (`support/h3_client.py`, in the
//! venv scripts/test.sh makes) for requests whose answers are checked
//! field by field, and ngtcp2's example client for what aioquic cannot do
//! (NAT rebinding, key updates, HEAD). A missing client fails the test.
#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const PYTHON: &str = "/opt/ringside-test/venv/bin/python3";

/// Sends `requests` (a JSON list: `path`, `method`, `headers`, `body` or
/// `body_file`, `raw_fields`) on one QUIC connection to `at`, verified
/// against `ca` for `sni`; the client's JSON report (`alpn`, `answers`).
pub fn aioquic(at: SocketAddr, ca: &Path, sni: &str, requests: &Value) -> Value {
    aioquic_with(at, ca, sni, &[], requests)
}

/// [`aioquic`] on a second connection that resumes the session of a first
/// (a GET of `warmup`) and sends `requests` before its handshake ends, in
/// 0-RTT where the ticket allows it (`extra` may add the client's
/// `--force-early-data`, or `--cert` and `--key`); the report adds
/// `ticket_allows_early_data`, `all_sent_in_0rtt` (every byte of the
/// requests left under 0-RTT keys), `early_data_accepted` and `resumed`.
pub fn aioquic_0rtt(
    at: SocketAddr,
    ca: &Path,
    sni: &str,
    warmup: &str,
    extra: &[&str],
    requests: &Value,
) -> Value {
    let mut args = vec!["--zero-rtt", "--warmup", warmup];
    args.extend_from_slice(extra);
    aioquic_with(at, ca, sni, &args, requests)
}

fn aioquic_with(at: SocketAddr, ca: &Path, sni: &str, args: &[&str], requests: &Value) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/h3_client.py");
    let mut child = Command::new(PYTHON)
        .arg(script)
        .arg(at.ip().to_string())
        .arg(at.port().to_string())
        .arg("--ca")
        .arg(ca)
        .arg("--sni")
        .arg(sni)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{PYTHON} (scripts/test.sh installs aioquic in it): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(requests.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "aioquic client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client's JSON report")
}

/// A header's value in an aioquic answer.
pub fn field<'a>(answer: &'a Value, name: &str) -> Option<&'a str> {
    answer["headers"]
        .as_array()?
        .iter()
        .find(|f| f[0].as_str() == Some(name))
        .and_then(|f| f[1].as_str())
}

/// SHA-256 of `data`, as the client reports bodies.
pub fn sha256(data: &[u8]) -> String {
    use std::fmt::Write as _;
    // rustls's own SHA-256, reached through a suite that hashes with it.
    let suite = rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256;
    let d = suite
        .tls13()
        .expect("TLS 1.3")
        .common
        .hash_provider
        .hash(data);
    d.as_ref().iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// ngtcp2's client (`gtlsclient`) with `args` before `at` and `urls`;
/// bounded at 60 s. (This example client does not verify the server's
/// certificate; aioquic's requests do.)
pub fn ngtcp2(at: SocketAddr, args: &[&str], urls: &[String]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg("gtlsclient")
        .arg("--exit-on-all-streams-close")
        .arg("--no-quic-dump")
        .args(args)
        .arg(at.ip().to_string())
        .arg(at.port().to_string())
        .args(urls)
        .output()
        .expect("gtlsclient (ngtcp2-client) must be installed: run scripts/test.sh")
}

/// A metric's samples summed over the workers.
pub fn sum(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
