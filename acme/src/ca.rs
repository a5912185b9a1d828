//! CONTRACT SKELETON: signatures fixed, bodies to be written.
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Why a call failed.
#[derive(Debug, Clone)]
pub enum Error {
    /// The CA could not be reached or the connection failed (DNS, TCP, TLS,
    /// timeout, a cut response): worth retrying later.
    Transport(String),
    /// The CA answered with a problem document (RFC 8555 §6.7), or an
    /// authorization or order became invalid (its `error` problem).
    Problem(Problem),
    /// The CA answered something this client cannot use.
    Protocol(String),
}

impl Error {
    /// The wait the CA asked for (Retry-After), if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        unimplemented!()
    }
}

impl std::fmt::Display for Error {
    /// One line: for a problem, its type, detail and status.
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        unimplemented!()
    }
}

/// A problem document (RFC 7807 as RFC 8555 §6.7 uses it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The HTTP status it came with (0 for an authorization's or order's `error`).
    pub status: u16,
    /// `type`, e.g. `urn:ietf:params:acme:error:rejectedIdentifier`.
    pub kind: String,
    pub detail: String,
    /// The whole document as the CA sent it, for the log.
    pub json: String,
    pub retry_after: Option<Duration>,
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
pub struct AccountKey {/* private */}

impl AccountKey {
    pub fn generate() -> Result<AccountKey, String> {
        unimplemented!()
    }
    pub fn from_pkcs8_pem(_pem: &str) -> Result<AccountKey, String> {
        unimplemented!()
    }
    pub fn to_pkcs8_pem(&self) -> String {
        unimplemented!()
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
    /* private: the key */
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeKind {
    Http01,
    TlsAlpn01,
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

/// The CA's suggested renewal window for a certificate (RFC 9773 §4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenewalInfo {
    pub start: SystemTime,
    pub end: SystemTime,
    /// When to ask again (its Retry-After).
    pub retry_after: Option<Duration>,
    pub explanation_url: Option<String>,
}

/// One CA, by its directory URL (https only), over connections made with
/// `tls` (whose roots must trust the CA's server certificate).
pub struct Ca {/* private */}

impl Ca {
    /// Fetches the directory.
    pub fn open(_directory: &str, _tls: Arc<rustls::ClientConfig>) -> Result<Ca, Error> {
        unimplemented!()
    }
    pub fn meta(&self) -> &Meta {
        unimplemented!()
    }
    /// Finds or creates the account of `key` (agreeing to the terms).
    pub fn account(
        &mut self,
        _key: AccountKey,
        _contact: &[String],
        _eab: Option<&Eab>,
    ) -> Result<Account, Error> {
        unimplemented!()
    }
    /// Orders, answers every authorization with `spec.challenge` through
    /// `responder`, finalizes with a new key and downloads the chain.
    pub fn issue(
        &mut self,
        _account: &Account,
        _spec: &OrderSpec,
        _responder: &mut dyn Responder,
    ) -> Result<Issued, Error> {
        unimplemented!()
    }
    /// The CA's renewal window for `cert_der`; `None` when the directory
    /// has no `renewalInfo` or the certificate has no ARI identifier.
    pub fn renewal_info(&mut self, _cert_der: &[u8]) -> Result<Option<RenewalInfo>, Error> {
        unimplemented!()
    }
    /// Revokes `cert_der` (reason unspecified), signed by the account.
    pub fn revoke(&mut self, _account: &Account, _cert_der: &[u8]) -> Result<(), Error> {
        unimplemented!()
    }
}
