//! Automatic HTTPS: certificates ordered from and renewed with an ACME CA
//! (RFC 8555) for the listeners and vhosts with `tls = { acme = "NAME" }`.
//!
//! One thread does all the ACME work ([`manager`], on the blocking client
//! of `ringside-acme`), so the request path never waits on a CA. It hands
//! the cores what they need through [`store`]: a slot per certificate that
//! the TLS configs' SNI resolver reads at each full handshake, so a renewed
//! certificate is in use on every core at once, without a reload and
//! without dropping a connection; and the challenges being answered
//! (HTTP-01 by the edge before any route, TLS-ALPN-01 by the resolver).
//!
//! Certificates and account keys live in the issuer's state directory
//! (`ringside_acme::StateDir`). [`prepare`] loads the stored ones into
//! their slots before the listeners' configs are built, at start and at
//! each reload, so a restart serves what it had while the CA is away.
//! With `user` set, it makes the state directory as root and gives it to
//! that user, since the ACME thread runs after privileges are dropped.

pub mod manager;
pub mod metrics;
pub mod store;

use std::sync::Arc;

use rustls::crypto::aws_lc_rs::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use crate::config::acme::AcmeIssuer;
use crate::config::Config;
use crate::tls::certs::AcmeCert;
use ringside_acme::{CertInfo, StateDir};

/// Every ACME certificate the config asks for, with its issuer.
pub fn wanted(cfg: &Config) -> Vec<(Arc<AcmeIssuer>, AcmeCert)> {
    let mut out: Vec<(Arc<AcmeIssuer>, AcmeCert)> = Vec::new();
    let listeners = cfg.tls.listeners.iter().flatten();
    let vhosts = cfg.tls.vhosts.iter().filter_map(|v| v.cert.as_ref());
    for a in listeners.chain(vhosts).filter_map(|p| p.acme.as_ref()) {
        if a.names.is_empty() || out.iter().any(|(_, c)| c == a) {
            continue;
        }
        if let Some(i) = cfg.acme.iter().find(|i| i.name == a.issuer) {
            out.push((Arc::new(i.clone()), a.clone()));
        }
    }
    out
}

/// Makes each issuer's state directory (owned by `owner` where given) and
/// puts each stored certificate that still covers its names and has not
/// expired into its empty slot.
pub fn prepare(cfg: &Config, owner: Option<(libc::uid_t, libc::gid_t)>) -> Result<(), String> {
    for i in &cfg.acme {
        StateDir::open(&i.state)
            .map_err(|e| format!("[acme.{}] state {}: {e}", i.name, i.state.display()))?;
        if let Some((uid, gid)) = owner {
            give(&i.state, uid, gid).map_err(|e| {
                format!(
                    "[acme.{}] state: cannot give {} to [server] user: {e}",
                    i.name,
                    i.state.display()
                )
            })?;
        }
    }
    for (issuer, cert) in wanted(cfg) {
        let slot = store::slot(&cert);
        if slot.get().is_some() {
            continue;
        }
        if let Some((key, info)) = stored(&issuer, &cert) {
            tracing::info!(issuer = %issuer.name, names = ?cert.names, "serving the stored ACME certificate");
            slot.set(key, info.not_after);
        }
    }
    Ok(())
}

/// Gives the state directory and its two subdirectories to `uid`/`gid`,
/// without following a symlink and without walking further: what the
/// user already owns could be swapped for a link between a look and a
/// chown made as root. What is beneath them the ACME thread writes as
/// that user.
fn give(state: &std::path::Path, uid: libc::uid_t, gid: libc::gid_t) -> std::io::Result<()> {
    for dir in [
        state.to_path_buf(),
        state.join("accounts"),
        state.join("certs"),
    ] {
        std::os::unix::fs::lchown(&dir, Some(uid), Some(gid))?;
    }
    Ok(())
}

/// The stored certificate for `cert`, if it covers the names and has not
/// expired.
pub fn stored(issuer: &AcmeIssuer, cert: &AcmeCert) -> Option<(Arc<CertifiedKey>, CertInfo)> {
    let state = StateDir::open(&issuer.state).ok()?;
    let issued = state.load_cert(&issuer.directory, &cert.names)?;
    match certified(&issued.chain_pem, &issued.key_pem) {
        Ok((key, info))
            if info.covers(&cert.names) && info.not_after > std::time::SystemTime::now() =>
        {
            Some((key, info))
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(issuer = %issuer.name, names = ?cert.names, "the stored ACME certificate is unusable: {e}");
            None
        }
    }
}

/// A chain and key in PEM as rustls presents them, and what renewal needs
/// of the leaf.
pub fn certified(chain_pem: &str, key_pem: &str) -> Result<(Arc<CertifiedKey>, CertInfo), String> {
    let chain = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot parse the chain: {e:?}"))?;
    let leaf = chain.first().ok_or("the chain holds no certificate")?;
    let info = CertInfo::parse(leaf)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| format!("cannot parse the key: {e:?}"))?;
    let signing = any_supported_type(&key).map_err(|e| format!("unsupported key: {e}"))?;
    let certified = CertifiedKey::new(chain, signing);
    certified
        .keys_match()
        .map_err(|e| format!("the key is not the certificate's: {e}"))?;
    Ok((Arc::new(certified), info))
}

/// A challenge certificate (DER, PKCS#8 key) as rustls presents it.
pub fn challenge_key(cert_der: &[u8], key_pkcs8_der: &[u8]) -> Result<Arc<CertifiedKey>, String> {
    let key = PrivateKeyDer::Pkcs8(key_pkcs8_der.to_vec().into());
    let signing = any_supported_type(&key).map_err(|e| format!("unsupported key: {e}"))?;
    Ok(Arc::new(CertifiedKey::new(
        vec![CertificateDer::from(cert_der.to_vec())],
        signing,
    )))
}
