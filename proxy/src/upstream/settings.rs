//! Validated proxy settings, built by the config layer (`config/`) from
//! `[upstream.NAME]`, `[[route]]` entries that name an upstream, and
//! `[proxy]`; or from `--upstream HOST:PORT` flags.

use std::time::Duration;

/// All that the proxy needs, beside the static settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Sorted by name; routes refer to them by index.
    pub upstreams: Vec<UpstreamConfig>,
    /// Routes that go to an upstream. Static routes stay in `StaticConfig`.
    pub routes: Vec<ProxyRoute>,
    pub headers: ForwardHeaders,
    /// What a request path's encoded slashes (`%2F`) do: refused (400)
    /// unless passed on, for backends that need them (routing still
    /// decides on the path with them decoded).
    pub encoded_slash: ringside_http::EncodedSlash,
    /// What a path's segment parameters (`;x`) do: set aside for routing
    /// (and a dot segment with them refused), or the path refused.
    pub path_parameters: ringside_http::PathParameters,
    /// TRACE is served (forwarded, or reflected at `Max-Forwards: 0`);
    /// otherwise it is answered 405.
    pub allow_trace: bool,
}

/// `[upstream.NAME]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamConfig {
    pub name: String,
    /// What the servers speak, with the settings only that protocol has.
    pub protocol: UpstreamProtocol,
    pub servers: Vec<ServerSpec>,
    pub balance: Balance,
    /// How often DNS names among `servers` are resolved again.
    pub resolve_every: Duration,
    pub pool: PoolSettings,
    pub timeouts: UpstreamTimeouts,
    pub retry: RetryPolicy,
    pub passive: Option<PassiveHealth>,
}

/// An upstream's protocol, each with the settings only it has, so that a
/// setting of the other protocol cannot be given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamProtocol {
    Http(HttpSettings),
    FastCgi(FastCgiSettings),
}

/// What only an HTTP upstream has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpSettings {
    /// `tls = true`: connections to the servers speak TLS.
    pub tls: Option<UpstreamTls>,
    /// Active health checks, on when `health_path` is given.
    pub active: Option<ActiveHealth>,
    /// `send_proxy_protocol`: each connection starts with a PROXY protocol
    /// header naming the client of the request that opened it, so it
    /// carries that request alone (none is pooled).
    pub send_proxy: Option<ProxyVersion>,
    /// Which HTTP the servers speak: `protocol = "http"`, `"h2"` or `"auto"`.
    pub version: HttpVersion,
    /// How HTTP/2 connections to the servers are kept.
    pub h2: H2Settings,
}

/// The HTTP version spoken to an upstream's servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1, a connection per request in flight.
    #[default]
    H1,
    /// HTTP/2: over TLS by ALPN `h2`, else h2c with prior knowledge.
    H2,
    /// Over TLS, what the server picks of `h2, http/1.1` (h2c is never
    /// guessed: without TLS this is HTTP/1.1).
    Auto,
}

/// HTTP/2 to the servers: connections per server per core, their
/// keep-alive PING, and the receive window each stream gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct H2Settings {
    /// `h2_connections`: connections per server per core at most; a new
    /// one opens only when the others have no stream left.
    pub connections: u32,
    /// `h2_ping_interval`: an idle connection is PINGed this often, and
    /// closed when a PING goes unanswered that long.
    pub ping_interval: Duration,
    /// `h2_window`: what one stream may receive ahead of its client (the
    /// connection's window is 16 times it), so a slow client holds the
    /// upstream back instead of filling memory.
    pub stream_window: u32,
}

impl Default for H2Settings {
    fn default() -> Self {
        H2Settings {
            connections: 1,
            ping_interval: Duration::from_secs(30),
            stream_window: 256 * 1024,
        }
    }
}

/// The PROXY protocol header's version (HAProxy's spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyVersion {
    V1,
    V2,
}

