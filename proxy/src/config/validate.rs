//! The validating layer, the second of the two (see `super`):
//! `TryFrom<Document>` turns the file layer into [`Config`], with real
//! durations, sizes and socket addresses.
//!
//! Every value is checked against what the runtime can really do, and a
//! refused value is reported at its own span: the file layer keeps a
//! `toml::Spanned` around each one. A key the file leaves out takes the
//! runtime's default (`RuntimeConfig::default()`, `ServerConfig::default()`),
//! which is checked against the keys that are given, e.g. a small `max_head`
//! against the default `max_request_line`.
//!
//! The checks on single values are plain functions returning the message
//! alone, so the command-line overrides (`cli.rs`) share them. Those that
//! more than one section uses live in `cx.rs` (with `Cx`) and `addr.rs`
//! (addresses and host names), which the sections import instead of this
//! module: this one imports the sections, to assemble them.
//!
//! The proxy's sections (`[proxy]`, `[upstream.NAME]`, routes with
//! `upstream`) are validated in `upstream.rs` (FastCGI's keys in
//! `fastcgi.rs`), on the same [`Cx`]; the static routes here skip routes
//! that name an upstream. TLS (a listener's `tls` table, `[tls]`,
//! `[[vhost]]`, an upstream's `tls*` keys) is validated in `tls.rs`, which
//! reads every certificate and key named: `listen` here hands it each
//! listener's table, and the validated [`TlsConfig`](super::tls::TlsConfig)
//! keeps one entry per listen address, parallel to `ServerConfig::listen`.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use ringside_runtime::cidr::Cidr;
use ringside_runtime::config::{
    Affinity, BackendChoice, Http2, Http3, Limits, RuntimeConfig, ServerConfig, Timeouts, Workers,
};
use ringside_static::{CacheConfig, RouteConfig, StaticConfig};
use toml::Spanned;

use super::addr::add_listen;
use super::cpus::{allowed_cpus, check_cpu};
use super::cx::{duration, header_value, int_in, join, root_dir, size_in, Cx};
use super::error::ConfigError;
use super::file::{
    AffinityValue, DurationValue, FileConfig, ListenTable, ListenValue, SizeValue, WorkersValue,
    WORKERS_EXPECTED,
};
use super::size::parse_duration;
use super::tls::CertAt;
use super::{Config, Document};
use crate::tls::certs::CertPaths;

/// The largest `max_head` the HTTP codec supports.
pub const MAX_HEAD: u64 = 65535;
/// The most header fields `max_headers` may allow: more than a head of
/// `MAX_HEAD` bytes could hold of the shortest fields anyway.
pub const MAX_HEADERS: i64 = 16384;
/// The largest `listen(2)` backlog accepted.
pub const MAX_BACKLOG: i64 = 65535;
/// A sanity bound: each connection is a file descriptor.
pub const MAX_CONNECTIONS: i64 = 1 << 24;
/// A sanity bound on `cache_max_open`: each is a file descriptor, per core.
pub const MAX_OPEN_FILES: i64 = 1 << 20;
/// io_uring refuses rings larger than this (IORING_MAX_ENTRIES).
pub const MAX_RING_ENTRIES: i64 = 32768;

/// The backend names a config may use, and what they choose.
pub const BACKENDS: [(&str, BackendChoice); 6] = [
    ("auto", BackendChoice::Auto),
    ("io-uring", BackendChoice::IoUring),
    ("epoll", BackendChoice::Epoll),
    ("kqueue", BackendChoice::Kqueue),
    ("devpoll", BackendChoice::Devpoll),
    ("glommio", BackendChoice::Glommio),
];

