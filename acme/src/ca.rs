//! The ACME protocol (RFC 8555) against one CA: directory, nonces,
//! accounts, orders and their authorizations, finalize, download,
//! revocation, and renewal information (RFC 9773).
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::cert::RenewalInfo;
use crate::error::{Error, Problem};
use crate::http::{Client, Response};
use crate::jws::{self, b64, Key, Signer};
use crate::time;

/// A non-2xx response: its problem document, or one made up around
/// whatever body came.
fn problem_of(r: &Response) -> Problem {
    let retry_after = r
        .header("retry-after")
        .and_then(|v| time::retry_after(v, SystemTime::now()));
    match serde_json::from_slice::<Value>(&r.body) {
        Ok(v) if v.is_object() => {
            let mut p = Problem::from_value(r.status, &v, retry_after);
            p.json = String::from_utf8_lossy(&r.body).into_owned();
            p
        }
        _ => {
            let text = String::from_utf8_lossy(&r.body);
            Problem {
                status: r.status,
                kind: "about:blank".into(),
                detail: text.chars().take(200).collect(),
                json: String::new(),
                retry_after,
            }
        }
    }
}

/// What the directory says beyond its URLs.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub terms_of_service: Option<String>,
    pub external_account_required: bool,
    /// The profiles the CA lists (`meta.profiles`), by name.
    pub profiles: Vec<String>,
    /// The directory has `renewalInfo` (RFC 9773).
    pub renewal_info: bool,
}

/// An account's key: ECDSA P-256, signing ES256.
pub struct AccountKey {
    key: Key,
}

impl AccountKey {
    pub fn generate() -> Result<AccountKey, String> {
        Ok(AccountKey {
            key: Key::generate()?,
        })
    }
    pub fn from_pkcs8_pem(pem: &str) -> Result<AccountKey, String> {
        let der =
            crate::pem::decode(pem, "PRIVATE KEY").ok_or("no PKCS#8 \"PRIVATE KEY\" PEM block")?;
        Ok(AccountKey {
            key: Key::from_pkcs8(&der)?,
        })
    }
    pub fn to_pkcs8_pem(&self) -> String {
        crate::pem::encode("PRIVATE KEY", self.key.pkcs8())
    }
}

/// External Account Binding (RFC 8555 §7.3.4): the key ID and the MAC key
/// the CA gave, the key as bytes (decoded from its base64url).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eab {
    pub kid: String,
    pub hmac_key: Vec<u8>,
}

/// A registered account: its URL (the `kid` of every later request).
pub struct Account {
    pub url: String,
    key: AccountKey,
}

impl std::fmt::Debug for Account {
    /// The URL only: the key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountKey")
            .field("thumbprint", &self.key.thumbprint())
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeKind {
    Http01,
    TlsAlpn01,
}

impl ChallengeKind {
    fn name(self) -> &'static str {
        match self {
            ChallengeKind::Http01 => "http-01",
            ChallengeKind::TlsAlpn01 => "tls-alpn-01",
        }
    }
}

/// The certificate's key (a new one for every order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    EcdsaP256,
    EcdsaP384,
}

#[derive(Debug, Clone)]
pub struct OrderSpec {
    /// DNS names; the first is the CSR's subject.
    pub names: Vec<String>,
    pub challenge: ChallengeKind,
    pub key: KeyType,
    /// A profile the CA lists (sent as the order's `profile`).
    pub profile: Option<String>,
    /// The ARI identifier of the certificate this one replaces (RFC 9773 §5).
    pub replaces: Option<String>,
}

/// What must be answered for one authorization while the CA validates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// Served as `/.well-known/acme-challenge/{token}` with the body
    /// `key_authorization` (RFC 8555 §8.3).
    Http01 {
        token: String,
        key_authorization: String,
    },
    /// Presented on a handshake with SNI `name` and ALPN `acme-tls/1`
    /// (RFC 8737 §3): a self-signed certificate with the acmeIdentifier
    /// extension, and its key (PKCS#8).
    TlsAlpn01 {
        name: String,
        cert_der: Vec<u8>,
        key_pkcs8_der: Vec<u8>,
    },
}

/// Makes challenges answerable (the server's part).
pub trait Responder {
    /// Called before the CA is told to validate; the answer must be live
    /// when it returns.
    fn publish(&mut self, challenge: &Challenge);
    /// Called once the authorization is settled, valid or not.
    fn withdraw(&mut self, challenge: &Challenge);
}

