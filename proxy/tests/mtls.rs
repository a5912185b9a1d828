//! Client certificates (mTLS) through the real binary, with curl over
//! HTTP/1.1 and HTTP/2 and openssl s_client: `client_auth = "require"`
//! refuses handshakes without a good certificate (none, another CA's,
//! expired, revoked by the CRL), `"optional"` lets a client without one
//! in and `require_client_cert` routes answer it 403; the verified
//! certificate reaches an HTTP/1.1 upstream (the recorder) and an h2 one
//! (python3-h2) in RFC 9440's `Client-Cert` / `Client-Cert-Chain`, a
//! client's own such fields never do; the JSON access log names the
//! subject; sessions never resume across listeners that verify
//! differently; a reload changes `client_auth` and the CRL, and a broken
//! CA file keeps the old settings. Certificates are made by the test.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use common::pki::Ca;
use common::recorder::Recorder;
use common::script::{self, Peer};
use common::{Ringside, TempDir};

/// The backends that serve TLS (glommio refuses TLS listeners).
const TLS_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

/// Serials of the clients CA's certificates.
const ALICE: u64 = 1001;
const REVOKED: u64 = 1002;
const EXPIRED: u64 = 1003;

/// The certificates and the config's files: `site` (the server's), and
/// from the clients CA `alice`, `revoked` (in `clients.crl`) and
/// `expired`; `mallory` from another CA.
struct Pki {
    dir: TempDir,
    clients: Ca,
}

impl Pki {
    fn new(tag: &str) -> Pki {
        let dir = TempDir::new(tag);
        let server = Ca::new("mtls server CA");
        server.leaf(&dir, "site", "site", &["localhost"]);
        let clients = Ca::new("mtls clients CA");
        dir.write("clients.pem", clients.pem().as_bytes());
        clients.client(&dir, "alice", "alice", ALICE, false);
        clients.client(&dir, "revoked", "revoked", REVOKED, false);
        clients.client(&dir, "expired", "expired", EXPIRED, true);
        dir.write("clients.crl", clients.crl(&[REVOKED]).as_bytes());
        let other = Ca::new("mtls other CA");
        other.client(&dir, "mallory", "alice", ALICE, false);
        dir.write("root/index.html", b"static\n");
        Pki { dir, clients }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }

    /// The RFC 9440 Byte Sequence of the `n`th certificate of `stem.pem`.
    fn sf_binary(&self, stem: &str, n: usize) -> String {
        let pem = std::fs::read_to_string(self.dir.path().join(format!("{stem}.pem"))).unwrap();
        let b64: Vec<String> = pem
            .split("-----BEGIN CERTIFICATE-----")
            .skip(1)
            .map(|c| {
                c.split("-----END")
                    .next()
                    .unwrap()
                    .replace(['\n', '\r'], "")
            })
            .collect();
        // Decoded and encoded again: one line, padding as ours.
        format!(":{}:", STANDARD.encode(STANDARD.decode(&b64[n]).unwrap()))
    }
}

/// The listeners' `tls` tables: `require`'s and `optional`'s client keys.
fn config(require: &str, optional: &str, recorder: u16, h2: u16) -> String {
    let tls = |client: &str| format!("{{ cert = \"site.pem\", key = \"site.key\"{client} }}");
    format!(
        r#"
[server]
listen = [
  {{ addr = "127.0.0.1:0", tls = {} }},
  {{ addr = "127.0.0.2:0", tls = {} }},
  {{ addr = "127.0.0.3:0", tls = {} }},
  "127.0.0.4:0",
]
root = "root"

[admin]
listen = "127.0.0.1:0"

[access_log]
path = "access.log"
format = "json"
flush_every = "10ms"

[upstream.rec]
servers = ["127.0.0.1:{recorder}"]

[upstream.h2]
servers = ["127.0.0.1:{h2}"]
protocol = "h2"

[[route]]
prefix = "/rec/"
upstream = "rec"

[[route]]
prefix = "/h2/"
upstream = "h2"
strip_prefix = true

[[route]]
prefix = "/secure/"
upstream = "rec"
require_client_cert = true

[[route]]
prefix = "/files/"
alias = "root"
require_client_cert = true
"#,
        tls(require),
        tls(optional),
        tls(""),
    )
}

