//! `[acme.NAME]`: certificate authorities that issue and renew the
//! certificates of the TLS listeners and vhosts that name them with
//! `tls = { acme = "NAME" }` (RFC 8555), kept by `crate::acme`.
//!
//! ```toml
//! [acme.le]                   # name: [A-Za-z0-9_-]+
//! directory = "https://acme-v02.api.letsencrypt.org/directory"
//! contact = ["mailto:ops@example.com"]
//! ca = "certs/acme-server-ca.pem"  # roots for the CA's own HTTPS; default: the system bundle
//! eab = { kid = "kid-1", hmac_key = "c2VjcmV0LWZyb20tdGhlLWNh" }  # External Account Binding, where the CA asks
//! key_type = "ecdsa-p256"     # the certificates' keys: "ecdsa-p256" | "ecdsa-p384"
//! challenge = "http-01"       # "http-01" | "tls-alpn-01"; default: http-01 where a plain listener is
//! profile = "shortlived"      # a profile the CA lists (optional)
//! state = "/var/lib/ringside/acme"  # account keys and certificates; made 0700
//! retry_min = "1m"            # the first wait after a failure; doubles up to a day
//!
//! [server]
//! listen = [
//!   "0.0.0.0:80",
//!   { addr = "0.0.0.0:443", tls = { acme = "le", names = ["example.com", "www.example.com"] } },
//! ]
//!
//! [[vhost]]
//! names = ["shop.example.com"]
//! tls = { acme = "le" }       # a certificate for the vhost's names
//! ```
//!
//! A listener's `names` are its default certificate's; a listener with
//! `acme` and no `names` has none, and presents only its vhosts'
//! certificates (a name no vhost has is refused). Wildcards are refused:
//! HTTP-01 and TLS-ALPN-01 cannot prove them. An issuer no listener or
//! vhost names is refused, as other keys that would do nothing are; so is
//! `challenge = "http-01"` without a plain TCP listener to answer it on.

use std::fmt::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use ringside_acme::{ChallengeKind, Eab, KeyType};
use toml::Spanned;

use super::cx::{duration, Cx};
use super::emit::{dur, quote};
use super::error::ConfigError;
use super::file::{AcmeSection, FileConfig, ListenValue};
use super::tls::{abs_path, TlsConfig};
use crate::tls::certs::load_roots;

/// Where account keys and certificates are kept unless `state` says.
pub const DEFAULT_STATE: &str = "/var/lib/ringside/acme";
/// The first wait after a failed order unless `retry_min` says.
pub const DEFAULT_RETRY_MIN: Duration = Duration::from_secs(60);

/// One `[acme.NAME]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcmeIssuer {
    pub name: String,
    pub directory: String,
    pub contact: Vec<String>,
    /// Roots for the CA's HTTPS; `None`: the system bundle.
    pub ca: Option<PathBuf>,
    pub eab: Option<Eab>,
    pub key_type: KeyType,
    pub challenge: ChallengeKind,
    pub profile: Option<String>,
    pub state: PathBuf,
    pub retry_min: Duration,
}

const KEY_TYPES: [(&str, KeyType); 2] = [
    ("ecdsa-p256", KeyType::EcdsaP256),
    ("ecdsa-p384", KeyType::EcdsaP384),
];
const CHALLENGES: [(&str, ChallengeKind); 2] = [
    ("http-01", ChallengeKind::Http01),
    ("tls-alpn-01", ChallengeKind::TlsAlpn01),
];

fn one_of<T: Copy>(table: &[(&str, T)], got: &str) -> Result<T, String> {
    match table.iter().find(|(n, _)| *n == got) {
        Some(&(_, v)) => Ok(v),
        None => {
            let names: Vec<String> = table.iter().map(|(n, _)| format!("{n:?}")).collect();
            Err(format!("expected one of {}, got {got:?}", names.join(", ")))
        }
    }
}

fn name_of<T: Copy + PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|&&(_, t)| t == v).map_or("", |&(n, _)| n)
}

