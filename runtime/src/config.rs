//! Validated runtime settings. These are the second of the two config layers
//! (see ARCHITECTURE.md): the binary's serde layer turns a TOML file into
//! these, and everything here already has real durations and sizes.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cidr::Cidr;
use crate::tls::TlsAcceptor;

/// Header fields a request may carry by default (nginx and lighttpd take
/// 100); [`Limits::max_headers`] may go higher.
pub const DEFAULT_MAX_HEADERS: usize = 100;

/// Size limits on one request, applied by whichever protocol reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, without its CRLF (414 beyond).
    pub max_request_line: usize,
    /// Largest head, including leading empty lines and the final empty line
    /// (431 beyond). Values above 65 535 are treated as 65 535.
    pub max_head: usize,
    /// Most header fields (431 beyond).
    pub max_headers: usize,
    /// Largest body a `Content-Length` may declare (413 beyond).
    pub max_body: u64,
    /// Connections one client address may hold open on each core; 0: any
    /// number. Past it a connection's first request gets
    /// `client_connections_status`, and it closes.
    pub max_client_connections: u32,
    /// 429 or 503.
    pub client_connections_status: u16,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: 8192,
            max_head: 16384,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body: 1024 * 1024,
            max_client_connections: 0,
            client_connections_status: 429,
        }
    }
}

/// What a connection needs to know, shared by all connections of a worker
/// and replaced with its handler on reload.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    pub limits: Limits,
    pub timeouts: Timeouts,
    /// Open client connections per worker at most.
    pub max_connections: usize,
    /// Per listener index: its TLS settings (see `ServerConfig::tls`).
    pub tls: Vec<Option<TlsAcceptor>>,
    /// Per listener index: whether it speaks HTTP/2 (see `ServerConfig::http2`).
    pub http2: Vec<bool>,
    pub h2: Http2,
    /// Per listener index: whether it serves HTTP/3 on the UDP port of
    /// the same number (see `ServerConfig::http3`).
    pub http3: Vec<bool>,
    pub h3: Http3,
    /// Per listener index: the sources it takes a PROXY protocol header
    /// from (see `ServerConfig::proxy_protocol`).
    pub proxy_protocol: Vec<Option<Vec<Cidr>>>,
    /// The TCP listeners' count: listeners from this index on are unix
    /// sockets (see `worker::Bound::add_unix`).
    pub tcp_listeners: usize,
}

impl ConnConfig {
    /// Whether listener `i` reads a PROXY protocol header first, and from
    /// which sources.
    pub fn proxy_trusted(&self, i: usize) -> Option<&[Cidr]> {
        self.proxy_protocol.get(i).and_then(|t| t.as_deref())
    }

    /// Whether listener `i` serves HTTP/3 as well (over QUIC, same port).
    pub fn http3_on(&self, i: usize) -> bool {
        self.http3.get(i).copied().unwrap_or(false) && crate::udp::served()
    }

    /// Whether listener `i` speaks HTTP/2 besides HTTP/1.1 (h2c by prior
    /// knowledge on a plain one, ALPN `h2` on a TLS one).
    pub fn http2_on(&self, i: usize) -> bool {
        self.http2.get(i).copied().unwrap_or(true)
    }
}

/// HTTP/3's and QUIC's own limits, on top of [`Limits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http3 {
    /// Request streams a client may have open at once (QUIC's
    /// initial_max_streams_bidi).
    pub max_concurrent_streams: u32,
    /// The flow-control window of each request body.
    pub stream_window: u32,
    /// The connection's flow-control window, all streams together.
    pub connection_window: u32,
    /// Response bytes a connection may hold unacknowledged or unsent, all
    /// streams together (quinn-proto's send window): enough for the path's
    /// bandwidth times its round trip, and no more, since quinn-proto walks
    /// what it holds to find each packet's bytes.
    pub send_window: u32,
    /// Handshakes a core holds at once before it answers new clients with
    /// Retry (address validation) instead: a flood of Initials from
    /// spoofed addresses then costs one stateless packet each.
    pub retry_above: u32,
    /// Every new client proves its address with Retry first.
    pub always_retry: bool,
    /// Handshakes a core holds at once at most; past it new ones are
    /// refused (CONNECTION_REFUSED) until one ends.
    pub max_handshakes: u32,
    /// 0-RTT: a resuming client's requests may come in its first flight.
    /// Early data can be replayed, so only safe methods are served from it
    /// (the rest wait for the handshake) and a proxied one says so with
    /// `Early-Data: 1` (RFC 8470).
    pub early_data: bool,
}

