//! The admin listener: `/metrics` and `/healthz` on their own address, never
//! the traffic port, served by one plain thread off the cores.
//!
//! One connection at a time, each closed after its answer, with short
//! timeouts: a scraper and a probe need nothing more, and a stuck client
//! can delay them by at most the timeout.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{registry, render::render};

const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Set when the server drains: `/healthz` then answers 503 so that load
/// balancers and Kubernetes stop sending new connections.
pub static DRAINING: AtomicBool = AtomicBool::new(false);

/// Binds the admin address (before privileges are dropped).
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    sock.listen(64)?;
    Ok(sock.into())
}

/// Serves the admin endpoints on `l` from a thread of its own.
pub fn spawn(l: TcpListener) -> io::Result<()> {
    std::thread::Builder::new()
        .name("ringside-admin".into())
        .spawn(move || {
            for conn in l.incoming() {
                match conn {
                    Ok(c) => {
                        let _ = answer(c);
                    }
                    // EMFILE and the like: wait rather than spin.
                    Err(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        })?;
    Ok(())
}

fn answer(mut c: TcpStream) -> io::Result<()> {
    c.set_read_timeout(Some(IO_TIMEOUT))?;
    c.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut buf = [0u8; 4096];
    let mut got = 0;
    while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
        if got == buf.len() {
            return respond(&mut c, 431, "text/plain", "request head too large\n", false);
        }
        let n = c.read(&mut buf[got..])?;
        if n == 0 {
            return Ok(());
        }
        got += n;
    }
    let line = buf[..got].split(|&b| b == b'\r').next().unwrap_or(b"");
    let mut parts = line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or(b"");
    let target = parts.next().unwrap_or(b"");
    let path = target.split(|&b| b == b'?').next().unwrap_or(b"");
    let head = method == b"HEAD";
    if method != b"GET" && !head {
        return respond(&mut c, 405, "text/plain", "GET or HEAD only\n", head);
    }
    match path {
        b"/metrics" => respond(
            &mut c,
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            &render(registry()),
            head,
        ),
        b"/healthz" if DRAINING.load(Ordering::Relaxed) => {
            respond(&mut c, 503, "text/plain", "draining\n", head)
        }
        b"/healthz" => respond(&mut c, 200, "text/plain", "ok\n", head),
        _ => respond(&mut c, 404, "text/plain", "/metrics or /healthz\n", head),
    }
}

fn respond(c: &mut TcpStream, status: u16, ctype: &str, body: &str, head: bool) -> io::Result<()> {
    let reason = ringside_http::status::reason(status);
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head {
        out.push_str(body);
    }
    c.write_all(out.as_bytes())
}
