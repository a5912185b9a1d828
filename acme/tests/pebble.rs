//! The client against a real CA: Pebble, with its challenges answered by
//! small servers in this test.

#[path = "../../testsupport/pebble.rs"]
mod pebble;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pebble::{Pebble, PebbleOptions};
use ringside_acme::{
    renew_at, AccountKey, Ca, CertInfo, Challenge, ChallengeKind, Eab, Error, KeyType, OrderSpec,
    Responder, StateDir,
};
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringside-acme-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The workspace builds rustls with two providers, so none is the
/// process default: each config names its own.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn client_tls(pebble: &Pebble) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&pebble.ca_pem).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// Answers HTTP-01 on a listener Pebble is pointed at.
struct Http01Server {
    tokens: Arc<Mutex<HashMap<String, String>>>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl Http01Server {
    fn start(listener: TcpListener) -> Http01Server {
        let tokens: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let port = listener.local_addr().unwrap().port();
        let (t, s) = (tokens.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let t = t.clone();
                std::thread::spawn(move || {
                    let mut req = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => req.extend_from_slice(&buf[..n]),
                        }
                    }
                    let line = String::from_utf8_lossy(&req);
                    let path = line.split_whitespace().nth(1).unwrap_or("");
                    let answer = path
                        .strip_prefix("/.well-known/acme-challenge/")
                        .and_then(|token| t.lock().unwrap().get(token).cloned());
                    let response = match answer {
                        Some(body) => format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_string(),
                    };
                    let _ = conn.write_all(response.as_bytes());
                });
            }
        });
        Http01Server { tokens, stop, port }
    }
}

impl Drop for Http01Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Presents TLS-ALPN-01 certificates on handshakes asking for acme-tls/1.
#[derive(Debug, Default)]
struct AlpnResolver {
    certs: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl ResolvesServerCert for AlpnResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let acme = hello
            .alpn()
            .is_some_and(|mut protos| protos.any(|p| p == b"acme-tls/1"));
        if !acme {
            return None;
        }
        self.certs
            .lock()
            .unwrap()
            .get(hello.server_name()?)
            .cloned()
    }
}

struct TlsAlpnServer {
    resolver: Arc<AlpnResolver>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl TlsAlpnServer {
    fn start(listener: TcpListener) -> TlsAlpnServer {
        let resolver = Arc::new(AlpnResolver::default());
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        config.alpn_protocols = vec![b"acme-tls/1".to_vec()];
        let config = Arc::new(config);
        let stop = Arc::new(AtomicBool::new(false));
        let port = listener.local_addr().unwrap().port();
        let s = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut sock) = conn else { continue };
                let config = config.clone();
                std::thread::spawn(move || {
                    let Ok(mut tls) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    while tls.is_handshaking() {
                        if tls.complete_io(&mut sock).is_err() {
                            return;
                        }
                    }
                    tls.send_close_notify();
                    let _ = tls.complete_io(&mut sock);
                });
            }
        });
        TlsAlpnServer {
            resolver,
            stop,
            port,
        }
    }
}

impl Drop for TlsAlpnServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The server's part, as the lead's integration will do it, recording
/// what it was asked.
struct TestResponder<'a> {
    http: &'a Http01Server,
    alpn: &'a TlsAlpnServer,
    published: Vec<Challenge>,
    withdrawn: Vec<Challenge>,
}