/// TLS to an upstream's servers (`tls = true`, `tls_verify`, `tls_ca`,
/// `tls_sni`); `crate::tls::client_config` builds the rustls config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamTls {
    /// Check the server's certificate chain and name; `false` takes any
    /// certificate (handshake signatures are still checked).
    pub verify: bool,
    /// A PEM bundle of trusted roots (absolute); `None`: the system bundle.
    pub ca: Option<std::path::PathBuf>,
    /// The name sent in SNI and verified (a lower-case DNS name or an IP
    /// literal); `None`: each server's own host.
    pub sni: Option<String>,
}

/// One `servers` entry: an IP literal or a DNS name, with a port; or a
/// unix socket (`"unix:/run/php/php-fpm.sock"`), in which case `host` is
/// the path as written and `port` is 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    pub host: String,
    pub port: u16,
    /// Relative share of requests; at least 1.
    pub weight: u32,
    /// The socket path of a `unix:` server.
    pub unix: Option<std::path::PathBuf>,
}

/// What an upstream speaks, by name (the config's `protocol` key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Http,
    H2,
    Auto,
    FastCgi,
}

impl Protocol {
    /// Whether the servers speak HTTP (of any version).
    pub fn is_http(self) -> bool {
        self != Protocol::FastCgi
    }
}

/// FastCGI capacity and queueing (`protocol = "fastcgi"` only).
///
/// A php-fpm child serves one connection until it closes, so each kept
/// connection holds a child: the connections to a server, summed over all
/// cores, never exceed what it was seen to serve (`fastcgi::learn`).
/// Requests beyond it wait in ringside's own bounded queue per core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastCgiSettings {
    /// Connections per server across all cores at most; learning never
    /// goes above it. `None`: only what the server serves bounds them.
    pub max_conns: Option<u32>,
    /// How long a new connection may go unanswered before the server is
    /// taken to be at capacity; zero: connections are not asked, and
    /// `max_conns` (else 8) alone bounds them.
    pub capacity_probe: Duration,
    /// Requests that may wait for a connection, per core.
    pub queue_size: usize,
    /// How long one may wait before a 503.
    pub queue_timeout: Duration,
    /// FCGI_KEEP_CONN: keep connections between requests.
    pub keep_conn: bool,
}

impl Default for FastCgiSettings {
    fn default() -> Self {
        FastCgiSettings {
            max_conns: None,
            capacity_probe: Duration::from_millis(50),
            queue_size: 1024,
            queue_timeout: Duration::from_secs(10),
            keep_conn: true,
        }
    }
}

/// What a route to a FastCGI upstream runs: scripts beneath `root`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FastCgiRoute {
    /// The docroot scripts are found in (DOCUMENT_ROOT, SCRIPT_FILENAME).
    pub root: std::path::PathBuf,
    /// A path is a script when a segment ends with this (`/a.php/x` is the
    /// script `/a.php` with PATH_INFO `/x`).
    pub extension: String,
    /// Tried for a path ending in `/`.
    pub index: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Balance {
    /// Smooth weighted round robin (nginx's).
    RoundRobin,
    /// Fewest in-flight requests relative to weight; ties by round robin.
    LeastConn,
    /// Power of two random choices by in-flight count.
    P2c,
    /// Consistent hashing on a key of the request.
    Hash(HashKey),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HashKey {
    ClientIp,
    /// Header name, lower case.
    Header(String),
    /// Cookie name.
    Cookie(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    /// Idle connections kept per core per server.
    pub max_idle: usize,
    /// An idle connection unused this long is closed.
    pub idle_timeout: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpstreamTimeouts {
    pub connect: Duration,
    /// Longest wait for one write to the upstream.
    pub send: Duration,
    /// From the request's end to the response head.
    pub response_head: Duration,
    /// Longest wait for one read of the response body.
    pub body_idle: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Further tries after the first (0 = no retry).
    pub count: u32,
    pub on: RetryOn,
}

/// Which failures are retried on another server. A retry only ever happens
/// when the client has been sent nothing yet, and, unless the request never
/// reached a server (`connect`), only for an idempotent request without a
/// body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryOn {
    /// Connection refused, unreachable, or connect timeout.
    pub connect: bool,
    /// Timed out sending or waiting for the response head.
    pub timeout: bool,
    /// A malformed response head, or the server closed before one.
    pub invalid_response: bool,
    pub http_502: bool,
    pub http_503: bool,
    pub http_504: bool,
}

impl RetryOn {
    /// Whether an answer with `status` goes to another server.
    pub fn status(&self, status: u16) -> bool {
        match status {
            502 => self.http_502,
            503 => self.http_503,
            504 => self.http_504,
            _ => false,
        }
    }
}

/// `max_fails` failures within `window` mark a server down for `cooldown`
/// (per core, as nginx without a shared zone). An upstream of one server
/// is never marked down, as in nginx.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassiveHealth {
    pub max_fails: u32,
    pub window: Duration,
    pub cooldown: Duration,
}

/// An HTTP GET of `path` every `interval`, from one thread for the whole
/// process, so probe traffic does not grow with the number of cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveHealth {
    pub path: String,
    pub interval: Duration,
    pub timeout: Duration,
    /// The status a healthy server answers with.
    pub expect_status: u16,
    /// Consecutive results needed to flip a server's state.
    pub fall: u32,
    pub rise: u32,
}

