//! Starting the workers: one thread per core, each pinned, each with its own
//! engine, its own `SO_REUSEPORT` listeners and its own handler value.
//! Nothing a worker does on the request path touches another worker.

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::backend::{self, Backend, BackendError};
use crate::cgroup::Quota;
use crate::config::{Affinity, ConnConfig, RuntimeConfig, ServerConfig, Workers};
use crate::conns;
pub use crate::context::WorkerContext;
use crate::link::{Driver, Link, UdpAt};
use crate::net::{bind_reuseport, TcpListener};
use crate::reload::{self, Current, Factory, ReloadInbox, Reloader};
use crate::shutdown::{self, LocalEvent, ShutdownHandle, ShutdownSignal};
use crate::stats::WorkerStats;
use crate::task;

mod inherit;
pub use inherit::{adopt, migrate_req, Inherited};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("cannot listen on {addr}: {cause}")]
    Bind { addr: SocketAddr, cause: io::Error },
    #[error("worker {index} failed to start on {backend}: {cause}")]
    Worker {
        index: usize,
        backend: Backend,
        cause: io::Error,
    },
    #[error("cpu_affinity names CPU {0}, which this process may not run on")]
    NoSuchCpu(usize),
    #[error("TLS listeners need the io-uring or epoll backend; glommio has no writability wait for TLS to use")]
    TlsOnGlommio,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The running workers.
pub struct Server<H> {
    threads: Vec<JoinHandle<()>>,
    shutdown: ShutdownHandle,
    reloader: Reloader<H>,
    pub local_addrs: Vec<SocketAddr>,
    pub backend: Backend,
    pub workers: usize,
}

impl<H> Server<H> {
    /// Gives every worker a handler built by `factory`, and `conn` for its
    /// connections, without closing a listener or a connection (see
    /// [`crate::reload`]). Returns the workers that refused, with why; those
    /// keep their old handler.
    pub fn reload(&mut self, factory: Factory<H>, conn: ConnConfig) -> Vec<(usize, String)> {
        self.reloader.reload(factory, conn)
    }

    /// Starts draining every worker (stop accepting, finish in-flight
    /// requests up to the grace period).
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    /// Waits for every worker to finish.
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// The CPUs this process may run on, in order.
pub fn available_cpus() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    ids
}

/// How many CPUs the machine has online (0 when it does not say).
fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(0)
}

fn placement(rt: &RuntimeConfig) -> Result<(usize, Vec<Option<usize>>), StartError> {
    let p = place(
        rt,
        &available_cpus(),
        online_cpus(),
        crate::cgroup::cpu_quota(),
    )?;
    if let Some(why) = p.why {
        tracing::info!("{why}");
    }
    Ok((p.n, p.pins))
}

/// What [`place`] decided.
#[derive(Debug, PartialEq, Eq)]
struct Placement {
    n: usize,
    pins: Vec<Option<usize>>,
    why: Option<String>,
}

