//! Unit tests for the rustls configs: SNI choice, whole handshakes in
//! memory (bytes pumped between a `ClientConnection` and the
//! `ServerConnection`), upstream verification, versions and resumption.

use std::sync::Arc;

use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::server::ResolvesServerCert;
use rustls::{
    ClientConfig, ClientConnection, HandshakeKind, ProtocolVersion, ServerConfig, ServerConnection,
};

use super::certs::{load_certified_key, load_roots, read_certs, CertPaths};
use super::sni::{SniResolver, VhostCerts};
use super::test_certs::{Ca, TestDir};
use super::{client_config, provider, server_configs, server_name};
use crate::config::tls::{TlsConfig, TlsVersion, UnknownName, Vhost};
use crate::upstream::settings::UpstreamTls;

/// A CA, a default certificate and three vhosts: `a.example` with its own
/// certificate, `*.b.example` with its own, `c.example` with none.
struct Fixture {
    dir: TestDir,
    ca: Ca,
    default: CertPaths,
    a: CertPaths,
    b: CertPaths,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let dir = TestDir::new(tag);
        let ca = dir.ca("ca");
        let default = dir.leaf(&ca, "default", &["default.test"]);
        let a = dir.leaf(&ca, "a", &["a.example"]);
        let b = dir.leaf(&ca, "b", &["*.b.example"]);
        Fixture {
            dir,
            ca,
            default,
            a,
            b,
        }
    }

    /// A plain listener, then a TLS one.
    fn config(&self, unknown: UnknownName) -> TlsConfig {
        let vhost = |names: &[&str], cert: Option<&CertPaths>| Vhost {
            names: names.iter().map(|n| n.to_string()).collect(),
            cert: cert.cloned(),
            ..Vhost::default()
        };
        TlsConfig {
            listeners: vec![None, Some(self.default.clone())],
            vhosts: vec![
                vhost(&["a.example"], Some(&self.a)),
                vhost(&["*.b.example"], Some(&self.b)),
                vhost(&["c.example"], None),
            ],
            unknown_name: unknown,
            ..TlsConfig::default()
        }
    }

    /// A client trusting the fixture's CA, with the given versions.
    fn client(&self, versions: &[&'static rustls::SupportedProtocolVersion]) -> ClientConfig {
        let mut c = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(load_roots(Some(&self.ca.pem)).unwrap())
            .with_no_client_auth();
        c.alpn_protocols = vec![b"http/1.1".to_vec()];
        c
    }
}

/// The leaf of a certificate file.
fn leaf(paths: &CertPaths) -> CertificateDer<'static> {
    read_certs(&paths.cert).unwrap().remove(0)
}

/// Runs a handshake (and what follows it, such as session tickets) to the
/// end; the first error either side meets.
fn handshake(
    client: &mut ClientConnection,
    server: &mut ServerConnection,
) -> Result<(), rustls::Error> {
    for _ in 0..16 {
        let mut buf = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            server.read_tls(&mut rd).unwrap();
            server.process_new_packets()?;
        }
        let mut buf = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            client.read_tls(&mut rd).unwrap();
            client.process_new_packets()?;
        }
        if !client.is_handshaking()
            && !server.is_handshaking()
            && !client.wants_write()
            && !server.wants_write()
        {
            return Ok(());
        }
    }
    panic!("the handshake did not finish");
}

fn connect(
    server: &Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    name: &str,
) -> Result<(ClientConnection, ServerConnection), rustls::Error> {
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let mut c = ClientConnection::new(client, name).unwrap();
    let mut s = ServerConnection::new(server.clone()).unwrap();
    handshake(&mut c, &mut s)?;
    Ok((c, s))
}

/// The TLS listener's config (the second listener) of `tls`.
fn listener(tls: &TlsConfig) -> Arc<ServerConfig> {
    let configs = server_configs(tls, &[false]).unwrap();
    assert_eq!(configs.len(), 2);
    assert!(configs[0].is_none());
    configs[1].clone().unwrap()
}

