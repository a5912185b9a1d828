//! The process's signals, taken synchronously by the main thread with
//! sigwait: SIGTERM and SIGINT drain, SIGHUP reloads the config, SIGUSR1
//! reopens the access log, SIGUSR2 upgrades the binary. Workers inherit the mask, so only the main
//! thread ever takes them.

use std::io;

pub struct Signals {
    set: libc::sigset_t,
}

// SAFETY: sigset_t is plain data.
unsafe impl Send for Signals {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Term,
    Int,
    Hup,
    Usr1,
    Usr2,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Term => "SIGTERM",
            Signal::Int => "SIGINT",
            Signal::Hup => "SIGHUP",
            Signal::Usr1 => "SIGUSR1",
            Signal::Usr2 => "SIGUSR2",
        }
    }
}

/// Blocks the signals in this thread and in every thread it starts.
pub fn block() -> io::Result<Signals> {
    // SAFETY: sigset manipulation on a local, then pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGUSR1,
            libc::SIGUSR2,
        ] {
            libc::sigaddset(&mut set, sig);
        }
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(Signals { set })
    }
}

impl Signals {
    /// Waits for one of the blocked signals.
    pub fn wait(&self) -> Signal {
        let mut sig: libc::c_int = 0;
        loop {
            // SAFETY: valid set and out pointer.
            let r = unsafe { libc::sigwait(&self.set, &mut sig) };
            if r == 0 {
                return match sig {
                    libc::SIGINT => Signal::Int,
                    libc::SIGHUP => Signal::Hup,
                    libc::SIGUSR1 => Signal::Usr1,
                    libc::SIGUSR2 => Signal::Usr2,
                    _ => Signal::Term,
                };
            }
        }
    }
}
