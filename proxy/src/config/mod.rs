//! Configuration, in two layers: what the file says, then what the server runs.
//!
//! 1. The file layer ([`file`]): serde structs mirroring the TOML file, with
//!    `deny_unknown_fields`, every key optional, and every value wrapped in
//!    `toml::Spanned` so that later errors know where it was written.
//! 2. The validated layer ([`Config`]): the runtime's own structs
//!    (`RuntimeConfig`, `ServerConfig`, `StaticConfig`, and the proxy's
//!    `ProxyConfig` from `crate::upstream::settings`) with real durations,
//!    sizes and socket addresses, built by `TryFrom<Document>` in
//!    [`validate`] (the proxy's sections in [`upstream`]), which checks each
//!    value against what the runtime can really do.
//!
//! Every error names the file, the line and column, and the key
//! ([`ConfigError`]). [`Config::to_toml`] writes the effective configuration
//! back out, every key included, in a form [`Config::load`] reads.
//!
//! ```toml
//! [runtime]
//! workers = "auto"          # or a positive integer; auto: one per CPU, capped by
//!                           # the cgroup CPU quota (a Kubernetes CPU limit)
//! cpu_affinity = "auto"     # "auto" | true | false | [0, 2, 4]
//! backend = "auto"          # "auto" | "io-uring" | "epoll" | "kqueue" | "devpoll" | "glommio"
//! ring_entries = 1024
//!
//! [server]
//! listen = ["127.0.0.1:8080"]  # an entry may be a table with a certificate:
//!                           # { addr = "0.0.0.0:443", tls = { cert = "PATH", key = "PATH" } }
//!                           # or a unix socket: "unix:/run/ringside.sock" (relative to this
//!                           # file's directory), { addr = "unix:PATH", mode = "0660", owner = "www", group = "www" }
//! backlog = 4096
//! root = "."                # relative to this file's directory
//!
//! [limits]
//! max_request_line = "8k"   # integer bytes, or k/m/g (powers of 1024)
//! max_head = "16k"
//! max_headers = 100       # at most 16384
//! max_body = "1m"
//! max_connections = 16384   # per worker; at the cap it stops accepting
//! max_client_connections = 0  # per client address, per worker; past it: the status below with Retry-After, then close; 0: no limit
//! client_connections_status = 429  # or 503
//!
//! [timeouts]
//! header_read = "10s"       # ns/us/ms/s/m/h, or integer seconds
//! keepalive = "75s"
//! body_read = "60s"
//! send = "60s"
//! shutdown_grace = "30s"
//! min_rate = 500            # bytes/s a body or response must average while
//!                           # waiting on the client, past body_read/send; 0: off
//!
//! [static]
//! index = ["index.html"]
//! listing = false
//! precompressed = true      # .br/.zst/.gz siblings by Accept-Encoding
//! cache_control = "max-age=60"
//! mime = { wasm = "application/wasm" }
//! cache_max_bytes = "64m"   # per core
//! cache_max_file = "64k"    # larger files are sent from disk without a copy
//! cache_max_open = 256      # per core: larger files kept open; 0: none
//! revalidate = "1s"
//!
//! [[route]]
//! prefix = "/assets/"
//! alias = "/srv/assets"     # replaces the prefix; or root = "/srv": the whole path beneath it
//! cache_control = "public, max-age=31536000, immutable"
//! listing = true
//!
//! [proxy]
//! x_forwarded = true        # X-Forwarded-For/-Proto/-Host
//! forwarded = false         # RFC 7239 Forwarded
//! trusted_forwarders = []   # clients whose own Forwarded is kept; others' is removed
//! via = "ringside"          # pseudonym in Via; false or "" for none
//! encoded_slash = "reject"  # "reject" (400) | "pass": %2F kept for the backend
//! path_parameters = "set_aside"  # ";x" left out for routing | "reject" (400)
//! allow_trace = false       # TRACE: 405 | true: forwarded
//! underscores_in_headers = "drop"  # "drop" | "pass" | "reject" (400)
//!
//! [upstream.app]            # name: [A-Za-z0-9_-]+
//! servers = ["127.0.0.1:9000", "[::1]:9000", { addr = "app2.internal:9000", weight = 3 }]
//! balance = "round_robin"   # round_robin | least_conn | p2c | hash
//! # hash_key = "client_ip"  # with balance = "hash": "client_ip" | "header:NAME" | "cookie:NAME"
//! resolve_every = "30s"     # DNS names are resolved again this often
//! max_idle = 1024           # idle connections per core per server (0 = no pooling)
//! idle_timeout = "60s"
//! connect_timeout = "5s"
//! send_timeout = "60s"
//! response_timeout = "60s"  # until the response head
//! body_timeout = "60s"      # between reads of the response body
//! retries = 1
//! retry_on = ["connect"]    # connect | timeout | invalid_response | http_502 | http_503 | http_504
//! max_fails = 1             # 0 turns passive health checks off
//! fail_window = "10s"
//! fail_cooldown = "10s"
//! health_path = "/healthz"  # given: active health checks on
//! health_interval = "5s"
//! health_timeout = "2s"
//! health_status = 200
//! health_fall = 2
//! health_rise = 2
//! tls = false               # true: HTTPS to the servers (with tls_verify, tls_ca, tls_sni)
//!
//! [[route]]                 # with upstream: a proxy route
//! prefix = "/api/"
//! upstream = "app"
//! host = ["api.example.com", "*.example.com"]  # optional; any host otherwise
//! strip_prefix = true       # or replace_prefix = "/v1/"
//! proxy_host = "pass"       # "pass" | "upstream" | "HOST[:PORT]"
//! forward_path = "normalized"  # "normalized" (the path routed on) | "raw"
//! upgrade = ["my-proto"]    # Upgrade protocols passed on besides websocket
//! ```
//!
//! TLS (see [`tls`]) adds the table form of a `listen` entry, a `[tls]`
//! section (`unknown_name`, `min_version`, `tickets`), `[[vhost]]` entries
//! (`names`, `tls`, `https_redirect`, `hsts`) and an upstream's `tls`,
//! `tls_verify`, `tls_ca` and `tls_sni`; the validated settings are
//! [`Config::tls`], whose `listeners` run parallel to `server.listen`.
//!
//! Client certificates (see [`mtls`]): a listener's `tls` table also takes
//! `client_auth = "require" | "optional"`, `client_ca = "PATH"` (a PEM
//! bundle, needed with `client_auth`) and `client_crl = ["PATH"]` (PEM
//! CRLs); a `[[route]]` takes `require_client_cert = true` (403 without a
//! verified certificate). The validated routes are [`Config::mtls`].
//!
//! An upstream with `protocol = "fastcgi"` (see [`fastcgi`]) takes every
//! key above except `health_*` and `tls*`, plus its own; a route to it runs scripts:
//!
//! ```toml
//! [upstream.php]
//! protocol = "fastcgi"      # "http" (the default) | "fastcgi"
//! servers = ["unix:/run/php/php-fpm.sock", "127.0.0.1:9000"]  # unix: relative to this file's directory
//! max_conns = 8             # per server, all cores together, at most; leave out to learn it
//! capacity_probe = "50ms"   # a new connection unanswered this long: the server is at capacity; 0: don't learn
//! queue_size = 1024         # requests waiting for a connection, per core
//! queue_timeout = "10s"
//! keep_conn = true          # FCGI_KEEP_CONN
//!
//! [[route]]
//! prefix = "/"
//! upstream = "php"
//! root = "/srv/www"         # default: [server] root; relative to this file's directory
//! extension = ".php"
//! index = "index.php"       # must end in extension; default: "index" + extension
//! ```
//!
//! Header fields (see [`headers`]): `[server] server_tokens`, and
//! `response_headers` and `request_headers` on `[server]`, `[[vhost]]` and
//! `[[route]]`, merged field by field, the most specific level winning:
//!
//! ```toml
//! [server]
//! server_tokens = true      # "Server: ringside" | false: none | "NAME"; an upstream's Server is never passed on
//! response_headers = { set = { "X-Frame-Options" = "DENY" }, add = { "X-A" = "1" }, remove = ["X-Powered-By"], always = true }
//! request_headers = { set = { "X-Tenant" = "blue" }, remove = ["Cookie"] }  # to upstreams (FastCGI: HTTP_*)
//! Error pages (see [`error_pages`]) on `[server]`, a `[[vhost]]` or a
//! `[[route]]`, and files tried first (see [`try_files`]) on a route:
//!
//! ```toml
//! [server]
//! error_pages = { 404 = "errors/404.html", 500-599 = "errors/5xx.html" }  # 400-599; files of at most 64 KiB
//!
//! [[route]]
//! prefix = "/"
//! upstream = "rails"
//! root = "public"           # an HTTP upstream's route takes root with try_files; default: [server] root
//! try_files = ["$uri", "$uri/index.html", "$uri.html"]  # "$uri"-shaped, or paths starting with "/"
//! fallback = "@upstream"    # default with an upstream; else a status 400-599 (default 404)
//! intercept_errors = true   # the upstream's own 4xx/5xx get the pages too
//! error_pages = { 503 = { file = "errors/busy.html", status = 200 } }  # status: sent instead
//! ```
//!
//! Response caches (see [`cache`]) are `[cache.NAME]` sections that a route
//! to an upstream takes with `cache = "NAME"`; the validated settings are
//! [`Config::caches`], sorted by name, and a route's
//! [`cache`](crate::upstream::settings::ProxyRoute::cache) indexes them.
//!
//! Rewrites, redirects and fixed answers (see [`rewrite`]) are ordered
//! rules: the server's `[[rewrite]]` tables, and `rewrite = [...]` lists of
//! the same tables in a `[[vhost]]` or a `[[route]]`; the validated rules
//! are [`Config::rewrites`], each pattern compiled once:
//!
//! ```toml
//! [[rewrite]]
//! pattern = "^/old/(.*)$"   # regex on the normalized path
//! host = ["a.example"]      # conditions: host, method, query, header, cookie, client
//! to = "/new/$1"            # or redirect = "...", status = 301 | answer = "...", status = 403
//!
//! [[route]]
//! prefix = "/shop/"
//! rewrite = [{ pattern = "^/shop/item/([0-9]+)$", to = "/shop/item.html?id=$1" }]
//! ```
//! The client's address from a trusted balancer's header is `[real_ip]`
//! (see [`real_ip`]): `from = ["10.0.0.0/8", "unix:"]`, `header =
//! "X-Forwarded-For"`, `recursive = false`.

