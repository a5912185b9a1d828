//! Just enough DER (X.690) to walk a certificate (RFC 5280 §4.1): what
//! renewal reads here, and what the server reads of a client certificate
//! (its subject, for mTLS), so the two walk it one way.

pub(crate) const BOOLEAN: u8 = 0x01;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const OID: u8 = 0x06;
pub const SEQUENCE: u8 = 0x30;

/// One element: its tag, its contents, and what follows it. Definite
/// lengths only, as DER has.
pub fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    if tag & 0x1f == 0x1f {
        return None; // multi-byte tags: none in the parts read here
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| a << 8 | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

pub struct Tbs<'a> {
    /// tbsCertificate's fields from serialNumber on.
    pub rest_after_version: &'a [u8],
}

/// Certificate → tbsCertificate, past its optional `[0]` version.
pub fn tbs(cert: &[u8]) -> Option<Tbs<'_>> {
    let (SEQUENCE, cert, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(cert)? else {
        return None;
    };
    let mut rest = tbs;
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.2;
    }
    Some(Tbs {
        rest_after_version: rest,
    })
}

/// The SubjectPublicKeyInfo element (whole, tag and length included).
pub(crate) fn spki(cert: &[u8]) -> Option<&[u8]> {
    let mut rest = tbs(cert)?.rest_after_version;
    // serialNumber, signature, issuer, validity, subject.
    for _ in 0..5 {
        rest = element(rest)?.2;
    }
    let (SEQUENCE, _, after) = element(rest)? else {
        return None;
    };
    Some(&rest[..rest.len() - after.len()])
}
