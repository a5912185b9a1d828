//! The cheapest possible server, to measure the kernel's share of a
//! request on this machine: the floor under any server's CPU per request.
//!
//! ```text
//! ringside-floor respond ADDR            answer every request head with a fixed 26-byte response
//! ringside-floor relay ADDR UPSTREAM     copy bytes both ways, one upstream connection per client
//! ```
//!
//! `respond` parses nothing: it counts the `\r\n\r\n` ends of request heads
//! in what it reads (wrk sends no bodies) and writes one fixed response for
//! each. It receives as ringside does on io_uring: one multishot RECV per
//! connection into a provided buffer ring, and sends through the ring
//! without waiting (`RINGSIDE_FLOOR_RECV=recv`: a RECV with its own buffer
//! per read and a waiting SEND, the floor before ringside had that path). `relay` is a proxy without HTTP: per client connection one
//! upstream connection, kept, and bytes copied as they come. Both run one
//! thread on io_uring with the ring setup ringside uses (single issuer,
//! deferred task work). Whatever a real server spends above these is its
//! own work; what these spend, no server on this kernel can avoid.
//!
//! `bench/scripts/cpu_per_request.py` runs them as the servers `floor`
//! (static mode) and `floor` (--proxy mode).

use std::io;
use std::net::SocketAddr;

use monoio::buf::IoBuf;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, Splitable};
use monoio::net::{TcpListener, TcpStream};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 26\r\nContent-Type: text/plain\r\n\r\nabcdefghijklmnopqrstuvwxyz";
const BUF: usize = 16 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = |s: &String| -> SocketAddr {
        s.parse()
            .unwrap_or_else(|e| fail(&format!("bad address {s:?}: {e}")))
    };
    let (listen, upstream) = match args.as_slice() {
        [mode, listen] if mode == "respond" => (parse(listen), None),
        [mode, listen, up] if mode == "relay" => (parse(listen), Some(parse(up))),
        _ => fail("usage: ringside-floor respond ADDR | relay ADDR UPSTREAM"),
    };
    let mut urb = io_uring::IoUring::builder();
    urb.setup_single_issuer().setup_defer_taskrun();
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .with_entries(1024)
        .uring_builder(urb)
        .build()
        .unwrap_or_else(|e| fail(&format!("io_uring: {e}")));
    let multishot = std::env::var("RINGSIDE_FLOOR_RECV").map_or(true, |v| v != "recv");
    if multishot {
        monoio::multishot::enable(monoio::multishot::Config::default());
    }
    rt.block_on(async move {
        let l = TcpListener::bind(listen).unwrap_or_else(|e| fail(&format!("bind: {e}")));
        println!("listening on {}", l.local_addr().unwrap());
        loop {
            let Ok((s, _)) = l.accept().await else {
                continue;
            };
            let _ = s.set_nodelay(true);
            match upstream {
                None if multishot => {
                    monoio::spawn(respond_multishot(s));
                }
                None => {
                    monoio::spawn(respond(s));
                }
                Some(up) => {
                    monoio::spawn(relay(s, up));
                }
            }
        }
    });
}

fn fail(msg: &str) -> ! {
    eprintln!("ringside-floor: {msg}");
    std::process::exit(2)
}

/// Counts the ends of request heads in `bytes`; `matched` is how far into a
/// "\r\n\r\n" the previous bytes ended.
fn heads(bytes: &[u8], matched: &mut u8) -> usize {
    let mut n = 0;
    for &c in bytes {
        *matched = match (*matched, c) {
            (0 | 2, b'\r') => *matched + 1,
            (1 | 3, b'\n') => *matched + 1,
            (_, b'\r') => 1,
            _ => 0,
        };
        if *matched == 4 {
            n += 1;
            *matched = 0;
        }
    }
    n
}

async fn respond_multishot(mut s: TcpStream) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let Some(m) = monoio::multishot::RecvMulti::new(s.as_raw_fd()) else {
        return respond(s).await;
    };
    let mut out = Vec::with_capacity(RESPONSE.len() * 4);
    let mut matched = 0u8;
    loop {
        // A receive the ring ran dry under, or one paused, re-arms here.
        m.arm();
        std::future::poll_fn(|cx| m.poll_ready(cx)).await;
        let mut answers = 0;
        match m.try_read(0, |chunk| answers += heads(chunk, &mut matched)) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
        for _ in 0..answers {
            out.extend_from_slice(RESPONSE);
        }
        if out.is_empty() {
            continue;
        }
        let (r, o) = s.send_nowait(out).await;
        let sent = match r {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => return Err(e),
        };
        out = o;
        if sent < out.len() {
            let rest = out.split_off(sent);
            let (r, _) = s.write_all(rest).await;
            r?;
        }
        out.clear();
    }
}

async fn respond(mut s: TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; BUF];
    let mut out = Vec::with_capacity(RESPONSE.len() * 4);
    let mut matched = 0u8;
    loop {
        let (r, b) = s.read(buf).await;
        buf = b;
        let n = r?;
        if n == 0 {
            return Ok(());
        }
        for _ in 0..heads(&buf[..n], &mut matched) {
            out.extend_from_slice(RESPONSE);
        }
        if !out.is_empty() {
            let (r, o) = s.write_all(out).await;
            r?;
            out = o;
            out.clear();
        }
    }
}

async fn relay(client: TcpStream, up: SocketAddr) -> io::Result<()> {
    let upstream = TcpStream::connect(up).await?;
    let _ = upstream.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    monoio::spawn(copy(ur, cw));
    copy(cr, uw).await
}

async fn copy(mut from: impl AsyncReadRent, mut to: impl AsyncWriteRentExt) -> io::Result<()> {
    let mut buf = vec![0u8; BUF];
    loop {
        let (r, b) = from.read(buf).await;
        buf = b;
        let n = r?;
        if n == 0 {
            return Ok(());
        }
        let (r, b) = to.write_all(buf.slice(..n)).await;
        buf = b.into_inner();
        r?;
    }
}
