//! gRPC through ringside with real grpcio on both sides (Debian's
//! python3-grpcio): a grpcio server behind an `h2` upstream and a grpcio
//! client in front, every call kind, a 10 MiB stream each way, a server
//! error with its message, deadlines (the client's and ringside's own
//! enforcement of `grpc-timeout`), the health service, and an upstream
//! that dies mid-stream or is gone (UNAVAILABLE, never a hang). A missing
//! grpcio fails the test (scripts/test.sh installs it).

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::script::{self, support, Peer};
use common::{Ringside, TempDir, BACKENDS};

/// The grpcio test server on a free port.
fn grpc_server() -> (Peer, u16) {
    script::start("/usr/bin/python3", "grpc_server.py", &[])
}

/// Ringside on `backend`, proxying gRPC to the server at `port` over h2c.
fn proxy(dir: &TempDir, backend: &str, port: u16) -> Ringside {
    proxy_with(dir, backend, port, "64m")
}

fn proxy_with(dir: &TempDir, backend: &str, port: u16, max_body: &str) -> Ringside {
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[limits]\nmax_body = \"{max_body}\"\n\
             [upstream.grpc]\nprotocol = \"h2\"\nservers = [\"127.0.0.1:{port}\"]\nretries = 0\n\
             [[route]]\nprefix = \"/\"\nupstream = \"grpc\"\ngrpc = true\n"
        )
        .as_bytes(),
    );
    Ringside::configured(backend, &cfg)
}

/// Runs the client's `checks` against `rs`: each check's result by name.
fn client(rs: &Ringside, checks: &[&str]) -> HashMap<String, String> {
    let out = Command::new("timeout")
        .arg("60")
        .arg("/usr/bin/python3")
        .arg(support("grpc_client.py"))
        .arg(rs.addr.to_string())
        .args(checks)
        .output()
        .expect("run the grpcio client");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn grpc_calls_of_every_kind_pass_through() {
    let (_server, port) = grpc_server();
    let dir = TempDir::new("grpc-kinds");
    for backend in BACKENDS {
        let rs = proxy(&dir, backend, port);
        let got = client(
            &rs,
            &[
                "unary",
                "server_stream",
                "client_stream",
                "bidi",
                "error",
                "deadline",
                "health",
            ],
        );
        let want = [
            ("unary", "echo:hello"),
            // 10 MiB in 160 messages each way, every byte intact.
            ("server_stream", "10485760 True"),
            ("client_stream", "160 10485760 True"),
            // Each reply before the next message is sent.
            ("bidi", "re:one,re:two,re:three"),
            // The server's status and its (percent-encoded) message.
            ("error", "NOT_FOUND no such thing: ünï"),
            ("deadline", "DEADLINE_EXCEEDED"),
            ("health", "SERVING"),
        ];
        for (k, v) in want {
            assert_eq!(got.get(k).map(String::as_str), Some(v), "{backend}: {k}");
        }
    }
}

/// `grpc-timeout` is ringside's deadline too: a client that never times
/// out itself gets DEADLINE_EXCEEDED (HTTP 200, grpc-status 4) when the
/// upstream is slower than the call allows.
#[test]
fn ringside_ends_a_call_at_its_grpc_timeout() {
    let (_server, port) = grpc_server();
    let dir = TempDir::new("grpc-deadline");
    for backend in BACKENDS {
        let rs = proxy(&dir, backend, port);
        let got = client(&rs, &["raw_deadline"]);
        assert_eq!(
            got.get("raw_deadline").map(String::as_str),
            Some("200 4 True"),
            "{backend}"
        );
    }
}

/// An upstream killed mid-stream ends the call UNAVAILABLE after the
/// message that came, and one that is gone answers UNAVAILABLE in gRPC's
/// terms, never an HTML page or a hang.
#[test]
fn a_dead_upstream_is_unavailable() {
    let dir = TempDir::new("grpc-dead");
    for backend in BACKENDS {
        let (server, port) = grpc_server();
        let rs = proxy(&dir, backend, port);
        let got = client(&rs, &["die"]);
        assert_eq!(
            got.get("die").map(String::as_str),
            Some("first UNAVAILABLE"),
            "{backend}"
        );
        drop(server);
        let got = client(&rs, &["unavailable"]);
        assert_eq!(
            got.get("unavailable").map(String::as_str),
            Some("UNAVAILABLE"),
            "{backend}"
        );
    }
}

/// A limit of ringside's own (`max_body`) ends a call RESOURCE_EXHAUSTED,
/// in gRPC's terms, not with a 413 page.
#[test]
fn a_limit_is_resource_exhausted() {
    let (_server, port) = grpc_server();
    let dir = TempDir::new("grpc-limit");
    for backend in BACKENDS {
        let rs = proxy_with(&dir, backend, port, "1m");
        let got = client(&rs, &["too_big", "unary"]);
        assert_eq!(
            got.get("too_big").map(String::as_str),
            Some("RESOURCE_EXHAUSTED"),
            "{backend}"
        );
        assert_eq!(got.get("unary").map(String::as_str), Some("echo:hello"));
    }
}

/// A client that cancels a quiet server stream has the upstream's stream
/// reset at once through the proxy, not at the server's next message.
#[test]
fn a_cancelled_call_is_cancelled_upstream() {
    let dir = TempDir::new("grpc-cancel");
    for backend in BACKENDS {
        let (_server, port) = grpc_server();
        let rs = proxy(&dir, backend, port);
        let got = client(&rs, &["cancel"]);
        assert_eq!(
            got.get("cancel").map(String::as_str),
            Some("first yes"),
            "{backend}"
        );
    }
}
