//! Pebble (Let's Encrypt's test CA, 2.4.0) for integration tests: a CA on
//! loopback, its DNS answered by pebble-challtestsrv with 127.0.0.1 for
//! every name, validating challenges on the ports the test gives.
//!
//! Self-contained (rcgen, serde_json and std only) so any crate's tests can
//! include it with `#[path = ".../testsupport/pebble.rs"] mod pebble;`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct PebbleOptions {
    /// The ACME port; 0 picks a free one.
    pub listen_port: u16,
    /// Where Pebble validates HTTP-01 (on 127.0.0.1).
    pub http_port: u16,
    /// Where Pebble validates TLS-ALPN-01 (on 127.0.0.1).
    pub tls_port: u16,
    /// `certificateValidityPeriod`, seconds.
    pub validity_secs: Option<u64>,
    /// `domainBlocklist`.
    pub blocklist: Vec<String>,
    /// PEBBLE_WFE_NONCEREJECT: the percentage of good nonces refused.
    pub nonce_reject: u8,
    /// None: PEBBLE_VA_NOSLEEP=1; Some(n): PEBBLE_VA_SLEEPTIME=n.
    pub va_sleep_secs: Option<u32>,
}

pub struct Pebble {
    /// `https://127.0.0.1:PORT/dir`.
    pub directory: String,
    /// A PEM file trusting Pebble's own HTTPS certificate (ACME and
    /// management).
    pub ca_pem: PathBuf,
    /// `https://127.0.0.1:PORT` of Pebble's management interface.
    pub management: String,
    pebble: Child,
    challtestsrv: Child,
    log: Arc<Mutex<Vec<String>>>,
}

/// How long either process may take to say it is up.
const STARTUP: Duration = Duration::from_secs(30);