impl Cx<'_> {
    /// Every `[acme.NAME]`, sorted by name, and the check that every
    /// `tls = { acme = "NAME" }` names one and every one is named.
    /// `plain` says whether a plain TCP listener exists (for HTTP-01).
    pub(super) fn acme(
        &self,
        f: &FileConfig,
        base: &Path,
        tls: &TlsConfig,
        plain: bool,
    ) -> Result<Vec<AcmeIssuer>, ConfigError> {
        let mut out = Vec::with_capacity(f.acme.len());
        for (name, section) in &f.acme {
            let n = name.get_ref();
            self.check(name, &format!("[acme.{n:?}]"), |n| {
                super::names::section_name("an ACME issuer", n)
            })?;
            out.push(self.issuer(n, section, base, plain)?);
        }
        for (span, issuer, key) in acme_refs(f) {
            if !out.iter().any(|i| i.name == issuer) {
                return Err(self.err(span, key, format!("no [acme.{issuer}] section names it")));
            }
        }
        for (name, section) in &f.acme {
            let used = tls
                .listeners
                .iter()
                .flatten()
                .chain(tls.vhosts.iter().filter_map(|v| v.cert.as_ref()))
                .any(|p| p.acme.as_ref().is_some_and(|a| &a.issuer == name.get_ref()));
            if !used {
                return Err(self.err(
                    section.span(),
                    &format!("[acme.{}]", name.get_ref()),
                    "has no effect: no listener or [[vhost]] has tls = { acme = \"NAME\" } naming it".into(),
                ));
            }
        }
        Ok(out)
    }

    fn issuer(
        &self,
        name: &str,
        s: &Spanned<AcmeSection>,
        base: &Path,
        plain: bool,
    ) -> Result<AcmeIssuer, ConfigError> {
        let key = |k: &str| format!("[acme.{name}] {k}");
        let c = s.get_ref();
        let directory = match &c.directory {
            Some(d) => self.check(d, &key("directory"), |d| directory(d))?,
            None => {
                return Err(self.err(
                    s.span(),
                    &key("directory"),
                    "is needed: the CA's directory URL, like \"https://acme-v02.api.letsencrypt.org/directory\"".into(),
                ))
            }
        };
        let mut contact = Vec::new();
        if let Some(list) = &c.contact {
            for v in list.get_ref() {
                contact.push(self.check(v, &key("contact"), |v| contact_url(v))?);
            }
        }
        let ca = match &c.ca {
            Some(v) => Some(self.check(v, &key("ca"), |p| {
                let path = abs_path(base, p)?;
                load_roots(Some(&path))?;
                Ok(path)
            })?),
            None => {
                if let Some(d) = &c.directory {
                    self.check(d, &key("directory"), |_| load_roots(None).map(drop))?;
                }
                None
            }
        };
        let eab = match &c.eab {
            Some(e) => {
                let e = e.get_ref();
                let kid = self.check(&e.kid, &key("eab.kid"), |k| match k.trim() {
                    "" => Err("expected the key ID the CA gave, got an empty string".to_owned()),
                    k => Ok(k.to_owned()),
                })?;
                let hmac_key = self.check(&e.hmac_key, &key("eab.hmac_key"), |k| hmac_key(k))?;
                Some(Eab { kid, hmac_key })
            }
            None => None,
        };
        let key_type = self.or(&c.key_type, &key("key_type"), KeyType::EcdsaP256, |k| {
            one_of(&KEY_TYPES, k)
        })?;
        let default_challenge = if plain {
            ChallengeKind::Http01
        } else {
            ChallengeKind::TlsAlpn01
        };
        let challenge = self.or(&c.challenge, &key("challenge"), default_challenge, |k| {
            match one_of(&CHALLENGES, k)? {
                ChallengeKind::Http01 if !plain => Err("\"http-01\" is answered on a plain HTTP listener, and [server] listen has none; add one (port 80) or take \"tls-alpn-01\"".to_owned()),
                c => Ok(c),
            }
        })?;
        let profile = match &c.profile {
            Some(p) => Some(self.check(p, &key("profile"), |p| match p.trim() {
                "" => Err("expected a profile name the CA lists, got an empty string".to_owned()),
                p => Ok(p.to_owned()),
            })?),
            None => None,
        };
        let state = match &c.state {
            Some(v) => self.check(v, &key("state"), |p| abs_path(base, p))?,
            None => PathBuf::from(DEFAULT_STATE),
        };
        let retry_min = self.or(&c.retry_min, &key("retry_min"), DEFAULT_RETRY_MIN, |v| {
            let d = duration(v)?;
            if d < Duration::from_secs(1) {
                return Err(format!("expected at least 1s, got {v}"));
            }
            Ok(d)
        })?;
        Ok(AcmeIssuer {
            name: name.to_owned(),
            directory,
            contact,
            ca,
            eab,
            key_type,
            challenge,
            profile,
            state,
            retry_min,
        })
    }
}

