//! HTTP/1.1 and HTTP/2 upstream servers on unix sockets (`servers =
//! ["unix:PATH"]`, relative to the config's directory or absolute): the
//! recorder and the python3-h2 origin listen on one. Requests come
//! through over HTTP/1.1 and h2 clients on every backend, one pooled
//! connection carries them all, a missing socket is retried on the
//! other server, Host is the client's or, with `proxy_host =
//! "upstream"`, `localhost`, and active health checks reach the socket.

mod common;

use std::time::{Duration, Instant};

use common::h2::fetched;
use common::recorder::Recorder;
use common::script;
use common::{Ringside, TempDir, BACKENDS};

fn config(h2_sock: &std::path::Path) -> String {
    format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\n\n\
         [upstream.rec]\nservers = [\"unix:missing.sock\", \"unix:rec.sock\"]\nretries = 1\n\n\
         [upstream.hc]\nservers = [\"unix:hc.sock\"]\nhealth_path = \"/hc\"\nhealth_interval = \"1s\"\nhealth_timeout = \"1s\"\n\n\
         [upstream.h2]\nprotocol = \"h2\"\nservers = [\"unix:{}\"]\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/up/\"\nupstream = \"rec\"\nproxy_host = \"upstream\"\n\n\
         [[route]]\nprefix = \"/h2/\"\nupstream = \"h2\"\nproxy_host = \"upstream\"\nstrip_prefix = true\n",
        h2_sock.display()
    )
}

/// A GET through `rs`: (status line and head, body).
fn get(rs: &Ringside, h2: bool, path: &str) -> (String, String) {
    let mut args = vec![format!("http://{}{path}", rs.addr)];
    if h2 {
        args.insert(0, "--http2-prior-knowledge".into());
    }
    let (head, body) = fetched(&args);
    (head, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn http1_and_h2_upstreams_on_unix_sockets() {
    let origin_dir = TempDir::new("unix-h2-origin");
    let h2_sock = origin_dir.path().join("h2.sock");
    let (_origin, _) = script::start(
        "/usr/bin/python3",
        "h2_origin.py",
        &[format!("unix:{}", h2_sock.display())],
    );
    for backend in BACKENDS {
        let dir = TempDir::new("unix-upstream");
        let rec = Recorder::start_unix(&dir.path().join("rec.sock"));
        let hc = Recorder::start_unix(&dir.path().join("hc.sock"));
        let cfg = dir.write("ringside.toml", config(&h2_sock).as_bytes());
        let rs = Ringside::as_configured(backend, &cfg);
        let host = format!("127.0.0.1:{}", rs.addr.port());

        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            for _ in 0..2 {
                let before = rec.count();
                let (head, body) = get(&rs, h2, "/who");
                assert!(head.contains(" 200"), "{what}: {head}");
                assert_eq!(body, "ok", "{what}");
                let got = rec.requests();
                assert_eq!(got.len(), before + 1, "{what}");
                assert_eq!(got[before].target, "/who", "{what}");
                assert_eq!(got[before].header("host"), vec![host.as_str()], "{what}");
            }
            let before = rec.count();
            let (head, _) = get(&rs, h2, "/up/x");
            assert!(head.contains(" 200"), "{what}: {head}");
            assert_eq!(
                rec.requests()[before].header("host"),
                vec!["localhost"],
                "{what}"
            );

            let (head, body) = get(&rs, h2, "/h2/authority");
            assert!(head.contains(" 200"), "{what}: {head}");
            assert_eq!(body, "localhost", "{what}");
            let (head, body) = get(&rs, h2, "/h2/anything");
            assert!(head.contains(" 200"), "{what}: {head}");
            assert!(body.starts_with("hello "), "{what}: {body}");
        }
        // One worker, one request at a time: one connection carried them.
        assert_eq!(rec.conns(), 1, "{backend}");
        assert_eq!(rec.anomalies(), Vec::<String>::new(), "{backend}");

        // The health checks' requests reach the socket.
        let end = Instant::now() + Duration::from_secs(10);
        let probe = loop {
            let got = hc.requests();
            if let Some(r) = got.iter().find(|r| r.target == "/hc") {
                break r.clone();
            }
            assert!(Instant::now() < end, "{backend}: no health check came");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(probe.header("host"), vec!["localhost"], "{backend}");
        assert_eq!(
            probe.header("user-agent"),
            vec!["ringside-health"],
            "{backend}"
        );

        let log = rs.stop();
        assert!(!log.contains("panicked"), "{backend}: {log}");
    }
}