impl Pebble {
    /// A port free on 127.0.0.1 a moment ago.
    pub fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("binding 127.0.0.1:0")
            .port()
    }

    /// Starts pebble-challtestsrv (DNS only) and Pebble with their files in
    /// `dir`; returns once Pebble accepts connections.
    pub fn start(dir: &Path, opts: &PebbleOptions) -> Pebble {
        Pebble::start_with(dir, opts, serde_json::json!({}))
    }

    /// As `start`, with `extra`'s members added to (or replacing) the
    /// config's `pebble` object, e.g. `externalAccountBindingRequired` and
    /// `externalAccountMACKeys` (kid → base64url key).
    pub fn start_with(dir: &Path, opts: &PebbleOptions, extra: serde_json::Value) -> Pebble {
        std::fs::create_dir_all(dir).expect("creating the Pebble directory");
        let (ca_pem, cert, key) = write_tls_files(dir);
        let listen = if opts.listen_port == 0 {
            Pebble::free_port()
        } else {
            opts.listen_port
        };
        let management_port = Pebble::free_port();
        let dns_port = Pebble::free_port();
        let chall_management = Pebble::free_port();

        let mut config = serde_json::json!({
            "listenAddress": format!("127.0.0.1:{listen}"),
            "managementListenAddress": format!("127.0.0.1:{management_port}"),
            "certificate": cert,
            "privateKey": key,
            "httpPort": opts.http_port,
            "tlsPort": opts.tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        });
        if let Some(v) = opts.validity_secs {
            config["certificateValidityPeriod"] = v.into();
        }
        if !opts.blocklist.is_empty() {
            config["domainBlocklist"] = opts.blocklist.clone().into();
        }
        if let Some(extra) = extra.as_object() {
            for (k, v) in extra {
                config[k] = v.clone();
            }
        }
        let config_path = dir.join("pebble-config.json");
        std::fs::write(
            &config_path,
            serde_json::json!({ "pebble": config }).to_string(),
        )
        .expect("writing the Pebble config");

        let log = Arc::new(Mutex::new(Vec::new()));
        let mut challtestsrv = Command::new("pebble-challtestsrv")
            .args(["-dns01", &format!("127.0.0.1:{dns_port}")])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-management", &format!("127.0.0.1:{chall_management}")])
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting pebble-challtestsrv");
        let chall_lines = forward(&mut challtestsrv, "challtestsrv", &log);
        // Its DNS server is up once it says so (before the management one).
        if let Err(e) = wait_for(&chall_lines, "Starting management server", &log) {
            let _ = challtestsrv.kill();
            let _ = challtestsrv.wait();
            panic!("pebble-challtestsrv {e}");
        }

        let mut cmd = Command::new("pebble");
        cmd.args(["-config"])
            .arg(&config_path)
            .args([
                "-dnsserver",
                &format!("127.0.0.1:{dns_port}"),
                "-strict=false",
            ])
            .env("PEBBLE_WFE_NONCEREJECT", opts.nonce_reject.to_string())
            .env("PEBBLE_AUTHZREUSE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match opts.va_sleep_secs {
            None => cmd.env("PEBBLE_VA_NOSLEEP", "1"),
            Some(n) => cmd.env("PEBBLE_VA_SLEEPTIME", n.to_string()),
        };
        let mut pebble = match cmd.spawn() {
            Ok(p) => p,
            Err(e) => {
                let _ = challtestsrv.kill();
                let _ = challtestsrv.wait();
                panic!("starting pebble: {e}");
            }
        };
        let lines = forward(&mut pebble, "pebble", &log);
        let mut this = Pebble {
            directory: format!("https://127.0.0.1:{listen}/dir"),
            ca_pem,
            management: format!("https://127.0.0.1:{management_port}"),
            pebble,
            challtestsrv,
            log: log.clone(),
        };
        // "Listening on: ADDR" comes just before the listen call: connect
        // until it takes.
        if let Err(e) = wait_for(&lines, "Listening on:", &log) {
            drop(this); // stops both
            panic!("pebble {e}");
        }
        let deadline = Instant::now() + STARTUP;
        while TcpStream::connect(("127.0.0.1", listen)).is_err() {
            if let Ok(Some(status)) = this.pebble.try_wait() {
                panic!("pebble exited ({status}):\n{}", this.logs());
            }
            assert!(
                Instant::now() < deadline,
                "pebble never listened:\n{}",
                this.logs()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        this
    }

    /// Both processes' output so far.
    pub fn logs(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The PEM of the root that issues Pebble's certificates (made anew at
    /// each start), from the management interface (fetched with curl, so
    /// this file needs no TLS crate).
    pub fn issuing_roots_pem(&self) -> String {
        let authority = self
            .management
            .strip_prefix("https://")
            .expect("management is https");
        let out = Command::new("curl")
            .args(["-sS", "--fail", "--max-time", "10", "--cacert"])
            .arg(&self.ca_pem)
            .arg(format!("https://{authority}/roots/0"))
            .output()
            .expect("running curl");
        assert!(
            out.status.success(),
            "GET /roots/0: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("PEM is text")
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        for child in [&mut self.pebble, &mut self.challtestsrv] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A CA and, signed by it, a certificate for 127.0.0.1 and localhost:
/// returns the CA's PEM path, the certificate's and the key's.
/// The PEM file trusting the HTTPS certificate Pebble will use in `dir`,
/// made now, so a client can be configured before Pebble starts there.
pub fn ca_pem_for(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("creating the Pebble directory");
    write_tls_files(dir).0
}

/// Pebble's HTTPS files in `dir`, kept where made before (by `ca_pem_for`
/// or an earlier start: a restarted Pebble is trusted as before).
fn write_tls_files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let paths = (
        dir.join("harness-ca.pem"),
        dir.join("pebble-cert.pem"),
        dir.join("pebble-key.pem"),
    );
    if paths.0.is_file() && paths.1.is_file() && paths.2.is_file() {
        return paths;
    }
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "Pebble test harness CA");
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let key = rcgen::KeyPair::generate().expect("server key");
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("server params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let cert = params
        .signed_by(&key, &ca_cert, &ca_key)
        .expect("server certificate");
    std::fs::write(&paths.0, ca_cert.pem()).expect("writing the CA");
    std::fs::write(&paths.1, cert.pem()).expect("writing the certificate");
    std::fs::write(&paths.2, key.serialize_pem()).expect("writing the key");
    (paths.0, paths.1, paths.2)
}

/// Copies a child's stdout and stderr lines into `log` and onto the
/// returned channel (closed when both end).
fn forward(child: &mut Child, who: &str, log: &Arc<Mutex<Vec<String>>>) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out: Box<dyn Read + Send> = Box::new(child.stdout.take().expect("piped stdout"));
    let err: Box<dyn Read + Send> = Box::new(child.stderr.take().expect("piped stderr"));
    for pipe in [out, err] {
        let (tx, log, who) = (tx.clone(), log.clone(), who.to_string());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                log.lock().unwrap().push(format!("[{who}] {line}"));
                let _ = tx.send(line);
            }
        });
    }
    rx
}

/// Waits for a line containing `needle`; the logs if the process ends
/// (or stays silent too long) first.
fn wait_for(
    lines: &mpsc::Receiver<String>,
    needle: &str,
    log: &Arc<Mutex<Vec<String>>>,
) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "never said {needle:?} ({e}):\n{}",
                    log.lock().unwrap().join("\n")
                ))
            }
        }
    }
}