pub mod access;
pub mod acme;
pub mod addr;
pub mod auth;
pub mod cache;
pub mod compress;
mod cpus;
pub mod cx;
mod emit;
pub mod error;
pub mod error_pages;
pub mod every;
pub mod fastcgi;
pub mod file;
pub mod h2;
pub mod headers;
pub mod mtls;
mod names;
pub mod ops;
pub mod rate;
pub mod real_ip;
pub mod rewrite;
pub mod size;
pub mod tls;
pub mod try_files;
pub mod unix_listen;
pub mod upstream;
pub mod validate;
mod wording;

use std::fs;
use std::path::{Path, PathBuf};

use ringside_runtime::config::{RuntimeConfig, ServerConfig};
use ringside_static::StaticConfig;

use crate::upstream::settings::ProxyConfig;
use file::FileConfig;

pub use error::ConfigError;

/// The validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub runtime: RuntimeConfig,
    pub server: ServerConfig,
    /// The directory served as static files: absolute, symlinks resolved.
    pub root: PathBuf,
    /// Static serving; its `root` is kept equal to `root` above.
    pub statics: StaticConfig,
    /// Upstreams and the routes that go to them.
    pub proxy: ProxyConfig,
    /// Admin listener, access log, user, pid file.
    pub ops: ops::OpsConfig,
    /// TLS listeners (parallel to `server.listen`), `[tls]` and vhosts.
    pub tls: tls::TlsConfig,
    /// `allow` and `deny` by server, vhost and route.
    pub access: access::AccessConfig,
    /// `[[rate_limit]]` and the routes that take them.
    pub rates: rate::RateConfig,
    /// `[compression]` and what routes say of it.
    pub compression: compress::CompressionConfig,
    /// Routes' `basic_auth`, with their users read.
    pub auth: auth::AuthConfig,
    /// `[cache.NAME]`, sorted by name; a proxy route's `cache` indexes it.
    pub caches: Vec<ringside_cache::Settings>,
    /// `server_tokens`, and `response_headers`/`request_headers` by level.
    pub headers: headers::HeadersConfig,
    /// `[[rewrite]]` and the vhosts' and routes' `rewrite`.
    pub rewrites: rewrite::RewriteConfig,
    /// `[real_ip]`, where given.
    pub real_ip: Option<real_ip::RealIpConfig>,
    /// `[server] listen`'s unix sockets, listener indexes after `server.listen`'s.
    pub unix_listen: Vec<unix_listen::UnixListen>,
    /// `error_pages` by server, vhost and route, and `intercept_errors`.
    pub error_pages: error_pages::ErrorPagesConfig,
    /// Routes' `try_files`.
    pub try_files: try_files::TryFilesConfig,
    /// Routes' `require_client_cert`.
    pub mtls: mtls::MtlsConfig,
    /// `[acme.NAME]`, sorted by name.
    pub acme: Vec<acme::AcmeIssuer>,
    /// The file this came from; `None` for the built-in default.
    pub source: Option<PathBuf>,
}

