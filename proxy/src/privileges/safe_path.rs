//! Whether root may open a path on behalf of an unprivileged user without
//! being led elsewhere by that user.
//!
//! The keeper opens, as root, files that the unprivileged server names by
//! index. If the user could replace an entry on the way to such a file (a
//! directory it can write), it could plant a symlink or a hard link there
//! and have root append to /etc/passwd or read /etc/shadow (nginx's
//! CVE-2016-1247 is this with logs). So a path is kept for the keeper only
//! when no directory on it, as written or with its symlinks resolved, lets
//! the user replace the next entry.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Whether no directory on `path` (and on where its symlinks lead now)
/// lets `uid`/`gid` replace the entry below it.
pub fn safe_for(path: &Path, uid: u32, gid: u32) -> bool {
    if !path.is_absolute() {
        return false;
    }
    let mut chains = vec![path.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(path) {
        chains.push(real);
    }
    chains.iter().all(|p| chain_safe(p, uid, gid))
}

/// Each directory of `path` from `/` down, with the entry below it.
fn chain_safe(path: &Path, uid: u32, gid: u32) -> bool {
    let mut dir = PathBuf::from("/");
    for c in path.components() {
        let Component::Normal(name) = c else {
            if matches!(c, Component::ParentDir) {
                return false;
            }
            continue;
        };
        let below = dir.join(name);
        let Ok(m) = std::fs::symlink_metadata(&dir) else {
            return false;
        };
        if !dir_safe(&m, &below, uid, gid) {
            return false;
        }
        dir = below;
    }
    true
}

/// A directory `m` is safe when the user cannot write it; or when it is
/// sticky (as /tmp) and the entry below exists and is not the user's, so
/// the user cannot remove or replace it.
fn dir_safe(m: &std::fs::Metadata, below: &Path, uid: u32, gid: u32) -> bool {
    if uid == 0 {
        return true;
    }
    let mode = m.mode();
    let writable = m.uid() == uid || mode & 0o002 != 0 || (mode & 0o020 != 0 && m.gid() == gid);
    if !writable {
        return true;
    }
    let sticky = mode & 0o1000 != 0;
    sticky && m.uid() != uid && std::fs::symlink_metadata(below).is_ok_and(|b| b.uid() != uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn directories_the_user_can_write_are_refused() {
        // The test runs as root (the test command does), so it can make
        // directories owned by another uid.
        if unsafe { libc::geteuid() } != 0 {
            panic!("this test needs root, as the test command runs it");
        }
        let base = std::env::temp_dir().join(format!("ringside-safe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/dir")).unwrap();
        std::fs::create_dir_all(base.join("user")).unwrap();
        for d in ["", "root", "root/dir"] {
            std::fs::set_permissions(base.join(d), PermissionsExt::from_mode(0o755)).unwrap();
        }
        std::fs::write(base.join("root/dir/f"), b"x").unwrap();
        let user = 65534;
        std::os::unix::fs::chown(base.join("user"), Some(user), Some(user)).unwrap();
        // /tmp is sticky and world-writable; the test's directory is root's.
        assert!(safe_for(&base.join("root/dir/f"), user, user));
        assert!(safe_for(&base.join("root/dir/missing"), user, user));
        assert!(!safe_for(&base.join("user/f"), user, user));
        // World-writable without the sticky bit.
        std::fs::set_permissions(base.join("root"), PermissionsExt::from_mode(0o777)).unwrap();
        assert!(!safe_for(&base.join("root/dir/f"), user, user));
        std::fs::set_permissions(base.join("root"), PermissionsExt::from_mode(0o755)).unwrap();
        // A symlink in a safe place that leads into the user's directory.
        std::os::unix::fs::symlink(base.join("user"), base.join("root/dir/link")).unwrap();
        assert!(!safe_for(&base.join("root/dir/link/f"), user, user));
        assert!(!safe_for(Path::new("relative/f"), user, user));
        assert!(safe_for(&base.join("user/f"), 0, 0));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
