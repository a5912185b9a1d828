//! Configured header fields through the real binary, on every backend and
//! over HTTP/1.1 and h2 (curl): `response_headers` set, added and removed
//! on static, proxied, FastCGI (a real php-fpm) and ringside's own
//! answers (404, 502), with and without `always`, beside compression's
//! `Vary`; `request_headers` as the upstream receives them (the Recorder,
//! and PHP's `$_SERVER`); `server_tokens`; Via naming the protocol each
//! hop received; and a refused name refused by `ringside check` at its
//! file, line and key.

mod common;

use std::net::TcpListener;

use common::client::Conn;
use common::h2::fetched;
use common::phpfpm::PhpFpm;
use common::recorder::{Recorded, Recorder};
use common::{Ringside, TempDir, BACKENDS};

const PROTOS: [&str; 2] = ["--http1.1", "--http2-prior-knowledge"];

/// Every value of field `name` in a curl response head, in order.
fn all(head: &str, name: &str) -> Vec<String> {
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
        .collect()
}

/// The one value of `name`, or `None`; two values fail.
fn one(head: &str, name: &str) -> Option<String> {
    let v = all(head, name);
    assert!(v.len() <= 1, "{name} twice in {head}");
    v.into_iter().next()
}

fn status(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect(head)
}

