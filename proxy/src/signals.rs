//! SIGTERM and SIGINT, taken synchronously by the main thread with sigwait.

use std::io;

pub struct TermSignals {
    set: libc::sigset_t,
}

// SAFETY: sigset_t is plain data.
unsafe impl Send for TermSignals {}

/// Blocks SIGTERM and SIGINT in this thread and in every thread it starts.
pub fn block_term_signals() -> io::Result<TermSignals> {
    // SAFETY: sigset manipulation on a local, then pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(TermSignals { set })
    }
}

impl TermSignals {
    /// Waits for one of the blocked signals and returns its name.
    pub fn wait(&self) -> &'static str {
        let mut sig: libc::c_int = 0;
        loop {
            // SAFETY: valid set and out pointer.
            let r = unsafe { libc::sigwait(&self.set, &mut sig) };
            if r == 0 {
                return if sig == libc::SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
            }
        }
    }
}
