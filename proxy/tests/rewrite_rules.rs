//! Rewrites, redirects and fixed answers through the real binary, on every
//! backend and over HTTP/1.1 and HTTP/2 (curl): a front controller for a
//! real php-fpm, redirects built from captures, conditions that must all
//! hold, the rewrite cycle cut at 10, fixed answers, and, above all, that
//! no rule makes a route held back by allow/deny or basic auth reachable
//! by another spelling of its path.

mod common;

use std::process::Command;

use common::h2::fetched;
use common::phpfpm::PhpFpm;
use common::recorder::Recorder;
use common::{Ringside, TempDir, BACKENDS};

const PROTOS: [&str; 2] = ["1.1", "2"];
const ONE: &str = "127.0.0.1";
const TWO: &str = "127.0.0.2";

/// (status, head, body) of `target` over HTTP/`proto`, the path sent as
/// written, with curl's `args` added.
fn fetch(rs: &Ringside, proto: &str, target: &str, args: &[&str]) -> (u16, String, Vec<u8>) {
    let url = format!("http://{}{target}", rs.addr);
    let flag = if proto == "2" {
        "--http2-prior-knowledge"
    } else {
        "--http1.1"
    };
    let mut all = vec![flag, "--path-as-is"];
    all.extend_from_slice(args);
    all.push(&url);
    let (head, body) = fetched(&all);
    assert!(
        head.starts_with(&format!("HTTP/{proto} ")),
        "{target}: {head}"
    );
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, body)
}

fn header(head: &str, name: &str) -> Option<String> {
    common::h2::header(head, name)
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

#[test]
fn a_front_controller_runs_index_php_with_the_path_in_q() {
    let fpm = PhpFpm::start_tcp(2);
    let root = PhpFpm::docroot().join("front");
    for backend in BACKENDS {
        let dir = TempDir::new("rewrite-front");
        let cfg = format!(
            "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"{}\"]\n\n\
             [[rewrite]]\npattern = \"^/(.*)$\"\nto = \"/index.php?q=$1\"\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"php\"\nroot = {root:?}\n",
            fpm.listen
        );
        let rs = Ringside::configured(backend, &dir.write("ringside.toml", cfg.as_bytes()));
        for proto in PROTOS {
            let (status, _, body) = fetch(&rs, proto, "/blog/2024/hello?page=2", &[]);
            assert_eq!(status, 200, "{backend} {proto}: {}", text(&body));
            assert_eq!(
                text(&body),
                "q=blog/2024/hello\nSCRIPT_NAME=/index.php\n\
                 QUERY_STRING=q=blog/2024/hello&page=2\n\
                 REQUEST_URI=/blog/2024/hello?page=2\nPATH_INFO=\n",
                "{backend} {proto}"
            );
            // The client's spelling is normalized before the rule reads
            // it; REQUEST_URI is the normalized path the client asked for.
            let (_, _, body) = fetch(&rs, proto, "/a/./b/%63", &[]);
            assert_eq!(
                text(&body),
                "q=a/b/c\nSCRIPT_NAME=/index.php\nQUERY_STRING=q=a/b/c\n\
                 REQUEST_URI=/a/b/c\nPATH_INFO=\n",
                "{backend} {proto}"
            );
        }
    }
}

#[test]
fn redirects_are_built_from_captures() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("rewrite-redirect");
        let cfg = format!(
            "[upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n\
             [[rewrite]]\npattern = \"^/old/([a-z]+)/([0-9]+)$\"\n\
             redirect = \"$scheme://$host/new/$2/$1?$query\"\nstatus = 301\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\
             rewrite = [{{ pattern = \"^/docs/(.*)$\", redirect = \"/manual/$1\", status = 308 }}]\n",
            rec.port()
        );
        let rs = Ringside::configured(backend, &dir.write("ringside.toml", cfg.as_bytes()));
        let before = rec.count();
        for proto in PROTOS {
            let (status, head, _) = fetch(&rs, proto, "/old/abc/42?x=1", &[]);
            assert_eq!(status, 301, "{backend} {proto}");
            assert_eq!(
                header(&head, "location"),
                Some(format!("http://{}/new/42/abc?x=1", rs.addr)),
                "{backend} {proto}"
            );
            let (status, head, _) = fetch(&rs, proto, "/old/abc/42", &["-H", "Host: www.example"]);
            assert_eq!(status, 301);
            assert_eq!(
                header(&head, "location").as_deref(),
                Some("http://www.example/new/42/abc?"),
                "{backend} {proto}"
            );
            let (status, head, _) = fetch(&rs, proto, "/docs/%61/b", &[]);
            assert_eq!(status, 308, "{backend} {proto}");
            assert_eq!(header(&head, "location").as_deref(), Some("/manual/a/b"));
            // The pattern does not match: no redirect.
            assert_eq!(fetch(&rs, proto, "/old/ABC/42", &[]).0, 200);
        }
        assert_eq!(
            rec.count(),
            before + 2,
            "{backend}: only the misses went up"
        );
    }
}

