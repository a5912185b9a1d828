//! CONTRACT SKELETON.
use std::time::{Duration, SystemTime};

use crate::ca::RenewalInfo;

/// What renewal needs from a certificate (DER), read without a full X.509
/// parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    pub not_before: SystemTime,
    pub not_after: SystemTime,
    /// The subjectAltName DNS names, lower case.
    pub names: Vec<String>,
    /// RFC 9773 §4.1: base64url(AKI keyIdentifier) "." base64url(serial).
    pub ari_id: Option<String>,
}

impl CertInfo {
    pub fn parse(_der: &[u8]) -> Result<CertInfo, String> {
        unimplemented!()
    }
    /// Every one of `names` is among the certificate's (exactly; no wildcards).
    pub fn covers(&self, _names: &[String]) -> bool {
        unimplemented!()
    }
}

/// When to renew: a uniformly chosen point in the CA's window (from
/// `random`), else two thirds through the lifetime.
pub fn renew_at(_info: &CertInfo, _ari: Option<&RenewalInfo>, _random: u64) -> SystemTime {
    unimplemented!()
}

/// Retries after failures: doubling from `min` to `max`, each wait jittered
/// down by up to a quarter, never shorter than the CA's Retry-After.
#[derive(Debug, Clone)]
pub struct Backoff {/* private */}

impl Backoff {
    pub fn new(_min: Duration, _max: Duration) -> Backoff {
        unimplemented!()
    }
    /// The wait before the next try; `hint` is the CA's Retry-After.
    pub fn next(&mut self, _hint: Option<Duration>, _random: u64) -> Duration {
        unimplemented!()
    }
    /// After a success.
    pub fn reset(&mut self) {
        unimplemented!()
    }
}
