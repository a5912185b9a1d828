//! Every routing decision is made on one normalized path, and that path is
//! what goes upstream. With `/` proxied to a recording backend and
//! `/private/` served from a directory, no spelling of a `/private/` path
//! may reach the backend, and what the backend receives is exactly the
//! path the router matched (after the route's own prefix rewriting).
//! Requests go over raw sockets: curl would normalize the paths itself.

mod common;

use common::client::Conn;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS};

/// `/` to the recorder, `/api/` to it with its prefix replaced, `/raw/` to
/// it with the client's bytes, `/private/` from a directory.
fn start(backend: &str, dir: &TempDir, rec: &Recorder, proxy: &str) -> Ringside {
    let cfg = format!(
        "[proxy]\n{proxy}\n[upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/api/\"\nupstream = \"rec\"\nreplace_prefix = \"/v1/\"\n\n\
         [[route]]\nprefix = \"/raw/\"\nupstream = \"rec\"\nforward_path = \"raw\"\n\n\
         [[route]]\nprefix = \"/private/\"\nroot = {root:?}\n",
        port = rec.port(),
        root = dir.path().join("private-root"),
    );
    dir.write("private-root/private/x", b"PRIVATE");
    let file = dir.write("ringside.toml", cfg.as_bytes());
    Ringside::configured(backend, &file)
}

fn get(rs: &Ringside, target: &str) -> common::client::Resp {
    let mut c = Conn::open(rs.addr);
    c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes());
    c.read(false).expect("a response")
}

#[test]
fn no_spelling_of_a_held_back_path_reaches_the_backend() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("norm-held");
        let rs = start(backend, &dir, &rec, "");
        #[rustfmt::skip]
        let spellings: &[(&str, u16)] = &[
            // (target, status): each one is /private/x, served from disk
            ("/private/x", 200),
            ("/%70rivate/x", 200),
            ("/%70%72%69%76%61%74%65/%78", 200),
            ("/a/../private/x", 200),
            ("/public/../private/x", 200),
            ("//private/x", 200),
            ("/private//x", 200),
            ("/./private/./x", 200),
            ("/private/y/../x", 200),
            ("/%2e/private/x", 200),
            ("/a/%2e%2e/private/x", 200),
            ("http://t/%70rivate/x", 200),
            // or refused outright
            ("/private%2fx", 400),
            ("/public%2f..%2fprivate/x", 400),
            ("/private\\x", 400),
            ("/private%5cx", 400),
            ("/../private/x", 400),
            ("/a/../../private/x", 400),
            ("/private%00/x", 400),
            ("/%c0%afprivate/x", 400),
            // Segment parameters never move a path out of its route
            // (Tomcat serves /private;x/x as /private/x): held back here,
            // where nothing under these names is found.
            ("/private;x/x", 404),
            ("/private;jsessionid=1/x", 404),
            ("/;x/private/x", 404),
            ("/%70rivate;/x", 404),
            // and a dot segment with them (`..;`, which Tomcat climbs and
            // others do not) is refused.
            ("/a/..;/private/x", 400),
            ("/private/..;/..;/x", 400),
            ("/a/.;x/b", 400),
        ];
        for (target, status) in spellings {
            let before = rec.count();
            let r = get(&rs, target);
            assert_eq!(r.status, *status, "{backend} {target}");
            if *status == 200 {
                assert_eq!(r.body, b"PRIVATE", "{backend} {target}");
            }
            assert_eq!(
                rec.count(),
                before,
                "{backend} {target} reached the backend"
            );
        }
    }
}

