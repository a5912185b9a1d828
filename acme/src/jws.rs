//! JSON Web Signatures as ACME uses them (RFC 8555 §6.2): flattened JSON,
//! ES256 with the account key, and External Account Binding's HS256
//! (§7.3.4).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use aws_lc_rs::{digest, hmac};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

pub(crate) fn b64(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

pub(crate) fn sha256(data: &[u8]) -> Vec<u8> {
    digest::digest(&digest::SHA256, data).as_ref().to_vec()
}

/// An ECDSA P-256 key and its PKCS#8 form.
pub(crate) struct Key {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
}

impl Key {
    pub fn generate() -> Result<Key, String> {
        let doc =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|e| format!("generating a P-256 key: {e}"))?;
        Key::from_pkcs8(doc.as_ref())
    }

    pub fn from_pkcs8(der: &[u8]) -> Result<Key, String> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|e| format!("not a PKCS#8 P-256 key: {e}"))?;
        Ok(Key {
            pair,
            pkcs8: der.to_vec(),
        })
    }

    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public JWK (RFC 7518 §6.2), members in RFC 7638's order so its
    /// text is also the thumbprint's input.
    pub fn jwk(&self) -> Value {
        // The uncompressed point: 0x04 || x || y.
        let point = self.pair.public_key().as_ref();
        json!({
            "crv": "P-256",
            "kty": "EC",
            "x": b64(&point[1..33]),
            "y": b64(&point[33..65]),
        })
    }

    /// RFC 7638: base64url(SHA-256 of the JWK's required members, sorted,
    /// no white space).
    pub fn thumbprint(&self) -> String {
        thumbprint_of(&self.jwk())
    }

    pub fn sign(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        self.pair
            .sign(&SystemRandom::new(), data)
            .map(|s| s.as_ref().to_vec())
            .map_err(|e| format!("signing: {e}"))
    }
}

/// The thumbprint of an EC JWK (`crv`, `kty`, `x`, `y`).
pub(crate) fn thumbprint_of(jwk: &Value) -> String {
    let canonical = format!(
        r#"{{"crv":{},"kty":{},"x":{},"y":{}}}"#,
        jwk["crv"], jwk["kty"], jwk["x"], jwk["y"]
    );
    b64(&sha256(canonical.as_bytes()))
}

/// Who signs: the key itself (newAccount, revocation by key) or the
/// account's URL (everything after, §6.2).
#[derive(Clone, Copy)]
pub(crate) enum Signer<'a> {
    Jwk,
    Kid(&'a str),
}

/// A signed request body. `payload` `None` is POST-as-GET (§6.3): the
/// empty string.
pub(crate) fn sign(
    key: &Key,
    signer: Signer<'_>,
    nonce: &str,
    url: &str,
    payload: Option<&Value>,
) -> Result<Vec<u8>, String> {
    let mut protected = json!({ "alg": "ES256", "nonce": nonce, "url": url });
    match signer {
        Signer::Jwk => protected["jwk"] = key.jwk(),
        Signer::Kid(kid) => protected["kid"] = Value::from(kid),
    }
    let protected = b64(protected.to_string().as_bytes());
    let payload = match payload {
        Some(p) => b64(p.to_string().as_bytes()),
        None => String::new(),
    };
    let signature = key.sign(format!("{protected}.{payload}").as_bytes())?;
    Ok(
        json!({ "protected": protected, "payload": payload, "signature": b64(&signature) })
            .to_string()
            .into_bytes(),
    )
}

/// The `externalAccountBinding` member (§7.3.4): the account's JWK signed
/// with the CA's MAC key.
pub(crate) fn eab(key: &Key, kid: &str, hmac_key: &[u8], url: &str) -> Value {
    let protected = b64(json!({ "alg": "HS256", "kid": kid, "url": url })
        .to_string()
        .as_bytes());
    let payload = b64(key.jwk().to_string().as_bytes());
    let mac = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, hmac_key),
        format!("{protected}.{payload}").as_bytes(),
    );
    json!({ "protected": protected, "payload": payload, "signature": b64(mac.as_ref()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    fn decode(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    #[test]
    fn jws_shape_and_signature() {
        let key = Key::generate().unwrap();
        let body = sign(
            &key,
            Signer::Jwk,
            "n0nce",
            "https://ca/new-acct",
            Some(&json!({"a": 1})),
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        let header: Value =
            serde_json::from_slice(&decode(v["protected"].as_str().unwrap())).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["nonce"], "n0nce");
        assert_eq!(header["url"], "https://ca/new-acct");
        assert_eq!(header["jwk"], key.jwk());
        assert!(header.get("kid").is_none());
        assert_eq!(decode(v["payload"].as_str().unwrap()), br#"{"a":1}"#);
        let sig = decode(v["signature"].as_str().unwrap());
        assert_eq!(sig.len(), 64);
        let signed = format!(
            "{}.{}",
            v["protected"].as_str().unwrap(),
            v["payload"].as_str().unwrap()
        );
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.pair.public_key().as_ref())
            .verify(signed.as_bytes(), &sig)
            .unwrap();

        let body = sign(
            &key,
            Signer::Kid("https://ca/acct/1"),
            "n",
            "https://ca/x",
            None,
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        let header: Value =
            serde_json::from_slice(&decode(v["protected"].as_str().unwrap())).unwrap();
        assert_eq!(header["kid"], "https://ca/acct/1");
        assert!(header.get("jwk").is_none());
        assert_eq!(v["payload"], "");
    }

    #[test]
    fn thumbprint_rfc7638_example_shape() {
        // RFC 7638 §3.1 is an RSA key; for EC the same rule: the required
        // members sorted. Checked against a digest computed by hand here.
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AQ"});
        let expected = b64(&sha256(br#"{"crv":"P-256","kty":"EC","x":"AA","y":"AQ"}"#));
        assert_eq!(thumbprint_of(&jwk), expected);
    }

    #[test]
    fn eab_is_hs256_over_the_jwk() {
        let key = Key::generate().unwrap();
        let v = eab(&key, "kid-1", b"secret", "https://ca/new-acct");
        let header: Value =
            serde_json::from_slice(&decode(v["protected"].as_str().unwrap())).unwrap();
        assert_eq!(
            header,
            json!({"alg": "HS256", "kid": "kid-1", "url": "https://ca/new-acct"})
        );
        let payload: Value =
            serde_json::from_slice(&decode(v["payload"].as_str().unwrap())).unwrap();
        assert_eq!(payload, key.jwk());
        let signed = format!(
            "{}.{}",
            v["protected"].as_str().unwrap(),
            v["payload"].as_str().unwrap()
        );
        hmac::verify(
            &hmac::Key::new(hmac::HMAC_SHA256, b"secret"),
            signed.as_bytes(),
            &decode(v["signature"].as_str().unwrap()),
        )
        .unwrap();
    }

    #[test]
    fn pkcs8_round_trip() {
        let key = Key::generate().unwrap();
        let again = Key::from_pkcs8(key.pkcs8()).unwrap();
        assert_eq!(key.jwk(), again.jwk());
        assert!(Key::from_pkcs8(b"nope").is_err());
    }
}
