//! The main thread's life: start (bind, drop privileges, start workers and
//! the admin listener), then wait on signals: SIGHUP reloads, SIGUSR1
//! reopens the access log, SIGTERM or SIGINT drains and stops.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ringside_runtime::reload::Factory;
use ringside_runtime::tls::TlsAcceptor;
use ringside_runtime::worker::{self, Server};
use ringside_runtime::Backend;
use ringside_static::StaticFiles;

use crate::access_log::writer;
use crate::check::listen::{probe, Probe};
use crate::check::locate::{Locator, Setting};
use crate::check::{self, Mode};
use crate::cli::{self, Cli};
use crate::config::error::io_reason;
use crate::config::ops::AdminListen;
use crate::config::{Config, ConfigError};
use crate::edge::access::Access;
use crate::edge::https::HttpsPolicy;
use crate::edge::limiter::Limiter;
use crate::edge::rewrite::Rewrites;
use crate::edge::Edge;
use crate::metrics::{self, admin};
use crate::privileges::keeper::Kept;
use crate::signals::{self, Signal};
use crate::upstream::shared::{self, Shared};
use crate::{control, notify, privileges, upgrade};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ringside: {msg}");
    upgrade::child::failed(&msg.to_string());
    ExitCode::FAILURE
}

/// What builds each worker's handler for `cfg`, with `local_addrs` the
/// listeners' bound addresses (for the port https redirects name).
fn edge_factory(cfg: &Config, shared: &[Arc<Shared>], local_addrs: &[SocketAddr]) -> Factory<Edge> {
    let statics = cfg.statics.clone();
    let proxy = cfg.proxy.clone();
    let ops = cfg.ops.clone();
    let shared = shared.to_vec();
    let https_port = local_addrs
        .iter()
        .zip(&cfg.server.tls)
        .find(|(_, t)| t.is_some())
        .map(|(a, _)| a.port());
    let tls = cfg.tls.clone();
    let acme = cfg
        .acme
        .iter()
        .any(|i| i.challenge == ringside_acme::ChallengeKind::Http01);
    let access = cfg.access.clone();
    let rates = cfg.rates.clone();
    let compression = cfg.compression.clone();
    let auth = cfg.auth.clone();
    let headers = cfg.headers.clone();
    let caches = cfg.caches.clone();
    let rewrites = cfg.rewrites.clone();
    let real_ip = cfg.real_ip.clone();
    let error_pages = cfg.error_pages.clone();
    let try_files = cfg.try_files.clone();
    let mtls = cfg.mtls.clone();
    let revalidate = cfg.statics.cache.revalidate;
    // One per config: a reload's cores post their purges to one another.
    let purges = Arc::new(ringside_cache::purge::Broadcast::default());
    Arc::new(move |ctx, prev| {
        // Each worker opens its own roots and builds its own cache and pools.
        let files = StaticFiles::from_config(&statics)
            .map_err(|e| format!("cannot open root {}: {e}", statics.root.display()))?;
        let prefixes: Vec<String> = statics.routes.iter().map(|r| r.prefix.clone()).collect();
        let https = HttpsPolicy::new(&tls, https_port);
        let access = Access::new(&access, &tls, &prefixes);
        let limiter = Limiter::new(&rates, &prefixes);
        let (slash, params) = (proxy.encoded_slash, proxy.path_parameters);
        let rewrites = Rewrites::new(&rewrites, &tls, &prefixes, slash, params);
        Edge::new(
            files,
            prefixes.clone(),
            &proxy,
            &ops,
            &shared,
            ctx,
            prev,
            https,
        )
        .map(|e| {
            e.with_policies(access, limiter)
                .with_compression(&compression, &prefixes)
                .with_auth(&auth, &prefixes)
                .with_fields(&headers, &tls, &prefixes)
                .with_caches(&caches, prev, &purges)
                .with_rewrites(rewrites)
                .with_real_ip(&real_ip)
                .with_acme(acme)
                .with_error_pages(&error_pages, &tls, &prefixes, revalidate)
                .with_client_certs(&mtls, &tls, &prefixes)
        })
        .and_then(|e| e.with_try_files(&try_files, &prefixes))
    })
}

