//! Rewrites, redirects and fixed answers: ordered rules, each a regular
//! expression on the normalized path with conditions beside it and one
//! outcome, on three levels: the server's (`[[rewrite]]`), a vhost's
//! (`rewrite = [...]` in `[[vhost]]`, for requests to its names) and a
//! route's (`rewrite = [...]` in `[[route]]`, once the route is chosen).
//!
//! ```toml
//! [[rewrite]]
//! pattern = "^/old/(.*)$"       # the `regex` crate's syntax: linear time
//! host = ["a.example", "*.example"]  # conditions, all optional, all must hold
//! method = ["GET", "HEAD"]
//! query = "(^|&)lang=en(&|$)"   # on the query as sent ("" without one)
//! header = { "User-Agent" = "Mobile" }  # present and matching
//! cookie = { beta = "^1$" }
//! client = ["10.0.0.0/8"]       # as allow/deny read them
//! # one outcome:
//! to = "/new/$1?from=old"       # rewrite, then route again
//! # redirect = "https://$host/new/$1", status = 301  # 301 | 302 (default) | 303 | 307 | 308
//! # answer = "gone\n", status = 410, content_type = "text/plain"
//! ```
//!
//! `to` and `redirect` take `$1`..`$99` (or `${12}`) from the pattern's
//! groups, `$host`, `$scheme`, `$query` (the request's query, nginx's
//! `$args`) and `$$` for a dollar. As nginx's `rewrite`, a `to` with a
//! query has the request's query appended after `&` unless it ends in `?`.
//! The validated rules compile each pattern once, here.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use regex::bytes::{Regex, RegexBuilder};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::access::Cidr;
use super::cx::Cx;
use super::emit::quote;
use super::error::ConfigError;
use super::file::FileConfig;

/// One rule as the file has it.
#[derive(Clone, Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RewriteSection {
    pub pattern: Spanned<String>,
    pub host: Option<Spanned<Vec<Spanned<String>>>>,
    pub method: Option<Spanned<Vec<Spanned<String>>>>,
    pub query: Option<Spanned<String>>,
    pub header: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    pub cookie: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    pub client: Option<Spanned<Vec<Spanned<String>>>>,
    pub to: Option<Spanned<String>>,
    pub redirect: Option<Spanned<String>>,
    pub answer: Option<Spanned<String>>,
    pub status: Option<Spanned<i64>>,
    pub content_type: Option<Spanned<String>>,
}

/// From a table only: serde's derive would take a list as a tuple of the
/// fields (`file.rs`'s `tables_only!`).
impl<'de> Deserialize<'de> for RewriteSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TableOnly;
        impl<'de> Visitor<'de> for TableOnly {
            type Value = RewriteSection;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<RewriteSection, A::Error> {
                RewriteSection::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(TableOnly)
    }
}

/// A compiled regular expression, compared by its text.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub text: String,
    pub regex: Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.text == other.text
    }
}
impl Eq for Pattern {}

/// A piece of a `to` or `redirect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Group(usize),
    Host,
    Scheme,
    Query,
}

/// A `to` or `redirect`, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub text: String,
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Rewrite(Template),
    Redirect {
        status: u16,
        to: Template,
    },
    Answer {
        status: u16,
        body: String,
        content_type: String,
    },
}

/// A rule, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub pattern: Pattern,
    /// What every path the pattern matches starts with (empty when it has
    /// no literal prefix): rules are passed over by it before any regex runs.
    pub prefix: Box<[u8]>,
    /// Lower case; `*.example` as routes' `host`.
    pub hosts: Vec<String>,
    pub methods: Vec<String>,
    pub query: Option<Pattern>,
    /// Names lower case.
    pub headers: Vec<(String, Pattern)>,
    pub cookies: Vec<(String, Pattern)>,
    pub clients: Vec<Cidr>,
    pub outcome: Outcome,
}

/// Every level's rules. Empty lists mean none were given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteConfig {
    pub server: Vec<Rule>,
    /// By index in `TlsConfig::vhosts`.
    pub vhosts: Vec<Vec<Rule>>,
    /// By index in `ProxyConfig::routes`.
    pub proxy_routes: Vec<Vec<Rule>>,
    /// Static routes that have rules, by prefix.
    pub static_routes: Vec<(String, Vec<Rule>)>,
}

impl RewriteConfig {
    pub fn is_empty(&self) -> bool {
        self.server.is_empty()
            && self.vhosts.iter().all(Vec::is_empty)
            && self.proxy_routes.iter().all(Vec::is_empty)
            && self.static_routes.is_empty()
    }

    pub fn static_route(&self, prefix: &str) -> &[Rule] {
        self.static_routes
            .iter()
            .find(|(p, _)| p == prefix)
            .map_or(&[], |(_, r)| r)
    }
}

