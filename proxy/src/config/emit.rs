//! Writes a [`Config`] back as TOML: the effective configuration with every
//! key, sizes and durations in their shortest exact form, and listen
//! addresses as resolved. The output is valid input for `Config::load`.
//!
//! Sections come in a fixed order: `[runtime]`, `[server]`, `[limits]`,
//! `[timeouts]`, `[http2]`, `[http3]`, `[static]`, the operations sections, `[tls]` (only when a
//! listener has TLS) and each `[[vhost]]`, `[proxy]`, each
//! `[upstream.NAME]` by name, each `[cache.NAME]` by name, each
//! `[[rate_limit]]`, then the static routes and the proxy routes.
//! A TLS listener is written as a table with its certificate paths, one
//! entry per resolved address; with one, `listen` takes a line per entry. Keys that a validated value
//! leaves out are left out (`fail_window` with `max_fails = 0`, `health_*`
//! without active checks, `hash_key` without `balance = "hash"`,
//! `max_conns` when it is learnt from the server), and so are the keys of
//! the other protocol: the FastCGI keys on an HTTP upstream, the `tls*`
//! keys on a FastCGI one (`tls_verify`, `tls_ca` and `tls_sni` also
//! without `tls = true`, `tls_ca` when it is the system bundle), and
//! `proxy_host` on a route to a FastCGI upstream, which writes `root`,
//! `extension` and `index` instead.

use std::fmt::{self, Write};

use ringside_runtime::config::{Affinity, Workers};

use super::access::{write_rules, AccessConfig};
use super::addr::server_text;
use super::fastcgi::protocol_name;
use super::rate::{write_limits, write_route_limit};
use super::size::{format_duration, format_size};
use super::tls::{min_version_text, unknown_name_text, TlsConfig};
use super::upstream::{
    balance_name, hash_key_text, name_of, proxy_host_text, ENCODED_SLASH, FORWARD_PATHS,
    PATH_PARAMETERS, RETRY_ON, UNDERSCORES,
};
use super::validate::backend_name;
use super::Config;

use crate::tls::certs::CertPaths;
use crate::upstream::settings::{
    Balance, ForwardPath, HttpVersion, ProxyConfig, ProxyVersion, UpstreamConfig,
};

/// A TOML string literal.
pub(super) fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A duration, as a string: `"60s"`.
pub(super) fn dur(d: std::time::Duration) -> String {
    quote(&format_duration(d))
}

/// A table name part: bare where TOML allows it, else quoted.
fn table_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        name.to_owned()
    } else {
        quote(name)
    }
}

/// A size: `"16k"` where a suffix is exact, else integer bytes.
pub(super) fn size(bytes: u64) -> String {
    let text = format_size(bytes);
    match i64::try_from(bytes) {
        Ok(_) if text.bytes().all(|b| b.is_ascii_digit()) => text,
        _ => quote(&text),
    }
}

