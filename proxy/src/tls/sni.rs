//! Choosing the server certificate by SNI (RFC 6066 §3).
//!
//! Every vhost's names go into two maps, loaded once per
//! [`server_configs`](super::server_configs) call and shared by all its
//! listeners: exact names, and wildcards keyed by the domain after `*.`.
//! A ClientHello's name (rustls hands it over in lower case) is looked up
//! exactly first, then its parent domain among the wildcards, so
//! `*.a.example` serves `x.a.example` but neither `a.example` nor
//! `y.x.a.example`, the same rule as `TlsConfig::vhost_for` and as
//! certificates themselves (RFC 6125 §6.4.3).
//!
//! A name that finds a vhost gets that vhost's certificate, or the
//! listener's default when the vhost names none. A name that finds none,
//! or no SNI at all (clients send none for an IP address), gets the
//! listener's default with `unknown_name = "default"`, and nothing with
//! `"refuse"`: the resolver returns `None` and rustls ends the handshake
//! with an alert.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::certs::load_certified_key;
use crate::config::tls::{CertPaths, TlsConfig, UnknownName};

/// A vhost as SNI sees it: its certificate, if it has its own.
type Entry = Option<Arc<CertifiedKey>>;

/// Every vhost's names with its certificate.
#[derive(Debug, Default)]
pub struct VhostCerts {
    exact: HashMap<String, Entry>,
    /// Keyed by the domain after `*.`.
    wildcard: HashMap<String, Entry>,
}

impl VhostCerts {
    /// Reads every vhost's certificate (once per file pair); an error names
    /// the vhost and the file.
    pub fn load(tls: &TlsConfig) -> Result<VhostCerts, String> {
        let mut loaded: Vec<(&CertPaths, Arc<CertifiedKey>)> = Vec::new();
        let mut out = VhostCerts::default();
        for v in &tls.vhosts {
            let cert = match &v.cert {
                None => None,
                Some(paths) => Some(match loaded.iter().find(|(p, _)| *p == paths) {
                    Some((_, k)) => k.clone(),
                    None => {
                        let first = v.names.first().map_or("", String::as_str);
                        let k = load_certified_key(paths)
                            .map_err(|e| format!("[[vhost]] {first:?}: {e}"))?;
                        loaded.push((paths, k.clone()));
                        k
                    }
                }),
            };
            for name in &v.names {
                match name.strip_prefix("*.") {
                    Some(domain) => out.wildcard.insert(domain.to_owned(), cert.clone()),
                    None => out.exact.insert(name.clone(), cert.clone()),
                };
            }
        }
        Ok(out)
    }

    /// The vhost serving `name`: `Some(entry)` when one does.
    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        let name = name.strip_suffix('.').unwrap_or(name);
        let name: Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
        if let Some(e) = self.exact.get(name.as_ref()) {
            return Some(e);
        }
        match name.split_once('.') {
            Some((label, parent)) if !label.is_empty() => self.wildcard.get(parent),
            _ => None,
        }
    }
}

/// One listener's certificate choice.
#[derive(Debug)]
pub struct SniResolver {
    vhosts: Arc<VhostCerts>,
    /// The listener's own certificate.
    default: Arc<CertifiedKey>,
    unknown: UnknownName,
}

impl SniResolver {
    pub fn new(vhosts: Arc<VhostCerts>, default: Arc<CertifiedKey>, unknown: UnknownName) -> Self {
        SniResolver {
            vhosts,
            default,
            unknown,
        }
    }

    /// The certificate for a ClientHello naming `sni`; `None` refuses.
    pub fn pick(&self, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        match sni.and_then(|n| self.vhosts.lookup(n)) {
            Some(Some(cert)) => Some(cert.clone()),
            Some(None) => Some(self.default.clone()),
            None => match self.unknown {
                UnknownName::Default => Some(self.default.clone()),
                UnknownName::Refuse => None,
            },
        }
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.pick(hello.server_name())
    }
}
