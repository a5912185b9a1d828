//! What the client keeps between runs, written so a crash never leaves
//! half a file.
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::ca::{AccountKey, Issued};

/// The state directory: account keys by issuer name
/// (`accounts/NAME.key`), certificates by their first name
/// (`certs/NAME/chain.pem`, `certs/NAME/key.pem`). Directories 0700, keys
/// 0600; every file written to a temporary name and renamed, so a crash
/// leaves the old file or the new one, never half of one.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// Creates the directory (and its parents) where missing.
    pub fn open(root: &Path) -> Result<StateDir, String> {
        let state = StateDir {
            root: root.to_path_buf(),
        };
        for dir in [
            root.to_path_buf(),
            root.join("accounts"),
            root.join("certs"),
        ] {
            make_dir(&dir)?;
        }
        Ok(state)
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The account key of `issuer`, made and saved on first use.
    pub fn account_key(&self, issuer: &str) -> Result<AccountKey, String> {
        let path = self
            .root
            .join("accounts")
            .join(format!("{}.key", file_name(issuer)?));
        match fs::read_to_string(&path) {
            Ok(pem) => {
                AccountKey::from_pkcs8_pem(&pem).map_err(|e| format!("{}: {e}", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = AccountKey::generate()?;
                write_atomic(&path, key.to_pkcs8_pem().as_bytes(), 0o600)?;
                Ok(key)
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
    /// The stored certificate whose first name is `names[0]`, if any.
    /// `scope` is what else the certificate belongs to (the CA's directory
    /// URL): one issued by a staging CA is not found for production.
    pub fn load_cert(&self, scope: &str, names: &[String]) -> Option<Issued> {
        let dir = self.cert_dir(scope, names).ok()?;
        let chain_pem = fs::read_to_string(dir.join("chain.pem")).ok()?;
        let key_pem = fs::read_to_string(dir.join("key.pem")).ok()?;
        // The two files are renamed one after the other: a crash between
        // leaves a key that is not the leaf's, which must not be served.
        let leaf = crate::pem::decode(&chain_pem, "CERTIFICATE")?;
        let key = rcgen::KeyPair::from_pem(&key_pem).ok()?;
        if crate::der::spki(&leaf)? != key.public_key_der().as_slice() {
            tracing::warn!("acme: {}: key.pem is not chain.pem's key", dir.display());
            return None;
        }
        Some(Issued { chain_pem, key_pem })
    }
    pub fn save_cert(&self, scope: &str, names: &[String], issued: &Issued) -> Result<(), String> {
        let dir = self.cert_dir(scope, names)?;
        make_dir(&dir)?;
        write_atomic(&dir.join("key.pem"), issued.key_pem.as_bytes(), 0o600)?;
        write_atomic(&dir.join("chain.pem"), issued.chain_pem.as_bytes(), 0o644)
    }

    /// `certs/FIRST.HASH`: the first name for people, and a hash of the
    /// scope and every name, so two name sets that begin alike, or one
    /// set from two CAs, keep files of their own.
    fn cert_dir(&self, scope: &str, names: &[String]) -> Result<PathBuf, String> {
        let first = names.first().ok_or("no names")?.to_ascii_lowercase();
        let mut sorted: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        sorted.sort();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a, stable across builds
        for b in scope
            .bytes()
            .chain(sorted.iter().flat_map(|n| n.bytes().chain([b'\n'])))
        {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let dir = format!("{}.{h:016x}", file_name(&first)?);
        Ok(self.root.join("certs").join(dir))
    }
}

/// A name used as a file name: nothing that could leave the directory.
fn file_name(name: &str) -> Result<&str, String> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
        return Err(format!("{name:?} cannot name a file"));
    }
    Ok(name)
}

fn make_dir(dir: &Path) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// Writes `path` through a temporary file in the same directory: written,
/// fsynced, renamed over, and the directory fsynced so the rename lasts.
fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let dir = path
        .parent()
        .ok_or_else(|| format!("{}: no directory", path.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ringside-acme-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn issued(name: &str) -> Issued {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        Issued {
            chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    #[test]
    fn modes_round_trips_and_mismatch() {
        let top = scratch("state");
        let root = top.join("deep");
        let s = StateDir::open(&root).unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("accounts")), 0o700);
        let k1 = s.account_key("le").unwrap();
        assert_eq!(mode(&root.join("accounts/le.key")), 0o600);
        let k2 = s.account_key("le").unwrap();
        assert_eq!(k1.to_pkcs8_pem(), k2.to_pkcs8_pem());
        assert!(s.account_key("../x").is_err());

        let names = vec!["A.test".to_string(), "b.test".to_string()];
        assert!(s.load_cert("https://ca.test/dir", &names).is_none());
        let first = issued("a.test");
        s.save_cert("https://ca.test/dir", &names, &first).unwrap();
        let dirs: Vec<_> = fs::read_dir(root.join("certs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let dir = &dirs[0];
        assert!(
            dir.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("a.test."),
            "{dir:?}"
        );
        assert_eq!(mode(dir), 0o700);
        assert_eq!(mode(&dir.join("key.pem")), 0o600);
        let back = s.load_cert("https://ca.test/dir", &names).unwrap();
        assert_eq!(
            (back.chain_pem, back.key_pem),
            (first.chain_pem.clone(), first.key_pem.clone())
        );
        // A second save replaces both; no temporary file stays behind.
        let second = issued("a.test");
        s.save_cert("https://ca.test/dir", &names, &second).unwrap();
        assert_eq!(
            s.load_cert("https://ca.test/dir", &names).unwrap().key_pem,
            second.key_pem
        );
        // Another CA's (a staging directory's) is not this one's.
        assert!(s.load_cert("https://staging.test/dir", &names).is_none());
        let left: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        // The state of a crash between the two renames: not served.
        fs::write(dir.join("key.pem"), &first.key_pem).unwrap();
        assert!(s.load_cert("https://ca.test/dir", &names).is_none());
        fs::remove_file(dir.join("key.pem")).unwrap();
        assert!(s.load_cert("https://ca.test/dir", &names).is_none());
        // An unreadable key file is an error, not a new account.
        fs::write(root.join("accounts/bad.key"), "junk").unwrap();
        assert!(s.account_key("bad").is_err());
        fs::remove_dir_all(top).unwrap();
    }
}