impl Config {
    /// The effective configuration as TOML, every key included.
    ///
    /// A root path that is not UTF-8 is written lossily.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        self.write_toml(&mut out)
            .expect("writing to a String cannot fail");
        out
    }

    fn write_toml(&self, out: &mut String) -> fmt::Result {
        let r = &self.runtime;
        let s = &self.server;
        let l = &s.limits;
        let t = &s.timeouts;

        writeln!(out, "[runtime]")?;
        let workers = match r.workers {
            Workers::Auto => quote("auto"),
            Workers::Count(n) => n.to_string(),
        };
        writeln!(out, "workers = {workers}")?;
        let affinity = match &r.affinity {
            Affinity::Off => "false".to_owned(),
            Affinity::Auto => "\"auto\"".to_owned(),
            Affinity::On => "true".to_owned(),
            Affinity::Cpus(cpus) => {
                let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
                format!("[{}]", list.join(", "))
            }
        };
        writeln!(out, "cpu_affinity = {affinity}")?;
        writeln!(out, "backend = {}", quote(backend_name(r.backend)))?;
        writeln!(out, "ring_entries = {}", r.ring_entries)?;
        writeln!(out, "coalesce_wait = {}", dur(r.coalesce_wait))?;

        writeln!(out, "\n[server]")?;
        let mut listen: Vec<String> = s
            .listen
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let addr = quote(&a.to_string());
                let h2 = s.http2.get(i).copied().unwrap_or(true);
                let mut more = if h2 {
                    String::new()
                } else {
                    ", http2 = false".to_owned()
                };
                if self.tls.listener(i).is_some() && !s.http3.get(i).copied().unwrap_or(true) {
                    more.push_str(", http3 = false");
                }
                if let Some(Some(trusted)) = s.proxy_protocol.get(i) {
                    let list: Vec<String> = trusted.iter().map(|c| format!("\"{c}\"")).collect();
                    more.push_str(&format!(
                        ", proxy_protocol = true, trusted = [{}]",
                        list.join(", ")
                    ));
                }
                match self.tls.listener(i) {
                    None if more.is_empty() => addr,
                    None => format!("{{ addr = {addr}{more} }}"),
                    Some(c) => format!("{{ addr = {addr}, tls = {}{more} }}", cert_table(c, true)),
                }
            })
            .collect();
        listen.extend(self.unix_listen.iter().map(|u| u.text()));
        if self.tls.any_tls() {
            writeln!(out, "listen = [")?;
            for l in &listen {
                writeln!(out, "  {l},")?;
            }
            writeln!(out, "]")?;
        } else {
            writeln!(out, "listen = [{}]", listen.join(", "))?;
        }
        writeln!(out, "backlog = {}", s.backlog)?;
        writeln!(out, "root = {}", quote(&self.root.to_string_lossy()))?;
        super::ops::write_server_keys(&self.ops, out)?;
        write_rules(out, &self.access.server)?;
        super::headers::write_server(out, &self.headers)?;
        super::error_pages::write_pages(out, &self.error_pages.server)?;

        writeln!(out, "\n[limits]")?;
        writeln!(
            out,
            "max_request_line = {}",
            size(l.max_request_line as u64)
        )?;
        writeln!(out, "max_head = {}", size(l.max_head as u64))?;
        writeln!(out, "max_headers = {}", l.max_headers)?;
        writeln!(out, "max_body = {}", size(l.max_body))?;
        writeln!(out, "max_connections = {}", s.max_connections)?;
        writeln!(out, "max_client_connections = {}", l.max_client_connections)?;
        writeln!(
            out,
            "client_connections_status = {}",
            l.client_connections_status
        )?;

        writeln!(out, "\n[timeouts]")?;
        for (key, d) in [
            ("header_read", t.header_read),
            ("keepalive", t.keepalive_idle),
            ("body_read", t.body_read),
            ("send", t.send),
            ("shutdown_grace", t.shutdown_grace),
        ] {
            writeln!(out, "{key} = {}", quote(&format_duration(d)))?;
        }
        writeln!(out, "min_rate = {}", size(t.min_rate))?;

        let h = &s.h2;
        writeln!(out, "\n[http2]")?;
        writeln!(out, "max_concurrent_streams = {}", h.max_concurrent_streams)?;
        writeln!(out, "stream_window = {}", size(u64::from(h.stream_window)))?;
        writeln!(
            out,
            "connection_window = {}",
            size(u64::from(h.connection_window))
        )?;
        writeln!(out, "flood_budget = {}", h.flood_budget)?;

        let h = &s.h3;
        writeln!(out, "\n[http3]")?;
        writeln!(out, "max_concurrent_streams = {}", h.max_concurrent_streams)?;
        writeln!(out, "stream_window = {}", size(u64::from(h.stream_window)))?;
        writeln!(
            out,
            "connection_window = {}",
            size(u64::from(h.connection_window))
        )?;
        writeln!(out, "send_window = {}", size(u64::from(h.send_window)))?;
        writeln!(out, "retry_above = {}", h.retry_above)?;
        writeln!(out, "always_retry = {}", h.always_retry)?;
        writeln!(out, "max_handshakes = {}", h.max_handshakes)?;
        writeln!(out, "early_data = {}", h.early_data)?;

        let st = &self.statics;
        writeln!(out, "\n[static]")?;
        let index: Vec<String> = st.index.iter().map(|i| quote(i)).collect();
        writeln!(out, "index = [{}]", index.join(", "))?;
        writeln!(out, "listing = {}", st.listing)?;
        writeln!(out, "precompressed = {}", st.precompressed)?;
        if let Some(cc) = &st.cache_control {
            writeln!(out, "cache_control = {}", quote(cc))?;
        }
        let mime: Vec<String> = st
            .mime
            .iter()
            .map(|(e, t)| format!("{} = {}", quote(e), quote(t)))
            .collect();
        if mime.is_empty() {
            writeln!(out, "mime = {{}}")?;
        } else {
            writeln!(out, "mime = {{ {} }}", mime.join(", "))?;
        }
        writeln!(out, "cache_max_bytes = {}", size(st.cache.max_bytes))?;
        writeln!(out, "cache_max_file = {}", size(st.cache.max_file))?;
        writeln!(out, "cache_max_open = {}", st.cache.max_open)?;
        writeln!(
            out,
            "revalidate = {}",
            quote(&format_duration(st.cache.revalidate))
        )?;
        super::compress::write_section(out, &self.compression)?;
        super::ops::write_sections(&self.ops, out)?;
        write_tls(
            out,
            &self.tls,
            &self.access,
            &self.headers,
            &self.rewrites,
            &self.error_pages,
        )?;
        write_proxy(out, &self.proxy)?;
        super::cache::write_caches(out, &self.caches)?;
        super::acme::write_issuers(out, &self.acme)?;
        write_limits(out, &self.rates)?;
        super::rewrite::write_server(out, &self.rewrites.server)?;
        super::real_ip::write_section(out, &self.real_ip)?;
        for r in &st.routes {
            writeln!(out, "\n[[route]]")?;
            writeln!(out, "prefix = {}", quote(&r.prefix))?;
            match (&r.root, r.alias) {
                (Some(root), false) => {
                    writeln!(out, "root = {}", quote(&root.to_string_lossy()))?;
                }
                (Some(root), true) => {
                    writeln!(out, "alias = {}", quote(&root.to_string_lossy()))?;
                }
                // No config gives an alias without a directory; the server
                // root is what it would replace the prefix with.
                (None, true) => {
                    writeln!(out, "alias = {}", quote(&self.root.to_string_lossy()))?;
                }
                (None, false) => {}
            }
            if let Some(cc) = &r.cache_control {
                writeln!(out, "cache_control = {}", quote(cc))?;
            }
            if let Some(l) = r.listing {
                writeln!(out, "listing = {l}")?;
            }
            if self.ops.unlogged_static_prefixes.contains(&r.prefix) {
                writeln!(out, "access_log = false")?;
            }
            if let Some((_, rules)) = self
                .access
                .static_routes
                .iter()
                .find(|(p, _)| *p == r.prefix)
            {
                write_rules(out, rules)?;
            }
            let limit = self
                .rates
                .static_routes
                .iter()
                .find(|(p, _)| *p == r.prefix);
            write_route_limit(out, &self.rates, limit.map(|(_, l)| *l))?;
            super::compress::write_route(out, self.compression.static_route(&r.prefix))?;
            super::auth::write_route(out, self.auth.static_route(&r.prefix))?;
            super::headers::write_level(out, self.headers.static_route(&r.prefix))?;
            super::rewrite::write_list(out, self.rewrites.static_route(&r.prefix))?;
            if let Some(p) = self.error_pages.static_route(&r.prefix) {
                super::error_pages::write_pages(out, p)?;
            }
            super::try_files::write(out, self.try_files.static_route(&r.prefix))?;
            super::mtls::write_route(out, self.mtls.static_route(&r.prefix))?;
        }
        write_proxy_routes(out, self)
    }
}