impl Responder for TestResponder<'_> {
    fn publish(&mut self, challenge: &Challenge) {
        match challenge {
            Challenge::Http01 {
                token,
                key_authorization,
            } => {
                self.http
                    .tokens
                    .lock()
                    .unwrap()
                    .insert(token.clone(), key_authorization.clone());
            }
            Challenge::TlsAlpn01 {
                name,
                cert_der,
                key_pkcs8_der,
            } => {
                let key = rustls::crypto::aws_lc_rs::sign::any_supported_type(
                    &PrivateKeyDer::Pkcs8(key_pkcs8_der.clone().into()),
                )
                .unwrap();
                let ck = CertifiedKey::new(vec![CertificateDer::from(cert_der.clone())], key);
                self.alpn
                    .resolver
                    .certs
                    .lock()
                    .unwrap()
                    .insert(name.clone(), Arc::new(ck));
            }
        }
        self.published.push(challenge.clone());
    }

    fn withdraw(&mut self, challenge: &Challenge) {
        match challenge {
            Challenge::Http01 { token, .. } => {
                self.http.tokens.lock().unwrap().remove(token);
            }
            Challenge::TlsAlpn01 { name, .. } => {
                self.alpn.resolver.certs.lock().unwrap().remove(name);
            }
        }
        self.withdrawn.push(challenge.clone());
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn spec(list: &[&str], challenge: ChallengeKind, key: KeyType) -> OrderSpec {
    OrderSpec {
        names: names(list),
        challenge,
        key,
        profile: None,
        replaces: None,
    }
}

fn chain_ders(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.unwrap())
        .collect()
}

