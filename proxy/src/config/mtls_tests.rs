//! Unit tests for the client-certificate keys: a listener's `client_auth`,
//! `client_ca`, `client_crl` and a route's `require_client_cert`; what good
//! values give, each refusal with its line, key and message, and the
//! `to_toml` round trip. The CA and CRL are made with rcgen.

use std::fs;

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertificateRevocationListParams, IsCa,
    KeyIdMethod, KeyPair, SerialNumber,
};

use super::{Config, ConfigError};
use crate::tls::client_auth::{ClientAuth, ClientAuthMode};
use crate::tls::test_certs::TestDir;

const NAME: &str = "ringside.toml";

/// `site.pem`/`site.key`, `clients.pem` (a CA), `clients.crl` (its CRL),
/// `garbage.pem`, and the documented examples' files under `certs/`.
fn fixture(tag: &str) -> TestDir {
    let dir = TestDir::new(&format!("mtls-{tag}"));
    let ca = dir.ca("ca");
    dir.leaf(&ca, "site", &["site.test"]);
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let clients = params.self_signed(&key).unwrap();
    dir.write("clients.pem", clients.pem());
    let crl = CertificateRevocationListParams {
        this_update: date_time_ymd(2024, 1, 1),
        next_update: date_time_ymd(2099, 1, 1),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: Vec::new(),
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&clients, &key)
    .unwrap();
    dir.write("clients.crl", crl.pem().unwrap());
    dir.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64!\n");
    fs::create_dir(dir.path("certs")).unwrap();
    for (from, to) in [
        ("site.pem", "certs/site.pem"),
        ("site.key", "certs/site.key"),
        ("clients.pem", "certs/clients-ca.pem"),
        ("clients.crl", "certs/clients-ca.crl"),
    ] {
        fs::copy(dir.path(from), dir.path(to)).unwrap();
    }
    dir
}

fn parse(dir: &TestDir, text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, &dir.path(NAME))
}

/// A config with one TLS listener whose `tls` table adds `keys`, and then
/// `rest`.
fn listener(keys: &str, rest: &str) -> String {
    format!(
        "[server]\nlisten = [{{ addr = \"127.0.0.1:8443\", tls = {{ cert = \"site.pem\", key = \"site.key\"{keys} }} }}]\n{rest}"
    )
}

const CLIENTS: &str = ", client_auth = \"require\", client_ca = \"clients.pem\"";

#[test]
fn good_values() {
    let dir = fixture("good");
    let c = parse(&dir, &listener("", "")).unwrap();
    assert_eq!(c.tls.listeners[0].as_ref().unwrap().client, None);
    assert!(!c.mtls.any());

    let text = listener(
        ", client_auth = \"optional\", client_ca = \"clients.pem\", client_crl = [\"clients.crl\"]",
        "[upstream.u]\nservers = [\"127.0.0.1:1\"]\n\
         [[route]]\nprefix = \"/open/\"\nupstream = \"u\"\n\
         [[route]]\nprefix = \"/api/\"\nupstream = \"u\"\nrequire_client_cert = true\n\
         [[route]]\nprefix = \"/files/\"\nrequire_client_cert = true\n\
         [[route]]\nprefix = \"/pub/\"\nrequire_client_cert = false\n",
    );
    let c = parse(&dir, &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.tls.listeners[0].as_ref().unwrap().client,
        Some(ClientAuth {
            mode: ClientAuthMode::Optional,
            ca: dir.path("clients.pem"),
            crls: vec![dir.path("clients.crl")],
        })
    );
    assert_eq!(c.mtls.proxy_routes, [false, true]);
    assert_eq!(c.mtls.static_routes, ["/files/"]);
    assert!(c.mtls.static_route("/files/") && !c.mtls.static_route("/pub/"));
}