/// `{ cert = "...", key = "..." }`.
fn cert_table(c: &CertPaths, listener: bool) -> String {
    if let Some(a) = &c.acme {
        return format!(
            "{{ {}{} }}",
            super::acme::write_keys(a, listener),
            super::mtls::write_keys(c.client.as_ref())
        );
    }
    format!(
        "{{ cert = {}, key = {}{} }}",
        quote(&c.cert.to_string_lossy()),
        quote(&c.key.to_string_lossy()),
        super::mtls::write_keys(c.client.as_ref())
    )
}

/// `[tls]` when a listener has TLS, and every `[[vhost]]`.
fn write_tls(
    out: &mut String,
    t: &TlsConfig,
    access: &AccessConfig,
    headers: &super::headers::HeadersConfig,
    rewrites: &super::rewrite::RewriteConfig,
    pages: &super::error_pages::ErrorPagesConfig,
) -> fmt::Result {
    if t.any_tls() {
        writeln!(out, "\n[tls]")?;
        writeln!(
            out,
            "unknown_name = {}",
            quote(unknown_name_text(t.unknown_name))
        )?;
        writeln!(
            out,
            "min_version = {}",
            quote(min_version_text(t.min_version))
        )?;
        writeln!(out, "tickets = {}", t.tickets)?;
    }
    for (i, v) in t.vhosts.iter().enumerate() {
        writeln!(out, "\n[[vhost]]")?;
        let names: Vec<String> = v.names.iter().map(|n| quote(n)).collect();
        writeln!(out, "names = [{}]", names.join(", "))?;
        if let Some(c) = &v.cert {
            writeln!(out, "tls = {}", cert_table(c, false))?;
        }
        writeln!(out, "https_redirect = {}", v.https_redirect)?;
        if let Some(h) = &v.hsts {
            writeln!(out, "hsts = {}", quote(h))?;
        }
        if let Some(rules) = access.vhosts.get(i) {
            write_rules(out, rules)?;
        }
        super::headers::write_level(out, headers.vhosts.get(i))?;
        if let Some(rules) = rewrites.vhosts.get(i) {
            super::rewrite::write_list(out, rules)?;
        }
        if let Some(p) = pages.vhosts.get(i) {
            super::error_pages::write_pages(out, p)?;
        }
    }
    Ok(())
}

