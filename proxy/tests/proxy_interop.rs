//! Interop with real parts: nginx and Ruby WEBrick as origins, curl as the
//! client, and a WebSocket echo through the tunnel. Each peer must be
//! installed (`scripts/test.sh` installs them); a missing one fails the test.

mod common;

use std::net::SocketAddr;
use std::process::{Command, Output};

use common::script::{support, Peer};
use common::{Ringside, TempDir, BACKENDS};

/// Starts a support script that prints `PORT n` once listening.
fn start_script(interp: &str, script: &str) -> (Peer, u16) {
    common::script::start(interp, script, &[])
}

/// nginx from deploy/bench/nginx-origin.conf on a free port.
fn start_nginx(dir: &TempDir) -> (common::nginx::Nginx, u16) {
    let template = std::fs::read_to_string(format!(
        "{}/../deploy/bench/nginx-origin.conf",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    common::nginx::start(dir, |port| {
        template
            .replace("@PORT@", &port.to_string())
            .replace("@PREFIX@", dir.path().to_str().unwrap())
    })
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .output()
        .expect("curl is needed for this test (scripts/test.sh installs it)")
}

fn proxy_to(backend: &str, port: u16) -> Ringside {
    Ringside::one_worker(backend, &["--upstream", &format!("127.0.0.1:{port}")])
}

#[test]
fn nginx_origin_through_ringside_with_curl() {
    let dir = TempDir::new("interop-nginx");
    let (_nginx, port) = start_nginx(&dir);
    for backend in BACKENDS {
        let rs = proxy_to(backend, port);
        let url = format!("http://{}/anything", rs.addr);
        // Two requests on one client connection, both answered.
        let out = curl(&["-v", &url, &url]);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "hello from origin\nhello from origin\n"
        );
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            log.contains("Re-using existing connection")
                || log.contains("Reusing existing connection"),
            "{log}"
        );
        assert!(log.contains("< Via: 1.1 ringside"), "{log}");
        let out = curl(&["--data-binary", "some body", &url]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "hello from origin\n",
            "{backend}"
        );
    }
}

#[test]
fn webrick_origin_through_ringside_with_curl() {
    let (_app, port) = start_script("ruby", "webrick_app.rb");
    for backend in BACKENDS {
        let rs = proxy_to(backend, port);
        let base = format!("http://{}", rs.addr);
        let out = curl(&[&format!("{base}/hello")]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "hello from webrick",
            "{backend}"
        );
        let big: String = (0..200_000)
            .map(|i| (b'a' + (i % 26) as u8) as char)
            .collect();
        let dir = TempDir::new("interop-webrick");
        let file = dir.write("body", big.as_bytes());
        let out = curl(&[
            "--data-binary",
            &format!("@{}", file.display()),
            "-H",
            "Content-Type: application/octet-stream",
            &format!("{base}/echo"),
        ]);
        assert!(
            out.stdout == big.as_bytes(),
            "{backend}: echo of 200 kB differs ({} bytes back)",
            out.stdout.len()
        );
        // Chunked request body, streamed by curl from stdin.
        let out = Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "20",
                "-H",
                "Transfer-Encoding: chunked",
                "--data-binary",
                "@-",
            ])
            .arg(format!("{base}/echo"))
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .unwrap();
        assert!(
            out.stdout == big.as_bytes(),
            "{backend}: chunked upload differs"
        );
        let out = curl(&["-i", &format!("{base}/chunked")]);
        let text = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
        assert!(
            text.contains("transfer-encoding: chunked"),
            "{backend}: {text}"
        );
        assert!(
            text.contains("chunk 1") && text.contains("chunk 3"),
            "{text}"
        );
        let out = curl(&[&format!("{base}/headers")]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("x-forwarded-for: 127.0.0.1"),
            "{backend}: {text}"
        );
        assert!(text.contains("via: 1.1 ringside"), "{text}");
    }
}

/// The client script succeeded and printed each message echoed, in order.
fn echoed(out: &std::process::Output, backend: &str, want: &[&str]) {
    assert!(
        out.status.success(),
        "{backend}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, want, "{backend}");
}

/// RFC 8441: a WebSocket opened over HTTP/2 with extended CONNECT is
/// relayed to the HTTP/1.1 WebSocket origin as an upgrade, both ways.
#[test]
fn websocket_over_http2_through_the_tunnel() {
    let (_echo, port) = start_script("python3", "ws_echo.py");
    for backend in BACKENDS {
        let rs = proxy_to(backend, port);
        let long = "y".repeat(40_000);
        let out = Command::new("/usr/bin/python3")
            .arg(support("h2_websocket.py"))
            .args([&rs.addr.to_string(), "/chat", "hello", "ünïcode", &long])
            .output()
            .expect("/usr/bin/python3 with python3-h2 must be installed (run scripts/test.sh)");
        echoed(&out, backend, &["hello", "ünïcode", &long]);
    }
}

#[test]
fn websocket_echo_through_the_tunnel() {
    let (_echo, port) = start_script("python3", "ws_echo.py");
    for backend in BACKENDS {
        let rs = proxy_to(backend, port);
        let addr: SocketAddr = rs.addr;
        let long = "x".repeat(70_000);
        let out = Command::new("python3")
            .arg(support("ws_client.py"))
            .args([
                &addr.ip().to_string(),
                &addr.port().to_string(),
                "/chat",
                "hello",
                "ünïcode",
                &long,
            ])
            .output()
            .unwrap();
        echoed(&out, backend, &["hello", "ünïcode", &long]);
    }
}
