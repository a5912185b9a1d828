//! Certificates for tests, made with rcgen into a temporary directory that
//! is removed on drop, so no key is ever committed.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use super::certs::CertPaths;

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TestDir(pub PathBuf);

/// A certificate authority that signs leaves.
pub(crate) struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
    /// Its certificate, as a PEM file.
    pub pem: PathBuf,
}

impl TestDir {
    pub(crate) fn new(tag: &str) -> TestDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("ringside-tls-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `contents` to `name` in the directory.
    pub(crate) fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        fs::write(&p, contents).unwrap();
        p
    }

    /// A new CA, its certificate written to `NAME.pem`.
    pub(crate) fn ca(&self, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("ringside test CA {name}"));
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let pem = self.write(&format!("{name}.pem"), cert.pem());
        Ca { cert, key, pem }
    }

    /// A leaf for `names` signed by `ca`: `STEM.pem` (the leaf, then the
    /// CA) and `STEM.key`.
    pub(crate) fn leaf(&self, ca: &Ca, stem: &str, names: &[&str]) -> CertPaths {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, stem.to_owned());
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
        CertPaths {
            cert: self.write(&format!("{stem}.pem"), cert.pem() + &ca.cert.pem()),
            key: self.write(&format!("{stem}.key"), key.serialize_pem()),
            client: None,
            acme: None,
        }
    }

    /// A key file holding a fresh key that belongs to no certificate.
    pub(crate) fn stray_key(&self, name: &str) -> PathBuf {
        self.write(name, KeyPair::generate().unwrap().serialize_pem())
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The text of a path, for a config.
pub(crate) fn path_text(p: &Path) -> String {
    p.to_str().expect("a UTF-8 temp dir").to_owned()
}
