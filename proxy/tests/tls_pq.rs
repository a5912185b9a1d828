//! Post-quantum key exchange and certificate compression, against the real
//! binary: rustls clients that offer one group alone (the local openssl,
//! 3.0, has no ML-KEM and no RFC 8879), headless Chromium (Debian's
//! `chromium`) read from its net log, an HTTPS upstream that accepts only
//! X25519MLKEM768, and the bytes a handshake costs with and without a
//! compressed certificate chain. A missing openssl or chromium fails the
//! test.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

use rustls::compress::CertDecompressor;
use rustls::crypto::aws_lc_rs::{self, kx_group};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, NamedGroup, RootCertStore, ServerConfig};

use common::pki::Ca;
use common::{Ringside, TempDir};

/// The backends that serve TLS (glommio refuses TLS listeners).
const TLS_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

fn provider(groups: &[&'static dyn SupportedKxGroup]) -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        kx_groups: groups.to_vec(),
        ..aws_lc_rs::default_provider()
    })
}

fn roots(ca_pem: &Path) -> RootCertStore {
    let mut r = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca_pem).unwrap() {
        r.add(c.unwrap()).unwrap();
    }
    r
}

/// A client offering `groups` only and decompressing with `decompress`
/// only (none: it asks for no compressed certificate).
fn client(
    ca_pem: &Path,
    groups: &[&'static dyn SupportedKxGroup],
    decompress: &[&'static dyn CertDecompressor],
    alpn: &[u8],
) -> Arc<ClientConfig> {
    let mut c = ClientConfig::builder_with_provider(provider(groups))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots(ca_pem))
        .with_no_client_auth();
    c.cert_decompressors = decompress.to_vec();
    c.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(c)
}

/// A TCP stream that counts the bytes read from it.
struct Counting {
    tcp: TcpStream,
    read: usize,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.tcp.read(buf)?;
        self.read += n;
        Ok(n)
    }
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tcp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

/// A finished handshake: the connection, its socket, and how many bytes
/// the server sent for it.
fn handshake(at: SocketAddr, cfg: Arc<ClientConfig>, sni: &str) -> (ClientConnection, Counting) {
    let tcp = TcpStream::connect(at).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut sock = Counting { tcp, read: 0 };
    let name = ServerName::try_from(sni.to_owned()).unwrap();
    let mut conn = ClientConnection::new(cfg, name).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).unwrap();
    }
    (conn, sock)
}

/// GET `path` over HTTP/1.1 on a handshaken connection: the whole answer.
fn get(conn: &mut ClientConnection, sock: &mut Counting, path: &str) -> String {
    let mut s = rustls::Stream::new(conn, sock);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: pq.test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    // An EOF without close_notify is reported as an error after the data.
    let _ = s.read_to_end(&mut all);
    String::from_utf8_lossy(&all).into_owned()
}

/// The h2 preface and an empty SETTINGS: the first frame back must be the
/// server's SETTINGS (RFC 9113 §3.4).
fn h2_settings_frame_type(conn: &mut ClientConnection, sock: &mut Counting) -> u8 {
    let mut s = rustls::Stream::new(conn, sock);
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .unwrap();
    let mut head = [0u8; 9];
    s.read_exact(&mut head).unwrap();
    head[3]
}

/// A 2-certificate RSA-2048 chain as a public CA issues one (leaf with
/// SANs, key usages, AIA and a policy; then its issuer), made by openssl.
fn rsa_chain(dir: &TempDir) {
    let d = dir.path();
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .expect("openssl must be installed (run scripts/test.sh)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    dir.write(
        "leaf.ext",
        b"basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:pq.test,DNS:www.pq.test\n\
authorityInfoAccess=OCSP;URI:http://ocsp.issuer.test,caIssuers;URI:http://issuer.test/int.der\n\
certificatePolicies=2.23.140.1.2.1\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
    );
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "30",
        "-subj",
        "/C=US/O=Ringside Test Authority/CN=Ringside Test R1",
        "-addext",
        "basicConstraints=critical,CA:TRUE,pathlen:0",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=pq.test",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-set_serial",
        "0x4b1d5e",
        "-days",
        "30",
        "-out",
        "leaf.pem",
        "-extfile",
        "leaf.ext",
    ]);
    let chain = std::fs::read_to_string(d.join("leaf.pem")).unwrap()
        + &std::fs::read_to_string(d.join("ca.pem")).unwrap();
    dir.write("chain.pem", chain.as_bytes());
}

/// Two TLS listeners (certificate `chain.pem`), the second with HTTP/1.1
/// only; no session tickets, so that nothing but the handshake is read
/// before it ends.
fn site(dir: &TempDir, backend: &str) -> Ringside {
    std::fs::create_dir_all(dir.path().join("root")).unwrap();
    dir.write("root/index.html", b"hello over ML-KEM\n");
    let cfg = dir.write(
        "ringside.toml",
        br#"[server]
listen = [
  { addr = "127.0.0.1:0", tls = { cert = "chain.pem", key = "leaf.key" } },
  { addr = "127.0.0.2:0", tls = { cert = "chain.pem", key = "leaf.key" }, http2 = false },
]
root = "root"
[tls]
tickets = false
"#,
    );
    Ringside::as_configured(backend, &cfg)
}