const CRL: &str = ", client_crl = [\"clients.crl\"]";

fn client_keys(mode: &str) -> String {
    format!(", client_auth = \"{mode}\", client_ca = \"clients.pem\"{CRL}")
}

/// A ringside with four listeners (TLS `require`, TLS `optional`, TLS
/// without client certificates, plain) before a recorder and an h2 origin.
struct Site {
    pki: Pki,
    srv: Ringside,
    rec: Recorder,
    _h2: Peer,
    h2_port: u16,
    require: SocketAddr,
    optional: SocketAddr,
    tls: SocketAddr,
    plain: SocketAddr,
}

impl Site {
    fn start(tag: &str, backend: &str) -> Site {
        let pki = Pki::new(tag);
        let rec = Recorder::start();
        let (h2, h2_port) = script::start("/usr/bin/python3", "h2_origin.py", &[]);
        let cfg = config(
            &client_keys("require"),
            &client_keys("optional"),
            rec.port(),
            h2_port,
        );
        let path = pki.dir.write("ringside.toml", cfg.as_bytes());
        let mut srv = Ringside::as_configured(backend, &path);
        let require = srv.addr;
        let optional = srv.next_listener();
        let tls = srv.next_listener();
        let plain = srv.next_listener();
        Site {
            pki,
            srv,
            rec,
            _h2: h2,
            h2_port,
            require,
            optional,
            tls,
            plain,
        }
    }

    /// Rewrites the config with these listeners' client keys and reloads;
    /// `result`: "ok" or "failed", and how many of those so far.
    fn reload(&mut self, require: &str, optional: &str, result: &str, n: u64) {
        let cfg = config(require, optional, self.rec.port(), self.h2_port);
        self.pki.dir.write("ringside.toml", cfg.as_bytes());
        self.srv.signal(libc::SIGHUP);
        self.srv.wait_reloads(result, n);
    }

    /// The requests the recorder got for `path`.
    fn recorded(&self, path: &str) -> Vec<common::recorder::Recorded> {
        self.rec
            .requests()
            .into_iter()
            .filter(|r| r.target == path)
            .collect()
    }
}

/// What curl got: whether it succeeded, the status, the body.
#[derive(Debug)]
struct Got {
    ok: bool,
    status: u16,
    /// The head, and the trailers curl writes after the body.
    fields: String,
    body: String,
    /// curl's own words, for a failure's message.
    #[allow(dead_code)]
    err: String,
}

