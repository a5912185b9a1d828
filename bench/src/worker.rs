//! Thread-per-core: one pinned single-threaded runtime per core, each with
//! its share of the connections, of the requests and of the rate, and its
//! own counters; nothing is shared on the request path but two read-mostly
//! words (the first response's length per URL, for Length failures) and a
//! per-core progress counter on its own cache line.
//!
//! # Why monoio directly
//! The server's `ringside-runtime` runs an engine only inside its own
//! `worker::start`, which is built around listeners and a handler; its
//! `net` API refuses to run on a thread it did not set up. A load generator
//! needs the engine without a server, so this crate builds monoio's
//! runtimes itself, the same way the server does: io_uring with
//! `SINGLE_ISSUER | DEFER_TASKRUN` (COOP_TASKRUN on kernels before 6.1), and
//! monoio's legacy driver (epoll) when the kernel refuses io_uring (Docker's
//! default seccomp profile, `kernel.io_uring_disabled`) or when asked for.
//!
//! # Start and end
//! Every core builds its runtime and reports ready; then the main thread
//! reads the clock once and hands that start time to all of them, so the
//! cores share one schedule and one deadline. The run ends when the last
//! core's last connection has no request left; the time taken runs to the
//! end of the last response.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::args::{Backend, Config, H2};
use crate::cores::{Core, Shared};
use crate::rate::{split, Tickets};
use crate::stats::Stats;
use crate::urls::Target;

/// What a run measured.
pub struct RunResult {
    pub stats: Stats,
    pub start: Instant,
    /// From the start to the end of the last response (or of the run, if
    /// none completed).
    pub elapsed: Duration,
    /// This process's CPU time (user, system) over the run.
    pub cpu_user: Duration,
    pub cpu_sys: Duration,
    pub backend: &'static str,
    pub cores: usize,
}

