//! The handler each core runs: answers what the server answers itself
//! ([`own`]), applies the virtual host's https policy ([`https`]), routes
//! the request on its normalized path ([`router`]), refuses the clients
//! the route's `allow`/`deny` refuse ([`access`]), and hands it to the
//! static files or to an upstream's codec.

pub mod access;
pub mod auth;
mod cache;
pub mod error_pages;
pub mod headers;
pub mod https;
pub mod limiter;
pub mod mtls;
mod own;
pub mod real_ip;
pub mod rewrite;
pub mod router;
mod try_files;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringside_http::compress::Policy;
use ringside_http::{Error, Exchange, Handler, Method, Refusal};
use ringside_runtime::task;
use ringside_runtime::worker::WorkerContext;
use ringside_static::{Docroot, PathError, StaticFiles};

use crate::access_log::{self, format::Entry};
use crate::config::auth::AuthConfig;
use crate::config::compress::CompressionConfig;
use crate::config::ops::{LogFormat, OpsConfig};
use crate::metrics::{self, RouteLabel, RouteStats};

use crate::fastcgi::codec::FastCgi;
use crate::fastcgi::script::{Resolved, Scripts};
use crate::upstream::forward::forward;
use crate::upstream::grpc;
use crate::upstream::h1::H1;
use crate::upstream::h2::H2;
use crate::upstream::local::Local;
use crate::upstream::outcome::Outcome;
use crate::upstream::settings::{
    ForwardHeaders, ForwardPath, HttpVersion, ProxyConfig, Underscores,
};
use crate::upstream::shared::Shared;
use access::Access;
use https::HttpsPolicy;
use limiter::Limiter;
use router::{Router, Target};

pub struct Edge {
    statics: StaticFiles,
    router: Router,
    proxy: Rc<ProxyCore>,
    /// Per proxy route, when its upstream is FastCGI: its scripts, and its
    /// root among the static files for what is not a script.
    scripts: Vec<Option<(Scripts, Docroot)>>,
    /// Counters by route tag (see [`TAG_NO_ROUTE`]).
    route_stats: Vec<Arc<RouteStats>>,
    /// The route tag of proxy route 0: after the static root's and the
    /// static routes'.
    proxy_tag: u32,
    log: Option<LogSettings>,
    /// https redirects and HSTS, where a vhost asks for them.
    https: Option<HttpsPolicy>,
    /// `allow`/`deny`, where any level has them.
    access: Option<Access>,
    /// `[[rate_limit]]`s, where any route takes one.
    limiter: Option<Limiter>,
    /// By route tag: what the route compresses.
    compression: Vec<Option<Rc<Policy>>>,
    /// By route tag: its basic auth, where it has one.
    auth: Vec<Option<auth::BasicAuth>>,
    encoded_slash: ringside_http::EncodedSlash,
    path_parameters: ringside_http::PathParameters,
    allow_trace: bool,
    /// By proxy route: this core's cache of the route's `cache`.
    caches: Vec<Option<Rc<ringside_cache::CoreCache>>>,
    /// Where this core's purges go to reach the other cores.
    purges: Option<Rc<cache::Purges>>,
    /// This core's counters, for those made later (the caches').
    core_stats: Arc<metrics::CoreStats>,
    /// Configured response and request fields, where any level has some.
    fields: Option<headers::Fields>,
    /// Rewrites, redirects and fixed answers, where any level has rules.
    rewrites: Option<rewrite::Rewrites>,
    /// `[real_ip]`, where configured.
    real_ip: Option<real_ip::RealIp>,
    /// HTTP-01 challenges are answered (an ACME issuer uses them).
    acme: bool,
    /// `error_pages`, where any level has them.
    error_pages: Option<error_pages::ErrorPages>,
    /// By route tag: its `try_files`, where it has them.
    try_files: Vec<Option<try_files::Tries>>,
    /// `require_client_cert`, where any listener asks for certificates.
    client_certs: Option<mtls::ClientCerts>,
}