/// `[proxy]` and every `[upstream.NAME]`.
fn write_proxy(out: &mut String, p: &ProxyConfig) -> fmt::Result {
    let h = &p.headers;
    writeln!(out, "\n[proxy]")?;
    writeln!(out, "x_forwarded = {}", h.x_forwarded)?;
    writeln!(out, "forwarded = {}", h.forwarded)?;
    let trusted: Vec<String> = h
        .trusted_forwarders
        .iter()
        .map(|c| quote(&c.to_string()))
        .collect();
    writeln!(out, "trusted_forwarders = [{}]", trusted.join(", "))?;
    match &h.via {
        Some(via) => writeln!(out, "via = {}", quote(via))?,
        None => writeln!(out, "via = false")?,
    }
    let slash = name_of(&ENCODED_SLASH, &p.encoded_slash);
    writeln!(out, "encoded_slash = {}", quote(slash))?;
    let params = name_of(&PATH_PARAMETERS, &p.path_parameters);
    writeln!(out, "path_parameters = {}", quote(params))?;
    writeln!(out, "allow_trace = {}", p.allow_trace)?;
    let underscores = name_of(&UNDERSCORES, &h.underscores);
    writeln!(out, "underscores_in_headers = {}", quote(underscores))?;
    for u in &p.upstreams {
        write_upstream(out, u)?;
    }
    Ok(())
}

fn write_upstream(out: &mut String, u: &UpstreamConfig) -> fmt::Result {
    writeln!(out, "\n[upstream.{}]", table_key(&u.name))?;
    writeln!(
        out,
        "protocol = {}",
        quote(protocol_name(u.protocol_kind()))
    )?;
    let servers: Vec<String> = u
        .servers
        .iter()
        .map(|s| {
            let addr = quote(&server_text(s));
            if s.weight == 1 {
                addr
            } else {
                format!("{{ addr = {addr}, weight = {} }}", s.weight)
            }
        })
        .collect();
    writeln!(out, "servers = [{}]", servers.join(", "))?;
    if let Some(f) = u.fastcgi() {
        if let Some(n) = f.max_conns {
            writeln!(out, "max_conns = {n}")?;
        }
        writeln!(out, "capacity_probe = {}", dur(f.capacity_probe))?;
        writeln!(out, "queue_size = {}", f.queue_size)?;
        writeln!(out, "queue_timeout = {}", dur(f.queue_timeout))?;
        writeln!(out, "keep_conn = {}", f.keep_conn)?;
    } else {
        writeln!(out, "tls = {}", u.tls().is_some())?;
        if let Some(t) = u.tls() {
            writeln!(out, "tls_verify = {}", t.verify)?;
            if let Some(ca) = &t.ca {
                writeln!(out, "tls_ca = {}", quote(&ca.to_string_lossy()))?;
            }
            if let Some(sni) = &t.sni {
                writeln!(out, "tls_sni = {}", quote(sni))?;
            }
        }
        if let Some(v) = u.send_proxy() {
            let v = if v == ProxyVersion::V1 { "v1" } else { "v2" };
            writeln!(out, "send_proxy_protocol = {}", quote(v))?;
        }
        if let Some(h) = u.http().filter(|h| h.version != HttpVersion::H1) {
            writeln!(out, "h2_connections = {}", h.h2.connections)?;
            writeln!(out, "h2_ping_interval = {}", dur(h.h2.ping_interval))?;
            writeln!(out, "h2_window = {}", size(u64::from(h.h2.stream_window)))?;
        }
    }
    writeln!(out, "balance = {}", quote(balance_name(&u.balance)))?;
    if let Balance::Hash(k) = &u.balance {
        writeln!(out, "hash_key = {}", quote(&hash_key_text(k)))?;
    }
    writeln!(out, "resolve_every = {}", dur(u.resolve_every))?;
    writeln!(out, "max_idle = {}", u.pool.max_idle)?;
    writeln!(out, "idle_timeout = {}", dur(u.pool.idle_timeout))?;
    let t = &u.timeouts;
    writeln!(out, "connect_timeout = {}", dur(t.connect))?;
    writeln!(out, "send_timeout = {}", dur(t.send))?;
    writeln!(out, "response_timeout = {}", dur(t.response_head))?;
    writeln!(out, "body_timeout = {}", dur(t.body_idle))?;
    writeln!(out, "retries = {}", u.retry.count)?;
    let mut on = u.retry.on;
    let names: Vec<String> = RETRY_ON
        .iter()
        .filter(|(_, flag)| *flag(&mut on))
        .map(|(n, _)| quote(n))
        .collect();
    writeln!(out, "retry_on = [{}]", names.join(", "))?;
    match &u.passive {
        Some(p) => {
            writeln!(out, "max_fails = {}", p.max_fails)?;
            writeln!(out, "fail_window = {}", dur(p.window))?;
            writeln!(out, "fail_cooldown = {}", dur(p.cooldown))?;
        }
        None => writeln!(out, "max_fails = 0")?,
    }
    if let Some(a) = u.active() {
        writeln!(out, "health_path = {}", quote(&a.path))?;
        writeln!(out, "health_interval = {}", dur(a.interval))?;
        writeln!(out, "health_timeout = {}", dur(a.timeout))?;
        writeln!(out, "health_status = {}", a.expect_status)?;
        writeln!(out, "health_fall = {}", a.fall)?;
        writeln!(out, "health_rise = {}", a.rise)?;
    }
    Ok(())
}