#[test]
fn resolver_picks_by_name() {
    let f = Fixture::new("sni");
    let (a, b, default) = (leaf(&f.a), leaf(&f.b), leaf(&f.default));
    for unknown in [UnknownName::Default, UnknownName::Refuse] {
        let tls = f.config(unknown);
        let vhosts = Arc::new(VhostCerts::load(&tls).unwrap());
        let key = load_certified_key(&f.default).unwrap();
        let r = SniResolver::new(vhosts, Some(super::sni::Cert::Fixed(key)), unknown);
        let unknown_gets = match unknown {
            UnknownName::Default => Some(&default),
            UnknownName::Refuse => None,
        };
        #[rustfmt::skip]
        let cases: &[(Option<&str>, Option<&CertificateDer<'_>>)] = &[
            (Some("a.example"),       Some(&a)),
            (Some("A.Example"),       Some(&a)),
            (Some("a.example."),      Some(&a)),
            (Some("x.b.example"),     Some(&b)),
            (Some("b.example"),       unknown_gets),
            (Some("y.x.b.example"),   unknown_gets),
            // A vhost without a certificate of its own: the default,
            // whatever unknown_name says.
            (Some("c.example"),       Some(&default)),
            (Some("x.c.example"),     unknown_gets),
            (Some("other.test"),      unknown_gets),
            (None,                    unknown_gets),
        ];
        for &(sni, want) in cases {
            let got = r.pick(sni).map(|k| k.cert[0].clone());
            assert_eq!(got.as_ref(), want, "{sni:?} with {unknown:?}");
        }
        assert!(!r.only_raw_public_keys());
    }
}

#[test]
fn handshake_with_the_vhost_certificate() {
    let f = Fixture::new("handshake");
    let server = listener(&f.config(UnknownName::Default));
    let client = Arc::new(f.client(&[&rustls::version::TLS13, &rustls::version::TLS12]));
    for (name, want) in [
        ("a.example", &f.a),
        ("x.b.example", &f.b),
        ("default.test", &f.default),
    ] {
        let (c, s) = connect(&server, client.clone(), name).unwrap();
        assert_eq!(c.peer_certificates().unwrap()[0], leaf(want), "{name}");
        assert_eq!(c.alpn_protocol(), Some(&b"http/1.1"[..]), "{name}");
        assert_eq!(s.alpn_protocol(), Some(&b"http/1.1"[..]), "{name}");
        assert_eq!(s.server_name(), Some(name));
        assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_3));
    }
    // A TLS 1.2 client is served too, by default.
    let client12 = Arc::new(f.client(&[&rustls::version::TLS12]));
    let (c, _) = connect(&server, client12, "a.example").unwrap();
    assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_2));
    assert_eq!(c.alpn_protocol(), Some(&b"http/1.1"[..]));
}

#[test]
fn unknown_names_can_be_refused() {
    let f = Fixture::new("refuse");
    let client = Arc::new(f.client(&[&rustls::version::TLS13]));
    let server = listener(&f.config(UnknownName::Refuse));
    assert!(connect(&server, client.clone(), "a.example").is_ok());
    let err = connect(&server, client.clone(), "default.test").unwrap_err();
    assert!(err.to_string().contains("no server certificate"), "{err}");
    // With "default" the same name gets the listener's certificate.
    let server = listener(&f.config(UnknownName::Default));
    let (c, _) = connect(&server, client, "default.test").unwrap();
    assert_eq!(c.peer_certificates().unwrap()[0], leaf(&f.default));
}

