//! A large body leaves the server a little at a time: its socket holds a
//! bounded amount of unsent data (TCP_NOTSENT_LOWAT), so that the TCP work
//! of sending it stays with the server instead of following the client's
//! ACKs, and a client that stops reading pins little kernel memory. Checked
//! from outside with ss(8), on a file (every backend) and on a proxied body
//! spliced from an upstream (io_uring and epoll; glommio relays by copy).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Ringside, TempDir, BACKENDS};

/// The bound is 64 KiB of unsent bytes; a send may overshoot it by one
/// segment (64 KiB over loopback) before it stops.
const MOST_QUEUED: u64 = 192 * 1024;

/// What an unbounded socket queues here (the send buffer autotunes to
/// megabytes), well above MOST_QUEUED: the test is then sure to see the
/// difference.
const FILE_LEN: usize = 16 << 20;

fn root() -> TempDir {
    let dir = TempDir::new("sendq");
    dir.write("big.bin", &vec![b'q'; FILE_LEN]);
    dir
}

/// Asks `server` for the big file, reads one byte and stops reading; then
/// returns the server socket's Send-Q once the kernel has begun probing the
/// client's closed window, when the server has queued all it is going to.
fn stalled_send_queue(server: SocketAddr, what: &str) -> u64 {
    let mut client = TcpStream::connect(server).unwrap();
    client
        .write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut one = [0u8; 1];
    client.read_exact(&mut one).unwrap();
    let filter = format!(
        "( sport = :{} and dport = :{} )",
        server.port(),
        client.local_addr().unwrap().port()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = Command::new("ss")
            .args(["-tniH", "state", "established", &filter])
            .output()
            .expect("ss (iproute2) must be installed (run scripts/test.sh)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // Columns without a state column: Recv-Q Send-Q local peer, then
        // the -i details.
        let send_q: u64 = text
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no server socket in ss output {text:?}"));
        if text.contains("backoff:") {
            drop(client);
            return send_q;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the client's window never closed: {text}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_stalled_file_download_queues_little() {
    let root = root();
    for backend in BACKENDS {
        let srv = Ringside::serving(backend, root.path());
        let queued = stalled_send_queue(srv.addr, backend);
        assert!(
            queued <= MOST_QUEUED,
            "{backend}: {queued} bytes queued for a client that stopped reading"
        );
        // The worker still serves: the stalled send waits, it does not block.
        let (status, body) = srv.get("/big.bin");
        assert_eq!((status, body.len()), (200, FILE_LEN), "{backend}");
    }
}

#[test]
fn a_stalled_proxied_download_queues_little() {
    let root = root();
    for backend in ["io-uring", "epoll"] {
        let origin = Ringside::serving(backend, root.path());
        let upstream = origin.addr.to_string();
        let proxy = Ringside::one_worker(backend, &["--upstream", &upstream]);
        let queued = stalled_send_queue(proxy.addr, backend);
        assert!(
            queued <= MOST_QUEUED,
            "{backend}: the proxy queued {queued} bytes for a client that stopped reading"
        );
        let (status, body) = proxy.get("/big.bin");
        assert_eq!((status, body.len()), (200, FILE_LEN), "{backend}");
    }
}
