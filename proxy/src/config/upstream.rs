//! Validation of the proxy's sections: `[proxy]`, `[upstream.NAME]` and the
//! `[[route]]` entries that name an upstream, into
//! [`ProxyConfig`](crate::upstream::settings::ProxyConfig).
//!
//! Defaults come from `crate::upstream::settings` (`UpstreamConfig::new`
//! and the `Default` impls) except those of active health checks, which are
//! off unless `health_path` is given and take the constants below.
//!
//! What is refused, beyond wrong values:
//! - keys that would have no effect: `hash_key` without `balance = "hash"`,
//!   `fail_window` with `max_fails = 0`, `health_*` without `health_path`;
//!   on a route, `listing`/`cache_control`/`alias` together with `upstream`, `root`
//!   with an HTTP upstream, and `host`/`strip_prefix`/`replace_prefix`/
//!   `proxy_host` without one;
//! - keys for the other protocol (see `fastcgi.rs`): the FastCGI keys on an
//!   HTTP upstream, `health_*` on a FastCGI one; `extension`/`index` on a route that is not to a FastCGI upstream,
//!   and `strip_prefix`/`replace_prefix`/`proxy_host` on one that is;
//! - routes that could never be chosen: two proxy routes with the same
//!   prefix and the same hosts, or a proxy route without hosts on the prefix
//!   of a static route.
//!
//! The TLS keys (`tls`, `tls_verify`, `tls_ca`, `tls_sni`) are validated
//! in `tls.rs`, which also reads `tls_ca` (or the system bundle).
//!
//! Server addresses are checked for shape only (`HOST:PORT`, `[V6]:PORT`,
//! and `unix:PATH`, relative to the file's directory; parsed in `addr.rs`);
//! DNS names are resolved by the proxy at run time, every `resolve_every`,
//! so a config naming a host that does not resolve yet still loads. IP
//! literals are kept in canonical form without brackets, DNS names in lower
//! case.

use std::path::Path;
use std::time::Duration;

use ringside_http::{EncodedSlash, PathParameters};
use ringside_runtime::cidr::Cidr;
use toml::Spanned;

use super::addr::{port_number, route_host, server_entry, server_text};
use super::cx::{duration, int_in, Cx};
use super::error::ConfigError;
use super::file::{FileConfig, RouteSection, ServerValue, UpstreamSection, ViaValue};
use crate::upstream::settings::{
    ActiveHealth, Balance, FastCgiRoute, ForwardHeaders, ForwardPath, HashKey, HostHeader,
    HttpSettings, HttpVersion, PassiveHealth, PoolSettings, Protocol, ProxyConfig, ProxyRoute,
    ProxyVersion, RetryOn, RetryPolicy, ServerSpec, Underscores, UpstreamConfig, UpstreamProtocol,
    UpstreamTimeouts,
};

/// Active health check defaults, for when `health_path` turns them on.
pub const HEALTH_INTERVAL: Duration = Duration::from_secs(5);
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);
pub const HEALTH_STATUS: u16 = 200;
pub const HEALTH_FALL: u32 = 2;
pub const HEALTH_RISE: u32 = 2;

pub const MAX_WEIGHT: i64 = 1000;
pub const MAX_IDLE: i64 = 65535;
pub const MAX_RETRIES: i64 = 100;
pub const MAX_FAILS: i64 = 1000;
pub const MAX_FALL_RISE: i64 = 100;

/// `[proxy] encoded_slash` values.
pub const ENCODED_SLASH: [(&str, EncodedSlash); 2] = [
    ("reject", EncodedSlash::Reject),
    ("pass", EncodedSlash::Pass),
];
/// `[proxy] path_parameters` values.
pub const PATH_PARAMETERS: [(&str, PathParameters); 2] = [
    ("set_aside", PathParameters::SetAside),
    ("reject", PathParameters::Reject),
];
/// `[proxy] underscores_in_headers` values.
pub const UNDERSCORES: [(&str, Underscores); 3] = [
    ("drop", Underscores::Drop),
    ("pass", Underscores::Pass),
    ("reject", Underscores::Reject),
];
/// `[[route]] forward_path` values.
pub const FORWARD_PATHS: [(&str, ForwardPath); 2] = [
    ("normalized", ForwardPath::Normalized),
    ("raw", ForwardPath::Raw),
];

/// What `name` stands for in `table`, a key's names with their values.
pub fn named<T: Copy>(table: &[(&str, T)], name: &str) -> Result<T, String> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| one_of(table.iter().map(|(n, _)| *n), name))
}