#[test]
fn min_version_13_refuses_a_tls12_client() {
    let f = Fixture::new("version");
    let tls = TlsConfig {
        min_version: TlsVersion::Tls13,
        ..f.config(UnknownName::Default)
    };
    let server = listener(&tls);
    let client12 = Arc::new(f.client(&[&rustls::version::TLS12]));
    let err = connect(&server, client12, "a.example").unwrap_err();
    assert!(matches!(err, rustls::Error::PeerIncompatible(_)), "{err:?}");
    let client13 = Arc::new(f.client(&[&rustls::version::TLS13]));
    assert!(connect(&server, client13, "a.example").is_ok());
}

/// Tickets come from one process-wide ticketer, so a session made with one
/// config resumes with another built later (another core, or a reload).
#[test]
fn tickets_resume_across_configs() {
    let f = Fixture::new("tickets");
    let tls = f.config(UnknownName::Default);
    let first = listener(&tls);
    let second = listener(&tls);
    assert!(first.ticketer.enabled());
    let ptr = |c: &ServerConfig| Arc::as_ptr(&c.ticketer) as *const ();
    assert_eq!(ptr(&first), ptr(&second));
    let ptr = |c: &ServerConfig| Arc::as_ptr(&c.session_storage) as *const ();
    assert_eq!(ptr(&first), ptr(&second));
    for versions in [&[&rustls::version::TLS13][..], &[&rustls::version::TLS12]] {
        let mut client = f.client(versions);
        client.resumption = Resumption::in_memory_sessions(8);
        let client = Arc::new(client);
        let (c, _) = connect(&first, client.clone(), "a.example").unwrap();
        assert_eq!(c.handshake_kind(), Some(HandshakeKind::Full));
        let (c, _) = connect(&second, client, "a.example").unwrap();
        assert_eq!(
            c.handshake_kind(),
            Some(HandshakeKind::Resumed),
            "{versions:?}"
        );
    }
    // Without tickets no TLS 1.3 ticket is sent, so nothing resumes.
    let off = listener(&TlsConfig {
        tickets: false,
        ..tls
    });
    assert!(!off.ticketer.enabled());
    assert_eq!(off.send_tls13_tickets, 0);
    let client = Arc::new(f.client(&[&rustls::version::TLS13]));
    let (c, _) = connect(&off, client.clone(), "a.example").unwrap();
    assert_eq!(c.handshake_kind(), Some(HandshakeKind::Full));
    let (c, _) = connect(&off, client, "a.example").unwrap();
    assert_eq!(c.handshake_kind(), Some(HandshakeKind::Full));
}

#[test]
fn certificates_are_read_on_each_call() {
    let f = Fixture::new("reread");
    let tls = f.config(UnknownName::Default);
    let before = listener(&tls);
    let old = leaf(&f.a);
    // Renewed in place: the next call serves the new certificate, and a
    // config built before keeps the old one.
    let renewed = f.dir.leaf(&f.ca, "a", &["a.example"]);
    assert_eq!(renewed, f.a);
    let new = leaf(&f.a);
    assert_ne!(old, new);
    let after = listener(&tls);
    let client = Arc::new(f.client(&[&rustls::version::TLS13]));
    let (c, _) = connect(&after, client.clone(), "a.example").unwrap();
    assert_eq!(c.peer_certificates().unwrap()[0], new);
    // (A fresh client: this one would resume its session, tickets being
    // shared, and see the certificate of that session.)
    let client = Arc::new(f.client(&[&rustls::version::TLS13]));
    let (c, _) = connect(&before, client, "a.example").unwrap();
    assert_eq!(c.peer_certificates().unwrap()[0], old);
    // A file gone since validation is an error naming it.
    std::fs::remove_file(&f.default.key).unwrap();
    let err = server_configs(&tls, &[]).unwrap_err();
    assert!(err.starts_with("listener 2: cannot read "), "{err}");
    assert!(err.contains("default.key"), "{err}");
    std::fs::remove_file(&f.b.cert).unwrap();
    let err = server_configs(&tls, &[]).unwrap_err();
    assert!(
        err.starts_with("[[vhost]] \"*.b.example\": cannot read "),
        "{err}"
    );
    // No TLS listener: nothing is read.
    let plain = TlsConfig {
        listeners: vec![None, None],
        ..tls
    };
    let configs = server_configs(&plain, &[]).unwrap();
    assert_eq!(configs.len(), 2);
    assert!(configs.iter().all(Option::is_none));
}

