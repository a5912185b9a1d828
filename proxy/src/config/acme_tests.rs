//! Unit tests for `[acme.NAME]` and `tls = { acme = "NAME" }`: what good
//! values give, each refusal with its line, key and message, the
//! `to_toml` round trip, and the documented examples.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use ringside_acme::{ChallengeKind, Eab, KeyType};

use super::acme::{AcmeIssuer, DEFAULT_RETRY_MIN, DEFAULT_STATE};
use super::{Config, ConfigError};
use crate::tls::certs::AcmeCert;
use crate::tls::test_certs::TestDir;

const NAME: &str = "ringside.toml";

/// `certs/acme-server-ca.pem` (a CA's certificate, for `ca`), `site.pem`
/// and `site.key`.
fn fixture(tag: &str) -> TestDir {
    let dir = TestDir::new(&format!("acme-{tag}"));
    let ca = dir.ca("ca");
    dir.leaf(&ca, "site", &["site.test"]);
    fs::create_dir(dir.path("certs")).unwrap();
    fs::copy(dir.path("ca.pem"), dir.path("certs/acme-server-ca.pem")).unwrap();
    dir
}

fn parse(dir: &TestDir, text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, &dir.path(NAME))
}

const ISSUER: &str =
    "[acme.le]\ndirectory = \"https://ca.test/dir\"\nca = \"certs/acme-server-ca.pem\"\n";

/// A plain listener and a TLS one with `tls = { TLS }`, then `rest`.
fn site(tls: &str, rest: &str) -> String {
    format!(
        "[server]\nlisten = [\"127.0.0.1:8080\", {{ addr = \"127.0.0.1:8443\", tls = {{ {tls} }} }}]\n{rest}"
    )
}

#[test]
fn good_values() {
    let dir = fixture("good");
    let text = site(
        "acme = \"le\", names = [\"Example.test\", \"www.example.test\"]",
        &format!("{ISSUER}[[vhost]]\nnames = [\"shop.test\"]\ntls = {{ acme = \"le\" }}\n"),
    );
    let c = parse(&dir, &text).unwrap_or_else(|e| panic!("{e}"));
    let listener = c.tls.listeners[1].as_ref().unwrap();
    assert_eq!(
        listener.acme,
        Some(AcmeCert {
            issuer: "le".into(),
            names: vec!["example.test".into(), "www.example.test".into()],
        })
    );
    assert_eq!(listener.cert, PathBuf::new());
    assert_eq!(
        c.tls.vhosts[0]
            .cert
            .as_ref()
            .unwrap()
            .acme
            .as_ref()
            .unwrap()
            .names,
        ["shop.test"]
    );
    assert_eq!(
        c.acme,
        [AcmeIssuer {
            name: "le".into(),
            directory: "https://ca.test/dir".into(),
            contact: Vec::new(),
            ca: Some(dir.path("certs/acme-server-ca.pem")),
            eab: None,
            key_type: KeyType::EcdsaP256,
            challenge: ChallengeKind::Http01,
            profile: None,
            state: PathBuf::from(DEFAULT_STATE),
            retry_min: DEFAULT_RETRY_MIN,
        }]
    );
    assert_eq!(crate::acme::wanted(&c).len(), 2);

    // Without a plain listener the challenge is TLS-ALPN-01; every key set.
    let text = String::from(
        "[server]\nlisten = [{ addr = \"127.0.0.1:8443\", tls = { acme = \"x\" } }]\n\
         [[vhost]]\nnames = [\"a.test\"]\ntls = { acme = \"x\" }\n\
         [acme.x]\ndirectory = \"https://ca.test/dir\"\nca = \"certs/acme-server-ca.pem\"\n\
         contact = [\"mailto:ops@a.test\"]\neab = { kid = \"k1\", hmac_key = \"c2VjcmV0\" }\n\
         key_type = \"ecdsa-p384\"\nprofile = \"shortlived\"\nstate = \"acme-state\"\nretry_min = \"5s\"\n"
    );
    let c = parse(&dir, &text).unwrap_or_else(|e| panic!("{e}"));
    let i = &c.acme[0];
    assert_eq!(i.challenge, ChallengeKind::TlsAlpn01);
    assert_eq!(i.contact, ["mailto:ops@a.test"]);
    assert_eq!(
        i.eab,
        Some(Eab {
            kid: "k1".into(),
            hmac_key: b"secret".to_vec()
        })
    );
    assert_eq!(i.key_type, KeyType::EcdsaP384);
    assert_eq!(i.profile.as_deref(), Some("shortlived"));
    assert_eq!(i.state, dir.path("acme-state"));
    assert_eq!(i.retry_min, Duration::from_secs(5));
    // The listener has no names: it presents only its vhosts' certificates.
    assert!(c.tls.listeners[0]
        .as_ref()
        .unwrap()
        .acme
        .as_ref()
        .unwrap()
        .names
        .is_empty());
    assert_eq!(crate::acme::wanted(&c).len(), 1);
}