/// How many workers, each pinned where, for the CPUs `cpus` this process
/// may run on (of `online` on the machine) and its cgroup's CPU `quota`;
/// and, when the quota or the shared CPUs changed that, why (said once at
/// start).
///
/// A quota worth fewer CPUs than the affinity mask holds (a Kubernetes CPU
/// limit without the static CPU manager, `docker run --cpus`) caps
/// `workers = "auto"`: more workers than the quota pays for only take turns
/// being throttled. Such workers are not pinned either: the mask's CPUs are
/// shared with other containers, and which of them the quota is spent on
/// is the kernel's choice, not ours. Where the mask is no larger than the
/// quota (the static CPU manager's exclusive cores), it pins as before.
///
/// `cpu_affinity = "auto"` (the default) also leaves workers unpinned
/// where the mask is every CPU of the machine: nothing then says the CPUs
/// are ours, and a worker pinned to a CPU that other work also uses (the
/// clients, the backends, php-fpm) keeps its full share of the listener's
/// connections with less of the CPU. Measured on 2 CPUs with the client
/// and the origin on the second, 2 workers, wrk -c100, medians of 3: proxy
/// 32,763 req/s pinned, 45,889 unpinned (nginx 42,585); static 26 B
/// 88,202 pinned, 134,154 unpinned (nginx 74,899). A mask narrower than
/// the machine (taskset, systemd's CPUAffinity=, the static CPU manager)
/// means the CPUs were handed over: pinned.
fn place(
    rt: &RuntimeConfig,
    cpus: &[usize],
    online: usize,
    quota: Option<Quota>,
) -> Result<Placement, StartError> {
    let limit = quota
        .filter(|q| q.cpus() < cpus.len())
        .map(|q| (q, q.cpus()));
    let n = match (&rt.workers, limit) {
        (Workers::Auto, Some((_, q))) => q,
        (Workers::Auto, None) => cpus.len().max(1),
        (Workers::Count(n), _) => (*n).max(1),
    };
    let unpinned = limit.is_some() && rt.affinity == Affinity::Auto;
    let shared = limit.is_none() && rt.affinity == Affinity::Auto && cpus.len() >= online;
    let pins = match &rt.affinity {
        Affinity::Auto if unpinned || shared => vec![None; n],
        Affinity::Off => vec![None; n],
        Affinity::Auto | Affinity::On if cpus.is_empty() => vec![None; n],
        Affinity::Auto | Affinity::On => (0..n).map(|i| Some(cpus[i % cpus.len()])).collect(),
        Affinity::Cpus(list) => {
            if let Some(&bad) = list.iter().find(|c| !cpus.contains(c)) {
                return Err(StartError::NoSuchCpu(bad));
            }
            (0..n).map(|i| Some(list[i % list.len()])).collect()
        }
    };
    let shared_why = shared.then(|| {
        format!(
            "workers not pinned: this process may run on all {online} CPUs of the machine, which \
             other work may share (cpu_affinity = true pins them anyway; a narrower CPU set, \
             as taskset or CPUAffinity= give, pins them)"
        )
    });
    let why = limit
        .filter(|_| rt.workers == Workers::Auto || unpinned)
        .map(|(quota, q)| {
            let mut what = Vec::new();
            if rt.workers == Workers::Auto {
                what.push(format!("workers {n}"));
            }
            if unpinned {
                what.push("not pinned (those CPUs are shared; the kernel places the quota)".into());
            }
            format!(
                "cgroup CPU quota {}/{} us = {q} CPU (rounded up), below the {} CPUs this process may run on: {}",
                quota.quota,
                quota.period,
                cpus.len(),
                what.join(", ")
            )
        });
    Ok(Placement {
        n,
        pins,
        why: why.or(shared_why),
    })
}

/// Binds every listener (so port 0 resolves once and errors come back before
/// any thread starts), then starts the workers, each serving its
/// connections with `driver` and a handler from `factory` (which
/// [`Server::reload`] can later replace), and waits until each is accepting.
pub fn start<H: 'static, D: Driver<H>>(
    rt: &RuntimeConfig,
    srv: &ServerConfig,
    factory: Factory<H>,
    driver: D,
) -> Result<Server<H>, StartError> {
    bind(rt, srv)?.spawn(factory, driver)
}

/// Listeners bound and workers placed, none started yet: the moment to drop
/// privileges, between binding a port below 1024 and running any handler.
pub struct Bound {
    backend: Backend,
    n: usize,
    pins: Vec<Option<usize>>,
    per_worker: Vec<Vec<std::net::TcpListener>>,
    /// Per worker, sockets beyond its one per address, with the index of
    /// their address: those a previous process handed over to fewer
    /// workers (see [`adopt`]).
    extra: Vec<Vec<(usize, std::net::TcpListener)>>,
    local_addrs: Vec<SocketAddr>,
    /// Per worker, its UDP socket of each HTTP/3 listener's group.
    udp: Vec<Vec<(std::net::UdpSocket, UdpAt)>>,
    srv: ServerConfig,
    ring_entries: u32,
    coalesce_wait: Duration,
}

