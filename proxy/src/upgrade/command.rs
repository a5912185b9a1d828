//! `ringside upgrade [--exe PATH]`: finds the running server as `reload`
//! does, asks it to start the new binary on its listeners, and exits with
//! the verdict (0: the new process is ready and the old one drains; 1:
//! the old one keeps serving, with why).

use std::path::Path;
use std::process::ExitCode;

use crate::cli::{self, Cli};

pub fn command(cli: &Cli, exe: Option<&Path>) -> ExitCode {
    let fail = |msg: String| {
        eprintln!("ringside: {msg}");
        ExitCode::FAILURE
    };
    let cfg = match cli::effective_config(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ringside: {e}");
            return fail("not upgrading: the new process would refuse this config".into());
        }
    };
    // The server starts it from its own directory: a relative path is
    // made absolute here, where the caller meant it.
    let exe = match exe.map(std::fs::canonicalize).transpose() {
        Ok(e) => e,
        Err(e) => return fail(format!("--exe: {e}")),
    };
    let (pid, found) = match crate::reload::find_server(&cfg) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    match super::ask::request(pid, exe.as_deref()) {
        Ok(new) => {
            println!("ringside: upgraded ({found}): pid {new} serves now; pid {pid} drains");
            ExitCode::SUCCESS
        }
        Err(why) => fail(format!(
            "upgrade failed ({found}): {why}; the old process keeps serving"
        )),
    }
}
