//! Unit tests for the TLS keys: listen tables with certificates, `[tls]`,
//! `[[vhost]]` and an upstream's `tls*` keys; good values with what they
//! give, each refusal with its position, key and message, and the
//! `to_toml` round trip. Certificates are made with rcgen in a temporary
//! directory, which the config file is read as if it were in.

use std::fs;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::tls::{TlsConfig, TlsVersion, UnknownName, Vhost};
use super::{Config, ConfigError};
use crate::tls::certs::{system_bundle, CertPaths};
use crate::tls::test_certs::{path_text, TestDir};
use crate::upstream::settings::UpstreamTls;

const NAME: &str = "ringside.toml";

/// A directory with a CA and certificates, for configs read from it:
/// `site.pem`/`site.key` (default.test), `a.pem`/`a.key` (a.example and
/// *.a.example), `ca.pem`, `stray.key` (a key of no certificate),
/// `empty.pem`, `garbage.pem`, and `certs/` for the documented examples.
struct Fixture {
    dir: TestDir,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let dir = TestDir::new(&format!("config-{tag}"));
        let ca = dir.ca("ca");
        dir.leaf(&ca, "site", &["default.test"]);
        dir.leaf(&ca, "a", &["a.example", "*.a.example"]);
        dir.stray_key("stray.key");
        dir.write("empty.pem", "");
        dir.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64!\n");
        fs::create_dir(dir.path("certs")).unwrap();
        for stem in ["site", "example"] {
            let p = dir.leaf(&ca, &format!("doc-{stem}"), &[&format!("{stem}.test")]);
            fs::rename(&p.cert, dir.path(&format!("certs/{stem}.pem"))).unwrap();
            fs::rename(&p.key, dir.path(&format!("certs/{stem}.key"))).unwrap();
        }
        fs::copy(&ca.pem, dir.path("certs/internal-ca.pem")).unwrap();
        Fixture { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path(name)
    }

    fn pair(&self, stem: &str) -> CertPaths {
        CertPaths {
            cert: self.path(&format!("{stem}.pem")),
            key: self.path(&format!("{stem}.key")),
            client: None,
            acme: None,
        }
    }

    /// `text` validated as if read from `ringside.toml` in the directory.
    fn parse(&self, text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, &self.path(NAME))
    }

    fn ok(&self, text: &str) -> Config {
        self.parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }
}

/// One TLS listener on 127.0.0.1:8443 with `site` as its default.
const TLS_LISTEN: &str =
    "[server]\nlisten = [{ addr = \"127.0.0.1:8443\", tls = { cert = \"site.pem\", key = \"site.key\" } }]\n";

#[test]
fn no_tls_is_the_default() {
    let f = Fixture::new("default");
    let c = f.ok("");
    assert_eq!(
        c.tls,
        TlsConfig {
            listeners: vec![None],
            ..TlsConfig::default()
        }
    );
    assert!(!c.tls.any_tls());
    assert_eq!(c.tls.unknown_name, UnknownName::Default);
    assert_eq!(c.tls.min_version, TlsVersion::Tls12);
    assert!(c.tls.tickets);
    assert_eq!(Config::default().tls, c.tls);
    // Plain entries, as strings or tables, give a plain listener each.
    let c = f.ok("[server]\nlisten = [\"127.0.0.1:1\", { addr = \"127.0.0.1:2\" }]\n");
    assert_eq!(c.server.listen.len(), 2);
    assert_eq!(c.tls.listeners, vec![None, None]);
    assert!(c.proxy.upstreams.is_empty());
}

