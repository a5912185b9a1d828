//! A connected pair of `SOCK_SEQPACKET` unix sockets: each message
//! arrives whole, with its descriptors. The keeper's channel and a binary
//! upgrade's handover both run on one.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A connected pair; both ends close on exec (an end a child is to keep
/// is made inheritable in the child alone, between fork and exec).
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair into a local array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
