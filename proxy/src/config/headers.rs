//! Header fields the config sets, adds and removes, on responses
//! (`response_headers`, nginx's `add_header` and `proxy_hide_header`) and
//! on the requests sent upstream (`request_headers`, nginx's
//! `proxy_set_header` and `fastcgi_param HTTP_*`), on `[server]`, each
//! `[[vhost]]` and each `[[route]]`; and `[server] server_tokens`.
//!
//! ```toml
//! [server]
//! server_tokens = true      # "Server: ringside" | false: no Server field | "NAME": that instead
//! response_headers = { set = { "X-Frame-Options" = "DENY" }, always = true }
//!
//! [[route]]
//! prefix = "/app/"
//! upstream = "php"
//! response_headers = { remove = ["X-Powered-By"], add = { "X-Served-By" = "edge-1" } }
//! request_headers = { set = { "X-Tenant" = "blue" }, remove = ["Cookie"] }
//! ```
//!
//! `set` replaces the fields of that name the handler or upstream sent,
//! `add` sends the value besides them, `remove` drops them. Without
//! `always`, `set` and `add` hold only on 200, 201, 204, 206, 301, 302,
//! 303, 304, 307 and 308 (as nginx's `add_header`); `remove` holds on
//! every status. The levels merge, field by field: a route's word on a
//! name replaces its vhost's, which replaces the server's, and names the
//! more specific level does not mention are inherited (unlike nginx,
//! where one `add_header` in a location drops all the server's).
//!
//! Names that would let a rule break a message's framing or routing are
//! refused (RFC 9110 §5.1, §7.6.1): `Content-Length`, `Transfer-Encoding`,
//! `Connection` and the other hop-by-hop fields, `Content-Encoding`,
//! `Date`; `Server` on responses (`server_tokens` says it); on requests
//! `Host` (`proxy_host` says it), `Expect`, the fields `[proxy]` writes
//! (`X-Forwarded-*`, `Forwarded`, `Via`), RFC 9440's `Client-Cert` and
//! `Client-Cert-Chain` (the verified certificate's) and names with `_`. Values are
//! visible ASCII, spaces and tabs within (§5.5).

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use ringside_http::fields::{Action, FieldRules, Rule, SiteFields};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::cx::{header_value, Cx};
use super::emit::quote;
use super::error::ConfigError;
use super::file::FileConfig;

/// `{ set = {...}, add = {...}, remove = [...], always = true }`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, default)]
pub struct HeadersSection {
    pub set: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
    pub add: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
    pub remove: Option<Spanned<Vec<Spanned<String>>>>,
    pub always: Option<Spanned<bool>>,
}

/// `server_tokens = true | false | "NAME"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerTokensValue {
    Enabled(bool),
    Name(String),
}

impl<'de> Deserialize<'de> for ServerTokensValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ServerTokensValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or the Server field's value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(ServerTokensValue::Enabled(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ServerTokensValue::Name(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// One level's rules one way, validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub set: Vec<(String, String)>,
    pub add: Vec<(String, String)>,
    pub remove: Vec<String>,
    pub always: bool,
}

impl Block {
    fn names(&self) -> impl Iterator<Item = &str> {
        let pairs = self.set.iter().chain(&self.add).map(|(n, _)| n.as_str());
        pairs.chain(self.remove.iter().map(String::as_str))
    }

    fn mentions(&self, name: &str) -> bool {
        self.names().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// One level's `response_headers` and `request_headers`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub response: Option<Block>,
    pub request: Option<Block>,
}

impl Level {
    pub fn is_empty(&self) -> bool {
        self.response.is_none() && self.request.is_none()
    }
}

/// What `[server] server_tokens` says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServerTokens {
    /// `Server: ringside`.
    #[default]
    On,
    Off,
    Name(String),
}

