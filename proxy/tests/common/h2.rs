//! What the HTTP/2 tests share: a ringside with a plain and a TLS
//! listener that speak h2 (h2c by prior knowledge, ALPN `h2`) and the same
//! two with `http2 = false`, serving static files, passing `/app/` and
//! every request for `localhost` (httpwg's authority) to an in-process
//! origin; curl with its output; and a TLS relay, so a client that speaks
//! only h2c (httpwg) can reach the TLS listener.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use super::origin::Origin;
use super::pki::Ca;
use super::{Ringside, TempDir};

pub struct Site {
    pub dir: TempDir,
    pub ca: Ca,
    pub ca_pem: PathBuf,
    pub srv: Ringside,
    pub origin: Origin,
    pub h2c: SocketAddr,
    pub plain_h1: SocketAddr,
    /// The TLS listeners, offering h2 and not (none on glommio, which
    /// refuses TLS).
    pub tls: Option<SocketAddr>,
    pub tls_h1: Option<SocketAddr>,
    pub log: PathBuf,
}

/// Bytes that no off-by-one or reordering keeps equal.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

impl Site {
    /// Starts it on `backend`, with `extra` appended to the config.
    pub fn start(tag: &str, backend: &str, extra: &str) -> Site {
        Self::start_env(tag, backend, extra, &[])
    }

    /// [`Site::start`] with `env` set for the server.
    pub fn start_env(tag: &str, backend: &str, extra: &str, env: &[(&str, &str)]) -> Site {
        let dir = TempDir::new(tag);
        let ca = Ca::new("ringside h2 CA");
        let ca_pem = dir.write("ca.pem", ca.pem().as_bytes());
        ca.leaf(&dir, "leaf", "h2.test", &["h2.test", "localhost"]);
        dir.write("root/small.txt", b"hello over h2\n");
        dir.write("root/big.bin", &pattern(10 << 20));
        let origin = Origin::start("o");
        let log = dir.0.join("access.log");
        let with_tls = backend != "glommio";
        let cert = r#"tls = { cert = "leaf.pem", key = "leaf.key" }"#;
        let tls_listeners = if with_tls {
            format!(
                r#", {{ addr = "127.0.0.3:0", {cert} }}, {{ addr = "127.0.0.4:0", http2 = false, {cert} }}"#
            )
        } else {
            String::new()
        };
        let cfg = format!(
            r#"
[server]
listen = ["127.0.0.1:0", {{ addr = "127.0.0.2:0", http2 = false }}{tls_listeners}]
root = "root"

[limits]
max_body = "4m"

[admin]
listen = "127.0.0.1:0"

[access_log]
path = "access.log"
flush_every = "10ms"

[upstream.o]
servers = ["127.0.0.1:{port}"]

[[route]]
prefix = "/"
host = ["localhost"]
upstream = "o"

[[route]]
prefix = "/app/"
upstream = "o"
strip_prefix = true
{extra}"#,
            port = origin.port()
        );
        let cfg = dir.write("ringside.toml", cfg.as_bytes());
        let mut srv = Ringside::start_with(
            std::process::Command::new(super::BIN)
                .args(["--workers", "1", "--backend", backend, "--config"])
                .arg(&cfg)
                .envs(env.iter().copied()),
        );
        let h2c = srv.addr;
        let plain_h1 = srv.next_listener();
        let (tls, tls_h1) = if with_tls {
            (Some(srv.next_listener()), Some(srv.next_listener()))
        } else {
            (None, None)
        };
        srv.admin();
        Site {
            dir,
            ca,
            ca_pem,
            srv,
            origin,
            h2c,
            plain_h1,
            tls,
            tls_h1,
            log,
        }
    }

    /// curl arguments for `path` over h2c by prior knowledge.
    pub fn h2c_url(&self, path: &str) -> Vec<String> {
        vec![
            "--http2-prior-knowledge".into(),
            format!("http://{}{path}", self.h2c),
        ]
    }

