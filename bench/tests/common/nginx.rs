//! nginx as a real TLS and HTTP/2 peer: started on a free port (nginx
//! cannot report a port-0 bind) in a temporary prefix, with certificates
//! from a test CA made by rcgen (no key is ever committed); stopped by pid
//! on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

pub struct Nginx {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bin() -> &'static str {
    if Path::new("/usr/sbin/nginx").exists() {
        "/usr/sbin/nginx"
    } else {
        "nginx"
    }
}

/// The document every test server serves at `/`.
pub const DOC: &[u8] = b"hello over tls and h2, 40 bytes long...\n";

/// Writes a CA (`ca.pem`) and a leaf for localhost and 127.0.0.1 signed by
/// it (`leaf.pem` with the chain, `leaf.key`) into `dir`.
fn make_certs(dir: &Path) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ringside-bench test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca.self_signed(&ca_key).unwrap();
    let mut leaf =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &ca, &ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("leaf.pem"), cert.pem() + &ca.pem()).unwrap();
    std::fs::write(dir.join("leaf.key"), key.serialize_pem()).unwrap();
}

/// Starts nginx serving [`DOC`] with `listen` (e.g. "ssl", "ssl http2",
/// "http2") on a fresh port, in a fresh prefix with certificates.
pub fn start(tag: &str, listen: &str) -> Nginx {
    start_with(tag, listen, 100_000)
}

/// As [`start`], closing each connection after `keepalive_requests`
/// requests (with GOAWAY over HTTP/2).
pub fn start_with(tag: &str, listen: &str, keepalive_requests: u64) -> Nginx {
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // The port was free a moment ago; another process may have taken
        // it meanwhile: then nginx cannot bind it, and another is tried.
        if let Some(ng) = start_on(tag, listen, keepalive_requests, port) {
            return ng;
        }
    }
    panic!("nginx did not start");
}

/// nginx on `port`, once it serves there; `None` when it cannot bind it.
///
/// Ready means nginx wrote its pid file, which it does only after opening
/// its listeners (and it exits when a bind fails). A connect that
/// succeeds is no sign: it reaches whatever listens on the port, and when
/// another process took the port between the pick and nginx's bind (a
/// suite running beside this one), the test would run against that
/// server, until it went away and every connect after was refused.
pub fn start_on(tag: &str, listen: &str, keepalive_requests: u64, port: u16) -> Option<Nginx> {
    let dir = std::env::temp_dir().join(format!("rb-nginx-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("www/index.html"), DOC).unwrap();
    make_certs(&dir);
    let d = dir.to_str().unwrap();
    let pid_file = dir.join("logs/nginx.pid");
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/logs/nginx.pid;\n\
         error_log {d}/logs/error.log;\nevents {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  keepalive_requests {keepalive_requests};\n\
         client_body_temp_path {d}/logs;\n\
         server {{\n    listen 127.0.0.1:{port} {listen};\n\
         ssl_certificate {d}/leaf.pem;\n    ssl_certificate_key {d}/leaf.key;\n\
         http2_max_concurrent_streams 64;\n    root {d}/www;\n  }}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let mut child = Command::new(bin())
        .args(["-p", d, "-c", path.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx is needed for this test");
    let me = child.id().to_string();
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            break; // the port was taken: no pid file is written
        }
        if std::fs::read_to_string(&pid_file).is_ok_and(|p| p.trim() == me) {
            return Some(Nginx { child, port, dir });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    None
}

impl Nginx {
    pub fn ca(&self) -> String {
        self.dir.join("ca.pem").to_str().unwrap().to_string()
    }
}