/// Refuses HTTPS upstreams on glommio, which has no writability wait for
/// TLS to use (its TLS listeners are refused by the runtime).
fn upstream_tls_backend(cfg: &Config, backend: Backend) -> Result<(), String> {
    match cfg.proxy.upstreams.iter().find(|u| u.tls().is_some()) {
        Some(u) if backend == Backend::Glommio => Err(format!(
            "[upstream.{}] tls = true needs the io-uring or epoll backend, not glommio",
            u.name
        )),
        _ => Ok(()),
    }
}

/// Reads the certificates of `cfg`'s TLS listeners and vhosts into the
/// listeners' rustls settings (at start, and again on each reload).
fn load_tls(cfg: &mut Config) -> Result<(), String> {
    let built = crate::tls::server_configs(&cfg.tls, &cfg.server.http2)?;
    cfg.server.tls = built.into_iter().map(|c| c.map(TlsAcceptor)).collect();
    Ok(())
}

/// Every certificate, key and CA file the config names, for the keeper to
/// read again at reloads.
fn tls_files(cfg: &Config) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let pairs = cfg.tls.listeners.iter().flatten();
    let vhosts = cfg.tls.vhosts.iter().filter_map(|v| v.cert.as_ref());
    for p in pairs.chain(vhosts) {
        if p.acme.is_none() {
            out.extend([p.cert.clone(), p.key.clone()]);
        }
        out.extend(p.client.iter().flat_map(|c| c.files().cloned()));
    }
    out.extend(
        cfg.proxy
            .upstreams
            .iter()
            .filter_map(|u| u.tls()?.ca.clone()),
    );
    out.sort();
    out.dedup();
    out
}

fn bind_admin(a: &AdminListen) -> Result<Option<TcpListener>, String> {
    match a {
        AdminListen::Off => Ok(None),
        AdminListen::At(addr) => admin::bind(*addr).map(Some).map_err(|e| {
            format!(
                "cannot listen on {addr} ([admin] listen): {}; {}",
                io_reason(&e),
                check::ADMIN_HINT
            )
        }),
        AdminListen::Default(addr) => match admin::bind(*addr) {
            Ok(l) => Ok(Some(l)),
            Err(e) => {
                tracing::warn!(
                    "cannot listen on {addr} (the default admin address): {}; {}; {}",
                    io_reason(&e),
                    check::WITHOUT_ADMIN,
                    check::ADMIN_HINT
                );
                Ok(None)
            }
        },
    }
}

/// Refuses to start on an address where another process listens already:
/// with SO_REUSEPORT the kernel would quietly split the connections
/// between the two, and a second ringside of the same user is allowed to
/// bind there.
fn one_instance(cfg: &Config, loc: &Locator, allowed: bool) -> Result<(), ConfigError> {
    for &addr in &cfg.server.listen {
        let holder = match probe(addr) {
            Probe::Free => continue,
            Probe::InUse(h) => h,
            Probe::Refused(e) => {
                return Err(loc.error(
                    Setting::Listen(addr),
                    format!("cannot listen on {addr}: {}", io_reason(&e)),
                ))
            }
        };
        let owner = holder
            .owner
            .clone()
            .or_else(|| check::pid_file_ringside(cfg));
        // The kernel shares a port only between sockets of one user that
        // all set SO_REUSEPORT, which only another ringside is known to do.
        let ringside = owner.as_ref().map(|o| o.name == "ringside");
        if allowed && holder.shareable() && ringside != Some(false) {
            tracing::warn!(%addr, %holder, "sharing the address (--reuse-port-with-others): the kernel splits new connections between the two");
            continue;
        }
        let how = match ringside {
            _ if !holder.shareable() => "Stop it first: it is another user's, and the kernel shares an address between one user's sockets only",
            Some(true) => "Stop it first, or start with --reuse-port-with-others to share the address on purpose",
            Some(false) => "Stop it first, or listen elsewhere: it is not a ringside, so the address cannot be shared with it",
            None => "Stop it first; if it is a ringside, --reuse-port-with-others shares the address on purpose",
        };
        return Err(loc.error(
            Setting::Listen(addr),
            format!("{addr} is served by {holder} already; a second server there would take part of its connections. {how}"),
        ));
    }
    Ok(())
}

