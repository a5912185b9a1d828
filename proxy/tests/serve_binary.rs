//! The binary end to end on each backend: serving a directory to real curl,
//! one listening socket per worker, and draining on SIGTERM.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::{Ringside, TempDir, BACKENDS};

fn root_with_files() -> TempDir {
    let dir = TempDir::new("root");
    dir.write("hello.txt", b"hello from ringside 26 B.\n");
    dir.write("sub/index.html", b"<h1>index</h1>\n");
    let big: Vec<u8> = (0..8u32 << 20).map(|i| (i % 253) as u8).collect();
    dir.write("big.bin", &big);
    dir
}

#[test]
fn serves_files_to_curl_on_every_backend() {
    let root = root_with_files();
    for backend in BACKENDS {
        let srv = Ringside::start(&[
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "2",
            "--backend",
            backend,
            "--root",
            root.path().to_str().unwrap(),
        ]);
        assert!(
            srv.banner.contains(&format!("backend: {backend}")),
            "{}",
            srv.banner
        );
        assert!(srv.banner.contains("workers: 2"), "{}", srv.banner);
        let url = format!("http://{}/", srv.addr);
        let out = Command::new("curl")
            .args(["-sS", "--fail", &format!("{url}hello.txt")])
            .output()
            .expect("curl must be installed (run scripts/test.sh)");
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, b"hello from ringside 26 B.\n");
        // Keep-alive across requests in one curl, a redirect, and an index file.
        let out = Command::new("curl")
            .args([
                "-sS",
                "-L",
                "-o",
                "/dev/null",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{num_connects}\n",
            ])
            .args([format!("{url}hello.txt"), format!("{url}sub")])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "200 1\n200 0\n",
            "{backend}"
        );
        // A large file arrives whole (zero-copy path).
        let out = Command::new("curl")
            .args(["-sS", &format!("{url}big.bin")])
            .output()
            .unwrap();
        assert_eq!(out.stdout.len(), 8 << 20, "{backend}");
        assert!(
            out.stdout == std::fs::read(root.path().join("big.bin")).unwrap(),
            "{backend}"
        );
        let (status, _) = srv.get("/nope");
        assert_eq!(status, 404);
        let (status, _) = srv.get("/%2e%2e/etc/passwd");
        assert_eq!(status, 400);
    }
}

#[test]
fn one_listening_socket_per_worker() {
    let root = root_with_files();
    let srv = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "3",
        "--root",
        root.path().to_str().unwrap(),
    ]);
    let port = format!(":{}", srv.addr.port());
    let out = Command::new("ss")
        .args(["-Hltn"])
        .output()
        .expect("ss (iproute2) must be installed");
    let listening = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(3)
                .is_some_and(|a| a.ends_with(&port))
        })
        .count();
    assert_eq!(listening, 3);
}

#[test]
fn sigterm_drains_an_in_flight_download() {
    let root = root_with_files();
    // Larger than loopback's socket buffers together, so the server is
    // still sending when the signal comes.
    let huge: Vec<u8> = (0..32u32 << 20).map(|i| (i % 251) as u8).collect();
    root.write("huge.bin", &huge);
    for backend in BACKENDS {
        let mut srv = Ringside::serving(backend, root.path());
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        // The first bytes prove the response is in flight.
        let mut first = [0u8; 1024];
        let n = s.read(&mut first).unwrap();
        assert!(n > 0);
        srv.signal(libc::SIGTERM);
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        let total = n + rest.len();
        let head_len = first[..n]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap()
            + 4;
        assert_eq!(
            total - head_len,
            32 << 20,
            "{backend}: the download finished whole"
        );
        let status = srv.wait(Duration::from_secs(30));
        assert!(status.success(), "{backend}: {status}");
        let log = srv.stderr();
        assert!(log.contains("draining") && log.contains("stopped"), "{log}");
    }
}

#[test]
fn sigint_stops_an_idle_server() {
    let root = root_with_files();
    let mut srv = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--root",
        root.path().to_str().unwrap(),
    ]);
    srv.signal(libc::SIGINT);
    assert!(srv.wait(Duration::from_secs(30)).success());
}

#[test]
fn a_client_that_stops_reading_does_not_stall_the_core() {
    let root = root_with_files();
    let huge: Vec<u8> = (0..32u32 << 20).map(|i| (i % 251) as u8).collect();
    root.write("huge.bin", &huge);
    for backend in BACKENDS {
        let srv = Ringside::serving(backend, root.path());
        // Asks for 32 MiB and never reads: the server's send must wait
        // without blocking the worker.
        let mut stuck = TcpStream::connect(srv.addr).unwrap();
        stuck
            .write_all(b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 1];
        stuck.read_exact(&mut first).unwrap();
        // The same (only) worker still answers others at once; the read
        // timeout inside get() bounds a stalled core.
        for _ in 0..5 {
            let (status, body) = srv.get("/hello.txt");
            assert_eq!(
                (status, &body[..]),
                (200, &b"hello from ringside 26 B.\n"[..]),
                "{backend}"
            );
        }
        drop(stuck);
    }
}