/// The `[[route]]`s that go to an upstream.
fn write_proxy_routes(out: &mut String, c: &Config) -> fmt::Result {
    let (p, unlogged) = (&c.proxy, &c.ops.unlogged_proxy_routes);
    let (access, rates) = (&c.access, &c.rates);
    let (compression, auth) = (&c.compression, &c.auth);
    for (i, r) in p.routes.iter().enumerate() {
        writeln!(out, "\n[[route]]")?;
        writeln!(out, "prefix = {}", quote(&r.prefix))?;
        if unlogged.contains(&i) {
            writeln!(out, "access_log = false")?;
        }
        if let Some(rules) = access.proxy_routes.get(i) {
            write_rules(out, rules)?;
        }
        write_route_limit(out, rates, rates.proxy_routes.get(i).copied().flatten())?;
        super::compress::write_route(out, compression.proxy_routes.get(i))?;
        super::auth::write_route(out, auth.proxy_routes.get(i).and_then(Option::as_ref))?;
        super::headers::write_level(out, c.headers.proxy_routes.get(i))?;
        if let Some(rules) = c.rewrites.proxy_routes.get(i) {
            super::rewrite::write_list(out, rules)?;
        }
        let name = p.upstreams.get(r.upstream).map_or("", |u| u.name.as_str());
        writeln!(out, "upstream = {}", quote(name))?;
        super::cache::write_route(out, &c.caches, r.cache)?;
        super::error_pages::write_proxy_route(out, &c.error_pages, i)?;
        let tried = c.try_files.proxy_routes.get(i).and_then(Option::as_ref);
        super::try_files::write(out, tried)?;
        let cert = c.mtls.proxy_routes.get(i).copied().unwrap_or(false);
        super::mtls::write_route(out, cert)?;
        if !r.hosts.is_empty() {
            let hosts: Vec<String> = r.hosts.iter().map(|h| quote(h)).collect();
            writeln!(out, "host = [{}]", hosts.join(", "))?;
        }
        if r.forward_path != ForwardPath::Normalized {
            let name = name_of(&FORWARD_PATHS, &r.forward_path);
            writeln!(out, "forward_path = {}", quote(name))?;
        }
        if let Some(f) = &r.fastcgi {
            writeln!(out, "root = {}", quote(&f.root.to_string_lossy()))?;
            writeln!(out, "extension = {}", quote(&f.extension))?;
            writeln!(out, "index = {}", quote(&f.index))?;
            continue;
        }
        match r.replace_prefix.as_deref() {
            Some("/") => writeln!(out, "strip_prefix = true")?,
            Some(rp) => writeln!(out, "replace_prefix = {}", quote(rp))?,
            None => {}
        }
        writeln!(out, "proxy_host = {}", quote(proxy_host_text(&r.host)))?;
        if !r.upgrade.is_empty() {
            let tokens: Vec<String> = r.upgrade.iter().map(|t| quote(t)).collect();
            writeln!(out, "upgrade = [{}]", tokens.join(", "))?;
        }
        if r.grpc {
            writeln!(out, "grpc = true")?;
        }
    }
    Ok(())
}
