//! HTTP/3 against Caddy, a real HTTP/3 server (quic-go): the counts and
//! body bytes of `--h3` with several streams in flight per connection,
//! verification against Caddy's own CA, and a port where nothing listens.
//!
//! Caddy must be installed (`apt-get install caddy`): without it these
//! tests fail, they never skip. It runs in a temporary directory (its
//! HOME, data and storage), loopback only, with `tls internal` (its own
//! CA, never installed into the system's trust: `skip_install_trust`) and
//! is killed by pid when the test ends, panic or not.

mod common;

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bench, bench_json, bench_ok, field, num, u};

/// The document: 26 bytes.
const DOC: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

const CADDY: &str = "/usr/bin/caddy";

struct Caddy {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port free for both TCP and UDP on loopback a moment ago.
fn free_port() -> u16 {
    loop {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl Caddy {
    /// Caddy serving [`DOC`] at `/doc.txt` over HTTPS and HTTP/3, once it
    /// answers over HTTP/3.
    fn start(tag: &str) -> Caddy {
        assert!(
            Path::new(CADDY).exists(),
            "{CADDY} is needed for this test (apt-get install -y caddy)"
        );
        for _ in 0..5 {
            if let Some(c) = Caddy::start_on(tag, free_port()) {
                return c;
            }
        }
        panic!("caddy did not start");
    }

    fn start_on(tag: &str, port: u16) -> Option<Caddy> {
        let dir = std::env::temp_dir().join(format!("rb-caddy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("www")).unwrap();
        std::fs::write(dir.join("www/doc.txt"), DOC).unwrap();
        let d = dir.to_str().unwrap();
        // default_sni: a client sends no SNI for an IP address, and
        // Caddy 2.6 then finds no certificate for its QUIC listener.
        let conf = format!(
            "{{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\
             \tdefault_sni 127.0.0.1\n\tstorage file_system {d}/storage\n}}\n\
             https://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\ttls internal\n\
             \troot * {d}/www\n\tfile_server\n}}\n"
        );
        std::fs::write(dir.join("Caddyfile"), conf).unwrap();
        let log = std::fs::File::create(dir.join("caddy.log")).unwrap();
        let child = Command::new(CADDY)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(dir.join("Caddyfile"))
            .env("HOME", &dir)
            .env("XDG_DATA_HOME", &dir)
            .env("XDG_CONFIG_HOME", &dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {CADDY}: {e}"));
        let mut caddy = Caddy { child, port, dir };
        let url = caddy.url();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            if let Ok(Some(_)) = caddy.child.try_wait() {
                return None; // the port was taken meanwhile
            }
            let out = bench(&["--h3", "--insecure", "-q", "-n", "1", "-s", "1", &url]);
            if out.status.success() {
                return Some(caddy);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(caddy.dir.join("caddy.log")).unwrap_or_default();
        panic!("caddy on port {port} did not answer over HTTP/3:\n{log}");
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/doc.txt", self.port)
    }

    /// Caddy's local CA, which signed its certificate.
    fn ca(&self) -> String {
        let p = self.dir.join("storage/pki/authorities/local/root.crt");
        p.to_str().unwrap().to_string()
    }
}

#[test]
fn h3_counts_every_stream() {
    let caddy = Caddy::start("counts");
    let url = caddy.url();
    let r = bench_ok(&[
        "--h3",
        "--insecure",
        "-k",
        "-q",
        "-n",
        "200",
        "-c",
        "4",
        "--streams",
        "5",
        &url,
    ]);
    assert_eq!(num(&r, "Complete requests:"), 200, "{r}");
    assert_eq!(num(&r, "Failed requests:"), 0, "{r}");
    assert_eq!(num(&r, "Document Length:"), DOC.len() as u64, "{r}");
    assert_eq!(num(&r, "HTML transferred:"), 200 * DOC.len() as u64, "{r}");
    assert_eq!(num(&r, "Streams per connection:"), 5, "{r}");
    assert_eq!(num(&r, "Keep-Alive requests:"), 200, "{r}");
    assert_eq!(field(&r, "Server Software:"), "Caddy", "{r}");
    // QUIC, TLS and HTTP/3 framing come on top of the bodies.
    assert!(
        num(&r, "Total transferred:") > 200 * DOC.len() as u64,
        "{r}"
    );

    let v = bench_json(&[
        "--h3",
        "--insecure",
        "-n",
        "200",
        "-c",
        "4",
        "--streams",
        "5",
        &url,
    ]);
    assert_eq!(v["http_version"], "3", "{v}");
    assert_eq!(u(&v, &["streams"]), 5, "{v}");
    assert_eq!(u(&v, &["complete_requests"]), 200, "{v}");
    assert_eq!(u(&v, &["failed_requests"]), 0, "{v}");
    assert_eq!(u(&v, &["counts", "body_bytes"]), 200 * DOC.len() as u64);
    assert_eq!(v["counts"]["status_classes"][1], 200, "all 2xx: {v}");
    assert_eq!(u(&v, &["counts", "connections"]), 4, "{v}");
    assert_eq!(u(&v, &["counts", "tls_handshakes"]), 4, "{v}");
    assert_eq!(u(&v, &["counts", "h2_max_in_flight"]), 5, "{v}");
    assert_eq!(v["tls"]["alpn"], "h3", "{v}");
}

#[test]
fn h3_verifies_the_certificate() {
    let caddy = Caddy::start("verify");
    let url = caddy.url();
    let ca = caddy.ca();
    let v = bench_json(&["--h3", "--cacert", &ca, "-n", "20", "-c", "2", &url]);
    assert_eq!(u(&v, &["complete_requests"]), 20, "{v}");
    assert_eq!(u(&v, &["failed_requests"]), 0, "{v}");
    // Caddy's CA is in no trust store: without it, no connection.
    let out = bench(&["--h3", "-q", "-n", "4", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("UnknownIssuer") && err.contains("--insecure"),
        "{err}"
    );
}

#[test]
fn h3_to_a_port_nobody_listens_on_is_refused() {
    let port = free_port();
    let url = format!("https://127.0.0.1:{port}/");
    let out = bench(&["--h3", "--insecure", "-q", "-n", "3", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    // As ab: the errno (ECONNREFUSED, from ICMP port unreachable).
    assert_eq!(out.status.code(), Some(111), "{err}");
    assert!(err.contains("Connection refused"), "{err}");
}