/// The name `value` has in `table`.
pub fn name_of<T: PartialEq>(table: &[(&'static str, T)], value: &T) -> &'static str {
    table
        .iter()
        .find(|(_, v)| v == value)
        .map_or("", |(n, _)| n)
}

/// `balance` names.
pub const BALANCES: [&str; 4] = ["round_robin", "least_conn", "p2c", "hash"];

/// The flag of [`RetryOn`] that one `retry_on` name sets.
pub type RetryFlag = fn(&mut RetryOn) -> &mut bool;

/// `retry_on` names, with the flag each sets.
pub const RETRY_ON: [(&str, RetryFlag); 6] = [
    ("connect", |r| &mut r.connect),
    ("timeout", |r| &mut r.timeout),
    ("invalid_response", |r| &mut r.invalid_response),
    ("http_502", |r| &mut r.http_502),
    ("http_503", |r| &mut r.http_503),
    ("http_504", |r| &mut r.http_504),
];

impl Cx<'_> {
    /// `[proxy]`, `[upstream.*]` and the proxy routes. Runs after the static
    /// routes are validated, so their prefixes are known to be paths.
    /// Relative paths (`unix:` sockets, FastCGI roots) are taken from
    /// `base`; FastCGI routes without a root take `server_root`.
    pub(super) fn proxy(
        &self,
        f: &FileConfig,
        base: &Path,
        server_root: &Path,
    ) -> Result<ProxyConfig, ConfigError> {
        let headers = self.forward_headers(f)?;
        let mut upstreams = Vec::with_capacity(f.upstream.len());
        for (name, section) in &f.upstream {
            self.check(name, &format!("[upstream.{:?}]", name.get_ref()), |n| {
                upstream_name(n)
            })?;
            let table = format!("[upstream.{}]", name.get_ref());
            upstreams.push(self.upstream(name.get_ref(), &table, section, base)?);
        }
        let mut routes: Vec<ProxyRoute> = Vec::new();
        let mut statics: Vec<&str> = Vec::new();
        for r in &f.routes {
            let r = r.get_ref();
            match &r.upstream {
                None => {
                    self.static_route(r, &routes)?;
                    statics.push(r.prefix.get_ref());
                }
                Some(up) => {
                    let route = self.proxy_route(r, up, &upstreams, base, server_root)?;
                    self.check(&r.prefix, "[[route]] prefix", |_| {
                        route_conflict(&route, &routes, statics.iter().copied())
                    })?;
                    routes.push(route);
                }
            }
        }
        Ok(ProxyConfig {
            upstreams,
            routes,
            headers,
            encoded_slash: self.or(
                &f.proxy.encoded_slash,
                "[proxy] encoded_slash",
                EncodedSlash::Reject,
                |v| named(&ENCODED_SLASH, v),
            )?,
            path_parameters: self.or(
                &f.proxy.path_parameters,
                "[proxy] path_parameters",
                PathParameters::SetAside,
                |v| named(&PATH_PARAMETERS, v),
            )?,
            allow_trace: f.proxy.allow_trace.as_ref().is_some_and(|v| *v.get_ref()),
        })
    }

    fn forward_headers(&self, f: &FileConfig) -> Result<ForwardHeaders, ConfigError> {
        let p = &f.proxy;
        let d = ForwardHeaders::default();
        Ok(ForwardHeaders {
            x_forwarded: p.x_forwarded.as_ref().map_or(d.x_forwarded, |v| *v.get_ref()),
            forwarded: p.forwarded.as_ref().map_or(d.forwarded, |v| *v.get_ref()),
            trusted_forwarders: self.trusted_forwarders(f)?,
            via: self.or(&p.via, "[proxy] via", d.via.clone(), |v| match v {
                ViaValue::Enabled(false) => Ok(None),
                ViaValue::Enabled(true) => Ok(d.via.clone()),
                ViaValue::Name(n) if n.is_empty() => Ok(None),
                ViaValue::Name(n) if is_token(n) => Ok(Some(n.clone())),
                ViaValue::Name(n) => Err(format!(
                    "expected a pseudonym of letters, digits and !#$%&'*+-.^_`|~ (RFC 9110 §7.6.3), got {n:?}"
                )),
            })?,
            underscores: self.or(
                &p.underscores_in_headers,
                "[proxy] underscores_in_headers",
                d.underscores,
                |v| named(&UNDERSCORES, v),
            )?,
        })
    }

    /// `[proxy] trusted_forwarders`: addresses and CIDR blocks.
    fn trusted_forwarders(&self, f: &FileConfig) -> Result<Vec<Cidr>, ConfigError> {
        let mut out = Vec::new();
        for entry in f.proxy.trusted_forwarders.iter().flat_map(|l| l.get_ref()) {
            out.extend(self.check(entry, "[proxy] trusted_forwarders", |s| Cidr::parse(s))?);
        }
        Ok(out)
    }

    fn upstream(
        &self,
        name: &str,
        table: &str,
        s: &Spanned<UpstreamSection>,
        base: &Path,
    ) -> Result<UpstreamConfig, ConfigError> {
        let key = |k: &str| format!("{table} {k}");
        let u = s.get_ref();
        let d = UpstreamConfig::new(name, Vec::new());
        let kind = self.protocol(u, &key)?;
        let fastcgi = self.fastcgi_settings(u, &key, kind)?;
        let tls = self.upstream_tls(u, &key, kind, base)?;
        let active = self.active(u, &key)?;
        let h2 = self.h2_settings(u, &key, kind)?;
        let protocol = match kind {
            Protocol::Http | Protocol::H2 | Protocol::Auto => {
                UpstreamProtocol::Http(HttpSettings {
                    version: match kind {
                        Protocol::H2 => HttpVersion::H2,
                        Protocol::Auto => HttpVersion::Auto,
                        _ => HttpVersion::H1,
                    },
                    h2,
                    tls,
                    active,
                    send_proxy: self.or(
                        &u.send_proxy_protocol,
                        &key("send_proxy_protocol"),
                        None,
                        |v| match v.as_str() {
                            // A PROXY header names the one client of its
                            // connection; an HTTP/2 one carries many.
                            _ if kind != Protocol::Http => Err(
                                "only for protocol = \"http\": an HTTP/2 connection carries many clients' requests".into(),
                            ),
                            "v1" => Ok(Some(ProxyVersion::V1)),
                            "v2" => Ok(Some(ProxyVersion::V2)),
                            _ => Err(format!("expected \"v1\" or \"v2\", got {v:?}")),
                        },
                    )?,
                })
            }
            Protocol::FastCgi => {
                if let Some(v) = &u.send_proxy_protocol {
                    return Err(self.err(
                        v.span(),
                        &key("send_proxy_protocol"),
                        "only for protocol = \"http\" (this upstream speaks FastCGI)".into(),
                    ));
                }
                UpstreamProtocol::FastCgi(fastcgi)
            }
        };

        let servers = match &u.servers {
            None => {
                return Err(self.err(
                    s.span(),
                    &key("servers"),
                    "missing; expected a list of at least one server like servers = [\"127.0.0.1:9000\"]"
                        .into(),
                ))
            }
            Some(list) => self.servers(list, &key("servers"), kind, base)?,
        };

        let balance = match &u.balance {
            None => Some(d.balance.clone()),
            Some(b) => self.check(b, &key("balance"), |b: &String| balance(b))?,
        };
        let balance = match (balance, &u.hash_key) {
            (None, Some(k)) => self.check(k, &key("hash_key"), |k: &String| {
                hash_key(k).map(Balance::Hash)
            })?,
            (None, None) => {
                let b = u
                    .balance
                    .as_ref()
                    .expect("only a written balance can be hash");
                return Err(self.err(
                    b.span(),
                    &key("balance"),
                    "\"hash\" needs hash_key = \"client_ip\", \"header:NAME\" or \"cookie:NAME\""
                        .into(),
                ));
            }
            (Some(_), Some(k)) => {
                return Err(self.err(
                    k.span(),
                    &key("hash_key"),
                    "only with balance = \"hash\"".into(),
                ))
            }
            (Some(b), None) => b,
        };

        let pool = PoolSettings {
            max_idle: self.or(&u.max_idle, &key("max_idle"), d.pool.max_idle, |&n| {
                int_in(n, 0, MAX_IDLE).map(|n| n as usize)
            })?,
            idle_timeout: self.or(
                &u.idle_timeout,
                &key("idle_timeout"),
                d.pool.idle_timeout,
                duration,
            )?,
        };
        let t = &d.timeouts;
        let timeouts = UpstreamTimeouts {
            connect: self.or(
                &u.connect_timeout,
                &key("connect_timeout"),
                t.connect,
                duration,
            )?,
            send: self.or(&u.send_timeout, &key("send_timeout"), t.send, duration)?,
            response_head: self.or(
                &u.response_timeout,
                &key("response_timeout"),
                t.response_head,
                duration,
            )?,
            body_idle: self.or(&u.body_timeout, &key("body_timeout"), t.body_idle, duration)?,
        };
        let retry = RetryPolicy {
            count: self.or(&u.retries, &key("retries"), d.retry.count, |&n| {
                int_in(n, 0, MAX_RETRIES).map(|n| n as u32)
            })?,
            on: match &u.retry_on {
                None => d.retry.on,
                Some(list) => self.retry_on(list, &key("retry_on"))?,
            },
        };
        Ok(UpstreamConfig {
            name: name.to_owned(),
            protocol,
            servers,
            balance,
            resolve_every: self.or(
                &u.resolve_every,
                &key("resolve_every"),
                d.resolve_every,
                duration,
            )?,
            pool,
            timeouts,
            retry,
            passive: self.passive(u, &key, d.passive)?,
        })
    }

    fn servers(
        &self,
        list: &Spanned<Vec<Spanned<ServerValue>>>,
        key: &str,
        protocol: Protocol,
        base: &Path,
    ) -> Result<Vec<ServerSpec>, ConfigError> {
        if list.get_ref().is_empty() {
            return Err(self.err(list.span(), key, "expected at least one server".into()));
        }
        let addr = |a: &str| server_entry(a, protocol, base);
        let mut out: Vec<ServerSpec> = Vec::new();
        for item in list.get_ref() {
            let (spec, weight) = match item.get_ref() {
                ServerValue::Addr(a) => (self.check(item, key, |_| addr(a))?, 1),
                ServerValue::Table(t) => (
                    self.check(&t.addr, key, |a| addr(a))?,
                    match &t.weight {
                        None => 1,
                        Some(w) => self.check(w, key, |&w| {
                            int_in(w, 1, MAX_WEIGHT)
                                .map(|w| w as u32)
                                .map_err(|m| format!("weight: {m}"))
                        })?,
                    },
                ),
            };
            let spec = ServerSpec { weight, ..spec };
            if out
                .iter()
                .any(|s| s.host == spec.host && s.port == spec.port && s.unix == spec.unix)
            {
                return Err(self.err(
                    item.span(),
                    key,
                    format!(
                        "{} is listed twice (a weight gives a server a larger share)",
                        server_text(&spec)
                    ),
                ));
            }
            out.push(spec);
        }
        Ok(out)
    }

    fn retry_on(
        &self,
        list: &Spanned<Vec<Spanned<String>>>,
        key: &str,
    ) -> Result<RetryOn, ConfigError> {
        let mut on = RetryOn::default();
        for item in list.get_ref() {
            self.check(item, key, |name| {
                let flag = RETRY_ON
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, f)| f(&mut on))
                    .ok_or_else(|| one_of(RETRY_ON.iter().map(|(n, _)| *n), name))?;
                if *flag {
                    return Err(format!("{name:?} is listed twice"));
                }
                *flag = true;
                Ok(())
            })?;
        }
        Ok(on)
    }

    fn passive(
        &self,
        u: &UpstreamSection,
        key: &dyn Fn(&str) -> String,
        default: Option<PassiveHealth>,
    ) -> Result<Option<PassiveHealth>, ConfigError> {
        let d = default.expect("passive health is on by default");
        let max_fails = self.or(&u.max_fails, &key("max_fails"), d.max_fails, |&n| {
            int_in(n, 0, MAX_FAILS).map(|n| n as u32)
        })?;
        if max_fails == 0 {
            for (k, v) in [
                ("fail_window", &u.fail_window),
                ("fail_cooldown", &u.fail_cooldown),
            ] {
                if let Some(v) = v {
                    return Err(self.err(
                        v.span(),
                        &key(k),
                        "has no effect with max_fails = 0 (passive health checks off)".into(),
                    ));
                }
            }
            return Ok(None);
        }
        Ok(Some(PassiveHealth {
            max_fails,
            window: self.or(&u.fail_window, &key("fail_window"), d.window, duration)?,
            cooldown: self.or(
                &u.fail_cooldown,
                &key("fail_cooldown"),
                d.cooldown,
                duration,
            )?,
        }))
    }

    fn active(
        &self,
        u: &UpstreamSection,
        key: &dyn Fn(&str) -> String,
    ) -> Result<Option<ActiveHealth>, ConfigError> {
        let Some(path) = &u.health_path else {
            let given = [
                (
                    "health_interval",
                    u.health_interval.as_ref().map(Spanned::span),
                ),
                (
                    "health_timeout",
                    u.health_timeout.as_ref().map(Spanned::span),
                ),
                ("health_status", u.health_status.as_ref().map(Spanned::span)),
                ("health_fall", u.health_fall.as_ref().map(Spanned::span)),
                ("health_rise", u.health_rise.as_ref().map(Spanned::span)),
            ];
            if let Some((k, Some(span))) = given.into_iter().find(|(_, s)| s.is_some()) {
                return Err(self.err(
                    span,
                    &key(k),
                    "needs health_path (active health checks are off without it)".into(),
                ));
            }
            return Ok(None);
        };
        let path = self.check(path, &key("health_path"), |p| health_path(p))?;
        let interval = self.or(
            &u.health_interval,
            &key("health_interval"),
            HEALTH_INTERVAL,
            duration,
        )?;
        let timeout = self.or(
            &u.health_timeout,
            &key("health_timeout"),
            HEALTH_TIMEOUT,
            duration,
        )?;
        if timeout > interval {
            let (k, span, m) = match (&u.health_timeout, &u.health_interval) {
                (Some(t), _) => (
                    "health_timeout",
                    t.span(),
                    format!(
                        "expected at most health_interval ({}), got {}",
                        fmt_d(interval),
                        t.get_ref()
                    ),
                ),
                (None, Some(i)) => (
                    "health_interval",
                    i.span(),
                    format!(
                        "expected at least health_timeout ({} by default), got {}",
                        fmt_d(timeout),
                        i.get_ref()
                    ),
                ),
                (None, None) => unreachable!("the defaults fit together"),
            };
            return Err(self.err(span, &key(k), m));
        }
        let count = |n: i64| int_in(n, 1, MAX_FALL_RISE).map(|n| n as u32);
        Ok(Some(ActiveHealth {
            path,
            interval,
            timeout,
            expect_status: self.or(
                &u.health_status,
                &key("health_status"),
                HEALTH_STATUS,
                |&n| int_in(n, 100, 599).map(|n| n as u16),
            )?,
            fall: self.or(&u.health_fall, &key("health_fall"), HEALTH_FALL, |&n| {
                count(n)
            })?,
            rise: self.or(&u.health_rise, &key("health_rise"), HEALTH_RISE, |&n| {
                count(n)
            })?,
        }))
    }

    /// A route without `upstream` may not use the proxy-only keys; its prefix
    /// may not be one a proxy route without hosts already has.
    fn static_route(&self, r: &RouteSection, proxies: &[ProxyRoute]) -> Result<(), ConfigError> {
        let proxy_only = [
            ("host", r.host.as_ref().map(Spanned::span)),
            ("strip_prefix", r.strip_prefix.as_ref().map(Spanned::span)),
            (
                "replace_prefix",
                r.replace_prefix.as_ref().map(Spanned::span),
            ),
            ("proxy_host", r.proxy_host.as_ref().map(Spanned::span)),
            ("forward_path", r.forward_path.as_ref().map(Spanned::span)),
            ("upgrade", r.upgrade.as_ref().map(Spanned::span)),
            ("grpc", r.grpc.as_ref().map(Spanned::span)),
        ];
        if let Some((k, Some(span))) = proxy_only.into_iter().find(|(_, s)| s.is_some()) {
            return Err(self.err(
                span,
                &format!("[[route]] {k}"),
                "only for a proxy route (one with upstream = \"NAME\")".into(),
            ));
        }
        self.no_script_keys(
            r,
            "this is a static route (whose index files are [static] index)",
        )?;
        self.check(&r.prefix, "[[route]] prefix", |p| {
            match proxies.iter().find(|o| &o.prefix == p && o.hosts.is_empty()) {
                Some(_) => Err(format!(
                    "{p:?} is already a proxy route for any host; a static route beside it would never be used"
                )),
                None => Ok(()),
            }
        })
    }

    fn proxy_route(
        &self,
        r: &RouteSection,
        up: &Spanned<String>,
        upstreams: &[UpstreamConfig],
        base: &Path,
        server_root: &Path,
    ) -> Result<ProxyRoute, ConfigError> {
        let prefix = self.check(&r.prefix, "[[route]] prefix", |p| route_prefix(p))?;
        let upstream = self.check(up, "[[route]] upstream", |name| {
            upstreams
                .iter()
                .position(|u| &u.name == name)
                .ok_or_else(|| {
                    let names: Vec<String> =
                        upstreams.iter().map(|u| format!("{:?}", u.name)).collect();
                    if names.is_empty() {
                        format!("no [upstream.{name}] is defined (there are no upstreams)")
                    } else {
                        format!(
                            "no [upstream.{name}] is defined (upstreams: {})",
                            names.join(", ")
                        )
                    }
                })
        })?;
        let u = &upstreams[upstream];
        let fastcgi = u.protocol_kind() == Protocol::FastCgi;
        let static_only = [
            ("cache_control", r.cache_control.as_ref().map(Spanned::span)),
            ("listing", r.listing.as_ref().map(Spanned::span)),
            ("alias", r.alias.as_ref().map(Spanned::span)),
        ];
        if let Some((k, Some(span))) = static_only.into_iter().find(|(_, s)| s.is_some()) {
            return Err(self.err(
                span,
                &format!("[[route]] {k}"),
                format!(
                    "only for a static route; this one goes to upstream {:?}",
                    up.get_ref()
                ),
            ));
        }
        if let (Some(root), false) = (&r.root, fastcgi || r.try_files.is_some()) {
            return Err(self.err(
                root.span(),
                "[[route]] root",
                format!(
                    "only for a static route or one to a FastCGI upstream; upstream {:?} speaks HTTP (a route to it takes root with try_files)",
                    up.get_ref()
                ),
            ));
        }
        let script = if fastcgi {
            Some(self.script_route(r, u, base, server_root)?)
        } else {
            self.no_script_keys(r, &format!("upstream {:?} speaks HTTP", up.get_ref()))?;
            None
        };
        let hosts = match &r.host {
            None => Vec::new(),
            Some(list) => {
                if list.get_ref().is_empty() {
                    return Err(self.err(
                        list.span(),
                        "[[route]] host",
                        "expected at least one host name (leave host out for any host)".into(),
                    ));
                }
                self.unique(list, "[[route]] host", route_host)?
            }
        };
        let replace_prefix = match (&r.strip_prefix, &r.replace_prefix) {
            (Some(_), Some(rp)) => return Err(self.err(
                rp.span(),
                "[[route]] replace_prefix",
                "not together with strip_prefix (strip_prefix = true is replace_prefix = \"/\")"
                    .into(),
            )),
            (Some(s), None) => s.get_ref().then(|| "/".to_owned()),
            (None, Some(rp)) => Some(self.check(rp, "[[route]] replace_prefix", |p| {
                if p.starts_with('/') && path_chars(p) {
                    Ok(p.clone())
                } else {
                    Err(format!("expected a path starting with \"/\", got {p:?}"))
                }
            })?),
            (None, None) => None,
        };
        let host = self.or(
            &r.proxy_host,
            "[[route]] proxy_host",
            HostHeader::Pass,
            |h| proxy_host(h),
        )?;
        let forward_path = self.or(
            &r.forward_path,
            "[[route]] forward_path",
            ForwardPath::Normalized,
            |v| named(&FORWARD_PATHS, v),
        )?;
        let upgrade = match &r.upgrade {
            None => Vec::new(),
            Some(list) if fastcgi => {
                return Err(self.err(
                    list.span(),
                    "[[route]] upgrade",
                    format!(
                        "only for a route to an HTTP upstream; upstream {:?} speaks FastCGI",
                        up.get_ref()
                    ),
                ))
            }
            Some(list) => self.unique(list, "[[route]] upgrade", upgrade_token)?,
        };
        let grpc = match &r.grpc {
            Some(g) if fastcgi && *g.get_ref() => {
                return Err(self.err(
                    g.span(),
                    "[[route]] grpc",
                    "only for a route to an HTTP upstream (gRPC needs HTTP/2)".into(),
                ))
            }
            g => g.as_ref().is_some_and(|g| *g.get_ref()),
        };
        Ok(ProxyRoute {
            hosts,
            prefix,
            upstream,
            replace_prefix,
            host,
            fastcgi: script,
            forward_path,
            upgrade,
            grpc,
            cache: None,
        })
    }
}

