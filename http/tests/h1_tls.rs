//! TLS on client connections, on each backend that has it: requests and
//! bodies both ways, the zero-copy file path falling back to copies,
//! handshakes that stall without stalling the core, and glommio's refusal.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::{server_config, start_with, TestServer};
use ringside_runtime::config::BackendChoice;
use ringside_runtime::tls::rustls;
use ringside_runtime::tls::TlsAcceptor;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

struct Certs {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn certs() -> Certs {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    Certs {
        chain: vec![ck.cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into()),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn start_tls(backend: BackendChoice, c: &Certs) -> Result<TestServer, String> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(c.chain.clone(), c.key.clone_key())
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let mut srv = server_config();
    srv.tls = vec![Some(TlsAcceptor(Arc::new(cfg)))];
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| start_with(backend, srv))).map_err(
        |e| {
            e.downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "panic".into())
        },
    )
}

fn client_config(c: &Certs) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(c.chain[0].clone()).unwrap();
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn connect(srv: &TestServer, cfg: &Arc<rustls::ClientConfig>) -> Tls {
    let sock = TcpStream::connect(srv.addr).unwrap();
    // A bound on a broken test, not a wait for readiness.
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let conn =
        rustls::ClientConnection::new(cfg.clone(), ServerName::try_from("localhost").unwrap())
            .unwrap();
    rustls::StreamOwned::new(conn, sock)
}

/// Reads one response with a Content-Length body: (status, body).
fn response(s: &mut Tls) -> (u16, Vec<u8>) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    let text = String::from_utf8(head).unwrap();
    let status = text[9..12].parse().unwrap();
    let len: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .or_else(|| {
            text.lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
        })
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (status, body)
}

fn keepalive_and_pipelining(backend: BackendChoice) {
    let c = certs();
    let srv = start_tls(backend, &c).unwrap();
    let cfg = client_config(&c);
    let mut s = connect(&srv, &cfg);
    for _ in 0..3 {
        s.write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        assert_eq!(response(&mut s), (200, b"hello".to_vec()));
    }
    // Three requests in one write: three responses, in order.
    s.write_all(
        b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /target?x HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    assert_eq!(response(&mut s), (200, b"hello".to_vec()));
    assert_eq!(response(&mut s), (200, b"/target?x".to_vec()));
    assert_eq!(response(&mut s).0, 404);
    assert_eq!(s.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
}

fn large_bodies_both_ways(backend: BackendChoice) {
    let c = certs();
    let srv = start_tls(backend, &c).unwrap();
    let cfg = client_config(&c);
    let mut s = connect(&srv, &cfg);
    // 1000 kB up and back (under the default body limit): many records,
    // rustls's send buffer filled and drained many times over.
    let body: Vec<u8> = (0..1_000_000).map(|i: u32| (i * 7 % 251) as u8).collect();
    let head = format!(
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let (status, got) = response(&mut s);
    assert_eq!(status, 200);
    assert!(got == body, "echoed body differs");
    // A file goes out through the copy path (no splice under TLS).
    let path =
        std::env::temp_dir().join(format!("ringside-tls-{}-{backend:?}", std::process::id()));
    let body = body.repeat(3);
    std::fs::write(&path, &body).unwrap();
    let req = format!("GET /file?{} HTTP/1.1\r\nHost: t\r\n\r\n", path.display());
    s.write_all(req.as_bytes()).unwrap();
    let (status, got) = response(&mut s);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(status, 200);
    assert!(got == body, "file body differs");
    s.write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(response(&mut s), (200, b"hello".to_vec()));
}

/// Clients that stop mid-handshake, or never start one, hold only their
/// own connections: a full client is served while 50 of them wait.
fn stalled_handshakes_stall_nothing_else(backend: BackendChoice) {
    let c = certs();
    let srv = start_tls(backend, &c).unwrap();
    let cfg = client_config(&c);
    let mut stalled = Vec::new();
    for i in 0..50 {
        let mut sock = TcpStream::connect(srv.addr).unwrap();
        if i % 2 == 0 {
            // The first 40 bytes of a real ClientHello, then nothing.
            let mut conn = rustls::ClientConnection::new(
                cfg.clone(),
                ServerName::try_from("localhost").unwrap(),
            )
            .unwrap();
            let mut hello = Vec::new();
            conn.write_tls(&mut hello).unwrap();
            sock.write_all(&hello[..40]).unwrap();
        }
        stalled.push(sock);
    }
    for _ in 0..5 {
        let mut s = connect(&srv, &cfg);
        s.write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        assert_eq!(response(&mut s), (200, b"hello".to_vec()));
    }
    drop(stalled);
}

/// Garbage instead of a ClientHello ends that connection (with an alert)
/// and nothing else.
fn not_tls_is_refused(backend: BackendChoice) {
    let c = certs();
    let srv = start_tls(backend, &c).unwrap();
    let mut sock = TcpStream::connect(srv.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    sock.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got);
    // A TLS alert record (content type 21), never an HTTP response.
    assert!(got.is_empty() || got[0] == 21, "got {got:?}");
    let mut s = connect(&srv, &client_config(&c));
    s.write_all(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(response(&mut s), (200, b"hello".to_vec()));
}

fn tls_server_tests(backend: BackendChoice) {
    if backend == BackendChoice::Glommio {
        // glommio has no writability wait for TLS: refused at start.
        let err = start_tls(backend, &certs()).err().expect("refused");
        assert!(err.contains("TLS listeners need"), "{err}");
        return;
    }
    keepalive_and_pipelining(backend);
    large_bodies_both_ways(backend);
    stalled_handshakes_stall_nothing_else(backend);
    not_tls_is_refused(backend);
}

per_backend!(tls_server_tests);