impl TryFrom<Document<'_>> for Config {
    type Error = ConfigError;

    fn try_from(doc: Document<'_>) -> Result<Config, ConfigError> {
        let cx = Cx {
            text: doc.text,
            path: doc.path,
        };
        let f = &doc.file;
        let base = doc.path.parent().unwrap_or(Path::new(""));
        let root = match &f.server.root {
            Some(v) => cx.check(v, "[server] root", |s| root_dir(&join(base, s)))?,
            None => root_dir(&join(base, "."))
                .map_err(|m| ConfigError::at(cx.path, cx.text, None, key("[server] root"), m))?,
        };
        let statics = cx.statics(f, base, &root)?;
        let mut proxy = cx.proxy(f, base, &root)?;
        let caches = cx.caches(f, base, &mut proxy)?;
        let ops = cx.ops(f, base)?;
        let runtime = cx.runtime(f)?;
        let (server, listeners) = cx.server(f, base)?;
        let tls = cx.tls(f, base, listeners)?;
        let access = cx.access(f)?;
        let rates = cx.rates(f)?;
        let compression = cx.compression(f)?;
        let auth = cx.auth(f, base)?;
        let headers = cx.headers(f)?;
        let rewrites = cx.rewrites(f)?;
        let real_ip = cx.real_ip(f)?;
        let unix_listen = cx.unix_listen(f, base)?;
        let mime = ringside_static::mime::MimeTable::new(statics.mime.iter().cloned());
        let error_pages = cx.error_pages(f, base, &mime)?;
        let try_files = cx.try_files(f, base, &root)?;
        let mtls = cx.mtls(f, &tls)?;
        let plain = tls.listeners.iter().any(Option::is_none);
        let acme = cx.acme(f, base, &tls, plain)?;
        Ok(Config {
            runtime,
            server,
            root,
            statics,
            proxy,
            ops,
            tls,
            access,
            rates,
            compression,
            auth,
            caches,
            headers,
            rewrites,
            real_ip,
            unix_listen,
            error_pages,
            try_files,
            mtls,
            acme,
            source: Some(doc.path.to_path_buf()),
        })
    }
}

fn key(k: &str) -> Option<String> {
    Some(k.to_owned())
}

/// The listen addresses, each one's default certificate, and whether
/// each speaks HTTP/2.
/// The addresses, and beside each its certificate, whether it speaks
/// HTTP/2, and the sources it takes a PROXY protocol header from.
type Listeners = (
    Vec<SocketAddr>,
    Vec<Option<CertPaths>>,
    Vec<bool>,
    Vec<bool>,
    Vec<Option<Vec<Cidr>>>,
);

