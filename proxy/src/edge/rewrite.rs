//! Rewrites, redirects and fixed answers at the edge (`config::rewrite`).
//!
//! The server's rules, then the vhost's (by the request's host), run once,
//! before the first routing; a route's run once the route is chosen and
//! its `allow`/`deny`, rate limit and basic auth have passed. In each
//! level the first rule whose pattern and conditions hold decides (nginx's
//! `rewrite ... last`). A rewrite's path is normalized as a client's is
//! (`ringside_http::rewritten`) and routed again, so the route it lands on
//! applies its own `allow`/`deny` and auth: no rule makes a route held
//! back reachable by another spelling. At most [`MAX_PASSES`] rewrites,
//! then 500, as nginx cuts its rewrite cycles at 10.
//!
//! Cost where nothing matches: a rule whose pattern has a literal prefix
//! (`^/old/`) is passed over by comparing bytes; the others by the
//! compiled regex's `is_match`, which allocates nothing once the core's
//! matcher is warm. Captures are taken only from a rule that matched.

use std::net::IpAddr;

use ringside_http::{EncodedSlash, Error, Exchange, PathParameters};

use super::router::Target;
use crate::config::rewrite::{Outcome, Part, RewriteConfig, Rule};
use crate::config::tls::TlsConfig;

/// Rewrites per request, at most; one more is answered 500.
pub const MAX_PASSES: u8 = 10;

/// What the conditions of a rule read from a request.
pub trait Request {
    /// The normalized path (a rewrite's, once rewritten).
    fn path(&self) -> &[u8];
    fn query(&self) -> Option<&[u8]>;
    fn host(&self) -> Option<&[u8]>;
    fn method(&self) -> &[u8];
    fn header(&self, name: &str) -> Option<&[u8]>;
    /// The value of the first cookie named `name`.
    fn cookie(&self, name: &str) -> Option<&[u8]>;
    fn peer(&self) -> Option<IpAddr>;
}

impl Request for Exchange<'_> {
    fn path(&self) -> &[u8] {
        Exchange::path(self)
    }
    fn query(&self) -> Option<&[u8]> {
        Exchange::query(self)
    }
    fn host(&self) -> Option<&[u8]> {
        Exchange::host(self)
    }
    fn method(&self) -> &[u8] {
        self.method_bytes()
    }
    fn header(&self, name: &str) -> Option<&[u8]> {
        Exchange::header(self, name)
    }
    fn cookie(&self, name: &str) -> Option<&[u8]> {
        // HTTP/2 may split the field into one per cookie (RFC 9113
        // §8.2.3): every Cookie line is read.
        self.headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case(b"cookie"))
            .find_map(|(_, v)| cookie_in(v, name))
    }
    fn peer(&self) -> Option<IpAddr> {
        Exchange::peer(self).ok().map(|a| a.ip())
    }
}

/// `name`'s value in a Cookie line (RFC 6265 §4.2.1: `a=1; b=2`).
pub fn cookie_in<'v>(line: &'v [u8], name: &str) -> Option<&'v [u8]> {
    line.split(|&b| b == b';').find_map(|pair| {
        let pair = ringside_http::grammar::trim_ows(pair);
        let eq = pair.iter().position(|&b| b == b'=')?;
        (&pair[..eq] == name.as_bytes()).then(|| &pair[eq + 1..])
    })
}

/// One level's rules, with what every path they could match starts with:
/// where each rule has a literal prefix, the prefix they share, so a path
/// outside it (`/api/` past fifty `^/legacy-N/` rules) is passed over by
/// one comparison; and, for a level of many rules, which of them can match
/// by the path's byte just past that shared prefix, so fifty redirects of
/// old sections (`^/blog/`, `^/forum/`, ...) cost a path a comparison or
/// two, not fifty.
#[derive(Default)]
pub struct Level {
    rules: Vec<Rule>,
    gate: Box<[u8]>,
    by_byte: Option<ByByte>,
}

/// Levels with fewer rules are scanned in order: fewer comparisons than
/// the table's lookup saves.
const INDEXED_FROM: usize = 8;

/// The rules (by index, in their order) that can match a path by its byte
/// at the gate's length: those whose prefix has that byte there, and those
/// whose prefix ends before it. Bucket 256: a path that ends at the gate.
struct ByByte {
    starts: Box<[u16; 258]>,
    order: Box<[u16]>,
}

