//! In-process test server on any backend, a small test application, and a
//! raw-socket HTTP client that checks framing byte by byte.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ringside_http::{Error, Exchange, Handler};
use ringside_runtime::config::{Affinity, BackendChoice, RuntimeConfig, ServerConfig, Workers};
use ringside_runtime::task;
use ringside_runtime::worker::Server;

/// Generates one test per backend that this machine runs, each calling the
/// named function with that backend.
#[macro_export]
macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {
        mod io_uring {
            $( #[test] fn $name() { super::$name(ringside_runtime::config::BackendChoice::IoUring) } )*
        }
        mod epoll {
            $( #[test] fn $name() { super::$name(ringside_runtime::config::BackendChoice::Epoll) } )*
        }
        mod glommio {
            $( #[test] fn $name() { super::$name(ringside_runtime::config::BackendChoice::Glommio) } )*
        }
    };
}

/// The test application's routes.
pub struct App {
    /// Told when /slow starts, so a test knows a request is in flight.
    pub started: Arc<Mutex<mpsc::Sender<()>>>,
}

impl Handler for App {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        let path = ex.path().to_vec();
        match &path[..] {
            b"/hello" => ex.send(200, &[("Content-Type", b"text/plain")], b"hello"),
            b"/echo" => {
                let mut body = Vec::new();
                while let Some(piece) = ex.read_body().await? {
                    body.extend_from_slice(&piece);
                }
                ex.send(200, &[], &body)
            }
            b"/echo-chunked" => {
                ex.start_stream(200, &[])?;
                while let Some(piece) = ex.read_body().await? {
                    ex.write_body(&piece).await?;
                }
                ex.finish().await
            }
            b"/chunked" => {
                ex.start_stream(200, &[])?;
                for part in [&b"one "[..], b"two ", b"three"] {
                    ex.write_body(part).await?;
                }
                ex.finish().await
            }
            b"/slow" => {
                let _ = self.started.lock().unwrap().send(());
                task::sleep(Duration::from_millis(300)).await;
                ex.send(200, &[], b"slow done")
            }
            b"/relay" => {
                // The runtime's client side: connect, write, read the reply.
                let port: u16 = std::str::from_utf8(ex.query().unwrap_or_default())
                    .unwrap()
                    .parse()
                    .unwrap();
                let mut up =
                    ringside_runtime::net::TcpStream::connect(([127, 0, 0, 1], port).into())
                        .await?;
                let (r, _) = up.write_all(bytes::BytesMut::from(&b"ping"[..])).await;
                r?;
                let mut reply = bytes::BytesMut::with_capacity(64);
                while reply.len() < 4 {
                    if up.read(&mut reply).await? == 0 {
                        break;
                    }
                }
                ex.send(200, &[], &reply)
            }
            b"/sized-304" => {
                // A handler framing a 304 as if it had a body.
                ex.start_sized(304, &[], 10)?;
                ex.write_body(b"0123456789").await
            }
            b"/file" => {
                // The file named by the query, whole: the zero-copy path.
                let path = std::str::from_utf8(ex.query().unwrap_or_default())
                    .unwrap()
                    .to_owned();
                let file = std::fs::File::open(path)?;
                let len = file.metadata()?.len();
                ex.send_file(200, &[], &file, 0, len).await
            }
            b"/target" => {
                let t = ex.target().to_vec();
                ex.send(200, &[], &t)
            }
            _ => ex.send(404, &[], b"not found"),
        }
    }
}

pub struct TestServer {
    server: Option<Server<App>>,
    pub addr: SocketAddr,
    pub started: mpsc::Receiver<()>,
}

pub fn server_config() -> ServerConfig {
    ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..ServerConfig::default()
    }
}

pub fn start(backend: BackendChoice) -> TestServer {
    start_with(backend, server_config())
}

pub fn start_with(backend: BackendChoice, srv: ServerConfig) -> TestServer {
    let rt = RuntimeConfig {
        workers: Workers::Count(1),
        affinity: Affinity::Off,
        backend,
        ring_entries: 256,
        ..RuntimeConfig::default()
    };
    let (tx, rx) = mpsc::channel();
    let tx = Arc::new(Mutex::new(tx));
    let server = ringside_http::start(&rt, &srv, move |_| App {
        started: tx.clone(),
    })
    .unwrap_or_else(|e| panic!("server on {backend:?} failed to start: {e}"));
    let addr = server.local_addrs[0];
    TestServer {
        server: Some(server),
        addr,
        started: rx,
    }
}

impl TestServer {
    pub fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Starts the drain and waits for the workers to end.
    pub fn shutdown_and_join(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
            s.join();
        }
    }

    pub fn shutdown(&self) {
        if let Some(s) = &self.server {
            s.shutdown();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown_and_join();
    }
}

pub struct Client {
    pub reader: BufReader<TcpStream>,
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        // A bound on a broken test, not a wait for readiness.
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Client {
            reader: BufReader::new(s),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).expect("write");
    }

    /// Reads one response; `head_request` says the body is absent.
    pub fn response(&mut self, head_request: bool) -> Response {
        self.try_response(head_request).expect("response")
    }

    pub fn try_response(&mut self, head_request: bool) -> io::Result<Response> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h)?;
            let h = h.trim_end_matches("\r\n");
            if h.is_empty() {
                break;
            }
            let (n, v) = h
                .split_once(": ")
                .unwrap_or_else(|| panic!("bad header {h:?}"));
            headers.push((n.to_string(), v.to_string()));
        }
        let mut r = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if head_request || status == 204 || status == 304 || (100..200).contains(&status) {
            return Ok(r);
        }
        if let Some(cl) = r.header("Content-Length") {
            let n: usize = cl.parse().unwrap();
            r.body.resize(n, 0);
            self.reader.read_exact(&mut r.body)?;
        } else if r.header("Transfer-Encoding") == Some("chunked") {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size)?;
                let n = usize::from_str_radix(size.trim_end(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                self.reader.read_exact(&mut chunk)?;
                assert_eq!(&chunk[n..], b"\r\n");
                if n == 0 {
                    break;
                }
                r.body.extend_from_slice(&chunk[..n]);
            }
        } else {
            self.reader.read_to_end(&mut r.body)?;
        }
        Ok(r)
    }

    /// Asserts the server closed the connection: EOF (or a reset) with no
    /// further bytes.
    pub fn expect_closed(&mut self) {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(
                rest.is_empty(),
                "bytes after the last response: {:?}",
                String::from_utf8_lossy(&rest)
            ),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("expected a close, got {e}"),
        }
    }
}