#[test]
fn upstream_client_verifies_with_its_ca() {
    let f = Fixture::new("client");
    let server = listener(&f.config(UnknownName::Default));
    let other = f.dir.ca("other");
    let up = |verify, ca: &Ca, sni: Option<&str>| UpstreamTls {
        verify,
        ca: Some(ca.pem.clone()).filter(|_| verify),
        sni: sni.map(str::to_owned),
    };
    let run = |t: &UpstreamTls, host: &str| {
        let config = client_config(t, Default::default()).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        let name = server_name(t, host).unwrap();
        let mut c = ClientConnection::new(config, name).unwrap();
        let mut s = ServerConnection::new(server.clone()).unwrap();
        handshake(&mut c, &mut s).map(|()| c)
    };
    // The right CA.
    let c = run(&up(true, &f.ca, None), "a.example").unwrap();
    assert_eq!(c.alpn_protocol(), Some(&b"http/1.1"[..]));
    // tls_sni names the certificate when the address does not.
    run(&up(true, &f.ca, Some("x.b.example")), "10.0.0.1").unwrap();
    // Another CA: refused.
    let err = run(&up(true, &other, None), "a.example").unwrap_err();
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
        ),
        "{err:?}"
    );
    // The right CA, the wrong name.
    let err = run(&up(true, &f.ca, Some("nope.example")), "a.example").unwrap_err();
    assert!(
        matches!(err, rustls::Error::InvalidCertificate(_)),
        "{err:?}"
    );
    // tls_verify = false takes any certificate, for any name.
    run(&up(false, &other, Some("nope.example")), "a.example").unwrap();
}

#[test]
fn client_config_errors_name_the_file() {
    let dir = TestDir::new("client-errors");
    let t = |ca: std::path::PathBuf| UpstreamTls {
        verify: true,
        ca: Some(ca),
        sni: None,
    };
    let missing = dir.path("missing.pem");
    let err = client_config(&t(missing.clone()), Default::default()).unwrap_err();
    assert_eq!(
        err,
        format!(
            "cannot read {}: No such file or directory",
            missing.display()
        )
    );
    let empty = dir.write("empty.pem", "");
    let err = client_config(&t(empty.clone()), Default::default()).unwrap_err();
    assert_eq!(err, format!("no certificate in {}", empty.display()));
}

#[test]
fn server_names() {
    let t = |sni: Option<&str>| UpstreamTls {
        verify: true,
        ca: None,
        sni: sni.map(str::to_owned),
    };
    #[rustfmt::skip]
    let cases: &[(Option<&str>, &str, &str)] = &[
        (None,                "app.internal", "DnsName(\"app.internal\")"),
        (None,                "App.Internal.", "DnsName(\"app.internal\")"),
        (None,                "10.0.0.1",     "IpAddress(V4(Ipv4Addr([10, 0, 0, 1])))"),
        (None,                "::1",          "IpAddress(V6(Ipv6Addr([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])))"),
        (None,                "[::1]",        "IpAddress(V6(Ipv6Addr([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])))"),
        (Some("api.example"), "10.0.0.1",     "DnsName(\"api.example\")"),
        (Some("10.1.1.1"),    "app.internal", "IpAddress(V4(Ipv4Addr([10, 1, 1, 1])))"),
    ];
    for &(sni, host, want) in cases {
        let got = server_name(&t(sni), host).unwrap();
        assert_eq!(format!("{got:?}"), want, "{sni:?} {host}");
    }
    assert_eq!(
        server_name(&t(None), "bad name").unwrap_err(),
        "\"bad name\" is not a valid TLS server name"
    );
}
