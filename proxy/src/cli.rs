//! The command line.
//!
//! ```text
//! ringside [OPTIONS] [COMMAND]
//!   -c, --config FILE     read FILE (otherwise the built-in default config)
//!   --listen ADDR         repeatable; replaces the config's listen list
//!   --workers N|auto
//!   --root DIR
//!   --backend NAME
//!   --upstream HOST:PORT  repeatable; stored for the proxy (later)
//!   --fastcgi ADDR        stored for FastCGI (later)
//!   -V, --version
//! COMMANDS:
//!   check FILE            validate FILE, print the effective config
//! ```
//!
//! Quick mode: with no `--config`, the flags alone describe the server, on
//! top of `Config::default()`. With `--config`, the flags override the
//! file. Either way they are validated by the same functions as the file's
//! keys, and errors name the flag: `--workers: expected ...`.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::{Parser, Subcommand};

use crate::config::validate::{add_listen, backend, parse_workers, root_dir};
use crate::config::{Config, ConfigError};

#[derive(Clone, Debug, Parser)]
#[command(
    name = "ringside",
    version = version_detail(),
    about = "A thread-per-core HTTP server and reverse proxy"
)]
pub struct Cli {
    /// Read the configuration from FILE.
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Listen on ADDR (repeatable); replaces the config's listen list.
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<String>,

    /// Number of workers, or "auto" for one per CPU.
    #[arg(long, value_name = "N|auto")]
    pub workers: Option<String>,

    /// Serve static files from DIR.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// I/O backend: auto, io-uring, epoll, kqueue, devpoll or glommio.
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,

    /// Proxy to HOST:PORT (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub upstream: Vec<String>,

    /// Pass requests to the FastCGI server at ADDR.
    #[arg(long, value_name = "ADDR")]
    pub fastcgi: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Validate FILE and print the effective configuration.
    Check { file: PathBuf },
}

/// `ringside 0.1.0 (backends: io-uring, epoll, glommio)`.
pub fn version_string(backends: &[&str]) -> String {
    let list = if backends.is_empty() {
        "none".to_owned()
    } else {
        backends.join(", ")
    };
    format!("ringside {} (backends: {list})", env!("CARGO_PKG_VERSION"))
}

/// What clap prints after the name "ringside" for `--version`; clap wants a
/// `&'static str`, so it is built once.
fn version_detail() -> &'static str {
    static DETAIL: OnceLock<String> = OnceLock::new();
    DETAIL.get_or_init(|| {
        let full = version_string(ringside_runtime::backends_built());
        full.strip_prefix("ringside ").unwrap_or(&full).to_owned()
    })
}

/// The configuration to run with: `--config` if given, else the built-in
/// default, then the quick-mode flags on top.
pub fn effective_config(cli: &Cli) -> Result<Config, ConfigError> {
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    apply_overrides(&mut config, cli)?;
    Ok(config)
}

