//! What the ACME thread hands the cores, process-wide: each certificate's
//! slot, which every core's TLS configs read at a full handshake, and the
//! challenges being answered (HTTP-01 tokens for the edge, TLS-ALPN-01
//! certificates for the SNI resolver).
//!
//! A slot outlives the configs that read it: a reload's new configs find
//! the same slot by the certificate's issuer and names, so a reload never
//! loses an issued certificate, and a swap reaches every core's configs at
//! once without a reload. Readers take a read lock for one `Arc` clone per
//! full handshake (resumed ones pick no certificate), never per request;
//! the writer holds it for a pointer swap.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::sign::CertifiedKey;

use crate::tls::certs::AcmeCert;

/// One ACME certificate, as every core's TLS configs see it.
#[derive(Debug)]
pub struct Slot {
    pub id: AcmeCert,
    cert: RwLock<Option<Arc<CertifiedKey>>>,
    /// notAfter in seconds since the epoch; 0 while there is none.
    not_after: AtomicU64,
    /// Failed orders since the last success.
    pub failures: AtomicU64,
    /// The config wants it (else it is kept only to lend its certificate).
    wanted: AtomicBool,
}

impl Slot {
    /// The certificate to present; `None` until one is issued.
    pub fn get(&self) -> Option<Arc<CertifiedKey>> {
        self.cert.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `cert` in place for every later handshake.
    pub fn set(&self, cert: Arc<CertifiedKey>, not_after: SystemTime) {
        *self.cert.write().unwrap_or_else(|e| e.into_inner()) = Some(cert);
        let secs = not_after
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.not_after.store(secs, Relaxed);
    }

    /// When the certificate in place expires, if there is one.
    pub fn not_after(&self) -> Option<SystemTime> {
        match self.not_after.load(Relaxed) {
            0 => None,
            s => Some(UNIX_EPOCH + std::time::Duration::from_secs(s)),
        }
    }
}

fn slots() -> &'static Mutex<HashMap<AcmeCert, Arc<Slot>>> {
    static SLOTS: OnceLock<Mutex<HashMap<AcmeCert, Arc<Slot>>>> = OnceLock::new();
    SLOTS.get_or_init(Default::default)
}

/// The slot of `id`, made empty on first use.
pub fn slot(id: &AcmeCert) -> Arc<Slot> {
    let mut all = slots().lock().unwrap_or_else(|e| e.into_inner());
    all.entry(id.clone())
        .or_insert_with(|| {
            Arc::new(Slot {
                id: id.clone(),
                cert: RwLock::new(None),
                not_after: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                wanted: AtomicBool::new(true),
            })
        })
        .clone()
}

/// Marks the slots the config wants; the others are forgotten once every
/// wanted one holds a certificate (until then they lend theirs, see
/// [`covering`]). Configs still built on a forgotten one keep it.
pub fn retain(wanted: &[AcmeCert]) {
    let mut all = slots().lock().unwrap_or_else(|e| e.into_inner());
    for (id, s) in all.iter() {
        s.wanted.store(wanted.contains(id), Relaxed);
    }
    sweep(&mut all);
}

/// Forgets unwanted slots if every wanted one is filled (after an order).
pub fn tidy() {
    sweep(&mut slots().lock().unwrap_or_else(|e| e.into_inner()));
}

fn sweep(all: &mut HashMap<AcmeCert, Arc<Slot>>) {
    let filled = all
        .values()
        .filter(|s| s.wanted.load(Relaxed))
        .all(|s| s.not_after().is_some());
    if filled {
        all.retain(|_, s| s.wanted.load(Relaxed));
    }
}

/// A certificate in place whose names include `name`: what a slot not
/// filled yet presents meanwhile, so a vhost that gained a name keeps
/// serving its other names with the certificate it had. Scans the
/// slots, which only a handshake for an empty slot does.
pub fn covering(name: &str) -> Option<Arc<CertifiedKey>> {
    let all = slots().lock().unwrap_or_else(|e| e.into_inner());
    all.values()
        .filter(|s| s.id.names.iter().any(|n| n.eq_ignore_ascii_case(name)))
        .find_map(|s| s.get())
}

