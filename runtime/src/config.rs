//! Validated runtime settings. These are the second of the two config layers
//! (DESIGN.md §7): the binary's serde layer turns a TOML file into these, and
//! everything here already has real durations and sizes.

use std::net::SocketAddr;
use std::time::Duration;

use crate::http::Limits;
use crate::tls::TlsAcceptor;

/// How many workers to start: one per core by default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workers {
    /// One worker per CPU the process may run on.
    Auto,
    Count(usize),
}

/// Where each worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Affinity {
    /// No pinning: the scheduler decides.
    Off,
    /// Worker `i` is pinned to the `i`-th CPU the process may run on.
    Auto,
    /// Worker `i` is pinned to `cpus[i % cpus.len()]`.
    Cpus(Vec<usize>),
}

/// Which I/O backend to run, among those built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// io_uring when the kernel allows it, otherwise the readiness backend.
    Auto,
    IoUring,
    Epoll,
    Kqueue,
    Devpoll,
    Glommio,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    pub workers: Workers,
    pub affinity: Affinity,
    pub backend: BackendChoice,
    /// Submission queue entries per io_uring ring.
    pub ring_entries: u32,
    /// io_uring: with several requests in progress, park for a batch of
    /// completions up to this long (zero: off; 100 us by default). See
    /// `coalesce`.
    pub coalesce_wait: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            workers: Workers::Auto,
            affinity: Affinity::Auto,
            backend: BackendChoice::Auto,
            ring_entries: 1024,
            coalesce_wait: Duration::from_micros(100),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From the first byte of a request (or the connection's start) to its
    /// complete head; slowloris ends here with 408.
    pub header_read: Duration,
    /// How long an idle keep-alive connection is kept.
    pub keepalive_idle: Duration,
    /// Longest wait for one read of a request body.
    pub body_read: Duration,
    /// Longest wait for one write to the client.
    pub send: Duration,
    /// On SIGTERM/SIGINT, how long in-flight requests may still run.
    pub shutdown_grace: Duration,
    /// Bytes per second a request body or a response must average while
    /// the server waits on the client, beyond `body_read`/`send` of grace
    /// (see `http::meter`); 0 turns it off.
    pub min_rate: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header_read: Duration::from_secs(10),
            keepalive_idle: Duration::from_secs(75),
            body_read: Duration::from_secs(60),
            send: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(30),
            // Apache mod_reqtimeout's default MinRate.
            min_rate: 500,
        }
    }
}

/// The HTTP listener side of the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub listen: Vec<SocketAddr>,
    pub backlog: i32,
    pub limits: Limits,
    pub timeouts: Timeouts,
    /// Client connections one worker keeps open at most; at the cap it
    /// stops accepting (new ones wait in the listen queue) until one closes.
    pub max_connections: usize,
    /// Per listener, by its index in `listen`: its TLS settings, or `None`
    /// (or no entry) for plain HTTP.
    pub tls: Vec<Option<TlsAcceptor>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 8080))],
            backlog: 4096,
            limits: Limits::default(),
            timeouts: Timeouts::default(),
            max_connections: 16384,
            tls: Vec::new(),
        }
    }
}