/// The CPU time this process has used: (user, system).
pub fn cpu_times() -> (Duration, Duration) {
    // SAFETY: getrusage writes only into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

enum Msg {
    Ready(Result<&'static str, String>),
    Done,
}

/// Runs the benchmark; `tick` is called about every 100 ms from this
/// thread with the requests finished so far and the time since the start.
/// The CPUs this process may run on, in order (empty if unknown).
pub fn allowed_cpus() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    ids
}

pub fn run(
    cfg: Arc<Config>,
    targets: Arc<Vec<Target>>,
    shared: Arc<Shared>,
    tick: &mut dyn FnMut(u64, Duration),
) -> Result<RunResult, String> {
    let cores = cfg.cores.min(cfg.concurrency).min(shared.progress.len());
    let cpus: Vec<usize> = if cfg.pin { allowed_cpus() } else { Vec::new() };
    let max_request = targets.iter().map(|t| t.request.len()).max().unwrap_or(0);
    let tls_opts = crate::tls::TlsOptions {
        insecure: cfg.insecure,
        cacert: cfg.cacert.clone(),
        alpn: match cfg.h2 {
            Some(H2::Tls) => vec![b"h2".to_vec()],
            _ if cfg.h3 => vec![b"h3".to_vec()],
            _ => Vec::new(),
        },
        // QUIC is TLS 1.3 only (args refuses any other -f with --h3).
        protocol: if cfg.h3 {
            Some("TLS1.3".into())
        } else {
            cfg.tls_protocol.clone()
        },
        ciphers: cfg.tls_ciphers.clone(),
        group: cfg.tls_group.clone(),
        no_resume: cfg.tls_no_resume,
    };
    // Checked here, once, so a bad --cacert stops the run before it starts.
    let roots = if targets.iter().any(|t| t.url.tls) {
        crate::tls::check(&tls_opts)?;
        let roots = crate::tls::roots(&tls_opts)?;
        if cfg.h3 {
            crate::h3::check(crate::tls::client_config(&tls_opts, &roots))?;
        }
        Some(roots)
    } else {
        None
    };
    let (tx, rx) = mpsc::channel::<(usize, Msg)>();
    let mut starts = Vec::with_capacity(cores);
    let mut threads = Vec::with_capacity(cores);
    for i in 0..cores {
        let (start_tx, start_rx) = mpsc::channel::<Instant>();
        starts.push(start_tx);
        let conns = split(cfg.concurrency as u64, cores, i) as usize;
        let requests = cfg.requests.map(|n| split(n, cores, i));
        let rate = cfg.rate.map(|r| r * conns as f64 / cfg.concurrency as f64);
        let phase = i as f64 / cores as f64;
        let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
        let (cfg, targets, shared, tx) = (cfg.clone(), targets.clone(), shared.clone(), tx.clone());
        let (tls_opts, roots) = (tls_opts.clone(), roots.clone());
        let t = std::thread::Builder::new()
            .name(format!("bench-core{i}"))
            .spawn(move || -> Stats {
                if let Some(id) = cpu {
                    core_affinity::set_for_current(core_affinity::CoreId { id });
                }
                let backend = cfg.backend;
                let ready = |name| {
                    let _ = tx.send((i, Msg::Ready(Ok(name))));
                    start_rx.recv().ok()
                };
                let h3 = cfg.h3;
                let make = move |start: Instant| {
                    // One client config per core: its session cache is this core's.
                    let tls = roots.map(|r| crate::tls::client_config(&tls_opts, &r));
                    Rc::new(Core {
                        tls,
                        index: i,
                        tickets: Tickets::new(requests, start, cfg.duration, rate, phase),
                        cfg,
                        targets,
                        shared,
                        stats: RefCell::new(Stats::default()),
                        max_request,
                    })
                };
                let out = if h3 {
                    // HTTP/3 runs its own poll(2) loop (see crate::h3conn).
                    Ok(ready("poll").map_or_else(Stats::default, |start| {
                        crate::h3conn::run(make(start), conns)
                    }))
                } else {
                    run_engine(backend, ready, move |start| core_main(make(start), conns))
                };
                match out {
                    Ok(stats) => {
                        let _ = tx.send((i, Msg::Done));
                        stats
                    }
                    Err(e) => {
                        let _ = tx.send((i, Msg::Ready(Err(e.to_string()))));
                        Stats::default()
                    }
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        threads.push(t);
    }
    drop(tx);
    let mut backend = "";
    let mut failed = None;
    for _ in 0..cores {
        match rx.recv() {
            Ok((_, Msg::Ready(Ok(name)))) => backend = name,
            Ok((i, Msg::Ready(Err(e)))) => failed = Some(format!("core {i}: {e}")),
            Ok((_, Msg::Done)) | Err(_) => failed = Some("a core exited while starting".into()),
        }
    }
    if let Some(e) = failed {
        drop(starts); // the others see the closed channel and stop
        for t in threads {
            let _ = t.join();
        }
        return Err(e);
    }
    let (u0, s0) = cpu_times();
    let start = Instant::now();
    for s in &starts {
        let _ = s.send(start);
    }
    let mut running = cores;
    while running > 0 {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((_, Msg::Done)) => running -= 1,
            Ok((i, Msg::Ready(Err(e)))) => return Err(format!("core {i}: {e}")),
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        tick(shared.done(), start.elapsed());
    }
    let end = Instant::now();
    let (u1, s1) = cpu_times();
    let mut stats = Stats::default();
    for t in threads {
        let s = t.join().map_err(|_| "a core panicked".to_string())?;
        stats.merge(&s);
    }
    let elapsed = stats
        .last_done
        .unwrap_or(end)
        .saturating_duration_since(start);
    Ok(RunResult {
        stats,
        start,
        elapsed,
        cpu_user: u1.saturating_sub(u0),
        cpu_sys: s1.saturating_sub(s0),
        backend,
        cores,
    })
}

async fn core_main(core: Rc<Core>, conns: usize) -> Stats {
    batch_waits(&core.cfg, conns);
    let handles: Vec<_> = (0..conns)
        .map(|_| {
            if core.cfg.h2.is_some() {
                monoio::spawn(crate::h2conn::run(core.clone()))
            } else {
                monoio::spawn(crate::conn::run(core.clone()))
            }
        })
        .collect();
    for h in handles {
        h.await;
    }
    core.stats.take()
}

/// Closed loop on io_uring: park until half of this core's connections have
/// news, or `--batch-wait` has passed (the monoio patch's coalesced wait).
///
/// A core that wakes for each response makes the server pay a remote
/// wake-up per response too: measured against a 1-worker nginx over h2
/// (TLS, 100 connections, 10 streams), nginx spent 15.8 us a request under
/// this client waking per event and 13.4 under h2load, which is busy and
/// rarely asleep; with the wait 13.4 here too, and this client's own CPU
/// fell from 11.3 to 6.5 us a request (h2load: 12.7). A response noticed
/// later counts that time in its latency, at most the wait; so rate mode,
/// whose latencies are the point, and cores with few connections never
/// wait.
fn batch_waits(cfg: &crate::args::Config, conns: usize) {
    let us = cfg.batch_wait.as_micros().min(u32::MAX as u128) as u32;
    if cfg.rate.is_none() && us > 0 && conns >= 4 {
        monoio::coalesce::set_wait((conns / 2) as u32, us);
    }
}

/// Builds this thread's engine, reports it ready (`ready` returns the start
/// time, or None to give up), and runs `main` on it.
fn run_engine<R, M, F>(backend: Backend, ready: R, main: M) -> io::Result<Stats>
where
    R: FnOnce(&'static str) -> Option<Instant>,
    M: FnOnce(Instant) -> F,
    F: std::future::Future<Output = Stats>,
{
    if backend != Backend::Epoll {
        match build_uring() {
            Ok(mut rt) => {
                let Some(start) = ready("io-uring") else {
                    return Ok(Stats::default());
                };
                return Ok(rt.block_on(main(start)));
            }
            Err(e) if backend == Backend::IoUring => {
                return Err(io::Error::new(e.kind(), format!("io_uring refused: {e}")))
            }
            Err(_) => {} // auto: fall back to epoll
        }
    }
    let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()?;
    let Some(start) = ready("epoll") else {
        return Ok(Stats::default());
    };
    Ok(rt.block_on(main(start)))
}

fn build_uring() -> io::Result<monoio::Runtime<monoio::time::TimeDriver<monoio::IoUringDriver>>> {
    let build = |defer: bool| {
        let mut urb = io_uring::IoUring::builder();
        if defer {
            urb.setup_single_issuer().setup_defer_taskrun();
        } else {
            urb.setup_coop_taskrun();
        }
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .with_entries(1024)
            .uring_builder(urb)
            .enable_timer()
            .build()
    };
    match build(true) {
        // Kernels before 6.1 lack DEFER_TASKRUN.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => build(false),
        r => r,
    }
}
