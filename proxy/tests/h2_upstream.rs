//! HTTP/2 to upstreams (`protocol = "h2"` and `"auto"`) with real
//! origins: ringside itself over h2c and over TLS (ALPN), nginx's h2c
//! listener, and a python3-h2 origin for bodies, trailers and GOAWAY;
//! HTTP/1.1 and HTTP/2 clients in front (curl, nghttp, h2load). Streams
//! share few connections: 10,000 requests at concurrency 100 through two
//! workers open at most two, counted where the origin accepts them. A
//! missing peer fails the test (scripts/test.sh installs them).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::h2::{fetched, header, pattern};
use common::pki::Ca;
use common::script::{self, Peer};
use common::{Ringside, TempDir, BACKENDS};

/// The python3-h2 origin; `goaway_every`: it says GOAWAY after that many
/// streams on each connection.
fn h2_origin(goaway_every: Option<u32>) -> (Peer, u16) {
    let args: Vec<String> = goaway_every.map(|n| n.to_string()).into_iter().collect();
    script::start("/usr/bin/python3", "h2_origin.py", &args)
}

/// A ringside serving `dir/root` (`small.txt`, a 10 MiB `big.bin`), on
/// h2c and, but on glommio, on TLS with ALPN: the origin, and its TLS
/// address.
fn ringside_origin(dir: &TempDir, backend: &str, ca: &Ca) -> (Ringside, Option<SocketAddr>) {
    dir.write("root/small.txt", b"hello over h2\n");
    dir.write("root/big.bin", &pattern(10 << 20));
    ca.leaf(dir, "leaf", "h2.test", &["h2.test"]);
    let tls = backend != "glommio";
    let listeners = if tls {
        r#"["127.0.0.1:0", { addr = "127.0.0.2:0", tls = { cert = "leaf.pem", key = "leaf.key" } }]"#
    } else {
        r#"["127.0.0.1:0"]"#
    };
    let cfg = dir.write(
        "origin.toml",
        format!(
            "[server]\nlisten = {listeners}\nroot = \"root\"\n\
             [access_log]\npath = \"origin.log\"\nflush_every = \"10ms\"\n"
        )
        .as_bytes(),
    );
    let mut rs = Ringside::as_configured(backend, &cfg);
    let tls_at = tls.then(|| rs.next_listener());
    (rs, tls_at)
}

