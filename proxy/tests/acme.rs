//! Automatic HTTPS against a real ACME CA: Pebble, Let's Encrypt's test CA
//! (Debian `pebble`, with pebble-challtestsrv answering DNS with 127.0.0.1),
//! validating challenges on the ringside under test. Every ringside here
//! binds port 0 and is started before Pebble, which is then told its ports,
//! so each test also starts with its CA down.
//!
//! Checked through the real binary with curl and openssl s_client: two
//! names over HTTP-01 (answered ahead of a rewrite that refuses everything
//! else under `/.well-known/`) and one over TLS-ALPN-01; a renewal under
//! wrk load (new connections each request) with no failed request and the
//! new certificate seen by s_client; a restart that serves the stored
//! certificate while the CA is down, retries, and renews once it is back;
//! a refused renewal that keeps the old certificate and logs the CA's
//! problem document; two workers and a reload in the middle of an order.

mod common;

#[path = "../../testsupport/pebble.rs"]
mod pebble;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Ringside, TempDir};
use pebble::{Pebble, PebbleOptions};

/// How long a certificate may take to appear (orders take well under a
/// second against Pebble without its validation sleeps; a loaded machine
/// and the backoff after the CA was down at start take longer).
const ISSUE_LIMIT: Duration = Duration::from_secs(90);

struct Site {
    dir: TempDir,
    pebble_dir: PathBuf,
    pebble_port: u16,
    cfg: PathBuf,
}

impl Site {
    /// A site whose TLS listener has `tls`, then `rest` (vhosts), and
    /// `issuers` on one Pebble: `h` (HTTP-01) and `t` (TLS-ALPN-01).
    fn new(tag: &str, tls: &str, rest: &str, issuers: &[&str]) -> Site {
        let dir = TempDir::new(&format!("acme-{tag}"));
        dir.write("www/hello.txt", b"hello over acme\n");
        let pebble_dir = dir.path().join("pebble");
        let ca = pebble::ca_pem_for(&pebble_dir);
        let pebble_port = Pebble::free_port();
        let issuer = |name: &str, challenge: &str| {
            format!(
                "[acme.{name}]\ndirectory = \"https://127.0.0.1:{pebble_port}/dir\"\nca = \"{}\"\n\
                 challenge = \"{challenge}\"\nstate = \"state\"\nretry_min = \"1s\"\n",
                ca.display()
            )
        };
        let mut text = format!(
            "[server]\nroot = \"www\"\nlisten = [\"127.0.0.2:0\", {{ addr = \"127.0.0.1:0\", tls = {{ {tls} }} }}]\n\
             [[rewrite]]\npattern = \"^/\\\\.well-known/\"\nanswer = \"refused\\n\"\nstatus = 403\n{rest}"
        );
        for i in issuers {
            let challenge = if *i == "h" { "http-01" } else { "tls-alpn-01" };
            text.push_str(&issuer(i, challenge));
        }
        let cfg = dir.write("ringside.toml", text.as_bytes());
        Site {
            dir,
            pebble_dir,
            pebble_port,
            cfg,
        }
    }

    /// Ringside on `backend` with `workers`, its admin listener on port 0:
    /// the server, its plain listener and its TLS one.
    fn start(&self, backend: &str, workers: u32) -> (Ringside, SocketAddr, SocketAddr) {
        let n = workers.to_string();
        let mut srv = Ringside::start(&[
            "--workers",
            &n,
            "--backend",
            backend,
            "--admin",
            "127.0.0.1:0",
            "--config",
            self.cfg.to_str().unwrap(),
        ]);
        let plain = srv.addr;
        let tls = srv.next_listener();
        (srv, plain, tls)
    }

    /// Pebble on this site's port, validating HTTP-01 on `plain` and
    /// TLS-ALPN-01 on `tls` (port on 127.0.0.1). Pebble reaches every
    /// name at 127.0.0.1, where only one listener may have port 0: the
    /// plain one listens on 127.0.0.2, and a forwarder takes Pebble there.
    fn pebble(&self, plain: SocketAddr, tls: u16, more: PebbleOptions) -> Pebble {
        let (http_port, _, _) = forwarder(plain, false);
        Pebble::start(
            &self.pebble_dir,
            &PebbleOptions {
                listen_port: self.pebble_port,
                http_port,
                tls_port: tls,
                ..more
            },
        )
    }
}