/// Resolves the backend and placement and binds every listener (so port 0
/// resolves once and errors come back before any thread starts).
pub fn bind(rt: &RuntimeConfig, srv: &ServerConfig) -> Result<Bound, StartError> {
    let backend = backend::resolve(rt.backend)?;
    if backend == Backend::Glommio && srv.tls.iter().any(Option::is_some) {
        return Err(StartError::TlsOnGlommio);
    }
    let (n, pins) = placement(rt)?;
    let mut local_addrs = Vec::new();
    let mut per_worker: Vec<Vec<std::net::TcpListener>> = (0..n).map(|_| Vec::new()).collect();
    for &addr in &srv.listen {
        let first =
            bind_reuseport(addr, srv.backlog).map_err(|cause| StartError::Bind { addr, cause })?;
        let actual = first.local_addr()?;
        local_addrs.push(actual);
        per_worker[0].push(first);
        for w in per_worker.iter_mut().skip(1) {
            w.push(
                bind_reuseport(actual, srv.backlog).map_err(|cause| StartError::Bind {
                    addr: actual,
                    cause,
                })?,
            );
        }
    }
    let udp = bind_udp(srv, &local_addrs, n)?;
    Ok(Bound {
        backend,
        n,
        pins,
        per_worker,
        extra: Vec::new(),
        local_addrs,
        udp,
        srv: srv.clone(),
        ring_entries: rt.ring_entries,
        coalesce_wait: rt.coalesce_wait,
    })
}

/// One UDP socket per worker on the port of each listener that serves
/// HTTP/3, steered by connection ID where the kernel takes the program.
fn bind_udp(
    srv: &ServerConfig,
    local_addrs: &[SocketAddr],
    n: usize,
) -> Result<Vec<Vec<(std::net::UdpSocket, UdpAt)>>, StartError> {
    let mut udp: Vec<Vec<_>> = (0..n).map(|_| Vec::new()).collect();
    for (listener, &addr) in local_addrs.iter().enumerate() {
        if !srv.http3_served(listener) {
            continue;
        }
        let group = crate::udp_group::bind_udp_group(addr, n)
            .map_err(|cause| StartError::Bind { addr, cause })?;
        if !group.steered && n > 1 {
            tracing::warn!(%addr, "QUIC packets are not steered by connection ID here (no SO_ATTACH_REUSEPORT_CBPF); a packet that reaches the wrong worker is handed to its owner");
        }
        let steered = group.steered;
        let handoff = crate::udp::Handoff::new(n);
        for (worker, sock) in group.sockets.into_iter().enumerate() {
            let at = UdpAt {
                listener,
                worker,
                workers: n,
                steered,
                handoff: handoff.clone(),
            };
            udp[worker].push((sock, at));
        }
    }
    Ok(udp)
}

impl Bound {
    /// Adds a bound, listening unix socket that every worker accepts on,
    /// its listener index after the TCP ones' (in the order added). A unix
    /// socket has no `SO_REUSEPORT` spreading: the workers share the one
    /// socket, each holding its own descriptor of it.
    pub fn add_unix(&mut self, l: &std::os::unix::net::UnixListener) -> io::Result<()> {
        for w in &mut self.per_worker {
            // Carried as a TcpListener; `TcpListener::from_std` knows it
            // by its address family.
            let fd: std::os::fd::OwnedFd = l.try_clone()?.into();
            w.push(std::net::TcpListener::from(fd));
        }
        Ok(())
    }