fn group(conn: &ClientConnection) -> NamedGroup {
    conn.negotiated_key_exchange_group().unwrap().name()
}

#[test]
fn clients_get_the_group_they_offer_post_quantum_first() {
    let dir = TempDir::new("tls-pq-groups");
    rsa_chain(&dir);
    let ca = dir.path().join("ca.pem");
    let none: &[&dyn CertDecompressor] = &[];
    for backend in TLS_BACKENDS {
        let srv = site(&dir, backend);
        // X25519MLKEM768 alone, over HTTP/1.1 and h2.
        let pq = client(&ca, &[kx_group::X25519MLKEM768], none, b"http/1.1");
        let (mut conn, mut sock) = handshake(srv.addr, pq, "pq.test");
        assert_eq!(group(&conn), NamedGroup::X25519MLKEM768, "{backend}");
        let answer = get(&mut conn, &mut sock, "/index.html");
        assert!(answer.starts_with("HTTP/1.1 200"), "{backend}: {answer}");
        assert!(
            answer.ends_with("hello over ML-KEM\n"),
            "{backend}: {answer}"
        );
        let pq_h2 = client(&ca, &[kx_group::X25519MLKEM768], none, b"h2");
        let (mut conn, mut sock) = handshake(srv.addr, pq_h2, "pq.test");
        assert_eq!(group(&conn), NamedGroup::X25519MLKEM768, "{backend} h2");
        assert_eq!(conn.alpn_protocol(), Some(&b"h2"[..]));
        assert_eq!(h2_settings_frame_type(&mut conn, &mut sock), 4, "{backend}");

        // A browser's order (hybrid first, X25519 beside it): the hybrid.
        let browser = client(
            &ca,
            &[kx_group::X25519MLKEM768, kx_group::X25519],
            none,
            b"http/1.1",
        );
        let (conn, _) = handshake(srv.addr, browser, "pq.test");
        assert_eq!(group(&conn), NamedGroup::X25519MLKEM768, "{backend}");
        // Classical clients still get what they offer.
        for (offer, want) in [
            (kx_group::X25519, NamedGroup::X25519),
            (kx_group::SECP256R1, NamedGroup::secp256r1),
        ] {
            let c = client(&ca, &[offer], none, b"http/1.1");
            let (mut conn, mut sock) = handshake(srv.addr, c, "pq.test");
            assert_eq!(group(&conn), want, "{backend}");
            let answer = get(&mut conn, &mut sock, "/index.html");
            assert!(answer.starts_with("HTTP/1.1 200"), "{backend}: {answer}");
        }
        srv.stop();
    }
}

#[test]
fn certificate_chain_is_compressed_when_the_client_offers_it() {
    let dir = TempDir::new("tls-pq-compress");
    rsa_chain(&dir);
    let ca = dir.path().join("ca.pem");
    let brotli: &[&dyn CertDecompressor] = &[rustls::compress::BROTLI_DECOMPRESSOR];
    let zlib: &[&dyn CertDecompressor] = &[rustls::compress::ZLIB_DECOMPRESSOR];
    let none: &[&dyn CertDecompressor] = &[];
    for backend in TLS_BACKENDS {
        let srv = site(&dir, backend);
        let bytes = |decompress: &[&'static dyn CertDecompressor]| {
            let c = client(&ca, &[kx_group::X25519], decompress, b"http/1.1");
            let (mut conn, mut sock) = handshake(srv.addr, c, "pq.test");
            let n = sock.read;
            // The chain was verified against the CA whatever its encoding,
            // and the connection carries a request.
            let answer = get(&mut conn, &mut sock, "/index.html");
            assert!(answer.starts_with("HTTP/1.1 200"), "{backend}: {answer}");
            n
        };
        let plain = bytes(none);
        let br = bytes(brotli);
        let z = bytes(zlib);
        // Twice: the second comes from the config's compression cache.
        assert_eq!(bytes(brotli), br, "{backend}");
        eprintln!(
            "{backend}: server handshake bytes for a 2-certificate RSA-2048 chain: \
             uncompressed {plain}, brotli {br} (-{}), zlib {z} (-{})",
            plain - br,
            plain - z
        );
        // Two RSA certificates hold about 1 KB of incompressible keys and
        // signatures; the rest (names, OIDs, extensions) compresses.
        assert!(br + 150 < plain, "{backend}: brotli {br} vs {plain}");
        assert!(z + 100 < plain, "{backend}: zlib {z} vs {plain}");
        srv.stop();
    }
}