impl Cx<'_> {
    /// A list of names, each checked by `check` (which may rewrite it),
    /// none listed twice.
    pub(super) fn unique(
        &self,
        list: &Spanned<Vec<Spanned<String>>>,
        key: &str,
        check: impl Fn(&str) -> Result<String, String>,
    ) -> Result<Vec<String>, ConfigError> {
        let mut out: Vec<String> = Vec::new();
        for item in list.get_ref() {
            out.push(self.check(item, key, |v| {
                let v = check(v)?;
                if out.contains(&v) {
                    return Err(format!("{v:?} is listed twice"));
                }
                Ok(v)
            })?);
        }
        Ok(out)
    }
}

/// Why `route` cannot join `proxies` and the static routes with `statics`
/// prefixes, if it cannot: the same prefix and hosts as another proxy
/// route, or no hosts and the prefix of a static route.
pub fn route_conflict<'a>(
    route: &ProxyRoute,
    proxies: &[ProxyRoute],
    statics: impl IntoIterator<Item = &'a str>,
) -> Result<(), String> {
    let p = &route.prefix;
    let hosts = sorted(&route.hosts);
    if proxies
        .iter()
        .any(|o| &o.prefix == p && sorted(&o.hosts) == hosts)
    {
        return Err(if hosts.is_empty() {
            format!("{p:?} is already a proxy route for any host")
        } else {
            format!("{p:?} is already a proxy route for the same hosts")
        });
    }
    if hosts.is_empty() && statics.into_iter().any(|s| s == p) {
        return Err(format!(
            "{p:?} is already a static route; a proxy route on it needs host = [...] to tell them apart"
        ));
    }
    Ok(())
}