#[test]
fn full_tls_config() {
    let f = Fixture::new("full");
    let c = f.ok(r#"
[server]
listen = [
  "127.0.0.1:8080",
  { addr = "127.0.0.1:8443", tls = { cert = "site.pem", key = "site.key" } },
  { addr = "[::1]:8443", tls = { cert = "./a.pem", key = "a.key" } },
]

[tls]
unknown_name = "refuse"
min_version = "1.3"
tickets = false

[[vhost]]
names = ["A.Example", "*.a.example", "b.example."]
tls = { cert = "a.pem", key = "a.key" }
https_redirect = true
hsts = "max-age=31536000; includeSubDomains"

[[vhost]]
names = ["c.example"]
https_redirect = false

[upstream.app]
servers = ["app.internal:443", "10.0.0.1:443"]
tls = true
tls_ca = "ca.pem"
tls_sni = "App.Internal"

[upstream.lax]
servers = ["10.0.0.2:443"]
tls = true
tls_verify = false

[upstream.plain]
servers = ["10.0.0.3:80"]
tls = false
"#);
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    assert_eq!(
        c.server.listen,
        vec![
            addr("127.0.0.1:8080"),
            addr("127.0.0.1:8443"),
            addr("[::1]:8443")
        ]
    );
    let a = CertPaths {
        cert: f.path("./a.pem"),
        key: f.path("a.key"),
        client: None,
        acme: None,
    };
    assert_eq!(
        c.tls,
        TlsConfig {
            listeners: vec![None, Some(f.pair("site")), Some(a)],
            vhosts: vec![
                Vhost {
                    names: vec!["a.example".into(), "*.a.example".into(), "b.example".into()],
                    cert: Some(f.pair("a")),
                    https_redirect: true,
                    hsts: Some("max-age=31536000; includeSubDomains".into()),
                },
                Vhost {
                    names: vec!["c.example".into()],
                    ..Vhost::default()
                },
            ],
            unknown_name: UnknownName::Refuse,
            min_version: TlsVersion::Tls13,
            tickets: false,
        }
    );
    assert!(c.tls.any_tls());
    assert_eq!(c.tls.listener(1), Some(&f.pair("site")));
    assert_eq!(c.tls.listener(0), None);
    assert_eq!(c.tls.listener(9), None);
    let ups = &c.proxy.upstreams;
    assert_eq!(
        ups[0].tls().cloned(),
        Some(UpstreamTls {
            verify: true,
            ca: Some(f.path("ca.pem")),
            sni: Some("app.internal".into()),
        })
    );
    assert_eq!(
        ups[1].tls().cloned(),
        Some(UpstreamTls {
            verify: false,
            ca: None,
            sni: None,
        })
    );
    assert_eq!(ups[2].tls(), None);
}

#[test]
fn paths_are_taken_from_the_file_and_kept_absolute() {
    let f = Fixture::new("paths");
    // Absolute paths stay as written; relative ones are taken from the
    // file's directory, not the working directory.
    let text = format!(
        "[server]\nlisten = [{{ addr = \"127.0.0.1:1\", tls = {{ cert = {:?}, key = \"site.key\" }} }}]\n",
        path_text(&f.path("site.pem"))
    );
    let c = f.ok(&text);
    assert_eq!(c.tls.listeners, vec![Some(f.pair("site"))]);
    assert!(c.tls.listeners[0].as_ref().unwrap().key.is_absolute());
    // A symlink is kept, not resolved: a renewal that moves the link is
    // followed on reload.
    std::os::unix::fs::symlink(f.path("site.pem"), f.path("live.pem")).unwrap();
    let c = f.ok(&TLS_LISTEN.replace("\"site.pem\"", "\"live.pem\""));
    assert_eq!(
        c.tls.listeners[0].as_ref().unwrap().cert,
        f.path("live.pem")
    );
}

#[test]
fn a_name_listens_with_its_certificate_on_every_address() {
    let f = Fixture::new("names");
    let c = f.ok("[server]\nlisten = [\"127.0.0.1:1\", { addr = \"localhost:2\", tls = { cert = \"site.pem\", key = \"site.key\" } }]\n");
    assert!(c.server.listen.len() >= 2, "{:?}", c.server.listen);
    assert_eq!(c.tls.listeners.len(), c.server.listen.len());
    assert_eq!(c.tls.listeners[0], None);
    for l in &c.tls.listeners[1..] {
        assert_eq!(l.as_ref(), Some(&f.pair("site")));
    }
}

#[test]
fn vhost_for_picks_exact_then_wildcard() {
    let vhost = |names: &[&str]| Vhost {
        names: names.iter().map(|n| n.to_string()).collect(),
        ..Vhost::default()
    };
    let tls = TlsConfig {
        vhosts: vec![
            vhost(&["*.a.example", "b.example"]),
            vhost(&["x.a.example"]),
            vhost(&["a.example"]),
            vhost(&["*.x.a.example"]),
        ],
        ..TlsConfig::default()
    };
    #[rustfmt::skip]
    let cases: &[(&str, Option<usize>)] = &[
        ("a.example",       Some(2)),
        ("A.EXAMPLE",       Some(2)),
        ("a.example.",      Some(2)),
        ("x.a.example",     Some(1)),   // exact wins over the earlier wildcard
        ("y.a.example",     Some(0)),
        ("Y.A.Example",     Some(0)),
        ("y.x.a.example",   Some(3)),
        ("z.y.a.example",   None),      // a wildcard covers one label
        ("b.example",       Some(0)),
        ("x.b.example",     None),
        ("example",         None),
        ("",                None),
        (".",               None),
        (".a.example",      None),
        ("*.a.example",     Some(0)),
    ];
    for &(host, want) in cases {
        let got = tls
            .vhost_for(host)
            .map(|v| tls.vhosts.iter().position(|o| std::ptr::eq(o, v)).unwrap());
        assert_eq!(got, want, "{host:?}");
    }
}

#[test]
fn good_values() {
    let f = Fixture::new("good");
    let vhost = |keys: &str| f.ok(&format!("{TLS_LISTEN}[[vhost]]\n{keys}\n")).tls.vhosts;
    #[rustfmt::skip]
    let names: &[(&str, &str)] = &[
        ("Example.COM",        "example.com"),
        ("*.Example.com",      "*.example.com"),
        ("example.com.",       "example.com"),
        ("under_score.test",   "under_score.test"),
        ("xn--bcher-kva.test", "xn--bcher-kva.test"),
        ("localhost",          "localhost"),
    ];
    for &(name, want) in names {
        let v = vhost(&format!("names = [{name:?}]"));
        assert_eq!(v[0].names, vec![want.to_owned()], "{name}");
    }
    for hsts in [
        "max-age=0",
        "max-age=31536000",
        "max-age=31536000; includeSubDomains",
        "Max-Age=63072000;includeSubDomains; preload",
    ] {
        let v = vhost(&format!("names = [\"a.test\"]\nhsts = {hsts:?}"));
        assert_eq!(v[0].hsts.as_deref(), Some(hsts));
    }
    let tls = |keys: &str| f.ok(&format!("{TLS_LISTEN}[tls]\n{keys}\n")).tls;
    assert_eq!(
        tls("unknown_name = \"default\"").unknown_name,
        UnknownName::Default
    );
    assert_eq!(
        tls("unknown_name = \"refuse\"").unknown_name,
        UnknownName::Refuse
    );
    assert_eq!(tls("min_version = \"1.2\"").min_version, TlsVersion::Tls12);
    assert_eq!(tls("min_version = \"1.3\"").min_version, TlsVersion::Tls13);
    assert!(tls("tickets = true").tickets);
    assert!(!tls("tickets = false").tickets);
    // https_redirect = false needs no TLS listener; neither does a vhost
    // that only names hosts.
    let c = f.ok("[[vhost]]\nnames = [\"a.test\"]\nhttps_redirect = false\n");
    assert_eq!(
        c.tls.vhosts,
        vec![Vhost {
            names: vec!["a.test".into()],
            ..Vhost::default()
        }]
    );
    // Upstream names sent in SNI.
    let sni = |s: &str| {
        let c = f.ok(&format!(
            "[upstream.u]\nservers = [\"a:1\"]\ntls = true\ntls_verify = false\ntls_sni = {s:?}\n"
        ));
        c.proxy.upstreams[0].tls().cloned().unwrap().sni.unwrap()
    };
    assert_eq!(sni("API.Internal"), "api.internal");
    assert_eq!(sni("api.internal."), "api.internal");
    assert_eq!(sni("10.0.0.1"), "10.0.0.1");
    assert_eq!(sni("[::1]"), "::1");
    assert_eq!(sni("0:0::1"), "::1");
    // tls = true alone verifies against the system bundle, where one is.
    let text = "[upstream.u]\nservers = [\"a:1\"]\ntls = true\n";
    match system_bundle() {
        Some(_) => assert_eq!(
            f.ok(text).proxy.upstreams[0].tls().cloned(),
            Some(UpstreamTls {
                verify: true,
                ca: None,
                sni: None
            })
        ),
        None => {
            let err = f.parse(text).unwrap_err().to_string();
            assert!(
                err.contains("3:7: [upstream.u] tls: no system bundle"),
                "{err}"
            );
        }
    }
}

/// Each refusal, with the position and key of the value at fault and
/// what it says. `{dir}` stands for the fixture's directory.
#[test]
fn tls_validation_errors() {
    let f = Fixture::new("errors");
    let dir = path_text(&f.dir.0);
    let listen = |entry: &str| format!("[server]\nlisten = [{entry}]\n");
    let pair = |cert: &str, key: &str| {
        listen(&format!(
            "{{ addr = \"127.0.0.1:1\", tls = {{ cert = {cert:?}, key = {key:?} }} }}"
        ))
    };
    let tls = |keys: &str| format!("{TLS_LISTEN}[tls]\n{keys}\n");
    let vhost = |keys: &str| format!("{TLS_LISTEN}[[vhost]]\n{keys}\n");
    let plain_vhost = |keys: &str| format!("[[vhost]]\nnames = [\"a.test\"]\n{keys}\n");
    let name = |n: &str| vhost(&format!("names = [{n:?}]"));
    let up = |keys: &str| format!("[upstream.u]\nservers = [\"a:1\"]\n{keys}\n");
    let no_effect = "has no effect: no [server] listen entry has tls = { cert, key }";
    let dns = "expected a DNS name, got the IP address";
    #[rustfmt::skip]
    let cases: Vec<(String, &str, String)> = vec![
        // Listen entries.
        (listen("1"), "2:11: [server] listen", "expected \"HOST:PORT\" or a table like { addr = \"HOST:PORT\", tls = { cert = \"PATH\", key = \"PATH\" } }, got 1".into()),
        (listen("{ addr = \"nonsense\" }"), "2:20: [server] listen", "expected HOST:PORT like".into()),
        (listen("{ tls = { cert = \"site.pem\", key = \"site.key\" } }"), "2:11: [server.listen] addr", "missing: the table form needs its address".into()),
        (listen("{ addr = \"127.0.0.1:1\", tsl = 1 }"), "2:35: [server.listen] tsl", "unknown key".into()),
        (listen("{ addr = \"127.0.0.1:1\", tls = { cert = \"site.pem\" } }"), "2:50: [server] listen", "tls.cert: needs key beside it".into()),
        (listen("{ addr = \"127.0.0.1:1\", tls = { cert = \"site.pem\", key = \"site.key\", chain = \"x\" } }"), "2:80: [server.listen.tls] chain", "unknown key, expected one of `cert`, `key`, `acme`, `names`, `client_auth`, `client_ca`, `client_crl`".into()),
        (listen("\"127.0.0.1:1\", { addr = \"127.0.0.1:1\" }"), "2:35: [server] listen", "127.0.0.1:1 is listed twice".into()),
        // Certificate and key files.
        (pair("missing.pem", "site.key"), "2:50: [server] listen", format!("tls.cert: cannot read {dir}/missing.pem: No such file or directory")),
        (pair("site.pem", "missing.key"), "2:68: [server] listen", format!("tls.key: cannot read {dir}/missing.key: No such file or directory")),
        (pair("empty.pem", "site.key"), "2:50: [server] listen", format!("tls.cert: no certificate in {dir}/empty.pem")),
        (pair("site.key", "site.key"), "2:50: [server] listen", format!("tls.cert: no certificate in {dir}/site.key")),
        (pair("garbage.pem", "site.key"), "2:50: [server] listen", format!("tls.cert: cannot parse {dir}/garbage.pem: a PEM section has no \"-----END CERTIFICATE-----\" line")),
        (pair("site.pem", "garbage.pem"), "2:68: [server] listen", format!("tls.key: cannot parse {dir}/garbage.pem: a PEM section has no \"-----END CERTIFICATE-----\" line")),
        (pair("site.pem", "site.pem"), "2:68: [server] listen", format!("tls.key: no private key in {dir}/site.pem")),
        (pair("site.pem", "empty.pem"), "2:68: [server] listen", format!("tls.key: no private key in {dir}/empty.pem")),
        (pair("site.pem", "a.key"), "2:68: [server] listen", format!("tls.key: key does not match the certificate: {dir}/a.key is not the key of the first certificate in {dir}/site.pem")),
        (pair("site.pem", "stray.key"), "2:68: [server] listen", "tls.key: key does not match the certificate".into()),
        (pair("", "site.key"), "2:50: [server] listen", "tls.cert: expected a file path, got \"\"".into()),
        (pair(".", "site.key"), "2:50: [server] listen", "tls.cert: cannot read".into()),
        // [tls].
        (tls("unknown_name = \"maybe\""), "4:16: [tls] unknown_name", "expected one of \"default\", \"refuse\", got \"maybe\"".into()),
        (tls("min_version = \"1.1\""), "4:15: [tls] min_version", "expected one of \"1.2\", \"1.3\", got \"1.1\"".into()),
        (tls("min_version = 1.3"), "4:15: [tls] min_version", "expected a string, got the number 1.3; write it in quotes: \"1.3\"".into()),
        (tls("tickets = \"yes\""), "4:11: [tls] tickets", "expected true or false, got the string \"yes\"".into()),
        (tls("ciphers = []"), "4:1: [tls] ciphers", "unknown key".into()),
        ("[tls]\nunknown_name = \"refuse\"\n".into(), "2:16: [tls] unknown_name", no_effect.into()),
        ("[tls]\nmin_version = \"1.2\"\n".into(), "2:15: [tls] min_version", no_effect.into()),
        ("[tls]\ntickets = true\n".into(), "2:11: [tls] tickets", no_effect.into()),
        // [[vhost]].
        (vhost("names = []"), "4:9: [[vhost]] names", "expected at least one host name".into()),
        (vhost("hsts = \"max-age=1\""), "3:1: [[vhost]] names", "missing: every vhost needs its host names".into()),
        (vhost("names = \"a.test\""), "4:9: [[vhost]] names", "expected a list of host names, like [\"example.com\"], got the string \"a.test\"; write it in brackets: [\"a.test\"]".into()),
        (vhost("names = [\"a.test\"]\nbogus = 1"), "5:1: [[vhost]] bogus", "unknown key".into()),
        (name("a..test"), "4:10: [[vhost]] names", "1 to 63 characters".into()),
        (name("exa mple.test"), "4:10: [[vhost]] names", "is not a host name".into()),
        (name("*"), "4:10: [[vhost]] names", "a wildcard is only allowed as a leading \"*.\"".into()),
        (name("*.*.a.test"), "4:10: [[vhost]] names", "a wildcard is only allowed as a leading \"*.\"".into()),
        (name("a.*.test"), "4:10: [[vhost]] names", "a wildcard is only allowed as a leading \"*.\"".into()),
        (name("*a.test"), "4:10: [[vhost]] names", "a wildcard is only allowed as a leading \"*.\"".into()),
        (name("a.test:443"), "4:10: [[vhost]] names", "expected a host name without a port".into()),
        (name("10.0.0.1"), "4:10: [[vhost]] names", dns.into()),
        (name("*.10.0.0.1"), "4:10: [[vhost]] names", "a wildcard needs a name after \"*.\"".into()),
        (name("[::1]"), "4:10: [[vhost]] names", dns.into()),
        (name("::1"), "4:10: [[vhost]] names", dns.into()),
        (name(""), "4:10: [[vhost]] names", "expected a host name".into()),
        (vhost("names = [\"a.test\", \"A.Test\"]"), "4:20: [[vhost]] names", "\"a.test\" is listed twice".into()),
        (format!("{}[[vhost]]\nnames = [\"b.test\", \"A.test\"]\n", vhost("names = [\"a.test\"]")), "6:20: [[vhost]] names", "\"a.test\" is already a name of another [[vhost]]".into()),
        (vhost("names = [\"a.test\"]\ntls = { cert = \"missing.pem\", key = \"a.key\" }"), "5:16: [[vhost]] tls.cert", format!("cannot read {dir}/missing.pem: No such file or directory")),
        (vhost("names = [\"a.test\"]\ntls = { cert = \"a.pem\", key = \"site.key\" }"), "5:31: [[vhost]] tls.key", "key does not match the certificate".into()),
        (vhost("names = [\"a.test\"]\ntls = { cert = \"a.pem\" }"), "5:16: [[vhost]] tls.cert", "needs key beside it".into()),
        (vhost("names = [\"a.test\"]\nhttps_redirect = \"yes\""), "5:18: [[vhost]] https_redirect", "expected true or false, got the string \"yes\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = 1"), "5:8: [[vhost]] hsts", "expected a string, got the number 1".into()),
        (plain_vhost("https_redirect = true"), "3:18: [[vhost]] https_redirect", no_effect.into()),
        (plain_vhost("hsts = \"max-age=1\""), "3:8: [[vhost]] hsts", no_effect.into()),
        (plain_vhost("tls = { cert = \"a.pem\", key = \"a.key\" }"), "3:7: [[vhost]] tls", no_effect.into()),
        // HSTS values.
        (vhost("names = [\"a.test\"]\nhsts = \"\""), "5:8: [[vhost]] hsts", "expected \"max-age=SECONDS\", optionally followed by \"; includeSubDomains\" or \"; preload\", got \"\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"max-age=\""), "5:8: [[vhost]] hsts", "got \"max-age=\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"maxage=1\""), "5:8: [[vhost]] hsts", "got \"maxage=1\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"max-age=-1\""), "5:8: [[vhost]] hsts", "got \"max-age=-1\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"max-age=1y\""), "5:8: [[vhost]] hsts", "got \"max-age=1y\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"max-age=1 includeSubDomains\""), "5:8: [[vhost]] hsts", "got \"max-age=1 includeSubDomains\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"includeSubDomains; max-age=1\""), "5:8: [[vhost]] hsts", "got \"includeSubDomains; max-age=1\"".into()),
        (vhost("names = [\"a.test\"]\nhsts = \"max-age=1;\\u007f\""), "5:8: [[vhost]] hsts", "expected \"max-age=SECONDS\"".into()),
        // Upstreams.
        (up("tls = \"yes\""), "3:7: [upstream.u] tls", "expected true or false, got the string \"yes\"".into()),
        (up("tls_verify = false"), "3:14: [upstream.u] tls_verify", "needs tls = true".into()),
        (up("tls = false\ntls_sni = \"a.test\""), "4:11: [upstream.u] tls_sni", "needs tls = true".into()),
        (up("tls_ca = \"ca.pem\""), "3:10: [upstream.u] tls_ca", "needs tls = true".into()),
        (up("tls = true\ntls_verify = false\ntls_ca = \"ca.pem\""), "5:10: [upstream.u] tls_ca", "has no effect with tls_verify = false".into()),
        (up("tls = true\ntls_ca = \"missing.pem\""), "4:10: [upstream.u] tls_ca", format!("cannot read {dir}/missing.pem: No such file or directory")),
        (up("tls = true\ntls_ca = \"empty.pem\""), "4:10: [upstream.u] tls_ca", format!("no certificate in {dir}/empty.pem")),
        (up("tls = true\ntls_ca = \"site.key\""), "4:10: [upstream.u] tls_ca", format!("no certificate in {dir}/site.key")),
        (up("tls = true\ntls_ca = \"\""), "4:10: [upstream.u] tls_ca", "expected a file path, got \"\"".into()),
        (up("tls = true\ntls_verify = false\ntls_sni = \"*.a.test\""), "5:11: [upstream.u] tls_sni", "expected a DNS name like \"app.internal\" or an IP address, got \"*.a.test\"".into()),
        (up("tls = true\ntls_verify = false\ntls_sni = \"a.test:443\""), "5:11: [upstream.u] tls_sni", "got \"a.test:443\"".into()),
        (up("tls = true\ntls_verify = false\ntls_sni = \"a b\""), "5:11: [upstream.u] tls_sni", "got \"a b\"".into()),
        (up("tls = true\ntls_verify = false\ntls_sni = \"\""), "5:11: [upstream.u] tls_sni", "got \"\"".into()),
        ("[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:1\"]\ntls = true\n".into(), "4:7: [upstream.php] tls", "only for protocol = \"http\" (this upstream speaks FastCGI)".into()),
        ("[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:1\"]\ntls = false\n".into(), "4:7: [upstream.php] tls", "only for protocol = \"http\"".into()),
        ("[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:1\"]\ntls_sni = \"a\"\n".into(), "4:11: [upstream.php] tls_sni", "only for protocol = \"http\"".into()),
    ];
    let mut failed = Vec::new();
    for (text, at, message) in &cases {
        let err = match f.parse(text) {
            Ok(c) => {
                failed.push(format!("accepted:\n{text}\n{:?}", c.tls));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let want = format!("{dir}/{NAME}:{at}");
        if !err.starts_with(&want) || !err.contains(message.as_str()) {
            failed.push(format!(
                "want {want:?} ... {message:?}, got\n{err}\nfor\n{text}"
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn error_names_the_file_line_and_key() {
    let f = Fixture::new("fields");
    let err = f
        .parse("\n[server]\nlisten = [\n  { addr = \"127.0.0.1:1\", tls = { cert = \"nope.pem\", key = \"site.key\" } },\n]\n")
        .unwrap_err();
    let ConfigError::File {
        file,
        position,
        key,
        message,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(file, &f.path(NAME));
    assert_eq!(position.map(|p| (p.line, p.column)), Some((4, 42)));
    assert_eq!(key.as_deref(), Some("[server] listen"));
    assert_eq!(
        message,
        &format!(
            "tls.cert: cannot read {}: No such file or directory",
            f.path("nope.pem").display()
        )
    );
}

#[test]
fn to_toml_round_trips_tls() {
    let f = Fixture::new("round-trip");
    let path = f.path(NAME);
    let texts = [
        String::new(),
        TLS_LISTEN.to_owned(),
        format!("{TLS_LISTEN}[tls]\nunknown_name = \"refuse\"\nmin_version = \"1.3\"\ntickets = false\n"),
        r#"
[server]
listen = [
  "127.0.0.1:8080",
  { addr = "[::1]:8443", tls = { cert = "site.pem", key = "site.key" } },
  { addr = "127.0.0.1:8443", tls = { cert = "a.pem", key = "a.key" } },
  { addr = "127.0.0.1:8081" },
]
[[vhost]]
names = ["a.example", "*.a.example"]
tls = { cert = "a.pem", key = "a.key" }
https_redirect = true
hsts = "max-age=600; preload"
[[vhost]]
names = ["c.example"]
[upstream.app]
servers = ["app.internal:443"]
tls = true
tls_ca = "ca.pem"
tls_sni = "[::1]"
[upstream.lax]
servers = ["10.0.0.2:443"]
tls = true
tls_verify = false
tls_sni = "lax.internal"
[upstream.php]
protocol = "fastcgi"
servers = ["unix:php.sock"]
"#
        .to_owned(),
        // Vhosts that need no TLS listener.
        "[[vhost]]\nnames = [\"a.test\"]\n".to_owned(),
    ];
    for source in texts {
        let config = f.ok(&source);
        let back = crate::config::tests::written_back(&config, &path);
        assert_eq!(back, config, "{}", config.to_toml());
    }
}

#[test]
fn to_toml_writes_the_tls_keys() {
    let f = Fixture::new("emit");
    let text = f
        .ok(&format!(
            "{TLS_LISTEN}[[vhost]]\nnames = [\"A.test\"]\ntls = {{ cert = \"a.pem\", key = \"a.key\" }}\nhsts = \"max-age=1\"\n\
             [upstream.u]\nservers = [\"a:1\"]\ntls = true\ntls_ca = \"ca.pem\"\ntls_sni = \"U.test\"\n\
             [upstream.v]\nservers = [\"b:1\"]\n"
        ))
        .to_toml();
    let d = path_text(&f.dir.0);
    let want = [
        format!("listen = [\n  {{ addr = \"127.0.0.1:8443\", tls = {{ cert = \"{d}/site.pem\", key = \"{d}/site.key\" }} }},\n]\n"),
        "\n[tls]\nunknown_name = \"default\"\nmin_version = \"1.2\"\ntickets = true\n".to_owned(),
        format!("\n[[vhost]]\nnames = [\"a.test\"]\ntls = {{ cert = \"{d}/a.pem\", key = \"{d}/a.key\" }}\nhttps_redirect = false\nhsts = \"max-age=1\"\n"),
        format!("servers = [\"a:1\"]\ntls = true\ntls_verify = true\ntls_ca = \"{d}/ca.pem\"\ntls_sni = \"u.test\"\nbalance"),
        "servers = [\"b:1\"]\ntls = false\nbalance".to_owned(),
    ];
    for w in &want {
        assert!(text.contains(w.as_str()), "want\n{w}\nin\n{text}");
    }
    // Without a TLS listener there is no [tls] section.
    let text = f.ok("").to_toml();
    assert!(!text.contains("[tls]"), "{text}");
    assert!(text.contains("listen = [\"127.0.0.1:8080\"]\n"), "{text}");
}

/// `--listen` replaces the listeners with plain ones.
#[test]
fn plain_listeners_from_flags() {
    let f = Fixture::new("flags");
    let mut tls = f
        .ok(&format!(
            "{TLS_LISTEN}[tls]\nmin_version = \"1.3\"\n[[vhost]]\nnames = [\"a.test\"]\n"
        ))
        .tls;
    tls.set_plain_listeners(2).unwrap();
    assert_eq!(
        tls,
        TlsConfig {
            listeners: vec![None, None],
            vhosts: vec![Vhost {
                names: vec!["a.test".into()],
                ..Vhost::default()
            }],
            ..TlsConfig::default()
        }
    );
    let mut tls = f
        .ok(&format!(
            "{TLS_LISTEN}[[vhost]]\nnames = [\"a.test\"]\nhsts = \"max-age=1\"\n"
        ))
        .tls;
    let err = tls.set_plain_listeners(1).unwrap_err();
    assert!(err.contains("[[vhost]] hsts needs"), "{err}");
}

/// The TLS examples in the README and in `config/tls.rs` are valid, with
/// the certificates they name made in `certs/`.
#[test]
fn documented_tls_examples_are_valid() {
    let f = Fixture::new("docs");
    let examples = super::tests::documented_examples(
        "config/tls.rs",
        include_str!("tls.rs"),
        "https_redirect = true",
    );
    for (source, block) in &examples {
        // Nothing is bound or resolved: privileged ports and made-up
        // upstream names are fine here.
        let c = f.parse(block).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert!(c.tls.any_tls(), "{source}");
        assert!(!c.tls.vhosts.is_empty(), "{source}");
        assert!(c.tls.vhosts[0].cert.is_some(), "{source}");
        assert!(
            c.proxy.upstreams.iter().any(|u| u.tls().is_some()),
            "{source}"
        );
    }
}