impl Default for Config {
    /// The built-in default: serve the current directory on
    /// 127.0.0.1:8080 with one worker per CPU.
    fn default() -> Self {
        let root = fs::canonicalize(".").unwrap_or_else(|_| PathBuf::from("."));
        let server = ServerConfig::default();
        Config {
            runtime: RuntimeConfig::default(),
            tls: tls::TlsConfig {
                listeners: vec![None; server.listen.len()],
                ..tls::TlsConfig::default()
            },
            server,
            root: root.clone(),
            statics: StaticConfig::new(root),
            proxy: ProxyConfig::default(),
            ops: ops::OpsConfig::default(),
            access: access::AccessConfig::default(),
            rates: rate::RateConfig::default(),
            compression: compress::CompressionConfig::default(),
            auth: auth::AuthConfig::default(),
            caches: Vec::new(),
            headers: headers::HeadersConfig::default(),
            rewrites: rewrite::RewriteConfig::default(),
            real_ip: None,
            unix_listen: Vec::new(),
            error_pages: error_pages::ErrorPagesConfig::default(),
            try_files: try_files::TryFilesConfig::default(),
            mtls: mtls::MtlsConfig::default(),
            acme: Vec::new(),
            source: None,
        }
    }
}

/// A parsed file with what is needed to report on it: its text (for line
/// and column) and its path (for the name, and as the base of a relative
/// `root`). Validated into a [`Config`] by its `TryFrom` impl, in
/// [`validate`].
pub struct Document<'a> {
    pub file: FileConfig,
    pub text: &'a str,
    pub path: &'a Path,
}

