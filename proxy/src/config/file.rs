//! The file layer, the first of the two (see `super`): what a TOML config
//! file may say, as serde reads it, before any validation.
//!
//! Every table refuses unknown keys (`deny_unknown_fields`), every table and
//! key is optional, and every value is wrapped in `toml::Spanned` so that the
//! validating layer (`validate.rs`) can point at the line and column of the
//! value it refuses. A missing key is `None` and takes the runtime's default
//! there, so defaults live in one place: `ringside_runtime::config`.
//!
//! Values that may be written two ways (`workers = "auto" | 8`, sizes as
//! `8192 | "8k"`, durations as `10 | "10s"`) are kept as written here; the
//! validating layer parses them. Wrong types are refused here, with messages
//! that say what was expected (serde's own are reworded in `wording.rs`).
//! Tables are read from tables only (`tables_only!`): serde's derive would
//! take a list as a tuple of the fields.
//!
//! The proxy's sections sit beside the static ones: `[proxy]` (headers added
//! to every proxied request), `[upstream.NAME]` (a `BTreeMap` keyed by the
//! name, so upstreams come out sorted, each name with its own span), and the
//! proxy-only keys of `[[route]]` (with `extension` and `index` for routes
//! to a FastCGI upstream). toml's error key paths then read
//! `[upstream.NAME] key`, which `error.rs` renders.
//!
//! TLS adds three things (validated in `tls.rs`): a `[server] listen` entry
//! may be a table `{ addr = "HOST:PORT", tls = { cert = "PATH", key =
//! "PATH" } }` beside the plain `"HOST:PORT"` ([`ListenValue`]); a `[tls]`
//! section of process-wide settings ([`TlsSection`]); and `[[vhost]]`
//! entries naming hosts with their certificate, redirect and HSTS
//! ([`VhostSection`]). `[upstream.NAME]` gains `tls`, `tls_verify`,
//! `tls_ca` and `tls_sni`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::headers::{HeadersSection, ServerTokensValue};
pub use super::real_ip::RealIpSection;
use super::rewrite::RewriteSection;
use super::size::{DURATION_EXPECTED, SIZE_EXPECTED};

/// A whole config file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileConfig {
    pub runtime: RuntimeSection,
    pub server: ServerSection,
    pub limits: LimitsSection,
    pub timeouts: TimeoutsSection,
    pub http2: Http2Section,
    pub http3: Http3Section,
    #[serde(rename = "static")]
    pub static_files: StaticSection,
    pub proxy: ProxySection,
    /// `[upstream.NAME]`, sorted by name.
    pub upstream: BTreeMap<Spanned<String>, Spanned<UpstreamSection>>,
    #[serde(rename = "route")]
    pub routes: Vec<Spanned<RouteSection>>,
    pub admin: AdminSection,
    pub access_log: AccessLogSection,
    pub tls: TlsSection,
    #[serde(rename = "vhost")]
    pub vhosts: Vec<Spanned<VhostSection>>,
    #[serde(rename = "rate_limit")]
    pub rate_limits: Vec<Spanned<RateLimitSection>>,
    pub compression: CompressionSection,
    /// `[cache.NAME]`, sorted by name (`cache.rs`).
    pub cache: BTreeMap<Spanned<String>, Spanned<CacheSection>>,
    /// `[[rewrite]]`: the server's rewrite rules (`rewrite.rs`).
    #[serde(rename = "rewrite")]
    pub rewrites: Vec<Spanned<RewriteSection>>,
    /// `[real_ip]` (`real_ip.rs`).
    pub real_ip: Option<Spanned<RealIpSection>>,
    /// `[acme.NAME]`: certificate issuers (`acme.rs`).
    pub acme: BTreeMap<Spanned<String>, Spanned<AcmeSection>>,
}

/// `[acme.NAME]`: an ACME CA certificates are ordered from (`acme.rs`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct AcmeSection {
    pub directory: Option<Spanned<String>>,
    pub contact: Option<Spanned<Vec<Spanned<String>>>>,
    pub ca: Option<Spanned<String>>,
    pub eab: Option<Spanned<EabSection>>,
    pub key_type: Option<Spanned<String>>,
    pub challenge: Option<Spanned<String>>,
    pub profile: Option<Spanned<String>>,
    pub state: Option<Spanned<String>>,
    pub retry_min: Option<Spanned<DurationValue>>,
}