pub fn run(cli: Cli, mut cfg: Config) -> ExitCode {
    let signals = match signals::block() {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot set up signal handling: {e}")),
    };
    privileges::raise_fd_limit();
    // Started by an upgrade: the old process's listeners.
    let mut handed = match upgrade::child::receive() {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let loc = Locator::new(&cfg, Some(&cli));
    let errors = check::errors(&check::preflight(&cfg, &loc, Mode::Start));
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("ringside: {e}");
        }
        upgrade::child::failed(&errors.join("; "));
        return ExitCode::FAILURE;
    }
    if handed.is_none() {
        if let Err(e) = one_instance(&cfg, &loc, cli.reuse_port_with_others) {
            return fail(e);
        }
    }
    // Forked before any thread starts (see keeper.rs).
    // SAFETY: geteuid has no preconditions.
    if let (Some(user), 0) = (&cfg.ops.user, unsafe { libc::geteuid() }) {
        let kept = privileges::ids(user, cfg.ops.group.as_deref()).map(|(uid, gid)| Kept {
            logs: cfg.ops.access_log.iter().map(|a| a.path.clone()).collect(),
            reads: tls_files(&cfg),
            pid_file: cfg.ops.pid_file.clone(),
            uid,
            gid,
        });
        if let Err(e) = kept.and_then(|k| privileges::keeper::spawn(k).map_err(|e| e.to_string())) {
            return fail(format!(
                "cannot start the root helper for [server] user: {e}"
            ));
        }
    }

    // As root where `user` is set: the state directories are made for that user.
    // SAFETY: geteuid has no preconditions.
    let owner = match (&cfg.ops.user, unsafe { libc::geteuid() }) {
        (Some(user), 0) => privileges::ids(user, cfg.ops.group.as_deref()).ok(),
        _ => None,
    };
    if let Err(e) = crate::acme::prepare(&cfg, owner) {
        return fail(e);
    }
    if let Err(e) = load_tls(&mut cfg) {
        return fail(e);
    }
    if cfg.tls.any_tls() {
        // kTLS would keep splice/sendfile under TLS; the kernels this is
        // tested on lack CONFIG_TLS, so that path is not built.
        tracing::info!(
            path = "userspace",
            "TLS records are encrypted in user space by rustls (no kTLS in this build)"
        );
    }
    // Opened before privileges are dropped, as nginx opens its logs.
    if let Some(a) = &cfg.ops.access_log {
        if let Err(e) = writer::start(&a.path) {
            return fail(format!("cannot open access log {}: {e}", a.path.display()));
        }
    }
    let kept_admin = handed.as_mut().and_then(|h| h.take_admin(&cfg.ops.admin));
    let admin = match kept_admin
        .map(|l| Ok(Some(l)))
        .unwrap_or_else(|| bind_admin(&cfg.ops.admin))
    {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let mut shared = match shared::start(&cfg.proxy.upstreams, &[]) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let bound = match handed.as_mut() {
        Some(h) => h
            .listeners(&cfg.server.listen)
            .and_then(|l| worker::adopt(&cfg.runtime, &cfg.server, l).map_err(|e| e.to_string())),
        None => worker::bind(&cfg.runtime, &cfg.server).map_err(|e| e.to_string()),
    };
    let mut bound = match bound {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    // The TCP listeners' copies, taken before the unix sockets join them.
    let handover = upgrade::Handover::new(&bound, admin.as_ref());
    // Removed again when this goes, at exit or on a failed start (not
    // after a handover: the new process serves the same file).
    let unix = match handed.as_mut() {
        Some(h) => crate::unix_listen::UnixSockets::adopt(&cfg.unix_listen, h.take_unix()),
        None => crate::unix_listen::UnixSockets::bind(&cfg.unix_listen, cfg.server.backlog),
    };
    let mut unix = match unix {
        Ok(u) => u,
        Err(e) => return fail(e),
    };
    if let Err(e) = unix.add_to(&mut bound) {
        return fail(format!("cannot hand the unix sockets to the workers: {e}"));
    }
    let handover = handover.with_unix(&unix);
    if let Err(e) = upstream_tls_backend(&cfg, bound.backend()) {
        return fail(e);
    }
    let pid_file = match &cfg.ops.pid_file {
        // Written once ready: until then the old process is the server.
        Some(p) if handed.is_some() => Some(p.clone()),
        Some(p) => match write_pid(p) {
            Ok(()) => Some(p.clone()),
            Err(e) => return fail(format!("cannot write pid file {}: {e}", p.display())),
        },
        None => None,
    };
    if let Some(user) = &cfg.ops.user {
        if let Err(e) = privileges::drop_to(user, cfg.ops.group.as_deref()) {
            return fail(e);
        }
    }
    control::spawn();
    crate::acme::manager::run(&cfg);
    let factory = edge_factory(&cfg, &shared, bound.local_addrs());
    let mut server = match bound.spawn(factory, ringside_http::Http) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if upgrade::child::pending() {
        if let Some(p) = &pid_file {
            // Through an adopted keeper: the directory may be root's.
            let written = privileges::keeper::write_pid().unwrap_or_else(|| write_pid(p));
            if let Err(e) = written {
                // Its workers accept already: what they took is served,
                // not closed idle under a client about to send.
                ringside_runtime::shutdown::set_handing_over();
                server.shutdown();
                server.join();
                return fail(format!("cannot write pid file {}: {e}", p.display()));
            }
        }
    }
    let reg = metrics::registry();
    let _ = reg.backend.set(server.backend.to_string());
    reg.set_serving(&shared, cfg.statics.cache.max_open);
    let what = serving_what(&cfg);
    for (i, addr) in server.local_addrs.iter().enumerate() {
        let scheme = if cfg.server.tls.get(i).is_some_and(Option::is_some) {
            "https"
        } else {
            "http"
        };
        println!(
            "ringside: serving {what} on {scheme}://{addr}/ (workers: {}, backend: {})",
            server.workers, server.backend
        );
    }
    for path in unix.paths() {
        println!(
            "ringside: serving {what} on unix:{} (workers: {}, backend: {})",
            path.display(),
            server.workers,
            server.backend
        );
    }
    if let Some(l) = admin {
        match l.local_addr() {
            Ok(a) => println!("ringside: admin on http://{a}/metrics"),
            Err(e) => tracing::warn!(error = %e, "admin listener has no address"),
        }
        if let Err(e) = admin::spawn(l) {
            tracing::warn!(error = %e, "cannot start the admin thread");
        }
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    notify::ready();
    upgrade::child::ready();
    let sig = loop {
        match signals.wait() {
            Signal::Hup => reload(&cli, &mut cfg, &mut server, &mut shared),
            Signal::Usr1 => {
                tracing::info!("SIGUSR1: reopening the access log");
                writer::reopen();
            }
            Signal::Usr2 if handover.on_signal() => break Signal::Usr2,
            Signal::Usr2 => {}
            sig => break sig,
        }
    };
    if sig == Signal::Usr2 {
        // The new process told systemd its pid, and serves the admin
        // listener too; this one only finishes what it has.
        ringside_runtime::shutdown::set_handing_over();
        unix.leave_files();
    } else {
        tracing::info!(signal = sig.name(), "draining");
        notify::stopping();
        admin::DRAINING.store(true, Ordering::Relaxed);
    }
    server.shutdown();
    // A second signal during the drain ends the process at once.
    std::thread::spawn(move || loop {
        let sig = signals.wait();
        if matches!(sig, Signal::Term | Signal::Int) {
            tracing::warn!(
                signal = sig.name(),
                "second signal: exiting without waiting"
            );
            std::process::exit(1);
        }
    });
    server.join();
    // The workers handed over their last log lines as they ended.
    writer::sync();
    if let Some(p) = pid_file {
        remove_pid(&p);
    }
    // Without root, the keeper removes the pid file from a root-owned /run.
    privileges::keeper::finish();
    drop(unix);
    upgrade::ask::finish();
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// Re-reads the config and gives every worker a handler built from it; a
/// config that does not validate is logged and the old one keeps serving.
fn reload(cli: &Cli, live: &mut Config, server: &mut Server<Edge>, shared: &mut Vec<Arc<Shared>>) {
    tracing::info!("SIGHUP: reloading the config");
    notify::reloading();
    let reg = metrics::registry();
    control::reload_begins();
    let result = try_reload(cli, live, server, shared);
    control::reload_ended(&result);
    match result {
        Ok(()) => {
            reg.reloads_ok.fetch_add(1, Ordering::Relaxed);
            tracing::info!("config reloaded");
        }
        Err(e) => {
            reg.reloads_failed.fetch_add(1, Ordering::Relaxed);
            tracing::error!("reload refused, the old config keeps serving: {e}");
        }
    }
    notify::ready();
}

fn try_reload(
    cli: &Cli,
    live: &mut Config,
    server: &mut Server<Edge>,
    shared: &mut Vec<Arc<Shared>>,
) -> Result<(), String> {
    let mut new = cli::effective_config(cli).map_err(|e| e.to_string())?;
    keep_restart_only(live, &mut new);
    let errors = check::errors(&check::preflight(
        &new,
        &Locator::new(&new, Some(cli)),
        Mode::Start,
    ));
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    crate::acme::prepare(&new, None)?;
    load_tls(&mut new)?;
    upstream_tls_backend(&new, server.backend)?;
    if let Some(a) = &new.ops.access_log {
        if writer::sender().is_none() {
            writer::start(&a.path)
                .map_err(|e| format!("cannot open access log {}: {e}", a.path.display()))?;
        } else {
            writer::set_path(&a.path);
        }
    }
    let fresh = shared::start(&new.proxy.upstreams, shared)?;
    let factory = edge_factory(&new, &fresh, &server.local_addrs);
    let refused = server.reload(factory, new.server.conn_config());
    metrics::registry().set_serving(&fresh, new.statics.cache.max_open);
    *shared = fresh;
    crate::acme::manager::run(&new);
    *live = new;
    if refused.is_empty() {
        Ok(())
    } else {
        let list: Vec<String> = refused
            .iter()
            .map(|(w, e)| format!("worker {w}: {e}"))
            .collect();
        Err(format!(
            "some workers kept the old config: {}",
            list.join("; ")
        ))
    }
}

/// Settings that only a restart changes: a change is logged, and the live
/// value kept so that the next reload compares against what runs.
fn keep_restart_only(live: &Config, new: &mut Config) {
    let mut kept = Vec::new();
    if new.runtime != live.runtime {
        kept.push("[runtime]");
        new.runtime = live.runtime.clone();
    }
    if new.server.listen != live.server.listen {
        kept.push("[server] listen");
        new.server.listen = live.server.listen.clone();
        new.server.http2 = live.server.http2.clone();
        new.server.proxy_protocol = live.server.proxy_protocol.clone();
        new.tls.listeners = live.tls.listeners.clone();
    }
    if new.unix_listen != live.unix_listen {
        kept.push("[server] listen (unix sockets)");
        new.unix_listen = live.unix_listen.clone();
    }
    if new.server.backlog != live.server.backlog {
        kept.push("[server] backlog");
        new.server.backlog = live.server.backlog;
    }
    // Each worker's QUIC endpoint is set up once, with its UDP socket: its
    // limits, 0-RTT and send window, and which listeners have one at all
    // (so which offer HTTP/3 in Alt-Svc), stay as they started.
    if new.server.h3 != live.server.h3 {
        kept.push("[http3]");
        new.server.h3 = live.server.h3;
    }
    if new.server.http3 != live.server.http3 {
        kept.push("[server] listen http3");
        new.server.http3 = live.server.http3.clone();
    }
    let (l, n) = (&live.ops, &mut new.ops);
    for (name, changed) in [
        ("[admin] listen", n.admin.addr() != l.admin.addr()),
        ("[server] user", n.user != l.user),
        ("[server] group", n.group != l.group),
        ("[server] pid_file", n.pid_file != l.pid_file),
    ] {
        if changed {
            kept.push(name);
        }
    }
    n.admin = l.admin.clone();
    n.user = l.user.clone();
    n.group = l.group.clone();
    n.pid_file = l.pid_file.clone();
    if !kept.is_empty() {
        tracing::warn!(settings = ?kept, "changed settings take effect only at restart");
    }
}

fn write_pid(path: &Path) -> std::io::Result<()> {
    std::fs::write(path, format!("{}\n", std::process::id()))
}

/// Removes the pid file if it still names this process.
fn remove_pid(path: &Path) {
    let ours = std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        == Some(std::process::id());
    if ours {
        let _ = std::fs::remove_file(path);
    }
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
