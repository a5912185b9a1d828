//! An in-process origin server for proxy tests, misbehaving on request:
//! what it does depends on the request path (see [`Origin::start`]).
//! Every response carries `X-Conn: N`, the number of the upstream connection
//! it came on, so tests can see whether the proxy reused one.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Origin {
    pub addr: SocketAddr,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    conns: AtomicUsize,
    /// Connections that ended before a request body was complete.
    cut_uploads: AtomicUsize,
    heads: Mutex<Vec<String>>,
    stop: AtomicBool,
    /// Status for `/health`.
    health: AtomicUsize,
    name: Mutex<String>,
}

/// One request as the origin read it.
pub struct Req {
    pub method: String,
    pub path: String,
    pub head: String,
    pub body: Vec<u8>,
    pub complete: bool,
}

impl Origin {
    /// Paths:
    /// - `/ok` (default): 200 with a small body naming the origin;
    /// - `…/headers`: the request head as received, as the body;
    /// - `…/early-425`: 425 Too Early to a request with `Early-Data`,
    ///   else as `…/headers`;
    /// - `/echo`: the request body back;
    /// - `/big/N`: N bytes of body;
    /// - `/chunked`: a chunked body in three chunks;
    /// - `/close-delimited`: a body ended by closing;
    /// - `/interim`: `103 Early Hints` before the 200;
    /// - `/nocontent`, `/notmodified`: 204, 304;
    /// - `/hop`: response with `Connection: X-Secret` and `X-Secret`;
    /// - `/bad-cl`, `/dup-cl`, `/cl-te`, `/bad-chunk`, `/bad-status`: malformed;
    /// - `/cut-cl`, `/cut-chunked`: the body stops short and the origin closes;
    /// - `/extra`: a complete response followed by stray bytes;
    /// - `/slow`: answers after 3 s;
    /// - `/second-closes`: on the second request of a connection, closes
    ///   without answering;
    /// - `/status/N`: status N with a short body;
    /// - `/health`: the status set by [`Origin::set_health`] (200 at first);
    /// - `/upload`: reads the body, notes whether it ended short;
    /// - `/fails-on-a`: 503 from the origin named "a", 200 from others;
    /// - `/stall`: 300 kB of a 1 MB body, then nothing for 4 s.
    pub fn start(name: &str) -> Origin {
        Self::start_at(name, "127.0.0.1:0")
    }

    /// [`Origin::start`] on the address `at` (loopback has all of 127/8).
    pub fn start_at(name: &str, at: &str) -> Origin {
        let l = TcpListener::bind(at).unwrap();
        let addr = l.local_addr().unwrap();
        let state = Arc::new(State::default());
        state.health.store(200, Ordering::SeqCst);
        *state.name.lock().unwrap() = name.to_owned();
        let st = state.clone();
        std::thread::spawn(move || {
            for c in l.incoming() {
                if st.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(c) = c else { continue };
                let n = st.conns.fetch_add(1, Ordering::SeqCst) + 1;
                let st = st.clone();
                std::thread::spawn(move || serve(c, n, &st));
            }
        });
        Origin { addr, state }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
    pub fn conns(&self) -> usize {
        self.state.conns.load(Ordering::SeqCst)
    }
    pub fn cut_uploads(&self) -> usize {
        self.state.cut_uploads.load(Ordering::SeqCst)
    }
    pub fn heads(&self) -> Vec<String> {
        self.state.heads.lock().unwrap().clone()
    }
    pub fn requests(&self) -> usize {
        self.state.heads.lock().unwrap().len()
    }
    pub fn set_health(&self, status: u16) {
        self.state.health.store(status as usize, Ordering::SeqCst);
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so its thread ends.
        let _ = TcpStream::connect(self.addr);
    }
}

fn read_req(r: &mut BufReader<TcpStream>) -> Option<Req> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let first = head.lines().next()?.to_owned();
    let mut parts = first.split(' ');
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    let mut body = Vec::new();
    let mut complete = true;
    if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        let mut got = 0;
        while got < n {
            match r.read(&mut body[got..]) {
                Ok(0) | Err(_) => {
                    complete = false;
                    break;
                }
                Ok(k) => got += k,
            }
        }
        body.truncate(got);
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            if r.read_line(&mut size).ok()? == 0 {
                complete = false;
                break;
            }
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end).ok()?;
                break;
            }
            let mut chunk = vec![0; n + 2];
            if r.read_exact(&mut chunk).is_err() {
                complete = false;
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Some(Req {
        method,
        path,
        head,
        body,
        complete,
    })
}