/// curl to `at` over TLS (or plain with `tls` false), HTTP/2 by ALPN when
/// `h2`, presenting `cert` (a stem: `cert.pem`, `cert.key`) if given.
fn curl(
    pki: &Pki,
    at: SocketAddr,
    tls: bool,
    h2: bool,
    cert: Option<&str>,
    path: &str,
    extra: &[&str],
) -> Got {
    let scheme = if tls { "https" } else { "http" };
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-k", "--max-time", "20", "-D", "-"]);
    cmd.arg(match (h2, tls) {
        (true, true) => "--http2",
        (true, false) => "--http2-prior-knowledge",
        (false, _) => "--http1.1",
    });
    if let Some(stem) = cert {
        cmd.args(["--cert", &pki.path(&format!("{stem}.pem"))]);
        cmd.args(["--key", &pki.path(&format!("{stem}.key"))]);
    }
    cmd.args(extra);
    cmd.arg(format!("{scheme}://{at}{path}"));
    let out: Output = cmd
        .output()
        .expect("curl must be installed (run scripts/test.sh)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, mut body) = text.split_once("\r\n\r\n").unwrap_or(("", ""));
    let mut fields = head.to_owned();
    if let Some((b, trailers)) = body.split_once("\r\n\r\n") {
        body = b;
        fields.push_str(trailers);
    }
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Got {
        ok: out.status.success(),
        status,
        fields: fields.to_ascii_lowercase(),
        body: body.to_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A handshake curl could not finish: no response at all.
fn refused(g: &Got) -> bool {
    !g.ok && g.status == 0
}

#[test]
fn require_refuses_handshakes_without_a_good_certificate() {
    for backend in TLS_BACKENDS {
        let site = Site::start("mtls-require", backend);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let get =
                |cert: Option<&str>| curl(&site.pki, site.require, true, h2, cert, "/rec/a", &[]);
            let g = get(Some("alice"));
            assert_eq!((g.ok, g.status), (true, 200), "{what}: alice: {g:?}");
            for bad in [None, Some("mallory"), Some("expired"), Some("revoked")] {
                let g = get(bad);
                assert!(refused(&g), "{what}: {bad:?} got in: {g:?}");
            }
            // The same refusals under "optional", but for no certificate.
            for bad in ["mallory", "expired", "revoked"] {
                let g = curl(&site.pki, site.optional, true, h2, Some(bad), "/rec/a", &[]);
                assert!(refused(&g), "{what}: optional let {bad} in: {g:?}");
            }
        }
        assert_eq!(site.recorded("/rec/a").len(), 2, "{backend}: only alice's");
        site.srv.stop();
    }
}

#[test]
fn optional_lets_clients_in_and_routes_that_need_a_certificate_refuse_them() {
    for backend in TLS_BACKENDS {
        let site = Site::start("mtls-optional", backend);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let get =
                |at, tls, cert: Option<&str>, path| curl(&site.pki, at, tls, h2, cert, path, &[]);
            let g = get(site.optional, true, None, "/rec/b");
            assert_eq!(g.status, 200, "{what}: {g:?}");
            for path in ["/secure/b", "/files/index.html"] {
                let g = get(site.optional, true, None, path);
                assert_eq!(g.status, 403, "{what}: {path}: {g:?}");
                // No certificate is ever asked for on these listeners.
                for (at, tls) in [(site.tls, true), (site.plain, false)] {
                    let g = get(at, tls, None, path);
                    assert_eq!(g.status, 403, "{what}: {path} at {at}: {g:?}");
                }
                let g = get(site.optional, true, Some("alice"), path);
                assert_eq!(g.status, 200, "{what}: {path} with alice: {g:?}");
                let g = get(site.require, true, Some("alice"), path);
                assert_eq!(g.status, 200, "{what}: {path} with alice: {g:?}");
            }
            let g = get(site.optional, true, Some("alice"), "/files/index.html");
            assert_eq!(g.body, "static\n", "{what}");
            // A gRPC call is answered in gRPC's terms: PERMISSION_DENIED.
            let grpc = ["-H", "content-type: application/grpc", "--data-binary", ""];
            let g = curl(&site.pki, site.optional, true, h2, None, "/secure/g", &grpc);
            assert_eq!(g.status, 200, "{what}: {g:?}");
            assert!(g.fields.contains("grpc-status: 7"), "{what}: {g:?}");
        }
        // Only alice's went on to /secure/: two listeners, two protocols.
        assert_eq!(site.recorded("/secure/b").len(), 4, "{backend}");
        assert!(site.recorded("/secure/g").is_empty(), "{backend}");
        site.srv.stop();
    }
}

#[test]
fn the_certificate_reaches_http1_and_h2_upstreams_in_rfc_9440_fields() {
    for backend in TLS_BACKENDS {
        let site = Site::start("mtls-fields", backend);
        let leaf = site.pki.sf_binary("alice", 0);
        let ca = site.pki.sf_binary("alice", 1);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let path = format!("/rec/fields-{h2}");
            let g = curl(
                &site.pki,
                site.optional,
                true,
                h2,
                Some("alice"),
                &path,
                &[],
            );
            assert_eq!(g.status, 200, "{what}: {g:?}");
            let r = site.recorded(&path);
            assert_eq!(r[0].header("client-cert"), [leaf.as_str()], "{what}");
            // curl sends the file's whole chain: the CA after the leaf.
            assert_eq!(r[0].header("client-cert-chain"), [ca.as_str()], "{what}");

            // An h2 upstream: what it received, as its /header/NAME echoes
            // it ("-": none).
            let h2_cases = [
                (site.require, Some("alice"), "client-cert", leaf.as_str()),
                (
                    site.optional,
                    Some("alice"),
                    "client-cert-chain",
                    ca.as_str(),
                ),
                (site.optional, None, "client-cert", "-"),
            ];
            for (listener, who, field, want) in h2_cases {
                let path = format!("/h2/header/{field}");
                let g = curl(&site.pki, listener, true, h2, who, &path, &[]);
                assert_eq!(
                    (g.status, g.body.as_str()),
                    (200, want),
                    "{what}, {field} as {who:?}: {g:?}"
                );
            }
        }
        site.srv.stop();
    }
}

