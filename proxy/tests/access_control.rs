//! `allow` and `deny` hold on the route the normalized path chose: no
//! spelling of a refused path gets past them, over HTTP/1.1 or HTTP/2, and
//! a refused request never reaches the backend. Clients come from two
//! loopback addresses (127.0.0.0/8 is all this machine's): 127.0.0.1 and
//! 127.0.0.2.

mod common;

use std::net::IpAddr;

use common::client::Conn;
use common::h2::curl;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS};

const ONE: &str = "127.0.0.1";
const TWO: &str = "127.0.0.2";

/// `/` and `/admin/` to the recorder, `/private/` from a directory; the
/// vhost `locked.example` refuses all loopback clients.
fn config(rec: &Recorder, dir: &TempDir, admin_deny: &str) -> String {
    format!(
        "[upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[vhost]]\nnames = [\"locked.example\"]\ndeny = [\"127.0.0.0/8\"]\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/admin/\"\nupstream = \"rec\"\n{admin_deny}\n\n\
         [[route]]\nprefix = \"/private/\"\nroot = {root:?}\nallow = [\"127.0.0.1\"]\n",
        port = rec.port(),
        root = dir.path().join("private-root"),
    )
}

fn start(backend: &str, dir: &TempDir, rec: &Recorder) -> Ringside {
    dir.write("private-root/private/x", b"PRIVATE");
    let cfg = config(rec, dir, "deny = [\"127.0.0.2\"]");
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::configured(backend, &file)
}

fn get(rs: &Ringside, from: &str, host: &str, target: &str) -> common::client::Resp {
    let mut c = Conn::open_from(rs.addr, from.parse::<IpAddr>().unwrap());
    c.send(
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    c.read(false).expect("a response")
}

/// Each of these is `/admin/x` once normalized.
const ADMIN: &[&str] = &[
    "/admin/x",
    "/admin",
    "/%61dmin/x",
    "/%61%64%6d%69%6e/%78",
    "/a/../admin/x",
    "/public/../admin/x",
    "//admin/x",
    "/admin//x",
    "/./admin/./x",
    "/admin/y/../x",
    "/%2e/admin/x",
    "/a/%2e%2e/admin/x",
    "http://t/%61dmin/x",
];

/// And each of these `/private/x`.
const PRIVATE: &[&str] = &[
    "/private/x",
    "/%70rivate/x",
    "/a/../private/x",
    "//private/x",
    "/./private/./x",
    "/private/y/../x",
    "/a/%2e%2e/private/x",
];

#[test]
fn no_spelling_of_a_refused_path_gets_past_the_rules() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("access-spell");
        let rs = start(backend, &dir, &rec);
        for target in ADMIN {
            let before = rec.count();
            let r = get(&rs, TWO, "t", target);
            assert_eq!(r.status, 403, "{backend} {target} from {TWO}");
            assert_eq!(
                rec.count(),
                before,
                "{backend} {target} reached the backend"
            );
            let r = get(&rs, ONE, "t", target);
            assert_eq!(r.status, 200, "{backend} {target} from {ONE}");
            assert_eq!(rec.count(), before + 1, "{backend} {target}");
        }
        for target in PRIVATE {
            let r = get(&rs, TWO, "t", target);
            assert_eq!(r.status, 403, "{backend} {target} from {TWO}");
            let r = get(&rs, ONE, "t", target);
            assert_eq!(
                (r.status, &r.body[..]),
                (200, &b"PRIVATE"[..]),
                "{backend} {target}"
            );
        }
        // Elsewhere both are served.
        for from in [ONE, TWO] {
            assert_eq!(
                get(&rs, from, "t", "/other").status,
                200,
                "{backend} {from}"
            );
        }
    }
}

#[test]
fn the_route_decides_else_the_vhost() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("access-vhost");
        let rs = start(backend, &dir, &rec);
        let before = rec.count();
        // `/` has no rules of its own: the vhost's refuse everyone here.
        for from in [ONE, TWO] {
            let r = get(&rs, from, "locked.example:80", "/x");
            assert_eq!(r.status, 403, "{backend} {from}");
        }
        assert_eq!(rec.count(), before, "{backend}");
        // `/admin/` has its own, and they alone decide.
        assert_eq!(
            get(&rs, ONE, "locked.example", "/admin/x").status,
            200,
            "{backend}"
        );
        assert_eq!(
            get(&rs, TWO, "locked.example", "/admin/x").status,
            403,
            "{backend}"
        );
    }
}

#[test]
fn http2_requests_meet_the_same_rules() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("access-h2");
        let rs = start(backend, &dir, &rec);
        for target in ADMIN.iter().chain(PRIVATE).filter(|t| t.starts_with('/')) {
            for (from, want) in [(TWO, "403"), (ONE, "200")] {
                let url = format!("http://{}{target}", rs.addr);
                let out = curl(&[
                    "--http2-prior-knowledge",
                    "--path-as-is",
                    "--interface",
                    from,
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_version} %{http_code}",
                    &url,
                ]);
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    text.ends_with(&format!("2 {want}")),
                    "{backend} {target} from {from}: {text:?} {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
}

#[test]
fn a_reload_changes_the_rules_without_a_restart() {
    let rec = Recorder::start();
    let dir = TempDir::new("access-reload");
    dir.write("private-root/private/x", b"PRIVATE");
    let cfg = config(&rec, &dir, "deny = [\"127.0.0.2\"]");
    let file = dir.write("ringside.toml", cfg.as_bytes());
    let mut rs = Ringside::with_admin(1, &file);
    assert_eq!(get(&rs, TWO, "t", "/admin/x").status, 403);
    let cfg = config(&rec, &dir, "allow = [\"127.0.0.2\"]");
    dir.write("ringside.toml", cfg.as_bytes());
    rs.signal(libc::SIGHUP);
    rs.wait_reloads("ok", 1);
    assert_eq!(get(&rs, TWO, "t", "/admin/x").status, 200);
    assert_eq!(get(&rs, ONE, "t", "/admin/x").status, 403);
    // A broken rule is refused with its place, and the old rules stay.
    let broken = config(&rec, &dir, "allow = [\"127.0.0.300\"]");
    dir.write("ringside.toml", broken.as_bytes());
    rs.signal(libc::SIGHUP);
    rs.wait_reloads("failed", 1);
    assert_eq!(get(&rs, TWO, "t", "/admin/x").status, 200);
    let err = rs.stop();
    assert!(
        err.contains("ringside.toml:")
            && err.contains("[[route]] allow")
            && err.contains("127.0.0.300"),
        "{err}"
    );
}
