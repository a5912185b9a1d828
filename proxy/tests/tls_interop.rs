//! TLS termination against real peers: curl and `openssl s_client` talk to
//! ringside's https listener (certificates made at test time with rcgen,
//! signed by a test CA): static files, ALPN, SNI picking the vhost's
//! certificate, session resumption, `[tls]` refusals, https redirects and
//! HSTS, and certificate reloads on SIGHUP. A missing curl or openssl fails
//! the test.

mod common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use common::pki::Ca;
use common::{Ringside, TempDir, BIN};

/// The backends that serve TLS (glommio refuses TLS listeners).
const TLS_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

const INDEX: &[u8] = b"<h1>hello over tls</h1>\n";

/// A test CA in a temporary directory that also holds the leaves, the
/// document root and the config.
struct Pki {
    dir: TempDir,
    ca: Ca,
    ca_pem: String,
}

impl Pki {
    fn new(tag: &str) -> Pki {
        let dir = TempDir::new(tag);
        let ca = Ca::new("ringside tls_interop CA");
        let ca_pem = path_text(&dir.write("ca.pem", ca.pem().as_bytes()));
        Pki { dir, ca, ca_pem }
    }

    /// Writes `STEM.pem` (a new leaf for `names` with common name `cn`,
    /// then the CA) and `STEM.key`.
    fn leaf(&self, stem: &str, cn: &str, names: &[&str]) {
        self.ca.leaf(&self.dir, stem, cn, names);
    }
}

fn path_text(p: &Path) -> String {
    p.to_str().expect("a UTF-8 temp dir").to_owned()
}

/// A config with a plain listener (127.0.0.2) and a TLS one (127.0.0.1),
/// the vhost a.test / *.b.test with its own certificate, a redirect and
/// HSTS, and `tls` as the `[tls]` section's body.
fn config(tls: &str) -> String {
    format!(
        r#"
[server]
listen = ["127.0.0.2:0", {{ addr = "127.0.0.1:0", tls = {{ cert = "default.pem", key = "default.key" }} }}]
root = "root"

[admin]
listen = "127.0.0.1:0"

[tls]
{tls}

[[vhost]]
names = ["a.test", "*.b.test"]
tls = {{ cert = "a.pem", key = "a.key" }}
https_redirect = true
hsts = "max-age=600"
"#
    )
}

