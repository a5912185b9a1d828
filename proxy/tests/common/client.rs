//! A raw HTTP/1.1 client for tests: writes bytes as given and reads
//! responses strictly, reporting how each body ended.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
    /// The body ended by its framing (Content-Length reached, last chunk
    /// seen, or EOF for a close-delimited one), not by a cut.
    pub complete: bool,
    /// Interim (1xx) responses before this one, as status codes.
    pub interim: Vec<u16>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        header_in(&self.head, name)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The first value of field `name` in a head's text (its first line, the
/// request or status line, skipped).
pub fn header_in(head: &str, name: &str) -> Option<String> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let w = TcpStream::connect(addr).unwrap();
        w.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn {
            r: BufReader::new(w.try_clone().unwrap()),
            w,
        }
    }

    /// A connection from `source` (any loopback address: 127.0.0.0/8 is
    /// all this machine's), for tests that judge the client's address.
    pub fn open_from(addr: SocketAddr, source: std::net::IpAddr) -> Conn {
        let s = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            None,
        )
        .unwrap();
        s.bind(&SocketAddr::new(source, 0).into()).unwrap();
        s.connect(&addr.into()).unwrap();
        let w: TcpStream = s.into();
        w.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Conn {
            r: BufReader::new(w.try_clone().unwrap()),
            w,
        }
    }

    /// The port this end of the connection has.
    pub fn local_port(&self) -> u16 {
        self.w.local_addr().unwrap().port()
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).unwrap();
    }

    /// `GET path` with Host `t`, keep-alive.
    pub fn get(&mut self, path: &str) -> Resp {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        self.read(false).expect("response")
    }

    pub fn shutdown_write(&self) {
        let _ = self.w.shutdown(std::net::Shutdown::Write);
    }

    /// True when the server closed the connection (EOF on the next read).
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0) | Err(_))
    }

    /// Reads one final response (skipping interim ones); `None` at EOF
    /// before a status line.
    pub fn read(&mut self, head_request: bool) -> Option<Resp> {
        let mut interim = Vec::new();
        loop {
            let mut head = String::new();
            loop {
                let mut line = String::new();
                match self.r.read_line(&mut line) {
                    Ok(0) | Err(_) if head.is_empty() => return None,
                    Ok(0) | Err(_) => panic!("EOF inside a head: {head:?}"),
                    Ok(_) => {}
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
            if (100..200).contains(&status) && status != 101 {
                interim.push(status);
                continue;
            }
            let mut resp = Resp {
                status,
                head,
                body: Vec::new(),
                complete: true,
                interim,
            };
            if head_request || status == 204 || status == 304 || status == 101 {
                return Some(resp);
            }
            if let Some(n) = resp.header("content-length") {
                let n: usize = n.parse().unwrap();
                resp.body.resize(n, 0);
                let mut got = 0;
                while got < n {
                    match self.r.read(&mut resp.body[got..]) {
                        Ok(0) | Err(_) => break,
                        Ok(k) => got += k,
                    }
                }
                resp.complete = got == n;
                resp.body.truncate(got);
            } else if resp
                .header("transfer-encoding")
                .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
            {
                resp.complete = false;
                loop {
                    let mut size = String::new();
                    if matches!(self.r.read_line(&mut size), Ok(0) | Err(_)) {
                        break;
                    }
                    let n = usize::from_str_radix(size.trim(), 16).expect("chunk size");
                    if n == 0 {
                        let mut end = String::new();
                        let _ = self.r.read_line(&mut end);
                        resp.complete = end == "\r\n";
                        break;
                    }
                    let mut chunk = vec![0; n + 2];
                    if self.r.read_exact(&mut chunk).is_err() {
                        break;
                    }
                    resp.body.extend_from_slice(&chunk[..n]);
                }
            } else {
                let _ = self.r.read_to_end(&mut resp.body);
            }
            return Some(resp);
        }
    }
}

impl Conn {
    /// Sends `req` and reads the final response to it (`None` at EOF).
    pub fn read_after(&mut self, req: &str) -> Option<Resp> {
        self.send(req.as_bytes());
        let head = req.starts_with("HEAD ");
        self.read(head)
    }
}

impl Conn {
    /// The socket, for reading exact bytes (nothing may be buffered).
    pub fn raw(&mut self) -> &mut BufReader<TcpStream> {
        &mut self.r
    }
}