#[test]
fn the_backend_receives_the_path_the_router_matched() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("norm-sent");
        let rs = start(backend, &dir, &rec, "");
        #[rustfmt::skip]
        let cases: &[(&str, &str)] = &[
            // (target sent, target the backend got)
            ("/a/b", "/a/b"),
            ("/%61/./b//c/", "/a/b/c/"),
            ("/a/x/../b?q=%2e%2E/..", "/a/b?q=%2e%2E/.."),
            ("/%7euser/%c3%a9t%C3%A9", "/~user/%C3%A9t%C3%A9"),
            ("/a%20b", "/a%20b"),
            ("http://t/x/./y", "/x/y"),
            // the route is chosen on the normalized path, then its prefix
            // is replaced on that same path
            ("/%61pi/x", "/v1/x"),
            ("/other/../api/./x", "/v1/x"),
            ("/api", "/v1/"),
            // a route that keeps the client's bytes
            ("/raw/%61/./b", "/raw/%61/./b"),
            ("/%72aw/%61", "/%72aw/%61"),
        ];
        for (sent, want) in cases {
            let before = rec.count();
            let r = get(&rs, sent);
            assert_eq!(r.status, 200, "{backend} {sent}");
            let got = rec.requests();
            assert_eq!(got.len(), before + 1, "{backend} {sent}");
            assert_eq!(got[before].target, *want, "{backend} {sent}");
        }
        assert!(rec.anomalies().is_empty(), "{:?}", rec.anomalies());
    }
}

/// Over HTTP/2 too (curl keeps the path as given), parameters set aside
/// decide the route and still reach the backend where it holds the path;
/// `path_parameters = "reject"` refuses them all.
#[test]
fn segment_parameters_never_change_the_route() {
    let rec = Recorder::start();
    let dir = TempDir::new("norm-params");
    let rs = start("io-uring", &dir, &rec, "");
    let h2 = |path: &str| {
        let url = format!("http://{}{path}", rs.addr);
        let out = std::process::Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "30",
                "--http2-prior-knowledge",
                "--path-as-is",
            ])
            .args([
                "-o",
                "/dev/null",
                "-w",
                "%{http_version} %{http_code}",
                &url,
            ])
            .output()
            .expect("curl must be installed (run scripts/test.sh)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for (path, want) in [
        ("/private;x/x", "2 404"),
        ("/private;x/y", "2 404"),
        ("/a/..;/private/x", "2 400"),
        ("/private/x", "2 200"),
    ] {
        assert_eq!(h2(path), want, "{path}");
    }
    assert_eq!(rec.count(), 0, "{:?}", rec.requests());
    // Under the backend's own route, they go on as sent.
    assert_eq!(h2("/a;jsessionid=1/b;v=2"), "2 200");
    assert_eq!(get(&rs, "/c;x/d").status, 200);
    let got: Vec<String> = rec.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(got, ["/a;jsessionid=1/b;v=2", "/c;x/d"]);

    let rec = Recorder::start();
    let dir = TempDir::new("norm-params-reject");
    let rs = start("io-uring", &dir, &rec, "path_parameters = \"reject\"");
    for path in ["/a;x/b", "/private;x/x", "/a/b;"] {
        assert_eq!(get(&rs, path).status, 400, "{path}");
    }
    assert_eq!(get(&rs, "/a/b%3Bc").status, 200);
    assert_eq!(rec.requests()[0].target, "/a/b%3Bc");
    assert_eq!(rec.count(), 1);
}

#[test]
fn encoded_slashes_passed_on_still_route_on_the_decoded_path() {
    let rec = Recorder::start();
    let dir = TempDir::new("norm-slash");
    let rs = start("io-uring", &dir, &rec, "encoded_slash = \"pass\"");
    // Decoded, this is /private/x: held back.
    let before = rec.count();
    let r = get(&rs, "/private%2Fx");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (400, &b"400 Bad Request\n"[..])
    );
    let r = get(&rs, "/a%2F..%2Fprivate/x");
    assert_eq!(r.status, 400);
    assert_eq!(rec.count(), before);
    // Elsewhere the backend gets the encoded slash, in upper case.
    let r = get(&rs, "/a%2fb");
    assert_eq!(r.status, 200);
    assert_eq!(rec.requests()[before].target, "/a%2Fb");
    // The static files never serve a name with a slash in it.
    assert_eq!(get(&rs, "/private/x%2F").status, 400);
    // A prefix to replace that the encoded slash hides is not sent on
    // unrewritten: the route matched /api/x, which /api%2Fx is not.
    let before = rec.count();
    assert_eq!(get(&rs, "/api%2Fx").status, 400);
    assert_eq!(rec.count(), before);
}