/// `eab = { kid = "...", hmac_key = "..." }` (RFC 8555 §7.3.4).
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct EabSection {
    pub kid: Spanned<String>,
    pub hmac_key: Spanned<String>,
}

/// `[cache.NAME]`: a response cache that routes take by name (`cache.rs`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct CacheSection {
    pub memory: Option<Spanned<SizeValue>>,
    pub max_object: Option<Spanned<SizeValue>>,
    /// The disk tier's directory; relative to the config file's directory.
    pub disk: Option<Spanned<String>>,
    pub disk_size: Option<Spanned<SizeValue>>,
    pub lock_timeout: Option<Spanned<DurationValue>>,
    pub stale_while_revalidate_max: Option<Spanned<DurationValue>>,
    pub stale_if_error_max: Option<Spanned<DurationValue>>,
    pub heuristic_percent: Option<Spanned<i64>>,
    pub heuristic_max: Option<Spanned<DurationValue>>,
    pub hit_for_miss: Option<Spanned<DurationValue>>,
    pub ignore_query: Option<Spanned<Vec<Spanned<String>>>>,
    pub key_headers: Option<Spanned<Vec<Spanned<String>>>>,
    pub key_cookies: Option<Spanned<Vec<Spanned<String>>>>,
    pub purge_from: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[compression]`: what is compressed on the fly (`compress.rs`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct CompressionSection {
    pub enabled: Option<Spanned<bool>>,
    pub types: Option<Spanned<Vec<Spanned<String>>>>,
    pub min_size: Option<Spanned<SizeValue>>,
    pub levels: Option<Spanned<LevelsSection>>,
}

/// `{ gzip = 6, br = 5, zstd = 3 }`: a level per coding.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct LevelsSection {
    pub gzip: Option<Spanned<i64>>,
    pub br: Option<Spanned<i64>>,
    pub zstd: Option<Spanned<i64>>,
}

/// `[[rate_limit]]`: a named request rate per key (`rate.rs`).
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RateLimitSection {
    pub name: Spanned<String>,
    pub key: Spanned<String>,
    pub rate: Spanned<String>,
    pub burst: Option<Spanned<i64>>,
    pub status: Option<Spanned<i64>>,
}

/// `[tls]`: settings shared by every TLS listener.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct TlsSection {
    /// `"default"` or `"refuse"`.
    pub unknown_name: Option<Spanned<String>>,
    /// `"1.2"` or `"1.3"`.
    pub min_version: Option<Spanned<String>>,
    pub tickets: Option<Spanned<bool>>,
}

/// `[[vhost]]`: host names with their certificate and HTTPS policy.
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct VhostSection {
    pub names: Spanned<Vec<Spanned<String>>>,
    pub tls: Option<Spanned<CertSection>>,
    pub https_redirect: Option<Spanned<bool>>,
    pub hsts: Option<Spanned<String>>,
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub deny: Option<Spanned<Vec<Spanned<String>>>>,
    /// Fields set, added and removed (`headers.rs`).
    pub response_headers: Option<Spanned<HeadersSection>>,
    pub request_headers: Option<Spanned<HeadersSection>>,
    /// Rewrite rules for requests to these names (`rewrite.rs`).
    pub rewrite: Option<Spanned<Vec<Spanned<RewriteSection>>>>,
    /// Status or range to page (`error_pages.rs`).
    pub error_pages: Option<Spanned<super::error_pages::PagesTable>>,
}

/// `tls = { cert = "PATH", key = "PATH" }`: a PEM certificate chain and its
/// private key, relative to the config file's directory.
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CertSection {
    pub cert: Option<Spanned<String>>,
    pub key: Option<Spanned<String>>,
    /// A certificate from the `[acme.NAME]` issuer instead of files (`acme.rs`).
    pub acme: Option<Spanned<String>>,
    /// A listener's ACME certificate's names (a vhost's are its own).
    pub names: Option<Spanned<Vec<Spanned<String>>>>,
    /// Client certificates asked for, their CA and CRLs (`mtls.rs`).
    pub client_auth: Option<Spanned<String>>,
    pub client_ca: Option<Spanned<String>>,
    pub client_crl: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[admin]`: the listener for `/metrics` and `/healthz`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct AdminSection {
    /// `"HOST:PORT"`, or `"off"`.
    pub listen: Option<Spanned<String>>,
}