/// The lines of an access log once it holds `n` (it is flushed every
/// 10 ms), or what it holds after 10 s.
fn log_lines(dir: &TempDir, name: &str, n: usize) -> Vec<String> {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n || std::time::Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ringside proxying everything to `upstream` (an `[upstream.o]` body).
fn proxy(dir: &TempDir, backend: &str, workers: u32, upstream: &str) -> Ringside {
    let cfg = dir.write(
        "proxy.toml",
        format!(
            "[limits]\nmax_body = \"4m\"\n[upstream.o]\n{upstream}\n\
             [[route]]\nprefix = \"/\"\nupstream = \"o\"\n"
        )
        .as_bytes(),
    );
    Ringside::workers(backend, workers, &cfg)
}

/// What every client sees of the ringside origin through the proxy.
fn fetches_through(px: &Ringside, h2: bool) {
    let url = |path: &str| {
        let mut a = vec![format!("http://{}{path}", px.addr)];
        if h2 {
            a.insert(0, "--http2-prior-knowledge".into());
        }
        a
    };
    let (head, body) = fetched(&url("/small.txt"));
    assert!(head.contains(" 200"), "{head}");
    assert_eq!(body, b"hello over h2\n");
    assert_eq!(header(&head, "content-length").as_deref(), Some("14"));
    assert!(header(&head, "etag").is_some(), "{head}");

    // HEAD: the length a GET would have, no body (what follows the head
    // is curl's count of body bytes received).
    let mut args = url("/big.bin");
    args.splice(
        0..0,
        ["-I", "-o", "/dev/null", "-w", "%{size_download}"].map(String::from),
    );
    let (head, body) = fetched(&args);
    assert!(head.contains(" 200"), "{head}");
    assert_eq!(
        header(&head, "content-length").as_deref(),
        Some("10485760"),
        "HEAD"
    );
    assert_eq!(body, b"0");

    let mut args = url("/big.bin");
    args.splice(0..0, ["-r".to_string(), "1000-1999".to_string()]);
    let (head, body) = fetched(&args);
    assert!(head.contains(" 206"), "{head}");
    assert_eq!(body, &pattern(10 << 20)[1000..2000]);

    let (head, body) = fetched(&url("/big.bin"));
    assert!(head.contains(" 200"), "{head}");
    assert!(
        body == pattern(10 << 20),
        "10 MiB: {} bytes, differing",
        body.len()
    );

    let (head, _) = fetched(&url("/missing"));
    assert!(head.contains(" 404"), "{head}");
}

#[test]
fn a_ringside_origin_over_h2c_and_over_tls() {
    for backend in BACKENDS {
        let dir = TempDir::new("h2up-ringside");
        let ca = Ca::new("h2 upstream CA");
        dir.write("ca.pem", ca.pem().as_bytes());
        let (origin, tls_at) = ringside_origin(&dir, backend, &ca);
        let px = proxy(
            &dir,
            backend,
            1,
            &format!("protocol = \"h2\"\nservers = [\"{}\"]", origin.addr),
        );
        fetches_through(&px, false);
        fetches_through(&px, true);
        let Some(tls_at) = tls_at else { continue };
        for protocol in ["h2", "auto"] {
            let px = proxy(
                &dir,
                backend,
                1,
                &format!(
                    "protocol = \"{protocol}\"\nservers = [\"{tls_at}\"]\ntls = true\n\
                     tls_ca = \"ca.pem\"\ntls_sni = \"h2.test\""
                ),
            );
            fetches_through(&px, true);
        }
        // What the origin served came over HTTP/2 each time.
        let log = log_lines(&dir, "origin.log", 16);
        assert!(log.iter().all(|l| l.contains("HTTP/2.0")), "{log:?}");
    }
}

/// `auto` to a server that offers only HTTP/1.1 by ALPN: its choice is
/// taken, and requests go over HTTP/1.1.
#[test]
fn auto_takes_http1_where_the_server_chooses_it() {
    let dir = TempDir::new("h2up-auto");
    let ca = Ca::new("h2 upstream CA");
    dir.write("ca.pem", ca.pem().as_bytes());
    ca.leaf(&dir, "leaf", "h2.test", &["h2.test"]);
    dir.write("root/small.txt", b"hello over h1\n");
    let cfg = dir.write(
        "origin.toml",
        b"[server]\nlisten = [{ addr = \"127.0.0.1:0\", http2 = false, tls = { cert = \"leaf.pem\", key = \"leaf.key\" } }]\n\
          root = \"root\"\n[access_log]\npath = \"origin.log\"\nflush_every = \"10ms\"\n",
    );
    let origin = Ringside::as_configured("io-uring", &cfg);
    let px = proxy(
        &dir,
        "io-uring",
        1,
        &format!(
            "protocol = \"auto\"\nservers = [\"{}\"]\ntls = true\ntls_ca = \"ca.pem\"\ntls_sni = \"h2.test\"",
            origin.addr
        ),
    );
    for _ in 0..3 {
        let (head, body) = fetched(&[
            "--http2-prior-knowledge".to_string(),
            format!("http://{}/small.txt", px.addr),
        ]);
        assert!(head.contains(" 200"), "{head}");
        assert_eq!(body, b"hello over h1\n");
    }
    let log = log_lines(&dir, "origin.log", 3);
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log.iter().all(|l| l.contains("HTTP/1.1")), "{log:?}");
}