impl Default for Http3 {
    fn default() -> Self {
        Http3 {
            max_concurrent_streams: 100,
            stream_window: 1 << 20,
            connection_window: 16 << 20,
            send_window: 4 << 20,
            retry_above: 64,
            always_retry: false,
            max_handshakes: 1024,
            early_data: false,
        }
    }
}

/// HTTP/2's own limits, on top of [`Limits`] (which bound each request as
/// they do for HTTP/1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http2 {
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS);
    /// more are refused with REFUSED_STREAM.
    pub max_concurrent_streams: u32,
    /// The window each request body starts with (SETTINGS_INITIAL_WINDOW_SIZE).
    pub stream_window: u32,
    /// The connection's receive window, shared by its streams.
    pub connection_window: u32,
    /// Frames that make the server work but serve nothing (PING, SETTINGS,
    /// PRIORITY, RST_STREAM, empty DATA, WINDOW_UPDATE while nothing is
    /// sent) a connection may send beyond one per response served; past it
    /// the connection is closed with ENHANCE_YOUR_CALM.
    pub flood_budget: u32,
}

impl Default for Http2 {
    fn default() -> Self {
        Http2 {
            max_concurrent_streams: 128,
            stream_window: 256 * 1024,
            connection_window: 1024 * 1024,
            flood_budget: 1000,
        }
    }
}

/// How many workers to start: one per core by default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workers {
    /// One worker per CPU the process may run on, or fewer where its
    /// cgroup's CPU quota pays for fewer (see `worker::place`).
    Auto,
    Count(usize),
}

/// Where each worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Affinity {
    /// No pinning: the scheduler decides.
    Off,
    /// Pinned as [`Affinity::On`] where the CPUs were handed to this
    /// process (its affinity mask is narrower than the machine's online
    /// CPUs: `taskset`, systemd's `CPUAffinity=`, a Kubernetes static CPU
    /// manager's exclusive cores) and no cgroup CPU quota is worth fewer;
    /// otherwise not pinned, as the CPUs are shared with other work (see
    /// `worker::place`).
    Auto,
    /// Worker `i` is pinned to the `i`-th CPU the process may run on,
    /// whoever else runs there.
    On,
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
    /// (see `meter`); 0 turns it off.
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
    /// Per listener, by its index: whether it speaks HTTP/2 (no entry: yes).
    pub http2: Vec<bool>,
    pub h2: Http2,
    /// Per listener, by its index: whether its TLS also serves HTTP/3 over
    /// QUIC on the UDP port of the same number (no entry: no).
    pub http3: Vec<bool>,
    pub h3: Http3,
    /// Per listener, by its index: `Some(trusted)` when every connection
    /// starts with a PROXY protocol header (v1 or v2), taken only from a
    /// source in `trusted` (no entry: no header).
    pub proxy_protocol: Vec<Option<Vec<Cidr>>>,
}

impl ServerConfig {
    /// Whether listener `i` serves HTTP/3: asked for, and over TLS.
    pub fn http3_served(&self, i: usize) -> bool {
        self.http3.get(i).copied().unwrap_or(false) && self.tls.get(i).is_some_and(Option::is_some)
    }

    /// The settings each connection of this server section reads.
    pub fn conn_config(&self) -> ConnConfig {
        ConnConfig {
            limits: self.limits,
            timeouts: self.timeouts,
            max_connections: self.max_connections,
            tls: self.tls.clone(),
            http2: self.http2.clone(),
            h2: self.h2,
            http3: (0..self.listen.len())
                .map(|i| self.http3_served(i))
                .collect(),
            h3: self.h3,
            proxy_protocol: self.proxy_protocol.clone(),
            tcp_listeners: self.listen.len(),
        }
    }
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
            http2: vec![true],
            h2: Http2::default(),
            http3: vec![true],
            h3: Http3::default(),
            proxy_protocol: vec![None],
        }
    }
}
