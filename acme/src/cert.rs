//! What renewal needs from a certificate, and when to renew and retry.
use std::time::{Duration, SystemTime};

use crate::der::{self, SEQUENCE};

/// The CA's suggested renewal window for a certificate (RFC 9773 §4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenewalInfo {
    pub start: SystemTime,
    pub end: SystemTime,
    /// When to ask again (its Retry-After).
    pub retry_after: Option<Duration>,
    pub explanation_url: Option<String>,
}

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

/// id-ce-subjectAltName (2.5.29.17) and id-ce-authorityKeyIdentifier
/// (2.5.29.35), as DER contents.
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
const OID_AKI: &[u8] = &[0x55, 0x1d, 0x23];

impl CertInfo {
    pub fn parse(der_bytes: &[u8]) -> Result<CertInfo, String> {
        let tbs = der::tbs(der_bytes).ok_or("not a DER certificate")?;
        let bad = |what: &str| format!("certificate: cannot read its {what}");
        let mut rest = tbs.rest_after_version;
        let (tag, serial, r) = der::element(rest).ok_or_else(|| bad("serial number"))?;
        if tag != der::INTEGER {
            return Err(bad("serial number"));
        }
        rest = r;
        // signature, issuer.
        for _ in 0..2 {
            rest = der::element(rest).ok_or_else(|| bad("issuer"))?.2;
        }
        let (SEQUENCE, validity, r) = der::element(rest).ok_or_else(|| bad("validity"))? else {
            return Err(bad("validity"));
        };
        rest = r;
        fn time(v: &[u8]) -> Option<(SystemTime, &[u8])> {
            let (tag, t, r) = der::element(v)?;
            let t = match tag {
                0x17 => crate::time::x509(false, t)?,
                0x18 => crate::time::x509(true, t)?,
                _ => return None,
            };
            Some((t, r))
        }
        let (not_before, v) = time(validity).ok_or_else(|| bad("notBefore"))?;
        let (not_after, _) = time(v).ok_or_else(|| bad("notAfter"))?;
        // subject, subjectPublicKeyInfo.
        for _ in 0..2 {
            rest = der::element(rest).ok_or_else(|| bad("subject"))?.2;
        }
        let mut names = Vec::new();
        let mut key_id = None;
        // [1] issuerUniqueID, [2] subjectUniqueID, [3] extensions.
        while let Some((tag, content, r)) = der::element(rest) {
            rest = r;
            if tag != 0xa3 {
                continue;
            }
            let (SEQUENCE, mut exts, _) = der::element(content).ok_or_else(|| bad("extensions"))?
            else {
                return Err(bad("extensions"));
            };
            while let Some((_, ext, r)) = der::element(exts) {
                exts = r;
                let (der::OID, oid, mut e) = der::element(ext).ok_or_else(|| bad("extension"))?
                else {
                    return Err(bad("extension"));
                };
                if e.first() == Some(&der::BOOLEAN) {
                    e = der::element(e).ok_or_else(|| bad("extension"))?.2;
                }
                let (der::OCTET_STRING, value, _) =
                    der::element(e).ok_or_else(|| bad("extension"))?
                else {
                    return Err(bad("extension"));
                };
                if oid == OID_SAN {
                    names = san_dns_names(value).ok_or_else(|| bad("subjectAltName"))?;
                } else if oid == OID_AKI {
                    key_id = aki_key_id(value);
                }
            }
        }
        let ari_id = key_id.map(|k| format!("{}.{}", crate::jws::b64(k), crate::jws::b64(serial)));
        Ok(CertInfo {
            not_before,
            not_after,
            names,
            ari_id,
        })
    }

    /// Every one of `names` is among the certificate's (exactly; no wildcards).
    pub fn covers(&self, names: &[String]) -> bool {
        names
            .iter()
            .all(|n| self.names.iter().any(|m| m.eq_ignore_ascii_case(n)))
    }
}

/// GeneralNames' dNSName ([2] IMPLICIT IA5String) entries, lower case.
fn san_dns_names(value: &[u8]) -> Option<Vec<String>> {
    let (SEQUENCE, mut names, _) = der::element(value)? else {
        return None;
    };
    let mut out = Vec::new();
    while let Some((tag, name, r)) = der::element(names) {
        names = r;
        if tag == 0x82 {
            out.push(std::str::from_utf8(name).ok()?.to_ascii_lowercase());
        }
    }
    Some(out)
}

/// AuthorityKeyIdentifier's keyIdentifier ([0] IMPLICIT OCTET STRING).
fn aki_key_id(value: &[u8]) -> Option<&[u8]> {
    let (SEQUENCE, mut fields, _) = der::element(value)? else {
        return None;
    };
    while let Some((tag, f, r)) = der::element(fields) {
        if tag == 0x80 {
            return Some(f);
        }
        fields = r;
    }
    None
}

/// When to renew: a uniformly chosen point in the CA's window (from
/// `random`), else two thirds through the lifetime.
pub fn renew_at(info: &CertInfo, ari: Option<&RenewalInfo>, random: u64) -> SystemTime {
    if let Some(ari) = ari {
        let span = ari.end.duration_since(ari.start).unwrap_or_default();
        let span_ms = span.as_millis().min(u64::MAX as u128) as u64;
        if span_ms == 0 {
            return ari.start;
        }
        return ari.start + Duration::from_millis(random % (span_ms + 1));
    }
    let life = info
        .not_after
        .duration_since(info.not_before)
        .unwrap_or_default();
    info.not_before + life * 2 / 3
}