/// An HTTPS origin that accepts X25519MLKEM768 only, answering every
/// request with `ok` and closing; sends each connection's group.
fn pq_only_origin(dir: &TempDir) -> (SocketAddr, Receiver<NamedGroup>) {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.path().join("origin.pem"))
            .unwrap()
            .map(Result::unwrap)
            .collect();
    let key = PrivateKeyDer::from_pem_file(dir.path().join("origin.key")).unwrap();
    let mut cfg = ServerConfig::builder_with_provider(provider(&[kx_group::X25519MLKEM768]))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut tcp) = c else { return };
            let mut conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
            let mut s = rustls::Stream::new(&mut conn, &mut tcp);
            let mut head = Vec::new();
            let mut b = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            if head.is_empty() {
                continue;
            }
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
            s.conn.send_close_notify();
            let _ = s.flush();
            if let Some(g) = conn.negotiated_key_exchange_group() {
                if tx.send(g.name()).is_err() {
                    return;
                }
            }
        }
    });
    (at, rx)
}

#[test]
fn https_upstream_negotiates_x25519mlkem768() {
    let dir = TempDir::new("tls-pq-upstream");
    let pki = Ca::new("ringside pq CA");
    pki.leaf(&dir, "origin", "origin", &["origin.test"]);
    let ca = dir.write("ca.pem", pki.pem().as_bytes());
    let (origin, groups) = pq_only_origin(&dir);
    for backend in TLS_BACKENDS {
        let cfg = dir.write(
            "front.toml",
            format!(
                "[upstream.o]\nservers = [\"{origin}\"]\ntls = true\ntls_ca = {:?}\n\
                 tls_sni = \"origin.test\"\nmax_fails = 0\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n",
                ca.to_str().unwrap()
            )
            .as_bytes(),
        );
        let f = Ringside::configured(backend, &cfg);
        for h2 in [false, true] {
            let url = format!("http://{}/x", f.addr);
            let (status, _, body) = common::h2::fetch_as(h2, &url, &[]);
            assert_eq!(
                (status, &body[..]),
                (200, &b"ok\n"[..]),
                "{backend} h2={h2}"
            );
            let got = groups.recv_timeout(Duration::from_secs(20)).unwrap();
            assert_eq!(got, NamedGroup::X25519MLKEM768, "{backend} h2={h2}");
        }
        f.stop();
    }
}

/// Chromium's X25519MLKEM768 code point (draft-ietf-tls-ecdhe-mlkem), as
/// its net log writes `key_exchange_group`.
const X25519MLKEM768: u64 = 0x11ec;

/// Loads `url` in headless Chromium, writing its net log to `log`:
/// (the page's DOM, each TLS connection's (key_exchange_group, next_proto)
/// from the log's SSL_CONNECT end events).
fn chromium(dir: &TempDir, tag: &str, url: &str) -> (String, Vec<(u64, String)>) {
    let log: PathBuf = dir.path().join(format!("netlog-{tag}.json"));
    let profile = dir.path().join(format!("chromium-{tag}"));
    let out = Command::new("chromium")
        .args([
            "--headless=new",
            // Tests run as root, where Chromium's sandbox cannot start.
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--ignore-certificate-errors",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--log-net-log={}", log.display()))
        .arg(url)
        .output()
        .expect("chromium must be installed (run scripts/test.sh)");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| {
        panic!(
            "no net log from chromium ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let connect = v["constants"]["logEventTypes"]["SSL_CONNECT"]
        .as_u64()
        .expect("SSL_CONNECT in the net log's constants");
    let end = v["constants"]["logEventPhase"]["PHASE_END"]
        .as_u64()
        .unwrap_or(2);
    let tls = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(connect) && e["phase"].as_u64() == Some(end))
        .filter_map(|e| {
            let p = &e["params"];
            Some((
                p["key_exchange_group"].as_u64()?,
                p["next_proto"].as_str().unwrap_or("").to_owned(),
            ))
        })
        .collect();
    (dom, tls)
}

#[test]
fn chromium_negotiates_x25519mlkem768() {
    let dir = TempDir::new("tls-pq-chromium");
    rsa_chain(&dir);
    for backend in TLS_BACKENDS {
        let mut srv = site(&dir, backend);
        let h1_only = srv.next_listener();
        for (at, proto) in [(srv.addr, "h2"), (h1_only, "http/1.1")] {
            let url = format!("https://{at}/index.html");
            let (dom, tls) = chromium(&dir, &format!("{backend}-{}", at.port()), &url);
            assert!(
                dom.contains("hello over ML-KEM"),
                "{backend} {proto}: {dom}"
            );
            assert!(
                !tls.is_empty(),
                "{backend} {proto}: no TLS connection in the net log"
            );
            for (group, next) in &tls {
                assert_eq!(*group, X25519MLKEM768, "{backend} {proto}: {tls:?}");
                assert_eq!(next, proto, "{backend}: {tls:?}");
            }
        }
        srv.stop();
    }
}