/// Every `acme = "NAME"` in the listeners and vhosts, with its span and key.
fn acme_refs(f: &FileConfig) -> Vec<(std::ops::Range<usize>, String, &'static str)> {
    let mut out = Vec::new();
    let listen = f.server.listen.as_ref().map(|l| l.get_ref().as_slice());
    for l in listen.unwrap_or_default() {
        if let ListenValue::Table(t) = l.get_ref() {
            if let Some(a) = t.tls.as_ref().and_then(|c| c.get_ref().acme.as_ref()) {
                out.push((a.span(), a.get_ref().clone(), "[server] listen"));
            }
        }
    }
    for v in &f.vhosts {
        if let Some(a) = v
            .get_ref()
            .tls
            .as_ref()
            .and_then(|c| c.get_ref().acme.as_ref())
        {
            out.push((a.span(), a.get_ref().clone(), "[[vhost]] tls.acme"));
        }
    }
    out
}

/// `directory`: an https URL (RFC 8555 §6.1: ACME runs over HTTPS only).
fn directory(d: &str) -> Result<String, String> {
    let rest = d.strip_prefix("https://").ok_or_else(|| {
        format!("expected an https:// URL (ACME runs over HTTPS only), got {d:?}")
    })?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || d.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "expected a URL like \"https://ca.example/directory\", got {d:?}"
        ));
    }
    Ok(d.to_owned())
}

/// A `contact` entry: a `mailto:` URL (RFC 8555 §7.3; the one scheme
/// Let's Encrypt takes).
fn contact_url(c: &str) -> Result<String, String> {
    match c.strip_prefix("mailto:") {
        Some(addr) if addr.contains('@') && !addr.contains([' ', ',', '\n']) => Ok(c.to_owned()),
        _ => Err(format!("expected \"mailto:ADDRESS\", got {c:?}")),
    }
}

/// `eab.hmac_key`: base64url as CAs print it (padding allowed).
fn hmac_key(k: &str) -> Result<Vec<u8>, String> {
    let trimmed = k.trim_end_matches('=');
    match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(trimmed) {
        Ok(b) if !b.is_empty() => Ok(b),
        _ => Err(format!(
            "expected the MAC key in base64url, as the CA gave it, got {k:?}"
        )),
    }
}

/// `acme = "NAME"` and a listener's `names`, inside a `tls` table.
pub fn write_keys(a: &crate::tls::certs::AcmeCert, listener: bool) -> String {
    let mut out = format!("acme = {}", quote(&a.issuer));
    if listener && !a.names.is_empty() {
        let names: Vec<String> = a.names.iter().map(|n| quote(n)).collect();
        let _ = write!(out, ", names = [{}]", names.join(", "));
    }
    out
}

/// Every `[acme.NAME]`.
pub fn write_issuers(out: &mut String, issuers: &[AcmeIssuer]) -> fmt::Result {
    for i in issuers {
        writeln!(out, "\n[acme.{}]", i.name)?;
        writeln!(out, "directory = {}", quote(&i.directory))?;
        let contact: Vec<String> = i.contact.iter().map(|c| quote(c)).collect();
        writeln!(out, "contact = [{}]", contact.join(", "))?;
        if let Some(ca) = &i.ca {
            writeln!(out, "ca = {}", quote(&ca.to_string_lossy()))?;
        }
        if let Some(e) = &i.eab {
            let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&e.hmac_key);
            writeln!(
                out,
                "eab = {{ kid = {}, hmac_key = {} }}",
                quote(&e.kid),
                quote(&k)
            )?;
        }
        writeln!(out, "key_type = {}", quote(name_of(&KEY_TYPES, i.key_type)))?;
        writeln!(
            out,
            "challenge = {}",
            quote(name_of(&CHALLENGES, i.challenge))
        )?;
        if let Some(p) = &i.profile {
            writeln!(out, "profile = {}", quote(p))?;
        }
        writeln!(out, "state = {}", quote(&i.state.to_string_lossy()))?;
        writeln!(out, "retry_min = {}", dur(i.retry_min))?;
    }
    Ok(())
}