/// An issued certificate: the chain the CA sent (leaf first) and its key.
#[derive(Debug, Clone)]
pub struct Issued {
    pub chain_pem: String,
    pub key_pem: String,
}

/// The directory's URLs (§7.1.1).
struct Directory {
    new_nonce: String,
    new_account: String,
    new_order: String,
    revoke_cert: String,
    renewal_info: Option<String>,
}

/// How often a request refused for its nonce is sent again (§6.5). Each
/// retry is one quick round trip; CAs may refuse good nonces at random
/// (Pebble tests clients with half of them refused), and 16 makes a
/// failure for that alone one in 130,000 requests at that rate.
const BAD_NONCE_RETRIES: usize = 16;
/// How long an authorization or order may stay pending or processing.
const POLL_LIMIT: Duration = Duration::from_secs(90);
const POLL_FIRST: Duration = Duration::from_millis(250);
const POLL_MAX: Duration = Duration::from_secs(2);

/// One CA, by its directory URL (https only), over connections made with
/// `tls` (whose roots must trust the CA's server certificate).
pub struct Ca {
    http: Client,
    dir: Directory,
    meta: Meta,
    /// The latest Replay-Nonce seen, used once.
    nonce: Option<String>,
}

impl Ca {
    /// Fetches the directory.
    pub fn open(directory: &str, tls: Arc<rustls::ClientConfig>) -> Result<Ca, Error> {
        let mut http = Client::new(tls);
        let r = http.request("GET", directory, &[("Accept", "application/json")], b"")?;
        if !(200..300).contains(&r.status) {
            return Err(Error::Problem(problem_of(&r)));
        }
        let (dir, meta) = parse_directory(&json_body(&r)?)?;
        let nonce = r.header("replay-nonce").map(str::to_string);
        Ok(Ca {
            http,
            dir,
            meta,
            nonce,
        })
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Finds or creates the account of `key` (agreeing to the terms).
    pub fn account(
        &mut self,
        key: AccountKey,
        contact: &[String],
        eab: Option<&Eab>,
    ) -> Result<Account, Error> {
        let url = self.dir.new_account.clone();
        let mut payload = json!({ "termsOfServiceAgreed": true, "contact": contact });
        if let Some(eab) = eab {
            payload["externalAccountBinding"] = jws::eab(&key.key, &eab.kid, &eab.hmac_key, &url);
        }
        let r = self.post(&key.key, Signer::Jwk, &url, Some(&payload))?;
        let account_url = r
            .header("location")
            .ok_or_else(|| Error::Protocol("newAccount answered without a Location".into()))?
            .to_string();
        let v = json_body(&r)?;
        if let Some(status) = v["status"].as_str() {
            if status != "valid" {
                return Err(Error::Protocol(format!("the account is {status}")));
            }
        }
        Ok(Account {
            url: account_url,
            key,
        })
    }

    /// Orders, answers every authorization with `spec.challenge` through
    /// `responder`, finalizes with a new key and downloads the chain.
    pub fn issue(
        &mut self,
        account: &Account,
        spec: &OrderSpec,
        responder: &mut dyn Responder,
    ) -> Result<Issued, Error> {
        if spec.names.is_empty() {
            return Err(Error::Protocol("an order needs at least one name".into()));
        }
        let kid = Signer::Kid(&account.url);
        let identifiers: Vec<Value> = spec
            .names
            .iter()
            .map(|n| json!({ "type": "dns", "value": n }))
            .collect();
        let mut payload = json!({ "identifiers": identifiers });
        if let Some(p) = &spec.profile {
            payload["profile"] = Value::from(p.as_str());
        }
        if let Some(r) = &spec.replaces {
            payload["replaces"] = Value::from(r.as_str());
        }
        let new_order = self.dir.new_order.clone();
        let r = self.post(&account.key.key, kid, &new_order, Some(&payload))?;
        let order_url = r
            .header("location")
            .ok_or_else(|| Error::Protocol("newOrder answered without a Location".into()))?
            .to_string();
        let order = json_body(&r)?;
        tracing::debug!(order = %order_url, "acme: order placed");
        let authzs: Vec<String> = order["authorizations"]
            .as_array()
            .ok_or_else(|| Error::Protocol("the order has no authorizations".into()))?
            .iter()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        let thumbprint = account.key.key.thumbprint();
        for authz in &authzs {
            self.authorize(account, authz, spec.challenge, &thumbprint, responder)?;
        }

        let order = self.poll(account, &order_url, &["ready", "valid"], "order")?;
        let (csr, key_pem) = csr(spec)?;
        let order = if order["status"] == "ready" {
            let finalize = str_field(&order, "finalize")?;
            let r = self.post(
                &account.key.key,
                Signer::Kid(&account.url),
                &finalize,
                Some(&json!({ "csr": b64(&csr) })),
            )?;
            let v = json_body(&r)?;
            if v["status"] == "valid" {
                v
            } else {
                self.poll(account, &order_url, &["valid"], "order")?
            }
        } else {
            order
        };
        let cert_url = str_field(&order, "certificate")?;
        let r = self.post_as_get(account, &cert_url, "application/pem-certificate-chain")?;
        let chain_pem = String::from_utf8(r.body)
            .map_err(|_| Error::Protocol("the certificate chain is not text".into()))?;
        if !chain_pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(Error::Protocol("the download holds no certificate".into()));
        }
        Ok(Issued { chain_pem, key_pem })
    }