impl Config {
    /// Sets the served directory (the `--root` flag). Routes to a FastCGI
    /// upstream that ran scripts from the old one follow it.
    pub fn set_root(&mut self, root: PathBuf) {
        for r in &mut self.proxy.routes {
            if let Some(f) = &mut r.fastcgi {
                if f.root == self.root {
                    f.root = root.clone();
                }
            }
        }
        for t in self.try_files.proxy_routes.iter_mut().flatten() {
            if t.root.as_ref() == Some(&self.root) {
                t.root = Some(root.clone());
            }
        }
        self.statics.root = root.clone();
        self.root = root;
    }

    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = fs::read_to_string(path).map_err(|e| ConfigError::read(path, &e))?;
        let config = Config::parse(&text, path)?;
        tracing::debug!(file = %path.display(), "config loaded");
        Ok(config)
    }

    /// Validates `text` as if read from `path`: errors name `path`, and a
    /// relative `root` is taken from `path`'s directory.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let file: FileConfig =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(path, text, &e))?;
        Config::try_from(Document { file, text, path })
    }
}

#[cfg(test)]
mod acme_tests;
#[cfg(test)]
mod error_tests;
#[cfg(test)]
mod fastcgi_tests;
#[cfg(test)]
mod h2_tests;
#[cfg(test)]
mod mtls_tests;
#[cfg(test)]
mod proxy_tests;
#[cfg(test)]
mod rewrite_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