impl Cx<'_> {
    fn runtime(&self, f: &FileConfig) -> Result<RuntimeConfig, ConfigError> {
        let r = &f.runtime;
        let d = RuntimeConfig::default();
        Ok(RuntimeConfig {
            workers: self.or(&r.workers, "[runtime] workers", d.workers, workers)?,
            affinity: match &r.cpu_affinity {
                Some(v) => self.affinity(v)?,
                None => d.affinity,
            },
            backend: self.or(&r.backend, "[runtime] backend", d.backend, |s| backend(s))?,
            ring_entries: self.or(
                &r.ring_entries,
                "[runtime] ring_entries",
                d.ring_entries,
                |&n| int_in(n, 1, MAX_RING_ENTRIES).map(|n| n as u32),
            )?,
            coalesce_wait: self.or(
                &r.coalesce_wait,
                "[runtime] coalesce_wait",
                d.coalesce_wait,
                coalesce_wait,
            )?,
        })
    }

    fn affinity(&self, v: &Spanned<AffinityValue>) -> Result<Affinity, ConfigError> {
        const KEY: &str = "[runtime] cpu_affinity";
        Ok(match v.get_ref() {
            AffinityValue::Auto => Affinity::Auto,
            AffinityValue::Enabled(true) => Affinity::On,
            AffinityValue::Enabled(false) => Affinity::Off,
            AffinityValue::Cpus(list) => {
                if list.is_empty() {
                    return Err(self.err(
                        v.span(),
                        KEY,
                        "expected at least one CPU (false turns pinning off)".into(),
                    ));
                }
                let allowed = allowed_cpus();
                let mut cpus = Vec::with_capacity(list.len());
                for cpu in list {
                    let n = self.check(cpu, KEY, |&c| check_cpu(c, &cpus, &allowed))?;
                    cpus.push(n);
                }
                Affinity::Cpus(cpus)
            }
        })
    }

    /// `[server]` and `[limits]`, with each listener's default certificate
    /// (`None` for a plain one), in the order of `listen`.
    fn server(
        &self,
        f: &FileConfig,
        base: &Path,
    ) -> Result<(ServerConfig, Vec<Option<CertPaths>>), ConfigError> {
        let s = &f.server;
        let d = ServerConfig::default();
        let (listen, certs, http2, http3, proxy_protocol) = match &s.listen {
            Some(list) => self.listen(list, base)?,
            None => {
                let n = d.listen.len();
                (
                    d.listen,
                    vec![None; n],
                    d.http2,
                    vec![true; n],
                    vec![None; n],
                )
            }
        };
        let backlog = self.or(&s.backlog, "[server] backlog", d.backlog, |&n| {
            int_in(n, 1, MAX_BACKLOG).map(|n| n as i32)
        })?;
        let max_connections = self.or(
            &f.limits.max_connections,
            "[limits] max_connections",
            d.max_connections,
            |&n| int_in(n, 1, MAX_CONNECTIONS).map(|n| n as usize),
        )?;
        let server = ServerConfig {
            listen,
            backlog,
            limits: self.limits(f)?,
            timeouts: self.timeouts(f)?,
            max_connections,
            // Filled from `Config::tls` by the process when it starts or
            // reloads (rustls configs hold certificates read from disk).
            tls: Vec::new(),
            http2,
            h2: self.http2(f)?,
            http3,
            h3: self.http3(f)?,
            proxy_protocol,
        };
        Ok((server, certs))
    }

    /// `[http2]`.
    fn http2(&self, f: &FileConfig) -> Result<Http2, ConfigError> {
        let h = &f.http2;
        let d = Http2::default();
        // RFC 9113 §6.9.1: a window is at most 2^31 - 1.
        const MAX_WINDOW: u64 = (1 << 31) - 1;
        let window = |v: &SizeValue| size_in(v, 65_535, MAX_WINDOW).map(|n| n as u32);
        Ok(Http2 {
            max_concurrent_streams: self.or(
                &h.max_concurrent_streams,
                "[http2] max_concurrent_streams",
                d.max_concurrent_streams,
                |&n| int_in(n, 1, 65_536).map(|n| n as u32),
            )?,
            stream_window: self.or(
                &h.stream_window,
                "[http2] stream_window",
                d.stream_window,
                window,
            )?,
            connection_window: self.or(
                &h.connection_window,
                "[http2] connection_window",
                d.connection_window,
                window,
            )?,
            flood_budget: self.or(
                &h.flood_budget,
                "[http2] flood_budget",
                d.flood_budget,
                |&n| int_in(n, 0, u32::MAX as i64).map(|n| n as u32),
            )?,
        })
    }

    /// `[http3]`.
    fn http3(&self, f: &FileConfig) -> Result<Http3, ConfigError> {
        let h = &f.http3;
        let d = Http3::default();
        // RFC 9000 §4.1: credit is a varint; a u32 is plenty, and bounds
        // what one client may make a core hold.
        let window = |v: &SizeValue| size_in(v, 16 * 1024, u64::from(u32::MAX)).map(|n| n as u32);
        Ok(Http3 {
            max_concurrent_streams: self.or(
                &h.max_concurrent_streams,
                "[http3] max_concurrent_streams",
                d.max_concurrent_streams,
                |&n| int_in(n, 1, 65_536).map(|n| n as u32),
            )?,
            stream_window: self.or(
                &h.stream_window,
                "[http3] stream_window",
                d.stream_window,
                window,
            )?,
            connection_window: self.or(
                &h.connection_window,
                "[http3] connection_window",
                d.connection_window,
                window,
            )?,
            send_window: self.or(&h.send_window, "[http3] send_window", d.send_window, window)?,
            retry_above: self.or(&h.retry_above, "[http3] retry_above", d.retry_above, |&n| {
                int_in(n, 0, 1 << 20).map(|n| n as u32)
            })?,
            always_retry: h
                .always_retry
                .as_ref()
                .map_or(d.always_retry, |v| *v.get_ref()),
            max_handshakes: self.or(
                &h.max_handshakes,
                "[http3] max_handshakes",
                d.max_handshakes,
                |&n| int_in(n, 1, 1 << 20).map(|n| n as u32),
            )?,
            early_data: h.early_data.as_ref().map_or(d.early_data, |v| *v.get_ref()),
        })
    }

    /// The listen addresses, and beside each its default certificate when
    /// it was written as a table with `tls` (a name that resolves to
    /// several addresses gives each the same).
    fn listen(
        &self,
        list: &Spanned<Vec<Spanned<ListenValue>>>,
        base: &Path,
    ) -> Result<Listeners, ConfigError> {
        const KEY: &str = "[server] listen";
        if list.get_ref().is_empty() {
            return Err(self.err(list.span(), KEY, "expected at least one address".into()));
        }
        let mut out = Vec::new();
        let mut certs = Vec::new();
        let mut http2 = Vec::new();
        let mut http3 = Vec::new();
        let mut proxy_protocol = Vec::new();
        for item in list.get_ref() {
            if super::unix_listen::is_unix(item.get_ref()) {
                continue;
            }
            let (cert, h2, h3, pp) = match item.get_ref() {
                ListenValue::Addr(a) => {
                    self.check(item, KEY, |_| add_listen(&mut out, a))?;
                    (None, true, true, None)
                }
                ListenValue::Table(t) => {
                    self.check(&t.addr, KEY, |a| add_listen(&mut out, a))?;
                    let cert = match &t.tls {
                        Some(c) => Some(self.cert_paths(c, CertAt::Listen, base)?),
                        None => None,
                    };
                    let h2 = t.http2.as_ref().is_none_or(|v| *v.get_ref());
                    let h3 = t.http3.as_ref().is_none_or(|v| *v.get_ref());
                    if let Some(v) = t.http3.as_ref().filter(|v| *v.get_ref()) {
                        if t.tls.is_none() {
                            let why = "http3: needs tls (QUIC is always encrypted)";
                            return Err(self.err(v.span(), KEY, why.into()));
                        }
                    }
                    (cert, h2, h3, self.proxy_protocol(t)?)
                }
            };
            certs.resize(out.len(), cert);
            http2.resize(out.len(), h2);
            http3.resize(out.len(), h3);
            proxy_protocol.resize(out.len(), pp);
        }
        Ok((out, certs, http2, http3, proxy_protocol))
    }

    /// A listen table's `proxy_protocol` and `trusted`: the sources a
    /// header is taken from, or `None` when it takes none.
    fn proxy_protocol(&self, t: &ListenTable) -> Result<Option<Vec<Cidr>>, ConfigError> {
        const KEY: &str = "[server] listen";
        let on = t.proxy_protocol.as_ref().is_some_and(|v| *v.get_ref());
        let Some(list) = &t.trusted else {
            return Ok(on.then(Cidr::loopback));
        };
        if !on {
            return Err(self.err(
                list.span(),
                KEY,
                "trusted: needs proxy_protocol = true".into(),
            ));
        }
        if list.get_ref().is_empty() {
            return Err(self.err(
                list.span(),
                KEY,
                "trusted: expected at least one address or CIDR block".into(),
            ));
        }
        let mut trusted = Vec::new();
        for entry in list.get_ref() {
            trusted.extend(self.check(entry, KEY, |s| {
                Cidr::parse(s).map_err(|m| format!("trusted: {m}"))
            })?);
        }
        Ok(Some(trusted))
    }

    fn limits(&self, f: &FileConfig) -> Result<Limits, ConfigError> {
        let l = &f.limits;
        let d = Limits::default();
        let max_head = self.or(&l.max_head, "[limits] max_head", d.max_head as u64, |v| {
            size_in(v, 1, MAX_HEAD)
        })?;
        let max_request_line = match &l.max_request_line {
            Some(v) => self.check(v, "[limits] max_request_line", |v| {
                size_in(v, 1, max_head).map_err(|m| format!("{m} (max_head is {max_head})"))
            })?,
            None => d.max_request_line as u64,
        };
        if max_request_line > max_head {
            // Only the default request line can get here.
            let v = l.max_head.as_ref().expect("the defaults fit together");
            return Err(self.err(
                v.span(),
                "[limits] max_head",
                format!(
                    "expected a size of at least {max_request_line} bytes (the default max_request_line), got {}",
                    v.get_ref()
                ),
            ));
        }
        Ok(Limits {
            max_request_line: max_request_line as usize,
            max_head: max_head as usize,
            max_headers: self.or(
                &l.max_headers,
                "[limits] max_headers",
                d.max_headers,
                |&n| int_in(n, 1, MAX_HEADERS).map(|n| n as usize),
            )?,
            max_body: self.or(&l.max_body, "[limits] max_body", d.max_body, |v| {
                size_in(v, 1, u64::MAX)
            })?,
            max_client_connections: self.or(
                &l.max_client_connections,
                "[limits] max_client_connections",
                d.max_client_connections,
                |&n| int_in(n, 0, MAX_CONNECTIONS).map(|n| n as u32),
            )?,
            client_connections_status: self.or(
                &l.client_connections_status,
                "[limits] client_connections_status",
                d.client_connections_status,
                |&s| match s {
                    429 | 503 => Ok(s as u16),
                    _ => Err(format!("expected 429 or 503, got {s}")),
                },
            )?,
        })
    }

    fn timeouts(&self, f: &FileConfig) -> Result<Timeouts, ConfigError> {
        let t = &f.timeouts;
        let d = Timeouts::default();
        Ok(Timeouts {
            header_read: self.or(
                &t.header_read,
                "[timeouts] header_read",
                d.header_read,
                duration,
            )?,
            keepalive_idle: self.or(
                &t.keepalive,
                "[timeouts] keepalive",
                d.keepalive_idle,
                duration,
            )?,
            body_read: self.or(&t.body_read, "[timeouts] body_read", d.body_read, duration)?,
            send: self.or(&t.send, "[timeouts] send", d.send, duration)?,
            shutdown_grace: self.or(
                &t.shutdown_grace,
                "[timeouts] shutdown_grace",
                d.shutdown_grace,
                duration,
            )?,
            min_rate: self.or(&t.min_rate, "[timeouts] min_rate", d.min_rate, |v| {
                size_in(v, 0, u64::MAX)
            })?,
        })
    }
}