impl ServerTokens {
    /// The Server field's value, `None` for none.
    pub fn value(&self) -> Option<&str> {
        match self {
            ServerTokens::On => Some("ringside"),
            ServerTokens::Off => None,
            ServerTokens::Name(n) => Some(n),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeadersConfig {
    pub server_tokens: ServerTokens,
    pub server: Level,
    /// By index in `TlsConfig::vhosts`.
    pub vhosts: Vec<Level>,
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<Level>,
    /// Static routes that have any, by prefix.
    pub static_routes: Vec<(String, Level)>,
}

impl HeadersConfig {
    /// No rules anywhere: requests carry none.
    pub fn is_empty(&self) -> bool {
        self.server.is_empty()
            && self.vhosts.iter().all(Level::is_empty)
            && self.proxy_routes.iter().all(Level::is_empty)
            && self.static_routes.is_empty()
    }

    pub fn static_route(&self, prefix: &str) -> Option<&Level> {
        self.static_routes
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, l)| l)
    }
}

/// The rules of `levels` (least specific first) merged: a name a more
/// specific level mentions takes only that level's rules for it.
fn merge(levels: &[Option<&Block>]) -> FieldRules {
    let mut rules = Vec::new();
    for (i, b) in levels.iter().enumerate() {
        let Some(b) = b else { continue };
        let overridden = |name: &str| levels[i + 1..].iter().flatten().any(|m| m.mentions(name));
        let mut push = |action, name: &str, value: &str| {
            if !overridden(name) {
                rules.push(Rule {
                    action,
                    name: name.as_bytes().into(),
                    value: value.as_bytes().into(),
                    always: b.always,
                });
            }
        };
        for (n, v) in &b.set {
            push(Action::Set, n, v);
        }
        for (n, v) in &b.add {
            push(Action::Add, n, v);
        }
        for n in &b.remove {
            push(Action::Remove, n, "");
        }
    }
    FieldRules::new(rules)
}

/// The fields of a request that the levels `[server, vhost, route]` give,
/// merged; `None` when they give none.
pub fn site_fields(levels: [Option<&Level>; 3]) -> Option<SiteFields> {
    let each = |way: fn(&Level) -> Option<&Block>| merge(&levels.map(|l| l.and_then(way)));
    let f = SiteFields {
        response: each(|l| l.response.as_ref()),
        request: each(|l| l.request.as_ref()),
    };
    (!(f.response.is_empty() && f.request.is_empty())).then_some(f)
}

/// Why a name cannot be set, added or removed on a response (`request`
/// false) or on a request sent upstream.
fn refused(name: &str, request: bool) -> Option<&'static str> {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if ringside_http::hop::is_hop_by_hop(name.as_bytes()) || is("content-length") {
        return Some(
            "it frames or belongs to one connection (RFC 9110 §7.6.1); ringside writes it",
        );
    }
    if is("content-encoding") {
        return Some("the body's coding is ringside's or the upstream's to say");
    }
    if is("date") {
        return Some("ringside writes it");
    }
    if request {
        if is("host") {
            return Some("set the route's proxy_host instead");
        }
        if is("expect") {
            return Some("ringside answers 100-continue itself");
        }
        if is("x-forwarded-for") || is("x-forwarded-proto") || is("x-forwarded-host") {
            return Some("[proxy] x_forwarded writes it");
        }
        if is("forwarded") {
            return Some("[proxy] forwarded writes it");
        }
        if is("via") {
            return Some("[proxy] via writes it");
        }
        if crate::upstream::client_cert::is_client_cert_field(name.as_bytes()) {
            return Some("ringside writes it from the verified client certificate (RFC 9440)");
        }
        if name.contains('_') {
            return Some("an upstream may read `_` as `-` (see underscores_in_headers)");
        }
    } else if is("server") {
        return Some("set [server] server_tokens instead");
    }
    None
}

/// A field name: a token (RFC 9110 §5.1) of at most 64 bytes, as HTTP/2
/// lowercases it in place.
fn field_name(name: &str, request: bool) -> Result<String, String> {
    if name.is_empty() || name.len() > 64 || !ringside_http::grammar::is_token(name.as_bytes()) {
        return Err(format!(
            "expected a field name (a token of at most 64 characters), got {name:?}"
        ));
    }
    if let Some(why) = refused(name, request) {
        return Err(format!("{name} cannot be changed here: {why}"));
    }
    Ok(name.to_owned())
}

/// A field value (RFC 9110 §5.5): visible ASCII, no whitespace around it.
fn field_value(v: &str) -> Result<String, String> {
    let v = header_value(v)?;
    if v.starts_with([' ', '\t']) || v.ends_with([' ', '\t']) {
        return Err(format!(
            "expected a value without leading or trailing whitespace, got {v:?}"
        ));
    }
    Ok(v)
}

type HeadersKey = Option<Spanned<HeadersSection>>;

