//! ringside-bench: an ApacheBench- and siege-compatible HTTP/1.x and HTTP/2
//! load generator, over TCP or TLS, thread-per-core on io_uring, with
//! wrk2's open-loop rate mode.
//!
//! How a run goes:
//! 1. [`args`] reads ab's flags (and ours) into a checked [`args::Config`];
//!    [`urls`] resolves the URL(s) once and [`request`] builds each
//!    request's bytes once: ab's request, or siege's with `--siege`.
//! 2. [`worker`] starts one pinned runtime per core (`--cores`), each with
//!    its share of the connections, requests and rate; [`rate`] hands out
//!    the requests (and, with `-R`, when each is due); [`conn`] runs each
//!    HTTP/1.x connection ([`sock`] when ab's `-B` or `-b` need a socket
//!    set up before connect), parsing responses with [`response`], and
//!    [`h2conn`] each HTTP/2 one, its streams in flight ([`h3conn`] all of
//!    a core's HTTP/3 ones, in one loop of its own); all count into
//!    per-core [`stats`] and [`hist`] series. For `https://`, [`tls`]
//!    drives rustls on the same runtime, one session cache per core. Under
//!    `--siege`, [`assets`] finds each page's images, scripts and
//!    stylesheets, and the connection fetches them after the page, as
//!    siege does.
//! 3. The main thread draws [`progress`] on stderr, merges the cores'
//!    figures at the end, and prints ab's report ([`report_ab`], or
//!    [`report_html`] for `-w`), siege's ([`report_siege`]) or JSON
//!    ([`json`]). When no connection could be made at all, ab's report gives
//!    way to ab's message and exit status (the errno: 111, refused).

pub mod args;
pub mod assets;
pub mod conn;
pub mod cores;
pub mod der;
pub mod h2conn;
pub mod h3;
pub mod h3conn;
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
pub mod report_html;
pub mod report_siege;
pub mod request;
pub mod response;
pub mod shootout;
pub mod sock;
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
/// status: 0; with ab's report, ab's (the errno, 111 for a refused
/// connection) when no connection could be made at all; else 1 when the
/// arguments are wrong, the run cannot start, or no request got a response.
pub fn main_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).is_some_and(|a| a == "help") && args.get(2).is_some_and(|a| a == "shootout") {
        println!("{}", shootout::USAGE);
        return 0;
    }
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
            let banner = if cfg.html.is_some() {
                report_html::banner()
            } else {
                report_ab::banner(&targets[0].url.host, progress.shows())
            };
            let _ = write!(out, "{banner}");
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
    let c = &result.stats.counts;
    if cfg.report == ReportKind::Ab && c.connections == 0 && c.failed_connect > 0 {
        // ab gives up with the socket error as its exit status when it
        // cannot connect at all, and prints no report.
        return match result.stats.connect_errno {
            Some(errno) => {
                let e = std::io::Error::from_raw_os_error(errno);
                let msg = e.to_string();
                let msg = msg.split(" (os error").next().unwrap_or(&msg);
                eprintln!("apr_socket_recv: {msg} ({errno})");
                errno
            }
            None => {
                eprintln!("apr_socket_connect(): no connection could be made");
                1
            }
        };
    }
    if let Some(target) = cfg.rate {
        let secs = result.elapsed.as_secs_f64();
        if secs > 0.0 {
            let achieved = c.complete as f64 / secs;
            if let Some(w) = report_ab::rate_warning(target, achieved) {
                eprintln!("ringside-bench: {w}");
            }
        }
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
            if cfg.html.is_some() {
                r.push_str(&report_html::render(&f));
            } else {
                r.push_str(&report_ab::render(&f));
            }
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
    if let Some(path) = &cfg.gnuplot {
        if let Err(e) = std::fs::write(path, report_ab::gnuplot(&result.stats.samples)) {
            eprintln!("ringside-bench: -g: cannot write {}: {e}", path.display());
            return 1;
        }
    }
    if result.stats.counts.complete == 0 {
        1
    } else {
        0
    }
}