/// Every slot the config wants, for `/metrics`, sorted by issuer and names.
pub fn all() -> Vec<Arc<Slot>> {
    let all = slots().lock().unwrap_or_else(|e| e.into_inner());
    let mut out: Vec<Arc<Slot>> = all
        .values()
        .filter(|s| s.wanted.load(Relaxed))
        .cloned()
        .collect();
    out.sort_by(|a, b| (&a.id.issuer, &a.id.names).cmp(&(&b.id.issuer, &b.id.names)));
    out
}

#[derive(Default)]
struct Challenges {
    /// HTTP-01: token to key authorization.
    http01: HashMap<String, String>,
    /// TLS-ALPN-01: name to the challenge certificate.
    alpn: HashMap<String, Arc<CertifiedKey>>,
}

/// Whether any HTTP-01 challenge is published: the edge looks no further
/// while none is.
static ANY_HTTP01: AtomicBool = AtomicBool::new(false);

fn challenges() -> &'static RwLock<Challenges> {
    static C: OnceLock<RwLock<Challenges>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The key authorization to answer `/.well-known/acme-challenge/{token}` with.
pub fn http01(token: &[u8]) -> Option<String> {
    if !ANY_HTTP01.load(Relaxed) {
        return None;
    }
    let token = std::str::from_utf8(token).ok()?;
    let c = challenges().read().unwrap_or_else(|e| e.into_inner());
    c.http01.get(token).cloned()
}

pub fn publish_http01(token: &str, key_authorization: &str) {
    let mut c = challenges().write().unwrap_or_else(|e| e.into_inner());
    c.http01
        .insert(token.to_owned(), key_authorization.to_owned());
    ANY_HTTP01.store(true, Relaxed);
}

pub fn withdraw_http01(token: &str) {
    let mut c = challenges().write().unwrap_or_else(|e| e.into_inner());
    c.http01.remove(token);
    ANY_HTTP01.store(!c.http01.is_empty(), Relaxed);
}

/// The TLS-ALPN-01 certificate for `name` (RFC 8737 §3), while one is published.
pub fn alpn(name: &str) -> Option<Arc<CertifiedKey>> {
    let c = challenges().read().unwrap_or_else(|e| e.into_inner());
    c.alpn.get(&name.to_ascii_lowercase()).cloned()
}

pub fn publish_alpn(name: &str, cert: Arc<CertifiedKey>) {
    let mut c = challenges().write().unwrap_or_else(|e| e.into_inner());
    c.alpn.insert(name.to_ascii_lowercase(), cert);
}

pub fn withdraw_alpn(name: &str) {
    let mut c = challenges().write().unwrap_or_else(|e| e.into_inner());
    c.alpn.remove(&name.to_ascii_lowercase());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_found_again_by_issuer_and_names() {
        let id = AcmeCert {
            issuer: "store-test".into(),
            names: vec!["a.test".into()],
        };
        let a = slot(&id);
        let b = slot(&id);
        assert!(Arc::ptr_eq(&a, &b));
        let other = slot(&AcmeCert {
            names: vec!["b.test".into()],
            ..id
        });
        assert!(!Arc::ptr_eq(&a, &other));
        assert!(a.get().is_none() && a.not_after().is_none());
    }

    #[test]
    fn http01_answers_only_published_tokens() {
        assert_eq!(http01(b"tok-store-test"), None);
        publish_http01("tok-store-test", "tok-store-test.thumb");
        assert_eq!(
            http01(b"tok-store-test").as_deref(),
            Some("tok-store-test.thumb")
        );
        assert_eq!(http01(b"other"), None);
        withdraw_http01("tok-store-test");
        assert_eq!(http01(b"tok-store-test"), None);
    }
}