/// The request's route tag (the low half of `Exchange::set_tag`'s, whose
/// high half the forward loop fills: `upstream::outcome`): which way it
/// went. The tag of a request no route took (refused, redirected,
/// answered by the edge itself): 0, what an exchange starts with, so a
/// request the driver refuses before routing is counted here too.
const TAG_NO_ROUTE: u32 = 0;
/// `Target::Static(i)` is tagged `TAG_STATIC + i` (0: the root), and proxy
/// route `i` `Edge::proxy_tag + i`.
const TAG_STATIC: u32 = 1;
/// Set in a request's tag when a rate limit refused it (the access log
/// marks it); the bit above the upstream outcome's (`upstream::outcome`).
const RATE_LIMITED: u64 = 1 << 63;
/// Set in a request's tag when basic auth took it (the access log names
/// the user): the top bit of the route's half, which the forward loop
/// keeps as it is.
const AUTHENTICATED: u64 = 1 << 31;

/// What a route's cache did with the request, for the access log: three
/// bits below [`AUTHENTICATED`] (0: no cache on the route), as nginx's
/// `$upstream_cache_status` names them.
const CACHE_AT: u32 = 28;
const CACHE_STATUS: [&str; 8] = [
    "",
    "HIT",
    "MISS",
    "EXPIRED",
    "REVALIDATED",
    "STALE",
    "UPDATING",
    "BYPASS",
];

/// The route tag (an index into the per-tag tables) of a request's tag.
fn route_of(tag: u64) -> usize {
    (tag & ((1 << CACHE_AT) - 1)) as usize
}

/// The cache's verdict in a request's tag, if its route has a cache.
fn cache_status_of(tag: u64) -> Option<&'static str> {
    match CACHE_STATUS[(tag >> CACHE_AT & 7) as usize] {
        "" => None,
        s => Some(s),
    }
}

/// Notes the cache's verdict (an index into [`CACHE_STATUS`]) in the tag.
fn set_cache_status(ex: &mut Exchange<'_>, status: &str) {
    let n = CACHE_STATUS.iter().position(|s| *s == status).unwrap_or(0) as u64;
    ex.set_tag(ex.tag() & !(7 << CACHE_AT) | n << CACHE_AT);
}

struct LogSettings {
    format: LogFormat,
    /// By route tag: whether the route's requests are logged.
    logged: Vec<bool>,
}

/// This core's upstreams, in the order of `ProxyConfig::upstreams`.
pub struct ProxyCore {
    /// Shared with the handler a reload replaced, where the upstream did
    /// not change: its pools carry over.
    upstreams: Vec<Rc<RefCell<Local>>>,
    headers: ForwardHeaders,
    /// The Via value added to responses, made once.
    via: Option<Box<[u8]>>,
    /// The same for responses that came over HTTP/2 (RFC 9110 §7.6.3:
    /// the protocol each was received in).
    via_h2: Option<Box<[u8]>>,
}

/// How often idle upstream connections are checked.
const REAP_EVERY: Duration = Duration::from_secs(1);