fn get(proto: &str, url: &str, extra: &[&str]) -> String {
    let mut args: Vec<&str> = vec![proto];
    args.extend_from_slice(extra);
    args.push(url);
    fetched(&args).0
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn recorded(rec: &Recorder, target: &str) -> Recorded {
    rec.requests()
        .into_iter()
        .find(|r| r.target == target)
        .unwrap_or_else(|| panic!("{target} never reached the upstream"))
}

/// A compressible page, larger than compression's minimum.
fn page() -> Vec<u8> {
    let mut p = b"<!doctype html><html><body>\n".to_vec();
    for i in 0..200 {
        p.extend_from_slice(format!("<p>line {i} of a page</p>\n").as_bytes());
    }
    p.extend_from_slice(b"</body></html>\n");
    p
}

fn site(dir: &TempDir, rec: &Recorder) -> std::path::PathBuf {
    dir.write("root/static/index.html", b"hi\n");
    dir.write("root/static/page.html", &page());
    dir.write("root/index.html", b"root\n");
    let dead = dead_port();
    let text = format!(
        r#"[server]
root = "root"
server_tokens = "edge/7"
response_headers = {{ set = {{ "X-Frame-Options" = "DENY" }}, add = {{ "X-Everywhere" = "yes" }}, always = true }}

[[vhost]]
names = ["v.example"]
response_headers = {{ set = {{ "X-Frame-Options" = "SAMEORIGIN" }}, always = true }}
request_headers = {{ set = {{ "X-Vhost" = "v", "X-Tenant" = "green" }} }}

[upstream.app]
servers = ["127.0.0.1:{rec}"]

[upstream.dead]
servers = ["127.0.0.1:{dead}"]
max_fails = 0

[[route]]
prefix = "/static/"
cache_control = "max-age=5"
response_headers = {{ set = {{ "Cache-Control" = "no-store" }}, add = {{ "X-Static" = "1" }}, remove = ["ETag"] }}

[[route]]
prefix = "/app/"
upstream = "app"
response_headers = {{ set = {{ "X-Recorder" = "replaced" }}, add = {{ "X-Proxied" = "1" }} }}
request_headers = {{ set = {{ "X-Tenant" = "blue", "User-Agent" = "set-by-config" }}, add = {{ "X-Extra" = "e" }}, remove = ["Cookie"] }}

[[route]]
prefix = "/bare/"
upstream = "app"
response_headers = {{ remove = ["X-Recorder", "X-Everywhere"] }}

[[route]]
prefix = "/dead/"
upstream = "dead"
response_headers = {{ add = {{ "X-Dead" = "1" }}, always = true }}

[[route]]
prefix = "/quiet/"
upstream = "dead"
response_headers = {{ add = {{ "X-Quiet" = "1" }} }}
"#,
        rec = rec.port()
    );
    dir.write("ringside.toml", text.as_bytes())
}

/// The server's own fields, `always`: on every response of this site.
fn server_wide(head: &str) {
    assert_eq!(
        one(head, "x-frame-options").as_deref(),
        Some("DENY"),
        "{head}"
    );
    assert_eq!(one(head, "server").as_deref(), Some("edge/7"), "{head}");
}

#[test]
fn response_and_request_fields_on_every_kind_of_answer() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("header-rules");
        let cfg = site(&dir, &rec);
        let srv = Ringside::configured(backend, &cfg);
        for proto in PROTOS {
            let at = |p: &str| format!("http://{}{p}", srv.addr);
            let ctx = format!("{backend} {proto}");

            // A static 200: the route's set replaces the route's own
            // Cache-Control, its add is there, its remove took ETag.
            let h = get(proto, &at("/static/index.html"), &[]);
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            server_wide(&h);
            assert_eq!(one(&h, "x-everywhere").as_deref(), Some("yes"), "{ctx}");
            assert_eq!(one(&h, "x-static").as_deref(), Some("1"), "{ctx}: {h}");
            assert_eq!(
                one(&h, "cache-control").as_deref(),
                Some("no-store"),
                "{ctx}: {h}"
            );
            assert_eq!(one(&h, "etag"), None, "{ctx}: {h}");
            assert!(one(&h, "last-modified").is_some(), "{ctx}: {h}");

            // A 404 on the same route: the route's fields without
            // `always` stay off; the server's `always` ones are there.
            let h = get(proto, &at("/static/missing.html"), &[]);
            assert_eq!(status(&h), 404, "{ctx}: {h}");
            server_wide(&h);
            assert_eq!(one(&h, "x-everywhere").as_deref(), Some("yes"), "{ctx}");
            assert_eq!(one(&h, "x-static"), None, "{ctx}: {h}");

            // Compressed: Vary intact beside the route's fields.
            let h = get(
                proto,
                &at("/static/page.html"),
                &["-H", "Accept-Encoding: gzip"],
            );
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            assert_eq!(
                one(&h, "content-encoding").as_deref(),
                Some("gzip"),
                "{ctx}: {h}"
            );
            assert_eq!(
                one(&h, "vary").as_deref(),
                Some("Accept-Encoding"),
                "{ctx}: {h}"
            );
            assert_eq!(one(&h, "x-static").as_deref(), Some("1"), "{ctx}: {h}");
            assert_eq!(one(&h, "etag"), None, "{ctx}: {h}");

            // Proxied: the upstream's X-Recorder replaced, one added; the
            // request fields as the upstream saw them.
            let target = format!("/app/{backend}{proto}");
            let h = get(
                proto,
                &at(&target),
                &[
                    "-H",
                    "Cookie: a=b",
                    "-H",
                    "X-Tenant: red",
                    "-H",
                    "X-Keep: k",
                ],
            );
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            server_wide(&h);
            assert_eq!(
                one(&h, "x-recorder").as_deref(),
                Some("replaced"),
                "{ctx}: {h}"
            );
            assert_eq!(one(&h, "x-proxied").as_deref(), Some("1"), "{ctx}: {h}");
            assert_eq!(all(&h, "via"), ["1.1 ringside"], "{ctx}: {h}");
            let r = recorded(&rec, &target);
            assert_eq!(r.header("x-tenant"), ["blue"], "{ctx}: {r:?}");
            assert_eq!(r.header("user-agent"), ["set-by-config"], "{ctx}: {r:?}");
            assert_eq!(r.header("x-extra"), ["e"], "{ctx}: {r:?}");
            assert!(r.header("cookie").is_empty(), "{ctx}: {r:?}");
            assert_eq!(r.header("x-keep"), ["k"], "{ctx}: {r:?}");
            let via = if proto == "--http1.1" {
                "1.1 ringside"
            } else {
                "2 ringside"
            };
            assert_eq!(r.header("via"), [via], "{ctx}: {r:?}");

            // A route's remove takes the upstream's field and the
            // server's added one; the server's others stay.
            let h = get(proto, &at("/bare/x"), &[]);
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            server_wide(&h);
            assert_eq!(one(&h, "x-recorder"), None, "{ctx}: {h}");
            assert_eq!(one(&h, "x-everywhere"), None, "{ctx}: {h}");

            // ringside's own 502, with and without `always`.
            let h = get(proto, &at("/dead/x"), &[]);
            assert_eq!(status(&h), 502, "{ctx}: {h}");
            server_wide(&h);
            assert_eq!(one(&h, "x-dead").as_deref(), Some("1"), "{ctx}: {h}");
            let h = get(proto, &at("/quiet/x"), &[]);
            assert_eq!(status(&h), 502, "{ctx}: {h}");
            server_wide(&h);
            assert_eq!(one(&h, "x-quiet"), None, "{ctx}: {h}");
            assert_eq!(one(&h, "x-everywhere").as_deref(), Some("yes"), "{ctx}");

            // A vhost's word on a field replaces the server's, for its
            // names only; the route's replaces the vhost's.
            let target = format!("/app/v-{backend}{proto}");
            let h = get(proto, &at(&target), &["-H", "Host: v.example"]);
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            assert_eq!(
                one(&h, "x-frame-options").as_deref(),
                Some("SAMEORIGIN"),
                "{ctx}: {h}"
            );
            assert_eq!(one(&h, "x-everywhere").as_deref(), Some("yes"), "{ctx}");
            assert_eq!(one(&h, "x-proxied").as_deref(), Some("1"), "{ctx}: {h}");
            let r = recorded(&rec, &target);
            assert_eq!(r.header("x-vhost"), ["v"], "{ctx}: {r:?}");
            assert_eq!(r.header("x-tenant"), ["blue"], "{ctx}: {r:?}");
            let h = get(proto, &at("/static/missing"), &["-H", "Host: V.Example."]);
            assert_eq!(status(&h), 404, "{ctx}: {h}");
            assert_eq!(
                one(&h, "x-frame-options").as_deref(),
                Some("SAMEORIGIN"),
                "{ctx}: {h}"
            );
            assert_eq!(one(&h, "x-static"), None, "{ctx}: {h}");
        }
        // An HTTP/1.0 request is named so in Via.
        let mut c = Conn::open(srv.addr);
        let target = format!("/app/{backend}-1.0");
        let r = c
            .read_after(&format!("GET {target} HTTP/1.0\r\nHost: t\r\n\r\n"))
            .expect("a response");
        assert_eq!(r.status, 200, "{backend}: {}", r.head);
        assert_eq!(recorded(&rec, &target).header("via"), ["1.0 ringside"]);
        assert!(rec.anomalies().is_empty(), "{:?}", rec.anomalies());
    }
}

