//! `ringside check` (also `-t`): what `nginx -t` does, and the same checks
//! at start so that a start fails the way the check would have.
//!
//! Validation, which every load does, has read the certificates, keys and
//! CA bundles already. Past it, this opens the access log and the roots,
//! checks the pid file's directory, makes each cache's disk directory (as
//! nginx makes its `proxy_cache_path`) and checks that the server's user
//! can write it, tries each listen address, and resolves upstream names. A name that does not resolve is a warning (the
//! server starts with that upstream server down); everything else that
//! would stop the start is an error, placed at the file, line and key that
//! set it.

pub mod listen;
pub mod locate;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{self, Cli};
use crate::config::error::io_reason;
use crate::config::ops::AdminListen;
use crate::config::{Config, ConfigError};
use crate::upstream::shared::server_addrs;
use listen::{probe, Owner, Probe};
use locate::{Locator, Setting};

/// One problem found.
#[derive(Debug)]
pub struct Finding {
    /// An error stops the start; a warning does not.
    pub error: bool,
    pub what: ConfigError,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.error {
            write!(f, "{}", self.what)
        } else {
            write!(f, "warning: {}", self.what)
        }
    }
}

/// The findings that stop a start, in words.
pub fn errors(found: &[Finding]) -> Vec<String> {
    found
        .iter()
        .filter(|f| f.error)
        .map(|f| f.to_string())
        .collect()
}

/// What runs the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `ringside check`: everything, listen addresses and names included.
    Check,
    /// A start or a reload: the files only (the start binds and resolves
    /// by itself).
    Start,
}

/// Every problem with what `cfg` names on this machine.
pub fn preflight(cfg: &Config, loc: &Locator, mode: Mode) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut error = |what| out.push(Finding { error: true, what });
    if let Some(a) = &cfg.ops.access_log {
        let user = cfg.ops.user.as_deref();
        let as_user = crate::privileges::opener_of(&a.path, user, cfg.ops.group.as_deref());
        let opened = match as_user {
            // At start too: the keeper does not run yet, and the file
            // must not be made as root.
            Some((uid, gid)) => {
                crate::privileges::keeper::as_user(uid, gid, || open_append(&a.path, mode))
            }
            _ => open_append(&a.path, mode),
        };
        if let Err(e) = opened {
            let why = match (as_user, user) {
                (Some(_), Some(u)) if e.kind() == std::io::ErrorKind::PermissionDenied => format!(
                    " (opened as the user {u}, who can write a directory on its path, so that root never follows a link planted there; a log root made there must be given to {u})"
                ),
                _ => String::new(),
            };
            error(loc.error(
                Setting::AccessLog,
                format!("cannot open {}: {}{why}", a.path.display(), io_reason(&e)),
            ));
        }
    }
    // A stopped service has no /run/ringside (systemd's RuntimeDirectory
    // makes it at each start): for `check` that is a warning.
    let mut pid_warning = None;
    if let Some(p) = &cfg.ops.pid_file {
        if let Err(m) = pid_dir(p) {
            let what = loc.error(Setting::PidFile, m);
            match mode {
                Mode::Start => error(what),
                Mode::Check => pid_warning = Some(what),
            }
        }
    }
    if let Err(e) = ringside_static::StaticFiles::from_config(&cfg.statics) {
        error(loc.error(
            Setting::Root,
            format!("cannot open {}: {e}", cfg.statics.root.display()),
        ));
    }
    for c in &cfg.caches {
        if let Some(dir) = &c.disk {
            let (user, group) = (cfg.ops.user.as_deref(), cfg.ops.group.as_deref());
            if let Err(m) = cache_dir(dir, user, group) {
                error(loc.error(Setting::CacheDisk(&c.name), m));
            }
        }
    }
    if let Some(what) = pid_warning {
        out.push(Finding { error: false, what });
    }
    if mode == Mode::Check {
        listeners(cfg, loc, &mut out);
        crate::unix_listen::check(cfg, loc, &mut out);
        names(cfg, loc, &mut out);
    }
    out
}

/// As the access log writer opens it (through the keeper once privileges
/// are dropped, so that a reload checks what SIGUSR1 would do). `check`
/// creates nothing: a log it made as root could not be opened by a server
/// started as another user; for a missing file the directory is checked.
fn open_append(path: &Path, mode: Mode) -> std::io::Result<()> {
    if mode == Mode::Start {
        return crate::privileges::keeper::open_log(path).map(drop);
    }
    match std::fs::OpenOptions::new().append(true).open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = dir_of(path);
            std::fs::metadata(dir)?;
            writable(dir)
        }
        other => other.map(drop),
    }
}