/// `[access_log]`: one line per request, off unless `path` is given.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct AccessLogSection {
    /// Relative to the config file's directory.
    pub path: Option<Spanned<String>>,
    /// `"combined"` or `"json"`.
    pub format: Option<Spanned<String>>,
    /// Each core's buffer is written out when it holds this much.
    pub buffer: Option<Spanned<SizeValue>>,
    /// ... or when this long has passed since its first line.
    pub flush_every: Option<Spanned<DurationValue>>,
}

/// `[static]`: how files are served, for every route that does not say.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct StaticSection {
    pub index: Option<Spanned<Vec<Spanned<String>>>>,
    pub listing: Option<Spanned<bool>>,
    pub precompressed: Option<Spanned<bool>>,
    pub cache_control: Option<Spanned<String>>,
    pub mime: Option<Spanned<std::collections::BTreeMap<String, Spanned<String>>>>,
    pub cache_max_bytes: Option<Spanned<SizeValue>>,
    pub cache_max_file: Option<Spanned<SizeValue>>,
    pub cache_max_open: Option<Spanned<i64>>,
    pub revalidate: Option<Spanned<DurationValue>>,
}

/// `[[route]]`: a URL prefix served from a root, with its own headers; or,
/// with `upstream`, passed to that upstream.
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RouteSection {
    pub prefix: Spanned<String>,
    // Static routes only.
    pub root: Option<Spanned<String>>,
    /// nginx's `alias`: the directory that replaces the prefix; never
    /// beside `root`.
    pub alias: Option<Spanned<String>>,
    pub cache_control: Option<Spanned<String>>,
    pub listing: Option<Spanned<bool>>,
    // Proxy routes only: `upstream` makes the route one.
    pub upstream: Option<Spanned<String>>,
    pub host: Option<Spanned<Vec<Spanned<String>>>>,
    pub strip_prefix: Option<Spanned<bool>>,
    pub replace_prefix: Option<Spanned<String>>,
    pub proxy_host: Option<Spanned<String>>,
    // Routes to a FastCGI upstream only (which also take `root`).
    pub extension: Option<Spanned<String>>,
    pub index: Option<Spanned<String>>,
    /// `false`: this route's requests are not access-logged.
    pub access_log: Option<Spanned<bool>>,
    // Proxy routes: `"normalized"` (the default) or `"raw"`.
    pub forward_path: Option<Spanned<String>>,
    // Routes to an HTTP upstream: Upgrade protocols passed on besides
    // websocket.
    pub upgrade: Option<Spanned<Vec<Spanned<String>>>>,
    // Any route: client addresses admitted or refused.
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub deny: Option<Spanned<Vec<Spanned<String>>>>,
    /// Any route: the `[[rate_limit]]` its requests are counted against.
    pub rate_limit: Option<Spanned<String>>,
    /// Any route: compression on the fly on or off, and its levels.
    pub compress: Option<Spanned<bool>>,
    pub compress_levels: Option<Spanned<LevelsSection>>,
    /// Any route: `{ realm = "...", users = "FILE" }` (`auth.rs`).
    pub basic_auth: Option<Spanned<BasicAuthSection>>,
    /// A route to an HTTP upstream: every request is gRPC.
    pub grpc: Option<Spanned<bool>>,
    /// A route to an upstream: the `[cache.NAME]` that stores its responses.
    pub cache: Option<Spanned<String>>,
    /// Any route: fields set, added and removed (`headers.rs`); request
    /// fields on a route to an upstream only.
    pub response_headers: Option<Spanned<HeadersSection>>,
    pub request_headers: Option<Spanned<HeadersSection>>,
    /// Any route: rewrite rules once the route is chosen (`rewrite.rs`).
    pub rewrite: Option<Spanned<Vec<Spanned<RewriteSection>>>>,
    /// Any route: status or range to page; a route to an upstream:
    /// its own errors replaced too (`error_pages.rs`).
    pub error_pages: Option<Spanned<super::error_pages::PagesTable>>,
    pub intercept_errors: Option<Spanned<bool>>,
    /// Paths tried before the upstream or a status (`try_files.rs`).
    pub try_files: Option<Spanned<Vec<Spanned<String>>>>,
    pub fallback: Option<Spanned<super::try_files::FallbackValue>>,
    /// 403 without a verified client certificate (`mtls.rs`).
    pub require_client_cert: Option<Spanned<bool>>,
}