fn serve(c: TcpStream, n: usize, st: &State) {
    let mut w = c.try_clone().unwrap();
    let mut r = BufReader::new(c);
    let mut nth = 0;
    while let Some(req) = read_req(&mut r) {
        nth += 1;
        st.heads.lock().unwrap().push(req.head.clone());
        let name = st.name.lock().unwrap().clone();
        let ok = |w: &mut TcpStream, status: u16, extra: &str, body: &[u8]| {
            let head = format!(
                "HTTP/1.1 {status} X\r\nX-Conn: {n}\r\nX-Origin: {name}\r\nContent-Length: {}\r\n{extra}\r\n",
                body.len()
            );
            let mut all = head.into_bytes();
            if req.method != "HEAD" {
                all.extend_from_slice(body);
            }
            w.write_all(&all).is_ok()
        };
        let raw = |w: &mut TcpStream, bytes: &str| w.write_all(bytes.as_bytes()).is_ok();
        let path = req.path.split('?').next().unwrap_or("").to_owned();
        let go_on = match path.as_str() {
            p if p.ends_with("/early-425") => {
                if req.head.to_ascii_lowercase().contains("\r\nearly-data:") {
                    ok(&mut w, 425, "", b"too early")
                } else {
                    ok(&mut w, 200, "", req.head.as_bytes())
                }
            }
            p if p.ends_with("/headers") => ok(&mut w, 200, "", req.head.as_bytes()),
            "/echo" => ok(&mut w, 200, "", &req.body),
            "/upload" => {
                if !req.complete {
                    st.cut_uploads.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                ok(&mut w, 200, "", format!("got {}", req.body.len()).as_bytes())
            }
            p if p.starts_with("/big/") => {
                let len: usize = p[5..].parse().unwrap();
                let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                ok(&mut w, 200, "", &body)
            }
            p if p.starts_with("/status/") => {
                let s: u16 = p[8..].parse().unwrap();
                ok(&mut w, s, "", format!("status {s} from {name}").as_bytes())
            }
            "/health" => {
                let s = st.health.load(Ordering::SeqCst) as u16;
                ok(&mut w, s, "", b"health")
            }
            "/chunked" => raw(
                &mut w,
                &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n"),
            ),
            "/close-delimited" => {
                raw(&mut w, &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nConnection: close\r\n\r\nuntil the end"));
                return;
            }
            "/interim" => raw(
                &mut w,
                &format!("HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 5\r\n\r\nfinal"),
            ),
            "/nocontent" => raw(&mut w, &format!("HTTP/1.1 204 No Content\r\nX-Conn: {n}\r\n\r\n")),
            "/notmodified" => raw(
                &mut w,
                &format!("HTTP/1.1 304 Not Modified\r\nX-Conn: {n}\r\nETag: \"x\"\r\n\r\n"),
            ),
            "/hop" => ok(&mut w, 200, "Connection: X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\nX-Public: 1\r\n", b"hop"),
            "/bad-cl" => raw(&mut w, &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 1x\r\n\r\nx")),
            "/dup-cl" => raw(
                &mut w,
                &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"),
            ),
            "/cl-te" => raw(
                &mut w,
                &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
            ),
            "/bad-chunk" => raw(
                &mut w,
                &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
            ),
            "/bad-status" => raw(&mut w, "HTTP/1.1 2000 Whatever\r\n\r\n"),
            "/cut-cl" => {
                raw(&mut w, &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 100\r\n\r\nonly ten.."));
                return;
            }
            "/cut-chunked" => {
                raw(&mut w, &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"));
                return;
            }
            "/extra" => raw(
                &mut w,
                &format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 2\r\n\r\nokGARBAGE"),
            ),
            "/slow" => {
                std::thread::sleep(Duration::from_secs(3));
                ok(&mut w, 200, "", b"slow")
            }
            "/second-closes" if nth >= 2 => return,
            "/fails-on-a" if name == "a" => ok(&mut w, 503, "", b"a is unwell"),
            "/stall" => {
                let mut all = format!("HTTP/1.1 200 OK\r\nX-Conn: {n}\r\nContent-Length: 1000000\r\n\r\n").into_bytes();
                all.extend(std::iter::repeat_n(b'x', 300_000));
                let _ = w.write_all(&all);
                std::thread::sleep(Duration::from_secs(4));
                return;
            }
            _ => ok(&mut w, 200, "", format!("ok from {name}").as_bytes()),
        };
        if !go_on {
            return;
        }
    }
}