impl Edge {
    /// Builds this core's handler; call on the worker's thread. Starts the
    /// core's pool reaper.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mut statics: StaticFiles,
        static_prefixes: Vec<String>,
        proxy: &ProxyConfig,
        ops: &OpsConfig,
        shared: &[Arc<Shared>],
        ctx: &WorkerContext,
        prev: Option<&Edge>,
        https: Option<HttpsPolicy>,
    ) -> Result<Edge, String> {
        let (worker, workers) = (ctx.index, ctx.workers);
        let core_stats = metrics::registry().core(worker, &ctx.stats);
        ringside_http::h2::stats::set_current(core_stats.h2.clone());
        ringside_quic::stats::set_current(core_stats.quic.clone());
        ringside_http::compress::stats::set_current(core_stats.compress.clone());
        ringside_http::client_limit::set_current(core_stats.client_limit.clone());
        let upstreams = shared
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let kept = prev.and_then(|p| {
                    p.proxy
                        .upstreams
                        .iter()
                        .find(|u| Arc::ptr_eq(&u.borrow().shared, s))
                });
                match kept {
                    Some(u) => u.clone(),
                    None => {
                        let seed =
                            (worker as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64;
                        Local::new(s.clone(), seed, worker, workers, core_stats.clone())
                    }
                }
            })
            .collect();
        let core = Rc::new(ProxyCore {
            upstreams,
            headers: proxy.headers.clone(),
            via: proxy
                .headers
                .via
                .as_ref()
                .map(|p| format!("1.1 {p}").into_bytes().into()),
            via_h2: proxy
                .headers
                .via
                .as_ref()
                .map(|p| format!("2 {p}").into_bytes().into()),
        });
        if !core.upstreams.is_empty() {
            task::spawn(reaper(Rc::downgrade(&core)));
        }
        let scripts = proxy
            .routes
            .iter()
            .map(|r| {
                r.fastcgi
                    .as_ref()
                    .map(|f| {
                        let opened =
                            Scripts::new(f).and_then(|s| Ok((s, statics.add_docroot(&f.root)?)));
                        opened.map_err(|e| {
                            format!("cannot open FastCGI root {}: {e}", f.root.display())
                        })
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>, String>>()?;
        let label = |route: &str, host: String| {
            core_stats.route(RouteLabel {
                route: route.to_owned(),
                host,
            })
        };
        // Each static route is a route of its own, by its prefix, as the
        // proxy routes are; the root's prefix is "/".
        let mut route_stats = vec![label("none", String::new()), label("/", String::new())];
        for p in &static_prefixes {
            route_stats.push(label(p, String::new()));
        }
        let proxy_tag = route_stats.len() as u32;
        for r in &proxy.routes {
            route_stats.push(label(&r.prefix, r.hosts.join(",")));
        }
        let log = ops.access_log.as_ref().map(|a| {
            access_log::configure_core(a);
            let mut logged = vec![true; route_stats.len()];
            for &i in &ops.unlogged_proxy_routes {
                logged[proxy_tag as usize + i] = false;
            }
            for (i, p) in static_prefixes.iter().enumerate() {
                if ops.unlogged_static_prefixes.contains(p) {
                    logged[TAG_STATIC as usize + 1 + i] = false;
                }
            }
            LogSettings {
                format: a.format,
                logged,
            }
        });
        Ok(Edge {
            statics,
            router: Router::new(proxy.routes.clone(), static_prefixes),
            proxy: core,
            scripts,
            route_stats,
            proxy_tag,
            log,
            https,
            access: None,
            limiter: None,
            compression: Vec::new(),
            auth: Vec::new(),
            encoded_slash: proxy.encoded_slash,
            path_parameters: proxy.path_parameters,
            allow_trace: proxy.allow_trace,
            caches: Vec::new(),
            purges: None,
            core_stats,
            fields: None,
            rewrites: None,
            real_ip: None,
            acme: false,
            error_pages: None,
            try_files: Vec::new(),
            client_certs: None,
        })
    }

    /// The `allow`/`deny` rules and the rate limits requests are checked
    /// against.
    pub fn with_policies(mut self, access: Option<Access>, limiter: Option<Limiter>) -> Edge {
        self.access = access;
        self.limiter = limiter;
        self
    }

    /// The rewrite rules requests are matched against.
    pub fn with_rewrites(mut self, rewrites: Option<rewrite::Rewrites>) -> Edge {
        self.rewrites = rewrites;
        self
    }

    /// Where the client's address is taken from a balancer's header.
    pub fn with_real_ip(mut self, c: &Option<crate::config::real_ip::RealIpConfig>) -> Edge {
        self.real_ip = c.clone().map(real_ip::RealIp::new);
        self
    }

    /// Whether ACME's HTTP-01 challenges are answered.
    pub fn with_acme(mut self, on: bool) -> Edge {
        self.acme = on;
        self
    }

    /// What each route compresses on the fly (`prefixes`: the static
    /// routes', as `new` had them).
    pub fn with_compression(mut self, c: &CompressionConfig, prefixes: &[String]) -> Edge {
        let policy = |r| c.policy(r).map(Rc::new);
        let server = policy(None);
        self.compression = self.per_tag(
            server.clone(),
            prefixes,
            |p| match c.static_route(p) {
                None => server.clone(),
                own => policy(own),
            },
            |i| policy(c.proxy_routes.get(i)),
        );
        self
    }

    /// This core's caches (`settings`: the config's `[cache.NAME]`s), by
    /// the proxy routes that name them, joined to `cast` for purges. A
    /// cache whose settings a reload left as they were keeps what it
    /// stored.
    pub fn with_caches(
        mut self,
        settings: &[ringside_cache::Settings],
        prev: Option<&Edge>,
        cast: &Arc<ringside_cache::purge::Broadcast>,
    ) -> Edge {
        if settings.is_empty() {
            return self;
        }
        let kept = |s: &ringside_cache::Settings| {
            prev.into_iter()
                .flat_map(|p| p.caches.iter().flatten())
                .find(|c| c.settings == *s)
                .cloned()
        };
        let cores: Vec<Rc<ringside_cache::CoreCache>> = settings
            .iter()
            .map(|s| {
                kept(s).unwrap_or_else(|| {
                    let c = Rc::new(ringside_cache::CoreCache::new(
                        s.clone(),
                        self.core_stats.cache(&s.name),
                        self.core_stats.worker,
                    ));
                    c.start();
                    c
                })
            })
            .collect();
        self.caches = self
            .router
            .routes()
            .iter()
            .map(|r| r.cache.map(|i| cores[i].clone()))
            .collect();
        let by_name = move |name: &str| cores.iter().find(|c| c.settings.name == name).cloned();
        match cast.join(by_name) {
            Ok(member) => self.purges = Some(Rc::new(cache::Purges(cast.clone(), member))),
            Err(e) => {
                tracing::warn!(error = %e, "purges taken on other cores will not reach this one")
            }
        }
        self
    }

    /// The configured header fields of each route (`prefixes`: the static
    /// routes', as `new` had them), and this core's `Server` field.
    pub fn with_fields(
        mut self,
        h: &crate::config::headers::HeadersConfig,
        tls: &crate::config::tls::TlsConfig,
        prefixes: &[String],
    ) -> Edge {
        ringside_http::fields::set_server(h.server_tokens.value());
        self.fields = headers::Fields::new(h, tls, prefixes, self.router.routes().len());
        self
    }

    /// Each route's basic auth (`prefixes`: the static routes', as `new`
    /// had them).
    pub fn with_auth(mut self, a: &AuthConfig, prefixes: &[String]) -> Edge {
        self.auth = self.per_tag(
            None,
            prefixes,
            |p| a.static_route(p).cloned().map(auth::BasicAuth::new),
            |i| {
                let users = a.proxy_routes.get(i).cloned().flatten();
                users.map(auth::BasicAuth::new)
            },
        );
        self
    }

    /// Each route's error pages (`prefixes`: the static routes', as `new`
    /// had them), page files checked for changes at most every `every`.
    pub fn with_error_pages(
        mut self,
        c: &crate::config::error_pages::ErrorPagesConfig,
        tls: &crate::config::tls::TlsConfig,
        prefixes: &[String],
        every: Duration,
    ) -> Edge {
        let routes = self.per_tag(
            None,
            prefixes,
            |p| c.static_route(p).map(|r| (r, false)),
            |i| c.proxy_routes.get(i).map(|(r, x)| (r, *x)),
        );
        self.error_pages = error_pages::ErrorPages::new(c, tls, &routes, every);
        self
    }

    /// Each route's `try_files` (`prefixes`: the static routes', as `new`
    /// had them); a route to an HTTP upstream gets its root opened.
    pub fn with_try_files(
        mut self,
        c: &crate::config::try_files::TryFilesConfig,
        prefixes: &[String],
    ) -> Result<Edge, String> {
        let mut by_route = Vec::new();
        for t in &c.proxy_routes {
            let docroot = match t.as_ref().and_then(|t| t.root.as_ref()) {
                Some(root) => Some(
                    self.statics
                        .add_docroot(root)
                        .map_err(|e| format!("cannot open root {}: {e}", root.display()))?,
                ),
                None => None,
            };
            by_route.push(Some(docroot));
        }
        let by_route = std::cell::RefCell::new(by_route);
        self.try_files = self.per_tag(
            None,
            prefixes,
            |p| c.static_route(p).map(|t| try_files::Tries::new(t, None)),
            |i| {
                let t = c.proxy_routes.get(i)?.as_ref()?;
                let docroot = by_route.borrow_mut().get_mut(i)?.take()?;
                Some(try_files::Tries::new(t, docroot))
            },
        );
        Ok(self)
    }

    /// Each route's `require_client_cert` (`prefixes`: the static routes',
    /// as `new` had them).
    pub fn with_client_certs(
        mut self,
        c: &crate::config::mtls::MtlsConfig,
        tls: &crate::config::tls::TlsConfig,
        prefixes: &[String],
    ) -> Edge {
        let required = self.per_tag(
            None,
            prefixes,
            |p| c.static_route(p).then_some(()),
            |i| {
                c.proxy_routes
                    .get(i)
                    .copied()
                    .unwrap_or(false)
                    .then_some(())
            },
        );
        let required = required.iter().map(Option::is_some).collect();
        let any = crate::config::mtls::any_client_auth(tls);
        self.client_certs = mtls::ClientCerts::new(any, required);
        self
    }

    /// One value per route tag, in the tags' order: none for
    /// [`TAG_NO_ROUTE`], `root` for the static root, then each static
    /// route's by prefix and each proxy route's by index.
    fn per_tag<T>(
        &self,
        root: Option<T>,
        prefixes: &[String],
        by_prefix: impl Fn(&str) -> Option<T>,
        by_route: impl Fn(usize) -> Option<T>,
    ) -> Vec<Option<T>> {
        let statics = prefixes.iter().map(|p| by_prefix(p));
        let proxies = (0..self.router.routes().len()).map(by_route);
        [None, root]
            .into_iter()
            .chain(statics)
            .chain(proxies)
            .collect()
    }

    /// Whether a request is a gRPC call: to a route with `grpc = true`,
    /// or by its content-type to any proxy route.
    fn is_grpc(&self, ex: &Exchange<'_>, target: Target) -> bool {
        match target {
            Target::Proxy(i) => self.router.routes()[i].grpc || grpc::is_grpc(ex),
            _ => false,
        }
    }

    fn admits(&self, ex: &Exchange<'_>, target: Option<Target>) -> bool {
        self.access.as_ref().is_none_or(|a| a.admits(ex, target))
    }

    fn log(&self, log: &LogSettings, ex: &Exchange<'_>, status: u16, elapsed: Duration) {
        let (_, upstream) = Outcome::unpack(ex.tag());
        if !log.logged[route_of(ex.tag())] {
            return;
        }
        // nginx's $remote_user, once basic auth took the request.
        let user = (ex.tag() & AUTHENTICATED != 0)
            .then(|| auth::user(ex.header("authorization")?))
            .flatten();
        let subject = self.client_certs.as_ref().and_then(|_| mtls::subject(ex));
        access_log::log(
            log.format,
            &Entry {
                peer: ex.peer().ok(),
                user: user.as_deref(),
                method: ex.method_bytes(),
                target: ex.target(),
                version: ex.version().as_str(),
                status,
                body_bytes: ex.body_bytes(),
                referer: ex.header("referer"),
                user_agent: ex.header("user-agent"),
                host: ex.host(),
                elapsed,
                upstream,
                limited: (ex.tag() & RATE_LIMITED != 0).then_some("rate"),
                cache: cache_status_of(ex.tag()),
                unix: ex.is_unix(),
                client_cert_subject: subject.as_deref(),
            },
        );
    }

    /// A request no route took (refused by the HTTP layer): counted, and
    /// logged with its request line where it was read and the limit that
    /// refused it, if one did.
    fn log_refused(&self, r: &Refusal<'_>, limited: Option<&'static str>) {
        self.route_stats[TAG_NO_ROUTE as usize].record(r.status, r.body_bytes, 0, r.elapsed);
        if let Some(log) = &self.log {
            if log.logged[TAG_NO_ROUTE as usize] {
                let (method, target, version) = match &r.line {
                    Some(l) => (l.method, l.target, l.version.as_str()),
                    None => (&b""[..], &b""[..], ""),
                };
                access_log::log(
                    log.format,
                    &Entry {
                        peer: (r.peer)(),
                        user: None,
                        method,
                        target,
                        version,
                        status: r.status,
                        body_bytes: r.body_bytes,
                        referer: None,
                        user_agent: None,
                        host: None,
                        elapsed: r.elapsed,
                        upstream: Outcome::default(),
                        limited,
                        cache: None,
                        unix: false,
                        client_cert_subject: None,
                    },
                );
            }
        }
    }
}

/// Closes idle upstream connections past their time each second, and all
/// of them when the drain begins: a process taking over (a restart) gets
/// the servers' capacity at once, and a FastCGI server's children are not
/// held by connections nobody will use.
/// ACME's HTTP-01 (RFC 8555 §8.3): a published token's key authorization,
/// before any route, redirect or auth could refuse the CA; `None` lets
/// every other request through.
#[cold]
fn acme_challenge(ex: &mut Exchange<'_>) -> Option<Result<(), Error>> {
    let token = ex.path().strip_prefix(b"/.well-known/acme-challenge/")?;
    if !matches!(ex.method(), Method::Get | Method::Head) {
        return None;
    }
    let body = crate::acme::store::http01(token)?;
    Some(ex.send(
        200,
        &[("Content-Type", b"application/octet-stream")],
        body.as_bytes(),
    ))
}

async fn reaper(core: std::rc::Weak<ProxyCore>) {
    let mut drain = std::pin::pin!(ringside_runtime::shutdown::drain_begun());
    loop {
        let drained = match task::select(drain.as_mut(), task::sleep(REAP_EVERY)).await {
            task::Either::Left(()) => true,
            task::Either::Right(()) => false,
        };
        let Some(core) = core.upgrade() else { return };
        for u in &core.upstreams {
            let mut u = u.borrow_mut();
            if drained {
                u.drain_idle();
            } else {
                u.reap(ringside_runtime::clock::now());
            }
        }
        if drained {
            return;
        }
    }
}

impl Handler for Edge {
    #[inline]
    fn done(&self, ex: &Exchange<'_>, started: Instant) {
        // In turns of the loop (`ringside_runtime::clock`): a request
        // answered within one turn took 0, as under nginx's cached time.
        let elapsed = ringside_runtime::clock::now().saturating_duration_since(started);
        // No status: the client went away before an answer (nginx's 499).
        let status = match ex.status() {
            0 => 499,
            s => s,
        };
        self.route_stats[route_of(ex.tag())].record(
            status,
            ex.body_bytes(),
            ex.head_len(),
            elapsed,
        );
        if let Some(log) = &self.log {
            self.log(log, ex, status, elapsed);
        }
        crate::failpoint::request_done();
    }

    fn refused(&self, r: &Refusal<'_>) {
        self.log_refused(r, None);
    }

    fn over_limit(&self, r: &Refusal<'_>) {
        self.log_refused(r, Some("connections"));
    }

    fn encoded_slash(&self) -> ringside_http::EncodedSlash {
        self.encoded_slash
    }

    fn path_parameters(&self) -> ringside_http::PathParameters {
        self.path_parameters
    }

    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        if let Some(r) = &self.real_ip {
            r.apply(ex);
        }
        if let Some(f) = &self.fields {
            f.apply(ex, TAG_NO_ROUTE as usize);
        }
        if self.acme {
            if let Some(answered) = acme_challenge(ex) {
                ex.set_tag(TAG_NO_ROUTE.into());
                return answered;
            }
        }
        if ex.method() == Method::Connect || ex.target() == b"*" {
            ex.set_tag(TAG_NO_ROUTE.into());
            if !self.admits(ex, None) {
                return ex.send_status(403);
            }
            return own::server_wide(ex, !self.router.routes().is_empty());
        }
        if let Some(p) = &self.https {
            if let Some(redirected) = p.apply(ex) {
                ex.set_tag(TAG_NO_ROUTE.into());
                return redirected;
            }
        }
        if let Some(r) = &self.rewrites {
            if let Some(answered) = r.before_routing(ex, |ex| self.admits(ex, None)) {
                ex.set_tag(TAG_NO_ROUTE.into());
                return answered;
            }
        }
        let target = self.router.route(ex.host(), ex.route_path());
        ex.set_tag(u64::from(match target {
            Target::Static(i) => TAG_STATIC + i as u32,
            Target::NotFound => TAG_NO_ROUTE,
            Target::Proxy(i) => self.proxy_tag + i as u32,
        }));
        if let Some(f) = &self.fields {
            f.apply(ex, route_of(ex.tag()));
        }
        if let Some(p) = &self.error_pages {
            p.apply(ex, route_of(ex.tag()));
        }
        if !self.admits(ex, Some(target)) {
            return ex.send_status(403);
        }
        if let Some(c) = &self.client_certs {
            if c.refuses(ex, route_of(ex.tag())) {
                return mtls::refuse(ex, self.is_grpc(ex, target)).await;
            }
        }
        if let Some(p) = self.compression.get(route_of(ex.tag())) {
            ex.set_compression(p.clone());
        }
        if let Some(over) = self.limiter.as_ref().and_then(|l| l.check(ex, target)) {
            self.route_stats[route_of(ex.tag())].limited.add(1);
            ex.set_tag(ex.tag() | RATE_LIMITED);
            if self.is_grpc(ex, target) {
                let why = "rate limited";
                return crate::upstream::grpc::answer(ex, grpc::RESOURCE_EXHAUSTED, why).await;
            }
            let retry = over.retry_after.to_string();
            let status = over.status;
            let text = ringside_http::status::reason(status);
            return ex.send(
                status,
                &[
                    ("Retry-After", retry.as_bytes()),
                    ("Content-Type", b"text/plain"),
                ],
                format!("{status} {text}\n").as_bytes(),
            );
        }
        if let Some(Some(a)) = self.auth.get(route_of(ex.tag())) {
            if a.admits(ex.header("authorization")) {
                ex.set_tag(ex.tag() | AUTHENTICATED);
            } else {
                return ex.send(
                    401,
                    &[
                        ("WWW-Authenticate", &a.challenge),
                        ("Content-Type", b"text/plain"),
                    ],
                    b"401 Unauthorized\n",
                );
            }
        }
        // After the route's own checks; a rewrite is routed again, and
        // checked again, from the top (boxed: only a rewrite pays for it).
        if let Some(step) = self.rewrites.as_ref().and_then(|r| r.at_route(ex, target)) {
            return match step {
                rewrite::Step::Again => Box::pin(self.handle(ex)).await,
                rewrite::Step::Done(r) => r,
            };
        }
        if ex.method() == Method::Trace && !self.allow_trace {
            return own::trace_refused(ex, matches!(target, Target::Proxy(_)));
        }
        if own::last_hop(ex) {
            return own::answer_last_hop(ex, matches!(target, Target::Proxy(_)));
        }
        if let Some(Some(t)) = self.try_files.get(route_of(ex.tag())) {
            if let Some(answered) = self.try_files(ex, t, target).await {
                return answered;
            }
        }
        match target {
            Target::Static(_) => self.statics.handle(ex).await,
            Target::Proxy(i) => match self.caches.get(i) {
                Some(Some(c)) => self.cached(ex, i, c).await,
                _ => self.proxy(ex, i).await,
            },
            Target::NotFound => ex.send_status(404),
        }
    }
}

impl Edge {
    /// The content of proxy route `i`: its upstream, or its FastCGI
    /// scripts and the files beside them.
    async fn proxy(&self, ex: &mut Exchange<'_>, i: usize) -> Result<(), Error> {
        let route = &self.router.routes()[i];
        let up = &self.proxy.upstreams[route.upstream];
        if self.proxy.headers.underscores == Underscores::Reject
            && ex.headers().any(|(n, _)| n.contains(&b'_'))
        {
            return ex.send_status(400);
        }
        match &self.scripts[i] {
            None => {
                let codec = H1 {
                    route,
                    headers: &self.proxy.headers,
                    via: self.proxy.via.as_deref(),
                };
                let h2 = {
                    let l = up.borrow();
                    match l.shared.cfg.http().map(|h| h.version) {
                        Some(HttpVersion::H2) => true,
                        // h2c is never guessed: `auto` is ALPN's.
                        Some(HttpVersion::Auto) => l.shared.tls.is_some(),
                        _ => false,
                    }
                };
                let grpc = self.is_grpc(ex, Target::Proxy(i));
                if !h2 && !grpc {
                    // Inline, not boxed: the request's future is out
                    // of its connection's already (a reused block
                    // over HTTP/1, the stream's own task over
                    // HTTP/2), and a second allocation per proxied
                    // request, apart from the first, cost 7% of an
                    // HTTP/2 proxied request's CPU.
                    return forward(ex, up, &codec).await;
                }
                let via_h2 = self.proxy.via_h2.as_deref();
                proxy_h2(ex, up, codec, h2, grpc, via_h2).await
            }
            Some((scripts, docroot)) => match scripts.resolve(ex.path()) {
                Resolved::Script {
                    script_name,
                    path_info,
                } => {
                    let codec = FastCgi {
                        route: scripts.route(),
                        script_name: &script_name,
                        path_info: &path_info,
                        raw_uri: route.forward_path == ForwardPath::Raw,
                    };
                    forward(ex, up, &codec).await
                }
                // From the route's root, as its scripts (nginx's
                // `root` in a location holds for all of it).
                Resolved::NotScript => self.statics.handle_in(ex, docroot).await,
                Resolved::Missing | Resolved::Refused(PathError::Hidden) => ex.send_status(404),
                Resolved::Refused(PathError::Invalid) => ex.send_status(400),
            },
        }
    }
}

/// A request to an HTTP/2 upstream, or a gRPC call (to any upstream): a
/// call that fails in ringside is answered in gRPC's terms, its status
/// DEADLINE_EXCEEDED once its `grpc-timeout` passed.
async fn proxy_h2(
    ex: &mut Exchange<'_>,
    up: &RefCell<Local>,
    h1: H1<'_>,
    h2: bool,
    grpc: bool,
    via_h2: Option<&[u8]>,
) -> Result<(), Error> {
    let deadline = grpc
        .then(|| grpc::timeout(ex))
        .flatten()
        .map(|t| ringside_runtime::clock::now() + t);
    let r = if h2 {
        let via = via_h2;
        forward(
            ex,
            up,
            &H2 {
                h1,
                grpc,
                deadline,
                via,
            },
        )
        .await
    } else {
        forward(ex, up, &h1).await
    };
    if let Err(e) = &r {
        tracing::debug!(error = %e, "forwarding failed");
    }
    match r {
        Err(e) if grpc && e.kind() != ringside_http::Kind::ClientGone => {
            let passed = deadline.is_some_and(|d| ringside_runtime::clock::now() >= d);
            tracing::debug!(error = %e, "gRPC call failed");
            grpc::answer(ex, grpc::status_of(&e, passed), &e.to_string()).await
        }
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::Edge;
    use ringside_runtime::link::Driver;

    /// Every open connection's task is as large as this future, idle or
    /// not: the idle keep-alive memory in the README (about 640 B a
    /// connection) holds only while no request's state (head, exchange,
    /// the handler's own future, 1,000 B and more) is kept inline in it.
    #[test]
    fn the_connection_future_keeps_no_request_state_inline() {
        fn returned<F: FnOnce(A, B, C) -> R, A, B, C, R>(_: F) -> usize {
            std::mem::size_of::<R>()
        }
        let size = returned(<ringside_http::Http as Driver<Edge>>::serve);
        assert!(size <= 512, "the connection future is {size} B");
    }
}