#[test]
fn a_clients_own_client_cert_fields_never_reach_an_upstream() {
    let forged = [
        "-H",
        "Client-Cert: :Zm9yZ2Vk:",
        "-H",
        "client-cert-chain: :Zm9yZ2Vk:",
    ];
    for backend in TLS_BACKENDS {
        let site = Site::start("mtls-forged", backend);
        let leaf = site.pki.sf_binary("alice", 0);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let cases = [
                (site.plain, false, None, "plain"),
                (site.tls, true, None, "tls"),
                (site.optional, true, None, "optional"),
                (site.optional, true, Some("alice"), "alice"),
            ];
            for (at, tls, cert, name) in cases {
                let path = format!("/rec/forged-{name}-{h2}");
                let g = curl(&site.pki, at, tls, h2, cert, &path, &forged);
                assert_eq!(g.status, 200, "{what} {name}: {g:?}");
                let r = &site.recorded(&path)[0];
                let want: Vec<&str> = cert.map(|_| leaf.as_str()).into_iter().collect();
                assert_eq!(r.header("client-cert"), want, "{what} {name}");
                assert!(
                    r.header("client-cert-chain")
                        .iter()
                        .all(|v| !v.contains("Zm9yZ2Vk")),
                    "{what} {name}: {:?}",
                    r.headers
                );
                for field in ["client-cert", "client-cert-chain"] {
                    let g = curl(
                        &site.pki,
                        at,
                        tls,
                        h2,
                        None,
                        &format!("/h2/header/{field}"),
                        &forged,
                    );
                    assert_eq!(
                        (g.status, g.body.as_str()),
                        (200, "-"),
                        "{what} {name} h2 upstream {field}"
                    );
                }
            }
        }
        site.srv.stop();
    }
}