impl Cx<'_> {
    fn statics(
        &self,
        f: &FileConfig,
        base: &Path,
        root: &Path,
    ) -> Result<StaticConfig, ConfigError> {
        let s = &f.static_files;
        let d = StaticConfig::new(root.to_path_buf());
        let index = match &s.index {
            Some(list) => {
                let mut out = Vec::new();
                for name in list.get_ref() {
                    out.push(self.check(name, "[static] index", |n| index_name(n))?);
                }
                out
            }
            None => d.index,
        };
        let mut mime = Vec::new();
        if let Some(table) = &s.mime {
            for (ext, ty) in table.get_ref() {
                let ext = ext.trim_start_matches('.').to_ascii_lowercase();
                if ext.is_empty()
                    || !ext
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                {
                    return Err(self.err(
                        table.span(),
                        "[static] mime",
                        format!("{ext:?} is not a file extension"),
                    ));
                }
                let ty = self.check(ty, "[static] mime", |t| media_type(t))?;
                mime.push((ext, ty));
            }
        }
        let max_bytes = self.or(
            &s.cache_max_bytes,
            "[static] cache_max_bytes",
            d.cache.max_bytes,
            |v| size_in(v, 1, u64::MAX),
        )?;
        let max_file = self.or(
            &s.cache_max_file,
            "[static] cache_max_file",
            d.cache.max_file,
            |v| size_in(v, 0, max_bytes).map_err(|m| format!("{m} (at most cache_max_bytes)")),
        )?;
        if max_file > max_bytes {
            // Only the default cache_max_file can get here; taking it
            // unchecked gave a config whose to_toml() did not load.
            let v = s
                .cache_max_bytes
                .as_ref()
                .expect("the defaults fit together");
            return Err(self.err(
                v.span(),
                "[static] cache_max_bytes",
                format!(
                    "expected a size of at least {max_file} bytes (the default cache_max_file), got {}",
                    v.get_ref()
                ),
            ));
        }
        let mut routes: Vec<RouteConfig> = Vec::new();
        // Routes naming an upstream are the proxy's (`upstream.rs`).
        for r in f.routes.iter().filter(|r| r.get_ref().upstream.is_none()) {
            let r = r.get_ref();
            let prefix = self.check(&r.prefix, "[[route]] prefix", |p| {
                super::upstream::route_prefix(p)?;
                if routes.iter().any(|o| &o.prefix == p) {
                    return Err(format!("{p:?} is already a route"));
                }
                Ok(p.clone())
            })?;
            let (root, alias) = match (&r.root, &r.alias) {
                (Some(root), Some(alias)) => {
                    let line = super::error::Position::of(self.text, root.span().start).line;
                    return Err(self.err(
                        alias.span(),
                        "[[route]] alias",
                        format!(
                            "root is given too (line {line}); a route takes one: root looks the \
                             whole path up beneath it, alias replaces the prefix with it"
                        ),
                    ));
                }
                (Some(v), None) => (Some((v, "[[route]] root")), false),
                (None, Some(v)) => (Some((v, "[[route]] alias")), true),
                (None, None) => (None, false),
            };
            routes.push(RouteConfig {
                prefix,
                root: match root {
                    Some((v, k)) => Some(self.check(v, k, |s| root_dir(&join(base, s)))?),
                    None => None,
                },
                alias,
                cache_control: match &r.cache_control {
                    Some(v) => Some(self.check(v, "[[route]] cache_control", |v| header_value(v))?),
                    None => None,
                },
                listing: r.listing.as_ref().map(|v| *v.get_ref()),
            });
        }
        Ok(StaticConfig {
            root: root.to_path_buf(),
            index,
            listing: s.listing.as_ref().map_or(d.listing, |v| *v.get_ref()),
            precompressed: s
                .precompressed
                .as_ref()
                .map_or(d.precompressed, |v| *v.get_ref()),
            cache_control: match &s.cache_control {
                Some(v) => Some(self.check(v, "[static] cache_control", |v| header_value(v))?),
                None => None,
            },
            mime,
            cache: CacheConfig {
                max_bytes,
                max_file,
                max_open: self.or(
                    &s.cache_max_open,
                    "[static] cache_max_open",
                    d.cache.max_open,
                    |&n| int_in(n, 0, MAX_OPEN_FILES).map(|n| n as usize),
                )?,
                revalidate: self.or(
                    &s.revalidate,
                    "[static] revalidate",
                    d.cache.revalidate,
                    duration,
                )?,
            },
            routes,
        })
    }
}