    /// curl arguments for `path` at `at`, a TLS listener, offering h2.
    pub fn https_url(&self, at: SocketAddr, path: &str) -> Vec<String> {
        vec![
            "--http2".into(),
            "--cacert".into(),
            self.ca_pem.to_str().unwrap().into(),
            "--resolve".into(),
            format!("h2.test:{}:{}", at.port(), at.ip()),
            format!("https://h2.test:{}{path}", at.port()),
        ]
    }
}

/// curl, bounded, with the response head on stdout before the body.
pub fn curl<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "30", "-D", "-"])
        .args(args)
        .output()
        .expect("curl must be installed (run scripts/test.sh)")
}

/// (status, head, body) of a curl request that must have come: over
/// HTTP/1.1, or with `h2` over h2c by prior knowledge; `extra`: more curl
/// arguments.
pub fn fetch_as(h2: bool, url: &str, extra: &[&str]) -> (u16, String, Vec<u8>) {
    let proto = if h2 {
        "--http2-prior-knowledge"
    } else {
        "--http1.1"
    };
    let mut args = vec![proto];
    args.extend_from_slice(extra);
    args.push(url);
    let (head, body) = fetched(&args);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, head, body)
}

/// A curl response that must have come: (status line and head, body).
pub fn fetched<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (String, Vec<u8>) {
    let out = curl(args);
    let argv: Vec<_> = args.iter().map(|a| a.as_ref().to_owned()).collect();
    assert!(
        out.status.success(),
        "curl {argv:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let at = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    (
        String::from_utf8_lossy(&out.stdout[..at]).into_owned(),
        out.stdout[at..].to_vec(),
    )
}

/// The value of header `name` in a curl response head.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
}

/// Accepts plain TCP and carries each connection's bytes, unchanged,
/// over TLS (ALPN `h2`, verified against `ca`) to `to`: what a client
/// without TLS (httpwg) sends then reaches ringside's TLS listener.
pub fn tls_relay(to: SocketAddr, ca: &Ca, name: &'static str) -> SocketAddr {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().into()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            let cfg = cfg.clone();
            std::thread::spawn(move || relay(c, to, cfg, name));
        }
    });
    at
}

fn relay(client: TcpStream, to: SocketAddr, cfg: Arc<rustls::ClientConfig>, name: &'static str) {
    let Ok(server) = TcpStream::connect(to) else {
        return;
    };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let tls = rustls::ClientConnection::new(cfg, name.try_into().unwrap()).unwrap();
    let tls = Arc::new(Mutex::new(tls));
    // Client to server: plaintext in, records out.
    let (t, mut from_client, mut to_server) = (
        tls.clone(),
        client.try_clone().unwrap(),
        server.try_clone().unwrap(),
    );
    let up = std::thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = from_client.read(&mut buf).unwrap_or(0);
            let mut t = t.lock().unwrap();
            if n == 0 {
                t.send_close_notify();
            } else if t.writer().write_all(&buf[..n]).is_err() {
                return;
            }
            while t.wants_write() {
                if t.write_tls(&mut to_server).is_err() {
                    return;
                }
            }
            if n == 0 {
                let _ = to_server.shutdown(std::net::Shutdown::Write);
                return;
            }
        }
    });
    // Server to client: records in, plaintext out; the handshake's
    // replies go back to the server from here too.
    let (mut from_server, mut to_client, mut back) = (server.try_clone().unwrap(), client, server);
    let mut buf = vec![0; 64 * 1024];
    'read: loop {
        let n = from_server.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        let mut plain = Vec::new();
        {
            let mut t = tls.lock().unwrap();
            let mut rd = &buf[..n];
            while !rd.is_empty() {
                if t.read_tls(&mut rd).is_err() || t.process_new_packets().is_err() {
                    break 'read;
                }
            }
            let _ = t.reader().read_to_end(&mut plain);
            while t.wants_write() {
                if t.write_tls(&mut back).is_err() {
                    break 'read;
                }
            }
        }
        if !plain.is_empty() && to_client.write_all(&plain).is_err() {
            break;
        }
    }
    let _ = to_client.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
}