/// Adds `up` in its place by name, renumbering the routes that refer to
/// upstreams after it; returns its index.
pub fn insert_upstream(proxy: &mut ProxyConfig, up: UpstreamConfig) -> Result<usize, String> {
    let at = match proxy.upstreams.binary_search_by(|u| u.name.cmp(&up.name)) {
        Ok(_) => {
            return Err(format!(
                "an upstream called {:?} is already defined",
                up.name
            ))
        }
        Err(at) => at,
    };
    proxy.upstreams.insert(at, up);
    for r in &mut proxy.routes {
        if r.upstream >= at {
            r.upstream += 1;
        }
    }
    Ok(at)
}

/// A proxy route with the default settings for `--upstream` (and, with
/// `fastcgi`, for `--fastcgi`): every path of every host, passed on
/// unchanged with the client's Host.
pub fn catch_all_route(upstream: usize, fastcgi: Option<FastCgiRoute>) -> ProxyRoute {
    ProxyRoute {
        hosts: Vec::new(),
        prefix: "/".to_owned(),
        upstream,
        replace_prefix: None,
        host: HostHeader::Pass,
        fastcgi,
        forward_path: ForwardPath::Normalized,
        upgrade: Vec::new(),
        grpc: false,
        cache: None,
    }
}

fn sorted(hosts: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = hosts.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

fn fmt_d(d: Duration) -> String {
    format!("{:?}", super::size::format_duration(d))
}

fn one_of<'a>(names: impl Iterator<Item = &'a str>, got: &str) -> String {
    let names: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    format!("expected one of {}, got {got:?}", names.join(", "))
}

