//! RST_STREAM accounting, against a minimal HTTP/2 origin written here
//! (frames by hand, on std threads): a stream the server cancels is a
//! Receive failure, one it refuses (REFUSED_STREAM: never processed) is
//! sent again, and every request ends as exactly one of a complete
//! response or a failure, as over HTTP/1.1.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{bench_json, u};

const BODY: &[u8] = b"hello, stream";

#[derive(Default)]
struct Log {
    seen: AtomicU64,
    answered: AtomicU64,
    cancelled: AtomicU64,
    refused: AtomicU64,
}

fn frame(w: &mut Vec<u8>, kind: u8, flags: u8, id: u32, payload: &[u8]) {
    let l = (payload.len() as u32).to_be_bytes();
    w.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    w.extend_from_slice(&id.to_be_bytes());
    w.extend_from_slice(payload);
}

fn serve(mut s: TcpStream, log: &Log) {
    let mut preface = [0u8; 24];
    if s.read_exact(&mut preface).is_err() {
        return;
    }
    let mut out = Vec::new();
    frame(&mut out, 0x4, 0, 0, &[]);
    let _ = s.write_all(&out);
    loop {
        let mut head = [0u8; 9];
        if s.read_exact(&mut head).is_err() {
            return;
        }
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        if s.read_exact(&mut payload).is_err() {
            return;
        }
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        out.clear();
        match head[3] {
            0x4 if head[4] & 1 == 0 => frame(&mut out, 0x4, 1, 0, &[]),
            0x1 => {
                let i = log.seen.fetch_add(1, Ordering::SeqCst);
                if i % 7 == 3 {
                    log.refused.fetch_add(1, Ordering::SeqCst);
                    frame(&mut out, 0x3, 0, id, &7u32.to_be_bytes());
                } else if i % 5 == 4 {
                    log.cancelled.fetch_add(1, Ordering::SeqCst);
                    frame(&mut out, 0x3, 0, id, &8u32.to_be_bytes());
                } else {
                    log.answered.fetch_add(1, Ordering::SeqCst);
                    // :status 200 (static index 8), then the body.
                    frame(&mut out, 0x1, 0x4, id, &[0x88]);
                    frame(&mut out, 0x0, 0x1, id, BODY);
                }
            }
            _ => continue,
        }
        if s.write_all(&out).is_err() {
            return;
        }
    }
}

#[test]
fn resets_fail_refusals_are_sent_again() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Log::default());
    let log2 = log.clone();
    // Serves until the test process ends; each connection ends at EOF.
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let log = log2.clone();
            std::thread::spawn(move || serve(s, &log));
        }
    });
    let url = format!("http://127.0.0.1:{port}/");
    let v = bench_json(&["--h2c", "--streams", "6", "-n", "300", "-c", "2", &url]);
    let (answered, cancelled, refused) = (
        log.answered.load(Ordering::SeqCst),
        log.cancelled.load(Ordering::SeqCst),
        log.refused.load(Ordering::SeqCst),
    );
    assert!(cancelled > 0 && refused > 0);
    assert_eq!(u(&v, &["complete_requests"]), answered, "{v}");
    assert_eq!(answered + cancelled, 300, "{v}");
    assert_eq!(u(&v, &["counts", "failed_receive"]), cancelled, "{v}");
    assert_eq!(u(&v, &["counts", "resets"]), cancelled, "{v}");
    assert_eq!(u(&v, &["counts", "h2_resets"]), cancelled + refused, "{v}");
    assert_eq!(
        u(&v, &["counts", "body_bytes"]),
        answered * BODY.len() as u64
    );
    assert_eq!(u(&v, &["counts", "connections"]), 2, "{v}");
}