/// The statuses a redirect may have (RFC 9110 §15.4).
pub const REDIRECT_STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

/// The most groups a template may name (`$99`).
const MAX_GROUP: usize = 99;

/// The compiled size a pattern may reach (regex's default is 10 MiB; each
/// core holds its own copy).
const SIZE_LIMIT: usize = 1 << 20;

type Rules = Option<Spanned<Vec<Spanned<RewriteSection>>>>;

impl Cx<'_> {
    pub(super) fn rewrites(&self, f: &FileConfig) -> Result<RewriteConfig, ConfigError> {
        let mut server = Vec::with_capacity(f.rewrites.len());
        for r in &f.rewrites {
            server.push(self.rule(r.get_ref(), "[[rewrite]]")?);
        }
        let mut vhosts = Vec::with_capacity(f.vhosts.len());
        for v in &f.vhosts {
            vhosts.push(self.rule_list(&v.get_ref().rewrite, "[[vhost]] rewrite")?);
        }
        let (mut proxy_routes, mut static_routes) = (Vec::new(), Vec::new());
        for r in &f.routes {
            let r = r.get_ref();
            let rules = self.rule_list(&r.rewrite, "[[route]] rewrite")?;
            match &r.upstream {
                Some(_) => proxy_routes.push(rules),
                None if rules.is_empty() => {}
                None => static_routes.push((r.prefix.get_ref().clone(), rules)),
            }
        }
        Ok(RewriteConfig {
            server,
            vhosts,
            proxy_routes,
            static_routes,
        })
    }

    fn rule_list(&self, list: &Rules, key: &str) -> Result<Vec<Rule>, ConfigError> {
        let Some(list) = list else {
            return Ok(Vec::new());
        };
        if list.get_ref().is_empty() {
            return Err(self.err(
                list.span(),
                key,
                "expected at least one rule (leave the key out for none)".into(),
            ));
        }
        list.get_ref()
            .iter()
            .map(|r| self.rule(r.get_ref(), key))
            .collect()
    }

    fn rule(&self, r: &RewriteSection, at: &str) -> Result<Rule, ConfigError> {
        let key = |k: &str| format!("{at} {k}");
        let pattern = self.check(&r.pattern, &key("pattern"), |p| compile(p))?;
        let groups = pattern.regex.captures_len() - 1;
        let hosts = match &r.host {
            None => Vec::new(),
            Some(l) => self.list(l, &key("host"), host_name)?,
        };
        let methods = match &r.method {
            None => Vec::new(),
            Some(l) => self.list(l, &key("method"), |m| {
                if ringside_http::grammar::is_token(m.as_bytes()) {
                    Ok(m.to_ascii_uppercase())
                } else {
                    Err(format!("expected a method name, got {m:?}"))
                }
            })?,
        };
        let query = r
            .query
            .as_ref()
            .map(|q| self.check(q, &key("query"), |p| compile(p)))
            .transpose()?;
        let headers = self.named(&r.header, &key("header"), |n| {
            if ringside_http::grammar::is_token(n.as_bytes()) {
                Ok(n.to_ascii_lowercase())
            } else {
                Err(format!("expected a header name, got {n:?}"))
            }
        })?;
        let cookies = self.named(&r.cookie, &key("cookie"), |n| {
            if ringside_http::grammar::is_token(n.as_bytes()) {
                Ok(n.clone())
            } else {
                Err(format!("expected a cookie name, got {n:?}"))
            }
        })?;
        let clients = match &r.client {
            None => Vec::new(),
            Some(l) => self.list(l, &key("client"), |s| Cidr::parse(s))?.concat(),
        };
        let given: Vec<(&str, std::ops::Range<usize>)> = [
            ("to", r.to.as_ref().map(Spanned::span)),
            ("redirect", r.redirect.as_ref().map(Spanned::span)),
            ("answer", r.answer.as_ref().map(Spanned::span)),
        ]
        .into_iter()
        .filter_map(|(k, s)| Some((k, s?)))
        .collect();
        let outcome = match given.as_slice() {
            [] => {
                return Err(self.err(
                    r.pattern.span(),
                    &key("pattern"),
                    "expected one outcome beside it: to, redirect or answer".into(),
                ))
            }
            [_, (second, span), ..] => {
                return Err(self.err(
                    span.clone(),
                    &key(second),
                    format!("conflicts with {}: a rule has one outcome", given[0].0),
                ))
            }
            [("to", _)] => {
                for (k, v) in [
                    ("status", r.status.as_ref().map(Spanned::span)),
                    ("content_type", r.content_type.as_ref().map(Spanned::span)),
                ] {
                    if let Some(span) = v {
                        return Err(self.err(
                            span,
                            &key(k),
                            "goes with redirect or answer, not to".into(),
                        ));
                    }
                }
                let to = r.to.as_ref().expect("given");
                Outcome::Rewrite(self.check(to, &key("to"), |t| {
                    // Bytes no request-target holds: every request the
                    // rule rewrote would be a 400.
                    if let Some(c) = t.chars().find(|c| matches!(c, '#' | '\\')) {
                        return Err(format!("{t:?}: a rewrite's path and query hold no {c:?}"));
                    }
                    let t = template(t, groups)?;
                    match t.parts.first() {
                        Some(Part::Text(s)) if s.starts_with('/') => Ok(t),
                        _ => Err(format!(
                            "expected a path starting with '/', got {:?}",
                            t.text
                        )),
                    }
                })?)
            }
            [("redirect", _)] => {
                if let Some(c) = &r.content_type {
                    return Err(self.err(
                        c.span(),
                        &key("content_type"),
                        "goes with answer, not redirect".into(),
                    ));
                }
                let status =
                    self.or(&r.status, &key("status"), 302, |&s| {
                        match u16::try_from(s)
                            .ok()
                            .filter(|s| REDIRECT_STATUSES.contains(s))
                        {
                            Some(s) => Ok(s),
                            None => Err(format!(
                                "expected a redirect status (301, 302, 303, 307 or 308), got {s}"
                            )),
                        }
                    })?;
                let to = r.redirect.as_ref().expect("given");
                let to = self.check(to, &key("redirect"), |t| {
                    let t = template(t, groups)?;
                    let ok = match t.parts.first() {
                        Some(Part::Text(s)) => {
                            s.starts_with('/')
                                || s.starts_with("http://")
                                || s.starts_with("https://")
                        }
                        Some(Part::Scheme) => {
                            matches!(t.parts.get(1), Some(Part::Text(s)) if s.starts_with("://"))
                        }
                        _ => false,
                    };
                    if ok {
                        Ok(t)
                    } else {
                        Err(format!(
                            "expected a path or an http(s) URL, got {:?}",
                            t.text
                        ))
                    }
                })?;
                Outcome::Redirect { status, to }
            }
            _ => {
                let status = self.or(&r.status, &key("status"), 200, |&s| {
                    super::cx::int_in(s, 200, 599).map(|s| s as u16)
                })?;
                let content_type = self.or(
                    &r.content_type,
                    &key("content_type"),
                    "text/plain".to_owned(),
                    |c| super::cx::header_value(c),
                )?;
                Outcome::Answer {
                    status,
                    body: r.answer.as_ref().expect("given").get_ref().clone(),
                    content_type,
                }
            }
        };
        Ok(Rule {
            prefix: literal_prefix(&pattern.text).into(),
            pattern,
            hosts,
            methods,
            query,
            headers,
            cookies,
            clients,
            outcome,
        })
    }

    fn list<T>(
        &self,
        l: &Spanned<Vec<Spanned<String>>>,
        key: &str,
        each: impl Fn(&String) -> Result<T, String>,
    ) -> Result<Vec<T>, ConfigError> {
        if l.get_ref().is_empty() {
            return Err(self.err(
                l.span(),
                key,
                "expected at least one entry (leave the key out for any)".into(),
            ));
        }
        l.get_ref()
            .iter()
            .map(|v| self.check(v, key, &each))
            .collect()
    }

    fn named(
        &self,
        table: &Option<Spanned<BTreeMap<String, Spanned<String>>>>,
        key: &str,
        name: impl Fn(&String) -> Result<String, String>,
    ) -> Result<Vec<(String, Pattern)>, ConfigError> {
        let Some(table) = table else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (n, p) in table.get_ref() {
            let n = name(n).map_err(|m| self.err(table.span(), key, m))?;
            out.push((n, self.check(p, key, |p| compile(p))?));
        }
        Ok(out)
    }
}

