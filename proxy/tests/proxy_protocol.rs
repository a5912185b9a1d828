//! Listeners behind an L4 balancer: `proxy_protocol = true` takes the
//! client's address from the PROXY protocol header (v1 and v2), and that
//! address is the one a recording backend (X-Forwarded-For), the access
//! log, php-fpm (REMOTE_ADDR) and `allow`/`deny` see. HAProxy is the real
//! sender, in front over plain TCP and over TLS; raw sockets send the
//! malformed headers. Clients come from 127.0.0.3, so the address cannot
//! be mistaken for HAProxy's own (127.0.0.1).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::client::Conn;
use common::h2::curl;
use common::phpfpm::PhpFpm;
use common::pki::Ca;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS};

const CLIENT: &str = "127.0.0.3";

/// ringside on `backend` with `listen` (the table's keys after `addr`),
/// the recorder at `/` (except `/secret/`, which refuses the client) and
/// an access log.
fn start(backend: &str, dir: &TempDir, rec: &Recorder, listen: &str) -> Ringside {
    let cfg = format!(
        "[server]\nlisten = [{{ addr = \"127.0.0.1:0\", {listen} }}]\n\n\
         [access_log]\npath = {log:?}\nflush_every = \"10ms\"\n\n\
         [upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/secret/\"\nupstream = \"rec\"\ndeny = [\"{CLIENT}\"]\n",
        log = dir.path().join("access.log"),
        port = rec.port(),
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    let file = file.to_str().unwrap();
    Ringside::start(&["--workers", "1", "--backend", backend, "--config", file])
}

/// HAProxy in TCP mode on a listener made here (port 0, handed over as a
/// descriptor), sending `send` (`send-proxy` or `send-proxy-v2`) to `to`.
struct Haproxy {
    child: Child,
    addr: SocketAddr,
}

impl Haproxy {
    fn start(dir: &TempDir, to: SocketAddr, send: &str) -> Haproxy {
        Haproxy::with(dir, |fd| {
            format!(
                "defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\
                 frontend fe\n    bind fd@{fd}\n    default_backend be\n\
                 backend be\n    server s {to} {send}\n"
            )
        })
    }

    /// HAProxy with the config `cfg` makes for its listener's descriptor.
    fn with(dir: &TempDir, cfg: impl Fn(i32) -> String) -> Haproxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let fd = l.as_raw_fd();
        let cfg = cfg(fd);
        let path = dir.write("haproxy.cfg", cfg.as_bytes());
        let mut cmd = Command::new("haproxy");
        cmd.args(["-db", "-f", path.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // The listener is inherited by HAProxy alone: close-on-exec is
        // cleared in its child only, after the fork.
        // SAFETY: fcntl is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                libc::fcntl(fd, libc::F_SETFD, 0);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .expect("haproxy must be installed (run scripts/test.sh)");
        drop(l);
        Haproxy { child, addr }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GET through HAProxy from CLIENT: (status, body).
fn fetch(url: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["--interface", CLIENT, "-o", "-", "-w", "\n%{http_code}"];
    args.extend_from_slice(extra);
    args.push(url);
    // Until HAProxy serves its inherited listener, the kernel queues the
    // connection: no wait for it to start is needed.
    let out = curl(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    (status.to_owned(), body.to_owned())
}

fn logged(dir: &TempDir) -> String {
    std::fs::read_to_string(dir.path().join("access.log")).unwrap_or_default()
}

#[test]
fn haproxy_in_front_gives_the_client_address() {
    let rec = Recorder::start();
    for send in ["send-proxy", "send-proxy-v2"] {
        let dir = TempDir::new("pp-haproxy");
        let rs = start("io-uring", &dir, &rec, "proxy_protocol = true");
        let hap = Haproxy::start(&dir, rs.addr, send);
        let before = rec.count();
        let (status, _) = fetch(&format!("http://{}/who", hap.addr), &[]);
        assert_eq!(status, "200", "{send}");
        let got = rec.requests();
        assert_eq!(got.len(), before + 1, "{send}");
        assert_eq!(
            got[before].header("x-forwarded-for"),
            vec![CLIENT],
            "{send}"
        );
        // The rules judge the client, not HAProxy.
        let (status, _) = fetch(&format!("http://{}/secret/x", hap.addr), &[]);
        assert_eq!(status, "403", "{send}");
        assert_eq!(rec.count(), before + 1, "{send}");
        let log = rs.stop();
        assert!(!log.contains("panicked"), "{log}");
        let lines = logged(&dir);
        assert!(
            lines.lines().all(|l| l.starts_with(CLIENT)),
            "{send}: {lines}"
        );
        assert_eq!(lines.lines().count(), 2, "{send}: {lines}");
    }
}

#[test]
fn haproxy_in_front_of_tls_gives_the_client_address() {
    let rec = Recorder::start();
    let dir = TempDir::new("pp-tls");
    Ca::new("ringside proxy_protocol CA").leaf(&dir, "site", "site.test", &["site.test"]);
    let tls = format!(
        "tls = {{ cert = {:?}, key = {:?} }}, proxy_protocol = true",
        dir.path().join("site.pem"),
        dir.path().join("site.key")
    );
    let rs = start("io-uring", &dir, &rec, &tls);
    for send in ["send-proxy", "send-proxy-v2"] {
        let hap = Haproxy::start(&dir, rs.addr, send);
        let before = rec.count();
        let url = format!("https://site.test:{}/who", hap.addr.port());
        let resolve = format!("site.test:{}:127.0.0.1", hap.addr.port());
        for proto in ["--http1.1", "--http2"] {
            let (status, _) = fetch(&url, &["-k", "--resolve", &resolve, proto]);
            assert_eq!(status, "200", "{send} {proto}");
        }
        let got = rec.requests();
        assert_eq!(got.len(), before + 2, "{send}");
        for r in &got[before..] {
            assert_eq!(r.header("x-forwarded-for"), vec![CLIENT], "{send}");
        }
    }
}

#[test]
fn php_sees_the_client_address() {
    let fpm = PhpFpm::start_tcp(2);
    let dir = TempDir::new("pp-php");
    let cfg = std::fs::read_to_string(fpm.ringside_config(&dir, "")).unwrap();
    let cfg =
        format!("[server]\nlisten = [{{ addr = \"127.0.0.1:0\", proxy_protocol = true }}]\n{cfg}");
    let file = dir.write("ringside.toml", cfg.as_bytes());
    let rs = Ringside::start(&["--workers", "1", "--config", file.to_str().unwrap()]);
    let mut c = Conn::open(rs.addr);
    c.send(b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n");
    let r = c
        .read_after("GET /headers.php HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("a response");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().lines().any(|l| l == "REMOTE_ADDR=203.0.113.7"),
        "{}",
        r.text()
    );
}

/// What a raw connection gets after sending `first`: the response's
/// status line, or "" when the server closed without one.
fn answer(addr: SocketAddr, first: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(first).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn a_bad_missing_or_untrusted_header_closes_the_connection() {
    let rec = Recorder::start();
    let get = "GET /who HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let v2 = |cmd: u8| {
        let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
        h.extend_from_slice(&[
            0x20 | cmd,
            0x11,
            0,
            12,
            203,
            0,
            113,
            9,
            127,
            0,
            0,
            1,
            0x15,
            0xb3,
            0,
            80,
        ]);
        h
    };
    for backend in BACKENDS {
        let dir = TempDir::new("pp-bad");
        let rs = start(backend, &dir, &rec, "proxy_protocol = true");
        let before = rec.count();
        for bad in [
            &b""[..],
            b"PROXY TCP4 203.0.113.7 127.0.0.1 5555\r\n",
            b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\n",
            b"PROXY TCP9 203.0.113.7 127.0.0.1 5555 80\r\n",
            b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x04\x01\x02\x03\x04",
        ] {
            let first = [bad, get.as_bytes()].concat();
            assert_eq!(
                answer(rs.addr, &first),
                "",
                "{backend} {:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(rec.count(), before, "{backend}");
        // Good headers, v1 and v2 (one sent in pieces), and v2 LOCAL: the
        // socket's own address then.
        let ok = "HTTP/1.1 200 OK";
        let v1 = format!("PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n{get}");
        assert_eq!(answer(rs.addr, v1.as_bytes()), ok, "{backend}");
        let mut c = Conn::open(rs.addr);
        let head = v2(1);
        c.send(&head[..7]);
        c.send(&head[7..]);
        let r = c.read_after(get).expect("a response");
        assert_eq!(r.status, 200, "{backend}");
        assert_eq!(
            answer(rs.addr, &[&v2(0)[..], get.as_bytes()].concat()),
            ok,
            "{backend}"
        );
        let got = rec.requests();
        let xff: Vec<_> = got[before..]
            .iter()
            .map(|r| r.header("x-forwarded-for").concat())
            .collect();
        assert_eq!(
            xff,
            ["203.0.113.7", "203.0.113.9", "127.0.0.1"],
            "{backend}"
        );
    }
    // A header from a source not trusted is refused, however good.
    let dir = TempDir::new("pp-untrusted");
    let rs = start(
        "io-uring",
        &dir,
        &rec,
        "proxy_protocol = true, trusted = [\"127.0.0.2\"]",
    );
    let first = format!("PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n{get}");
    assert_eq!(answer(rs.addr, first.as_bytes()), "");
    let mut c = Conn::open_from(rs.addr, "127.0.0.2".parse().unwrap());
    let r = c.read_after(&first).expect("a response");
    assert_eq!(r.status, 200);
}

/// ringside proxying to `to` with `send_proxy_protocol = "{version}"`,
/// adding no X-Forwarded-For of its own.
fn sending(dir: &TempDir, to: SocketAddr, version: &str) -> Ringside {
    let cfg = format!(
        "[proxy]\nx_forwarded = false\n\n\
         [upstream.next]\nservers = [\"{to}\"]\nsend_proxy_protocol = \"{version}\"\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"next\"\n"
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--config",
        file.to_str().unwrap(),
    ])
}

#[test]
fn ringside_sends_the_client_to_haproxy_behind_it() {
    let rec = Recorder::start();
    for version in ["v1", "v2"] {
        let dir = TempDir::new("pp-send");
        // HAProxy takes the header (accept-proxy) and names the client it
        // carries in X-Forwarded-For to the recorder.
        let to = format!("127.0.0.1:{}", rec.port());
        let hap = Haproxy::with(&dir, |fd| {
            format!(
                "defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\
                 frontend fe\n    bind fd@{fd} accept-proxy\n    option forwardfor\n    default_backend be\n\
                 backend be\n    server s {to}\n"
            )
        });
        let rs = sending(&dir, hap.addr, version);
        let before = rec.count();
        for i in 0..3 {
            let mut c = Conn::open_from(rs.addr, CLIENT.parse().unwrap());
            let r = c.get(&format!("/{version}/{i}"));
            assert_eq!(r.status, 200, "{version}: {}", r.head);
        }
        let got = rec.requests();
        assert_eq!(got.len(), before + 3);
        for r in &got[before..] {
            assert_eq!(
                r.header("x-forwarded-for"),
                [CLIENT],
                "{version}: {:?}",
                r.headers
            );
        }
    }
}

#[test]
fn each_request_opens_its_connection_with_the_header() {
    // A raw server reads what ringside sends first, on every connection.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = l.local_addr().unwrap();
    let dir = TempDir::new("pp-send-raw");
    let rs = sending(&dir, to, "v1");
    let addr = rs.addr;
    let client = std::thread::spawn(move || {
        let mut ports = Vec::new();
        for _ in 0..2 {
            let mut c = Conn::open_from(addr, CLIENT.parse().unwrap());
            ports.push(c.local_port());
            assert_eq!(c.get("/x").status, 200);
        }
        ports
    });
    let mut firsts = Vec::new();
    for _ in 0..2 {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut got = Vec::new();
        let mut b = [0u8; 1];
        while !got.ends_with(b"\r\n\r\n") {
            assert_eq!(
                s.read(&mut b).unwrap(),
                1,
                "{}",
                String::from_utf8_lossy(&got)
            );
            got.push(b[0]);
        }
        let text = String::from_utf8(got).unwrap();
        firsts.push(text.lines().next().unwrap().to_owned());
        assert!(text.contains("\r\nGET /x HTTP/1.1\r\n"), "{text}");
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
    }
    let ports = client.join().unwrap();
    for (line, port) in firsts.iter().zip(&ports) {
        assert_eq!(
            line,
            &format!("PROXY TCP4 {CLIENT} 127.0.0.1 {port} {}", addr.port())
        );
    }
}
