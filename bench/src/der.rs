//! Just enough DER to find a certificate's public key size, which ab
//! prints in its "SSL/TLS Protocol" line and rustls does not expose.

/// One TLV at `b[0..]`: (tag, contents, bytes it takes).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], usize)> {
    let tag = *b.first()?;
    let first = *b.get(1)?;
    let (len, head) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | usize::from(*b.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let body = b.get(head..head.checked_add(len)?)?;
    Some((tag, body, head + len))
}

/// The elements of a SEQUENCE's contents.
fn items(mut b: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while let Some((tag, body, n)) = tlv(b) {
        out.push((tag, body));
        b = &b[n..];
    }
    out
}

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
const OID_P521: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// The bits of the certificate's public key as OpenSSL counts them
/// (RSA: the modulus; EC: the curve; Ed25519: 253), or 0 if unknown.
pub fn key_bits(cert: &[u8]) -> u32 {
    fn go(cert: &[u8]) -> Option<u32> {
        let (_, certificate, _) = tlv(cert)?;
        let (_, tbs, _) = tlv(certificate)?;
        let fields = items(tbs);
        // [0] version is optional; SPKI is the 6th field after it.
        let skip = usize::from(fields.first()?.0 == 0xa0);
        let (_, spki) = *fields.get(skip + 5)?;
        let parts = items(spki);
        let alg = items(parts.first()?.1);
        let oid = alg.first()?.1;
        if oid == OID_RSA {
            let bits = parts.get(1)?.1.get(1..)?; // skip the unused-bits byte
            let (_, rsa, _) = tlv(bits)?;
            let modulus = items(rsa).first()?.1;
            let m = match modulus.iter().position(|&b| b != 0) {
                Some(i) => &modulus[i..],
                None => return Some(0),
            };
            Some(m.len() as u32 * 8 - m[0].leading_zeros())
        } else if oid == OID_EC {
            let curve = alg.get(1)?.1;
            [(OID_P256, 256), (OID_P384, 384), (OID_P521, 521)]
                .iter()
                .find(|(o, _)| *o == curve)
                .map(|(_, b)| *b)
        } else if oid == OID_ED25519 {
            Some(253)
        } else {
            None
        }
    }
    go(cert).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::key_bits;

    #[test]
    fn key_sizes_as_openssl_counts_them() {
        for (alg, bits) in [
            (&rcgen::PKCS_ECDSA_P256_SHA256, 256),
            (&rcgen::PKCS_ECDSA_P384_SHA384, 384),
            (&rcgen::PKCS_ED25519, 253),
        ] {
            let key = rcgen::KeyPair::generate_for(alg).unwrap();
            let cert = rcgen::CertificateParams::new(vec!["h".to_string()])
                .unwrap()
                .self_signed(&key)
                .unwrap();
            assert_eq!(key_bits(cert.der()), bits, "{alg:?}");
        }
        assert_eq!(key_bits(b"\x30\x03\x02\x01"), 0);
        assert_eq!(key_bits(b""), 0);
    }
}
