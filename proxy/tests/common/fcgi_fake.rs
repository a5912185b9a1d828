//! A misbehaving FastCGI application for fault tests, on a loopback port:
//! it reads each request whole (BEGIN_REQUEST, PARAMS, STDIN), then does
//! what the script's name says:
//!
//! | SCRIPT_NAME      | answer                                              |
//! |------------------|-----------------------------------------------------|
//! | /garbage.php     | an HTTP response instead of records                 |
//! | /wrong-id.php    | STDOUT for request id 2                             |
//! | /cut.php         | part of a record inside the CGI head, then close    |
//! | /cut-body.php    | the head and "half", then close (no END_REQUEST)    |
//! | /overloaded.php  | END_REQUEST with FCGI_OVERLOADED, no output         |
//! | /stall.php       | nothing, connection held open                       |
//! | /big.php         | the head padded by 255 bytes, a 65535-byte STDOUT   |
//! |                  | record padded by 1, END_REQUEST                     |
//! | /once.php        | "once", then closes the kept connection             |
//! | anything else    | "ok"                                                |
//!
//! FCGI_GET_VALUES is answered as php-fpm answers it (FCGI_MPXS_CONNS=0).
//! After a complete answer it serves the next request on the connection
//! when BEGIN_REQUEST asked for FCGI_KEEP_CONN, else closes. Each
//! connection's end is reported on [`Fake::events`]: `Closed` when the
//! front end closed it, `Dropped` when the fake did.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

pub struct Fake {
    pub port: u16,
    pub events: mpsc::Receiver<End>,
    conns: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The front end closed the connection (EOF where a request may begin).
    Closed,
    /// The fake closed it (after a request without KEEP_CONN, or on purpose).
    Dropped,
}

/// The body /big.php answers: 65535 bytes, byte i = i % 251.
pub fn big_body() -> Vec<u8> {
    (0..65535u32).map(|i| (i % 251) as u8).collect()
}

impl Fake {
    pub fn start() -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (tx, events) = mpsc::channel();
        let conns = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (c, r) = (conns.clone(), requests.clone());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                c.fetch_add(1, Ordering::SeqCst);
                let (tx, r) = (tx.clone(), r.clone());
                std::thread::spawn(move || {
                    let end = serve(s, &r);
                    let _ = tx.send(end);
                });
            }
        });
        Fake {
            port,
            events,
            conns,
            requests,
        }
    }

    /// Connections accepted so far.
    pub fn conns(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }

    /// Requests read whole so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// The next connection's end, waiting at most 10 s.
    pub fn next_end(&self) -> End {
        self.events
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a FastCGI connection to end")
    }
}

fn serve(mut s: TcpStream, count: &AtomicUsize) -> End {
    loop {
        let Ok(Some((script, keep))) = read_request(&mut s) else {
            return End::Closed;
        };
        count.fetch_add(1, Ordering::SeqCst);
        let mut out = Vec::new();
        match script.as_str() {
            "/garbage.php" => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                return wait_close(s);
            }
            "/wrong-id.php" => {
                record(&mut out, 6, 2, b"Content-Type: text/plain\r\n\r\nx", 0);
                let _ = s.write_all(&out);
                return wait_close(s);
            }
            "/cut.php" => {
                record(&mut out, 6, 1, b"Content-Type: text/plain\r\nX-Cut: yes", 0);
                out.truncate(out.len() - 3);
                let _ = s.write_all(&out);
                return End::Dropped;
            }
            "/cut-body.php" => {
                record(&mut out, 6, 1, b"Content-Type: text/plain\r\n\r\nhalf", 0);
                let _ = s.write_all(&out);
                return End::Dropped;
            }
            "/stall.php" => return wait_close(s),
            "/overloaded.php" => end_request(&mut out, 2),
            "/big.php" => {
                record(
                    &mut out,
                    6,
                    1,
                    b"Content-Type: application/x-big\r\n\r\n",
                    255,
                );
                record(&mut out, 6, 1, &big_body(), 1);
                record(&mut out, 6, 1, b"", 0);
                end_request(&mut out, 0);
            }
            "/once.php" => {
                record(&mut out, 6, 1, b"Content-Type: text/plain\r\n\r\nonce", 0);
                record(&mut out, 6, 1, b"", 0);
                end_request(&mut out, 0);
                let _ = s.write_all(&out);
                return End::Dropped;
            }
            _ => {
                record(&mut out, 6, 1, b"Content-Type: text/plain\r\n\r\nok", 0);
                record(&mut out, 6, 1, b"", 0);
                end_request(&mut out, 0);
            }
        }
        if s.write_all(&out).is_err() {
            return End::Closed;
        }
        if !keep {
            return End::Dropped;
        }
    }
}