/// Retries after failures: doubling from `min` to `max`, each wait jittered
/// down by up to a quarter, never shorter than the CA's Retry-After.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Backoff {
        let max = max.max(min);
        Backoff {
            min,
            max,
            next: min,
        }
    }
    /// The wait before the next try; `hint` is the CA's Retry-After.
    pub fn next(&mut self, hint: Option<Duration>, random: u64) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(self.max);
        // Jitter: up to a quarter off, in thousandths.
        let jitter = base / 4 * (random % 1001) as u32 / 1000;
        (base - jitter).max(hint.unwrap_or_default())
    }
    /// After a success.
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn make(names: &[&str], days: i64, issuer: bool) -> Vec<u8> {
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.not_before = rcgen::date_time_ymd(2025, 1, 1);
        params.not_after =
            rcgen::date_time_ymd(2025, 1, 1) + std::time::Duration::from_secs(days as u64 * 86400);
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x87, 0x65, 0x43]));
        let key = rcgen::KeyPair::generate().unwrap();
        if issuer {
            let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            ca.key_identifier_method =
                rcgen::KeyIdMethod::PreSpecified(vec![0x69, 0x88, 0x5b, 0x6b]);
            let ca_key = rcgen::KeyPair::generate().unwrap();
            let ca_cert = ca.self_signed(&ca_key).unwrap();
            params.use_authority_key_identifier_extension = true;
            params
                .signed_by(&key, &ca_cert, &ca_key)
                .unwrap()
                .der()
                .to_vec()
        } else {
            params.self_signed(&key).unwrap().der().to_vec()
        }
    }

    #[test]
    fn parses_rcgen_certificates() {
        let der = make(&["A.Test", "b.test"], 90, true);
        let info = CertInfo::parse(&der).unwrap();
        assert_eq!(info.names, vec!["a.test", "b.test"]);
        assert_eq!(
            info.not_before,
            UNIX_EPOCH + Duration::from_secs(1735689600)
        );
        assert_eq!(
            info.not_after,
            info.not_before + Duration::from_secs(90 * 86400)
        );
        // RFC 9773 §4.1: the serial's DER contents, leading zero kept.
        assert_eq!(info.ari_id.as_deref(), Some("aYhbaw.AIdlQw"));
        assert!(info.covers(&["b.test".into(), "A.TEST".into()]));
        assert!(!info.covers(&["c.test".into()]));
        assert!(info.covers(&[]));

        let self_signed = CertInfo::parse(&make(&["x.test"], 1, false)).unwrap();
        assert_eq!(self_signed.ari_id, None);
        // GeneralizedTime after 2049 (RFC 5280 §4.1.2.5).
        let long = CertInfo::parse(&make(&["x.test"], 365 * 30, false)).unwrap();
        assert_eq!(
            long.not_after,
            UNIX_EPOCH + Duration::from_secs(1735689600 + 365 * 30 * 86400)
        );
        assert!(CertInfo::parse(&der[..der.len() / 2]).is_err());
        assert!(CertInfo::parse(b"").is_err());
    }

    #[test]
    fn ari_id_rfc9773_example() {
        // RFC 9773 §4.1: keyIdentifier 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4,
        // serial 00:87:65:43:21 → "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE".
        let kid = [
            0x69, 0x88, 0x5B, 0x6B, 0x87, 0x46, 0x40, 0x41, 0xE1, 0xB3, 0x7B, 0x84, 0x7B, 0xA0,
            0xAE, 0x2C, 0xDE, 0x01, 0xC8, 0xD4,
        ];
        let serial = [0x00, 0x87, 0x65, 0x43, 0x21];
        assert_eq!(
            format!("{}.{}", crate::jws::b64(&kid), crate::jws::b64(&serial)),
            "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"
        );
    }

    #[test]
    fn renew_at_window_or_two_thirds() {
        let nb = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let info = CertInfo {
            not_before: nb,
            not_after: nb + Duration::from_secs(90 * 86400),
            names: vec![],
            ari_id: None,
        };
        assert_eq!(
            renew_at(&info, None, 7),
            nb + Duration::from_secs(60 * 86400)
        );
        let ari = RenewalInfo {
            start: nb + Duration::from_secs(50 * 86400),
            end: nb + Duration::from_secs(52 * 86400),
            retry_after: None,
            explanation_url: None,
        };
        for r in [0, 1, 12345, u64::MAX / 3, u64::MAX] {
            let t = renew_at(&info, Some(&ari), r);
            assert!(t >= ari.start && t <= ari.end, "{r}");
        }
        assert_eq!(renew_at(&info, Some(&ari), 0), ari.start);
        let empty = RenewalInfo {
            end: ari.start,
            ..ari.clone()
        };
        assert_eq!(renew_at(&info, Some(&empty), 99), ari.start);
    }

    #[test]
    fn backoff_bounds() {
        let (min, max) = (Duration::from_secs(60), Duration::from_secs(3600));
        let mut b = Backoff::new(min, max);
        let mut base = min;
        for i in 0..12u64 {
            let w = b.next(None, i * 7919);
            assert!(w <= base && w >= base * 3 / 4, "{i}: {w:?} vs {base:?}");
            base = (base * 2).min(max);
        }
        assert_eq!(b.next(None, 0), max);
        assert!(b.next(None, 1000) >= max * 3 / 4);
        assert_eq!(
            b.next(Some(Duration::from_secs(7200)), 1000),
            Duration::from_secs(7200)
        );
        b.reset();
        assert_eq!(b.next(None, 0), min);
        assert_eq!(
            b.next(Some(Duration::from_secs(1)), 1000),
            Duration::from_secs(90)
        );
    }
}
