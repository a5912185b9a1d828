//! The handler each core runs: routes a request to the static files or to
//! an upstream.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringside_runtime::http::{Exchange, Handler, Method, Version};
use ringside_runtime::task;
use ringside_runtime::worker::WorkerContext;
use ringside_static::{PathError, StaticFiles};

use crate::access_log::{self, format::Entry};
use crate::config::ops::{LogFormat, OpsConfig};
use crate::metrics::{self, RouteLabel, RouteStats};

use crate::fastcgi::script::{Resolved, Scripts};
use crate::https::HttpsPolicy;

use crate::router::{Router, Target};
use crate::upstream::forward::forward;
use crate::upstream::local::Local;
use crate::upstream::settings::{ForwardHeaders, ProxyConfig};
use crate::upstream::shared::Shared;

pub struct Edge {
    statics: StaticFiles,
    router: Router,
    proxy: Rc<ProxyCore>,
    /// Per proxy route: its scripts' docroot when the upstream is FastCGI.
    scripts: Vec<Option<Scripts>>,
    /// Counters by tag (see [`TAG_STATIC`]).
    route_stats: Vec<Arc<RouteStats>>,
    log: Option<LogSettings>,
    /// https redirects and HSTS, where a vhost asks for them.
    https: Option<HttpsPolicy>,
}

/// The request's tag (`Exchange::set_tag`): which way it went.
const TAG_STATIC: u32 = 0;
const TAG_NO_ROUTE: u32 = 1;
/// Proxy route `i` is tagged `TAG_PROXY + i`.
const TAG_PROXY: u32 = 2;

struct LogSettings {
    format: LogFormat,
    /// By tag: whether the route's requests are logged.
    logged: Vec<bool>,
    unlogged_static: Vec<String>,
}

/// This core's upstreams, in the order of `ProxyConfig::upstreams`.
pub struct ProxyCore {
    /// Shared with the handler a reload replaced, where the upstream did
    /// not change: its pools carry over.
    upstreams: Vec<Rc<RefCell<Local>>>,
    headers: ForwardHeaders,
    /// The Via value added to responses, made once.
    via: Option<Box<[u8]>>,
}

/// How often idle upstream connections are checked.
const REAP_EVERY: Duration = Duration::from_secs(1);

impl Edge {
    /// Builds this core's handler; call on the worker's thread. Starts the
    /// core's pool reaper.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        statics: StaticFiles,
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
                        Rc::new(RefCell::new(Local::new(
                            s.clone(),
                            seed,
                            worker,
                            workers,
                            core_stats.clone(),
                        )))
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
                        Scripts::new(f).map_err(|e| {
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
        let mut route_stats = vec![label("static", String::new()), label("none", String::new())];
        for r in &proxy.routes {
            route_stats.push(label(&r.prefix, r.hosts.join(",")));
        }
        let log = ops.access_log.as_ref().map(|a| {
            access_log::configure_core(a);
            let mut logged = vec![true; route_stats.len()];
            for &i in &ops.unlogged_proxy_routes {
                logged[TAG_PROXY as usize + i] = false;
            }
            LogSettings {
                format: a.format,
                logged,
                unlogged_static: ops.unlogged_static_prefixes.clone(),
            }
        });
        Ok(Edge {
            statics,
            router: Router::new(proxy.routes.clone(), static_prefixes),
            proxy: core,
            scripts,
            route_stats,
            log,
            https,
        })
    }

    fn log(&self, log: &LogSettings, ex: &Exchange<'_>, status: u16, elapsed: Duration) {
        let tag = ex.tag();
        if !log.logged[tag as usize] {
            return;
        }
        if tag == TAG_STATIC
            && log
                .unlogged_static
                .iter()
                .any(|p| ex.path().starts_with(p.as_bytes()))
        {
            return;
        }
        access_log::log(
            log.format,
            &Entry {
                peer: ex.peer().ok(),
                method: ex.method_bytes(),
                target: ex.target(),
                version: match ex.version() {
                    Version::Http10 => "HTTP/1.0",
                    _ => "HTTP/1.1",
                },
                status,
                body_bytes: ex.body_bytes(),
                referer: ex.header("referer"),
                user_agent: ex.header("user-agent"),
                host: ex.host(),
                elapsed,
            },
        );
    }
}

async fn reaper(core: std::rc::Weak<ProxyCore>) {
    loop {
        task::sleep(REAP_EVERY).await;
        let Some(core) = core.upgrade() else { return };
        let now = Instant::now();
        for u in &core.upstreams {
            u.borrow_mut().reap(now);
        }
    }
}

impl Handler for Edge {
    #[inline]
    fn done(&self, ex: &Exchange<'_>, started: Instant) {
        let elapsed = started.elapsed();
        // No status: the client went away before an answer (nginx's 499).
        let status = match ex.status() {
            0 => 499,
            s => s,
        };
        self.route_stats[ex.tag() as usize].record(status, ex.body_bytes(), ex.head_len(), elapsed);
        if let Some(log) = &self.log {
            self.log(log, ex, status, elapsed);
        }
    }