/// `[A-Za-z0-9_-]+`.
pub fn upstream_name(n: &str) -> Result<(), String> {
    super::names::section_name("an upstream", n)
}

/// `balance`: `None` for `"hash"`, whose key comes from `hash_key`.
fn balance(name: &str) -> Result<Option<Balance>, String> {
    match name {
        "round_robin" => Ok(Some(Balance::RoundRobin)),
        "least_conn" => Ok(Some(Balance::LeastConn)),
        "p2c" => Ok(Some(Balance::P2c)),
        "hash" => Ok(None),
        _ => Err(one_of(BALANCES.into_iter(), name)),
    }
}

/// `hash_key = "client_ip" | "header:NAME" | "cookie:NAME"`.
pub fn hash_key(text: &str) -> Result<HashKey, String> {
    match text.split_once(':') {
        None if text == "client_ip" => Ok(HashKey::ClientIp),
        Some(("header", name)) if is_token(name) => Ok(HashKey::Header(name.to_ascii_lowercase())),
        Some(("cookie", name)) if is_token(name) => Ok(HashKey::Cookie(name.to_owned())),
        Some((kind @ ("header" | "cookie"), name)) => Err(format!(
            "expected a {kind} name of letters, digits and !#$%&'*+-.^_`|~, got {name:?}"
        )),
        _ => Err(format!(
            "expected \"client_ip\", \"header:NAME\" or \"cookie:NAME\", got {text:?}"
        )),
    }
}