/// Whether entries can be made in the directory `dir` (write and search
/// permission), with the file-system ids, which `as_user` may have set to
/// the server's user.
fn writable(dir: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()))
        .map_err(std::io::Error::other)?;
    // SAFETY: faccessat with a NUL-terminated path.
    // AT_EACCESS: with the file-system ids, not the real ones.
    let ok = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        )
    };
    if ok != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A cache's disk directory, by `check` and at each start and reload: made
/// when missing, with its parents, as nginx makes `proxy_cache_path` (a
/// fresh one 0700: it holds responses); then it must be a directory the
/// server's user can write. Run as root with `[server] user` (the start
/// drops to that user after these checks), a directory made here is given
/// to that user, as nginx gives its cache paths to the workers' user, and
/// the write check runs with that user's ids (`keeper::as_user`).
/// Otherwise this process is the server's user (a start without root, or a
/// reload after the drop) and the check is made as itself.
fn cache_dir(dir: &Path, user: Option<&str>, group: Option<&str>) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // A user that does not exist fails the start when it drops root.
    let ids = match user {
        Some(u) if root => crate::privileges::ids(u, group).ok().map(|ids| (u, ids)),
        _ => None,
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{} is not a directory", dir.display())),
        Err(_) => {
            let made = dir
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(
                    |()| match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {
                            Ok(())
                        }
                        other => other,
                    },
                );
            if let Err(e) = made {
                let why = match not_a_directory(dir) {
                    Some(p) => format!("{} is not a directory", p.display()),
                    None => io_reason(&e),
                };
                return Err(format!("cannot create {}: {why}", dir.display()));
            }
            if let Some((u, (uid, gid))) = ids {
                std::os::unix::fs::chown(dir, Some(uid), Some(gid)).map_err(|e| {
                    format!(
                        "cannot give {} to the user {u}: {}",
                        dir.display(),
                        io_reason(&e)
                    )
                })?;
            }
        }
    }
    let checked = match ids {
        Some((_, (uid, gid))) => crate::privileges::keeper::as_user(uid, gid, || writable(dir)),
        None => writable(dir),
    };
    checked.map_err(|e| match ids {
        Some((u, _)) => format!(
            "the user {u}, whom the server runs as, cannot write {}: {} (chown {u} {0})",
            dir.display(),
            io_reason(&e)
        ),
        None => format!("cannot write {}: {}", dir.display(), io_reason(&e)),
    })
}

/// The nearest existing entry on the way to `path` when it is not a
/// directory (so nothing can be made beneath it).
fn not_a_directory(path: &Path) -> Option<PathBuf> {
    let mut p = path.parent();
    while let Some(at) = p {
        if let Ok(m) = std::fs::metadata(at) {
            return (!m.is_dir()).then(|| at.to_path_buf());
        }
        p = at.parent();
    }
    None
}

/// The directory a file is made in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The pid file is written at start, before privileges are dropped; its
/// directory must be there.
fn pid_dir(path: &Path) -> Result<(), String> {
    let dir = dir_of(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("{} is not a directory", dir.display())),
        Err(e) => Err(format!(
            "cannot write {}: directory {}: {}",
            path.display(),
            dir.display(),
            io_reason(&e)
        )),
    }
}

/// What a start does when the default admin address is taken: it goes on.
pub const WITHOUT_ADMIN: &str = "a start runs without the admin listener (/metrics, /healthz)";

/// How to give a second server an admin listener of its own.
pub const ADMIN_HINT: &str =
    "give this server another admin address with --admin ADDR (or [admin] listen), or none with --admin off";

/// Which address a trial bind is for, and so what a start does when it
/// is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Listen,
    /// `[admin] listen` or `--admin`: a start fails when it is taken.
    Admin,
    /// The built-in admin address: a start goes on without it.
    DefaultAdmin,
}