/// Request bodies both ways of the client protocol, trailers from an h2
/// origin to an h2 client and to an HTTP/1.1 client that asked for them.
#[test]
fn bodies_and_trailers_through_an_h2_origin() {
    let (_origin, port) = h2_origin(None);
    for backend in BACKENDS {
        let dir = TempDir::new("h2up-bodies");
        let px = proxy(
            &dir,
            backend,
            1,
            &format!("protocol = \"h2\"\nservers = [\"127.0.0.1:{port}\"]"),
        );
        let upload = pattern(1 << 20);
        let file = dir.write("upload.bin", &upload);
        for h2 in [false, true] {
            let mut args = vec![
                "--data-binary".to_string(),
                format!("@{}", file.display()),
                format!("http://{}/echo", px.addr),
            ];
            if h2 {
                args.insert(0, "--http2-prior-knowledge".into());
            }
            let (head, body) = fetched(&args);
            assert!(head.contains(" 200"), "{backend} h2={h2}: {head}");
            assert!(
                body == upload,
                "{backend} h2={h2}: {} bytes back",
                body.len()
            );
        }

        let out = Command::new("nghttp")
            .args(["-v", &format!("http://{}/trailers", px.addr)])
            .output()
            .expect("nghttp (nghttp2-client) must be installed");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("x-sum: 42"), "{backend}: {text}");
        assert!(text.contains("x-note: end"), "{backend}: {text}");

        let mut s = TcpStream::connect(px.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(
            b"GET /trailers HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        assert!(
            got.contains("Transfer-Encoding: chunked"),
            "{backend}: {got}"
        );
        assert!(
            got.ends_with("0\r\nx-sum: 42\r\nx-note: end\r\n\r\n"),
            "{backend}: {got:?}"
        );
    }
}