fn apply_overrides(config: &mut Config, cli: &Cli) -> Result<(), ConfigError> {
    if !cli.listen.is_empty() {
        let mut listen = Vec::new();
        for addr in &cli.listen {
            add_listen(&mut listen, addr).map_err(|m| ConfigError::flag("--listen", m))?;
        }
        config.server.listen = listen;
    }
    if let Some(workers) = &cli.workers {
        config.runtime.workers =
            parse_workers(workers).map_err(|m| ConfigError::flag("--workers", m))?;
    }
    if let Some(root) = &cli.root {
        config.set_root(root_dir(root).map_err(|m| ConfigError::flag("--root", m))?);
    }
    if let Some(name) = &cli.backend {
        config.runtime.backend = backend(name).map_err(|m| ConfigError::flag("--backend", m))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use ringside_runtime::config::{BackendChoice, Workers};
    use std::net::SocketAddr;
    use std::path::Path;

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("ringside").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn version() {
        assert_eq!(
            version_string(&["io-uring", "epoll", "glommio"]),
            format!(
                "ringside {} (backends: io-uring, epoll, glommio)",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(
            version_string(&[]),
            format!("ringside {} (backends: none)", env!("CARGO_PKG_VERSION"))
        );
        for flag in ["--version", "-V"] {
            let err = Cli::try_parse_from(["ringside", flag]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::DisplayVersion);
            assert_eq!(
                err.to_string(),
                format!("{}\n", version_string(ringside_runtime::backends_built()))
            );
        }
    }

    #[test]
    fn parses_flags_and_check() {
        let c = cli(&[
            "-c",
            "a.toml",
            "--listen",
            "127.0.0.1:1",
            "--listen",
            "[::1]:2",
            "--workers",
            "3",
            "--root",
            "/srv",
            "--backend",
            "epoll",
            "--upstream",
            "a:80",
            "--upstream",
            "b:80",
            "--fastcgi",
            "127.0.0.1:9000",
        ]);
        assert_eq!(c.config.as_deref(), Some(Path::new("a.toml")));
        assert_eq!(c.listen, ["127.0.0.1:1", "[::1]:2"]);
        assert_eq!(c.workers.as_deref(), Some("3"));
        assert_eq!(c.root.as_deref(), Some(Path::new("/srv")));
        assert_eq!(c.backend.as_deref(), Some("epoll"));
        assert_eq!(c.upstream, ["a:80", "b:80"]);
        assert_eq!(c.fastcgi.as_deref(), Some("127.0.0.1:9000"));
        assert_eq!(c.command, None);
        let c = cli(&["check", "x.toml"]);
        assert_eq!(
            c.command,
            Some(Command::Check {
                file: "x.toml".into()
            })
        );
        assert!(Cli::try_parse_from(["ringside", "check"]).is_err());
    }

    #[test]
    fn defaults_without_flags() {
        let config = effective_config(&cli(&[])).unwrap();
        assert_eq!(config, Config::default());
    }

    #[test]
    fn overrides() {
        let dir = std::env::temp_dir();
        let dir_s = dir.to_str().unwrap();
        let c = cli(&[
            "--listen",
            "127.0.0.1:9001",
            "--listen",
            "[::1]:9002",
            "--workers",
            "2",
            "--root",
            dir_s,
            "--backend",
            "glommio",
        ]);
        let config = effective_config(&c).unwrap();
        let want: Vec<SocketAddr> = vec![
            "127.0.0.1:9001".parse().unwrap(),
            "[::1]:9002".parse().unwrap(),
        ];
        assert_eq!(config.server.listen, want);
        assert_eq!(config.runtime.workers, Workers::Count(2));
        assert_eq!(config.root, std::fs::canonicalize(&dir).unwrap());
        assert_eq!(config.runtime.backend, BackendChoice::Glommio);
        assert_eq!(
            effective_config(&cli(&["--workers", "auto"]))
                .unwrap()
                .runtime
                .workers,
            Workers::Auto
        );
    }

    #[test]
    fn override_errors_name_the_flag() {
        let err = |args: &[&str]| effective_config(&cli(args)).unwrap_err().to_string();
        assert_eq!(
            err(&["--workers", "0"]),
            "--workers: expected \"auto\" or a positive integer, got 0"
        );
        assert_eq!(
            err(&["--workers", "many"]),
            "--workers: expected \"auto\" or a positive integer, got \"many\""
        );
        assert_eq!(
            err(&["--listen", "8080"]),
            "--listen: expected HOST:PORT like \"127.0.0.1:8080\", \"[::1]:8080\" or \"localhost:8080\", got \"8080\""
        );
        assert_eq!(
            err(&["--listen", "127.0.0.1:1", "--listen", "127.0.0.1:1"]),
            "--listen: 127.0.0.1:1 is listed twice"
        );
        assert!(err(&["--backend", "uring"])
            .starts_with("--backend: expected one of \"auto\", \"io-uring\""));
        assert_eq!(
            err(&["--root", "/nonexistent/ringside-root"]),
            "--root: cannot open \"/nonexistent/ringside-root\": No such file or directory"
        );
        assert_eq!(
            err(&["-c", "/nonexistent/ringside.toml"]),
            "/nonexistent/ringside.toml: cannot read: No such file or directory"
        );
    }

    #[test]
    fn overrides_apply_on_top_of_a_file() {
        let dir = std::env::temp_dir().join(format!("ringside-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ringside.toml");
        std::fs::write(&file, "[runtime]\nworkers = 4\nbackend = \"epoll\"\n").unwrap();
        let c = cli(&["-c", file.to_str().unwrap(), "--workers", "auto"]);
        let config = effective_config(&c).unwrap();
        assert_eq!(config.runtime.workers, Workers::Auto);
        assert_eq!(config.runtime.backend, BackendChoice::Epoll);
        assert_eq!(config.source.as_deref(), Some(file.as_path()));
        assert_eq!(config.root, std::fs::canonicalize(&dir).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
