//! The handler each core runs: routes a request to the static files or to
//! an upstream.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringside_runtime::http::{Exchange, Handler};
use ringside_runtime::task;
use ringside_static::{PathError, StaticFiles};

use crate::fastcgi::script::{Resolved, Scripts};

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
}

/// This core's upstreams, in the order of `ProxyConfig::upstreams`.
pub struct ProxyCore {
    upstreams: Vec<RefCell<Local>>,
    headers: ForwardHeaders,
    /// The Via value added to responses, made once.
    via: Option<Box<[u8]>>,
}

/// How often idle upstream connections are checked.
const REAP_EVERY: Duration = Duration::from_secs(1);

impl Edge {
    /// Builds this core's handler; call on the worker's thread. Starts the
    /// core's pool reaper.
    pub fn new(
        statics: StaticFiles,
        static_prefixes: Vec<String>,
        proxy: &ProxyConfig,
        shared: &[Arc<Shared>],
        worker: usize,
        workers: usize,
    ) -> Edge {
        let upstreams = shared
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let seed = (worker as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64;
                RefCell::new(Local::new(s.clone(), seed, worker, workers))
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
                r.fastcgi.as_ref().map(|f| {
                    Scripts::new(f).unwrap_or_else(|e| {
                        panic!("FastCGI root {} vanished: {e}", f.root.display())
                    })
                })
            })
            .collect();
        Edge {
            statics,
            router: Router::new(proxy.routes.clone(), static_prefixes),
            proxy: core,
            scripts,
        }
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
    async fn handle(&self, ex: &mut Exchange<'_>) -> io::Result<()> {
        match self.router.route(ex.host(), ex.path()) {
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