#[test]
fn refusals_name_the_line_and_key() {
    let dir = fixture("errors");
    let listen = "[server] listen";
    let le = |k: &str| format!("[acme.le] {k}");
    #[rustfmt::skip]
    let cases: Vec<(String, usize, String, &str)> = vec![
        (site("acme = \"nope\"", ISSUER), 2, listen.into(), "no [acme.nope] section names it"),
        (site("cert = \"site.pem\", key = \"site.key\"", ISSUER), 3, "[acme.le]".into(),
         "has no effect: no listener or [[vhost]] has tls = { acme"),
        (site("acme = \"le\", cert = \"site.pem\"", ISSUER), 2, listen.into(),
         "tls.cert: a certificate comes from files or from acme, not both"),
        (site("names = [\"a.test\"], cert = \"site.pem\", key = \"site.key\"", ISSUER), 2, listen.into(),
         "tls.names: needs acme = \"NAME\""),
        (site("", ISSUER), 2, listen.into(), "tls: expected cert and key, or acme = \"NAME\""),
        (site("cert = \"site.pem\"", ""), 2, listen.into(), "tls.cert: needs key beside it"),
        (site("acme = \"le\", names = [\"*.a.test\"]", ISSUER), 2, listen.into(),
         "tls.names: \"*.a.test\" is a wildcard"),
        (site("acme = \"le\", names = [\"a.test\", \"A.test\"]", ISSUER), 2, listen.into(),
         "tls.names: \"a.test\" is listed twice"),
        (site("acme = \"le\", names = [\"10.0.0.1\"]", ISSUER), 2, listen.into(), "tls.names: expected a DNS name"),
        (site("acme = \"le\"", &format!("{ISSUER}[[vhost]]\nnames = [\"*.w.test\"]\ntls = {{ acme = \"le\" }}\n")),
         8, "[[vhost]] tls.acme".into(), "\"*.w.test\" is a wildcard"),
        (site("acme = \"le\"", &format!("{ISSUER}[[vhost]]\nnames = [\"v.test\"]\ntls = {{ acme = \"le\", names = [\"x.test\"] }}\n")),
         8, "[[vhost]] tls.names".into(), "only on a listener"),
        (site("acme = \"le\"", "[acme.le]\nca = \"certs/acme-server-ca.pem\"\n"), 3, le("directory"), "is needed"),
        (site("acme = \"le\"", "[acme.le]\ndirectory = \"http://ca.test/dir\"\n"), 4, le("directory"),
         "expected an https:// URL"),
        (site("acme = \"le\"", &format!("{ISSUER}contact = [\"ops@a.test\"]\n")), 6, le("contact"),
         "expected \"mailto:ADDRESS\""),
        (site("acme = \"le\"", &format!("{ISSUER}key_type = \"rsa\"\n")), 6, le("key_type"),
         "expected one of \"ecdsa-p256\", \"ecdsa-p384\", got \"rsa\""),
        (site("acme = \"le\"", &format!("{ISSUER}challenge = \"dns-01\"\n")), 6, le("challenge"),
         "expected one of \"http-01\", \"tls-alpn-01\""),
        (format!("[server]\nlisten = [{{ addr = \"127.0.0.1:8443\", tls = {{ acme = \"le\", names = [\"a.test\"] }} }}]\n{ISSUER}challenge = \"http-01\"\n"),
         6, le("challenge"), "has none"),
        (site("acme = \"le\"", &format!("{ISSUER}eab = {{ kid = \"k\", hmac_key = \"not base64!\" }}\n")), 6,
         le("eab.hmac_key"), "expected the MAC key in base64url"),
        (site("acme = \"le\"", &format!("{ISSUER}eab = {{ kid = \" \", hmac_key = \"c2VjcmV0\" }}\n")), 6,
         le("eab.kid"), "empty string"),
        (site("acme = \"le\"", &format!("{ISSUER}retry_min = \"100ms\"\n")), 6, le("retry_min"),
         "expected at least 1s"),
        (site("acme = \"le\"", &format!("{ISSUER}profile = \"\"\n")), 6, le("profile"), "empty string"),
        (site("acme = \"le\"", "[acme.le]\ndirectory = \"https://ca.test/dir\"\nca = \"nope.pem\"\n"), 5,
         le("ca"), "cannot read"),
        (site("acme = \"le\"", &format!("{ISSUER}renew = true\n")), 6, le("renew"), "unknown key"),
    ];
    let mut failed = Vec::new();
    for (text, line, key, message) in &cases {
        match parse(&dir, text) {
            Err(ConfigError::File {
                file,
                position,
                key: k,
                message: m,
            }) if file == dir.path(NAME)
                && position.map(|p| p.line) == Some(*line)
                && k.as_deref() == Some(key.as_str())
                && m.contains(message) => {}
            other => failed.push(format!(
                "want {line}: {key}: {message}\ngot {other:?}\nfor\n{text}"
            )),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn to_toml_round_trips_acme() {
    let dir = fixture("round-trip");
    let path = dir.path(NAME);
    let texts = [
        site("acme = \"le\", names = [\"a.test\"]", ISSUER),
        site(
            "acme = \"le\"",
            &format!(
                "{ISSUER}contact = [\"mailto:a@a.test\"]\neab = {{ kid = \"k\", hmac_key = \"c2VjcmV0\" }}\n\
                 challenge = \"tls-alpn-01\"\nprofile = \"p\"\nstate = \"st\"\nretry_min = \"2s\"\n\
                 [[vhost]]\nnames = [\"v.test\", \"w.test\"]\ntls = {{ acme = \"le\" }}\n"
            ),
        ),
    ];
    for source in texts {
        let config = parse(&dir, &source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        let text = config.to_toml();
        assert!(text.contains("acme = \"le\""), "{text}");
        assert_eq!(
            crate::config::tests::written_back(&config, &path),
            config,
            "{text}"
        );
    }
}

/// The examples in the README and in `config/acme.rs` are valid, with the
/// files they name made in `certs/`.
#[test]
fn documented_acme_examples_are_valid() {
    let dir = fixture("docs");
    let examples =
        super::tests::documented_examples("config/acme.rs", include_str!("acme.rs"), "[acme.le]");
    for (source, block) in &examples {
        let c = parse(&dir, block).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(c.acme.len(), 1, "{source}");
        assert!(!crate::acme::wanted(&c).is_empty(), "{source}");
    }
}