    /// The CA's renewal window for `cert_der`; `None` when the directory
    /// has no `renewalInfo` or the certificate has no ARI identifier.
    pub fn renewal_info(&mut self, cert_der: &[u8]) -> Result<Option<RenewalInfo>, Error> {
        let Some(base) = self.dir.renewal_info.clone() else {
            return Ok(None);
        };
        let Some(id) = crate::cert::CertInfo::parse(cert_der)
            .ok()
            .and_then(|c| c.ari_id)
        else {
            return Ok(None);
        };
        let url = format!("{}/{id}", base.trim_end_matches('/'));
        let r = self
            .http
            .request("GET", &url, &[("Accept", "application/json")], b"")?;
        self.keep_nonce(&r);
        if !(200..300).contains(&r.status) {
            return Err(Error::Problem(problem_of(&r)));
        }
        let retry_after = r
            .header("retry-after")
            .and_then(|v| time::retry_after(v, SystemTime::now()));
        parse_renewal_info(&r.body, retry_after).map(Some)
    }

    /// Revokes `cert_der` (reason unspecified), signed by the account.
    pub fn revoke(&mut self, account: &Account, cert_der: &[u8]) -> Result<(), Error> {
        let url = self.dir.revoke_cert.clone();
        self.post(
            &account.key.key,
            Signer::Kid(&account.url),
            &url,
            Some(&json!({ "certificate": b64(cert_der) })),
        )?;
        Ok(())
    }