#[test]
fn fastcgi_responses_and_params() {
    let fpm = PhpFpm::start_tcp(2);
    // The script itself says X-Powered-By.
    let direct = fpm.get("/powered.php", "");
    assert!(
        direct.header("x-powered-by").is_some(),
        "php-fpm sends none: {}",
        direct.text()
    );
    for backend in BACKENDS {
        let dir = TempDir::new("header-rules-php");
        let cfg = fpm.ringside_config(&dir, "");
        let mut text = std::fs::read_to_string(&cfg).unwrap();
        text.push_str(
            "response_headers = { remove = [\"X-Powered-By\"], add = { \"X-Php\" = \"1\" } }\n\
             request_headers = { set = { \"X-Test\" = \"from-config\" } }\n",
        );
        std::fs::write(&cfg, text).unwrap();
        let srv = Ringside::configured(backend, &cfg);
        for proto in PROTOS {
            let at = |p: &str| format!("http://{}{p}", srv.addr);
            let ctx = format!("{backend} {proto}");
            let h = get(proto, &at("/powered.php"), &[]);
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            assert_eq!(one(&h, "x-powered-by"), None, "{ctx}: {h}");
            assert_eq!(one(&h, "x-php").as_deref(), Some("1"), "{ctx}: {h}");
            assert_eq!(one(&h, "server").as_deref(), Some("ringside"), "{ctx}: {h}");

            // A 404 of PHP's own: removed still, nothing added.
            let h = get(proto, &at("/powered.php?code=404"), &[]);
            assert_eq!(status(&h), 404, "{ctx}: {h}");
            assert_eq!(one(&h, "x-powered-by"), None, "{ctx}: {h}");
            assert_eq!(one(&h, "x-php"), None, "{ctx}: {h}");

            // The request field set by config, as PHP reads it.
            let mut args = vec![proto, "-H", "X-Test: from-client"];
            let url = at("/headers.php");
            args.push(&url);
            let (h, body) = fetched(&args);
            assert_eq!(status(&h), 200, "{ctx}: {h}");
            let body = String::from_utf8_lossy(&body);
            assert!(body.contains("HTTP_X_TEST=from-config\n"), "{ctx}: {body}");
        }
    }
}