/// `basic_auth = { realm = "...", users = "FILE" }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct BasicAuthSection {
    pub realm: Spanned<String>,
    pub users: Spanned<String>,
}

/// `[proxy]`: headers added to every proxied request.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct ProxySection {
    pub x_forwarded: Option<Spanned<bool>>,
    pub forwarded: Option<Spanned<bool>>,
    /// Addresses and CIDR blocks whose `Forwarded` field is kept.
    pub trusted_forwarders: Option<Spanned<Vec<Spanned<String>>>>,
    pub via: Option<Spanned<ViaValue>>,
    /// `"reject"` (the default) or `"pass"`.
    pub encoded_slash: Option<Spanned<String>>,
    /// `"set_aside"` (the default) or `"reject"`.
    pub path_parameters: Option<Spanned<String>>,
    /// TRACE served rather than answered 405.
    pub allow_trace: Option<Spanned<bool>>,
    /// `"drop"` (the default), `"pass"` or `"reject"`.
    pub underscores_in_headers: Option<Spanned<String>>,
}

/// `[upstream.NAME]`: a group of servers and how requests reach them.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct UpstreamSection {
    /// `"http"` (the default) or `"fastcgi"`.
    pub protocol: Option<Spanned<String>>,
    pub servers: Option<Spanned<Vec<Spanned<ServerValue>>>>,
    pub balance: Option<Spanned<String>>,
    pub hash_key: Option<Spanned<String>>,
    pub resolve_every: Option<Spanned<DurationValue>>,
    // Pool.
    pub max_idle: Option<Spanned<i64>>,
    pub idle_timeout: Option<Spanned<DurationValue>>,
    // Timeouts.
    pub connect_timeout: Option<Spanned<DurationValue>>,
    pub send_timeout: Option<Spanned<DurationValue>>,
    pub response_timeout: Option<Spanned<DurationValue>>,
    pub body_timeout: Option<Spanned<DurationValue>>,
    // Retries.
    pub retries: Option<Spanned<i64>>,
    pub retry_on: Option<Spanned<Vec<Spanned<String>>>>,
    // Passive health.
    pub max_fails: Option<Spanned<i64>>,
    pub fail_window: Option<Spanned<DurationValue>>,
    pub fail_cooldown: Option<Spanned<DurationValue>>,
    // Active health: on when `health_path` is given.
    pub health_path: Option<Spanned<String>>,
    pub health_interval: Option<Spanned<DurationValue>>,
    pub health_timeout: Option<Spanned<DurationValue>>,
    pub health_status: Option<Spanned<i64>>,
    pub health_fall: Option<Spanned<i64>>,
    pub health_rise: Option<Spanned<i64>>,
    // FastCGI only.
    pub max_conns: Option<Spanned<i64>>,
    pub capacity_probe: Option<Spanned<DurationValue>>,
    pub queue_size: Option<Spanned<i64>>,
    pub queue_timeout: Option<Spanned<DurationValue>>,
    pub keep_conn: Option<Spanned<bool>>,
    // HTTP only: TLS to the servers.
    pub tls: Option<Spanned<bool>>,
    pub tls_verify: Option<Spanned<bool>>,
    /// Relative to the config file's directory.
    pub tls_ca: Option<Spanned<String>>,
    pub tls_sni: Option<Spanned<String>>,
    /// HTTP only: `"v1"` or `"v2"`, a PROXY protocol header first.
    pub send_proxy_protocol: Option<Spanned<String>>,
    // `protocol = "h2"` or `"auto"` only.
    pub h2_connections: Option<Spanned<i64>>,
    pub h2_ping_interval: Option<Spanned<DurationValue>>,
    pub h2_window: Option<Spanned<SizeValue>>,
}

/// One `servers` entry as written: `"host:port"` (or
/// `"unix:/path.sock"`) or `{ addr = "host:port", weight = 3 }`.
#[derive(Clone, Debug)]
pub enum ServerValue {
    Addr(String),
    Table(ServerTable),
}

