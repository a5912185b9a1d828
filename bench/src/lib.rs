//! ringside-bench: an ApacheBench-compatible HTTP/1.1 and HTTP/2 load
//! generator, over TCP or TLS, thread-per-core on io_uring, with wrk2's
//! open-loop rate mode.
//!
//! How a run goes:
//! 1. [`args`] reads ab's flags (and ours) into a checked [`args::Config`];
//!    [`urls`] resolves the URL(s) once and [`request`] builds each
//!    request's bytes once.
//! 2. [`worker`] starts one pinned runtime per core (`--cores`), each with
//!    its share of the connections, requests and rate; [`rate`] hands out
//!    the requests (and, with `-R`, when each is due); [`conn`] runs each
//!    HTTP/1.1 connection, parsing responses with [`response`], and
//!    [`h2conn`] each HTTP/2 one, its streams in flight; both count into
//!    per-core [`stats`] and [`hist`] series. For `https://`, [`tls`]
//!    drives rustls on the same runtime, one session cache per core.
//! 3. The main thread draws [`progress`] on stderr, merges the cores'
//!    figures at the end, and prints ab's report ([`report_ab`]), siege's
//!    ([`report_siege`]) or JSON ([`json`]).

pub mod args;
pub mod conn;
pub mod cores;
pub mod der;
pub mod h2conn;
pub mod hist;
/// HPACK: the server's own (`http/src/h2/hpack`), compiled here from the
/// same source rather than through `ringside-http`, which would bring the
/// server's engine and compression crates into the load generator.
#[allow(dead_code, unused_imports)]
#[path = "../../http/src/h2/hpack/mod.rs"]
pub(crate) mod hpack;
pub mod json;
pub mod progress;
pub mod rate;
pub mod report_ab;
pub mod report_siege;
pub mod request;
pub mod response;
pub mod shootout;
pub mod stats;
pub mod tls;
pub mod url;
pub mod urls;
pub mod worker;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use args::{ArgError, Config, ReportKind};
use cores::{Shared, UNSET};
use progress::Progress;
use urls::Target;
use worker::RunResult;

/// A finished run, as the reports see it.
pub struct Finished<'a> {
    pub cfg: &'a Config,
    pub targets: &'a [Target],
    pub shared: &'a Shared,
    pub result: &'a RunResult,
}

impl Finished<'_> {
    /// The Server header of the first response ("" if none came).
    pub fn server(&self) -> &str {
        self.shared.server.get().map_or("", String::as_str)
    }

    /// The first response's body length for the first URL.
    pub fn doc_len(&self) -> Option<u64> {
        let v = self.shared.doc_len[0].load(Ordering::Relaxed);
        (v != UNSET).then_some(v)
    }
}

/// Runs the command line `args` (program name first); returns the exit
/// status: 0, or 1 when the arguments are wrong, the run cannot start, or
/// no request got a response.
pub fn main_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).is_some_and(|a| a == "shootout") {
        let rest: Vec<String> = args[2..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return shootout::main(&rest);
    }
    let cfg = match args::parse(args) {
        Ok(c) => c,
        Err(ArgError::Clap(e)) => {
            let _ = e.print();
            return if e.use_stderr() { 1 } else { 0 };
        }
        Err(ArgError::Invalid(m)) => {
            eprintln!("ringside-bench: {m}");
            return 1;
        }
    };
    let targets = match urls::load(&cfg) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ringside-bench: {e}");
            return 1;
        }
    };
    let cores = cfg.cores.min(cfg.concurrency);
    let cfg = Arc::new(cfg);
    let targets = Arc::new(targets);
    let shared = Arc::new(Shared::new(targets.len(), cores));
    let mut progress = Progress::new(&cfg);
    match cfg.report {
        ReportKind::Ab => {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", report_ab::banner(&targets[0].url.host, progress.shows()));
            let _ = out.flush();
        }
        ReportKind::Siege => eprintln!(
            "** ringside-bench {}\n** Preparing {} concurrent users for battle.\nThe server is now under siege...",
            env!("CARGO_PKG_VERSION"),
            cfg.concurrency
        ),
        ReportKind::Json => {}
    }
    if cfg.verbosity >= 4 {
        for t in targets.iter() {
            eprintln!(
                "INFO: {} header == \n---\n{}\n---",
                t.url.path,
                String::from_utf8_lossy(&t.request)
            );
        }
    }
    let result = worker::run(
        cfg.clone(),
        targets.clone(),
        shared.clone(),
        &mut |done, elapsed| progress.tick(done, elapsed),
    );
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ringside-bench: {e}");
            return 1;
        }
    };
    progress.finish(shared.done());
    if let Some(e) = shared.tls_error.get() {
        eprintln!("ringside-bench: {e}");
    }
    let f = Finished {
        cfg: &cfg,
        targets: &targets,
        shared: &shared,
        result: &result,
    };
    let report = match cfg.report {
        ReportKind::Ab => {
            let mut r = String::new();
            if !progress.shows() {
                r.push_str("..done\n");
            }
            r.push_str(&report_ab::render(&f));
            r
        }
        ReportKind::Siege => {
            eprintln!("\nLifting the server siege...");
            report_siege::render(&f)
        }
        ReportKind::Json => json::render(&f),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(report.as_bytes());
    let _ = out.flush();
    if let Some(path) = &cfg.csv {
        if let Err(e) = std::fs::write(path, report_ab::csv(&result.stats.latency)) {
            eprintln!("ringside-bench: -e: cannot write {}: {e}", path.display());
            return 1;
        }
    }
    if result.stats.counts.complete == 0 {
        1
    } else {
        0
    }
}