/// The access log's lines once it holds `n` (flushed every 10 ms).
fn log_lines(dir: &Path, n: usize) -> Vec<serde_json::Value> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.join("access.log")).unwrap_or_default();
        if text.lines().count() >= n || Instant::now() > end {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_access_log_names_the_subject() {
    for backend in TLS_BACKENDS {
        let site = Site::start("mtls-log", backend);
        for h2 in [false, true] {
            let g = curl(
                &site.pki,
                site.optional,
                true,
                h2,
                Some("alice"),
                &format!("/rec/log-alice-{h2}"),
                &[],
            );
            assert_eq!(g.status, 200);
            let g = curl(
                &site.pki,
                site.optional,
                true,
                h2,
                None,
                &format!("/rec/log-none-{h2}"),
                &[],
            );
            assert_eq!(g.status, 200);
        }
        let lines = log_lines(site.pki.dir.path(), 4);
        for line in &lines {
            let uri = line["uri"].as_str().unwrap();
            let subject = &line["client_cert_subject"];
            if uri.starts_with("/rec/log-alice") {
                assert_eq!(subject, "CN=alice,O=ringside tests", "{backend}: {line}");
            } else {
                assert!(subject.is_null(), "{backend}: {line}");
            }
        }
        assert_eq!(lines.len(), 4, "{backend}: {lines:?}");
        site.srv.stop();
    }
}

/// openssl s_client to `at`, saving or reusing the session in `sess`.
fn s_client(at: SocketAddr, sess: (&str, &str), cert: Option<(&str, &str)>) -> String {
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_client",
        "-connect",
        &at.to_string(),
        "-ign_eof",
        "-tls1_3",
    ]);
    cmd.args([sess.0, sess.1]);
    if let Some((c, k)) = cert {
        cmd.args(["-cert", c, "-key", k]);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl must be installed (run scripts/test.sh)");
    use std::io::Write as _;
    // A whole response read before the session is saved: a TLS 1.3 ticket
    // comes after the handshake.
    let _ = child
        .stdin
        .take()
        .unwrap()
        .write_all(b"GET /rec/s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn sessions_never_resume_across_listeners_that_verify_differently() {
    for backend in TLS_BACKENDS {
        let site = Site::start("mtls-resume", backend);
        let sess = site.pki.path("tls.sess");
        let alice = (site.pki.path("alice.pem"), site.pki.path("alice.key"));
        let alice = Some((alice.0.as_str(), alice.1.as_str()));

        // A session of the listener that asks for nothing, offered to the
        // one that requires a certificate: a full handshake, refused.
        let out = s_client(site.tls, ("-sess_out", &sess), None);
        assert!(out.contains("HTTP/1.1 200"), "{backend}: {out}");
        let out = s_client(site.require, ("-sess_in", &sess), None);
        assert!(!out.contains("Reused"), "{backend}: {out}");
        assert!(!out.contains("HTTP/1.1 200"), "{backend}: {out}");

        // Its own sessions resume, with the certificate they verified.
        let mine = site.pki.path("require.sess");
        let out = s_client(site.require, ("-sess_out", &mine), alice);
        assert!(out.contains("New, TLSv1.3"), "{backend}: {out}");
        // Not on the optional listener (another mode): a new session.
        let out = s_client(site.optional, ("-sess_in", &mine), None);
        assert!(out.contains("New, TLSv1.3"), "{backend}: {out}");
        let out = s_client(site.require, ("-sess_in", &mine), None);
        assert!(out.contains("Reused, TLSv1.3"), "{backend}: {out}");
        assert!(out.contains("HTTP/1.1 200"), "{backend}: {out}");
        let leaf = site.pki.sf_binary("alice", 0);
        let with: Vec<_> = site
            .recorded("/rec/s")
            .into_iter()
            .filter(|r| r.header("client-cert") == [leaf.as_str()])
            .collect();
        assert_eq!(
            with.len(),
            2,
            "{backend}: both of alice's requests name her"
        );
        site.srv.stop();
    }
}

#[test]
fn a_reload_changes_client_auth_and_the_crl() {
    for backend in TLS_BACKENDS {
        let mut site = Site::start("mtls-reload", backend);
        let get = |site: &Site, at, cert: Option<&str>| {
            curl(&site.pki, at, true, false, cert, "/rec/r", &[])
        };
        assert!(refused(&get(&site, site.require, None)), "{backend}");

        // require becomes optional; the TLS listener starts requiring.
        site.reload(&client_keys("optional"), &client_keys("require"), "ok", 1);
        assert_eq!(get(&site, site.require, None).status, 200, "{backend}");
        assert!(refused(&get(&site, site.optional, None)), "{backend}");
        assert_eq!(
            get(&site, site.optional, Some("alice")).status,
            200,
            "{backend}"
        );

        // Alice revoked by a new CRL.
        site.pki.dir.write(
            "clients.crl",
            site.pki.clients.crl(&[REVOKED, ALICE]).as_bytes(),
        );
        site.reload(&client_keys("optional"), &client_keys("require"), "ok", 2);
        assert!(
            refused(&get(&site, site.optional, Some("alice"))),
            "{backend}"
        );

        // A broken CA file: the reload fails and the old settings serve.
        site.pki
            .dir
            .write("clients.pem", b"-----BEGIN CERTIFICATE-----\nnot one\n");
        site.reload(
            &client_keys("require"),
            &client_keys("require"),
            "failed",
            1,
        );
        assert_eq!(get(&site, site.require, None).status, 200, "{backend}");
        assert!(
            refused(&get(&site, site.optional, Some("alice"))),
            "{backend}"
        );
        let g = get(&site, site.optional, Some("revoked"));
        assert!(refused(&g), "{backend}: {g:?}");
        site.srv.stop();
    }
}

#[test]
fn plain_listeners_from_the_command_line_still_refuse_routes_that_need_a_certificate() {
    for backend in TLS_BACKENDS {
        let pki = Pki::new("mtls-flags");
        let rec = Recorder::start();
        let cfg = config(&client_keys("require"), "", rec.port(), 1);
        let path = pki.dir.write("ringside.toml", cfg.as_bytes());
        // --listen: one plain listener in place of the config's four.
        let srv = Ringside::configured(backend, &path);
        for h2 in [false, true] {
            let g = curl(&pki, srv.addr, false, h2, None, "/secure/x", &[]);
            assert_eq!(g.status, 403, "{backend} h2={h2}: {g:?}");
            let g = curl(&pki, srv.addr, false, h2, None, "/rec/x", &[]);
            assert_eq!(g.status, 200, "{backend} h2={h2}: {g:?}");
        }
        assert_eq!(rec.requests().len(), 2, "{backend}");
        srv.stop();
    }
}

#[test]
fn a_fastcgi_script_gets_mod_ssls_variables_and_never_a_clients_fields() {
    let fpm = common::phpfpm::PhpFpm::start_tcp(2);
    let forged = [
        "-H",
        "Client-Cert: :Zm9yZ2Vk:",
        "-H",
        "Client-Cert-Chain: :Zm9yZ2Vk:",
    ];
    for backend in TLS_BACKENDS {
        let pki = Pki::new("mtls-fastcgi");
        let cfg = format!(
            "[server]\nlisten = [{{ addr = \"127.0.0.1:0\", tls = {{ cert = \"site.pem\", key = \"site.key\"{} }} }}]\n\
             [upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"{}\"]\n\
             [[route]]\nprefix = \"/\"\nupstream = \"php\"\nroot = \"{}\"\n",
            client_keys("optional"),
            fpm.listen,
            common::phpfpm::PhpFpm::docroot().display()
        );
        let path = pki.dir.write("ringside.toml", cfg.as_bytes());
        let srv = Ringside::as_configured(backend, &path);
        for h2 in [false, true] {
            let what = format!("{backend} h2={h2}");
            let g = curl(
                &pki,
                srv.addr,
                true,
                h2,
                Some("alice"),
                "/client_cert.php",
                &forged,
            );
            assert_eq!(g.status, 200, "{what}: {g:?}");
            for line in [
                "SSL_CLIENT_VERIFY=SUCCESS\n",
                "SSL_CLIENT_S_DN=CN=alice,O=ringside tests\n",
                "SSL_CLIENT_CERT=-----BEGIN CERTIFICATE-----\n",
                "SSL_CLIENT_CERT_VALID=yes\n",
                "HTTP_CLIENT_CERT=unset\nHTTP_CLIENT_CERT_CHAIN=unset\n",
            ] {
                assert!(g.body.contains(line), "{what}: {line:?} in {}", g.body);
            }
            let g = curl(&pki, srv.addr, true, h2, None, "/client_cert.php", &forged);
            assert_eq!(
                g.body,
                "SSL_CLIENT_VERIFY=\nSSL_CLIENT_S_DN=\nSSL_CLIENT_CERT=\nSSL_CLIENT_CERT_VALID=no\n\
                 HTTP_CLIENT_CERT=unset\nHTTP_CLIENT_CERT_CHAIN=unset\n",
                "{what}"
            );
        }
        srv.stop();
    }
}