/// nginx's h2c listener as the origin.
#[test]
fn nginx_as_the_h2_origin() {
    let dir = TempDir::new("h2up-nginx");
    let (_nginx, port) = common::nginx::start(&dir, |port| {
        format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {p}/error.log warn;\n\
             pid {p}/nginx.pid;\nevents {{ worker_connections 1024; }}\n\
             http {{\n access_log off;\n client_body_temp_path {p}/body;\n proxy_temp_path {p}/proxy;\n\
             fastcgi_temp_path {p}/fastcgi;\n uwsgi_temp_path {p}/uwsgi;\n scgi_temp_path {p}/scgi;\n\
             server {{\n  listen 127.0.0.1:{port} http2;\n  location / {{ return 200 \"hello from nginx\\n\"; }}\n }}\n}}\n",
            p = dir.path().display()
        )
    });
    for backend in BACKENDS {
        let px = proxy(
            &dir,
            backend,
            1,
            &format!("protocol = \"h2\"\nservers = [\"127.0.0.1:{port}\"]"),
        );
        for h2 in [false, true] {
            let mut args = vec![format!("http://{}/any", px.addr)];
            if h2 {
                args.insert(0, "--http2-prior-knowledge".into());
            }
            let (head, body) = fetched(&args);
            assert!(head.contains(" 200"), "{backend}: {head}");
            assert_eq!(body, b"hello from nginx\n");
        }
        let done = h2load(&px.addr, 2000, 20, 10);
        assert_eq!(done, 2000, "{backend}");
    }
}

/// h2load's count of 2xx answers.
fn h2load(at: &SocketAddr, n: u32, c: u32, m: u32) -> u32 {
    h2load_with(at, n, c, m, &[])
}

/// [`h2load`] with more of its arguments (`-d FILE`, `--h1`).
fn h2load_with(at: &SocketAddr, n: u32, c: u32, m: u32, extra: &[&str]) -> u32 {
    let out = Command::new("h2load")
        .args(extra)
        .args([
            "-n",
            &n.to_string(),
            "-c",
            &c.to_string(),
            "-m",
            &m.to_string(),
            &format!("http://{at}/small.txt"),
        ])
        .output()
        .expect("h2load (nghttp2-client) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("status codes: "))
        .and_then(|l| l.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("h2load said:\n{text}"))
}

/// A relay that counts the connections it accepts and carries each to
/// `to` unchanged.
fn counting_relay(to: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let count = n.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let Ok(up) = TcpStream::connect(to) else {
                continue;
            };
            let (mut a, mut b) = (c.try_clone().unwrap(), up.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Write);
            });
            let (mut a, mut b) = (up, c);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (at, n)
}

/// 10,000 requests at concurrency 100 through two workers: each worker
/// opens one connection (`h2_connections = 1`), so the origin accepts two.
#[test]
fn streams_share_one_connection_per_worker() {
    let dir = TempDir::new("h2up-mux");
    let ca = Ca::new("h2 upstream CA");
    let (origin, _) = ringside_origin(&dir, "epoll", &ca);
    let (relay, accepted) = counting_relay(origin.addr);
    let px = proxy(
        &dir,
        "io-uring",
        2,
        &format!("protocol = \"h2\"\nservers = [\"{relay}\"]\nh2_connections = 1"),
    );
    let done = h2load(&px.addr, 10_000, 100, 1);
    assert_eq!(done, 10_000);
    let n = accepted.load(Ordering::SeqCst);
    assert!(
        (1..=2).contains(&n),
        "{n} upstream connections for 10,000 requests"
    );
}

/// An origin that says GOAWAY every 50 streams: the streams it did not
/// take go again on a new connection, and every request is answered.
#[test]
fn goaway_sends_unprocessed_streams_to_a_new_connection() {
    let (_origin, port) = h2_origin(Some(50));
    for backend in BACKENDS {
        let dir = TempDir::new("h2up-goaway");
        let px = proxy(
            &dir,
            backend,
            1,
            &format!("protocol = \"h2\"\nservers = [\"127.0.0.1:{port}\"]\nretries = 0"),
        );
        let done = h2load(&px.addr, 1000, 10, 10);
        assert_eq!(done, 1000, "{backend}");
        // POSTs too: a body taken from the client is kept (up to 64 KiB)
        // and sent again with the stream, from either client protocol.
        let body = dir.write("body.bin", &pattern(20_000));
        let body = body.to_str().unwrap();
        let done = h2load_with(&px.addr, 500, 10, 10, &["-d", body]);
        assert_eq!(done, 500, "{backend} h2 POST");
        let done = h2load_with(&px.addr, 500, 10, 1, &["-d", body, "--h1"]);
        assert_eq!(done, 500, "{backend} HTTP/1.1 POST");
    }
}

/// Active health checks speak HTTP/2 to an h2 upstream: an origin that
/// speaks nothing else stays up, and its requests are served.
#[test]
fn health_checks_speak_http2() {
    let (_origin, port) = h2_origin(None);
    let dir = TempDir::new("h2up-health");
    let mut px = {
        let cfg = dir.write(
            "proxy.toml",
            format!(
                "[upstream.o]\nprotocol = \"h2\"\nservers = [\"127.0.0.1:{port}\"]\n\
                 health_path = \"/ok\"\nhealth_interval = \"50ms\"\nhealth_timeout = \"50ms\"\n\
                 health_fall = 1\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n"
            )
            .as_bytes(),
        );
        Ringside::with_admin(1, &cfg)
    };
    let series =
        format!("ringside_upstream_server_up{{upstream=\"o\",server=\"127.0.0.1:{port}\"}}");
    // Each check is a connection of its own: once the origin accepted a
    // few, checks have run (and with health_fall = 1, one failed check
    // would have marked the server down).
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, n) = fetched(&[
            "--http2-prior-knowledge".to_string(),
            format!("http://127.0.0.1:{port}/conns"),
        ]);
        let n: u32 = String::from_utf8_lossy(&n).parse().unwrap();
        if n >= 5 {
            break;
        }
        assert!(std::time::Instant::now() < end, "only {n} checks in 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(px.metric(&series), 1.0);
    let (head, body) = fetched(&[format!("http://{}/x", px.addr)]);
    assert!(head.contains(" 200"), "{head}");
    assert!(body.starts_with(b"hello"), "{body:?}");
}

/// An HTTP/1.1 origin that answers every request with a chunked body and
/// a trailer section.
fn chunked_trailer_origin() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    while let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        got.drain(..end + 4);
                        let _ = c.write_all(
                            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                              2\r\nok\r\n0\r\nx-sum: 42\r\ncontent-length: 9\r\n\r\n",
                        );
                    }
                }
            });
        }
    });
    at
}