/// The text form of a hash key, as `hash_key` takes it.
pub fn hash_key_text(k: &HashKey) -> String {
    match k {
        HashKey::ClientIp => "client_ip".to_owned(),
        HashKey::Header(h) => format!("header:{h}"),
        HashKey::Cookie(c) => format!("cookie:{c}"),
    }
}

/// The config name of a balance (`"hash"` for every key).
pub fn balance_name(b: &Balance) -> &'static str {
    match b {
        Balance::RoundRobin => "round_robin",
        Balance::LeastConn => "least_conn",
        Balance::P2c => "p2c",
        Balance::Hash(_) => "hash",
    }
}

/// RFC 9110 §5.6.2 token.
fn is_token(s: &str) -> bool {
    ringside_http::grammar::is_token(s.as_bytes())
}

/// Visible ASCII without spaces, as a path in a request line may have.
fn path_chars(p: &str) -> bool {
    p.bytes().all(|b| (0x21..0x7f).contains(&b))
}

/// A route's prefix: a path as requests are matched, normalized (see
/// `ringside_http::path`), so a prefix that could never equal a request's
/// path is refused where it is written.
pub fn route_prefix(p: &str) -> Result<String, String> {
    if !p.starts_with('/') {
        return Err(format!("expected a path starting with \"/\", got {p:?}"));
    }
    if p.contains(';') {
        return Err(format!("routes match paths with their segment parameters (;...) set aside, so {p:?} would match none; write it without them"));
    }
    let mut normal = Vec::new();
    match ringside_http::path::normalize_into(p.as_bytes(), EncodedSlash::Reject, &mut normal) {
        Ok(false) => Ok(p.to_owned()),
        Ok(true) => Err(format!(
            "requests are matched on their normalized path, which is spelled {:?}; write that",
            String::from_utf8_lossy(&normal)
        )),
        Err(e) => Err(format!(
            "{e}: expected a path as requests are matched (spaces, non-ASCII and the like as %XX), got {p:?}"
        )),
    }
}

