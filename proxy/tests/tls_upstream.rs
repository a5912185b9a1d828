//! HTTPS upstreams: ringside proxying to a TLS origin (a second ringside
//! whose only certificate is for `origin.test` and which refuses any other
//! name), with verification on by default, the configured SNI sent, and
//! pooled TLS connections reused.

mod common;

use std::path::Path;

use common::pki::Ca;
use common::{Ringside, TempDir};

/// The TLS origin: one TLS listener on port 0, serving `root`.
fn origin(dir: &TempDir) -> Ringside {
    let cfg = dir.write(
        "origin.toml",
        br#"[runtime]
workers = 1
backend = "io-uring"
[server]
listen = [{ addr = "127.0.0.1:0", tls = { cert = "origin.pem", key = "origin.key" } }]
root = "root"
[admin]
listen = "127.0.0.1:0"
[tls]
unknown_name = "refuse"
[[vhost]]
names = ["origin.test"]
tls = { cert = "origin.pem", key = "origin.key" }
"#,
    );
    Ringside::start(&["--config", cfg.to_str().unwrap()])
}

/// The front: plain http on port 0, everything proxied to `origin`.
fn front(dir: &TempDir, backend: &str, port: u16, tls_extra: &str) -> Ringside {
    let text = format!(
        "[upstream.o]\nservers = [\"127.0.0.1:{port}\"]\ntls = true\nmax_fails = 0\n{tls_extra}\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n"
    );
    let cfg = dir.write("front.toml", text.as_bytes());
    Ringside::configured(backend, &cfg)
}

fn ca_line(path: &Path) -> String {
    format!("tls_ca = {:?}", path.to_str().unwrap())
}

fn full_handshakes(origin: &mut Ringside) -> f64 {
    origin.metric("ringside_tls_handshakes_total{worker=\"0\",kind=\"full\"}")
}

#[test]
fn https_upstream_verified_with_sni_and_pooled() {
    let dir = TempDir::new("tls-upstream");
    let pki = Ca::new("ringside test CA");
    pki.leaf(&dir, "origin", "origin", &["origin.test"]);
    dir.write("ca.pem", pki.pem().as_bytes());
    let big: Vec<u8> = (0..3u32 << 20).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::create_dir_all(dir.path().join("root")).unwrap();
    dir.write("root/hello.txt", b"hello from the TLS origin\n");
    dir.write("root/big.bin", &big);
    let mut o = origin(&dir);
    let port = o.addr.port();
    let ca = ca_line(&dir.path().join("ca.pem"));

    for backend in ["io-uring", "epoll"] {
        let before = full_handshakes(&mut o);
        let f = front(
            &dir,
            backend,
            port,
            &format!("{ca}\ntls_sni = \"origin.test\""),
        );
        for _ in 0..3 {
            let (status, body) = f.get("/hello.txt");
            assert_eq!(status, 200, "{backend}: {}", String::from_utf8_lossy(&body));
            assert_eq!(body, b"hello from the TLS origin\n");
        }
        // 3 MiB through TLS on both sides: the relay copies (no splice).
        let (status, body) = f.get("/big.bin");
        assert_eq!(status, 200);
        assert!(body == big, "{backend}: big body differs");
        // One worker, requests one after another: one pooled connection,
        // so one handshake.
        assert_eq!(full_handshakes(&mut o) - before, 1.0, "{backend}");
        f.stop();
    }
    o.stop();
}

