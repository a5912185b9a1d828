//! `coalesce_wait` (io_uring): a worker with several requests in progress
//! parks for a batch of completions. A lone client must never be held back
//! by it, and a batch must still answer every request correctly.
//!
//! With a wait of 10 ms, a lone client held back at each park would need
//! at least 10 ms per proxied request; its 100 requests finishing within a
//! second says it was not. (A bound ten times what the requests take, not
//! a speed measurement: it only fails if requests wait out the batch.)

mod common;

use std::time::{Duration, Instant};

use common::client::Conn;
use common::origin::Origin;
use common::Ringside;

fn proxy_with_long_wait(origin: &Origin) -> Ringside {
    let up = origin.addr.to_string();
    Ringside::one_worker("io-uring", &["--upstream", &up, "--coalesce-wait", "10ms"])
}

#[test]
fn a_lone_client_is_never_held_back() {
    let origin = Origin::start("lone");
    let srv = proxy_with_long_wait(&origin);
    let mut c = Conn::open(srv.addr);
    let start = Instant::now();
    for _ in 0..100 {
        let r = c.get("/ok");
        assert_eq!(r.status, 200);
    }
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "100 sequential requests took {took:?}: a lone client waited for a batch"
    );
    srv.stop();
}

#[test]
fn batched_requests_are_all_answered() {
    let origin = Origin::start("batch");
    let srv = proxy_with_long_wait(&origin);
    let addr = srv.addr;
    let clients: Vec<_> = (0..16)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr);
                for j in 0..50 {
                    let r = c.get(&format!("/echo-{i}-{j}/headers"));
                    assert_eq!(r.status, 200);
                    assert!(r.text().contains(&format!("/echo-{i}-{j}/headers")));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    srv.stop();
}

#[test]
fn the_flag_is_checked() {
    let out = std::process::Command::new(common::BIN)
        .args(["--coalesce-wait", "1s"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--coalesce-wait: expected at most \"10ms\", got \"1s\""),
        "{err}"
    );
}