#[test]
fn a_rule_with_a_host_and_a_cookie_matches_only_when_both_hold() {
    for backend in BACKENDS {
        let dir = TempDir::new("rewrite-cond");
        dir.write("www/app/page", b"STABLE");
        dir.write("www/beta/page", b"BETA");
        let cfg = format!(
            "[server]\nroot = {:?}\n\n\
             [[rewrite]]\npattern = \"^/app/(.*)$\"\nhost = [\"beta.example\"]\n\
             cookie = {{ channel = \"^beta$\" }}\nto = \"/beta/$1\"\n",
            dir.path().join("www")
        );
        let rs = Ringside::configured(backend, &dir.write("ringside.toml", cfg.as_bytes()));
        for proto in PROTOS {
            for (host, cookie, want) in [
                ("beta.example", "a=1; channel=beta", "BETA"),
                ("BETA.example:8080", "channel=beta", "BETA"),
                ("beta.example", "channel=stable", "STABLE"),
                ("beta.example", "a=1", "STABLE"),
                ("www.example", "channel=beta", "STABLE"),
            ] {
                let (status, _, body) = fetch(
                    &rs,
                    proto,
                    "/app/page",
                    &[
                        "-H",
                        &format!("Host: {host}"),
                        "-H",
                        &format!("Cookie: {cookie}"),
                    ],
                );
                assert_eq!(
                    (status, text(&body).as_str()),
                    (200, want),
                    "{backend} {proto} {host} {cookie}"
                );
            }
        }
    }
}

#[test]
fn the_rewrite_cycle_is_cut_at_ten() {
    for backend in BACKENDS {
        let dir = TempDir::new("rewrite-loop");
        dir.write("www/count/xxxxxxxxxx", b"TEN");
        let cfg = format!(
            "[server]\nroot = {:?}\n\n\
             [[route]]\nprefix = \"/count/\"\n\
             rewrite = [{{ pattern = \"^/count/(x{{0,9}})$\", to = \"/count/x$1\" }}]\n\n\
             [[route]]\nprefix = \"/loop/\"\n\
             rewrite = [{{ pattern = \"^/loop/(.*)$\", to = \"/loop/$1\" }}]\n",
            dir.path().join("www")
        );
        let rs = Ringside::configured(backend, &dir.write("ringside.toml", cfg.as_bytes()));
        for proto in PROTOS {
            // Ten rewrites are allowed...
            let (status, _, body) = fetch(&rs, proto, "/count/", &[]);
            assert_eq!(
                (status, text(&body).as_str()),
                (200, "TEN"),
                "{backend} {proto}"
            );
            // ... and an eleventh is a 500.
            assert_eq!(
                fetch(&rs, proto, "/loop/a", &[]).0,
                500,
                "{backend} {proto}"
            );
        }
        let err = rs.stop();
        assert_eq!(err.matches("rewrite cycle").count(), 2, "{backend}: {err}");
        assert!(err.contains("/loop/a"), "{err}");
    }
}

