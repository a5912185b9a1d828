//! Slow clients: trickled heads (slowloris), trickled bodies and slow
//! readers are each cut off at their timeout, even when every single wait
//! stays under the per-wait timeout (the minimum rate); meanwhile a normal
//! client on the same core is never made to wait behind them. And the
//! per-worker connection cap: at `max_connections` the worker stops
//! accepting, says so in the log and in /metrics, and accepts again when a
//! connection closes.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::recorder::Recorder;
use common::{Ringside, TempDir};

/// Per-wait timeouts of 1 s and a minimum rate of 100 kB/s: every
/// trickler below waits well under 1 s at a time, so only the rate can end
/// it.
const SLOW: &str =
    "[timeouts]\nheader_read = \"1s\"\nbody_read = \"1s\"\nsend = \"1s\"\nmin_rate = \"100k\"\n";

/// How long a trickler keeps going if nobody cuts it: far past every
/// timeout, so that running to the end means it was never cut.
const TRICKLE_FOR: Duration = Duration::from_secs(20);

struct Site {
    rs: Ringside,
    _rec: Recorder,
    _dir: TempDir,
}

fn site(extra: &str) -> Site {
    let rec = Recorder::start();
    let dir = TempDir::new("slow");
    dir.write("small.txt", b"small file body\n");
    // Far larger than any socket buffer, and than the small-file cache.
    dir.write("big.bin", &vec![b'x'; 16 << 20]);
    let cfg = dir.write(
        "ringside.toml",
        format!(
            "[server]\nroot = \".\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n\n{extra}\n[upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n[[route]]\nprefix = \"/up/\"\nupstream = \"rec\"\n",
            rec.port()
        )
        .as_bytes(),
    );
    Site {
        rs: Ringside::configured("io-uring", &cfg),
        _rec: rec,
        _dir: dir,
    }
}

/// Writes `head` then `body_bytes` one piece every `every`, until the
/// server cuts the connection or `TRICKLE_FOR` passes; returns what the
/// server sent back and whether it was cut.
fn trickle(
    addr: std::net::SocketAddr,
    head: &[u8],
    piece: &[u8],
    every: Duration,
) -> (String, bool) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    s.write_all(head).unwrap();
    let end = Instant::now() + TRICKLE_FOR;
    let mut got = Vec::new();
    while Instant::now() < end {
        thread::sleep(every);
        if s.write_all(piece).is_err() {
            break;
        }
        let mut buf = [0u8; 1024];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let cut = Instant::now() < end;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.read_to_end(&mut got);
    (String::from_utf8_lossy(&got).into_owned(), cut)
}

/// Reads `GET path` `chunk` bytes every `every`, through a receive buffer
/// of `window` bytes if given; returns the bytes read and whether the
/// server cut the transfer before its end.
fn slow_read(
    addr: std::net::SocketAddr,
    path: &str,
    chunk: usize,
    every: Duration,
    window: Option<usize>,
) -> (usize, bool) {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if let Some(w) = window {
        sock.set_recv_buffer_size(w).unwrap();
    }
    sock.connect(&addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let end = Instant::now() + TRICKLE_FOR;
    let mut total = 0;
    let mut buf = vec![0u8; chunk];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return (total, true),
            Ok(n) => total += n,
        }
        thread::sleep(every);
    }
    (total, false)
}

#[test]
fn slowloris_is_cut_at_the_head_timeout() {
    let s = site(SLOW);
    let started = Instant::now();
    let (reply, cut) = trickle(
        s.rs.addr,
        b"GET /small.txt HTTP/1.1\r\n",
        b"X-a: b\r\n",
        Duration::from_millis(200),
    );
    assert!(cut, "a trickled head ran for {TRICKLE_FOR:?} uncut");
    assert!(reply.starts_with("HTTP/1.1 408 "), "{reply:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "cut before header_read"
    );
}

#[test]
fn trickled_body_is_cut_by_the_minimum_rate() {
    // 10 bytes every 200 ms: no single wait nears body_read (1 s), but 50
    // B/s is far below min_rate, so the body's earned time runs out.
    let s = site(SLOW);
    let (reply, cut) = trickle(
        s.rs.addr,
        b"POST /up/c HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
        b"0123456789",
        Duration::from_millis(200),
    );
    assert!(cut, "a trickled body ran for {TRICKLE_FOR:?} uncut");
    assert!(reply.starts_with("HTTP/1.1 408 "), "{reply:?}");
}