    /// The backend the workers will run.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The listeners' addresses, ports resolved.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Starts the workers and waits until each is accepting.
    pub fn spawn<H: 'static, D: Driver<H>>(
        self,
        factory: Factory<H>,
        driver: D,
    ) -> Result<Server<H>, StartError> {
        let Bound {
            backend,
            n,
            pins,
            per_worker,
            mut extra,
            local_addrs,
            udp,
            srv,
            ring_entries,
            coalesce_wait,
        } = self;
        extra.resize_with(n, Vec::new);
        let per_worker = per_worker
            .into_iter()
            .zip(extra)
            .map(|(own, more)| own.into_iter().enumerate().chain(more).collect())
            .collect();
        spawn(
            backend,
            n,
            pins,
            per_worker,
            udp,
            local_addrs,
            &srv,
            ring_entries,
            coalesce_wait,
            factory,
            driver,
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn spawn<H: 'static, D: Driver<H>>(
    backend: Backend,
    n: usize,
    pins: Vec<Option<usize>>,
    per_worker: Vec<Vec<(usize, std::net::TcpListener)>>,
    udp: Vec<Vec<(std::net::UdpSocket, UdpAt)>>,
    local_addrs: Vec<SocketAddr>,
    srv: &ServerConfig,
    ring_entries: u32,
    coalesce_wait: Duration,
    factory: Factory<H>,
    driver: D,
) -> Result<Server<H>, StartError> {
    let (shutdown, signals) = shutdown::pair(n)?;
    let (reloader, inboxes) = reload::channels::<H>(n)?;
    let conn_cfg = srv.conn_config();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), StartError>>();
    let mut threads = Vec::with_capacity(n);
    for (index, ((((listeners, udp), signal), inbox), cpu)) in per_worker
        .into_iter()
        .zip(udp)
        .zip(signals)
        .zip(inboxes)
        .zip(pins)
        .enumerate()
    {
        let ctx = WorkerContext {
            index,
            workers: n,
            cpu,
            backend,
            stats: Arc::new(WorkerStats::default()),
        };
        let factory = factory.clone();
        let conn_cfg = conn_cfg.clone();
        let ready_tx = ready_tx.clone();
        let grace = srv.timeouts.shutdown_grace;
        let t = std::thread::Builder::new()
            .name(format!("ringside-w{index}"))
            .spawn(move || {
                if let Some(cpu) = ctx.cpu {
                    core_affinity::set_for_current(core_affinity::CoreId { id: cpu });
                }
                backend::set_current(ctx.backend);
                crate::stats::set_current(ctx.stats.clone());
                crate::coalesce::configure(coalesce_wait);
                let ready = ready_tx.clone();
                let fut = worker_main(
                    ctx.clone(),
                    listeners,
                    udp,
                    signal,
                    inbox,
                    factory,
                    conn_cfg,
                    grace,
                    ready_tx,
                    driver,
                );
                if let Err(cause) = run_engine(ctx.backend, ring_entries, fut) {
                    let _ = ready.send(Err(StartError::Worker {
                        index: ctx.index,
                        backend: ctx.backend,
                        cause,
                    }));
                }
            })?;
        threads.push(t);
    }
    drop(ready_tx);
    let server = Server {
        threads,
        shutdown,
        reloader,
        local_addrs,
        backend,
        workers: n,
    };
    for _ in 0..n {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                server.shutdown();
                server.join();
                return Err(e);
            }
            Err(_) => {
                server.shutdown();
                server.join();
                return Err(StartError::Io(io::Error::other(
                    "a worker exited while starting",
                )));
            }
        }
    }
    Ok(server)
}

