//! The front ends of the shootout's https, h2 and h2c scenarios, with the
//! real servers: each config written for them is one its binary accepts
//! (`ringside check`, `nginx -t`, `h2o -t`, `haproxy -c`), and each server
//! started from it answers curl over the protocol asked for (HTTP/1.1 over
//! TLS, h2 by ALPN, h2c by prior knowledge), static files and proxied.
//! Until ringside-bench speaks TLS and HTTP/2 itself, this is what keeps
//! those scenarios working. A server or tool missing is a failure here
//! (scripts/test.sh installs them), never a skip.

use std::path::Path;
use std::process::Command;

use ringside_bench::shootout::def::{Kind, Protocol};
use ringside_bench::shootout::procs::{free_port, Proc, Scratch};
use ringside_bench::shootout::servers::{
    front_command, serves, start_backend, start_front, Behind, Listen, Paths,
};
use ringside_bench::shootout::tls::Tls;

const SERVERS: [&str; 6] = ["ringside", "nginx", "lighttpd", "haproxy", "apache", "h2o"];
const PROTOCOLS: [Protocol; 3] = [Protocol::Https, Protocol::H2, Protocol::H2c];
const BODY: &[u8] = b"hello over tls and h2\n";

fn paths() -> Paths {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut p = Paths::from_repo(&repo);
    p.ringside = Path::new(env!("CARGO_BIN_EXE_ringside-bench")).with_file_name("ringside");
    assert!(
        p.ringside.is_file(),
        "{} is not built; cargo test builds the workspace's binaries first",
        p.ringside.display()
    );
    p
}

/// A docroot with hello.txt.
fn docroot() -> Scratch {
    let d = Scratch::new("tls-root");
    std::fs::write(d.0.join("hello.txt"), BODY).unwrap();
    d
}

/// The binary's own check of the config `argv` runs.
fn check_argv(server: &str, argv: &[String]) -> Vec<String> {
    let mut a = argv.to_vec();
    match server {
        // ringside over TLS runs `--workers N --config FILE`.
        "ringside" => {
            let conf = a.last().unwrap().clone();
            a = vec![a[0].clone(), "check".into(), conf];
        }
        "nginx" | "h2o" => a.insert(1, "-t".into()),
        // `-db -f FILE` becomes `-c -f FILE`.
        "haproxy" => a[1] = "-c".into(),
        other => panic!("no check for {other}"),
    }
    a
}