/// A pattern compiled, or why not, on one line.
pub fn compile(p: &str) -> Result<Pattern, String> {
    match RegexBuilder::new(p).size_limit(SIZE_LIMIT).build() {
        Ok(regex) => Ok(Pattern {
            text: p.to_owned(),
            regex,
        }),
        Err(regex::Error::Syntax(s)) => {
            let why = s
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or(&s);
            Err(format!("expected a regular expression, got {p:?}: {why}"))
        }
        Err(e) => Err(format!("cannot compile {p:?}: {e}")),
    }
}

/// What every match of `pattern` starts with, where it is anchored at the
/// start: the longest prefix common to the literals regex's own parser
/// finds (none where it finds no finite set, or the parse differs).
pub fn literal_prefix(pattern: &str) -> Vec<u8> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    use regex_syntax::hir::Look;
    let Ok(hir) = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
    else {
        return Vec::new();
    };
    if !hir.properties().look_set_prefix().contains(Look::Start) {
        return Vec::new();
    }
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    seq.longest_common_prefix()
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// `a.example` or `*.example`, lower case.
fn host_name(h: &String) -> Result<String, String> {
    let name = h.strip_prefix("*.").unwrap_or(h);
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !name.starts_with('.')
        && !name.ends_with('.');
    if ok {
        Ok(h.to_ascii_lowercase())
    } else {
        Err(format!("expected a host name or *.name, got {h:?}"))
    }
}