/// Polls `f` until it gives a value; a readiness wait, bounded by `limit`.
fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The serial of the leaf `at` presents for SNI `name` (openssl s_client),
/// `None` when the handshake is refused.
fn leaf_serial(at: SocketAddr, name: &str) -> Option<String> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &at.to_string(), "-servername", name])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("openssl must be installed (run scripts/test.sh)");
    let text = String::from_utf8_lossy(&out.stdout);
    let begin = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text.find("-----END CERTIFICATE-----")? + "-----END CERTIFICATE-----".len();
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-serial"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    x509.stdin
        .take()
        .unwrap()
        .write_all(text[begin..end].as_bytes())
        .unwrap();
    let serial = x509.wait_with_output().unwrap();
    let serial = String::from_utf8_lossy(&serial.stdout).trim().to_owned();
    Some(serial).filter(|s| s.starts_with("serial="))
}

/// GET /hello.txt from `name` at `at` with curl verifying against `roots`
/// (HTTP/1.1 or HTTP/2): status and body.
fn curl(at: SocketAddr, name: &str, roots: &Path, h2: bool) -> (String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
        .arg(if h2 { "--http2" } else { "--http1.1" })
        .arg("--cacert")
        .arg(roots)
        .args(["--resolve", &format!("{name}:{}:127.0.0.1", at.port())])
        .arg(format!("https://{name}:{}/hello.txt", at.port()))
        .output()
        .expect("curl must be installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", ""));
    assert!(out.status.success(), "curl {name}: {err}");
    (status.to_owned(), body.to_owned())
}

/// `names`: the certificate's names as the metrics label them, joined by commas.
fn days_left(srv: &mut Ringside, issuer: &str, names: &str) -> f64 {
    srv.metric(&format!(
        "ringside_acme_certificate_days_left{{issuer=\"{issuer}\",names=\"{names}\"}}"
    ))
}

fn failures(srv: &mut Ringside, issuer: &str, names: &str) -> f64 {
    srv.metric(&format!(
        "ringside_acme_order_failures{{issuer=\"{issuer}\",names=\"{names}\"}}"
    ))
}

/// The directory the certificate whose first name is `first` is stored in
/// (`state/certs/FIRST.HASH`).
fn stored(site: &Site, first: &str) -> PathBuf {
    let certs = site.dir.path().join("state/certs");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&certs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.strip_prefix(first).is_some_and(|r| r.starts_with('.')))
        })
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?} in {certs:?}");
    dirs[0].clone()
}

/// Pebble's issuing root, written where curl can read it.
fn roots(site: &Site, p: &Pebble) -> PathBuf {
    site.dir
        .write("pebble-root.pem", p.issuing_roots_pem().as_bytes())
}

const LISTENER_AB: &str = "acme = \"h\", names = [\"a.test\", \"b.test\"]";
const VHOST_C: &str = "[[vhost]]\nnames = [\"c.test\"]\ntls = { acme = \"t\" }\n";

