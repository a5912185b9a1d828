//! ringside-runtime: the engine. One single-threaded runtime per core, each
//! with its own `SO_REUSEPORT` listeners, buffers, connection table and
//! counters. It knows no protocol: each accepted connection goes, as a
//! [`link::Link`], to the protocol driver the server was started with
//! ([`link::Driver`]; ringside-http's HTTP/1 today).
//!
//! The rest of the workspace sees the small API of this crate ([`net`],
//! [`task`], [`fs`], [`worker`], [`link`]) and never names monoio or glommio.
//! Which engine runs a worker is chosen at start from those built in (see
//! [`backend`]). TLS, where a listener or an upstream has it, lives inside
//! the stream ([`tls`]), so the same API serves both.
//!
//! # Backends
//! - `io-uring` (Linux): monoio's io_uring driver.
//! - `epoll` (Linux): monoio's legacy driver, which is mio on epoll.
//! - `kqueue` (BSD, macOS): monoio's legacy driver, which is mio on kqueue.
//! - `devpoll` (illumos, Solaris): monoio's legacy driver, which is mio; mio
//!   backs it with event ports on Solaris and epoll on illumos. There is no
//!   `/dev/poll` code of our own: the name keeps the seeds' wording.
//! - `glommio` (Linux): glommio's io_uring executor.

#[cfg(all(feature = "io-uring", not(target_os = "linux")))]
compile_error!("feature `io-uring` needs Linux; on BSD or macOS build with `--no-default-features --features kqueue`, on illumos or Solaris with `--features devpoll`");
#[cfg(all(feature = "epoll", not(target_os = "linux")))]
compile_error!("feature `epoll` needs Linux; on BSD or macOS build with `--no-default-features --features kqueue`, on illumos or Solaris with `--features devpoll`");
#[cfg(all(feature = "glommio", not(target_os = "linux")))]
compile_error!("feature `glommio` needs Linux (glommio runs only on io_uring)");
#[cfg(all(
    feature = "kqueue",
    not(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "dragonfly"
    ))
))]
compile_error!(
    "feature `kqueue` needs a BSD or macOS; on Linux use the default features (io-uring, epoll)"
);
#[cfg(all(
    feature = "devpoll",
    not(any(target_os = "illumos", target_os = "solaris"))
))]
compile_error!("feature `devpoll` needs illumos or Solaris; on Linux use the default features (io-uring, epoll)");
#[cfg(not(any(rt_monoio, rt_glommio)))]
compile_error!(
    "no I/O backend: enable at least one of the features io-uring, epoll, kqueue, devpoll, glommio"
);

pub mod backend;
pub mod capacity;
pub mod cgroup;
pub mod cidr;
pub mod clock;
pub mod coalesce;
pub mod config;
pub mod conns;
pub mod context;
pub mod doorbell;
pub mod fs;
pub mod link;
mod meter;
pub mod net;
pub mod recv_multi;
pub mod reload;
pub mod shutdown;
pub mod splice;
pub mod stats;
pub mod task;
pub mod tls;
pub mod udp;
pub mod udp_group;
pub mod worker;

pub use backend::{backends_built, Backend};