/// Bytes that no off-by-one or reordering keeps equal.
fn big_file() -> Vec<u8> {
    (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

/// A running ringside with its certificates and both listeners.
struct Site {
    pki: Pki,
    srv: Ringside,
    plain: SocketAddr,
    tls: SocketAddr,
}

/// The CA, the certificates (the default one names default.test, the
/// vhost's a.test and *.b.test), the root and the config file.
fn prepare(tag: &str, tls: &str) -> (Pki, PathBuf) {
    let pki = Pki::new(&format!("tls-{tag}"));
    pki.leaf("default", "default leaf", &["default.test"]);
    pki.leaf("a", "a.test v1", &["a.test", "*.b.test"]);
    pki.dir.write("root/index.html", INDEX);
    pki.dir.write("root/big.bin", &big_file());
    let cfg = pki.dir.write("ringside.toml", config(tls).as_bytes());
    (pki, cfg)
}

/// Starts ringside on `backend` with `[tls]` body `tls`.
fn start(backend: &str, tls: &str) -> Site {
    let (pki, cfg) = prepare(backend, tls);
    let mut srv = Ringside::as_configured(backend, &cfg);
    assert!(
        srv.banner.contains("on http://127.0.0.2:"),
        "the plain listener first: {}",
        srv.banner
    );
    let plain = srv.addr;
    let tls = srv.next_listener();
    assert_eq!(tls.ip().to_string(), "127.0.0.1");
    srv.admin();
    Site {
        pki,
        srv,
        plain,
        tls,
    }
}

impl Site {
    /// curl arguments that reach `host` on the TLS listener, verifying
    /// against the test CA, and the URL of `path` there.
    fn https(&self, host: &str, path: &str) -> Vec<String> {
        let port = self.tls.port();
        vec![
            "--cacert".into(),
            self.pki.ca_pem.clone(),
            "--resolve".into(),
            format!("{host}:{port}:127.0.0.1"),
            format!("https://{host}:{port}{path}"),
        ]
    }

    /// The same for the plain listener.
    fn http(&self, host: &str, path: &str) -> Vec<String> {
        let port = self.plain.port();
        vec![
            "--resolve".into(),
            format!("{host}:{port}:127.0.0.2"),
            format!("http://{host}:{port}{path}"),
        ]
    }

    /// Checks that the worker counted `n` handshakes of `kind`, waiting
    /// for it a while: the worker counts a failure after sending its alert,
    /// so the client may be gone first.
    fn expect_handshakes(&mut self, kind: &str, n: u64) {
        let series = format!("ringside_tls_handshakes_total{{worker=\"0\",kind=\"{kind}\"}}");
        let end = Instant::now() + Duration::from_secs(10);
        while self.srv.metric(&series) < n as f64 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let got = self.srv.metric(&series);
        assert_eq!(got, n as f64, "{kind} handshakes; {}", self.srv.banner);
    }

    /// The subject of the certificate the TLS listener presents for `sni`
    /// (none sent for `None`), as `openssl x509 -subject` prints it.
    fn subject(&self, sni: Option<&str>) -> String {
        let mut args = vec!["-CAfile", &self.pki.ca_pem, "-verify_return_error"];
        match sni {
            Some(name) => args.extend(["-servername", name]),
            None => args.push("-noservername"),
        }
        let out = s_client(self.tls, &args, b"");
        assert!(out.status.success(), "s_client {sni:?}: {}", text(&out));
        let x509 = feed(
            Command::new("openssl").args(["x509", "-noout", "-subject"]),
            &out.stdout,
        );
        assert!(x509.status.success(), "openssl x509: {}", text(&x509));
        String::from_utf8_lossy(&x509.stdout).trim().to_owned()
    }
}

/// Runs `cmd` with `input` on its stdin, bounded so a hung peer fails the
/// test.
fn feed(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} must be installed (scripts/test.sh): {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| {
            // SAFETY: kill on our own child's pid, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{cmd:?} did not finish within 30s")
        })
}

/// Real openssl s_client connected to `addr`.
fn s_client(addr: SocketAddr, args: &[&str], input: &[u8]) -> Output {
    feed(
        Command::new("openssl")
            .args(["s_client", "-connect", &addr.to_string()])
            .args(args),
        input,
    )
}

/// stdout then stderr, for assertions and their messages.
fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Real curl, silent but for errors, bounded.
fn curl<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    // HTTP/1.1 over TLS here: curl would choose h2 by ALPN, which
    // h2_interop.rs tests.
    Command::new("curl")
        .args(["-sS", "--max-time", "20", "--http1.1"])
        .args(args)
        .output()
        .expect("curl must be installed (run scripts/test.sh)")
}