#[test]
fn slow_reader_is_cut_by_the_minimum_rate() {
    // 64 kB every 100 ms (about 640 kB/s) against a 2 MB/s minimum, with a
    // send timeout of 5 s that no single wait for this reader reaches.
    let cfg = "[timeouts]\nsend = \"5s\"\nmin_rate = \"2m\"\n";
    let s = site(cfg);
    let (read, cut) = slow_read(
        s.rs.addr,
        "/big.bin",
        64 << 10,
        Duration::from_millis(100),
        None,
    );
    assert!(cut, "a slow reader ran for {TRICKLE_FOR:?} uncut");
    assert!(read < 16 << 20, "the whole file went out: {read}");
}

#[test]
fn stalled_reader_is_cut_at_the_send_timeout() {
    let s = site(SLOW);
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&s.rs.addr.into()).unwrap();
    let mut c: TcpStream = sock.into();
    c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    // Read nothing for longer than the send timeout, then drain: the
    // transfer must end short.
    thread::sleep(Duration::from_secs(3));
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
    assert!(total < 16 << 20, "a stalled reader got the whole file");
}

#[test]
fn normal_client_is_not_held_up_by_slow_ones() {
    let s = site(SLOW);
    let addr = s.rs.addr;
    let mut slow = Vec::new();
    for i in 0..30 {
        slow.push(thread::spawn(move || match i % 3 {
            0 => {
                trickle(
                    addr,
                    b"GET /small.txt HTTP/1.1\r\n",
                    b"X-a: b\r\n",
                    Duration::from_millis(200),
                )
                .1
            }
            1 => {
                trickle(
                    addr,
                    b"POST /up/c HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
                    b"0123456789",
                    Duration::from_millis(200),
                )
                .1
            }
            _ => {
                slow_read(
                    addr,
                    "/big.bin",
                    4096,
                    Duration::from_millis(100),
                    Some(4096),
                )
                .1
            }
        }));
    }
    // One worker serves all of them and this client too: every request
    // must be answered without waiting for a slow client's timeout (1 s).
    let mut c = common::client::Conn::open(addr);
    let mut worst = Duration::ZERO;
    for _ in 0..300 {
        let t = Instant::now();
        let r = c.get("/small.txt");
        worst = worst.max(t.elapsed());
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"small file body\n");
    }
    for t in slow {
        assert!(t.join().unwrap(), "a slow client was never cut");
    }
    assert!(
        worst < Duration::from_millis(500),
        "a normal request waited {worst:?} behind slow clients"
    );
}

#[test]
fn connection_cap_pauses_accepting_until_one_closes() {
    let mut s = site("[limits]\nmax_connections = 20\n");
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(s.rs.addr).unwrap())
        .collect();
    // The readiness signal: the worker holds all 20.
    let end = Instant::now() + Duration::from_secs(20);
    while s.rs.metric("ringside_open_connections{worker=\"0\"}") < 20.0 {
        assert!(
            Instant::now() < end,
            "the 20 connections were never accepted"
        );
        thread::sleep(Duration::from_millis(10));
    }
    let mut extra = common::client::Conn::open(s.rs.addr);
    extra.send(b"GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    // While capped, the 21st stays in the listen queue, unanswered.
    let raw = extra.raw().get_ref().try_clone().unwrap();
    raw.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut b = [0u8; 1];
    let waited = (&raw).read(&mut b);
    assert!(
        matches!(&waited, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "served past the cap: {waited:?}"
    );
    raw.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert!(s.rs.metric("ringside_connection_limit_reached_total{worker=\"0\"}") >= 1.0);
    drop(idle);
    let r = extra.read(false).expect("served once a connection closed");
    assert_eq!(r.status, 200);
    let log = s.rs.stop();
    assert!(
        log.contains("connection limit reached") && log.contains("max_connections=20"),
        "{log}"
    );
}