    /// Settles one authorization: answers its challenge when pending and
    /// waits for the verdict; the responder's answer is withdrawn in every
    /// case.
    fn authorize(
        &mut self,
        account: &Account,
        authz_url: &str,
        kind: ChallengeKind,
        thumbprint: &str,
        responder: &mut dyn Responder,
    ) -> Result<(), Error> {
        let r = self.post_as_get(account, authz_url, "application/json")?;
        let authz = json_body(&r)?;
        match authz["status"].as_str() {
            Some("valid") => return Ok(()),
            Some("pending") => {}
            other => {
                return Err(Error::Protocol(format!(
                    "authorization {authz_url} is {}",
                    other.unwrap_or("without a status")
                )))
            }
        }
        let name = authz["identifier"]["value"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let challenge = authz["challenges"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == kind.name()))
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "the CA offers no {} challenge for {name}",
                    kind.name()
                ))
            })?;
        let token = str_field(challenge, "token")?;
        let challenge_url = str_field(challenge, "url")?;
        let key_authorization = key_authorization(&token, thumbprint);
        let answer = match kind {
            ChallengeKind::Http01 => Challenge::Http01 {
                token,
                key_authorization,
            },
            ChallengeKind::TlsAlpn01 => tls_alpn01(&name, &key_authorization)?,
        };
        responder.publish(&answer);
        let result = self.validate(account, authz_url, &challenge_url);
        responder.withdraw(&answer);
        result
    }

    fn validate(
        &mut self,
        account: &Account,
        authz_url: &str,
        challenge_url: &str,
    ) -> Result<(), Error> {
        self.post(
            &account.key.key,
            Signer::Kid(&account.url),
            challenge_url,
            Some(&json!({})),
        )?;
        self.poll(account, authz_url, &["valid"], "authorization")?;
        Ok(())
    }

    /// POST-as-GETs `url` until its status is one of `until`; `invalid`
    /// gives the object's (or its challenges') `error` as a problem.
    fn poll(
        &mut self,
        account: &Account,
        url: &str,
        until: &[&str],
        what: &str,
    ) -> Result<Value, Error> {
        let start = Instant::now();
        let mut wait = POLL_FIRST;
        loop {
            let r = self.post_as_get(account, url, "application/json")?;
            let v = json_body(&r)?;
            let status = v["status"].as_str().unwrap_or("");
            if until.contains(&status) {
                return Ok(v);
            }
            match status {
                "pending" | "processing" | "ready" => {}
                "invalid" => {
                    let error = if v["error"].is_object() {
                        &v["error"]
                    } else {
                        v["challenges"]
                            .as_array()
                            .and_then(|cs| cs.iter().find(|c| c["error"].is_object()))
                            .map(|c| &c["error"])
                            .unwrap_or(&Value::Null)
                    };
                    let mut p = Problem::from_value(0, error, None);
                    if !error.is_object() {
                        p.detail = format!("the {what} became invalid");
                        p.json = v.to_string();
                    }
                    return Err(Error::Problem(p));
                }
                other => {
                    return Err(Error::Protocol(format!("the {what} is {other:?}")));
                }
            }
            let elapsed = start.elapsed();
            if elapsed >= POLL_LIMIT {
                return Err(Error::Protocol(format!(
                    "the {what} is still {status} after {} s",
                    POLL_LIMIT.as_secs()
                )));
            }
            let hint = r
                .header("retry-after")
                .and_then(|v| time::retry_after(v, SystemTime::now()));
            let nap = hint.unwrap_or(wait).min(POLL_LIMIT - elapsed);
            std::thread::sleep(nap.max(Duration::from_millis(50)));
            wait = (wait * 2).min(POLL_MAX);
        }
    }

    fn post_as_get(
        &mut self,
        account: &Account,
        url: &str,
        accept: &str,
    ) -> Result<Response, Error> {
        self.post_with(
            &account.key.key,
            Signer::Kid(&account.url),
            url,
            None,
            accept,
        )
    }

    fn post(
        &mut self,
        key: &Key,
        signer: Signer<'_>,
        url: &str,
        payload: Option<&Value>,
    ) -> Result<Response, Error> {
        self.post_with(key, signer, url, payload, "application/json")
    }

    /// A signed POST; refused nonces are retried with the nonce the refusal
    /// brought (§6.5), other non-2xx answers become problems.
    fn post_with(
        &mut self,
        key: &Key,
        signer: Signer<'_>,
        url: &str,
        payload: Option<&Value>,
        accept: &str,
    ) -> Result<Response, Error> {
        let mut tries = 0;
        loop {
            let nonce = match self.nonce.take() {
                Some(n) => n,
                None => self.new_nonce()?,
            };
            let body = jws::sign(key, signer, &nonce, url, payload).map_err(Error::Protocol)?;
            let r = self.http.request(
                "POST",
                url,
                &[
                    ("Content-Type", "application/jose+json"),
                    ("Accept", accept),
                ],
                &body,
            )?;
            self.keep_nonce(&r);
            if (200..300).contains(&r.status) {
                return Ok(r);
            }
            let problem = problem_of(&r);
            if problem.kind == "urn:ietf:params:acme:error:badNonce" && tries < BAD_NONCE_RETRIES {
                tries += 1;
                tracing::debug!("acme: nonce refused, retrying ({tries})");
                continue;
            }
            return Err(Error::Problem(problem));
        }
    }

    fn new_nonce(&mut self) -> Result<String, Error> {
        let url = self.dir.new_nonce.clone();
        let mut r = self.http.request("HEAD", &url, &[], b"")?;
        if r.status == 405 {
            // §7.2: GET must work too.
            r = self.http.request("GET", &url, &[], b"")?;
        }
        if !(200..300).contains(&r.status) {
            return Err(Error::Problem(problem_of(&r)));
        }
        r.header("replay-nonce")
            .map(str::to_string)
            .ok_or_else(|| Error::Protocol("newNonce gave no Replay-Nonce".into()))
    }

    fn keep_nonce(&mut self, r: &Response) {
        if let Some(n) = r.header("replay-nonce") {
            self.nonce = Some(n.to_string());
        }
    }
}

