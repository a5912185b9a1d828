//! CONTRACT SKELETON.
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
    pub fn open(_root: &Path) -> Result<StateDir, String> {
        unimplemented!()
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The account key of `issuer`, made and saved on first use.
    pub fn account_key(&self, _issuer: &str) -> Result<AccountKey, String> {
        unimplemented!()
    }
    /// The stored certificate whose first name is `names[0]`, if any.
    pub fn load_cert(&self, _names: &[String]) -> Option<Issued> {
        unimplemented!()
    }
    pub fn save_cert(&self, _names: &[String], _issued: &Issued) -> Result<(), String> {
        unimplemented!()
    }
}