/// Parses `$1`, `${12}`, `$host`, `$scheme`, `$query` and `$$` out of `t`;
/// a group past the pattern's `groups` is refused.
pub fn template(t: &str, groups: usize) -> Result<Template, String> {
    if !t.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return Err(format!("expected visible ASCII without spaces, got {t:?}"));
    }
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('$') {
        text.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        let (name, len) = if let Some(inner) = rest.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => return Err(format!("{t:?}: '${{' without '}}'")),
            }
        } else if rest.starts_with('$') {
            ("$", 1)
        } else {
            let end = if rest.starts_with(|c: char| c.is_ascii_digit()) {
                rest.find(|c: char| !c.is_ascii_digit())
            } else {
                rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            };
            let end = end.unwrap_or(rest.len());
            (&rest[..end], end)
        };
        rest = &rest[len..];
        let part = match name {
            "$" => {
                text.push('$');
                continue;
            }
            "host" => Part::Host,
            "scheme" => Part::Scheme,
            "query" => Part::Query,
            n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                let g: usize = n.parse().unwrap_or(usize::MAX);
                if g > groups || g > MAX_GROUP {
                    return Err(format!(
                        "{t:?} names ${g}, but the pattern has {groups} group{}",
                        if groups == 1 { "" } else { "s" }
                    ));
                }
                Part::Group(g)
            }
            n => {
                return Err(format!(
                    "{t:?}: unknown variable ${n} (expected $1..$99, $host, $scheme, $query or $$)"
                ))
            }
        };
        if !text.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut text)));
        }
        parts.push(part);
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(Template {
        text: t.to_owned(),
        parts,
    })
}

/// A rule's keys and values, as the file may have them.
fn rule_pairs(r: &Rule) -> Vec<(&'static str, String)> {
    let list = |l: Vec<String>| format!("[{}]", l.join(", "));
    let mut out = vec![("pattern", quote(&r.pattern.text))];
    if !r.hosts.is_empty() {
        out.push(("host", list(r.hosts.iter().map(|h| quote(h)).collect())));
    }
    if !r.methods.is_empty() {
        out.push(("method", list(r.methods.iter().map(|m| quote(m)).collect())));
    }
    if let Some(q) = &r.query {
        out.push(("query", quote(&q.text)));
    }
    for (key, named) in [("header", &r.headers), ("cookie", &r.cookies)] {
        if !named.is_empty() {
            let items: Vec<String> = named
                .iter()
                .map(|(n, p)| format!("{} = {}", quote(n), quote(&p.text)))
                .collect();
            out.push((key, format!("{{ {} }}", items.join(", "))));
        }
    }
    if !r.clients.is_empty() {
        out.push((
            "client",
            list(r.clients.iter().map(|c| quote(&c.to_string())).collect()),
        ));
    }
    match &r.outcome {
        Outcome::Rewrite(t) => out.push(("to", quote(&t.text))),
        Outcome::Redirect { status, to } => {
            out.push(("redirect", quote(&to.text)));
            out.push(("status", status.to_string()));
        }
        Outcome::Answer {
            status,
            body,
            content_type,
        } => {
            out.push(("answer", quote(body)));
            out.push(("status", status.to_string()));
            out.push(("content_type", quote(content_type)));
        }
    }
    out
}

/// The server's rules, as `[[rewrite]]` tables.
pub fn write_server(out: &mut String, rules: &[Rule]) -> fmt::Result {
    for r in rules {
        writeln!(out, "\n[[rewrite]]")?;
        for (k, v) in rule_pairs(r) {
            writeln!(out, "{k} = {v}")?;
        }
    }
    Ok(())
}

/// A vhost's or route's `rewrite = [...]`, if it has rules.
pub fn write_list(out: &mut String, rules: &[Rule]) -> fmt::Result {
    if rules.is_empty() {
        return Ok(());
    }
    writeln!(out, "rewrite = [")?;
    for r in rules {
        let pairs: Vec<String> = rule_pairs(r)
            .into_iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        writeln!(out, "  {{ {} }},", pairs.join(", "))?;
    }
    writeln!(out, "]")
}