/// Trailers from an HTTP/1.1 upstream's chunked body reach an HTTP/2
/// client, and an HTTP/1.1 client that asked for them; one that did not
/// ask gets none. Framing fields among them are dropped.
#[test]
fn trailers_from_an_http1_origin() {
    let origin = chunked_trailer_origin();
    for backend in BACKENDS {
        let dir = TempDir::new("h2up-h1trailers");
        let px = proxy(&dir, backend, 1, &format!("servers = [\"{origin}\"]"));
        let out = Command::new("nghttp")
            .args(["-v", &format!("http://{}/t", px.addr)])
            .output()
            .expect("nghttp (nghttp2-client) must be installed");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("x-sum: 42"), "{backend}: {text}");
        assert!(!text.contains("content-length: 9"), "{backend}: {text}");

        for (te, want) in [("TE: trailers\r\n", true), ("", false)] {
            let mut s = TcpStream::connect(px.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let req = format!("GET /t HTTP/1.1\r\nHost: x\r\n{te}Connection: close\r\n\r\n");
            s.write_all(req.as_bytes()).unwrap();
            let mut got = String::new();
            s.read_to_string(&mut got).unwrap();
            assert!(got.contains("\r\n2\r\nok\r\n"), "{backend}: {got:?}");
            let tail = if want {
                "0\r\nx-sum: 42\r\n\r\n"
            } else {
                "0\r\n\r\n"
            };
            assert!(got.ends_with(tail), "{backend} te={want}: {got:?}");
        }
    }
}

/// What `post_trailers` prints: the origin's echo of the trailers.
const ECHOED: &str = "x-sum: 42\nx-note: end\n";

/// An HTTP/2 POST ending with trailers (`support/h2_post_trailers.py`):
/// the response body.
fn post_trailers(addr: SocketAddr, path: &str) -> String {
    let args = [addr.to_string(), path.to_string()];
    script::python("h2_post_trailers.py", &args, "POST with trailers")
}

/// Request trailers pass on to an h2 origin, from an h2 client and from
/// an HTTP/1.1 chunked body (a HEADERS frame that ends the stream), less
/// the fields a trailer may not carry (here `content-length`). To an
/// HTTP/1.1 origin they are not passed: such backends may fold trailers
/// into the headers after the proxy's checks (see h1_security_framing's
/// `trailers_are_never_promoted`), so its chunked body ends bare.
#[test]
fn request_trailers_pass_to_h2_and_http1_origins() {
    let (_origin, port) = h2_origin(None);
    for backend in BACKENDS {
        let dir = TempDir::new("h2up-req-trailers");
        let px = proxy(
            &dir,
            backend,
            1,
            &format!("protocol = \"h2\"\nservers = [\"127.0.0.1:{port}\"]"),
        );
        assert_eq!(
            post_trailers(px.addr, "/echo-trailers"),
            ECHOED,
            "{backend}: h2 → h2"
        );

        let mut s = TcpStream::connect(px.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(
            b"POST /echo-trailers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\
              Connection: close\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 42\r\nContent-Length: 9\r\n\
              X-Note: end\r\n\r\n",
        )
        .unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.1 200"), "{backend}: {got}");
        assert!(got.ends_with(ECHOED), "{backend}: HTTP/1.1 → h2: {got:?}");

        // An HTTP/1.1 origin of one connection that keeps what it read.
        let origin = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = origin.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut c, _) = origin.accept().unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            // The head, then a chunked body through its last chunk's
            // trailer section and the blank line that ends it.
            let done = |r: &[u8]| {
                let head_end = r.windows(4).position(|w| w == b"\r\n\r\n");
                head_end.is_some_and(|h| {
                    let body = &r[h + 4..];
                    body.windows(3).any(|w| w == b"0\r\n") && body.ends_with(b"\r\n\r\n")
                })
            };
            while !done(&req) {
                let n = c.read(&mut buf).unwrap();
                assert!(n > 0, "request cut: {:?}", String::from_utf8_lossy(&req));
                req.extend_from_slice(&buf[..n]);
            }
            c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            String::from_utf8_lossy(&req).into_owned()
        });
        let dir1 = TempDir::new("h2up-req-trailers-h1");
        let px1 = proxy(&dir1, backend, 1, &format!("servers = [\"{at}\"]"));
        assert_eq!(
            post_trailers(px1.addr, "/t"),
            "ok",
            "{backend}: h2 → HTTP/1.1"
        );
        let req = reader.join().unwrap();
        assert!(
            req.contains("transfer-encoding: chunked")
                || req.contains("Transfer-Encoding: chunked"),
            "{backend}: {req}"
        );
        assert!(
            req.ends_with("5\r\nhello\r\n0\r\n\r\n"),
            "{backend}: what the HTTP/1.1 origin read: {req:?}"
        );
    }
}
