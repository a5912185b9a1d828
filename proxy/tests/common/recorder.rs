//! A recording upstream for the security suite: it reads requests strictly,
//! keeps every complete one exactly as it arrived, notes anything a strict
//! HTTP/1.1 server could read two ways, and answers `200 ok`.
//!
//! Strictness is the point: a request the proxy forwards must have one
//! unambiguous reading, so the recorder flags (rather than guesses at) bare
//! CR or LF, duplicate or conflicting framing fields, a Transfer-Encoding
//! other than `chunked`, chunk extensions and trailer fields.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One complete request as the upstream received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    /// Header lines, without line ends, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Trailer field lines of a chunked body (the proxy should send none).
    pub trailers: Vec<String>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<Recorded>>,
    /// What a strict reader found ambiguous, one line each.
    anomalies: Mutex<Vec<String>>,
    stop: AtomicBool,
    /// Connections accepted.
    conns: std::sync::atomic::AtomicUsize,
}

pub struct Recorder {
    pub addr: SocketAddr,
    state: Arc<State>,
    /// The socket a recorder on a unix socket listens on.
    unix: Option<std::path::PathBuf>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let state = Arc::new(State::default());
        accepting(state.clone(), move || l.accept().map(|(c, _)| c));
        Recorder {
            addr,
            state,
            unix: None,
        }
    }

    /// A recorder listening on the unix socket `path` (`addr` is then
    /// unspecified).
    pub fn start_unix(path: &std::path::Path) -> Recorder {
        let l = std::os::unix::net::UnixListener::bind(path).unwrap();
        let state = Arc::new(State::default());
        accepting(state.clone(), move || l.accept().map(|(c, _)| c));
        Recorder {
            addr: "0.0.0.0:0".parse().unwrap(),
            state,
            unix: Some(path.to_owned()),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// Connections accepted so far.
    pub fn conns(&self) -> usize {
        self.state.conns.load(Ordering::SeqCst)
    }

    pub fn anomalies(&self) -> Vec<String> {
        self.state.anomalies.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        match &self.unix {
            Some(p) => drop(std::os::unix::net::UnixStream::connect(p)),
            None => drop(TcpStream::connect(self.addr)),
        }
    }
}

/// Serves each connection `accept` gives on a thread of its own, until
/// the recorder stops.
fn accepting<C: Read + Write + Send + 'static>(
    st: Arc<State>,
    mut accept: impl FnMut() -> std::io::Result<C> + Send + 'static,
) {
    std::thread::spawn(move || loop {
        let c = accept();
        if st.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(c) = c else { continue };
        st.conns.fetch_add(1, Ordering::SeqCst);
        let st = st.clone();
        std::thread::spawn(move || serve(c, &st));
    });
}

fn serve<C: Read + Write>(mut c: C, st: &State) {
    let mut buf = Vec::new();
    loop {
        match read_request(&mut c, &mut buf) {
            Ok(Some(req)) => {
                st.requests.lock().unwrap().push(req);
                let reply = b"HTTP/1.1 200 OK\r\nX-Recorder: 1\r\nContent-Length: 2\r\n\r\nok";
                if c.write_all(reply).is_err() {
                    return;
                }
            }
            // A cut request is what a proxy does when the client's body
            // turns out bad: nothing to record.
            Ok(None) => return,
            Err(why) => {
                st.anomalies.lock().unwrap().push(why);
                return;
            }
        }
    }
}

/// Reads until `buf` holds `n` bytes; false at EOF.
fn fill(c: &mut impl Read, buf: &mut Vec<u8>, n: usize) -> bool {
    let mut chunk = [0u8; 4096];
    while buf.len() < n {
        match c.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
    true
}

/// Reads one CRLF-terminated line from the front of `buf`, without its end.
fn line(c: &mut impl Read, buf: &mut Vec<u8>) -> Result<Option<Vec<u8>>, String> {
    loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            if i == 0 || buf[i - 1] != b'\r' {
                return Err(format!(
                    "bare LF in {:?}",
                    String::from_utf8_lossy(&buf[..=i])
                ));
            }
            let l = buf[..i - 1].to_vec();
            buf.drain(..=i);
            if l.contains(&b'\r') {
                return Err(format!("bare CR in {:?}", String::from_utf8_lossy(&l)));
            }
            return Ok(Some(l));
        }
        if !fill(c, buf, buf.len() + 1) {
            return Ok(None);
        }
    }
}

fn read_request(c: &mut impl Read, buf: &mut Vec<u8>) -> Result<Option<Recorded>, String> {
    let Some(start) = line(c, buf)? else {
        return Ok(None);
    };
    let start = String::from_utf8(start).map_err(|_| "non-UTF-8 request line".to_owned())?;
    let parts: Vec<&str> = start.split(' ').collect();
    let [method, target, "HTTP/1.1"] = parts[..] else {
        return Err(format!("odd request line {start:?}"));
    };
    let mut headers = Vec::new();
    loop {
        let Some(l) = line(c, buf)? else {
            return Ok(None);
        };
        if l.is_empty() {
            break;
        }
        let l = String::from_utf8_lossy(&l).into_owned();
        let Some((n, v)) = l.split_once(':') else {
            return Err(format!("header line without a colon {l:?}"));
        };
        if n.is_empty() || n.contains([' ', '\t']) {
            return Err(format!("bad header name {l:?}"));
        }
        headers.push((n.to_owned(), v.trim_matches([' ', '\t']).to_owned()));
    }
    let mut req = Recorded {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body: Vec::new(),
        trailers: Vec::new(),
    };
    let cl = req.header("content-length");
    let te = req.header("transfer-encoding");
    if req.header("host").len() != 1 {
        return Err(format!("{} Host fields", req.header("host").len()));
    }
    match (&cl[..], &te[..]) {
        ([], []) => {}
        ([n], []) => {
            let n: usize = n.parse().map_err(|_| format!("Content-Length {n:?}"))?;
            if !fill(c, buf, n) {
                return Ok(None);
            }
            req.body = buf.drain(..n).collect();
        }
        ([], ["chunked"]) => {
            if !read_chunked(c, buf, &mut req)? {
                return Ok(None);
            }
        }
        _ => {
            return Err(format!(
                "framing Content-Length {cl:?}, Transfer-Encoding {te:?}"
            ))
        }
    }
    Ok(Some(req))
}

fn read_chunked(c: &mut impl Read, buf: &mut Vec<u8>, req: &mut Recorded) -> Result<bool, String> {
    loop {
        let Some(size) = line(c, buf)? else {
            return Ok(false);
        };
        let size = String::from_utf8_lossy(&size).into_owned();
        if size.contains(';') {
            return Err(format!("chunk extension forwarded: {size:?}"));
        }
        let n = usize::from_str_radix(&size, 16).map_err(|_| format!("chunk size {size:?}"))?;
        if n == 0 {
            loop {
                let Some(t) = line(c, buf)? else {
                    return Ok(false);
                };
                if t.is_empty() {
                    return Ok(true);
                }
                req.trailers.push(String::from_utf8_lossy(&t).into_owned());
            }
        }
        if !fill(c, buf, n + 2) {
            return Ok(false);
        }
        if &buf[n..n + 2] != b"\r\n" {
            return Err("chunk data not followed by CRLF".to_owned());
        }
        req.body.extend(buf.drain(..n));
        buf.drain(..2);
    }
}