/// Reads until the front end closes: whether it dropped the connection is
/// what a fault test asks.
fn wait_close(mut s: TcpStream) -> End {
    let mut sink = [0u8; 4096];
    loop {
        match s.read(&mut sink) {
            Ok(0) | Err(_) => return End::Closed,
            Ok(_) => {}
        }
    }
}

fn end_request(out: &mut Vec<u8>, protocol_status: u8) {
    record(out, 3, 1, &[0, 0, 0, 0, protocol_status, 0, 0, 0], 0);
}

fn record(out: &mut Vec<u8>, kind: u8, id: u16, content: &[u8], pad: u8) {
    let id = id.to_be_bytes();
    let len = (content.len() as u16).to_be_bytes();
    out.extend_from_slice(&[1, kind, id[0], id[1], len[0], len[1], pad, 0]);
    out.extend_from_slice(content);
    out.extend(std::iter::repeat_n(0u8, pad as usize));
}

/// One whole request: its SCRIPT_NAME and whether it asked to keep the
/// connection. `None` at EOF before BEGIN_REQUEST.
fn read_request(s: &mut TcpStream) -> io::Result<Option<(String, bool)>> {
    let mut keep = false;
    let mut params = Vec::new();
    let mut first = true;
    loop {
        let mut h = [0u8; 8];
        if first {
            match s.read(&mut h[..1])? {
                0 => return Ok(None),
                _ => s.read_exact(&mut h[1..])?,
            }
            first = false;
        } else {
            s.read_exact(&mut h)?;
        }
        let len = u16::from_be_bytes([h[4], h[5]]) as usize;
        let mut body = vec![0u8; len + h[6] as usize];
        s.read_exact(&mut body)?;
        body.truncate(len);
        match h[1] {
            // FCGI_GET_VALUES, as php-fpm answers it: no multiplexing.
            9 => {
                let mut out = Vec::new();
                let mut pair = vec![15u8, 1];
                pair.extend_from_slice(b"FCGI_MPXS_CONNS0");
                record(&mut out, 10, 0, &pair, 0);
                s.write_all(&out)?;
                first = true;
                continue;
            }
            1 => keep = body[2] & 1 == 1,
            4 => params.extend_from_slice(&body),
            5 if len == 0 => break,
            _ => {}
        }
    }
    Ok(Some((script_name(&params), keep)))
}

fn script_name(mut p: &[u8]) -> String {
    fn len(p: &mut &[u8]) -> usize {
        if p[0] < 0x80 {
            let n = p[0] as usize;
            *p = &p[1..];
            n
        } else {
            let n = u32::from_be_bytes([p[0] & 0x7f, p[1], p[2], p[3]]) as usize;
            *p = &p[4..];
            n
        }
    }
    while !p.is_empty() {
        let nl = len(&mut p);
        let vl = len(&mut p);
        let (name, rest) = p.split_at(nl);
        let (value, rest) = rest.split_at(vl);
        if name == b"SCRIPT_NAME" {
            return String::from_utf8_lossy(value).into_owned();
        }
        p = rest;
    }
    String::new()
}