/// Each listen address (and the admin one) bound on trial. One held by a
/// ringside is only a warning: it is the server this config will reload.
/// Each message says what a start would do, as the start does it.
fn listeners(cfg: &Config, loc: &Locator, out: &mut Vec<Finding>) {
    let mut each = |addr, what: Setting<'_>, role: Role| {
        let start = match role {
            Role::Listen => "a second start would be refused".to_owned(),
            Role::Admin => format!("a second start would be refused; {ADMIN_HINT}"),
            Role::DefaultAdmin => format!("{WITHOUT_ADMIN}; {ADMIN_HINT}"),
        };
        let (error, message) = match probe(addr) {
            Probe::Free => return,
            Probe::InUse(h) => match h.owner.clone().or_else(|| pid_file_ringside(cfg)) {
                Some(o) if o.name == "ringside" => (
                    false,
                    format!("{addr} is served by {o} now; a reload keeps it, {start}"),
                ),
                _ if role == Role::DefaultAdmin => (
                    false,
                    format!("cannot listen on {addr}: in use by {h}; {start}"),
                ),
                _ if role == Role::Admin => (
                    true,
                    format!("cannot listen on {addr}: in use by {h}; {ADMIN_HINT}"),
                ),
                _ => (true, format!("cannot listen on {addr}: in use by {h}")),
            },
            Probe::Refused(e) => (
                role != Role::DefaultAdmin,
                format!("cannot listen on {addr}: {}", io_reason(&e)),
            ),
        };
        out.push(Finding {
            error,
            what: loc.error(what, message),
        });
    };
    for &addr in &cfg.server.listen {
        each(addr, Setting::Listen(addr), Role::Listen);
    }
    match cfg.ops.admin {
        AdminListen::At(a) => each(a, Setting::Admin, Role::Admin),
        AdminListen::Default(a) => each(a, Setting::Admin, Role::DefaultAdmin),
        AdminListen::Off => {}
    }
}

/// The running ringside the config's pid file names, if it runs. A server
/// that dropped root is not dumpable, so its descriptors cannot be looked
/// into by its own user; its pid file and `comm` can.
pub fn pid_file_ringside(cfg: &Config) -> Option<Owner> {
    let path = cfg
        .ops
        .pid_file
        .clone()
        .unwrap_or_else(|| cli::DEFAULT_PID_FILE.into());
    let pid: u32 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(Owner {
        pid,
        name: name.trim().to_owned(),
    })
}

/// Upstream server names resolved now; FastCGI sockets looked for.
fn names(cfg: &Config, loc: &Locator, out: &mut Vec<Finding>) {
    for u in &cfg.proxy.upstreams {
        for (i, s) in u.servers.iter().enumerate() {
            let message = match (&s.unix, server_addrs(s)) {
                (Some(path), _) if !path.exists() => format!(
                    "no socket at {} now; requests fail until its server creates it",
                    path.display()
                ),
                (None, Err(e)) => format!(
                    "{e}; the server starts with it down and resolves it again every {}",
                    crate::config::size::format_duration(u.resolve_every)
                ),
                _ => continue,
            };
            out.push(Finding {
                error: false,
                what: loc.error(Setting::UpstreamServer(&u.name, i), message),
            });
        }
    }
}

/// `err`, the first error in the config `cli` names, and every other error
/// in that file after it (see `config::every`).
pub fn config_errors(cli: &Cli, err: ConfigError) -> Vec<ConfigError> {
    let from_file = match (&err, &cli.config) {
        (ConfigError::File { file, .. }, Some(path)) => file == path,
        _ => false,
    };
    let all = match &cli.config {
        Some(path) if from_file => crate::config::every::errors_in(path),
        _ => Vec::new(),
    };
    if all.contains(&err) {
        all
    } else {
        vec![err]
    }
}

/// `ringside check [FILE]`, `ringside -t [-c FILE]`: prints the effective
/// config on stdout, every finding on stderr, and a verdict.
pub fn command(cli: &Cli, file: Option<&Path>) -> ExitCode {
    let cli = match (file, &cli.config) {
        (Some(f), Some(c)) if f != c => {
            eprintln!(
                "ringside: check: two configs named, {} and --config {}; name one",
                f.display(),
                c.display()
            );
            return ExitCode::FAILURE;
        }
        (Some(f), _) => Cli {
            config: Some(f.to_path_buf()),
            ..cli.clone()
        },
        (None, _) => cli.clone(),
    };
    let name = cli
        .config
        .as_ref()
        .map_or("the built-in config".to_owned(), |p| {
            p.display().to_string()
        });
    let cfg = match cli::effective_config(&cli) {
        Ok(c) => c,
        Err(e) => {
            for e in config_errors(&cli, e) {
                eprintln!("ringside: {e}");
            }
            eprintln!("ringside: {name}: test failed");
            return ExitCode::FAILURE;
        }
    };
    let found = preflight(&cfg, &Locator::new(&cfg, Some(&cli)), Mode::Check);
    for f in &found {
        eprintln!("ringside: {f}");
    }
    if found.iter().any(|f| f.error) {
        eprintln!("ringside: {name}: test failed");
        return ExitCode::FAILURE;
    }
    print!("{}", cfg.to_toml());
    eprintln!("ringside: {name}: test is successful");
    ExitCode::SUCCESS
}
