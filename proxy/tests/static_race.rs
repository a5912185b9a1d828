//! A directory swapped for a symlink to outside the root while requests run:
//! no response ever carries a byte from outside.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{Ringside, TempDir, BACKENDS};

#[test]
fn directory_swapped_for_symlink_never_escapes() {
    let root = TempDir::new("race-root");
    let outside = TempDir::new("race-outside");
    outside.write("secret.txt", b"SECRET-OUTSIDE\n");
    root.write("d/secret.txt", b"inside\n");
    // No caching, so every request resolves the path again.
    let cfg = root.write(
        "r.toml",
        format!(
            "[server]\nroot = {:?}\n[static]\ncache_max_file = 0\n",
            root.path()
        )
        .as_bytes(),
    );
    for backend in BACKENDS {
        let srv = Ringside::configured(backend, &cfg);
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let stop = stop.clone();
            let d = root.path().join("d");
            let real = root.path().join("d.real");
            let target = outside.path().to_path_buf();
            std::thread::spawn(move || {
                let mut swaps = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    std::fs::rename(&d, &real).unwrap();
                    std::os::unix::fs::symlink(&target, &d).unwrap();
                    std::fs::remove_file(&d).unwrap();
                    std::fs::rename(&real, &d).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let (mut inside, mut refused) = (0, 0);
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        for _ in 0..3000 {
            s.write_all(b"GET /d/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            let (status, body) = read_response(&mut s);
            assert!(
                !String::from_utf8_lossy(&body).contains("SECRET"),
                "{backend}: escaped the root"
            );
            match status {
                200 => {
                    assert_eq!(body, b"inside\n");
                    inside += 1;
                }
                403 | 404 => refused += 1,
                other => panic!("{backend}: unexpected {other}"),
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(
            swaps > 0 && inside > 0,
            "{backend}: swaps {swaps}, inside {inside}, refused {refused}"
        );
    }
}

fn read_response(s: &mut TcpStream) -> (u16, Vec<u8>) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0; len];
    s.read_exact(&mut body).unwrap();
    (status, body)
}