/// The directory object (§7.1.1) and its `meta`.
fn parse_directory(v: &Value) -> Result<(Directory, Meta), Error> {
    let url = |k: &str| -> Result<String, Error> {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| Error::Protocol(format!("the directory has no {k}")))
    };
    let dir = Directory {
        new_nonce: url("newNonce")?,
        new_account: url("newAccount")?,
        new_order: url("newOrder")?,
        revoke_cert: url("revokeCert")?,
        renewal_info: v["renewalInfo"].as_str().map(str::to_string),
    };
    let m = &v["meta"];
    let meta = Meta {
        terms_of_service: m["termsOfService"].as_str().map(str::to_string),
        external_account_required: m["externalAccountRequired"].as_bool().unwrap_or(false),
        profiles: m["profiles"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default(),
        renewal_info: dir.renewal_info.is_some(),
    };
    Ok((dir, meta))
}

fn json_body(r: &Response) -> Result<Value, Error> {
    serde_json::from_slice(&r.body)
        .map_err(|e| Error::Protocol(format!("a response that is not JSON: {e}")))
}

fn str_field(v: &Value, k: &str) -> Result<String, Error> {
    v[k].as_str()
        .map(str::to_string)
        .ok_or_else(|| Error::Protocol(format!("the CA's object has no {k}")))
}

/// RFC 8555 §8.1: token "." base64url(JWK thumbprint).
pub(crate) fn key_authorization(token: &str, thumbprint: &str) -> String {
    format!("{token}.{thumbprint}")
}

/// RFC 8737 §3: a self-signed certificate for `name` whose critical
/// acmeIdentifier extension holds SHA-256 of the key authorization.
fn tls_alpn01(name: &str, key_authorization: &str) -> Result<Challenge, Error> {
    let fail =
        |e: rcgen::Error| Error::Protocol(format!("making the TLS-ALPN-01 certificate: {e}"));
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(fail)?;
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).map_err(fail)?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(&jws::sha256(
        key_authorization.as_bytes(),
    ))];
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(Challenge::TlsAlpn01 {
        name: name.to_string(),
        cert_der: cert.der().to_vec(),
        key_pkcs8_der: key.serialize_der(),
    })
}

/// A CSR for the order's names (the first as CN, all as SANs) with a new
/// key, and that key as PKCS#8 PEM.
fn csr(spec: &OrderSpec) -> Result<(Vec<u8>, String), Error> {
    let fail = |e: rcgen::Error| Error::Protocol(format!("making the CSR: {e}"));
    let alg = match spec.key {
        KeyType::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        KeyType::EcdsaP384 => &rcgen::PKCS_ECDSA_P384_SHA384,
    };
    let key = rcgen::KeyPair::generate_for(alg).map_err(fail)?;
    let mut params = rcgen::CertificateParams::new(spec.names.clone()).map_err(fail)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    // X.509's CommonName holds 64 bytes at most (RFC 5280 ub-common-name):
    // the first name that fits, else none (the names are in the SAN).
    if let Some(cn) = spec.names.iter().find(|n| n.len() <= 64) {
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn.as_str());
    }
    let csr = params.serialize_request(&key).map_err(fail)?;
    Ok((csr.der().to_vec(), key.serialize_pem()))
}