/// An `upgrade` protocol a route passes on besides `websocket`.
fn upgrade_token(t: &str) -> Result<String, String> {
    let name = t.to_ascii_lowercase();
    if name == "h2c" {
        return Err("h2c is never passed on: RFC 9113 dropped it, and a proxy that tunnels it lets HTTP/2 pass unchecked".into());
    }
    if !ringside_http::grammar::is_token(name.as_bytes()) {
        return Err(format!(
            "expected a protocol name (a token like \"websocket\"), got {t:?}"
        ));
    }
    Ok(name)
}

fn health_path(p: &str) -> Result<String, String> {
    if p.starts_with('/') && path_chars(p) {
        Ok(p.to_owned())
    } else {
        Err(format!(
            "expected a path starting with \"/\" (visible ASCII, no spaces), got {p:?}"
        ))
    }
}

/// `proxy_host = "pass" | "upstream" | "HOST[:PORT]"`.
pub fn proxy_host(text: &str) -> Result<HostHeader, String> {
    // In any case: host names are, so "Upstream" as a host would be the
    // name "upstream", which the config writer could only spell as the
    // keyword.
    if text.eq_ignore_ascii_case("pass") {
        return Ok(HostHeader::Pass);
    }
    if text.eq_ignore_ascii_case("upstream") {
        return Ok(HostHeader::Upstream);
    }
    let expected = || {
        format!(
            "expected \"pass\", \"upstream\" or a host like \"app.internal\" or \"app.internal:8080\", got {text:?}"
        )
    };
    let (host, port) = if text.starts_with('[') {
        match text.rsplit_once("]:") {
            Some((h, p)) => (format!("{h}]"), Some(p)),
            None => (text.to_owned(), None),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (text.to_owned(), None),
        }
    };
    if host.starts_with("*.") {
        return Err(expected());
    }
    let host = route_host(&host).map_err(|m| format!("{} ({m})", expected()))?;
    Ok(HostHeader::Set(match port {
        Some(p) => format!("{host}:{}", port_number(p)?),
        None => host,
    }))
}

/// The text form of a Host header choice, as `proxy_host` takes it.
pub fn proxy_host_text(h: &HostHeader) -> &str {
    match h {
        HostHeader::Pass => "pass",
        HostHeader::Upstream => "upstream",
        HostHeader::Set(s) => s,
    }
}