/// curl with `-D -` that must succeed: (head, body, stderr).
fn curl_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (String, Vec<u8>, String) {
    let mut all: Vec<&std::ffi::OsStr> = vec!["-D".as_ref(), "-".as_ref()];
    all.extend(args.iter().map(AsRef::as_ref));
    let out = curl(&all);
    assert!(out.status.success(), "curl {all:?}: {}", text(&out));
    let at = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    (
        String::from_utf8_lossy(&out.stdout[..at]).into_owned(),
        out.stdout[at..].to_vec(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The value of header `name` in a response head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
}

/// `extra` (space-separated) before `base`.
fn args(base: Vec<String>, extra: &str) -> Vec<String> {
    extra
        .split_whitespace()
        .map(str::to_owned)
        .chain(base)
        .collect()
}

/// The status code of a response head.
fn status(head: &str) -> u16 {
    head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// One kept-alive TLS connection from openssl s_client, for requests
/// across a reload.
struct Session {
    child: Child,
    stdin: ChildStdin,
    chunks: Receiver<Vec<u8>>,
    buf: Vec<u8>,
}

impl Session {
    fn open(addr: SocketAddr, ca: &str, sni: &str) -> Session {
        let mut child = Command::new("openssl")
            .args(["s_client", "-quiet", "-verify_return_error"])
            .args(["-connect", &addr.to_string(), "-servername", sni])
            .args(["-CAfile", ca])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl must be installed (run scripts/test.sh)");
        let stdin = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let (tx, chunks) = channel();
        std::thread::spawn(move || {
            let mut b = [0u8; 16384];
            while let Ok(n @ 1..) = out.read(&mut b) {
                if tx.send(b[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Session {
            child,
            stdin,
            chunks,
            buf: Vec::new(),
        }
    }

    /// GET `path` with Host `host` on this connection: (head, body).
    fn get(&mut self, host: &str, path: &str) -> (String, Vec<u8>) {
        write!(self.stdin, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
        self.stdin.flush().unwrap();
        loop {
            if let Some(at) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..at + 4]).into_owned();
                let len: usize = header(&head, "content-length")
                    .expect("a Content-Length")
                    .parse()
                    .unwrap();
                if self.buf.len() >= at + 4 + len {
                    let body = self.buf[at + 4..at + 4 + len].to_vec();
                    self.buf.drain(..at + 4 + len);
                    return (head, body);
                }
            }
            let chunk = self
                .chunks
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|e| {
                    panic!(
                        "kept-alive connection ended or stalled ({e}): {:?}",
                        self.buf
                    )
                });
            self.buf.extend_from_slice(&chunk);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const DEFAULT_TLS: &str = "unknown_name = \"default\"\nmin_version = \"1.2\"\ntickets = true";

#[test]
fn curl_static_files_over_https() {
    for backend in TLS_BACKENDS {
        let mut site = start(backend, DEFAULT_TLS);
        let index = site.https("a.test", "/index.html");

        let (head, body, log) = curl_ok(&args(index.clone(), "-v"));
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(body, INDEX, "{backend}");
        assert!(
            log.contains("ALPN: server accepted http/1.1"),
            "{backend}: ALPN http/1.1 negotiated: {log}"
        );
        assert!(
            log.contains("SSL certificate verify ok"),
            "{backend}: {log}"
        );

        // Far more than one TLS record and the socket buffer: every byte
        // goes through rustls, none by sendfile/splice around it.
        let (head, body, _) = curl_ok(&site.https("a.test", "/big.bin"));
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert!(body == big_file(), "{backend}: big.bin differs");
        // From an odd offset, over several of the 64 KiB pieces a file is
        // read in: each lands where the kernel copies fastest, and the
        // bytes before it never go out.
        let big = site.https("a.test", "/big.bin");
        let (head, body, _) = curl_ok(&args(big, "-r 1001-300000"));
        assert_eq!(status(&head), 206, "{backend}: {head}");
        assert!(
            body == big_file()[1001..300001],
            "{backend}: the range differs"
        );

        let out = curl(&args(index.clone(), "-I"));
        let head = String::from_utf8_lossy(&out.stdout);
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(
            header(&head, "content-length"),
            Some(INDEX.len().to_string()),
            "{backend}: {head}"
        );
        assert!(head.ends_with("\r\n\r\n"), "{backend}: no body: {head:?}");

        let (head, body, _) = curl_ok(&args(index.clone(), "-r 5-14"));
        assert_eq!(status(&head), 206, "{backend}: {head}");
        assert_eq!(
            header(&head, "content-range"),
            Some(format!("bytes 5-14/{}", INDEX.len())),
            "{backend}: {head}"
        );
        assert_eq!(body, &INDEX[5..15], "{backend}");

        let file = path_text(&site.pki.dir.path().join("root/index.html"));
        let (head, body, _) = curl_ok(&args(index.clone(), &format!("-z {file}")));
        assert_eq!(status(&head), 304, "{backend}: {head}");
        assert!(body.is_empty(), "{backend}");

        // Two URLs in one invocation share one connection (and handshake).
        let second = format!("https://a.test:{}/big.bin", site.tls.port());
        let mut two = args(index, "-v -o /dev/null -o /dev/null -w %{num_connects},");
        two.push(second);
        let out = curl(&two);
        assert!(out.status.success(), "{backend}: {}", text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "1,0,",
            "{backend}: connections opened per URL"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Re-using existing connection"),
            "{backend}: {}",
            text(&out)
        );

        // Seven curl connections, each one full handshake; nothing failed.
        site.expect_handshakes("full", 7);
        site.expect_handshakes("resumed", 0);
        site.expect_handshakes("failed", 0);
        assert_eq!(
            site.srv
                .metric("ringside_tls_record_path{path=\"userspace\"}"),
            1.0,
            "{backend}"
        );
        site.srv.stop();
    }
}

#[test]
fn sni_picks_the_vhost_certificate() {
    for backend in TLS_BACKENDS {
        let site = start(backend, DEFAULT_TLS);
        // curl checks the chain against the CA and the name against the
        // served certificate, so a wrong certificate fails it.
        for host in ["a.test", "x.b.test", "default.test"] {
            let (head, body, log) = curl_ok(&args(site.https(host, "/index.html"), "-v"));
            assert_eq!(status(&head), 200, "{backend} {host}: {head}");
            assert_eq!(body, INDEX, "{backend} {host}");
            let want = if host == "default.test" {
                "subject: CN=default leaf"
            } else {
                "subject: CN=a.test v1"
            };
            assert!(log.contains(want), "{backend} {host}: {log}");
        }
        let a = "subject=CN = a.test v1";
        let default = "subject=CN = default leaf";
        for (sni, want) in [
            (Some("a.test"), a),
            (Some("A.TEST"), a),
            (Some("x.b.test"), a),
            // A wildcard covers one label only.
            (Some("y.x.b.test"), default),
            (Some("b.test"), default),
            (Some("unknown.test"), default),
            (None, default),
        ] {
            assert_eq!(site.subject(sni), want, "{backend} SNI {sni:?}");
        }
        site.srv.stop();
    }
}

#[test]
fn refused_unknown_names_and_tls12() {
    let strict = "unknown_name = \"refuse\"\nmin_version = \"1.3\"\ntickets = true";
    for backend in TLS_BACKENDS {
        let mut site = start(backend, strict);
        // A name no vhost has: the handshake fails (curl: SSL connect error).
        let out = curl(&site.https("default.test", "/index.html"));
        assert_eq!(out.status.code(), Some(35), "{backend}: {}", text(&out));
        let out = s_client(site.tls, &["-noservername"], b"");
        assert!(!out.status.success(), "{backend}: no SNI: {}", text(&out));
        assert!(!text(&out).contains("BEGIN CERTIFICATE"), "{backend}");
        // TLS 1.2 is below min_version.
        let ca = site.pki.ca_pem.clone();
        let a = ["-servername", "a.test", "-CAfile", &ca];
        let out = s_client(site.tls, &[&a[..], &["-tls1_2"]].concat(), b"");
        assert!(!out.status.success(), "{backend}: TLS 1.2: {}", text(&out));
        assert!(!text(&out).contains("New, TLSv1.2"), "{backend}");
        let out = curl(&args(site.https("a.test", "/index.html"), "--tls-max 1.2"));
        assert_eq!(out.status.code(), Some(35), "{backend}: {}", text(&out));
        site.expect_handshakes("failed", 4);
        // The vhost's name over TLS 1.3 still works.
        let out = s_client(site.tls, &[&a[..], &["-verify_return_error"]].concat(), b"");
        assert!(out.status.success(), "{backend}: {}", text(&out));
        assert!(text(&out).contains("New, TLSv1.3"), "{backend}");
        let (head, body, _) = curl_ok(&site.https("x.b.test", "/index.html"));
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(body, INDEX, "{backend}");
        site.expect_handshakes("full", 2);
        site.srv.stop();
    }
}

#[test]
fn openssl_alpn_and_session_resumption() {
    let request = b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    for backend in TLS_BACKENDS {
        let mut site = start(backend, DEFAULT_TLS);
        for (version, flag) in [("TLSv1.3", None), ("TLSv1.2", Some("-tls1_2"))] {
            let sess = path_text(&site.pki.dir.path().join(format!("{version}.sess")));
            let mut common = vec!["-servername", "a.test", "-alpn", "http/1.1"];
            common.extend(["-CAfile", &site.pki.ca_pem, "-verify_return_error"]);
            common.extend(["-ign_eof"]);
            common.extend(flag);
            // A TLS 1.3 ticket comes after the handshake: read a whole
            // response (to the close) before the session is saved.
            // (Its exit status is not checked here: see
            // `connection_close_sends_close_notify`.)
            let first = s_client(
                site.tls,
                &[&common[..], &["-sess_out", &sess]].concat(),
                request,
            );
            let out = text(&first);
            assert!(out.contains(&format!("New, {version}")), "{backend}: {out}");
            assert!(out.contains("ALPN protocol: http/1.1"), "{backend}: {out}");
            assert!(out.contains("HTTP/1.1 200 OK"), "{backend}: {out}");
            assert!(out.contains("<h1>hello over tls</h1>"), "{backend}: {out}");

            let again = s_client(
                site.tls,
                &[&common[..], &["-sess_in", &sess]].concat(),
                request,
            );
            let out = text(&again);
            assert!(
                out.contains(&format!("Reused, {version}")),
                "{backend}: {out}"
            );
            assert!(out.contains("HTTP/1.1 200 OK"), "{backend}: {out}");
        }
        site.expect_handshakes("full", 2);
        site.expect_handshakes("resumed", 2);
        site.expect_handshakes("failed", 0);
        site.srv.stop();
    }
}

#[test]
fn https_redirect_and_hsts() {
    for backend in TLS_BACKENDS {
        let site = start(backend, DEFAULT_TLS);
        let tls_port = site.tls.port();
        for (host, extra, status) in [
            ("a.test", "", 301),
            ("a.test", "-I", 301),
            ("x.b.test", "", 301),
            ("a.test", "-d k=v", 308),
            ("a.test", "-X DELETE", 308),
        ] {
            let out = curl(&args(site.http(host, "/x?y=1"), &format!("-D - {extra}")));
            let head = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{backend}: {}", text(&out));
            assert!(
                head.starts_with(&format!("HTTP/1.1 {status}")),
                "{backend} {host} {extra:?}: {head}"
            );
            assert_eq!(
                header(&head, "location"),
                Some(format!("https://{host}:{tls_port}/x?y=1")),
                "{backend} {host} {extra:?}"
            );
            // HSTS is for https responses only (RFC 6797 §7.2).
            assert_eq!(
                header(&head, "strict-transport-security"),
                None,
                "{backend}"
            );
        }
        // curl follows it to the file over https.
        let mut follow = site.http("a.test", "/index.html");
        follow.extend(site.https("a.test", "/"));
        follow.pop();
        let out = curl(&args(follow, "-L -w %{num_redirects},%{url_effective}"));
        assert!(out.status.success(), "{backend}: {}", text(&out));
        let want = format!("1,https://a.test:{tls_port}/index.html");
        assert_eq!(out.stdout, [INDEX, want.as_bytes()].concat(), "{backend}");
        for host in ["a.test", "x.b.test"] {
            let (head, _, _) = curl_ok(&site.https(host, "/index.html"));
            assert_eq!(
                header(&head, "strict-transport-security").as_deref(),
                Some("max-age=600"),
                "{backend} {host}: {head}"
            );
        }
        // Hosts no vhost names: neither redirected nor given HSTS.
        let (head, body, _) = curl_ok(&site.https("default.test", "/index.html"));
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(
            header(&head, "strict-transport-security"),
            None,
            "{backend}"
        );
        assert_eq!(body, INDEX);
        let (head, body, _) = curl_ok(&site.http("other.test", "/index.html"));
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(
            header(&head, "strict-transport-security"),
            None,
            "{backend}"
        );
        assert_eq!(header(&head, "location"), None, "{backend}");
        assert_eq!(body, INDEX);
        site.srv.stop();
    }
}

#[test]
fn sighup_reloads_certificates_and_keeps_them_on_a_broken_file() {
    for backend in TLS_BACKENDS {
        let mut site = start(backend, DEFAULT_TLS);
        let mut kept = Session::open(site.tls, &site.pki.ca_pem, "a.test");
        let (head, body) = kept.get("a.test", "/index.html");
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(body, INDEX);
        assert_eq!(site.subject(Some("a.test")), "subject=CN = a.test v1");

        site.pki.leaf("a", "a.test v2", &["a.test", "*.b.test"]);
        site.srv.signal(libc::SIGHUP);
        site.srv.wait_reloads("ok", 1);
        assert_eq!(
            site.subject(Some("a.test")),
            "subject=CN = a.test v2",
            "{backend}: new handshakes get the new certificate"
        );
        assert_eq!(site.subject(Some("x.b.test")), "subject=CN = a.test v2");
        assert_eq!(site.subject(None), "subject=CN = default leaf");
        let (head, body) = kept.get("a.test", "/index.html");
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(body, INDEX, "{backend}: the open connection goes on");

        // A garbage certificate, then a key that is not the certificate's:
        // both refused, the v2 certificate keeps serving.
        let cert = site.pki.dir.path().join("a.pem");
        let good_cert = std::fs::read(&cert).unwrap();
        site.pki
            .dir
            .write("a.pem", b"-----BEGIN CERTIFICATE-----\nnot one\n");
        site.srv.signal(libc::SIGHUP);
        site.srv.wait_reloads("failed", 1);
        assert_eq!(site.subject(Some("a.test")), "subject=CN = a.test v2");

        let key = site.pki.dir.path().join("a.key");
        site.pki.leaf("stray", "stray", &["a.test"]);
        std::fs::write(&cert, good_cert).unwrap();
        std::fs::copy(site.pki.dir.path().join("stray.key"), &key).unwrap();
        site.srv.signal(libc::SIGHUP);
        site.srv.wait_reloads("failed", 2);
        assert_eq!(site.subject(Some("a.test")), "subject=CN = a.test v2");
        let (head, body, _) = curl_ok(&site.https("a.test", "/index.html"));
        assert_eq!(status(&head), 200, "{backend}: {head}");
        assert_eq!(body, INDEX);
        assert_eq!(
            site.srv.metric("ringside_reloads_total{result=\"ok\"}"),
            1.0,
            "{backend}"
        );
        drop(kept);
        site.srv.stop();
    }
}

#[test]
fn glommio_refuses_tls_listeners_at_start() {
    let (_pki, cfg) = prepare("glommio", DEFAULT_TLS);
    let out = feed(
        Command::new(BIN)
            .args(["--workers", "1", "--backend", "glommio", "--config"])
            .arg(&cfg),
        b"",
    );
    let all = text(&out);
    assert!(!out.status.success(), "glommio started with TLS: {all}");
    assert!(!all.contains("ringside: serving"), "{all}");
    assert!(all.contains("TLS listeners need"), "{all}");
}

/// A response to `Connection: close` over TLS ends with close_notify before
/// the TCP close (RFC 8446 §6.1, RFC 9112 §9.8), which tells the client the
/// stream was not truncated. OpenSSL 3 reports a bare FIN as "unexpected
/// eof while reading", answers with a decode_error alert and exits 1.
#[test]
fn connection_close_sends_close_notify() {
    let request = b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    for backend in TLS_BACKENDS {
        let site = start(backend, DEFAULT_TLS);
        for flag in ["-tls1_3", "-tls1_2"] {
            let a = ["-servername", "a.test", "-ign_eof", "-msg", flag];
            let out = s_client(site.tls, &a, request);
            let all = text(&out);
            assert!(all.contains("HTTP/1.1 200 OK"), "{backend} {flag}: {all}");
            assert!(
                all.contains("<<< TLS 1.3, Alert [length 0002], warning close_notify")
                    || all.contains("<<< TLS 1.2, Alert [length 0002], warning close_notify"),
                "{backend} {flag}: no close_notify from the server: {all}"
            );
            assert!(!all.contains("unexpected eof"), "{backend} {flag}: {all}");
            assert!(out.status.success(), "{backend} {flag}: {all}");
        }
        site.srv.stop();
    }
}

/// Session tickets come from one process-wide key set: a session one
/// worker issued resumes on the other (SO_REUSEPORT spreads connections by
/// their ports, so 16 resumptions all landing on the issuer's worker would
/// happen once in 65,536 runs).
#[test]
fn tickets_resume_on_any_worker() {
    let (pki, cfg) = prepare("two-workers", DEFAULT_TLS);
    let mut srv = Ringside::start(&[
        "--workers",
        "2",
        "--backend",
        "io-uring",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let tls = srv.next_listener();
    srv.admin();
    let request = b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    let sess = path_text(&pki.dir.path().join("two-workers.sess"));
    let common = [
        "-servername",
        "a.test",
        "-CAfile",
        &pki.ca_pem,
        "-verify_return_error",
        "-ign_eof",
    ];
    let first = s_client(tls, &[&common[..], &["-sess_out", &sess]].concat(), request);
    assert!(text(&first).contains("New, TLSv1.3"), "{}", text(&first));
    const AGAIN: u64 = 16;
    for _ in 0..AGAIN {
        let again = s_client(tls, &[&common[..], &["-sess_in", &sess]].concat(), request);
        let out = text(&again);
        assert!(out.contains("Reused, TLSv1.3"), "{out}");
        assert!(out.contains("HTTP/1.1 200 OK"), "{out}");
    }
    let mut count = |w: u32, kind: &str| {
        srv.metric(&format!(
            "ringside_tls_handshakes_total{{worker=\"{w}\",kind=\"{kind}\"}}"
        )) as u64
    };
    let end = Instant::now() + Duration::from_secs(10);
    while count(0, "resumed") + count(1, "resumed") < AGAIN && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(count(0, "resumed") + count(1, "resumed"), AGAIN);
    assert_eq!(count(0, "full") + count(1, "full"), 1);
    let issuer = if count(0, "full") == 1 { 0 } else { 1 };
    assert!(
        count(1 - issuer, "resumed") >= 1,
        "no session resumed on the worker that did not issue it"
    );
    srv.stop();
}