/// An ARI response (RFC 9773 §4.2).
pub(crate) fn parse_renewal_info(
    body: &[u8],
    retry_after: Option<Duration>,
) -> Result<RenewalInfo, Error> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| Error::Protocol(format!("renewal info that is not JSON: {e}")))?;
    let window = &v["suggestedWindow"];
    let at = |k: &str| {
        window[k]
            .as_str()
            .and_then(time::rfc3339)
            .ok_or_else(|| Error::Protocol(format!("renewal info without a suggestedWindow {k}")))
    };
    let (start, end) = (at("start")?, at("end")?);
    if end < start {
        return Err(Error::Protocol(
            "renewal window ends before it starts".into(),
        ));
    }
    Ok(RenewalInfo {
        start,
        end,
        retry_after,
        explanation_url: v["explanationURL"].as_str().map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn key_authorization_rfc8555_8_1() {
        // §8.1's example token and thumbprint.
        assert_eq!(
            key_authorization(
                "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA",
                "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"
            ),
            "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"
        );
    }

    #[test]
    fn ari_response() {
        // RFC 9773 §4.2's example.
        let body = br#"{
            "suggestedWindow": {"start": "2025-01-02T04:00:00Z", "end": "2025-01-03T04:00:00Z"},
            "explanationURL": "https://acme.example.com/docs/ari"
        }"#;
        let info = parse_renewal_info(body, Some(Duration::from_secs(21600))).unwrap();
        assert_eq!(info.start, UNIX_EPOCH + Duration::from_secs(1735790400));
        assert_eq!(info.end, UNIX_EPOCH + Duration::from_secs(1735876800));
        assert_eq!(info.retry_after, Some(Duration::from_secs(21600)));
        assert_eq!(
            info.explanation_url.as_deref(),
            Some("https://acme.example.com/docs/ari")
        );
        assert!(parse_renewal_info(br#"{"suggestedWindow": {"start": "x"}}"#, None).is_err());
        assert!(parse_renewal_info(
            br#"{"suggestedWindow": {"start": "2025-01-03T04:00:00Z", "end": "2025-01-02T04:00:00Z"}}"#,
            None
        )
        .is_err());
    }

    #[test]
    fn moves_to_the_manager_thread() {
        fn send<T: Send + 'static>() {}
        send::<Ca>();
        send::<Account>();
        send::<AccountKey>();
        send::<Error>();
    }

    #[test]
    fn directory_and_meta() {
        let v = json!({
            "newNonce": "https://ca/nonce", "newAccount": "https://ca/acct",
            "newOrder": "https://ca/order", "revokeCert": "https://ca/revoke",
            "renewalInfo": "https://ca/ari",
            "meta": {
                "termsOfService": "https://ca/tos", "externalAccountRequired": true,
                "profiles": {"classic": "the usual", "shortlived": "six days"}
            }
        });
        let (dir, meta) = parse_directory(&v).unwrap();
        assert_eq!(dir.renewal_info.as_deref(), Some("https://ca/ari"));
        assert!(meta.renewal_info && meta.external_account_required);
        assert_eq!(meta.terms_of_service.as_deref(), Some("https://ca/tos"));
        let mut profiles = meta.profiles.clone();
        profiles.sort();
        assert_eq!(profiles, ["classic", "shortlived"]);
        let mut bare = v.clone();
        bare.as_object_mut().unwrap().remove("meta");
        bare.as_object_mut().unwrap().remove("renewalInfo");
        let (_, meta) = parse_directory(&bare).unwrap();
        assert!(!meta.renewal_info && !meta.external_account_required && meta.profiles.is_empty());
        bare.as_object_mut().unwrap().remove("newOrder");
        assert!(matches!(parse_directory(&bare), Err(Error::Protocol(_))));
    }

    #[test]
    fn problem_display_and_retry_after() {
        let p = Problem {
            status: 403,
            kind: "urn:ietf:params:acme:error:rejectedIdentifier".into(),
            detail: "no\nway".into(),
            json: "{}".into(),
            retry_after: Some(Duration::from_secs(3)),
        };
        let e = Error::Problem(p);
        assert_eq!(
            e.to_string(),
            "urn:ietf:params:acme:error:rejectedIdentifier: no way (HTTP 403)"
        );
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(Error::Transport("x".into()).retry_after(), None);
    }

    #[test]
    fn tls_alpn01_certificate_carries_the_digest() {
        let Challenge::TlsAlpn01 { name, cert_der, .. } =
            tls_alpn01("a.test", "tok.thumb").unwrap()
        else {
            panic!()
        };
        assert_eq!(name, "a.test");
        // id-pe-acmeIdentifier 1.3.6.1.5.5.7.1.31, critical, OCTET STRING(32).
        let oid = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1f];
        let at = cert_der.windows(oid.len()).position(|w| w == oid).unwrap();
        let digest = jws::sha256(b"tok.thumb");
        let rest = &cert_der[at + oid.len()..];
        assert_eq!(&rest[..3], &[0x01, 0x01, 0xff]);
        assert!(rest.windows(32).any(|w| w == digest.as_slice()));
        let info = crate::cert::CertInfo::parse(&cert_der).unwrap();
        assert_eq!(info.names, vec!["a.test".to_string()]);
    }

    #[test]
    fn account_key_pem_round_trip() {
        let k = AccountKey::generate().unwrap();
        let pem = k.to_pkcs8_pem();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        let again = AccountKey::from_pkcs8_pem(&pem).unwrap();
        assert_eq!(k.key.jwk(), again.key.jwk());
        assert!(AccountKey::from_pkcs8_pem("junk").is_err());
    }
}
