//! Client certificates on a TLS listener (`client_auth`, `client_ca`,
//! `client_crl`): the verifier that asks for them in the handshake
//! (RFC 8446 §4.3.2, RFC 5246 §7.4.4) and the sessions such a listener
//! resumes.
//!
//! The verifier is rustls's `WebPkiClientVerifier` on the process's crypto
//! provider ([`super::provider`]): the chain must lead to a root of
//! `client_ca`, be valid now and be meant for TLS clients (the leaf's
//! extended key usage, where it has one, must allow `clientAuth`); with
//! CRLs, no certificate of the chain may be revoked, and one whose status
//! none of them gives is refused too (as nginx's `ssl_crl`, which checks
//! the whole chain; a CRL past its nextUpdate still counts, rustls's
//! default, where OpenSSL would refuse every client). A failure is the
//! handshake's alert, sent by rustls.
//! `"optional"` lets a client that sends no certificate in; one that sends
//! a bad one is refused all the same.
//!
//! # Resumption
//!
//! A resumed session brings back the certificate verified when it began,
//! without a new check (rustls restores it as it is). So a session must
//! never resume on a listener that verifies differently: a ticket from a
//! listener without client certificates, or from one trusting another CA,
//! would otherwise skip the check altogether. A listener with
//! `client_auth` therefore keeps its sessions apart, as nginx does with
//! its session id context: no stateless tickets (their key is the
//! process's, shared by every listener) but stateful ones and session IDs
//! in a cache of its own, one per *verification context* (the mode and
//! the bytes of the CA and CRL files). Listeners and reloads with the same
//! context share it; a changed CA, CRL or mode starts an empty one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateRevocationListDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions, WebPkiClientVerifier};
use rustls::ServerConfig;

use super::certs::{load_roots, read_certs};
use crate::config::error::io_reason;

/// What a listener does about client certificates, where it asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuthMode {
    /// No certificate, or a bad one: the handshake is refused.
    Require,
    /// No certificate: let in; a bad one: refused.
    Optional,
}

/// A TLS listener's `client_auth`, `client_ca` and `client_crl`; paths
/// absolute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientAuth {
    pub mode: ClientAuthMode,
    /// PEM bundle of the CAs whose certificates are taken.
    pub ca: PathBuf,
    /// PEM CRLs (each file may hold several).
    pub crls: Vec<PathBuf>,
}

impl ClientAuth {
    /// Every file it names, for the keeper to read again at reloads.
    pub fn files(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.ca).chain(&self.crls)
    }
}

/// `client_auth` names.
pub const MODES: [(&str, ClientAuthMode); 2] = [
    ("require", ClientAuthMode::Require),
    ("optional", ClientAuthMode::Optional),
];

/// The config name of a [`ClientAuthMode`].
pub fn mode_text(m: ClientAuthMode) -> &'static str {
    MODES.iter().find(|(_, v)| *v == m).map_or("", |(n, _)| n)
}

/// The CRLs in a PEM file; an error names the file.
pub fn read_crls(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>, String> {
    let pem = crate::privileges::keeper::read(path)
        .map_err(|e| format!("cannot read {}: {}", path.display(), io_reason(&e)))?;
    let crls = CertificateRevocationListDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot parse {}: {e}", path.display()))?;
    if crls.is_empty() {
        return Err(format!(
            "no CRL (\"-----BEGIN X509 CRL-----\") in {}",
            path.display()
        ));
    }
    Ok(crls)
}

/// A listener's verifier, built from the files as they are now, and its
/// verification context (see the module's doc).
pub struct Verifier {
    pub verifier: Arc<dyn ClientCertVerifier>,
    context: Vec<u8>,
}

/// Reads `c`'s CA and CRL files and builds its verifier; an error names
/// the file at fault.
pub fn load(c: &ClientAuth) -> Result<Verifier, String> {
    let roots = load_roots(Some(&c.ca))?;
    let mut context = vec![c.mode as u8];
    for cert in read_certs(&c.ca)? {
        push_part(&mut context, &cert);
    }
    let mut crls = Vec::new();
    for path in &c.crls {
        let these = read_crls(path)?;
        // Alone first, so that a bad CRL is blamed on its own file.
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots.clone()), super::provider())
            .with_crls(these.iter().cloned())
            .build()
            .map_err(|e| format!("cannot use the CRLs in {}: {e}", path.display()))?;
        for crl in &these {
            push_part(&mut context, crl);
        }
        crls.extend(these);
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), super::provider())
        .with_crls(crls);
    let builder = match c.mode {
        ClientAuthMode::Require => builder,
        ClientAuthMode::Optional => builder.allow_unauthenticated(),
    };
    let verifier = builder
        .build()
        .map_err(|e| format!("cannot use {}: {e}", c.ca.display()))?;
    Ok(Verifier { verifier, context })
}

fn push_part(context: &mut Vec<u8>, der: &[u8]) {
    context.extend_from_slice(&(der.len() as u32).to_be_bytes());
    context.extend_from_slice(der);
}

/// The verifier of a listener without `client_auth`: asks for nothing.
pub fn none() -> Arc<dyn ClientCertVerifier> {
    WebPkiClientVerifier::no_client_auth()
}

/// Gives `config` (a listener with `client_auth`) the resumption of its
/// own verification context: stateful tickets and session IDs in that
/// context's cache, never the process's tickets.
pub fn own_sessions(config: &mut ServerConfig, v: &Verifier) {
    config.ticketer = Arc::new(ringside_runtime::tls::StatefulTickets);
    config.session_storage = session_cache(&v.context);
}

/// Each verification context's session cache, while a config holds it.
fn session_cache(context: &[u8]) -> Arc<dyn StoresServerSessions> {
    type Caches = Vec<(Vec<u8>, Weak<ServerSessionMemoryCache>)>;
    static CACHES: Mutex<Caches> = Mutex::new(Vec::new());
    let mut caches = CACHES.lock().unwrap_or_else(|p| p.into_inner());
    caches.retain(|(_, w)| w.strong_count() > 0);
    if let Some(c) = caches
        .iter()
        .find(|(k, _)| k == context)
        .and_then(|(_, w)| w.upgrade())
    {
        return c;
    }
    let cache = ServerSessionMemoryCache::new(super::SESSION_CACHE_SIZE);
    caches.push((context.to_vec(), Arc::downgrade(&cache)));
    cache
}