impl ByByte {
    fn new(rules: &[Rule], at: usize) -> ByByte {
        let mut starts = Box::new([0u16; 258]);
        let mut order = Vec::new();
        for bucket in 0..257usize {
            starts[bucket] = order.len() as u16;
            for (i, r) in rules.iter().enumerate() {
                let fits = match r.prefix.get(at) {
                    None => true,
                    Some(&b) => usize::from(b) == bucket,
                };
                if fits {
                    order.push(i as u16);
                }
            }
        }
        starts[257] = order.len() as u16;
        ByByte {
            starts,
            order: order.into(),
        }
    }

    fn candidates(&self, path: &[u8], at: usize) -> &[u16] {
        let bucket = path.get(at).map_or(256, |&b| usize::from(b));
        &self.order[usize::from(self.starts[bucket])..usize::from(self.starts[bucket + 1])]
    }
}

impl Level {
    pub fn new(rules: &[Rule]) -> Level {
        let gate = if rules.iter().all(|r| !r.prefix.is_empty()) {
            rules
                .iter()
                .map(|r| &r.prefix[..])
                .reduce(common_prefix)
                .unwrap_or_default()
        } else {
            &[]
        };
        let by_byte = (rules.len() >= INDEXED_FROM && rules.len() <= usize::from(u16::MAX))
            .then(|| ByByte::new(rules, gate.len()));
        Level {
            gate: gate.into(),
            rules: rules.to_vec(),
            by_byte,
        }
    }

    /// [`find`] on this level's rules.
    pub fn find(&self, req: &impl Request) -> Option<&Rule> {
        let path = req.path();
        if !path.starts_with(&self.gate) {
            return None;
        }
        match &self.by_byte {
            None => find(&self.rules, req),
            Some(t) => t
                .candidates(path, self.gate.len())
                .iter()
                .map(|&i| &self.rules[usize::from(i)])
                .find(|r| matches(r, path, req)),
        }
    }
}

fn common_prefix<'a>(a: &'a [u8], b: &[u8]) -> &'a [u8] {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &a[..n]
}

/// The first of `rules` whose pattern and conditions hold for `req`.
pub fn find<'r>(rules: &'r [Rule], req: &impl Request) -> Option<&'r Rule> {
    let path = req.path();
    rules.iter().find(|r| matches(r, path, req))
}

fn matches(r: &Rule, path: &[u8], req: &impl Request) -> bool {
    path.starts_with(&r.prefix) && r.pattern.regex.is_match(path) && conditions_hold(r, req)
}

fn conditions_hold(r: &Rule, req: &impl Request) -> bool {
    if !r.hosts.is_empty()
        && !req
            .host()
            .is_some_and(|h| r.hosts.iter().any(|n| host_is(n, h)))
    {
        return false;
    }
    if !r.methods.is_empty() && !r.methods.iter().any(|m| m.as_bytes() == req.method()) {
        return false;
    }
    if let Some(q) = &r.query {
        if !q.regex.is_match(req.query().unwrap_or_default()) {
            return false;
        }
    }
    let named = |v: Option<&[u8]>, p: &crate::config::rewrite::Pattern| {
        v.is_some_and(|v| p.regex.is_match(v))
    };
    if !r.headers.iter().all(|(n, p)| named(req.header(n), p)) {
        return false;
    }
    if !r.cookies.iter().all(|(n, p)| named(req.cookie(n), p)) {
        return false;
    }
    // Last: the address may cost a system call.
    r.clients.is_empty()
        || req
            .peer()
            .is_some_and(|ip| r.clients.iter().any(|c| c.contains(ip.to_canonical())))
}

/// Whether a Host value names `name` (`a.example` or `*.example`), read as
/// the router reads it: no port, no trailing dots, any case.
fn host_is(name: &str, host: &[u8]) -> bool {
    let host = if host.starts_with(b"[") {
        match host.iter().position(|&b| b == b']') {
            Some(i) => &host[..=i],
            None => host,
        }
    } else {
        match host.iter().rposition(|&b| b == b':') {
            Some(i) => &host[..i],
            None => host,
        }
    };
    let mut host = host;
    while let Some(h) = host.strip_suffix(b".") {
        host = h;
    }
    match name.strip_prefix('*') {
        Some(suffix) => {
            host.len() > suffix.len()
                && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        }
        None => host.eq_ignore_ascii_case(name.as_bytes()),
    }
}

