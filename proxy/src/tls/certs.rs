//! Reading certificates and keys from PEM files, for the config check and
//! for building rustls configs alike, so both say the same thing about a
//! bad file.
//!
//! A certificate file holds the chain, leaf first; other PEM sections in it
//! (a key, parameters) are skipped. A key file holds one private key in
//! PKCS#8, PKCS#1 (RSA) or SEC1 (EC) form. The key must be the leaf's: the
//! public key it derives is compared with the leaf's SubjectPublicKeyInfo
//! (`CertifiedKey::keys_match`), so a certificate renewed with a new key
//! but only half-copied into place is caught at `ringside check` time, not
//! at the first handshake.
//!
//! [`CertPaths`], the pair of files the config names, is defined here
//! rather than beside the config's TLS section (`config::tls`), which
//! imports this module to check each pair: this way that section depends
//! on the loader and not the other way round.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::aws_lc_rs::sign::any_supported_type;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::{Error as TlsError, InconsistentKeys, RootCertStore};

use crate::config::error::io_reason;

/// Where the system's bundle of trusted roots is looked for, in order.
pub const SYSTEM_BUNDLES: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// A certificate chain and its key, both PEM files, absolute paths.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CertPaths {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A listener's client certificates (`client_auth`), where it asks.
    pub client: Option<super::client_auth::ClientAuth>,
    /// Issued by ACME instead (`cert` and `key` are then empty).
    pub acme: Option<AcmeCert>,
}

/// A certificate ACME keeps: the `[acme.NAME]` issuer and the names it is
/// for (none: a listener that presents only its vhosts' certificates).
#[derive(Clone, Debug, PartialEq, Eq, Default, Hash)]
pub struct AcmeCert {
    pub issuer: String,
    pub names: Vec<String>,
}

/// Which file of a pair an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertPart {
    Cert,
    Key,
}

/// Why a certificate and key could not be loaded, and which file is at
/// fault; the message names the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertError {
    pub part: CertPart,
    pub message: String,
}

impl fmt::Display for CertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CertError {}

/// A PEM error in words (rustls-pki-types prints markers as byte lists).
fn pem_reason(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "a PEM section has no \"-----END {}-----\" line",
            String::from_utf8_lossy(end_marker)
        ),
        pem::Error::IllegalSectionStart { line } => format!(
            "a PEM section starts with the bad line {:?}",
            String::from_utf8_lossy(line)
        ),
        e => e.to_string(),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    // Through the keeper once privileges are dropped: a reload re-reads
    // keys only root may read.
    crate::privileges::keeper::read(path)
        .map_err(|e| format!("cannot read {}: {}", path.display(), io_reason(&e)))
}

/// The certificates in a PEM file, in order; an error names the file.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot parse {}: {}", path.display(), pem_reason(&e)))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", path.display()));
    }
    Ok(certs)
}

/// Loads a certificate chain and its key, checking that they belong
/// together.
pub fn load_certified_key(paths: &CertPaths) -> Result<Arc<CertifiedKey>, CertError> {
    let cert_err = |message| CertError {
        part: CertPart::Cert,
        message,
    };
    let key_err = |message| CertError {
        part: CertPart::Key,
        message,
    };
    let chain = read_certs(&paths.cert).map_err(cert_err)?;
    let key_path = paths.key.display();
    let key = PrivateKeyDer::from_pem_slice(&read(&paths.key).map_err(key_err)?).map_err(|e| {
        key_err(match e {
            pem::Error::NoItemsFound => format!("no private key in {key_path}"),
            e => format!("cannot parse {key_path}: {}", pem_reason(&e)),
        })
    })?;
    let signing = any_supported_type(&key)
        .map_err(|e| key_err(format!("unsupported private key in {key_path}: {e}")))?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        // A key that cannot tell its public half is taken on trust, as
        // rustls itself does; aws-lc-rs' keys all can.
        Ok(()) | Err(TlsError::InconsistentKeys(InconsistentKeys::Unknown)) => {
            Ok(Arc::new(certified))
        }
        Err(TlsError::InconsistentKeys(InconsistentKeys::KeyMismatch)) => Err(key_err(format!(
            "key does not match the certificate: {key_path} is not the key of the first certificate in {}",
            paths.cert.display()
        ))),
        Err(e) => Err(cert_err(format!(
            "cannot parse the first certificate in {}: {e}",
            paths.cert.display()
        ))),
    }
}

/// The first system bundle of trusted roots that exists.
pub fn system_bundle() -> Option<PathBuf> {
    SYSTEM_BUNDLES
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

/// Trusted roots from `ca`, or from the system bundle when `None`. Every
/// certificate in a given `ca` must be usable as a root; the system bundle
/// may hold some that webpki cannot parse, which are skipped.
pub fn load_roots(ca: Option<&Path>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            for (i, cert) in read_certs(path)?.into_iter().enumerate() {
                roots.add(cert).map_err(|e| {
                    format!(
                        "certificate {} in {} is not a usable root: {e}",
                        i + 1,
                        path.display()
                    )
                })?;
            }
        }
        None => {
            let path = system_bundle().ok_or_else(|| {
                format!(
                    "no system bundle of trusted roots (looked for {}); set tls_ca",
                    SYSTEM_BUNDLES.join(", ")
                )
            })?;
            let (added, _) = roots.add_parsable_certificates(read_certs(&path)?);
            if added == 0 {
                return Err(format!("no usable root in {}", path.display()));
            }
        }
    }
    Ok(roots)
}
