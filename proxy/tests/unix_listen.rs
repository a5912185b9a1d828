//! Unix-socket listeners (`listen = [{ addr = "unix:PATH", mode = "0660"
//! }]`): the socket file gets its mode, two workers serve it over HTTP/1.1
//! and h2c (curl --unix-socket), the access log says `unix:`, `allow` and
//! `deny` name such clients with `"unix:"`, X-Forwarded-For upstream says
//! `unix:`, `[real_ip] from = ["unix:"]` trusts a balancer on the socket,
//! a second ringside is refused while the first serves, the file is gone
//! after SIGTERM, a stale file is replaced, and `ringside check` reports a
//! live socket. On every backend.

mod common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::h2::curl;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS, BIN};

const CLIENT: &str = "203.0.113.9";

fn config(dir: &TempDir, rec: &Recorder) -> std::path::PathBuf {
    dir.write("root/hello.txt", b"hello over unix\n");
    let cfg = format!(
        "[server]\nlisten = [\"127.0.0.1:0\", {{ addr = \"unix:rs.sock\", mode = \"0660\" }}]\nroot = \"root\"\n\n\
         [access_log]\npath = \"access.log\"\nflush_every = \"10ms\"\n\n\
         [real_ip]\nfrom = [\"unix:\"]\n\n\
         [upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/rec/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/secret/\"\nupstream = \"rec\"\ndeny = [\"unix:\"]\n\n\
         [[route]]\nprefix = \"/open/\"\nupstream = \"rec\"\nallow = [\"unix:\"]\ndeny = [\"all\"]\n\n\
         [[route]]\nprefix = \"/nope/\"\nupstream = \"rec\"\ndeny = [\"{CLIENT}\"]\n",
        port = rec.port(),
    );
    dir.write("ringside.toml", cfg.as_bytes())
}

fn start(backend: &str, cfg: &Path) -> Ringside {
    let cfg = cfg.to_str().unwrap();
    Ringside::start(&["--workers", "2", "--backend", backend, "--config", cfg])
}