/// What a rule did to a request.
pub enum Step {
    /// The request was rewritten: route it again.
    Again,
    /// The request was answered (a redirect, a fixed answer, a refusal).
    Done(Result<(), Error>),
}

/// This core's rules: clones of the config's, which share the compiled
/// patterns but give each core matcher caches of its own, uncontended.
pub struct Rewrites {
    server: Level,
    tls: TlsConfig,
    vhosts: Vec<Level>,
    /// Whether any vhost has rules (else the host is not looked up).
    any_vhost: bool,
    proxy_routes: Vec<Level>,
    /// By `Target::Static` index: 0 is the root, which has no route.
    statics: Vec<Level>,
    slash: EncodedSlash,
    params: PathParameters,
}

impl Rewrites {
    /// `None` when no level has rules, so requests are not looked at.
    pub fn new(
        cfg: &RewriteConfig,
        tls: &TlsConfig,
        static_prefixes: &[String],
        slash: EncodedSlash,
        params: PathParameters,
    ) -> Option<Rewrites> {
        if cfg.is_empty() {
            return None;
        }
        let mut statics = vec![Level::default()];
        for p in static_prefixes {
            statics.push(Level::new(cfg.static_route(p)));
        }
        let levels = |l: &[Vec<Rule>]| l.iter().map(|r| Level::new(r)).collect();
        Some(Rewrites {
            server: Level::new(&cfg.server),
            tls: tls.clone(),
            vhosts: levels(&cfg.vhosts),
            any_vhost: cfg.vhosts.iter().any(|r| !r.is_empty()),
            proxy_routes: levels(&cfg.proxy_routes),
            statics,
            slash,
            params,
        })
    }

    /// The server's rules, then the vhost's, once per request: `None` to
    /// route it, else its answer. `admits` says whether the server's (or
    /// the vhost's) `allow`/`deny` admit the client, which a redirect or
    /// fixed answer given before routing must not pass over.
    pub fn before_routing(
        &self,
        ex: &mut Exchange<'_>,
        admits: impl Fn(&Exchange<'_>) -> bool,
    ) -> Option<Result<(), Error>> {
        if ex.rewrites() > 0 {
            return None;
        }
        let vhost = if !self.any_vhost {
            None
        } else {
            ex.host()
                .and_then(super::https::host_only)
                .and_then(|h| self.tls.vhost_index(h.trim_end_matches('.')))
                .and_then(|i| self.vhosts.get(i))
        };
        for level in [Some(&self.server), vhost].into_iter().flatten() {
            let Some(rule) = level.find(ex) else {
                continue;
            };
            if !matches!(rule.outcome, Outcome::Rewrite(_)) && !admits(ex) {
                return Some(ex.send_status(403));
            }
            if let Step::Done(r) = self.apply(ex, rule) {
                return Some(r);
            }
        }
        None
    }

    /// The rules of the route a request was routed to.
    pub fn at_route(&self, ex: &mut Exchange<'_>, target: Target) -> Option<Step> {
        let rules = match target {
            Target::Proxy(i) => self.proxy_routes.get(i),
            Target::Static(i) => self.statics.get(i),
            Target::NotFound => None,
        }?;
        let rule = rules.find(ex)?;
        Some(self.apply(ex, rule))
    }

    fn apply(&self, ex: &mut Exchange<'_>, rule: &Rule) -> Step {
        match &rule.outcome {
            Outcome::Rewrite(t) => {
                if ex.rewrites() >= MAX_PASSES {
                    tracing::error!(
                        path = %String::from_utf8_lossy(ex.client_path()),
                        pattern = %rule.pattern.text,
                        "rewrite cycle: {MAX_PASSES} rewrites and another rule matched; answered 500"
                    );
                    return Step::Done(ex.send_status(500));
                }
                let out = expand(ex, rule, &t.parts);
                let (path, query) = with_query(&out, t.text.ends_with('?'), ex.query());
                match ex.rewrite(path, query.as_deref(), self.slash, self.params) {
                    Ok(()) => Step::Again,
                    Err(e) => {
                        tracing::debug!(
                            error = ?e,
                            path = %String::from_utf8_lossy(path),
                            "a rewrite's path was refused"
                        );
                        Step::Done(ex.send_status(400))
                    }
                }
            }
            Outcome::Redirect { status, to } => {
                let location = expand(ex, rule, &to.parts);
                // Captures and $host come from a parsed head, but a Location
                // is checked all the same: it must not split the head.
                if !location.iter().all(|b| (0x21..0x7f).contains(b)) {
                    return Step::Done(ex.send_status(500));
                }
                let body = format!("{status} moved to {}\n", String::from_utf8_lossy(&location));
                Step::Done(ex.send(
                    *status,
                    &[("Location", &location), ("Content-Type", b"text/plain")],
                    body.as_bytes(),
                ))
            }
            Outcome::Answer {
                status,
                body,
                content_type,
            } => Step::Done(ex.send(
                *status,
                &[("Content-Type", content_type.as_bytes())],
                body.as_bytes(),
            )),
        }
    }
}

/// A rewrite's path and query, as nginx makes them: a new query has the
/// request's (`old`) appended after `&`, unless the rule ends in `?`
/// (`last_q`), which is then no part of it; without a new query the
/// request's stays.
fn with_query<'o>(out: &'o [u8], last_q: bool, old: Option<&[u8]>) -> (&'o [u8], Option<Vec<u8>>) {
    let out = match out.strip_suffix(b"?") {
        Some(o) if last_q => o,
        _ => out,
    };
    let Some(i) = out.iter().position(|&b| b == b'?') else {
        return (
            out,
            if last_q {
                None
            } else {
                old.map(<[u8]>::to_vec)
            },
        );
    };
    let mut q = out[i + 1..].to_vec();
    if let Some(old) = old.filter(|o| !last_q && !o.is_empty()) {
        if !q.is_empty() {
            q.push(b'&');
        }
        q.extend_from_slice(old);
    }
    (&out[..i], Some(q))
}

