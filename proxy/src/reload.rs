//! `ringside reload`: finds the running server, asks it to reload, and
//! exits with its verdict (0 reloaded, 1 refused, with the reason), so
//! that systemd's `ExecReload` fails when the server keeps its old config.
//!
//! The server is the pid in `--pid-file`, else in the config's `pid_file`;
//! with neither, the ringside serving the config's listen address (found
//! as `check` finds it); else `/run/ringside/ringside.pid` if it is there.

use std::path::Path;
use std::process::ExitCode;

use crate::check::listen::{probe, Probe};
use crate::cli::{self, Cli, DEFAULT_PID_FILE};
use crate::config::Config;
use crate::control::{self, Verdict};

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ringside: {msg}");
    ExitCode::FAILURE
}

pub fn command(cli: &Cli) -> ExitCode {
    // A named config is checked first: a broken one is reported here, and
    // the server is not asked.
    let cfg = match cli::effective_config(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ringside: {e}");
            return fail("not reloading: the running server would refuse this config");
        }
    };
    let (pid, found) = match find_server(&cfg) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    match control::request(pid) {
        Ok(Some(Verdict::Reloaded)) => {
            println!("ringside: reloaded ({found})");
            ExitCode::SUCCESS
        }
        Ok(Some(Verdict::Refused(why))) => fail(format!(
            "reload refused ({found}): {why}; the old config keeps serving"
        )),
        Ok(None) => signal(pid, &found),
        Err(e) => fail(e),
    }
}

/// For a server without the reload socket: the signal alone.
fn signal(pid: u32, found: &str) -> ExitCode {
    // SAFETY: kill with a pid and a signal number.
    if unsafe { libc::kill(pid as i32, libc::SIGHUP) } != 0 {
        return fail(format!(
            "cannot signal {found}: {}",
            std::io::Error::last_os_error()
        ));
    }
    println!("ringside: sent SIGHUP to {found}; it answers on no reload socket, so its verdict is in its log only");
    ExitCode::SUCCESS
}

/// The server's pid, and how it was found, in words.
pub(crate) fn find_server(cfg: &Config) -> Result<(u32, String), String> {
    if let Some(p) = &cfg.ops.pid_file {
        return read_pid(p);
    }
    let mut seen = Vec::new();
    for &addr in &cfg.server.listen {
        match probe(addr) {
            Probe::InUse(h) => match &h.owner {
                Some(o) if o.name == "ringside" => {
                    return Ok((o.pid, format!("pid {}, serving {addr}", o.pid)))
                }
                _ => seen.push(format!("{addr} is served by {h}")),
            },
            _ => seen.push(format!("nothing serves {addr}")),
        }
    }
    let default = Path::new(DEFAULT_PID_FILE);
    if default.exists() {
        return read_pid(default);
    }
    Err(format!(
        "cannot find the running server: no pid file is set, {}, and there is no {DEFAULT_PID_FILE}; \
         set [server] pid_file in its config (and name the config with --config), or pass --pid-file PATH, \
         or the --listen address it serves",
        seen.join(", ")
    ))
}

fn read_pid(path: &Path) -> Result<(u32, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read pid file {}: {e}", path.display()))?;
    match text.trim().parse::<u32>() {
        Ok(p) if p > 0 => Ok((p, format!("pid {p}, from {}", path.display()))),
        _ => Err(format!(
            "{}: not a process id: {:?}",
            path.display(),
            text.trim()
        )),
    }
}
