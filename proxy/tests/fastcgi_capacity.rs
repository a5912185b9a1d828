//! The proof that FastCGI connections persist without starving
//! php-fpm: a 4-child php-fpm, ringside with 2 workers and `max_conns = 4`,
//! 10k keep-alive requests at concurrency 50.
//!
//! Connections to php-fpm are counted twice, independently:
//! - by the kernel: the TCP passive opens (`/proc/net/snmp`) during the
//!   run, less the 50 the client made to ringside. The test runs itself
//!   again in a network namespace of its own (`unshare --net`), so that
//!   count is this test's alone, whatever else runs on the machine.
//! - by php-fpm: `accepted conn` counts a child starting to read a
//!   request, which is each request plus, on a kept connection, one wait
//!   after its last request (shown in `phpfpm_support.rs`). So its growth
//!   less the requests is the number of kept connections. A front end that
//!   did not keep them would show 0 here and thousands in the kernel's
//!   count; one that churned kept connections would show more than 4 in
//!   both.

mod common;

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use common::client::Conn;
use common::phpfpm::PhpFpm;
use common::{Ringside, TempDir};

/// This network namespace's TCP passive opens so far.
fn passive_opens() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let names: Vec<&str> = tcp.next().unwrap().split_whitespace().collect();
    let values: Vec<&str> = tcp.next().unwrap().split_whitespace().collect();
    let at = names.iter().position(|&n| n == "PassiveOpens").unwrap();
    values[at].parse().unwrap()
}

/// Set in the copy of this test that runs in its own network namespace.
const IN_NETNS: &str = "RINGSIDE_TEST_IN_NETNS";

#[test]
fn kept_connections_never_exceed_the_children() {
    if std::env::var_os(IN_NETNS).is_none() {
        let exe = std::env::current_exe().unwrap();
        let status = Command::new("unshare")
            .args([
                "--net",
                "sh",
                "-c",
                "ip link set lo up && exec \"$0\" \"$@\"",
            ])
            .arg(exe)
            .args([
                "--exact",
                "kept_connections_never_exceed_the_children",
                "--nocapture",
            ])
            .env(IN_NETNS, "1")
            .status()
            .expect("unshare (util-linux) and ip (iproute2)");
        assert!(
            status.success(),
            "the test in its own network namespace failed"
        );
        return;
    }
    const CONNS: usize = 50;
    const EACH: usize = 200;
    const CHILDREN: u32 = 4;
    let fpm = PhpFpm::start_tcp(CHILDREN);
    let dir = TempDir::new("fcgi-capacity");
    let cfg = fpm.ringside_config(&dir, &format!("max_conns = {CHILDREN}"));
    let accepted_before = fpm.accepted_conn_excluding_probes();
    // The status fetch's own connection must be gone before the samples
    // below count what is open.
    let end = std::time::Instant::now() + Duration::from_secs(5);
    while fpm.open_connections() > 0 {
        assert!(
            std::time::Instant::now() < end,
            "php-fpm kept the status connection"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let srv = Ringside::workers("io-uring", 2, &cfg);
    let opens_before = passive_opens();

    let (tx, rx) = mpsc::channel();
    let mut threads = Vec::new();
    for _ in 0..CONNS {
        let tx = tx.clone();
        let addr = srv.addr;
        threads.push(std::thread::spawn(move || {
            let mut c = Conn::open(addr);
            let mut bad = 0;
            for _ in 0..EACH {
                let r = c.get("/hello.php");
                if r.status != 200 || r.body != b"Hello, World!" || !r.complete {
                    bad += 1;
                }
            }
            tx.send(bad).unwrap();
        }));
    }
    drop(tx);
    let mut open_during = 0;
    let mut done = 0;
    let mut failed = 0;
    while done < CONNS {
        open_during = open_during.max(fpm.open_connections());
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(bad) => {
                failed += bad;
                done += 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // A client thread panicked: its join says why.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for t in threads {
        t.join().expect("client thread");
    }
    let opened = passive_opens() - opens_before - CONNS as u64;
    let log = srv.stop();
    assert_eq!(failed, 0, "failed requests");

    let requests = (CONNS * EACH) as u64;
    let accepted = fpm.accepted_conn_excluding_probes() - accepted_before;
    let kept = accepted as i64 - requests as i64;
    eprintln!(
        "{requests} requests: php-fpm accepted {opened} connections, \
         accepted conn +{accepted}, at most {open_during} open at once"
    );
    assert!(
        (1..=CHILDREN as u64).contains(&opened),
        "{opened} connections to php-fpm"
    );
    assert_eq!(kept, opened as i64, "accepted conn +{accepted}: not kept");
    assert!(
        open_during <= CHILDREN as usize,
        "{open_during} open at once"
    );
    assert!(
        !log.contains("FCGI_MAX_CONNS"),
        "capacity was configured:\n{log}"
    );
}
