//! A test certificate authority made with rcgen, writing the leaves it
//! signs into a test's temporary directory, so no key is ever committed.

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertificateRevocationListParams, DnType,
    IsCa, KeyIdMethod, KeyPair, RevokedCertParams, SerialNumber,
};

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

    /// Writes `STEM.pem` (a client certificate with common name `cn` and
    /// serial number `serial`, then this CA) and `STEM.key` into `dir`;
    /// `expired`: its validity ended in 2020.
    pub fn client(&self, dir: &TempDir, stem: &str, cn: &str, serial: u64, expired: bool) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        // Without rcgen's default common name, whose place CN would take.
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "ringside tests");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.serial_number = Some(SerialNumber::from(serial));
        if expired {
            params.not_before = date_time_ymd(2019, 1, 1);
            params.not_after = date_time_ymd(2020, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let chain = cert.pem() + &self.cert.pem();
        dir.write(&format!("{stem}.pem"), chain.as_bytes());
        dir.write(&format!("{stem}.key"), key.serialize_pem().as_bytes());
    }

    /// This CA's CRL (PEM) revoking the certificates with `serials`.
    pub fn crl(&self, serials: &[u64]) -> String {
        CertificateRevocationListParams {
            this_update: date_time_ymd(2024, 1, 1),
            next_update: date_time_ymd(2099, 1, 1),
            crl_number: SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: serials
                .iter()
                .map(|&s| RevokedCertParams {
                    serial_number: SerialNumber::from(s),
                    revocation_time: date_time_ymd(2024, 1, 1),
                    reason_code: None,
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: KeyIdMethod::Sha256,
        }
        .signed_by(&self.cert, &self.key)
        .unwrap()
        .pem()
        .unwrap()
    }
}
