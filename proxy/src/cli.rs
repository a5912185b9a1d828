//! The command line.
//!
//! ```text
//! ringside [OPTIONS] [COMMAND]
//!   -c, --config FILE     read FILE (otherwise the built-in default config)
//!   --listen ADDR         repeatable; replaces the config's listen list
//!   --workers N|auto
//!   --root DIR
//!   --backend NAME
//!   --upstream HOST:PORT  repeatable; proxy every path to these servers
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
//!
//! `--upstream` adds an upstream called `default` (the defaults of
//! `UpstreamConfig::new`, each server with weight 1) and a proxy route for
//! `/` on any host that goes to it, beside what a config file defines. A
//! file that already has an `[upstream.default]`, or a route for `/` on any
//! host, is refused with an error naming the flag.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::{Parser, Subcommand};

use crate::config::upstream::{
    catch_all_route, host_port, insert_upstream, route_conflict, server_addr,
};
use crate::config::validate::{add_listen, backend, parse_workers, root_dir};
use crate::config::{Config, ConfigError};
use crate::upstream::settings::{ServerSpec, UpstreamConfig};

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

    /// Proxy every path to HOST:PORT (repeatable): upstream "default".
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
    if !cli.upstream.is_empty() {
        add_flag_upstream(config, &cli.upstream).map_err(|m| ConfigError::flag("--upstream", m))?;
    }
    Ok(())
}

/// The name of the upstream `--upstream` builds.
pub const FLAG_UPSTREAM: &str = "default";