#[test]
fn issues_two_names_over_http01_and_one_over_tls_alpn01() {
    for backend in ["io-uring", "epoll"] {
        let site = Site::new(
            &format!("issue-{backend}"),
            LISTENER_AB,
            VHOST_C,
            &["h", "t"],
        );
        let (mut srv, plain, tls) = site.start(backend, 1);
        // No certificate yet: the names are refused, not served a stand-in.
        assert_eq!(leaf_serial(tls, "a.test"), None, "{backend}");
        // The challenge path answers nothing that is not published: the
        // rewrite after it refuses.
        let (status, body) = srv.get("/.well-known/acme-challenge/unknown");
        assert_eq!(
            (status, body.as_slice()),
            (403, &b"refused\n"[..]),
            "{backend}"
        );

        let ca = site.pebble(plain, tls.port(), PebbleOptions::default());
        for (issuer, name) in [("h", "a.test,b.test"), ("t", "c.test")] {
            wait_for(
                &format!("{backend}: {name}'s certificate"),
                ISSUE_LIMIT,
                || (days_left(&mut srv, issuer, name) > 0.0).then_some(()),
            );
        }
        let roots = roots(&site, &ca);
        for name in ["a.test", "b.test", "c.test"] {
            for h2 in [false, true] {
                let got = curl(tls, name, &roots, h2);
                assert_eq!(
                    got,
                    ("200".into(), "hello over acme\n".into()),
                    "{backend} {name} h2={h2}"
                );
            }
        }
        // One certificate for the listener's two names, another for the vhost.
        assert_eq!(
            leaf_serial(tls, "a.test"),
            leaf_serial(tls, "b.test"),
            "{backend}"
        );
        assert_ne!(
            leaf_serial(tls, "a.test"),
            leaf_serial(tls, "c.test"),
            "{backend}"
        );
        assert_eq!(failures(&mut srv, "h", "a.test,b.test"), 0.0, "{backend}");
        for kept in [
            stored(&site, "a.test").join("chain.pem"),
            stored(&site, "c.test").join("key.pem"),
            site.dir.path().join("state/accounts/h.key"),
        ] {
            assert!(kept.is_file(), "{backend}: {kept:?}");
        }
        let log = srv.stop();
        // The CA was down when the server started: it said so and retried.
        assert!(log.contains("ACME order failed"), "{backend}: {log}");
        assert!(
            log.contains("ACME certificate in use on every core"),
            "{backend}: {log}"
        );
    }
}

/// wrk making a new TLS connection for each request to `at`, until stopped.
struct Load {
    child: std::process::Child,
}