#[test]
fn https_upstream_refuses_what_it_cannot_verify() {
    let dir = TempDir::new("tls-upstream-refused");
    let pki = Ca::new("ringside test CA");
    let other = Ca::new("another CA");
    pki.leaf(&dir, "origin", "origin", &["origin.test"]);
    dir.write("ca.pem", pki.pem().as_bytes());
    dir.write("other.pem", other.pem().as_bytes());
    std::fs::create_dir_all(dir.path().join("root")).unwrap();
    dir.write("root/hello.txt", b"hi\n");
    let mut o = origin(&dir);
    let port = o.addr.port();
    let good_ca = ca_line(&dir.path().join("ca.pem"));
    let bad_ca = ca_line(&dir.path().join("other.pem"));

    // Signed by a CA the front does not trust: 502.
    let f = front(
        &dir,
        "io-uring",
        port,
        &format!("{bad_ca}\ntls_sni = \"origin.test\""),
    );
    assert_eq!(f.get("/hello.txt").0, 502);
    // Said at the default level, with the cause, as nginx's "upstream SSL
    // certificate verify error".
    let log = f.stop();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("upstream TLS certificate verify error"))
        .collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(warned[0].contains("UnknownIssuer"), "{}", warned[0]);
    assert!(
        warned[0].contains(&format!("upstream \"o\" server 127.0.0.1:{port}")),
        "{}",
        warned[0]
    );
    // The right CA but no tls_sni: the name checked is 127.0.0.1, which
    // the certificate does not name (and the origin refuses the handshake
    // without SNI for origin.test anyway): 502.
    let f = front(&dir, "io-uring", port, &good_ca);
    assert_eq!(f.get("/hello.txt").0, 502);
    // The origin's refusal comes first, and is told apart from a
    // certificate that did not verify.
    let log = f.stop();
    assert!(log.contains("upstream TLS handshake failed"), "{log}");
    assert!(log.contains("AccessDenied"), "{log}");
    // tls_verify = false takes a certificate no root it knows signed; SNI
    // still goes.
    let f = front(
        &dir,
        "io-uring",
        port,
        "tls_sni = \"origin.test\"\ntls_verify = false",
    );
    assert_eq!(f.get("/hello.txt"), (200, b"hi\n".to_vec()));
    f.stop();
    let failed = o.metric("ringside_tls_handshakes_total{worker=\"0\",kind=\"failed\"}");
    assert!(failed >= 2.0, "origin saw {failed} failed handshakes");
    o.stop();
}

/// nginx over TLS (OpenSSL) as the origin, answering with the number of
/// the connection that carried the request and the SNI it got.
fn start_nginx_tls(dir: &TempDir) -> (common::nginx::Nginx, u16) {
    let d = dir.path().to_str().unwrap();
    common::nginx::start(dir, |port| {
        format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log warn;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 256; }}\n\
             http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
             ssl_protocols TLSv1.2 TLSv1.3;\n\
             server {{ listen 127.0.0.1:{port} ssl; ssl_certificate {d}/origin.pem; ssl_certificate_key {d}/origin.key;\n\
             location / {{ return 200 \"$connection $ssl_server_name\\n\"; }} }} }}\n"
        )
    })
}

/// A real OpenSSL peer: the handshake verifies with SNI origin.test, and
/// one pooled connection carries every request made one after another
/// (post-handshake session tickets do not make it look unusable).
#[test]
fn nginx_tls_origin_pooled() {
    let dir = TempDir::new("tls-upstream-nginx");
    let pki = Ca::new("ringside test CA");
    pki.leaf(&dir, "origin", "origin", &["origin.test"]);
    dir.write("ca.pem", pki.pem().as_bytes());
    let (_nginx, port) = start_nginx_tls(&dir);
    let ca = ca_line(&dir.path().join("ca.pem"));
    for backend in ["io-uring", "epoll"] {
        let f = front(
            &dir,
            backend,
            port,
            &format!("{ca}\ntls_sni = \"origin.test\""),
        );
        let mut seen = Vec::new();
        for _ in 0..5 {
            let (status, body) = f.get("/");
            assert_eq!(status, 200, "{backend}: {}", String::from_utf8_lossy(&body));
            let text = String::from_utf8(body).unwrap();
            let (conn, sni) = text.trim().split_once(' ').unwrap();
            assert_eq!(sni, "origin.test", "{backend}");
            seen.push(conn.to_owned());
        }
        seen.dedup();
        assert_eq!(seen.len(), 1, "{backend}: connections used: {seen:?}");
        f.stop();
    }
}

/// glommio has no writability wait for TLS to use: an HTTPS upstream is
/// refused at start, with the upstream named, rather than failing every
/// request with 502.
#[test]
fn glommio_refuses_https_upstreams() {
    let dir = TempDir::new("tls-upstream-glommio");
    let cfg = dir.write(
        "front.toml",
        b"[upstream.o]\nservers = [\"127.0.0.1:9\"]\ntls = true\ntls_verify = false\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n",
    );
    let out = std::process::Command::new(common::BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--backend",
            "glommio",
        ])
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started: {err}");
    assert!(
        err.contains("[upstream.o] tls = true needs the io-uring or epoll backend"),
        "{err}"
    );
}