/// An index file name: one path segment, not hidden.
fn index_name(n: &str) -> Result<String, String> {
    if n.is_empty() || n.contains('/') || n.starts_with('.') || n.contains('\0') {
        return Err(format!(
            "expected a file name without '/' and not starting with '.', got {n:?}"
        ));
    }
    Ok(n.to_owned())
}

/// A media type like `text/plain; charset=utf-8`.
fn media_type(t: &str) -> Result<String, String> {
    if !ringside_static::mime::is_valid_media_type(t) {
        return Err(format!(
            "expected a media type like \"text/plain\", got {t:?}"
        ));
    }
    Ok(t.to_owned())
}

/// `workers`: "auto" or at least 1.
pub fn workers(v: &WorkersValue) -> Result<Workers, String> {
    match *v {
        WorkersValue::Auto => Ok(Workers::Auto),
        WorkersValue::Count(n) if n >= 1 => usize::try_from(n)
            .map(Workers::Count)
            .map_err(|_| format!("expected {WORKERS_EXPECTED}, got {n}")),
        WorkersValue::Count(n) => Err(format!("expected {WORKERS_EXPECTED}, got {n}")),
    }
}

/// `--workers N|auto`.
pub fn parse_workers(text: &str) -> Result<Workers, String> {
    match text {
        "auto" => Ok(Workers::Auto),
        _ => match text.parse::<i64>() {
            Ok(n) => workers(&WorkersValue::Count(n)),
            Err(_) => Err(format!("expected {WORKERS_EXPECTED}, got {text:?}")),
        },
    }
}