/// A template filled in from `rule`'s match on the request's path.
fn expand(ex: &Exchange<'_>, rule: &Rule, parts: &[Part]) -> Vec<u8> {
    let path = ex.path();
    let caps = rule.pattern.regex.captures(path);
    let mut out = Vec::with_capacity(path.len() + 32);
    for p in parts {
        match p {
            Part::Text(s) => out.extend_from_slice(s.as_bytes()),
            Part::Group(g) => {
                if let Some(m) = caps.as_ref().and_then(|c| c.get(*g)) {
                    out.extend_from_slice(m.as_bytes());
                }
            }
            Part::Host => out.extend_from_slice(ex.host().unwrap_or_default()),
            Part::Scheme => out.extend_from_slice(if ex.is_tls() { b"https" } else { b"http" }),
            Part::Query => out.extend_from_slice(ex.query().unwrap_or_default()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_as_the_router_reads_them() {
        for (name, host, want) in [
            ("a.example", &b"A.Example:8080"[..], true),
            ("a.example", b"a.example..", true),
            ("a.example", b"b.example", false),
            ("*.example", b"x.example", true),
            ("*.example", b"example", false),
            ("*.example", b"x.EXAMPLE.", true),
        ] {
            assert_eq!(host_is(name, host), want, "{name} {host:?}");
        }
    }

    #[test]
    fn queries_as_nginx_makes_them() {
        let q = |out: &str, last_q, old: Option<&str>| {
            let (p, q) = with_query(out.as_bytes(), last_q, old.map(str::as_bytes));
            (
                String::from_utf8(p.to_vec()).unwrap(),
                q.map(|q| String::from_utf8(q).unwrap()),
            )
        };
        let s = |p: &str, q: Option<&str>| (p.to_owned(), q.map(str::to_owned));
        assert_eq!(
            q("/i.php?q=a", false, Some("x=1")),
            s("/i.php", Some("q=a&x=1"))
        );
        assert_eq!(q("/i.php?q=a", false, None), s("/i.php", Some("q=a")));
        assert_eq!(
            q("/i.php?q=a?", true, Some("x=1")),
            s("/i.php", Some("q=a"))
        );
        assert_eq!(q("/new", false, Some("x=1")), s("/new", Some("x=1")));
        assert_eq!(q("/new?", true, Some("x=1")), s("/new", None));
        assert_eq!(q("/new?", false, Some("x=1")), s("/new", Some("x=1")));
    }

    #[test]
    fn cookies_by_name() {
        let line = b"a=1; beta=on;gamma=x=y";
        assert_eq!(cookie_in(line, "beta"), Some(&b"on"[..]));
        assert_eq!(cookie_in(line, "gamma"), Some(&b"x=y"[..]));
        assert_eq!(cookie_in(line, "bet"), None);
        assert_eq!(cookie_in(line, "a"), Some(&b"1"[..]));
    }
}
