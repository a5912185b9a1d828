//! A certificate's subject as text, for the access log and FastCGI's
//! `SSL_CLIENT_S_DN`: the RFC 4514 string nginx's `$ssl_client_s_dn` gives
//! (`CN=alice,O=Example,C=DE`: the last RDN first, §2.1).
//!
//! The certificate was verified by webpki already, so its DER is well
//! formed; this reads just the path to the subject (RFC 5280 §4.1:
//! Certificate → tbsCertificate → [version], serialNumber, signature,
//! issuer, validity, subject) with a few lines of DER rather than a
//! certificate-parsing crate, and gives `None` for anything it does not
//! expect.

use std::fmt::Write as _;

use ringside_acme::der::{element, tbs, SEQUENCE};

const SET: u8 = 0x31;

/// The subject of a DER certificate, RFC 4514 style; `None` for a
/// certificate it cannot read.
pub fn subject(cert: &[u8]) -> Option<String> {
    let mut rest = tbs(cert)?.rest_after_version;
    // serialNumber, signature, issuer, validity.
    for _ in 0..4 {
        rest = element(rest)?.2;
    }
    let (SEQUENCE, name, _) = element(rest)? else {
        return None;
    };
    name_text(name)
}

/// An RDNSequence's contents as text.
fn name_text(mut name: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    while !name.is_empty() {
        let (SET, rdn, rest) = element(name)? else {
            return None;
        };
        rdns.push(rdn);
        name = rest;
    }
    let mut out = String::new();
    for (i, mut rdn) in rdns.into_iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut first = true;
        while !rdn.is_empty() {
            let (SEQUENCE, atv, rest) = element(rdn)? else {
                return None;
            };
            if !first {
                out.push('+');
            }
            first = false;
            attribute(&mut out, atv)?;
            rdn = rest;
        }
    }
    Some(out)
}

/// Short names of RFC 4514 §3, and the few others certificates carry.
const NAMES: [(&[u8], &str); 10] = [
    (&[0x55, 0x04, 0x03], "CN"),
    (&[0x55, 0x04, 0x06], "C"),
    (&[0x55, 0x04, 0x07], "L"),
    (&[0x55, 0x04, 0x08], "ST"),
    (&[0x55, 0x04, 0x09], "STREET"),
    (&[0x55, 0x04, 0x0a], "O"),
    (&[0x55, 0x04, 0x0b], "OU"),
    (&[0x55, 0x04, 0x05], "serialNumber"),
    (
        &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19],
        "DC",
    ),
    (
        &[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01],
        "UID",
    ),
];

/// `type=value` of one AttributeTypeAndValue.
fn attribute(out: &mut String, atv: &[u8]) -> Option<()> {
    let (0x06, oid, rest) = element(atv)? else {
        return None;
    };
    let (tag, value, _) = element(rest)?;
    match NAMES.iter().find(|(o, _)| *o == oid) {
        Some((_, n)) => out.push_str(n),
        None => oid_text(out, oid)?,
    }
    out.push('=');
    let text = match tag {
        // UTF8String, PrintableString, IA5String, and TeletexString read
        // as Latin-1 (what OpenSSL does too).
        0x0c | 0x13 | 0x16 => std::str::from_utf8(value).ok().map(str::to_owned),
        0x14 => Some(value.iter().map(|&b| b as char).collect()),
        // BMPString: UCS-2, big-endian.
        0x1e if value.len() % 2 == 0 => {
            char::decode_utf16(value.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])))
                .collect::<Result<String, _>>()
                .ok()
        }
        _ => None,
    };
    match text {
        Some(t) => escape(out, &t),
        // §2.4: a value of another type as `#` and its DER in hex.
        None => {
            out.push('#');
            let whole = &rest[..rest.len() - element(rest)?.2.len()];
            for b in whole {
                let _ = write!(out, "{b:02x}");
            }
        }
    }
    Some(())
}

/// A dotted OID, for attribute types without a short name (§2.3).
fn oid_text(out: &mut String, oid: &[u8]) -> Option<()> {
    let mut arcs = Vec::new();
    let mut n: u64 = 0;
    for &b in oid {
        n = n.checked_mul(128)? | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            arcs.push(n);
            n = 0;
        }
    }
    let first = *arcs.first()?;
    let (a, b) = match first {
        0..=39 => (0, first),
        40..=79 => (1, first - 40),
        _ => (2, first - 80),
    };
    let _ = write!(out, "{a}.{b}");
    for arc in &arcs[1..] {
        let _ = write!(out, ".{arc}");
    }
    Some(())
}

/// RFC 4514 §2.4: `"+,;<>\` backslashed everywhere, `#` and space at the
/// start and space at the end too; control characters as `\XX`.
fn escape(out: &mut String, v: &str) {
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '#' | ' ' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            ' ' if i == last => out.push_str("\\ "),
            c if c.is_control() => {
                let mut b = [0; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(out, "\\{byte:02X}");
                }
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn cert_with(dn: &[(DnType, &str)]) -> Vec<u8> {
        let mut params = CertificateParams::new(vec!["a.test".to_owned()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in dn {
            params.distinguished_name.push(t.clone(), *v);
        }
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_last_rdn_comes_first() {
        let der = cert_with(&[
            (DnType::CountryName, "DE"),
            (DnType::OrganizationName, "Example"),
            (DnType::CommonName, "alice"),
        ]);
        assert_eq!(subject(&der).as_deref(), Some("CN=alice,O=Example,C=DE"));
    }

    #[test]
    fn special_characters_are_escaped_and_unknown_types_are_dotted() {
        let der = cert_with(&[
            (
                DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
                "a@b",
            ),
            (DnType::CommonName, " a,b+c\"d\\e "),
        ]);
        assert_eq!(
            subject(&der).as_deref(),
            Some("CN=\\ a\\,b\\+c\\\"d\\\\e\\ ,1.2.840.113549.1.9.1=a@b")
        );
    }

    #[test]
    fn what_is_not_a_certificate_has_no_subject() {
        let der = cert_with(&[(DnType::CommonName, "x")]);
        for bad in [
            &b""[..],
            b"\x30",
            b"\x30\x03\x02\x01",
            &der[..der.len() / 2],
        ] {
            assert_eq!(subject(bad), None, "{bad:?}");
        }
    }
}
