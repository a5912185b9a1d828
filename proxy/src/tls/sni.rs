//! Choosing the server certificate by SNI (RFC 6066 §3).
//!
//! The vhost a ClientHello's name belongs to is found by
//! [`TlsConfig::vhost_index`], the same rule the https redirects and HSTS
//! use: an exact name first, then a wildcard, so `*.a.example` serves
//! `x.a.example` but neither `a.example` nor `y.x.a.example`, as
//! certificates themselves (RFC 6125 §6.4.3). Certificates are loaded once
//! per [`server_configs`](super::server_configs) call and shared by all its
//! listeners.
//!
//! A name that finds a vhost gets that vhost's certificate, or the
//! listener's default when the vhost names none. A name that finds none,
//! or no SNI at all (clients send none for an IP address), gets the
//! listener's default with `unknown_name = "default"`, and nothing with
//! `"refuse"`: the resolver returns `None` and rustls ends the handshake
//! with an alert.
//!
//! An ACME certificate ([`Cert::Acme`]) is read from its slot at each full
//! handshake, so a renewal is in use at once; until the first is issued its
//! names are refused. A ClientHello that offers only ALPN `acme-tls/1` is a
//! CA validating TLS-ALPN-01 (RFC 8737 §3): it gets the challenge
//! certificate published for its name, or nothing.

use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::certs::{load_certified_key, CertPaths};
use crate::config::tls::{TlsConfig, UnknownName};

/// A certificate to present: read from files at the config's build, or
/// kept by ACME.
#[derive(Debug, Clone)]
pub enum Cert {
    Fixed(Arc<CertifiedKey>),
    Acme(Arc<crate::acme::store::Slot>),
}

impl Cert {
    /// The certificate for a handshake naming `sni`. An ACME slot not
    /// filled yet (its names just changed) lends another slot's
    /// certificate that covers the name.
    fn get(&self, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        match self {
            Cert::Fixed(k) => Some(k.clone()),
            Cert::Acme(slot) => slot.get().or_else(|| crate::acme::store::covering(sni?)),
        }
    }
}

/// A vhost as SNI sees it: its certificate, if it has its own.
type Entry = Option<Cert>;

/// Every vhost's certificate, by its index in the config's `vhosts`.
#[derive(Debug, Default)]
pub struct VhostCerts {
    tls: TlsConfig,
    certs: Vec<Entry>,
}

impl VhostCerts {
    /// Reads every vhost's certificate (once per file pair); an error names
    /// the vhost and the file.
    pub fn load(tls: &TlsConfig) -> Result<VhostCerts, String> {
        let mut loaded: Vec<(&CertPaths, Arc<CertifiedKey>)> = Vec::new();
        let mut certs = Vec::with_capacity(tls.vhosts.len());
        for v in &tls.vhosts {
            let cert = match &v.cert {
                None => None,
                Some(CertPaths { acme: Some(a), .. }) => {
                    certs.push(Some(Cert::Acme(crate::acme::store::slot(a))));
                    continue;
                }
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
            certs.push(cert.map(Cert::Fixed));
        }
        Ok(VhostCerts {
            tls: tls.clone(),
            certs,
        })
    }

    /// The vhost serving `name`: `Some(entry)` when one does.
    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        self.tls.vhost_index(name).map(|i| &self.certs[i])
    }
}

/// One listener's certificate choice.
#[derive(Debug)]
pub struct SniResolver {
    vhosts: Arc<VhostCerts>,
    /// The listener's own certificate; `None` for an ACME listener without
    /// names of its own, which refuses names no vhost has.
    default: Option<Cert>,
    unknown: UnknownName,
}

impl SniResolver {
    pub fn new(vhosts: Arc<VhostCerts>, default: Option<Cert>, unknown: UnknownName) -> Self {
        SniResolver {
            vhosts,
            default,
            unknown,
        }
    }

    /// The certificate for a ClientHello naming `sni`; `None` refuses.
    pub fn pick(&self, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        match sni.and_then(|n| self.vhosts.lookup(n)) {
            Some(Some(cert)) => cert.get(sni),
            Some(None) => self.default.as_ref()?.get(sni),
            None => match self.unknown {
                UnknownName::Default => self.default.as_ref()?.get(sni),
                UnknownName::Refuse => None,
            },
        }
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(mut alpn) = hello.alpn() {
            if alpn.next() == Some(super::ALPN_ACME) && alpn.next().is_none() {
                return crate::acme::store::alpn(hello.server_name()?);
            }
        }
        self.pick(hello.server_name())
    }
}