/// A `[[route]]` that goes to an upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyRoute {
    /// Lower-case host names this route serves (`example.com`,
    /// `*.example.com`); empty = any host. Routes naming the request's host
    /// are chosen over those naming none.
    pub hosts: Vec<String>,
    pub prefix: String,
    /// Index into `ProxyConfig::upstreams`.
    pub upstream: usize,
    /// What replaces `prefix` in the path sent upstream; `None` keeps the
    /// path as it is. `strip_prefix = true` is `Some("/")`.
    pub replace_prefix: Option<String>,
    pub host: HostHeader,
    /// Set exactly when the upstream is FastCGI.
    pub fastcgi: Option<FastCgiRoute>,
    /// Which path goes upstream.
    pub forward_path: ForwardPath,
    /// Upgrade protocols passed on besides `websocket` (lower case); never
    /// `h2c`.
    pub upgrade: Vec<String>,
    /// `grpc = true`: every request is gRPC (else only those whose
    /// content-type says so), answered in gRPC's terms when it fails.
    pub grpc: bool,
    /// `cache = "NAME"`: index into `Config::caches` of the cache that
    /// stores this route's responses; `None` stores nothing.
    pub cache: Option<usize>,
}

/// The path a route sends upstream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForwardPath {
    /// The normalized path the route was chosen on: the backend cannot see
    /// another resource than the router decided on.
    #[default]
    Normalized,
    /// The path as the client spelled it, for a backend that needs its
    /// bytes; the backend must then decide on it as ringside did.
    Raw,
}

/// The Host header sent upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostHeader {
    /// The client's Host, as nginx's `proxy_set_header Host $host`.
    Pass,
    /// The chosen server's `host:port`.
    Upstream,
    Set(String),
}

/// `[proxy]`: headers added to every proxied request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardHeaders {
    /// X-Forwarded-For, -Proto and -Host.
    pub x_forwarded: bool,
    /// RFC 7239 Forwarded.
    pub forwarded: bool,
    /// The clients whose own `Forwarded` field is passed on (appended to
    /// with `forwarded`); anyone else's is removed, since an upstream
    /// could not tell it from one the proxy vouched for.
    pub trusted_forwarders: Vec<ringside_runtime::cidr::Cidr>,
    /// The pseudonym in Via (`1.1 ringside`); `None` adds no Via.
    pub via: Option<String>,
    /// Request header names with `_`.
    pub underscores: Underscores,
}

/// What becomes of a request header whose name has `_` (nginx's
/// `underscores_in_headers`, Envoy's `headers_with_underscores_action`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Underscores {
    /// Not passed on (the default): a backend that reads `_` as `-` would
    /// take `X_Forwarded_For` for the proxy's own field.
    #[default]
    Drop,
    /// Passed on, but for look-alikes of framing and hop-by-hop fields.
    Pass,
    /// The request is refused with 400.
    Reject,
}

