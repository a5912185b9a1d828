//! Opening beneath the docroot. `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)` lets the kernel refuse any escape, by `..` or by a
//! symlink, atomically; kernels without it (before 5.6) get `O_NOFOLLOW` on
//! every component instead.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

pub fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(root.as_os_str().as_encoded_bytes())
        .map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: c is a valid C string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn open_beneath(root: &OwnedFd, rel: &str) -> io::Result<File> {
    let rel = if rel.is_empty() {
        "."
    } else {
        rel.trim_end_matches('/')
    };
    let rel = if rel.is_empty() { "." } else { rel };
    let c = CString::new(rel).map_err(|_| io::ErrorKind::InvalidInput)?;
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
    const RESOLVE_BENEATH: u64 = 0x08;
    let how = OpenHow {
        flags: (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK) as u64,
        mode: 0,
        resolve: RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: valid dirfd, C string and open_how struct of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd >= 0 {
        // SAFETY: fd was just opened and is ours.
        return Ok(unsafe { File::from_raw_fd(fd as i32) });
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::ENOSYS) {
        return Err(err);
    }
    open_nofollow_each(root, rel)
}

/// Walks component by component, refusing symlinks, for kernels without openat2.
fn open_nofollow_each(root: &OwnedFd, rel: &str) -> io::Result<File> {
    let mut dir: Option<OwnedFd> = None;
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() {
        let c = CString::new(".").expect("no NUL");
        // SAFETY: valid dirfd and C string.
        let fd = unsafe {
            libc::openat(
                root.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_DIRECTORY,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is ours.
        return Ok(unsafe { File::from_raw_fd(fd) });
    }
    for (i, part) in parts.iter().enumerate() {
        if *part == ".." {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        let last = i + 1 == parts.len();
        let c = CString::new(*part).map_err(|_| io::ErrorKind::InvalidInput)?;
        let flags = libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | if last {
                libc::O_RDONLY | libc::O_NONBLOCK
            } else {
                libc::O_PATH | libc::O_DIRECTORY
            };
        let at = dir.as_ref().map_or(root.as_raw_fd(), |d| d.as_raw_fd());
        // SAFETY: valid dirfd and C string.
        let fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is ours.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        if last {
            return Ok(File::from(owned));
        }
        dir = Some(owned);
    }
    unreachable!("parts is not empty")
}