impl Cx<'_> {
    pub(super) fn headers(&self, f: &FileConfig) -> Result<HeadersConfig, ConfigError> {
        let s = &f.server;
        let server_tokens = self.or(
            &s.server_tokens,
            "[server] server_tokens",
            ServerTokens::On,
            |v| match v {
                ServerTokensValue::Enabled(true) => Ok(ServerTokens::On),
                ServerTokensValue::Enabled(false) => Ok(ServerTokens::Off),
                ServerTokensValue::Name(n) => field_value(n).map(ServerTokens::Name),
            },
        )?;
        let server = self.level(&s.response_headers, &s.request_headers, "[server]")?;
        let mut vhosts = Vec::with_capacity(f.vhosts.len());
        for v in &f.vhosts {
            let v = v.get_ref();
            vhosts.push(self.level(&v.response_headers, &v.request_headers, "[[vhost]]")?);
        }
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let level = self.level(&r.response_headers, &r.request_headers, "[[route]]")?;
            match &r.upstream {
                Some(_) => proxy_routes.push(level),
                None if level.is_empty() => {}
                None => {
                    if let Some(q) = &r.request_headers {
                        return Err(self.err(
                            q.span(),
                            "[[route]] request_headers",
                            "a route of static files sends no requests upstream".into(),
                        ));
                    }
                    static_routes.push((r.prefix.get_ref().clone(), level));
                }
            }
        }
        Ok(HeadersConfig {
            server_tokens,
            server,
            vhosts,
            proxy_routes,
            static_routes,
        })
    }

    fn level(
        &self,
        response: &HeadersKey,
        request: &HeadersKey,
        section: &str,
    ) -> Result<Level, ConfigError> {
        let response = response
            .as_ref()
            .map(|b| self.block(b, &format!("{section} response_headers"), false))
            .transpose()?;
        let request = request
            .as_ref()
            .map(|b| self.block(b, &format!("{section} request_headers"), true))
            .transpose()?;
        Ok(Level { response, request })
    }

    fn block(
        &self,
        b: &Spanned<HeadersSection>,
        key: &str,
        request: bool,
    ) -> Result<Block, ConfigError> {
        let h = b.get_ref();
        let mut out = Block::default();
        if let Some(a) = &h.always {
            if request {
                return Err(self.err(
                    a.span(),
                    &format!("{key}.always"),
                    "always is for response_headers: a request has no status".into(),
                ));
            }
            out.always = *a.get_ref();
        }
        let named = |out: &Block, n: &Spanned<String>, k: &str| {
            let name = self.check(n, k, |n| field_name(n, request))?;
            if out.mentions(&name) {
                return Err(self.err(n.span(), k, format!("{name} is named twice")));
            }
            Ok(name)
        };
        for (which, map) in [("set", &h.set), ("add", &h.add)] {
            let Some(map) = map else { continue };
            let k = format!("{key}.{which}");
            for (n, v) in map.get_ref() {
                let name = named(&out, n, &k)?;
                let value = self.check(v, &k, |v| field_value(v))?;
                let list = if which == "set" {
                    &mut out.set
                } else {
                    &mut out.add
                };
                list.push((name, value));
            }
        }
        if let Some(list) = &h.remove {
            let k = format!("{key}.remove");
            for n in list.get_ref() {
                let name = named(&out, n, &k)?;
                out.remove.push(name);
            }
        }
        if out.names().next().is_none() {
            return Err(self.err(
                b.span(),
                key,
                "expected set, add or remove with at least one field (leave the key out for none)"
                    .into(),
            ));
        }
        Ok(out)
    }
}

/// `{ set = { "A" = "1" }, ... }`, as the file has it.
fn inline(b: &Block) -> String {
    let pairs = |l: &[(String, String)]| {
        let items: Vec<String> = l
            .iter()
            .map(|(n, v)| format!("{} = {}", quote(n), quote(v)))
            .collect();
        format!("{{ {} }}", items.join(", "))
    };
    let mut parts = Vec::new();
    if !b.set.is_empty() {
        parts.push(format!("set = {}", pairs(&b.set)));
    }
    if !b.add.is_empty() {
        parts.push(format!("add = {}", pairs(&b.add)));
    }
    if !b.remove.is_empty() {
        let names: Vec<String> = b.remove.iter().map(|n| quote(n)).collect();
        parts.push(format!("remove = [{}]", names.join(", ")));
    }
    if b.always {
        parts.push("always = true".into());
    }
    format!("{{ {} }}", parts.join(", "))
}

/// A level's `response_headers` and `request_headers` lines.
pub fn write_level(out: &mut String, l: Option<&Level>) -> fmt::Result {
    let Some(l) = l else { return Ok(()) };
    if let Some(b) = &l.response {
        writeln!(out, "response_headers = {}", inline(b))?;
    }
    if let Some(b) = &l.request {
        writeln!(out, "request_headers = {}", inline(b))?;
    }
    Ok(())
}

/// `[server]`'s keys: `server_tokens` and its level.
pub fn write_server(out: &mut String, h: &HeadersConfig) -> fmt::Result {
    match &h.server_tokens {
        ServerTokens::On => writeln!(out, "server_tokens = true")?,
        ServerTokens::Off => writeln!(out, "server_tokens = false")?,
        ServerTokens::Name(n) => writeln!(out, "server_tokens = {}", quote(n))?,
    }
    write_level(out, Some(&h.server))
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