/// A GET over the socket (or over TCP to `tcp`): (status, body).
fn get(
    sock: &Path,
    tcp: Option<&Ringside>,
    h2: bool,
    path: &str,
    extra: &[&str],
) -> (String, String) {
    let mut args: Vec<String> = vec![
        "-o".into(),
        "-".into(),
        "-w".into(),
        "\n%{http_code}".into(),
    ];
    let url = match tcp {
        Some(rs) => format!("http://{}{path}", rs.addr),
        None => {
            args.extend(["--unix-socket".into(), sock.display().to_string()]);
            format!("http://localhost{path}")
        }
    };
    if h2 {
        args.push("--http2-prior-knowledge".into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(url);
    let out = curl(&args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // What follows the head curl writes with -D -.
    let body_and_code = text.rsplit("\r\n\r\n").next().unwrap_or("");
    let (body, code) = body_and_code
        .rsplit_once('\n')
        .unwrap_or(("", body_and_code));
    (code.to_owned(), body.to_owned())
}

/// A second ringside on the same config: its exit status and stderr.
fn second(backend: &str, cfg: &Path) -> (bool, String) {
    let mut child = Command::new(BIN)
        .args([
            "--workers",
            "1",
            "--backend",
            backend,
            "--config",
            cfg.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a second ringside on the same unix socket kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.success(), err)
}

#[test]
fn a_unix_socket_listener_serves_and_cleans_up() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("unix-listen");
        let cfg = config(&dir, &rec);
        let sock = dir.path().join("rs.sock");
        let rs = start(backend, &cfg);

        let meta = std::fs::metadata(&sock).unwrap();
        assert!(meta.file_type().is_socket(), "{backend}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o660, "{backend}");

        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            // Several requests: each worker accepts on the one socket.
            for _ in 0..4 {
                let (code, body) = get(&sock, None, h2, "/hello.txt", &[]);
                assert_eq!(
                    (code.as_str(), body.as_str()),
                    ("200", "hello over unix\n"),
                    "{what}"
                );
            }
            let before = rec.count();
            let (code, _) = get(&sock, None, h2, "/rec/x", &[]);
            assert_eq!(code, "200", "{what}");
            assert_eq!(
                rec.requests()[before].header("x-forwarded-for"),
                vec!["unix:"],
                "{what}"
            );

            assert_eq!(get(&sock, None, h2, "/secret/x", &[]).0, "403", "{what}");
            assert_eq!(get(&sock, None, h2, "/open/x", &[]).0, "200", "{what}");
            assert_eq!(get(&sock, Some(&rs), h2, "/open/x", &[]).0, "403", "{what}");
            // A balancer on the socket is trusted to name the client.
            let xff = format!("X-Forwarded-For: {CLIENT}");
            assert_eq!(
                get(&sock, None, h2, "/nope/x", &["-H", &xff]).0,
                "403",
                "{what}"
            );
            assert_eq!(get(&sock, None, h2, "/nope/x", &[]).0, "200", "{what}");
            // Over TCP, 127.0.0.1 is not in `from`: the field is not read.
            assert_eq!(
                get(&sock, Some(&rs), h2, "/nope/x", &["-H", &xff]).0,
                "200",
                "{what}"
            );
        }

        // Refused while the first serves; its socket keeps working.
        let (ok, err) = second(backend, &cfg);
        assert!(!ok, "{backend}: {err}");
        assert!(
            err.contains("is served by another process already"),
            "{backend}: {err}"
        );
        assert_eq!(
            get(&sock, None, false, "/hello.txt", &[]).0,
            "200",
            "{backend}"
        );

        // `check` sees the live socket (a warning: it may be this one).
        let out = Command::new(BIN)
            .args(["check", cfg.to_str().unwrap()])
            .output()
            .unwrap();
        let text = common::output_text(&out);
        assert!(
            text.contains(&format!("unix:{} is served now", sock.display())),
            "{text}"
        );

        let log = rs.stop();
        assert!(!log.contains("panicked"), "{backend}: {log}");
        assert!(
            !sock.exists(),
            "{backend}: the socket file outlived the server"
        );

        let lines = std::fs::read_to_string(dir.path().join("access.log")).unwrap();
        let unix_lines = lines.lines().filter(|l| l.starts_with("unix: - ")).count();
        assert!(unix_lines >= 10, "{backend}: {lines}");
        assert!(
            lines
                .lines()
                .any(|l| l.starts_with(&format!("{CLIENT} - "))),
            "{lines}"
        );

        // A file left behind by a server that did not remove it.
        drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
        let rs = start(backend, &cfg);
        assert_eq!(
            get(&sock, None, false, "/hello.txt", &[]).0,
            "200",
            "{backend}"
        );
        rs.stop();
        assert!(!sock.exists(), "{backend}");
    }
}

/// php-fpm's REMOTE_ADDR for a unix-socket client is `unix:`, as nginx's;
/// with `[real_ip] from = ["unix:"]`, the address the balancer names.
#[test]
fn php_sees_unix_or_the_real_address() {
    let fpm = common::phpfpm::PhpFpm::start_tcp(2);
    for backend in BACKENDS {
        let dir = TempDir::new("unix-php");
        let php = std::fs::read_to_string(fpm.ringside_config(&dir, "")).unwrap();
        let cfg = format!(
            "[server]\nlisten = [\"127.0.0.1:0\", \"unix:rs.sock\"]\n\n\
             [real_ip]\nfrom = [\"unix:\"]\n\n{php}"
        );
        let file = dir.write("ringside.toml", cfg.as_bytes());
        let sock = dir.path().join("rs.sock");
        let rs = start(backend, &file);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let (code, body) = get(&sock, None, h2, "/headers.php", &[]);
            assert_eq!(code, "200", "{what}: {body}");
            assert!(
                body.lines().any(|l| l == "REMOTE_ADDR=unix:"),
                "{what}: {body}"
            );
            let xff = format!("X-Forwarded-For: {CLIENT}");
            let (code, body) = get(&sock, None, h2, "/headers.php", &["-H", &xff]);
            assert_eq!(code, "200", "{what}: {body}");
            assert!(
                body.lines().any(|l| l == format!("REMOTE_ADDR={CLIENT}")),
                "{what}: {body}"
            );
        }
        let log = rs.stop();
        assert!(!log.contains("panicked"), "{backend}: {log}");
    }
}

/// `ringside check` and the start refuse what is in a socket's way: a
/// missing directory, a file that is not a socket (left as it was).
#[test]
fn check_names_what_is_in_the_way() {
    let dir = TempDir::new("unix-check");
    let run = |listen: &str| {
        let file = dir.write(
            "ringside.toml",
            format!("[server]\nlisten = [\"127.0.0.1:0\", \"{listen}\"]\n").as_bytes(),
        );
        let out = Command::new(BIN)
            .args(["check", file.to_str().unwrap()])
            .output()
            .unwrap();
        let start = Command::new(BIN)
            .args(["--workers", "1", "--config", file.to_str().unwrap()])
            .output()
            .unwrap();
        (out, start)
    };
    let (out, start) = run("unix:nodir/a.sock");
    let text = common::output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("ringside.toml:2:26: [server] listen: cannot listen on unix:"),
        "{text}"
    );
    assert!(text.contains("no directory"), "{text}");
    assert!(!start.status.success(), "{}", common::output_text(&start));

    dir.write("plain", b"a file");
    let (out, start) = run("unix:plain");
    let text = common::output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("a file that is not a socket is there"),
        "{text}"
    );
    let text = common::output_text(&start);
    assert!(!start.status.success(), "{text}");
    assert!(
        text.contains("a file that is not a socket is there"),
        "{text}"
    );
    assert_eq!(std::fs::read(dir.path().join("plain")).unwrap(), b"a file");
}