impl Load {
    fn start(at: SocketAddr) -> Load {
        let child = Command::new("wrk")
            .args(["-t1", "-c4", "-d120s", "--timeout", "5s"])
            .args(["-H", "Connection: close"])
            .arg(format!("https://{at}/hello.txt"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wrk must be installed (run scripts/test.sh)");
        Load { child }
    }

    /// Stops wrk (SIGINT: it prints its report) and reads the report.
    fn stop(mut self) -> common::load::WrkReport {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        self.child.wait().unwrap();
        common::load::parse_wrk(out)
    }
}

#[test]
fn renews_under_load_and_restarts_on_the_stored_certificate_while_the_ca_is_down() {
    let site = Site::new("renew", LISTENER_AB, "", &["h"]);
    let (srv, plain, tls) = site.start("io-uring", 1);
    // 30 s certificates: renewed two thirds through, 20 s after issue.
    let short = || PebbleOptions {
        validity_secs: Some(30),
        ..PebbleOptions::default()
    };
    let ca = site.pebble(plain, tls.port(), short());
    let first = wait_for("the first certificate", ISSUE_LIMIT, || {
        leaf_serial(tls, "a.test")
    });

    let load = Load::start(tls);
    let second = wait_for("the renewal", ISSUE_LIMIT, || {
        leaf_serial(tls, "a.test").filter(|s| *s != first)
    });
    // The new certificate verifies, while the load goes on.
    let roots = roots(&site, &ca);
    for h2 in [false, true, false] {
        assert_eq!(curl(tls, "b.test", &roots, h2).0, "200");
    }
    let report = load.stop();
    assert!(report.requests > 0, "{report:?}");
    assert_eq!(
        (report.socket_errors, report.non_2xx_3xx),
        (0, 0),
        "{report:?}"
    );
    srv.stop();

    // Restarted with the CA down: the stored certificate is served at once.
    drop(ca);
    let (mut srv, plain, tls) = site.start("io-uring", 1);
    assert_eq!(leaf_serial(tls, "a.test").as_ref(), Some(&second));
    // It falls due while the CA is away: failures, counted and retried.
    wait_for("failed renewals", ISSUE_LIMIT, || {
        (failures(&mut srv, "h", "a.test,b.test") >= 2.0).then_some(())
    });
    assert_eq!(leaf_serial(tls, "a.test").as_ref(), Some(&second));
    // Back: the next retry renews.
    let _ca = site.pebble(plain, tls.port(), short());
    wait_for("the renewal once the CA is back", ISSUE_LIMIT, || {
        leaf_serial(tls, "a.test").filter(|s| *s != second)
    });
    wait_for("the failures reset", ISSUE_LIMIT, || {
        (failures(&mut srv, "h", "a.test,b.test") == 0.0).then_some(())
    });
    let log = srv.stop();
    assert!(log.contains("serving the stored ACME certificate"), "{log}");
    assert!(
        log.contains("the current certificate keeps serving"),
        "{log}"
    );
}

#[test]
fn a_refused_renewal_keeps_the_old_certificate_and_logs_the_problem() {
    let site = Site::new("refused", LISTENER_AB, "", &["h"]);
    let (mut srv, plain, tls) = site.start("epoll", 1);
    let ca = site.pebble(
        plain,
        tls.port(),
        PebbleOptions {
            validity_secs: Some(30),
            ..PebbleOptions::default()
        },
    );
    let first = wait_for("the first certificate", ISSUE_LIMIT, || {
        leaf_serial(tls, "a.test")
    });
    drop(ca);
    // The same CA, now refusing one of the names.
    let _ca = site.pebble(
        plain,
        tls.port(),
        PebbleOptions {
            validity_secs: Some(30),
            blocklist: vec!["b.test".into()],
            ..PebbleOptions::default()
        },
    );
    wait_for("a refused renewal", ISSUE_LIMIT, || {
        (failures(&mut srv, "h", "a.test,b.test") >= 1.0).then_some(())
    });
    assert_eq!(leaf_serial(tls, "a.test"), Some(first));
    let log = srv.stop();
    assert!(log.contains("rejectedIdentifier"), "{log}");
    assert!(
        log.contains("the current certificate keeps serving"),
        "{log}"
    );
}

/// A TCP forwarder on 127.0.0.1 to `to`: its port, and with `hold`, the
/// first connection held until told to go (a CA's validation, held while
/// the test reloads the server), its arrival said on the receiver.
fn forwarder(to: SocketAddr, hold: bool) -> (u16, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (arrived_tx, arrived) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut first = true;
        for c in l.incoming() {
            let Ok(client) = c else { return };
            if first && hold {
                first = false;
                let _ = arrived_tx.send(());
                let _ = go_rx.recv_timeout(Duration::from_secs(30));
            }
            let Ok(server) = TcpStream::connect(to) else {
                return;
            };
            for (mut from, mut into) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut into);
                    let _ = into.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    (port, arrived, go)
}

#[test]
fn two_workers_and_a_reload_in_the_middle_of_an_order() {
    // TLS-ALPN-01 only, so the validation can be held.
    let site = Site::new("reload", "acme = \"t\", names = [\"r.test\"]", "", &["t"]);

    let (mut srv, plain, tls) = site.start("io-uring", 2);
    let (port, arrived, go) = forwarder(tls, true);
    let ca = site.pebble(plain, port, PebbleOptions::default());
    arrived
        .recv_timeout(ISSUE_LIMIT)
        .expect("the CA's validation never came");
    // In the middle of the order: reload, adding a vhost with a name of
    // its own.
    let mut cfg = std::fs::read_to_string(&site.cfg).unwrap();
    cfg.push_str("[[vhost]]\nnames = [\"s.test\"]\ntls = { acme = \"t\" }\n");
    std::fs::write(&site.cfg, cfg).unwrap();
    srv.signal(libc::SIGHUP);
    srv.wait_reloads("ok", 1);
    go.send(()).unwrap();

    for name in ["r.test", "s.test"] {
        wait_for(&format!("{name}'s certificate"), ISSUE_LIMIT, || {
            (days_left(&mut srv, "t", name) > 0.0).then_some(())
        });
    }
    let roots = roots(&site, &ca);
    // Fresh connections spread over both workers (SO_REUSEPORT): every
    // one verifies, whichever worker took it.
    let full = |srv: &mut Ringside, w: u32| {
        srv.metric(&format!(
            "ringside_tls_handshakes_total{{worker=\"{w}\",kind=\"full\"}}"
        ))
    };
    let before = [full(&mut srv, 0), full(&mut srv, 1)];
    for i in 0..24 {
        let name = if i % 2 == 0 { "r.test" } else { "s.test" };
        let got = curl(tls, name, &roots, i % 3 == 0);
        assert_eq!(got.0, "200", "{name}");
    }
    let after = [full(&mut srv, 0), full(&mut srv, 1)];
    assert!(
        after[0] > before[0] && after[1] > before[1],
        "both workers served: {before:?} -> {after:?}"
    );
    let log = srv.stop();
    let ordering = log.find("ordering an ACME certificate").expect(&log);
    let reloaded = log.find("config reloaded").expect(&log);
    let in_use = log.find("ACME certificate in use").expect(&log);
    assert!(ordering < reloaded && reloaded < in_use, "{log}");
}

#[test]
fn with_a_user_the_state_directory_is_that_users() {
    assert_eq!(
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() },
        0,
        "this test starts ringside as root (the test command runs as root)"
    );
    let site = Site::new("user", LISTENER_AB, "", &["h"]);
    let text = std::fs::read_to_string(&site.cfg).unwrap();
    std::fs::write(
        &site.cfg,
        text.replacen("[server]\n", "[server]\nuser = \"nobody\"\n", 1),
    )
    .unwrap();
    for d in ["", "www", "pebble"] {
        let p = site.dir.path().join(d);
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let (mut srv, plain, tls) = site.start("io-uring", 1);
    let _ca = site.pebble(plain, tls.port(), PebbleOptions::default());
    wait_for("the certificate", ISSUE_LIMIT, || {
        (days_left(&mut srv, "h", "a.test,b.test") > 0.0).then_some(())
    });
    use std::os::unix::fs::MetadataExt;
    for kept in [
        site.dir.path().join("state"),
        site.dir.path().join("state/accounts/h.key"),
        stored(&site, "a.test").join("key.pem"),
    ] {
        let m = std::fs::metadata(&kept).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534), "{kept:?}");
    }
    let mode = std::fs::metadata(site.dir.path().join("state"))
        .unwrap()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(leaf_serial(tls, "a.test").is_some());
    srv.stop();
}