    fn refused(&self, status: u16, body: u64, peer: &dyn Fn() -> Option<std::net::SocketAddr>) {
        self.route_stats[TAG_NO_ROUTE as usize].record(status, body, 0, Duration::ZERO);
        if let Some(log) = &self.log {
            if log.logged[TAG_NO_ROUTE as usize] {
                access_log::log(
                    log.format,
                    &Entry {
                        peer: peer(),
                        method: b"",
                        target: b"",
                        version: "",
                        status,
                        body_bytes: body,
                        referer: None,
                        user_agent: None,
                        host: None,
                        elapsed: Duration::ZERO,
                    },
                );
            }
        }
    }

    async fn handle(&self, ex: &mut Exchange<'_>) -> io::Result<()> {
        if ex.method() == Method::Connect || ex.target() == b"*" {
            return server_wide(ex);
        }
        if let Some(p) = &self.https {
            if let Some(redirected) = p.apply(ex) {
                ex.set_tag(TAG_NO_ROUTE);
                return redirected;
            }
        }
        let target = self.router.route(ex.host(), ex.path());
        ex.set_tag(match target {
            Target::Static => TAG_STATIC,
            Target::NotFound => TAG_NO_ROUTE,
            Target::Proxy(i) => TAG_PROXY + i as u32,
        });
        match target {
            Target::Static => self.statics.handle(ex).await,
            Target::Proxy(i) if self.scripts[i].is_some() => {
                let scripts = self.scripts[i].as_ref().expect("checked");
                let up = &self.proxy.upstreams[self.router.routes()[i].upstream];
                match scripts.resolve(ex.path()) {
                    Resolved::Script {
                        script_name,
                        path_info,
                    } => {
                        Box::pin(crate::fastcgi::forward::forward(
                            ex,
                            scripts.route(),
                            up,
                            &script_name,
                            &path_info,
                        ))
                        .await
                    }
                    Resolved::NotScript => self.statics.handle(ex).await,
                    Resolved::Missing | Resolved::Refused(PathError::Hidden) => ex.send_status(404),
                    Resolved::Refused(PathError::Invalid) => ex.send_status(400),
                }
            }
            Target::Proxy(i) => {
                let route = &self.router.routes()[i];
                let up = &self.proxy.upstreams[route.upstream];
                // Boxed: only proxied requests pay for the forwarding
                // future, and idle connections stay small.
                Box::pin(forward(
                    ex,
                    route,
                    up,
                    &self.proxy.headers,
                    self.proxy.via.as_deref(),
                ))
                .await
            }
            Target::NotFound => ex.send_status(404),
        }
    }
}

/// Requests about the server rather than a resource, which no route may
/// see: `OPTIONS *` (the parser allows `*` only there) gets an empty 200,
/// and CONNECT a 501, since ringside is not a forward proxy. What follows a
/// CONNECT on the connection is tunnel data, never a request, so it closes.
#[cold]
fn server_wide(ex: &mut Exchange<'_>) -> io::Result<()> {
    ex.set_tag(TAG_NO_ROUTE);
    if ex.method() == Method::Connect {
        ex.set_close();
        return ex.send_status(501);
    }
    ex.send(200, &[], b"")
}