/// The table form of a `servers` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTable {
    pub addr: Spanned<String>,
    pub weight: Option<Spanned<i64>>,
}

/// `via = "pseudonym" | true | false`, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViaValue {
    Enabled(bool),
    Name(String),
}

/// `[runtime]`: workers, placement and the I/O backend.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct RuntimeSection {
    pub workers: Option<Spanned<WorkersValue>>,
    pub cpu_affinity: Option<Spanned<AffinityValue>>,
    pub backend: Option<Spanned<String>>,
    pub ring_entries: Option<Spanned<i64>>,
    pub coalesce_wait: Option<Spanned<DurationValue>>,
}

/// `[server]`: listeners and the static root.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct ServerSection {
    pub listen: Option<Spanned<Vec<Spanned<ListenValue>>>>,
    pub backlog: Option<Spanned<i64>>,
    /// Relative to the config file's directory.
    pub root: Option<Spanned<String>>,
    /// Run as this user (and its group) after binding the listeners.
    pub user: Option<Spanned<String>>,
    pub group: Option<Spanned<String>>,
    /// Where the pid is written, for `ringside reload`.
    pub pid_file: Option<Spanned<String>>,
    /// Client addresses admitted or refused (`access.rs`).
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub deny: Option<Spanned<Vec<Spanned<String>>>>,
    /// The Server field, and fields set, added and removed (`headers.rs`).
    pub server_tokens: Option<Spanned<ServerTokensValue>>,
    pub response_headers: Option<Spanned<HeadersSection>>,
    pub request_headers: Option<Spanned<HeadersSection>>,
    /// Status or range to page (`error_pages.rs`).
    pub error_pages: Option<Spanned<super::error_pages::PagesTable>>,
}

/// `[limits]`: request size limits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct LimitsSection {
    pub max_request_line: Option<Spanned<SizeValue>>,
    pub max_head: Option<Spanned<SizeValue>>,
    pub max_headers: Option<Spanned<i64>>,
    pub max_body: Option<Spanned<SizeValue>>,
    pub max_connections: Option<Spanned<i64>>,
    /// Per client address, per core; 0: no limit.
    pub max_client_connections: Option<Spanned<i64>>,
    /// 429 or 503.
    pub client_connections_status: Option<Spanned<i64>>,
}

/// `[timeouts]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct TimeoutsSection {
    pub header_read: Option<Spanned<DurationValue>>,
    pub keepalive: Option<Spanned<DurationValue>>,
    pub body_read: Option<Spanned<DurationValue>>,
    pub send: Option<Spanned<DurationValue>>,
    pub shutdown_grace: Option<Spanned<DurationValue>>,
    /// Bytes per second, written as a size.
    pub min_rate: Option<Spanned<SizeValue>>,
}

/// `[http2]`: HTTP/2's own limits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct Http2Section {
    pub max_concurrent_streams: Option<Spanned<i64>>,
    pub stream_window: Option<Spanned<SizeValue>>,
    pub connection_window: Option<Spanned<SizeValue>>,
    pub flood_budget: Option<Spanned<i64>>,
}

/// `[http3]`: HTTP/3's and QUIC's own limits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct Http3Section {
    pub max_concurrent_streams: Option<Spanned<i64>>,
    pub stream_window: Option<Spanned<SizeValue>>,
    pub connection_window: Option<Spanned<SizeValue>>,
    pub send_window: Option<Spanned<SizeValue>>,
    pub retry_above: Option<Spanned<i64>>,
    pub always_retry: Option<Spanned<bool>>,
    pub max_handshakes: Option<Spanned<i64>>,
    pub early_data: Option<Spanned<bool>>,
}

/// One `[server] listen` entry as written: `"HOST:PORT"`, or
/// `{ addr = "HOST:PORT", tls = { cert = "PATH", key = "PATH" } }`.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // a few per file, read once
pub enum ListenValue {
    Addr(String),
    Table(ListenTable),
}