/// A backend by name; whether it is built in is checked when starting.
pub fn backend(name: &str) -> Result<BackendChoice, String> {
    BACKENDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, b)| b)
        .ok_or_else(|| {
            let names: Vec<String> = BACKENDS.iter().map(|(n, _)| format!("{n:?}")).collect();
            format!("expected one of {}, got {name:?}", names.join(", "))
        })
}

/// The config name of a backend choice.
pub fn backend_name(choice: BackendChoice) -> &'static str {
    BACKENDS
        .iter()
        .find(|&&(_, b)| b == choice)
        .map(|&(n, _)| n)
        .expect("every BackendChoice has a name")
}

/// The longest coalesced wait allowed: beyond a few milliseconds it is a
/// stall, not a batch.
pub const MAX_COALESCE_WAIT: Duration = Duration::from_millis(10);

/// `[runtime] coalesce_wait`: zero (off) up to [`MAX_COALESCE_WAIT`].
pub fn coalesce_wait(v: &DurationValue) -> Result<Duration, String> {
    let d = match v {
        DurationValue::Seconds(0) => Duration::ZERO,
        DurationValue::Text(s) => parse_duration(s)?,
        _ => duration(v)?,
    };
    if d > MAX_COALESCE_WAIT {
        return Err(format!("expected at most \"10ms\", got {v}"));
    }
    Ok(d)
}