#[allow(clippy::too_many_arguments)]
async fn worker_main<H: 'static, D: Driver<H>>(
    ctx: WorkerContext,
    listeners: Vec<(usize, std::net::TcpListener)>,
    udp: Vec<(std::net::UdpSocket, UdpAt)>,
    signal: ShutdownSignal,
    inbox: ReloadInbox<H>,
    factory: Factory<H>,
    conn_cfg: ConnConfig,
    grace: Duration,
    ready: mpsc::Sender<Result<(), StartError>>,
    driver: D,
) {
    let mut owned = Vec::with_capacity(listeners.len());
    for (i, l) in listeners {
        match TcpListener::from_std(l) {
            Ok(l) => owned.push((i, l)),
            Err(cause) => {
                let _ = ready.send(Err(StartError::Worker {
                    index: ctx.index,
                    backend: ctx.backend,
                    cause,
                }));
                return;
            }
        }
    }
    let handler = match factory(&ctx, None) {
        Ok(h) => h,
        Err(e) => {
            let _ = ready.send(Err(StartError::Worker {
                index: ctx.index,
                backend: ctx.backend,
                cause: io::Error::other(e),
            }));
            return;
        }
    };
    drop(factory);
    let current = Rc::new(Current::new(handler, conn_cfg));
    let stop = Rc::new(LocalEvent::default());
    for (i, l) in owned {
        task::spawn(accept_loop(
            l,
            i,
            current.clone(),
            stop.clone(),
            ctx.index,
            driver,
        ));
    }
    for (sock, at) in udp {
        task::spawn(driver.serve_udp(sock, at, current.clone()));
    }
    task::spawn(conns::sweeper());
    task::spawn(inbox.serve(ctx.clone(), current.clone()));
    let _ = ready.send(Ok(()));
    drop(ready);
    tracing::debug!(worker = ctx.index, cpu = ?ctx.cpu, backend = %ctx.backend, "worker accepting");

    signal.wait().await;
    shutdown::start_draining();
    stop.set();
    let linger_end = Instant::now() + inherit::idle_linger(current.conn().timeouts.keepalive_idle);
    if !shutdown::handing_over() {
        conns::close(true);
    }
    let deadline = Instant::now() + grace;
    // Off the request path: a coarse poll of this core's connection count
    // is enough, and keeps the per-request path free of wakeup bookkeeping.
    // An accept loop still ending may hand one more connection in.
    while (conns::open() > 0 || Rc::strong_count(&stop) > 1) && Instant::now() < deadline {
        task::sleep(Duration::from_millis(5)).await;
        // Connections that finished a request meanwhile went idle.
        if !shutdown::handing_over() || Instant::now() >= linger_end {
            conns::close(true);
        }
    }
    if conns::open() > 0 {
        tracing::warn!(
            worker = ctx.index,
            open = conns::open(),
            busy = shutdown::busy(),
            "grace period over; closing busy connections"
        );
        conns::close(false);
        let hard = Instant::now() + Duration::from_secs(1);
        while conns::open() > 0 && Instant::now() < hard {
            task::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// How long accepting pauses after a failure such as EMFILE.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// At most one warning about failed accepts this often.
const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(5);

async fn accept_loop<H: 'static, D: Driver<H>>(
    l: TcpListener,
    index: usize,
    current: Rc<Current<H>>,
    stop: Rc<LocalEvent>,
    worker: usize,
    driver: D,
) {
    let mut failures: u64 = 0;
    let mut last_warned: Option<Instant> = None;
    let mut last_capped: Option<Instant> = None;
    loop {
        let max = current.conn().max_connections;
        if crate::capacity::clients() >= max {
            crate::stats::conn_limit_reached();
            let now = Instant::now();
            if last_capped.is_none_or(|t| now.duration_since(t) >= ACCEPT_WARN_EVERY) {
                tracing::warn!(
                    worker,
                    max_connections = max,
                    "connection limit reached; not accepting until a connection closes"
                );
                last_capped = Some(now);
            }
            if let task::Either::Left(()) =
                task::select(stop.wait(), crate::capacity::below(max)).await
            {
                return;
            }
        }
        let Some(accepted) = l.accept_until(&stop).await else {
            return;
        };
        let stopped = stop.is_set();
        match accepted {
            Ok(stream) => {
                // Settings read per connection: a reload's new
                // certificates apply to the next handshake.
                if let Some(link) = Link::accepted(stream, current.conn(), index) {
                    task::spawn_with(|| driver.serve(link, current.clone()))
                }
                if stopped {
                    return;
                }
            }
            Err(e) => {
                // EMFILE and the like: the connection stays queued, and
                // accepting again at once would fail again, so wait (as
                // nginx disables accept for a while), and say so once per
                // burst rather than once per try.
                failures += 1;
                let now = Instant::now();
                if last_warned.is_none_or(|t| now.duration_since(t) >= ACCEPT_WARN_EVERY) {
                    tracing::warn!(error = %e, failures, "accept failed; pausing accepts");
                    last_warned = Some(now);
                    failures = 0;
                }
                task::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// Builds an engine of `backend` on this thread and runs `fut` on it to
/// completion, as a worker runs its own (the runtime's API works inside,
/// [`crate::task::spawn`] and [`crate::fs`] included): for tests and tools
/// that need a core without a server. The thread must not run an engine
/// already.
pub fn run_local<T, Fut: std::future::Future<Output = T>>(
    backend: Backend,
    fut: Fut,
) -> io::Result<T> {
    if !backend.is_built() {
        return Err(io::Error::other(format!(
            "backend {backend} is not built in"
        )));
    }
    backend::set_current(backend);
    let out = std::cell::Cell::new(None);
    let run = async {
        out.set(Some(fut.await));
    };
    run_engine(
        backend,
        crate::config::RuntimeConfig::default().ring_entries,
        run,
    )?;
    out.into_inner()
        .ok_or_else(|| io::Error::other("the engine stopped before the future completed"))
}

/// Builds this thread's engine and runs `fut` on it to completion.
fn run_engine<Fut: std::future::Future<Output = ()>>(
    backend: Backend,
    #[cfg_attr(not(feature = "io-uring"), allow(unused_variables))] ring_entries: u32,
    fut: Fut,
) -> io::Result<()> {
    match backend {
        #[cfg(feature = "io-uring")]
        Backend::IoUring => {
            let setup = std::env::var("RINGSIDE_URING_SETUP").unwrap_or_default();
            let build = |setup: &str| {
                let mut urb = io_uring::IoUring::builder();
                match setup {
                    "none" => {}
                    "coop" => {
                        urb.setup_coop_taskrun();
                    }
                    // Default. Completions wait for this thread's next
                    // io_uring_enter instead of interrupting it; measured
                    // against COOP_TASKRUN (26 B files, 5 rounds): 4.84 vs
                    // 5.09 us of server CPU per request, the default ring
                    // 6.98.
                    _ => {
                        urb.setup_single_issuer().setup_defer_taskrun();
                    }
                }
                monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                    .with_entries(ring_entries)
                    .uring_builder(urb)
                    .enable_timer()
                    .build()
            };
            let mut rt = match build(&setup) {
                // Kernels before 6.1 lack DEFER_TASKRUN.
                Err(e) if setup.is_empty() && e.raw_os_error() == Some(libc::EINVAL) => {
                    tracing::debug!("io_uring DEFER_TASKRUN unavailable; using COOP_TASKRUN");
                    build("coop")?
                }
                r => r?,
            };
            rt.block_on(async {
                crate::recv_multi::start();
                fut.await
            });
            Ok(())
        }
        #[cfg(any(feature = "epoll", feature = "kqueue", feature = "devpoll"))]
        Backend::Epoll | Backend::Kqueue | Backend::Devpoll => {
            let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build()?;
            rt.block_on(fut);
            Ok(())
        }
        #[cfg(rt_glommio)]
        Backend::Glommio => {
            let ex = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
                .make()
                .map_err(|e| io::Error::other(e.to_string()))?;
            ex.run(fut);
            Ok(())
        }
        #[allow(unreachable_patterns)]
        other => Err(io::Error::other(format!("backend {other} is not built in"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(workers: Workers, affinity: Affinity) -> RuntimeConfig {
        RuntimeConfig {
            workers,
            affinity,
            ..RuntimeConfig::default()
        }
    }

    fn cpus(quota: u64) -> Option<Quota> {
        Some(Quota {
            quota: quota * 100_000,
            period: 100_000,
        })
    }

    const ALL: [usize; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

    #[test]
    fn no_quota_one_pinned_worker_per_cpu() {
        let Placement { n, pins, why } =
            place(&rt(Workers::Auto, Affinity::Auto), &ALL, 16, None).unwrap();
        assert_eq!(n, 8);
        assert_eq!(pins, ALL.map(Some).to_vec());
        assert_eq!(why, None);
    }

    #[test]
    fn the_whole_machine_is_shared_so_auto_does_not_pin_but_true_does() {
        let Placement { n, pins, why } =
            place(&rt(Workers::Auto, Affinity::Auto), &ALL, 8, None).unwrap();
        assert_eq!((n, pins), (8, vec![None; 8]));
        assert!(why.unwrap().contains("all 8 CPUs of the machine"));
        let Placement { pins, why, .. } =
            place(&rt(Workers::Auto, Affinity::On), &ALL, 8, None).unwrap();
        assert_eq!((pins, why), (ALL.map(Some).to_vec(), None));
        // One CPU handed over (taskset -c 3) of 8: pinned there.
        let Placement { n, pins, why } =
            place(&rt(Workers::Count(1), Affinity::Auto), &[3], 8, None).unwrap();
        assert_eq!((n, pins, why), (1, vec![Some(3)], None));
    }

    #[test]
    fn quota_below_the_cpuset_caps_auto_and_unpins() {
        // A 4-CPU limit on an 8-CPU node without the static CPU manager.
        let Placement { n, pins, why } =
            place(&rt(Workers::Auto, Affinity::Auto), &ALL, 16, cpus(4)).unwrap();
        assert_eq!(n, 4);
        assert_eq!(pins, vec![None; 4]);
        let why = why.unwrap();
        assert!(
            why.contains("400000/100000 us = 4 CPU (rounded up), below the 8 CPUs"),
            "{why}"
        );
        assert!(why.contains("workers 4, not pinned"), "{why}");
        // 1.5 CPUs: two workers.
        let half = Some(Quota {
            quota: 150_000,
            period: 100_000,
        });
        let Placement { n, .. } =
            place(&rt(Workers::Auto, Affinity::Auto), &ALL, 16, half).unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn quota_equal_to_the_cpuset_pins() {
        // The static CPU manager: 4 exclusive CPUs and a 4-CPU quota.
        let set = [2, 3, 6, 7];
        let Placement { n, pins, why } =
            place(&rt(Workers::Auto, Affinity::Auto), &set, 16, cpus(4)).unwrap();
        assert_eq!(n, 4);
        assert_eq!(pins, set.map(Some).to_vec());
        assert_eq!(why, None);
        // A quota above the set changes nothing either.
        let Placement { n, why, .. } =
            place(&rt(Workers::Auto, Affinity::Auto), &set, 16, cpus(16)).unwrap();
        assert_eq!((n, why), (4, None));
    }

    #[test]
    fn explicit_settings_under_a_quota() {
        // A count is kept; pinning is still dropped, as the CPUs are shared.
        let Placement { n, pins, why } =
            place(&rt(Workers::Count(6), Affinity::Auto), &ALL, 16, cpus(2)).unwrap();
        assert_eq!((n, pins), (6, vec![None; 6]));
        assert!(!why.as_deref().unwrap().contains("workers"));
        // An explicit CPU list is the operator's choice.
        let list = Affinity::Cpus(vec![1, 3]);
        let Placement { n, pins, why } =
            place(&rt(Workers::Auto, list), &ALL, 16, cpus(2)).unwrap();
        assert_eq!((n, pins), (2, vec![Some(1), Some(3)]));
        assert!(why.as_deref().unwrap().contains("workers 2"));
        // Pinning off: only the count changes.
        let Placement { n, pins, why } =
            place(&rt(Workers::Auto, Affinity::Off), &ALL, 16, cpus(3)).unwrap();
        assert_eq!((n, pins), (3, vec![None; 3]));
        assert!(!why.unwrap().contains("pinned"));
        let Placement { why, .. } =
            place(&rt(Workers::Count(2), Affinity::Off), &ALL, 16, cpus(3)).unwrap();
        assert_eq!(why, None);
    }
}