#[test]
fn every_config_is_one_its_server_accepts() {
    let paths = paths();
    let cert = Scratch::new("tls-cert");
    let tls = Tls::generate(&cert.0).unwrap();
    let root = docroot();
    let behinds = [
        (Kind::Static, Behind::Files(root.0.clone())),
        (Kind::Proxy, Behind::Http(free_port())),
    ];
    let mut checked = Vec::new();
    for server in SERVERS {
        for protocol in PROTOCOLS {
            for (kind, behind) in &behinds {
                if !serves(server, *kind, protocol) {
                    continue;
                }
                let dir = Scratch::new("tls-check");
                let listen = Listen {
                    port: free_port(),
                    protocol,
                    tls: Some(&tls),
                };
                let argv = front_command(server, 2, behind, &listen, &paths, &dir.0).unwrap();
                // ringside's h2c is its plain listener, run from flags.
                if server == "ringside" && !protocol.tls() {
                    assert!(!argv.iter().any(|a| a == "--config"), "{argv:?}");
                    continue;
                }
                let check = check_argv(server, &argv);
                let out = Command::new(&check[0])
                    .args(&check[1..])
                    .output()
                    .unwrap_or_else(|e| panic!("{server}: cannot run {}: {e}", check[0]));
                assert!(
                    out.status.success(),
                    "{server} {} {kind:?} refused its config ({check:?}):\n{}{}",
                    protocol.name(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                checked.push(format!("{server} {} {kind:?}", protocol.name()));
            }
        }
    }
    // ringside's two TLS protocols, nginx's and h2o's three, each static
    // and proxied; HAProxy's three, proxied only; lighttpd and Apache sit
    // these out.
    assert_eq!(checked.len(), 2 * 2 + 3 * 2 * 2 + 3, "{checked:?}");
    assert!(!checked.iter().any(|c| c.starts_with("lighttpd")));
    assert!(!checked.iter().any(|c| c.starts_with("apache")));
}

/// One request with curl over `protocol`: (status, HTTP version, body).
fn curl(protocol: Protocol, port: u16, path: &str) -> (String, String, Vec<u8>) {
    let out_file = Scratch::new("tls-curl");
    let body = out_file.0.join("body");
    let (flag, scheme) = match protocol {
        Protocol::Https => ("--http1.1", "https"),
        Protocol::H2 => ("--http2", "https"),
        Protocol::H2c => ("--http2-prior-knowledge", "http"),
        Protocol::Http => ("--http1.1", "http"),
    };
    let out = Command::new("curl")
        .args(["-sS", "-k", "--max-time", "10", flag, "-o"])
        .arg(&body)
        .args(["-w", "%{http_code} %{http_version}"])
        .arg(format!("{scheme}://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl (apt-get install curl)");
    let w = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "curl: {w} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, version) = w.split_once(' ').unwrap();
    (
        code.to_owned(),
        version.to_owned(),
        std::fs::read(&body).unwrap_or_default(),
    )
}

#[test]
fn every_front_end_answers_over_its_protocol() {
    let paths = paths();
    let cert = Scratch::new("tls-cert");
    let tls = Tls::generate(&cert.0).unwrap();
    let root = docroot();
    let cpus = [0];
    let origin = start_backend(Kind::Proxy, Default::default(), &cpus, &root.0, &paths).unwrap();
    let files = Behind::Files(root.0.clone());
    let mut failures: Vec<String> = Vec::new();
    let mut answered = 0;
    for server in SERVERS {
        for protocol in PROTOCOLS {
            for (kind, behind, path, want) in [
                (Kind::Static, &files, "/hello.txt", BODY),
                (
                    Kind::Proxy,
                    &origin.behind,
                    "/",
                    &b"hello from origin\n"[..],
                ),
            ] {
                if !serves(server, kind, protocol) {
                    continue;
                }
                let what = format!("{server} {} {kind:?}", protocol.name());
                let front = start_front(server, 1, &cpus, behind, protocol, Some(&tls), &paths);
                let (proc, port, _dir): (Proc, u16, Scratch) = match front {
                    Ok(f) => f,
                    Err(e) => {
                        failures.push(format!("{what}: did not start: {e}"));
                        continue;
                    }
                };
                let version = if protocol.http2() { "2" } else { "1.1" };
                let got = curl(protocol, port, path);
                if got != ("200".into(), version.into(), want.to_vec()) {
                    failures.push(format!(
                        "{what}: got {} HTTP/{} {:?}",
                        got.0,
                        got.1,
                        String::from_utf8_lossy(&got.2)
                    ));
                }
                answered += 1;
                drop(proc);
            }
        }
    }
    drop(origin);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // ringside, nginx and h2o: three protocols, static and proxied;
    // HAProxy's three, proxied only.
    assert_eq!(answered, 3 * 2 * 3 + 3);
}

#[test]
fn no_tls_front_end_starts_without_a_certificate() {
    let paths = paths();
    let dir = Scratch::new("tls-none");
    let listen = Listen {
        port: free_port(),
        protocol: Protocol::H2,
        tls: None,
    };
    for server in ["ringside", "nginx", "h2o", "haproxy"] {
        let behind = Behind::Http(1);
        let e = front_command(server, 1, &behind, &listen, &paths, &dir.0).unwrap_err();
        assert!(e.contains("certificate"), "{server}: {e}");
    }
}