/// `--upstream A --upstream B`: upstream "default" over A and B, and a route
/// for every path to it.
fn add_flag_upstream(config: &mut Config, addrs: &[String]) -> Result<(), String> {
    let mut servers: Vec<ServerSpec> = Vec::with_capacity(addrs.len());
    for addr in addrs {
        let (host, port) = server_addr(addr)?;
        if servers.iter().any(|s| s.host == host && s.port == port) {
            return Err(format!("{} is listed twice", host_port(&host, port)));
        }
        servers.push(ServerSpec {
            host,
            port,
            weight: 1,
        });
    }
    let proxy = &mut config.proxy;
    if proxy.upstreams.iter().any(|u| u.name == FLAG_UPSTREAM) {
        return Err(format!(
            "the config already defines [upstream.{FLAG_UPSTREAM}], the name this flag uses; rename it there, or leave out --upstream"
        ));
    }
    let statics = config.statics.routes.iter().map(|r| r.prefix.as_str());
    route_conflict(&catch_all_route(0), &proxy.routes, statics)
        .map_err(|m| format!("{m} (this flag adds a route for every path)"))?;
    let at = insert_upstream(proxy, UpstreamConfig::new(FLAG_UPSTREAM, servers))?;
    proxy.routes.push(catch_all_route(at));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::settings::{ForwardHeaders, HostHeader, ProxyConfig, ProxyRoute};
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
    fn upstream_flags_build_the_default_upstream() {
        let config = effective_config(&cli(&[
            "--upstream",
            "127.0.0.1:1",
            "--upstream",
            "localhost:2",
        ]))
        .unwrap();
        let servers = vec![
            ServerSpec {
                host: "127.0.0.1".into(),
                port: 1,
                weight: 1,
            },
            ServerSpec {
                host: "localhost".into(),
                port: 2,
                weight: 1,
            },
        ];
        assert_eq!(
            config.proxy,
            ProxyConfig {
                upstreams: vec![UpstreamConfig::new("default", servers)],
                routes: vec![ProxyRoute {
                    hosts: vec![],
                    prefix: "/".into(),
                    upstream: 0,
                    replace_prefix: None,
                    host: HostHeader::Pass,
                }],
                headers: ForwardHeaders::default(),
            }
        );
        // Nothing else changes.
        let mut rest = config.clone();
        rest.proxy = ProxyConfig::default();
        assert_eq!(rest, Config::default());
        // An IPv6 literal, and the same config through `check`'s writer.
        let config = effective_config(&cli(&["--upstream", "[::1]:8080"])).unwrap();
        assert_eq!(config.proxy.upstreams[0].servers[0].host, "::1");
        assert!(config
            .to_toml()
            .contains("[upstream.default]\nservers = [\"[::1]:8080\"]\n"));
    }

    /// `default` goes in its sorted place among a file's upstreams, and the
    /// file's routes keep pointing at theirs.
    #[test]
    fn upstream_flags_beside_a_file() {
        let dir = TempFile::new(
            "beside",
            "[upstream.zz]\nservers = [\"z:1\"]\n[upstream.aa]\nservers = [\"a:1\"]\n\
             [[route]]\nprefix = \"/z/\"\nupstream = \"zz\"\n\
             [[route]]\nprefix = \"/a/\"\nupstream = \"aa\"\n\
             [[route]]\nprefix = \"/\"\nupstream = \"zz\"\nhost = [\"z.example\"]\n",
        );
        let c = cli(&["-c", &dir.path(), "--upstream", "d:1"]);
        let p = effective_config(&c).unwrap().proxy;
        let names: Vec<&str> = p.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["aa", "default", "zz"]);
        let routes: Vec<(&str, &str, usize)> = p
            .routes
            .iter()
            .map(|r| {
                (
                    r.prefix.as_str(),
                    p.upstreams[r.upstream].name.as_str(),
                    r.hosts.len(),
                )
            })
            .collect();
        assert_eq!(
            routes,
            [
                ("/z/", "zz", 0),
                ("/a/", "aa", 0),
                ("/", "zz", 1),
                ("/", "default", 0)
            ]
        );
    }

    #[test]
    fn upstream_flag_errors() {
        let err = |args: &[&str]| effective_config(&cli(args)).unwrap_err().to_string();
        let with_file = |text: &str| {
            let file = TempFile::new("errors", text);
            err(&["-c", &file.path(), "--upstream", "127.0.0.1:1"])
        };
        assert_eq!(
            err(&["--upstream", "http://127.0.0.1:1/"]),
            "--upstream: expected HOST:PORT like \"127.0.0.1:9000\", \"[::1]:9000\" or \"app.internal:9000\" without a scheme, got \"http://127.0.0.1:1/\" (write \"127.0.0.1:1\"; http:// is not needed)"
        );
        assert_eq!(
            err(&["--upstream", "8080"]),
            "--upstream: expected HOST:PORT like \"127.0.0.1:9000\", \"[::1]:9000\" or \"app.internal:9000\", got \"8080\" (no port)"
        );
        assert_eq!(
            err(&["--upstream", "a:0"]),
            "--upstream: expected a port from 1 to 65535, got \"0\" (in \"a:0\")"
        );
        assert_eq!(
            err(&["--upstream", "a:1", "--upstream", "A:1"]),
            "--upstream: a:1 is listed twice"
        );
        assert_eq!(
            with_file("[upstream.default]\nservers = [\"b:1\"]\n"),
            "--upstream: the config already defines [upstream.default], the name this flag uses; rename it there, or leave out --upstream"
        );
        assert_eq!(
            with_file("[upstream.b]\nservers = [\"b:1\"]\n[[route]]\nprefix = \"/\"\nupstream = \"b\"\n"),
            "--upstream: \"/\" is already a proxy route for any host (this flag adds a route for every path)"
        );
        assert!(with_file("[[route]]\nprefix = \"/\"\n")
            .starts_with("--upstream: \"/\" is already a static route"));
    }

    /// A config file in a fresh directory, removed on drop.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(tag: &str, text: &str) -> TempFile {
            let dir = std::env::temp_dir().join(format!(
                "ringside-cli-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("ringside.toml"), text).unwrap();
            TempFile(dir)
        }

        fn path(&self) -> String {
            self.0.join("ringside.toml").to_str().unwrap().to_owned()
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
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