/// The chain verifies up to Pebble's issuing root for `name`.
fn verify_chain(pebble: &Pebble, chain: &[CertificateDer<'static>], name: &str) {
    let mut roots = rustls::RootCertStore::empty();
    for root in CertificateDer::pem_slice_iter(pebble.issuing_roots_pem().as_bytes()) {
        roots.add(root.unwrap()).unwrap();
    }
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .unwrap();
    verifier
        .verify_server_cert(
            &chain[0],
            &chain[1..],
            &ServerName::try_from(name.to_string()).unwrap(),
            &[],
            UnixTime::now(),
        )
        .unwrap();
}

struct Setup {
    pebble: Pebble,
    http: Http01Server,
    alpn: TlsAlpnServer,
    dir: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn setup(tag: &str, mut opts: PebbleOptions) -> Setup {
    // The answering servers bind first, so the ports Pebble is given are
    // already theirs.
    let http = Http01Server::start(TcpListener::bind("127.0.0.1:0").unwrap());
    let alpn = TlsAlpnServer::start(TcpListener::bind("127.0.0.1:0").unwrap());
    opts.http_port = http.port;
    opts.tls_port = alpn.port;
    let dir = scratch(tag);
    let pebble = Pebble::start(&dir, &opts);
    Setup {
        pebble,
        http,
        alpn,
        dir,
    }
}

#[test]
fn pebble_issues_over_both_challenges_refuses_and_revokes() {
    let s = setup(
        "issue",
        PebbleOptions {
            validity_secs: Some(7200),
            blocklist: vec!["blocked.test".into()],
            ..PebbleOptions::default()
        },
    );
    let mut ca = Ca::open(&s.pebble.directory, client_tls(&s.pebble)).unwrap();
    // Pebble 2.4.0 has no renewalInfo.
    assert!(!ca.meta().renewal_info);
    assert!(!ca.meta().external_account_required);
    assert!(ca.meta().terms_of_service.is_some());

    let state = StateDir::open(&s.dir.join("state")).unwrap();
    let key = state.account_key("pebble").unwrap();
    let account = ca.account(key, &[], None).unwrap();
    // The same key again finds the same account (200, not 201).
    let again = ca
        .account(state.account_key("pebble").unwrap(), &[], None)
        .unwrap();
    assert_eq!(account.url, again.url);

    let mut responder = TestResponder {
        http: &s.http,
        alpn: &s.alpn,
        published: vec![],
        withdrawn: vec![],
    };

    // HTTP-01, two names.
    let wanted = names(&["a.test", "b.test"]);
    let issued = ca
        .issue(
            &account,
            &spec(
                &["a.test", "b.test"],
                ChallengeKind::Http01,
                KeyType::EcdsaP256,
            ),
            &mut responder,
        )
        .unwrap();
    assert_eq!(responder.published.len(), 2);
    assert_eq!(responder.withdrawn, responder.published);
    assert!(responder
        .published
        .iter()
        .all(|c| matches!(c, Challenge::Http01 { .. })));
    assert!(s.http.tokens.lock().unwrap().is_empty());
    let chain = chain_ders(&issued.chain_pem);
    assert!(chain.len() >= 2, "leaf and intermediate");
    verify_chain(&s.pebble, &chain, "b.test");
    let info = CertInfo::parse(&chain[0]).unwrap();
    assert!(info.covers(&wanted));
    assert!(!info.covers(&names(&["c.test"])));
    let lifetime = info.not_after.duration_since(info.not_before).unwrap();
    assert!(
        lifetime.as_secs() >= 7100 && lifetime.as_secs() <= 7200,
        "{lifetime:?}"
    );
    assert!(info.ari_id.is_some());
    let at = renew_at(&info, None, 42);
    assert!(at > info.not_before && at < info.not_after);
    // No renewalInfo: no window, and no request.
    assert_eq!(ca.renewal_info(&chain[0]).unwrap(), None);
    // The key is the leaf's: the state directory checks that on load.
    state
        .save_cert(&s.pebble.directory, &wanted, &issued)
        .unwrap();
    let loaded = state.load_cert(&s.pebble.directory, &wanted).unwrap();
    assert_eq!(loaded.chain_pem, issued.chain_pem);

    // TLS-ALPN-01, a P-384 key.
    responder.published.clear();
    responder.withdrawn.clear();
    let alpn_issued = ca
        .issue(
            &account,
            &spec(&["c.test"], ChallengeKind::TlsAlpn01, KeyType::EcdsaP384),
            &mut responder,
        )
        .unwrap();
    assert_eq!(responder.published.len(), 1);
    assert!(
        matches!(&responder.published[0], Challenge::TlsAlpn01 { name, .. } if name == "c.test")
    );
    assert_eq!(responder.withdrawn, responder.published);
    assert!(alpn_issued.key_pem.contains("BEGIN PRIVATE KEY"));
    let alpn_chain = chain_ders(&alpn_issued.chain_pem);
    verify_chain(&s.pebble, &alpn_chain, "c.test");
    assert!(CertInfo::parse(&alpn_chain[0])
        .unwrap()
        .covers(&names(&["c.test"])));
    state
        .save_cert(&s.pebble.directory, &names(&["c.test"]), &alpn_issued)
        .unwrap();
    assert!(state
        .load_cert(&s.pebble.directory, &names(&["c.test"]))
        .is_some());

    // A challenge left unanswered: the authorization becomes invalid, its
    // challenge's error comes back (status 0), and it is still withdrawn.
    struct Silent(Vec<Challenge>, Vec<Challenge>);
    impl Responder for Silent {
        fn publish(&mut self, c: &Challenge) {
            self.0.push(c.clone());
        }
        fn withdraw(&mut self, c: &Challenge) {
            self.1.push(c.clone());
        }
    }
    let mut silent = Silent(vec![], vec![]);
    let err = ca
        .issue(
            &account,
            &spec(&["silent.test"], ChallengeKind::Http01, KeyType::EcdsaP256),
            &mut silent,
        )
        .unwrap_err();
    let Error::Problem(problem) = &err else {
        panic!("not a problem: {err}");
    };
    assert_eq!(problem.status, 0, "{err}");
    assert!(
        problem.kind.starts_with("urn:ietf:params:acme:error:"),
        "{err}"
    );
    assert_eq!(silent.0.len(), 1);
    assert_eq!(silent.1, silent.0);

    // A refused order: Pebble's blocklist.
    responder.published.clear();
    let err = ca
        .issue(
            &account,
            &spec(&["blocked.test"], ChallengeKind::Http01, KeyType::EcdsaP256),
            &mut responder,
        )
        .unwrap_err();
    let Error::Problem(problem) = &err else {
        panic!("not a problem: {err}");
    };
    assert!(problem.kind.ends_with("rejectedIdentifier"), "{err}");
    assert!(!problem.json.is_empty());
    assert!(problem.status >= 400);
    assert!(responder.published.is_empty());

    // Revocation, then again: already revoked.
    ca.revoke(&account, &chain[0]).unwrap();
    let err = ca.revoke(&account, &chain[0]).unwrap_err();
    assert!(
        matches!(&err, Error::Problem(p) if p.kind.ends_with("alreadyRevoked")),
        "{err}"
    );
}

#[test]
fn pebble_refused_nonces_are_retried() {
    let s = setup(
        "nonce",
        PebbleOptions {
            nonce_reject: 50,
            ..PebbleOptions::default()
        },
    );
    let mut ca = Ca::open(&s.pebble.directory, client_tls(&s.pebble)).unwrap();
    // Each of these requests is made once by the client; with half the
    // nonces refused, Pebble sees more of them (all 17 going through on
    // their first nonce has a chance of 2^-17).
    let pem = AccountKey::generate().unwrap().to_pkcs8_pem();
    let mut account = None;
    for _ in 0..12 {
        let key = AccountKey::from_pkcs8_pem(&pem).unwrap();
        account = Some(ca.account(key, &[], None).unwrap());
    }
    let account = account.unwrap();
    let mut responder = TestResponder {
        http: &s.http,
        alpn: &s.alpn,
        published: vec![],
        withdrawn: vec![],
    };
    let issued = ca
        .issue(
            &account,
            &spec(&["nonce.test"], ChallengeKind::Http01, KeyType::EcdsaP256),
            &mut responder,
        )
        .unwrap();
    let chain = chain_ders(&issued.chain_pem);
    assert!(CertInfo::parse(&chain[0])
        .unwrap()
        .covers(&names(&["nonce.test"])));
    ca.revoke(&account, &chain[0]).unwrap();
    let logs = s.pebble.logs();
    let once = [
        "POST /sign-me-up ",
        "POST /order-plz ",
        "POST /chalZ/",
        "POST /finalize-order/",
        "POST /certZ/",
        "POST /revoke-cert ",
    ];
    let seen = logs
        .lines()
        .filter(|l| once.iter().any(|e| l.contains(e)))
        .count();
    assert!(seen > 17, "no nonce was refused ({seen} requests):\n{logs}");
}

#[test]
fn pebble_requires_and_takes_external_account_binding() {
    // A MAC key as a CA hands it out: base64url.
    let mac = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
    let http = Http01Server::start(TcpListener::bind("127.0.0.1:0").unwrap());
    let dir = scratch("eab");
    let pebble = Pebble::start_with(
        &dir,
        &PebbleOptions {
            http_port: http.port,
            tls_port: http.port,
            ..PebbleOptions::default()
        },
        serde_json::json!({
            "externalAccountBindingRequired": true,
            "externalAccountMACKeys": { "kid-1": mac },
        }),
    );
    let mut ca = Ca::open(&pebble.directory, client_tls(&pebble)).unwrap();
    assert!(ca.meta().external_account_required);
    let pem = AccountKey::generate().unwrap().to_pkcs8_pem();
    let key = || AccountKey::from_pkcs8_pem(&pem).unwrap();

    let err = ca.account(key(), &[], None).unwrap_err();
    assert!(
        matches!(&err, Error::Problem(p) if p.kind.ends_with("externalAccountRequired")),
        "{err}"
    );
    let wrong = Eab {
        kid: "kid-1".into(),
        hmac_key: b"not the key".to_vec(),
    };
    assert!(matches!(
        ca.account(key(), &[], Some(&wrong)),
        Err(Error::Problem(_))
    ));
    let eab = Eab {
        kid: "kid-1".into(),
        hmac_key: base64_url_decode(mac),
    };
    let account = ca.account(key(), &[], Some(&eab)).unwrap();
    assert!(account.url.starts_with("https://127.0.0.1:"));
    drop(pebble);
    let _ = std::fs::remove_dir_all(dir);
}

fn base64_url_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in s.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
        bits = bits << 6 | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    out
}

#[test]
fn unreachable_ca_is_a_transport_error() {
    let port = Pebble::free_port();
    let tls = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    );
    match Ca::open(&format!("https://127.0.0.1:{port}/dir"), tls) {
        Err(Error::Transport(_)) => {}
        Err(e) => panic!("not a transport error: {e}"),
        Ok(_) => panic!("opened a CA that is not there"),
    }
}