impl Default for ForwardHeaders {
    fn default() -> Self {
        ForwardHeaders {
            x_forwarded: true,
            forwarded: false,
            trusted_forwarders: Vec::new(),
            via: Some("ringside".into()),
            underscores: Underscores::Drop,
        }
    }
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            // Enough for every connection a busy core has in flight: with
            // 64 (nginx's usual keepalive), 500 clients on 2 workers made
            // the pool close and reopen a connection per request beyond
            // it, 31k req/s against 68k with 1024. Idle ones still go after
            // idle_timeout.
            max_idle: 1024,
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl Default for UpstreamTimeouts {
    fn default() -> Self {
        UpstreamTimeouts {
            connect: Duration::from_secs(5),
            send: Duration::from_secs(60),
            response_head: Duration::from_secs(60),
            body_idle: Duration::from_secs(60),
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            count: 1,
            on: RetryOn {
                connect: true,
                timeout: false,
                invalid_response: false,
                http_502: false,
                http_503: false,
                http_504: false,
            },
        }
    }
}

impl UpstreamConfig {
    /// An upstream with default settings over `servers` (the `--upstream`
    /// flags use this).
    pub fn new(name: &str, servers: Vec<ServerSpec>) -> UpstreamConfig {
        UpstreamConfig {
            name: name.to_owned(),
            protocol: UpstreamProtocol::Http(HttpSettings::default()),
            servers,
            balance: Balance::RoundRobin,
            resolve_every: Duration::from_secs(30),
            pool: PoolSettings::default(),
            timeouts: UpstreamTimeouts::default(),
            retry: RetryPolicy::default(),
            passive: Some(PassiveHealth {
                max_fails: 1,
                window: Duration::from_secs(10),
                cooldown: Duration::from_secs(10),
            }),
        }
    }

    /// The protocol's name.
    pub fn protocol_kind(&self) -> Protocol {
        match &self.protocol {
            UpstreamProtocol::Http(h) => match h.version {
                HttpVersion::H1 => Protocol::Http,
                HttpVersion::H2 => Protocol::H2,
                HttpVersion::Auto => Protocol::Auto,
            },
            UpstreamProtocol::FastCgi(_) => Protocol::FastCgi,
        }
    }

    pub fn http(&self) -> Option<&HttpSettings> {
        match &self.protocol {
            UpstreamProtocol::Http(h) => Some(h),
            UpstreamProtocol::FastCgi(_) => None,
        }
    }

    pub fn fastcgi(&self) -> Option<&FastCgiSettings> {
        match &self.protocol {
            UpstreamProtocol::FastCgi(f) => Some(f),
            UpstreamProtocol::Http(_) => None,
        }
    }

    /// An FastCGI upstream's own settings, to change in tests.
    #[cfg(test)]
    pub fn fastcgi_mut(&mut self) -> &mut FastCgiSettings {
        match &mut self.protocol {
            UpstreamProtocol::FastCgi(f) => f,
            UpstreamProtocol::Http(_) => panic!("not a FastCGI upstream"),
        }
    }

    /// An HTTP upstream's own settings, to change in tests.
    #[cfg(test)]
    pub fn http_mut(&mut self) -> &mut HttpSettings {
        match &mut self.protocol {
            UpstreamProtocol::Http(h) => h,
            UpstreamProtocol::FastCgi(_) => panic!("not an HTTP upstream"),
        }
    }

    /// TLS to the servers (HTTP upstreams with `tls = true`).
    pub fn tls(&self) -> Option<&UpstreamTls> {
        self.http().and_then(|h| h.tls.as_ref())
    }

    pub fn send_proxy(&self) -> Option<ProxyVersion> {
        self.http().and_then(|h| h.send_proxy)
    }

    /// Active health checks (HTTP upstreams with `health_path`).
    pub fn active(&self) -> Option<&ActiveHealth> {
        self.http().and_then(|h| h.active.as_ref())
    }

    /// How long a request may wait for a connection to a server (FastCGI's
    /// queue); HTTP requests never wait.
    pub fn queue_timeout(&self) -> Duration {
        self.fastcgi().map_or(Duration::ZERO, |f| f.queue_timeout)
    }
}
