//! A test certificate authority made with rcgen, writing the leaves it
//! signs into a test's temporary directory, so no key is ever committed.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use super::TempDir;

pub struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    pub fn new(cn: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA's certificate, DER (for a rustls client's roots).
    pub fn der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    /// Writes `STEM.pem` (a new leaf for `names` with common name `cn`,
    /// then this CA) and `STEM.key` into `dir`.
    pub fn leaf(&self, dir: &TempDir, stem: &str, cn: &str, names: &[&str]) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let chain = cert.pem() + &self.cert.pem();
        dir.write(&format!("{stem}.pem"), chain.as_bytes());
        dir.write(&format!("{stem}.key"), key.serialize_pem().as_bytes());
    }
}
