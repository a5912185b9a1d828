//! The client certificate sent upstream in RFC 9440's fields:
//! `Client-Cert` (§2.2: the leaf's DER as a Structured Field Byte
//! Sequence, `:BASE64:`) and `Client-Cert-Chain` (§2.3: the rest of the
//! chain the client sent, one Byte Sequence each, as a list).
//!
//! A client's own `Client-Cert` or `Client-Cert-Chain` is never passed on,
//! on any route or listener, with client certificates or without (the
//! header policy asks [`is_client_cert_field`]): RFC 9440 §4 has the
//! proxy remove them, since an upstream that trusts them could not tell a
//! forged one from the proxy's. The proxy's own are added only where the
//! connection's handshake verified a certificate.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::{BufMut, BytesMut};
use ringside_http::Exchange;
use rustls::pki_types::CertificateDer;

use crate::fastcgi::record::write_name_value;

/// Whether `name` is one of the fields only the proxy may send.
#[inline]
pub fn is_client_cert_field(name: &[u8]) -> bool {
    // Both start so; one length test spares every other field the rest.
    name.len() >= 11
        && name[..11].eq_ignore_ascii_case(b"client-cert")
        && (name.len() == 11 || name[11..].eq_ignore_ascii_case(b"-chain"))
}

/// Adds the fields for `ex`'s verified client certificate, if it has one,
/// to `out`, a request head the header policy wrote (which ends with the
/// blank line: they go before it).
pub fn add_fields(ex: &Exchange<'_>, out: &mut BytesMut) {
    let Some(certs) = ex.client_certificates() else {
        return;
    };
    if let [leaf, chain @ ..] = &certs[..] {
        debug_assert!(out.ends_with(b"\r\n\r\n"));
        out.truncate(out.len() - 2);
        write_fields(out, leaf, chain);
        out.put_slice(b"\r\n");
    }
}

/// FastCGI's params for `ex`'s verified client certificate, if it has
/// one, as Apache's mod_ssl names them (nginx passes its `$ssl_client_*`
/// by hand): `SSL_CLIENT_VERIFY=SUCCESS`, `SSL_CLIENT_S_DN` and
/// `SSL_CLIENT_CERT` (the leaf in PEM).
pub fn add_fastcgi_params(ex: &Exchange<'_>, out: &mut BytesMut) {
    let Some(certs) = ex.client_certificates() else {
        return;
    };
    let Some(leaf) = certs.first() else { return };
    write_name_value(out, b"SSL_CLIENT_VERIFY", b"SUCCESS");
    if let Some(dn) = crate::tls::subject::subject(leaf) {
        write_name_value(out, b"SSL_CLIENT_S_DN", dn.as_bytes());
    }
    write_name_value(out, b"SSL_CLIENT_CERT", &pem(leaf));
}

/// A certificate in PEM (RFC 7468 §5): base64 in lines of 64.
fn pem(der: &[u8]) -> Vec<u8> {
    let b64 = STANDARD.encode(der);
    let mut out = Vec::with_capacity(b64.len() + b64.len() / 64 + 60);
    out.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.extend_from_slice(b"-----END CERTIFICATE-----\n");
    out
}

/// `Client-Cert: :B64:` and, with a chain, `Client-Cert-Chain: :B64:, ...`.
fn write_fields(out: &mut BytesMut, leaf: &CertificateDer<'_>, chain: &[CertificateDer<'_>]) {
    out.put_slice(b"Client-Cert: ");
    put_byte_sequence(out, leaf);
    out.put_slice(b"\r\n");
    if let [first, rest @ ..] = chain {
        out.put_slice(b"Client-Cert-Chain: ");
        put_byte_sequence(out, first);
        for c in rest {
            out.put_slice(b", ");
            put_byte_sequence(out, c);
        }
        out.put_slice(b"\r\n");
    }
}

/// RFC 8941 §3.3.5: `:`, base64 with padding, `:`.
fn put_byte_sequence(out: &mut BytesMut, der: &[u8]) {
    out.put_u8(b':');
    let start = out.len();
    out.resize(start + base64::encoded_len(der.len(), true).unwrap_or(0), 0);
    let n = STANDARD.encode_slice(der, &mut out[start..]).unwrap_or(0);
    out.truncate(start + n);
    out.put_u8(b':');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_rfc_9440_fields_are_ours() {
        for n in [
            "Client-Cert",
            "client-cert",
            "CLIENT-CERT-CHAIN",
            "client-cert-chain",
        ] {
            assert!(is_client_cert_field(n.as_bytes()), "{n}");
        }
        for n in [
            "Client-Certs",
            "client-cert-",
            "client-cer",
            "x-client-cert",
            "client-cert-chains",
        ] {
            assert!(!is_client_cert_field(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn pem_lines_are_64_characters() {
        let text = String::from_utf8(pem(&[7u8; 60])).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
        assert_eq!((lines[1].len(), lines[2].len()), (64, 16));
        assert_eq!(lines[3], "-----END CERTIFICATE-----");
    }

    #[test]
    fn fields_are_byte_sequences_and_a_list_of_them() {
        let mut out = BytesMut::new();
        let leaf = CertificateDer::from(vec![0xfb, 0xff, 0x00]);
        write_fields(&mut out, &leaf, &[]);
        assert_eq!(&out[..], b"Client-Cert: :+/8A:\r\n");
        out.clear();
        let chain = [
            CertificateDer::from(vec![1]),
            CertificateDer::from(vec![2, 3]),
        ];
        write_fields(&mut out, &leaf, &chain);
        assert_eq!(
            &out[..],
            b"Client-Cert: :+/8A:\r\nClient-Cert-Chain: :AQ==:, :AgM=:\r\n"
        );
    }
}