/// The table form of a `listen` entry; without `tls` it is plain HTTP.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenTable {
    pub addr: Spanned<String>,
    pub tls: Option<Spanned<CertSection>>,
    /// HTTP/2 besides HTTP/1.1 (h2c or ALPN `h2`); on unless `false`.
    pub http2: Option<Spanned<bool>>,
    /// HTTP/3 over QUIC on the same port; on where the listener has TLS
    /// unless `false`.
    pub http3: Option<Spanned<bool>>,
    /// Every connection starts with a PROXY protocol header (v1 or v2).
    pub proxy_protocol: Option<Spanned<bool>>,
    /// The sources a header is taken from (default: loopback).
    pub trusted: Option<Spanned<Vec<Spanned<String>>>>,
    /// A `unix:` listener's socket file: its permission bits, owner and
    /// group (`unix_listen.rs`).
    pub mode: Option<Spanned<String>>,
    pub owner: Option<Spanned<String>>,
    pub group: Option<Spanned<String>>,
}

/// What a `listen` entry must look like, for error messages.
pub const LISTEN_EXPECTED: &str = "\"HOST:PORT\" or a table like { addr = \"HOST:PORT\", tls = { cert = \"PATH\", key = \"PATH\" } }";
/// What `workers =` must look like, for error messages.
pub const WORKERS_EXPECTED: &str = "\"auto\" or a positive integer";
/// What a `servers` entry must look like, for error messages.
pub const SERVER_EXPECTED: &str =
    "\"HOST:PORT\", \"unix:/PATH\" or a table like { addr = \"HOST:PORT\", weight = 2 }";
/// What `via =` must look like, for error messages.
pub const VIA_EXPECTED: &str = "a pseudonym like \"ringside\", or false for no Via header";
/// What `cpu_affinity =` must look like, for error messages.
pub const AFFINITY_EXPECTED: &str = "\"auto\", true, false or a list of CPU numbers like [0, 2, 4]";

/// `workers = "auto" | N`, as written; `N` is range-checked later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkersValue {
    Auto,
    Count(i64),
}

/// A size as written: integer bytes or a string like `"16k"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeValue {
    Bytes(i64),
    Text(String),
}

/// A duration as written: integer seconds or a string like `"500ms"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationValue {
    Seconds(i64),
    Text(String),
}

/// `cpu_affinity = true | false | [0, 2, 4]`, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AffinityValue {
    /// `"auto"`: pinned where the CPUs are the process's own.
    Auto,
    /// `true` pins worker `i` to the `i`-th CPU the process may use.
    Enabled(bool),
    Cpus(Vec<Spanned<i64>>),
}

impl fmt::Display for SizeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeValue::Bytes(n) => write!(f, "{n}"),
            SizeValue::Text(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for DurationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationValue::Seconds(n) => write!(f, "{n}"),
            DurationValue::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// serde's derived structs also take a list, read as a tuple of their
/// fields, so `tls = ["a.pem", "a.key"]` was a certificate and `runtime =
/// [4]` four workers. Each table is read from a table only, through toml's
/// own map (so the fields keep their spans); a list is then a wrong type,
/// reported as one.
macro_rules! tables_only {
    ($($t:ident),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct TableOnly;
                impl<'de> Visitor<'de> for TableOnly {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a table")
                    }
                    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<$t, A::Error> {
                        // The derived impl, which `remote = "Self"` leaves
                        // as an inherent function.
                        $t::deserialize(de::value::MapAccessDeserializer::new(map))
                    }
                }
                d.deserialize_map(TableOnly)
            }
        }
    )*};
}

tables_only!(
    AcmeSection,
    EabSection,
    BasicAuthSection,
    CacheSection,
    CompressionSection,
    HeadersSection,
    LevelsSection,
    TlsSection,
    VhostSection,
    RateLimitSection,
    CertSection,
    AdminSection,
    AccessLogSection,
    StaticSection,
    RouteSection,
    ProxySection,
    UpstreamSection,
    RuntimeSection,
    ServerSection,
    LimitsSection,
    TimeoutsSection,
    Http2Section,
    Http3Section,
    RealIpSection,
);

/// The error for a value of the wrong kind: "expected X, got Y".
fn wrong<E: de::Error>(expected: &str, got: impl fmt::Display) -> E {
    E::custom(format!("expected {expected}, got {got}"))
}

/// A visitor for values written as an integer or a string; `text` decides
/// which strings it takes.
struct IntOrStr<F> {
    expected: &'static str,
    int: fn(i64) -> F,
    text: fn(&str) -> Option<F>,
}