#[test]
fn fixed_answers() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("rewrite-answer");
        let cfg = format!(
            "[upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\n\
             [[rewrite]]\npattern = \"^/robots\\\\.txt$\"\nanswer = \"User-agent: *\\nDisallow: /\\n\"\n\n\
             [[vhost]]\nnames = [\"shop.example\"]\ndeny = [\"127.0.0.2\"]\n\
             rewrite = [{{ pattern = \"^/\", answer = \"closed\\n\", status = 503 }}]\n\n\
             [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\
             rewrite = [{{ pattern = \"^/wp-\", method = [\"POST\"], answer = \"<p>no</p>\", status = 403, content_type = \"text/html\" }}]\n",
            rec.port()
        );
        let rs = Ringside::configured(backend, &dir.write("ringside.toml", cfg.as_bytes()));
        let before = rec.count();
        for proto in PROTOS {
            let (status, head, body) = fetch(&rs, proto, "/robots.txt", &[]);
            assert_eq!(
                (status, text(&body).as_str()),
                (200, "User-agent: *\nDisallow: /\n"),
                "{backend} {proto}"
            );
            assert_eq!(header(&head, "content-type").as_deref(), Some("text/plain"));
            let (status, head, body) = fetch(&rs, proto, "/wp-login.php", &["-X", "POST"]);
            assert_eq!(
                (status, text(&body).as_str()),
                (403, "<p>no</p>"),
                "{backend}"
            );
            assert_eq!(header(&head, "content-type").as_deref(), Some("text/html"));
            // Another method: the condition fails, the request goes up.
            assert_eq!(fetch(&rs, proto, "/wp-login.php", &[]).0, 200);
            // A vhost's answer, to the clients its deny admits only.
            let shop = |from| ["-H", "Host: shop.example", "--interface", from];
            let (status, _, body) = fetch(&rs, proto, "/x", &shop(ONE));
            assert_eq!(
                (status, text(&body).as_str()),
                (503, "closed\n"),
                "{backend}"
            );
            assert_eq!(fetch(&rs, proto, "/x", &shop(TWO)).0, 403, "{backend}");
        }
        assert_eq!(rec.count(), before + 2, "{backend}");
    }
}

