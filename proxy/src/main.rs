//! `ringside`: the edge server binary. With no arguments it serves the current
//! directory on 127.0.0.1:8080.

mod cli;
mod config;
mod edge;
mod fastcgi;
mod router;
mod signals;
mod upstream;

use std::process::ExitCode;

use clap::Parser;
use ringside_runtime::worker;
use ringside_static::StaticFiles;

use crate::cli::{Cli, Command};
use crate::config::Config;
use crate::edge::Edge;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a log
        // file or journald.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    if let Some(Command::Check { file }) = &cli.command {
        return match Config::load(file) {
            Ok(cfg) => {
                print!("{}", cfg.to_toml());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ringside: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let cfg = match cli::effective_config(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ringside: {e}");
            return ExitCode::from(2);
        }
    };
    run(cfg)
}

fn run(cfg: Config) -> ExitCode {
    // Workers inherit this mask, so only the main thread ever takes the
    // signals, and it alone starts the drain.
    let signals = match signals::block_term_signals() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ringside: cannot set up signal handling: {e}");
            return ExitCode::FAILURE;
        }
    };
    raise_fd_limit();
    if let Err(e) = StaticFiles::from_config(&cfg.statics) {
        eprintln!("ringside: cannot open root {}: {e}", cfg.root.display());
        return ExitCode::FAILURE;
    }
    let shared = match upstream::shared::start(&cfg.proxy.upstreams) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ringside: {e}");
            return ExitCode::FAILURE;
        }
    };
    let statics = cfg.statics.clone();
    let proxy = cfg.proxy.clone();
    let server = match worker::start(&cfg.runtime, &cfg.server, move |ctx| {
        // Each worker opens its own roots and builds its own cache and pools.
        let files = StaticFiles::from_config(&statics)
            .unwrap_or_else(|e| panic!("static roots vanished: {e}"));
        let prefixes = statics.routes.iter().map(|r| r.prefix.clone()).collect();
        Edge::new(files, prefixes, &proxy, &shared, ctx.index, ctx.workers)
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ringside: {e}");
            return ExitCode::FAILURE;
        }
    };
    let what = serving_what(&cfg);
    for addr in &server.local_addrs {
        println!(
            "ringside: serving {what} on http://{addr}/ (workers: {}, backend: {})",
            server.workers, server.backend
        );
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let sig = signals.wait();
    tracing::info!(signal = sig, "draining");
    server.shutdown();
    // A second signal during the drain ends the process at once.
    std::thread::spawn(move || {
        let sig = signals.wait();
        tracing::warn!(signal = sig, "second signal: exiting without waiting");
        std::process::exit(1);
    });
    server.join();
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// What the banner says is served: the root, or where `/` is proxied.
fn serving_what(cfg: &Config) -> String {
    let root_proxy = cfg
        .proxy
        .routes
        .iter()
        .find(|r| r.hosts.is_empty() && r.prefix == "/");
    match root_proxy {
        Some(r) => {
            let up = &cfg.proxy.upstreams[r.upstream];
            let servers: Vec<String> = up
                .servers
                .iter()
                .map(|s| match &s.unix {
                    Some(p) => format!("unix:{}", p.display()),
                    None => format!("{}:{}", s.host, s.port),
                })
                .collect();
            match &r.fastcgi {
                Some(f) => format!(
                    "{} with FastCGI {} ({})",
                    f.root.display(),
                    up.name,
                    servers.join(", ")
                ),
                None => format!("a proxy to {} ({})", up.name, servers.join(", ")),
            }
        }
        None => cfg.root.display().to_string(),
    }
}

/// Raises the soft open-files limit to the hard one: each connection is a
/// descriptor, and the usual soft default of 1024 is far below what one
/// core serves.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                tracing::warn!("cannot raise the open-files limit");
            }
        }
    }
}