impl<F> Visitor<'_> for IntOrStr<F> {
    type Value = F;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<F, E> {
        Ok((self.int)(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<F, E> {
        i64::try_from(v)
            .map(self.int)
            .map_err(|_| wrong(self.expected, v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<F, E> {
        (self.text)(v).ok_or_else(|| wrong(self.expected, format_args!("{v:?}")))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<F, E> {
        Err(wrong(self.expected, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<F, E> {
        Err(wrong(self.expected, v))
    }
}

impl<'de> Deserialize<'de> for WorkersValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStr {
            expected: WORKERS_EXPECTED,
            int: WorkersValue::Count,
            text: |s| (s == "auto").then_some(WorkersValue::Auto),
        })
    }
}

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStr {
            expected: SIZE_EXPECTED,
            int: SizeValue::Bytes,
            text: |s| Some(SizeValue::Text(s.to_owned())),
        })
    }
}

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStr {
            expected: DURATION_EXPECTED,
            int: DurationValue::Seconds,
            text: |s| Some(DurationValue::Text(s.to_owned())),
        })
    }
}

struct AffinityVisitor;

impl<'de> Visitor<'de> for AffinityVisitor {
    type Value = AffinityValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(AFFINITY_EXPECTED)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<AffinityValue, E> {
        Ok(AffinityValue::Enabled(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AffinityValue, A::Error> {
        let mut cpus = Vec::new();
        while let Some(cpu) = seq.next_element::<Spanned<i64>>()? {
            cpus.push(cpu);
        }
        Ok(AffinityValue::Cpus(cpus))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<AffinityValue, E> {
        Err(wrong(AFFINITY_EXPECTED, v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<AffinityValue, E> {
        match v {
            "auto" => Ok(AffinityValue::Auto),
            _ => Err(wrong(AFFINITY_EXPECTED, format_args!("{v:?}"))),
        }
    }
}

impl<'de> Deserialize<'de> for AffinityValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AffinityVisitor)
    }
}

struct ServerVisitor;

impl<'de> Visitor<'de> for ServerVisitor {
    type Value = ServerValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SERVER_EXPECTED)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ServerValue, E> {
        Ok(ServerValue::Addr(v.to_owned()))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<ServerValue, A::Error> {
        // Through toml's own map, so the fields keep their spans.
        ServerTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(ServerValue::Table)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ServerValue, E> {
        Err(wrong(SERVER_EXPECTED, v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ServerValue, E> {
        Err(wrong(SERVER_EXPECTED, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ServerValue, E> {
        Err(wrong(SERVER_EXPECTED, v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ServerValue, E> {
        Err(wrong(SERVER_EXPECTED, v))
    }
}

impl<'de> Deserialize<'de> for ServerValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ServerVisitor)
    }
}

struct ListenVisitor;

impl<'de> Visitor<'de> for ListenVisitor {
    type Value = ListenValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(LISTEN_EXPECTED)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ListenValue, E> {
        Ok(ListenValue::Addr(v.to_owned()))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<ListenValue, A::Error> {
        // Through toml's own map, so the fields keep their spans.
        ListenTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(ListenValue::Table)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ListenValue, E> {
        Err(wrong(LISTEN_EXPECTED, v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ListenValue, E> {
        Err(wrong(LISTEN_EXPECTED, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ListenValue, E> {
        Err(wrong(LISTEN_EXPECTED, v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ListenValue, E> {
        Err(wrong(LISTEN_EXPECTED, v))
    }
}

impl<'de> Deserialize<'de> for ListenValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListenVisitor)
    }
}

struct ViaVisitor;

impl Visitor<'_> for ViaVisitor {
    type Value = ViaValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(VIA_EXPECTED)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ViaValue, E> {
        Ok(ViaValue::Enabled(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ViaValue, E> {
        Ok(ViaValue::Name(v.to_owned()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ViaValue, E> {
        Err(wrong(VIA_EXPECTED, v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ViaValue, E> {
        Err(wrong(VIA_EXPECTED, v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ViaValue, E> {
        Err(wrong(VIA_EXPECTED, v))
    }
}

impl<'de> Deserialize<'de> for ViaValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ViaVisitor)
    }
}