#[test]
fn a_name_added_by_a_reload_leaves_the_others_served_until_its_certificate_comes() {
    let site = Site::new("grow", "acme = \"t\", names = [\"r.test\"]", "", &["t"]);
    let (mut srv, plain, tls) = site.start("io-uring", 1);
    let ca = site.pebble(plain, tls.port(), PebbleOptions::default());
    let first = wait_for("r.test's certificate", ISSUE_LIMIT, || {
        leaf_serial(tls, "r.test")
    });
    // The same CA again, its validations held at a forwarder.
    drop(ca);
    let (port, arrived, go) = forwarder(tls, true);
    let _ca = site.pebble(plain, port, PebbleOptions::default());
    let cfg = std::fs::read_to_string(&site.cfg).unwrap();
    std::fs::write(
        &site.cfg,
        cfg.replace("names = [\"r.test\"]", "names = [\"r.test\", \"q.test\"]"),
    )
    .unwrap();
    srv.signal(libc::SIGHUP);
    srv.wait_reloads("ok", 1);
    arrived
        .recv_timeout(ISSUE_LIMIT)
        .expect("the CA's validation never came");
    // Mid-order: the name the old certificate covers is still served with
    // it; the new one is refused until its certificate comes.
    assert_eq!(leaf_serial(tls, "r.test").as_ref(), Some(&first));
    assert_eq!(leaf_serial(tls, "q.test"), None);
    go.send(()).unwrap();
    let second = wait_for("the certificate for both", ISSUE_LIMIT, || {
        leaf_serial(tls, "q.test")
    });
    assert_ne!(second, first);
    assert_eq!(leaf_serial(tls, "r.test"), Some(second));
    assert!(days_left(&mut srv, "t", "r.test,q.test") > 0.0);
    srv.stop();
}