/// `user:hash` for bcrypt, as `htpasswd -nbB` prints it.
fn bcrypt_line(user: &str, password: &str) -> String {
    let out = Command::new("htpasswd")
        .args(["-nbB", "-C", "5", user, password])
        .output()
        .expect("htpasswd must be installed (apache2-utils; run scripts/test.sh)");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `/` and `/admin/` (which refuses 127.0.0.2) and `/staff/` (basic auth)
/// to the recorder, `/private/` (127.0.0.1 only) from a directory; rules
/// that lead into them from `/public/`, `/open/` (a route's), `/up/` (a
/// `..` in the output), `/climb/` (above the root) and `/enc/` (`%2F`).
fn held_back(rec: &Recorder, dir: &TempDir) -> String {
    dir.write("www/private/x", b"PRIVATE");
    dir.write(
        "staff.htpasswd",
        format!("{}\n", bcrypt_line("ann", "pw")).as_bytes(),
    );
    format!(
        "[server]\nroot = {root:?}\n\n\
         [upstream.rec]\nservers = [\"127.0.0.1:{port}\"]\n\n\
         [[rewrite]]\npattern = \"^/public/(.*)$\"\nto = \"/$1\"\n\n\
         [[rewrite]]\npattern = \"^/up/(.*)$\"\nto = \"/public/../$1\"\n\n\
         [[rewrite]]\npattern = \"^/climb/(.*)$\"\nto = \"/../$1\"\n\n\
         [[rewrite]]\npattern = \"^/enc/(.*)$\"\nto = \"/admin%2F$1\"\n\n\
         [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n\n\
         [[route]]\nprefix = \"/open/\"\nupstream = \"rec\"\n\
         rewrite = [{{ pattern = \"^/open/(.*)$\", to = \"/$1\" }}]\n\n\
         [[route]]\nprefix = \"/admin/\"\nupstream = \"rec\"\ndeny = [\"127.0.0.2\"]\n\n\
         [[route]]\nprefix = \"/staff/\"\nupstream = \"rec\"\n\
         basic_auth = {{ realm = \"Staff\", users = \"staff.htpasswd\" }}\n\n\
         [[route]]\nprefix = \"/private/\"\nallow = [\"127.0.0.1\"]\n",
        root = dir.path().join("www"),
        port = rec.port(),
    )
}

/// Each of these is `/admin/x` once rewritten and normalized. (Server
/// rules run once, before the first routing, as nginx's: `/public/public/`
/// and a route's rewrite to `/public/` go up as `/public/...`, to `/`.)
const ADMIN: &[&str] = &[
    "/public/admin/x",
    "/public/%61dmin/x",
    "/public/%61%64%6d%69%6e/%78",
    "/public//admin/x",
    "/public/./admin/x",
    "/public/a/../admin/x",
    "/public/admin;p/x",
    "/open/admin/x",
    "/open/%61dmin/x",
    "/up/admin/x",
    "/up/%61dmin/x",
    // Normalized before any rule reads it: `/admin/x` itself.
    "/public/../admin/x",
    "/public/%2e%2e/admin/x",
];

#[test]
fn no_rule_makes_a_held_back_route_reachable_by_another_spelling() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("rewrite-held");
        let cfg = held_back(&rec, &dir);
        let rs = Ringside::configured(backend, &dir.write("ringside.toml", cfg.as_bytes()));
        for proto in PROTOS {
            for target in ADMIN {
                let before = rec.count();
                let from_two = ["--interface", TWO];
                let (status, _, _) = fetch(&rs, proto, target, &from_two);
                assert_eq!(status, 403, "{backend} {proto} {target} from {TWO}");
                assert_eq!(
                    rec.count(),
                    before,
                    "{backend} {target} reached the backend"
                );
                let (status, _, _) = fetch(&rs, proto, target, &["--interface", ONE]);
                assert_eq!(status, 200, "{backend} {proto} {target} from {ONE}");
                let got = rec.requests().pop().unwrap();
                assert!(
                    got.target.starts_with("/admin"),
                    "{backend} {target} went up as {}",
                    got.target
                );
            }
            for target in ["/public/private/x", "/open/%70rivate/x", "/up/private/x"] {
                let (status, _, _) = fetch(&rs, proto, target, &["--interface", TWO]);
                assert_eq!(status, 403, "{backend} {proto} {target}");
                let (status, _, body) = fetch(&rs, proto, target, &["--interface", ONE]);
                assert_eq!((status, &body[..]), (200, &b"PRIVATE"[..]), "{target}");
            }
            for target in ["/public/staff/x", "/open/%73taff/x", "/up/staff/x"] {
                let before = rec.count();
                assert_eq!(fetch(&rs, proto, target, &[]).0, 401, "{backend} {target}");
                assert_eq!(
                    rec.count(),
                    before,
                    "{backend} {target} reached the backend"
                );
                let (status, _, _) = fetch(&rs, proto, target, &["-u", "ann:pw"]);
                assert_eq!(status, 200, "{backend} {proto} {target} with a password");
            }
            // Outputs the normalizer refuses are refused, never passed on.
            for target in ["/climb/admin/x", "/climb/x", "/enc/x"] {
                let before = rec.count();
                assert_eq!(fetch(&rs, proto, target, &[]).0, 400, "{backend} {target}");
                assert_eq!(
                    rec.count(),
                    before,
                    "{backend} {target} reached the backend"
                );
            }
        }
    }
}

#[test]
fn check_names_a_pattern_that_does_not_compile_and_a_reload_keeps_the_old_rules() {
    let dir = TempDir::new("rewrite-check");
    dir.write("www/new/x", b"NEW");
    let good = format!(
        "[server]\nroot = {:?}\n\n[[rewrite]]\npattern = \"^/old/(.*)$\"\nto = \"/new/$1\"\n",
        dir.path().join("www")
    );
    let file = dir.write("ringside.toml", good.as_bytes());
    let mut rs = Ringside::with_admin(1, &file);
    assert_eq!(rs.get("/old/x"), (200, b"NEW".to_vec()));
    let broken = good.replace("^/old/(.*)$", "^/old/(.*$");
    dir.write("ringside.toml", broken.as_bytes());
    let out = Command::new(common::BIN)
        .args(["check", file.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("ringside.toml:5:11: [[rewrite]] pattern: expected a regular expression"),
        "{err}"
    );
    rs.signal(libc::SIGHUP);
    rs.wait_reloads("failed", 1);
    assert_eq!(rs.get("/old/x"), (200, b"NEW".to_vec()));
    let err = rs.stop();
    assert!(err.contains("[[rewrite]] pattern"), "{err}");
}