#[test]
fn refusals_name_the_line_and_key() {
    let dir = fixture("errors");
    let at_listen = "[server] listen";
    let vhost = |keys: &str| {
        listener(
            "",
            &format!("[[vhost]]\nnames = [\"a.test\"]\ntls = {{ cert = \"site.pem\", key = \"site.key\"{keys} }}\n"),
        )
    };
    let missing = dir.path("nope.pem").display().to_string();
    #[rustfmt::skip]
    let cases: Vec<(String, usize, &str, String)> = vec![
        (listener(", client_auth = \"on\", client_ca = \"clients.pem\"", ""), 2, at_listen,
         "tls.client_auth: expected \"require\" or \"optional\", got \"on\"".into()),
        (listener(", client_auth = \"require\"", ""), 2, at_listen,
         "tls.client_auth: needs client_ca".into()),
        (listener(", client_ca = \"clients.pem\"", ""), 2, at_listen,
         "tls.client_ca: has no effect without client_auth".into()),
        (listener(", client_crl = [\"clients.crl\"]", ""), 2, at_listen,
         "tls.client_crl: has no effect without client_auth".into()),
        (listener(", client_auth = \"require\", client_ca = \"nope.pem\"", ""), 2, at_listen,
         format!("tls.client_ca: cannot read {missing}")),
        (listener(", client_auth = \"require\", client_ca = \"garbage.pem\"", ""), 2, at_listen,
         "tls.client_ca: cannot parse".into()),
        (listener(&format!("{CLIENTS}, client_crl = [\"clients.crl\", \"site.pem\"]"), ""), 2, at_listen,
         "tls.client_crl: no CRL".into()),
        (listener(&format!("{CLIENTS}, client_crl = [\"nope.pem\"]"), ""), 2, at_listen,
         format!("tls.client_crl: cannot read {missing}")),
        (listener(", client_auth = true", ""), 2, "[server.listen.tls] client_auth",
         "expected a string".into()),
        (vhost(CLIENTS), 5, "[[vhost]] tls.client_auth",
         "only on a [server] listen entry's tls".into()),
        (vhost(", client_ca = \"clients.pem\""), 5, "[[vhost]] tls.client_ca",
         "only on a [server] listen entry's tls".into()),
        (listener("", "[[route]]\nprefix = \"/\"\nrequire_client_cert = true\n"), 5, "[[route]] require_client_cert",
         "no [server] listen entry's tls has client_auth".into()),
        (listener(CLIENTS, "[[route]]\nprefix = \"/\"\nrequire_client_cert = \"yes\"\n"), 5, "[[route]] require_client_cert",
         "expected true or false, got the string \"yes\"".into()),
        (listener("", "[upstream.u]\nservers = [\"127.0.0.1:1\"]\n[[route]]\nprefix = \"/\"\nupstream = \"u\"\nrequest_headers = { set = { \"Client-Cert\" = \":eA==:\" } }\n"),
         8, "[[route]] request_headers.set", "Client-Cert cannot be changed here: ringside writes it".into()),
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
                && k.as_deref() == Some(*key)
                && m.contains(message.as_str()) => {}
            other => failed.push(format!(
                "want {line}: {key}: {message}\ngot {other:?}\nfor\n{text}"
            )),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn the_error_points_at_the_value() {
    let dir = fixture("column");
    let text = listener(", client_auth = \"require\", client_ca = \"nope.pem\"", "");
    let Err(ConfigError::File { position, .. }) = parse(&dir, &text) else {
        panic!("accepted")
    };
    let column = text.lines().nth(1).unwrap().find("\"nope.pem\"").unwrap() + 1;
    assert_eq!(position.map(|p| (p.line, p.column)), Some((2, column)));
}

#[test]
fn to_toml_round_trips_client_certificates() {
    let dir = fixture("round-trip");
    let path = dir.path(NAME);
    let texts = [
        listener(CLIENTS, ""),
        listener(
            ", client_auth = \"optional\", client_ca = \"clients.pem\", client_crl = [\"clients.crl\", \"clients.crl\"]",
            "[upstream.u]\nservers = [\"127.0.0.1:1\"]\n\
             [[route]]\nprefix = \"/api/\"\nupstream = \"u\"\nrequire_client_cert = true\n\
             [[route]]\nprefix = \"/files/\"\nrequire_client_cert = true\n",
        ),
    ];
    for source in texts {
        let config = parse(&dir, &source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        let text = config.to_toml();
        assert!(text.contains("client_auth = "), "{text}");
        assert_eq!(
            crate::config::tests::written_back(&config, &path),
            config,
            "{text}"
        );
    }
}

/// The examples in the README and in `config/mtls.rs` are valid, with the
/// files they name made in `certs/`.
#[test]
fn documented_mtls_examples_are_valid() {
    let dir = fixture("docs");
    let examples = super::tests::documented_examples(
        "config/mtls.rs",
        include_str!("mtls.rs"),
        "require_client_cert = true",
    );
    for (source, block) in &examples {
        let c = parse(&dir, block).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert!(super::mtls::any_client_auth(&c.tls), "{source}");
        assert!(c.mtls.any(), "{source}");
    }
}
