//! `ringside`: the edge server binary. With no arguments it serves the current
//! directory on 127.0.0.1:8080.

use std::process::ExitCode;

use clap::Parser;

use ringside::cli::{self, Cli, Command};
use ringside::{check, process, reload};

/// Freed heap is kept for the next burst rather than handed back at once.
/// A burst of streams (a thousand tasks of a few KiB each, HTTP/3 at -c100
/// with 10 streams each) otherwise grows the heap, frees it, has glibc
/// trim it back past its 128 KiB threshold, and grows it again: measured,
/// 8% of the server's CPU went to sysmalloc and first-touch page faults
/// that way. Up to 32 MiB of free heap is kept on each arena.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's tunables; called before any thread.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 32 << 20);
    }
}

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
    keep_freed_memory();
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Check { file }) => return check::command(&cli, file.as_deref()),
        None if cli.test => return check::command(&cli, None),
        Some(Command::Reload) => return reload::command(&cli),
        Some(Command::Upgrade { exe }) => {
            return ringside::upgrade::command::command(&cli, exe.as_deref())
        }
        None => {}
    }
    let cfg = match cli::effective_config(&cli) {
        Ok(c) => c,
        Err(e) => {
            for e in check::config_errors(&cli, e) {
                eprintln!("ringside: {e}");
            }
            return ExitCode::from(2);
        }
    };
    process::run(cli, cfg)
}
