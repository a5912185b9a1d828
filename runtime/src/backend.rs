//! Which I/O engine runs a worker. A build may hold several; the config's
//! `backend` picks one of them at start, and `auto` probes the kernel so that
//! a refused io_uring (`kernel.io_uring_disabled`, Docker's default seccomp
//! profile) falls back to the readiness backend with a log line instead of a
//! hang or a panic.

use std::cell::Cell;
use std::fmt;

use crate::config::BackendChoice;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    IoUring,
    Epoll,
    Kqueue,
    Devpoll,
    Glommio,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::IoUring => "io-uring",
            Backend::Epoll => "epoll",
            Backend::Kqueue => "kqueue",
            Backend::Devpoll => "devpoll",
            Backend::Glommio => "glommio",
        }
    }

    pub fn from_name(name: &str) -> Option<Backend> {
        ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Whether this build holds the backend.
    pub fn is_built(self) -> bool {
        match self {
            Backend::IoUring => cfg!(feature = "io-uring"),
            Backend::Epoll => cfg!(feature = "epoll"),
            Backend::Kqueue => cfg!(feature = "kqueue"),
            Backend::Devpoll => cfg!(feature = "devpoll"),
            Backend::Glommio => cfg!(feature = "glommio"),
        }
    }

    /// Whether the backend runs on monoio (all but glommio).
    #[cfg_attr(not(all(rt_monoio, rt_glommio)), allow(dead_code))] // used only when both engines are built
    pub(crate) fn is_monoio(self) -> bool {
        !matches!(self, Backend::Glommio)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const ALL: [Backend; 5] = [
    Backend::IoUring,
    Backend::Epoll,
    Backend::Kqueue,
    Backend::Devpoll,
    Backend::Glommio,
];

/// The names of the backends this binary was built with, in preference order.
pub fn backends_built() -> &'static [&'static str] {
    const NAMES: &[&str] = &[
        #[cfg(feature = "io-uring")]
        "io-uring",
        #[cfg(feature = "epoll")]
        "epoll",
        #[cfg(feature = "kqueue")]
        "kqueue",
        #[cfg(feature = "devpoll")]
        "devpoll",
        #[cfg(feature = "glommio")]
        "glommio",
    ];
    NAMES
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("backend `{0}` is not built into this binary (built: {built})", built = backends_built().join(", "))]
    NotBuilt(Backend),
    #[error("backend `{backend}` needs io_uring, which this kernel refuses: {cause}{hint}", hint = uring_hint())]
    UringRefused {
        backend: Backend,
        cause: std::io::Error,
    },
    #[error("no usable backend: io_uring is refused ({0}) and no readiness backend (epoll, kqueue, devpoll) is built in")]
    NoneUsable(std::io::Error),
}

fn uring_hint() -> &'static str {
    "; check /proc/sys/kernel/io_uring_disabled and the seccomp profile, or run with backend = \"epoll\""
}

/// Turns the config's choice into the backend to run, probing io_uring when
/// the choice depends on it.
pub fn resolve(choice: BackendChoice) -> Result<Backend, BackendError> {
    let wanted = match choice {
        BackendChoice::Auto => return resolve_auto(),
        BackendChoice::IoUring => Backend::IoUring,
        BackendChoice::Epoll => Backend::Epoll,
        BackendChoice::Kqueue => Backend::Kqueue,
        BackendChoice::Devpoll => Backend::Devpoll,
        BackendChoice::Glommio => Backend::Glommio,
    };
    if !wanted.is_built() {
        return Err(BackendError::NotBuilt(wanted));
    }
    if matches!(wanted, Backend::IoUring | Backend::Glommio) {
        probe_uring().map_err(|cause| BackendError::UringRefused {
            backend: wanted,
            cause,
        })?;
    }
    Ok(wanted)
}

fn resolve_auto() -> Result<Backend, BackendError> {
    let readiness = [Backend::Epoll, Backend::Kqueue, Backend::Devpoll]
        .into_iter()
        .find(|b| b.is_built());
    let uring = [Backend::IoUring, Backend::Glommio]
        .into_iter()
        .find(|b| b.is_built());
    let Some(uring) = uring else {
        // Built without io_uring: the readiness backend is all there is.
        return readiness.ok_or(BackendError::NoneUsable(std::io::Error::other(
            "no backend built",
        )));
    };
    match probe_uring() {
        Ok(()) => Ok(uring),
        Err(cause) => match readiness {
            Some(fallback) => {
                tracing::warn!(%cause, "io_uring is refused by this kernel; falling back to {fallback}");
                Ok(fallback)
            }
            None => Err(BackendError::NoneUsable(cause)),
        },
    }
}

/// Sets up and tears down a tiny ring: the same syscall a worker would make,
/// so a seccomp filter or `io_uring_disabled` answers here, once, with errno.
#[cfg(target_os = "linux")]
pub fn probe_uring() -> std::io::Result<()> {
    let mut params: [u8; 120] = [0; 120]; // struct io_uring_params
                                          // SAFETY: io_uring_setup only writes within the params struct we pass.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4u32, params.as_mut_ptr()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is the ring we just created and own.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn probe_uring() -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

thread_local! {
    static CURRENT: Cell<Option<Backend>> = const { Cell::new(None) };
}

/// The backend of the worker this thread runs, set when the worker starts.
pub fn current() -> Backend {
    CURRENT
        .with(Cell::get)
        .expect("ringside-runtime API used outside a worker")
}

pub(crate) fn set_current(b: Backend) {
    CURRENT.with(|c| c.set(Some(b)));
}

/// Expands to a match on the engine of the current thread, with one arm per
/// engine built in. Keeps the engine `cfg`s in this one place.
macro_rules! on_engine {
    (monoio => $m:expr, glommio => $g:expr $(,)?) => {{
        #[cfg(all(rt_monoio, rt_glommio))]
        {
            if $crate::backend::current().is_monoio() {
                $m
            } else {
                $g
            }
        }
        #[cfg(all(rt_monoio, not(rt_glommio)))]
        {
            $m
        }
        #[cfg(all(rt_glommio, not(rt_monoio)))]
        {
            $g
        }
    }};
}
pub(crate) use on_engine;