/// A ringside origin proxying to the Recorder over HTTP/1.1, on h2c, with
/// its own Via pseudonym and Server value; a front ringside reaching it
/// over HTTP/2 (`/h2/`) and HTTP/1.1 (`/h1/`).
#[test]
fn via_names_each_hops_protocol_and_server_tokens_hold() {
    let rec = Recorder::start();
    for backend in BACKENDS {
        let dir = TempDir::new("header-rules-via");
        let origin_cfg = dir.write(
            "origin.toml",
            format!(
                "[server]\nserver_tokens = \"origin-server\"\n[proxy]\nvia = \"origin\"\n\
                 [upstream.rec]\nservers = [\"127.0.0.1:{}\"]\n\
                 [[route]]\nprefix = \"/\"\nupstream = \"rec\"\n",
                rec.port()
            )
            .as_bytes(),
        );
        let origin = Ringside::configured(backend, &origin_cfg);
        dir.write("root/index.html", b"front\n");
        let front = |tokens: &str, name: &str| {
            let cfg = dir.write(
                name,
                format!(
                    "[server]\nroot = \"root\"\n{tokens}\n\
                     [upstream.o2]\nprotocol = \"h2\"\nservers = [\"{o}\"]\n\
                     [upstream.o1]\nservers = [\"{o}\"]\n\
                     [[route]]\nprefix = \"/h2/\"\nupstream = \"o2\"\n\
                     request_headers = {{ set = {{ \"X-Front\" = \"f\" }} }}\n\
                     [[route]]\nprefix = \"/h1/\"\nupstream = \"o1\"\n",
                    o = origin.addr
                )
                .as_bytes(),
            );
            Ringside::configured(backend, &cfg)
        };
        let plain = front("", "front.toml");
        let silent = front("server_tokens = false", "silent.toml");
        for proto in PROTOS {
            let ctx = format!("{backend} {proto}");
            let c = if proto == "--http1.1" { "1.1" } else { "2" };
            for (hop, o) in [("h2", "2"), ("h1", "1.1")] {
                let target = format!("/{hop}/{backend}{proto}");
                let h = get(proto, &format!("http://{}{target}", plain.addr), &[]);
                assert_eq!(status(&h), 200, "{ctx}: {h}");
                // Each Via element names what that hop received: the
                // request as the client sent it, the response as the
                // origin answered it.
                let want = [format!("{c} ringside, {o} origin")];
                let r = recorded(&rec, &target);
                assert_eq!(r.header("via"), want, "{ctx}");
                // A request field set for an HTTP/2 upstream goes in its
                // HEADERS as for any other.
                let front: &[&str] = if hop == "h2" { &["f"] } else { &[] };
                assert_eq!(r.header("x-front"), front, "{ctx}: {r:?}");
                let want = ["1.1 origin".to_string(), format!("{o} ringside")];
                assert_eq!(all(&h, "via"), want, "{ctx}: {h}");
                // The origin's Server is never passed on.
                assert_eq!(all(&h, "server"), ["ringside"], "{ctx}: {h}");

                let h = get(proto, &format!("http://{}/{hop}/quiet", silent.addr), &[]);
                assert_eq!(status(&h), 200, "{ctx}: {h}");
                assert!(all(&h, "server").is_empty(), "{ctx}: {h}");
            }
            for at in [plain.addr, silent.addr] {
                let h = get(proto, &format!("http://{at}/missing"), &[]);
                assert_eq!(status(&h), 404, "{ctx}: {h}");
                let want: &[&str] = if at == plain.addr { &["ringside"] } else { &[] };
                assert_eq!(all(&h, "server"), want, "{ctx}: {h}");
            }
        }
        // A request refused before any handler ran says it too.
        let mut c = Conn::open(silent.addr);
        let r = c
            .read_after("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
            .unwrap();
        assert_eq!(r.status, 400, "{}", r.head);
        assert_eq!(r.header("server"), None, "{}", r.head);
    }
}

#[test]
fn check_refuses_a_field_that_would_break_framing() {
    let dir = TempDir::new("header-rules-check");
    for (key, want) in [
        (
            "request_headers = { set = { \"Content-Length\" = \"0\" } }",
            "bad.toml:6:29: [[route]] request_headers.set: Content-Length cannot be changed here",
        ),
        (
            "request_headers = { add = { Host = \"x\" } }",
            "bad.toml:6:29: [[route]] request_headers.add: Host cannot be changed here: set the route's proxy_host instead",
        ),
        (
            "response_headers = { remove = [\"Transfer-Encoding\"] }",
            "bad.toml:6:32: [[route]] response_headers.remove: Transfer-Encoding cannot be changed here",
        ),
        (
            "response_headers = { set = { \"X-A\" = \"a\\r\\nX-B: b\" } }",
            "bad.toml:6:38: [[route]] response_headers.set: expected a non-empty header value",
        ),
    ] {
        let file = dir.write(
            "bad.toml",
            format!(
                "[upstream.app]\nservers = [\"127.0.0.1:9\"]\n\
                 [[route]]\nprefix = \"/\"\nupstream = \"app\"\n{key}\n"
            )
            .as_bytes(),
        );
        let out = common::isolated().arg("check").arg(&file).output().unwrap();
        assert!(!out.status.success(), "{key}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{key}\n{err}");
    }
}

/// A response the route's cache answers carries the route's fields as
/// the one it stored did (they are applied as it is sent, not stored).
#[test]
fn cached_responses_carry_the_routes_fields() {
    for backend in BACKENDS {
        let dir = TempDir::new("header-rules-cache");
        dir.write("root/c/page.txt", b"cached\n");
        let origin_cfg = dir.write(
            "origin.toml",
            b"[server]\nroot = \"root\"\n[static]\ncache_control = \"max-age=600\"\n",
        );
        let origin = Ringside::configured(backend, &origin_cfg);
        let cfg = dir.write(
            "front.toml",
            format!(
                "[cache.c]\n[upstream.o]\nservers = [\"{}\"]\n\
                 [[route]]\nprefix = \"/c/\"\nupstream = \"o\"\ncache = \"c\"\n\
                 response_headers = {{ add = {{ \"X-Route\" = \"1\" }}, remove = [\"ETag\"] }}\n",
                origin.addr
            )
            .as_bytes(),
        );
        let srv = Ringside::configured(backend, &cfg);
        for proto in PROTOS {
            let ctx = format!("{backend} {proto}");
            let url = format!("http://{}/c/page.txt", srv.addr);
            let mut hit = false;
            for _ in 0..2 {
                let h = get(proto, &url, &[]);
                assert_eq!(status(&h), 200, "{ctx}: {h}");
                assert_eq!(one(&h, "x-route").as_deref(), Some("1"), "{ctx}: {h}");
                assert_eq!(one(&h, "etag"), None, "{ctx}: {h}");
                hit = one(&h, "age").is_some();
            }
            assert!(hit, "{ctx}: the second was not answered from the cache");
        }
    }
}

/// A reload takes new fields and a new Server value, on a kept
/// connection's next request too; a config with a refused name is
/// refused and the old fields keep serving.
#[test]
fn reload_takes_new_fields_and_a_broken_config_keeps_the_old() {
    for backend in BACKENDS {
        let dir = TempDir::new("header-rules-reload");
        dir.write("root/index.html", b"hi\n");
        let config = |tokens: &str, rules: &str| {
            format!(
                "[server]\nroot = \"root\"\nserver_tokens = {tokens}\nresponse_headers = {rules}\n"
            )
        };
        let cfg = dir.write(
            "ringside.toml",
            config("\"one\"", "{ add = { \"X-Gen\" = \"1\" } }").as_bytes(),
        );
        let mut r = Ringside::with_admin_on(backend, 1, &cfg);
        let mut kept = Conn::open(r.addr);
        let seen = |c: &mut Conn| {
            let resp = c.get("/index.html");
            assert_eq!(resp.status, 200, "{backend}: {}", resp.head);
            (resp.header("server"), resp.header("x-gen"))
        };
        let want = |s: &str, g: &str| (Some(s.to_owned()), Some(g.to_owned()));
        assert_eq!(seen(&mut kept), want("one", "1"), "{backend}");

        dir.write(
            "ringside.toml",
            config("\"two\"", "{ add = { \"X-Gen\" = \"2\" } }").as_bytes(),
        );
        r.signal(libc::SIGHUP);
        r.wait_reloads("ok", 1);
        assert_eq!(seen(&mut kept), want("two", "2"), "{backend}");

        dir.write(
            "ringside.toml",
            config("false", "{ set = { \"Transfer-Encoding\" = \"x\" } }").as_bytes(),
        );
        r.signal(libc::SIGHUP);
        r.wait_reloads("failed", 1);
        assert_eq!(seen(&mut kept), want("two", "2"), "{backend}");
        assert_eq!(seen(&mut Conn::open(r.addr)), want("two", "2"), "{backend}");
    }
}
