//! `[real_ip]`: the client's address from X-Forwarded-For, taken only
//! when the connection's peer is trusted, walking right to left past the
//! trusted hops. The address taken is the one the access log shows and
//! `deny` judges; the X-Forwarded-For sent upstream keeps the field as
//! received and appends the hop that handed the request over. A peer
//! outside `from` gets no say: its field is neither logged nor judged.
//! Trusted clients come from 127.0.0.1, untrusted ones from 127.0.0.3;
//! over HTTP/1.1 and h2 (prior knowledge), on every backend.

mod common;

use common::h2::curl;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS};

/// The client the balancers report, and the route that refuses it.
const CLIENT: &str = "203.0.113.9";
const UNTRUSTED: &str = "127.0.0.3";

fn start(backend: &str, dir: &TempDir, rec: &Recorder) -> Ringside {
    let cfg = format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\n\n\
         [access_log]\npath = {log:?}\nflush_every = \"10ms\"\n\n\
         [real_ip]\nfrom = [\"127.0.0.1\", \"10.0.0.0/8\"]\nrecursive = true\n\n\
         [upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/secret/\"\nupstream = \"rec\"\ndeny = [\"{CLIENT}\"]\n",
        log = dir.path().join("access.log"),
        port = rec.port(),
    );
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::as_configured(backend, &file)
}

/// A GET from `from` with X-Forwarded-For `xff`: its status.
fn get(rs: &Ringside, from: &str, h2: bool, path: &str, xff: &str) -> String {
    let url = format!("http://{}{path}", rs.addr);
    let header = format!("X-Forwarded-For: {xff}");
    let mut args = vec![
        "--interface",
        from,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        &header,
    ];
    if h2 {
        args.push("--http2-prior-knowledge");
    }
    args.push(&url);
    let out = curl(&args);
    String::from_utf8_lossy(&out.stdout)
        .rsplit('\n')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn the_address_comes_through_trusted_hops_only() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let dir = TempDir::new("real-ip");
            let rs = start(backend, &dir, &rec);

            // Trusted peer, trusted hop: the client behind them.
            let xff = format!("{CLIENT}, 10.1.1.1");
            let before = rec.count();
            assert_eq!(get(&rs, "127.0.0.1", h2, "/who", &xff), "200", "{what}");
            let got = rec.requests();
            assert_eq!(got.len(), before + 1, "{what}");
            assert_eq!(
                got[before].header("x-forwarded-for"),
                vec![format!("{CLIENT}, 10.1.1.1, 127.0.0.1")],
                "{what}"
            );
            assert_eq!(
                get(&rs, "127.0.0.1", h2, "/secret/x", &xff),
                "403",
                "{what}"
            );
            assert_eq!(rec.count(), before + 1, "{what}");

            // Untrusted peer: the field is only passed on.
            let before = rec.count();
            assert_eq!(
                get(&rs, UNTRUSTED, h2, "/secret/x", CLIENT),
                "200",
                "{what}"
            );
            let got = rec.requests();
            assert_eq!(got.len(), before + 1, "{what}");
            assert_eq!(
                got[before].header("x-forwarded-for"),
                vec![format!("{CLIENT}, {UNTRUSTED}")],
                "{what}"
            );

            // A trusted peer whose rightmost entry is not an address: the
            // walk ends at once and the peer itself is the client.
            assert_eq!(
                get(
                    &rs,
                    "127.0.0.1",
                    h2,
                    "/secret/x",
                    &format!("{CLIENT}, unknown")
                ),
                "200",
                "{what}"
            );

            let log = rs.stop();
            assert!(!log.contains("panicked"), "{what}: {log}");
            let lines = std::fs::read_to_string(dir.path().join("access.log")).unwrap();
            let peers: Vec<&str> = lines
                .lines()
                .map(|l| l.split(' ').next().unwrap())
                .collect();
            assert_eq!(
                peers,
                [CLIENT, CLIENT, UNTRUSTED, "127.0.0.1"],
                "{what}: {lines}"
            );
        }
    }
}
