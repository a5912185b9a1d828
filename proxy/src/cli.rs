//! The command line.
//!
//! ```text
//! ringside [OPTIONS] [COMMAND]
//!   -c, --config FILE     read FILE (otherwise the built-in default config)
//!   --listen ADDR         repeatable; replaces the config's listen list
//!   --workers N|auto
//!   --root DIR
//!   --backend NAME
//!   --coalesce-wait DUR   io_uring: park for a batch of completions up to
//!                         DUR when several requests are in progress
//!   --upstream HOST:PORT  repeatable; proxy every path to these servers
//!   --fastcgi ADDR        run scripts beneath the root with the FastCGI
//!                         server at HOST:PORT, unix:PATH or /PATH
//!   --fastcgi-max-conns N at most N connections to the FastCGI server,
//!                         all workers together (else its capacity is
//!                         learned from how it answers)
//!   --admin ADDR|off      the /metrics and /healthz listener
//!   --access-log PATH     log each request to PATH (combined format)
//!   --pid-file PATH       the pid file: written at start, read by
//!                         `reload`, `upgrade` and `check`
//!   -V, --version
//!   -t, --test            as `check`
//!   --reuse-port-with-others
//!                         start although another process listens on a
//!                         listen address (the kernel splits connections)
//! COMMANDS:
//!   check [FILE]          test FILE (else --config, else the built-in
//!                         config) as nginx -t does; print the effective
//!                         config
//!   reload [--pid-file PATH | --config FILE]
//!                         have the running server re-read its config and
//!                         exit with its verdict (the server: the pid file
//!                         from the flag, else FILE's pid_file, else the
//!                         ringside serving FILE's listen address, else
//!                         /run/ringside/ringside.pid)
//!   upgrade [--exe PATH]  start the binary (the server's own path, else
//!                         PATH) on the running server's listeners; the
//!                         old process drains once it is ready (found as
//!                         `reload` finds it; exit 1 with why if it failed)
//!
//! The flags may come after the command too: `check FILE --listen ADDR`.
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
//!
//! `--fastcgi ADDR` does the same with an upstream called `fastcgi`
//! (`protocol = "fastcgi"`, the defaults otherwise) whose route runs `.php`
//! scripts beneath the served directory (`--root`, else the config's root),
//! with `index.php` for a path ending in `/`. ADDR is `HOST:PORT`,
//! `unix:PATH` or an absolute socket path; a relative `unix:` path is taken
//! from the working directory. It and `--upstream` both claim every path,
//! so they are refused together.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::{Parser, Subcommand};

use crate::config::addr::{
    add_listen, server_entry, server_text, socket_path, unix_server, UNIX_PREFIX,
};
use crate::config::cx::root_dir;
use crate::config::fastcgi::{default_index, EXTENSION};
use crate::config::upstream::{catch_all_route, insert_upstream, route_conflict};
use crate::config::validate::{backend, parse_workers};
use crate::config::{Config, ConfigError};
use crate::upstream::settings::{
    FastCgiRoute, FastCgiSettings, Protocol, ProxyRoute, ServerSpec, UpstreamConfig,
    UpstreamProtocol,
};

#[derive(Clone, Debug, Parser)]
#[command(
    name = "ringside",
    version = version_detail(),
    about = "A thread-per-core HTTP server and reverse proxy"
)]
pub struct Cli {
    /// Read the configuration from FILE.
    #[arg(short, long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Listen on ADDR (repeatable); replaces the config's listen list.
    #[arg(long, value_name = "ADDR", global = true)]
    pub listen: Vec<String>,

    /// Number of workers, or "auto" for one per CPU (no more than the
    /// cgroup CPU quota pays for).
    #[arg(long, value_name = "N|auto", global = true)]
    pub workers: Option<String>,

    /// Serve static files from DIR.
    #[arg(long, value_name = "DIR", global = true)]
    pub root: Option<PathBuf>,

    /// I/O backend: auto, io-uring, epoll, kqueue, devpoll or glommio.
    #[arg(long, value_name = "NAME", global = true)]
    pub backend: Option<String>,

    /// io_uring: with several requests in progress, park for a batch of
    /// completions up to DUR (default "100us"; 0: off).
    #[arg(long, value_name = "DUR", global = true)]
    pub coalesce_wait: Option<String>,

    /// Proxy every path to HOST:PORT (repeatable): upstream "default".
    #[arg(long, value_name = "HOST:PORT", global = true)]
    pub upstream: Vec<String>,

    /// Run scripts beneath the root with the FastCGI server at ADDR
    /// (HOST:PORT, unix:PATH or /PATH): upstream "fastcgi".
    #[arg(long, value_name = "ADDR", global = true)]
    pub fastcgi: Option<String>,

    /// With --fastcgi: at most N connections to the server, all workers
    /// together; without it, its capacity is learned from how it answers.
    #[arg(long, value_name = "N", requires = "fastcgi", global = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub fastcgi_max_conns: Option<u32>,

    /// The admin listener (/metrics, /healthz): HOST:PORT, or "off".
    #[arg(long, value_name = "ADDR|off", global = true)]
    pub admin: Option<String>,

    /// Log each request to PATH, in the combined format.
    #[arg(long, value_name = "PATH", global = true)]
    pub access_log: Option<PathBuf>,

    /// The pid file: a start writes its process id there; `reload` and
    /// `check` read it to find the running server.
    #[arg(long, value_name = "PATH", global = true)]
    pub pid_file: Option<PathBuf>,

    /// Test the configuration and exit, as `ringside check` does.
    #[arg(short = 't', long = "test")]
    pub test: bool,

    /// Start even where another process listens on a listen address
    /// already: the kernel then splits connections between the two
    /// (SO_REUSEPORT), as for a second binary taking over from this one.
    #[arg(long, global = true)]
    pub reuse_port_with_others: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Test the configuration as `nginx -t` does: validate FILE (or
    /// --config FILE, or the built-in config), open every file it names,
    /// try its listen addresses and resolve its upstream names; print the
    /// effective configuration.
    Check { file: Option<PathBuf> },
    /// Tell the running server to re-read its configuration and wait for
    /// its verdict (exit 1 with the reason when it keeps the old one). The
    /// server is found by --pid-file, else by the pid_file of --config,
    /// else as the ringside serving the config's listen address, else by
    /// /run/ringside/ringside.pid.
    Reload,
    /// Start a new ringside binary on the running server's listeners
    /// without refusing or dropping a connection (as SIGUSR2 does): the
    /// server hands its sockets to the new process and drains once that
    /// one is ready. Exits 1, with why, when the new process fails; the old
    /// one then keeps serving. The server is found as for `reload`.
    Upgrade {
        /// The binary to start (default: the server's own executable path).
        #[arg(long, value_name = "PATH")]
        exe: Option<PathBuf>,
    },
}

/// Where `ringside reload` looks when neither flag nor config names a pid file.
pub const DEFAULT_PID_FILE: &str = "/run/ringside/ringside.pid";

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
        // The flag's listeners are plain HTTP.
        config
            .tls
            .set_plain_listeners(listen.len())
            .map_err(|m| ConfigError::flag("--listen", m))?;
        // Nor do they take a PROXY protocol header or turn HTTP/2 off.
        config.server.http2 = vec![true; listen.len()];
        config.server.proxy_protocol = vec![None; listen.len()];
        config.server.listen = listen;
        config.unix_listen.clear();
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
    if let Some(text) = &cli.coalesce_wait {
        let value = crate::config::file::DurationValue::Text(text.clone());
        config.runtime.coalesce_wait = crate::config::validate::coalesce_wait(&value)
            .map_err(|m| ConfigError::flag("--coalesce-wait", m))?;
    }
    if let Some(a) = &cli.admin {
        config.ops.admin =
            crate::config::ops::admin_listen(a).map_err(|m| ConfigError::flag("--admin", m))?;
    }
    if let Some(p) = &cli.access_log {
        let log =
            config
                .ops
                .access_log
                .get_or_insert_with(|| crate::config::ops::AccessLogConfig {
                    path: p.clone(),
                    format: crate::config::ops::LogFormat::Combined,
                    buffer: 64 << 10,
                    flush_every: std::time::Duration::from_secs(1),
                });
        log.path = p.clone();
    }
    if let Some(p) = &cli.pid_file {
        config.ops.pid_file = Some(p.clone());
    }
    if cli.fastcgi.is_some() && !cli.upstream.is_empty() {
        return Err(ConfigError::flag(
            "--fastcgi",
            "not together with --upstream: both send every path to their upstream; choose one",
        ));
    }
    if !cli.upstream.is_empty() {
        add_flag_upstream(config, &cli.upstream).map_err(|m| ConfigError::flag("--upstream", m))?;
    }
    if let Some(addr) = &cli.fastcgi {
        add_flag_fastcgi(config, addr, cli.fastcgi_max_conns)
            .map_err(|m| ConfigError::flag("--fastcgi", m))?;
    }
    Ok(())
}

/// The name of the upstream `--upstream` builds.
pub const FLAG_UPSTREAM: &str = "default";

/// The name of the upstream `--fastcgi` builds.
pub const FLAG_FASTCGI: &str = "fastcgi";

/// `--upstream A --upstream B`: upstream "default" over A and B, and a route
/// for every path to it.
fn add_flag_upstream(config: &mut Config, addrs: &[String]) -> Result<(), String> {
    let mut servers: Vec<ServerSpec> = Vec::with_capacity(addrs.len());
    for addr in addrs {
        let server = server_entry(addr, Protocol::Http, Path::new(""))?;
        if servers.contains(&server) {
            return Err(format!("{} is listed twice", server_text(&server)));
        }
        servers.push(server);
    }
    let up = UpstreamConfig::new(FLAG_UPSTREAM, servers);
    add_catch_all(config, up, None, "--upstream")
}

/// `--fastcgi ADDR`: upstream "fastcgi" over ADDR, and a route for every
/// path that runs scripts beneath the config's root.
fn add_flag_fastcgi(config: &mut Config, addr: &str, max_conns: Option<u32>) -> Result<(), String> {
    let up = UpstreamConfig {
        protocol: UpstreamProtocol::FastCgi(FastCgiSettings {
            max_conns,
            ..FastCgiSettings::default()
        }),
        ..UpstreamConfig::new(FLAG_FASTCGI, vec![fastcgi_addr(addr)?])
    };
    let script = FastCgiRoute {
        root: config.root.clone(),
        extension: EXTENSION.to_owned(),
        index: default_index(EXTENSION),
    };
    add_catch_all(config, up, Some(script), "--fastcgi")
}

/// `--fastcgi`'s ADDR: `HOST:PORT`, `unix:PATH` or an absolute socket path;
/// a relative path is taken from the working directory.
pub fn fastcgi_addr(text: &str) -> Result<ServerSpec, String> {
    if text.starts_with('/') {
        return socket_path(text, Path::new("")).map(|p| unix_server(p, 1));
    }
    server_entry(text, Protocol::FastCgi, Path::new("")).map_err(|m| {
        if text.starts_with(UNIX_PREFIX) {
            m
        } else {
            format!("{m}; or a unix socket, like \"unix:/run/php/php-fpm.sock\"")
        }
    })
}

/// Adds `up` and a route for every path to it, unless the config has an
/// upstream of that name or a route for every path already.
fn add_catch_all(
    config: &mut Config,
    up: UpstreamConfig,
    fastcgi: Option<FastCgiRoute>,
    flag: &str,
) -> Result<(), String> {
    let proxy = &mut config.proxy;
    if proxy.upstreams.iter().any(|u| u.name == up.name) {
        return Err(format!(
            "the config already defines [upstream.{}], the name this flag uses; rename it there, or leave out {flag}",
            up.name
        ));
    }
    let route = catch_all_route(0, fastcgi);
    let statics = config.statics.routes.iter().map(|r| r.prefix.as_str());
    route_conflict(&route, &proxy.routes, statics)
        .map_err(|m| format!("{m} (this flag adds a route for every path)"))?;
    let at = insert_upstream(proxy, up)?;
    proxy.routes.push(ProxyRoute {
        upstream: at,
        ..route
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::addr::MAX_UNIX_PATH;
    use crate::upstream::settings::{ForwardHeaders, ForwardPath, HostHeader, ProxyConfig};
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
                file: Some("x.toml".into())
            })
        );
        let c = cli(&["check", "-c", "y.toml"]);
        assert_eq!(c.command, Some(Command::Check { file: None }));
        assert_eq!(c.config.as_deref(), Some(Path::new("y.toml")));
        let c = cli(&["-t", "-c", "y.toml"]);
        assert!(c.test);
        assert_eq!(c.command, None);
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
                unix: None,
            },
            ServerSpec {
                host: "localhost".into(),
                port: 2,
                weight: 1,
                unix: None,
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
                    fastcgi: None,
                    forward_path: ForwardPath::Normalized,
                    upgrade: vec![],
                    grpc: false,
                    cache: None,
                }],
                headers: ForwardHeaders::default(),
                encoded_slash: Default::default(),
                path_parameters: Default::default(),
                allow_trace: false,
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
            .contains("[upstream.default]\nprotocol = \"http\"\nservers = [\"[::1]:8080\"]\n"));
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

    /// What `--fastcgi` builds over `server`, running scripts beneath `root`.
    fn fastcgi_proxy(server: ServerSpec, root: &Path) -> ProxyConfig {
        ProxyConfig {
            upstreams: vec![UpstreamConfig {
                protocol: UpstreamProtocol::FastCgi(FastCgiSettings::default()),
                ..UpstreamConfig::new("fastcgi", vec![server])
            }],
            routes: vec![ProxyRoute {
                hosts: vec![],
                prefix: "/".into(),
                upstream: 0,
                replace_prefix: None,
                host: HostHeader::Pass,
                fastcgi: Some(FastCgiRoute {
                    root: root.to_path_buf(),
                    extension: ".php".into(),
                    index: "index.php".into(),
                }),
                forward_path: ForwardPath::Normalized,
                upgrade: vec![],
                grpc: false,
                cache: None,
            }],
            headers: ForwardHeaders::default(),
            encoded_slash: Default::default(),
            path_parameters: Default::default(),
            allow_trace: false,
        }
    }

    fn unix_spec(path: &str) -> ServerSpec {
        ServerSpec {
            host: path.into(),
            port: 0,
            weight: 1,
            unix: Some(path.into()),
        }
    }

    #[test]
    fn fastcgi_flag_builds_a_script_route() {
        let dir = TempFile::new("fastcgi-root", "");
        let root = std::fs::canonicalize(&dir.0).unwrap();
        let config = effective_config(&cli(&[
            "--fastcgi",
            "127.0.0.1:9000",
            "--root",
            dir.0.to_str().unwrap(),
        ]))
        .unwrap();
        let tcp = ServerSpec {
            host: "127.0.0.1".into(),
            port: 9000,
            weight: 1,
            unix: None,
        };
        assert_eq!(config.proxy, fastcgi_proxy(tcp, &root));
        // The static root is the same directory; nothing else changes.
        assert_eq!(config.root, root);
        let mut rest = config.clone();
        rest.proxy = ProxyConfig::default();
        let mut want = Config::default();
        want.set_root(root.clone());
        assert_eq!(rest, want);

        // Unix sockets, written three ways; the root defaults to ".".
        let cwd = std::env::current_dir().unwrap();
        let here = Config::default().root;
        for (addr, path) in [
            ("unix:/run/php.sock", PathBuf::from("/run/php.sock")),
            ("/run/php.sock", PathBuf::from("/run/php.sock")),
            ("unix:php.sock", cwd.join("php.sock")),
        ] {
            let config = effective_config(&cli(&["--fastcgi", addr])).unwrap();
            let spec = unix_spec(path.to_str().unwrap());
            assert_eq!(config.proxy, fastcgi_proxy(spec, &here), "{addr}");
        }

        // What `check` would print reads back the same.
        let config = effective_config(&cli(&["--fastcgi", "unix:/run/php.sock"])).unwrap();
        let text = config.to_toml();
        assert!(
            text.contains(
                "[upstream.fastcgi]\nprotocol = \"fastcgi\"\nservers = [\"unix:/run/php.sock\"]\ncapacity_probe = \"50ms\"\nqueue_size = 1024\nqueue_timeout = \"10s\"\nkeep_conn = true\n"
            ),
            "{text}"
        );
        let file = TempFile::new("fastcgi-toml", &text);
        let back = Config::load(Path::new(&file.path())).unwrap();
        assert_eq!(back.proxy, config.proxy);
    }

    /// Beside a file: "fastcgi" in its sorted place, and the route runs
    /// scripts from the file's root, or from --root, which routes that ran
    /// scripts from the file's root follow.
    #[test]
    fn fastcgi_flag_beside_a_file() {
        let file = TempFile::new(
            "fastcgi-beside",
            "[server]\nroot = \"www\"\n[upstream.app]\nservers = [\"a:1\"]\n\
             [upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:9000\"]\n\
             [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\n\
             [[route]]\nprefix = \"/php/\"\nupstream = \"php\"\n\
             [[route]]\nprefix = \"/lib/\"\nupstream = \"php\"\nroot = \"lib\"\n",
        );
        for sub in ["www", "lib", "other"] {
            std::fs::create_dir_all(file.0.join(sub)).unwrap();
        }
        let canon = |sub: &str| std::fs::canonicalize(file.0.join(sub)).unwrap();
        let p = effective_config(&cli(&["-c", &file.path(), "--fastcgi", "b:9000"]))
            .unwrap()
            .proxy;
        let names: Vec<&str> = p.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["app", "fastcgi", "php"]);
        let routes = |p: &ProxyConfig| -> Vec<(String, String, Option<PathBuf>)> {
            p.routes
                .iter()
                .map(|r| {
                    (
                        r.prefix.clone(),
                        p.upstreams[r.upstream].name.clone(),
                        r.fastcgi.as_ref().map(|f| f.root.clone()),
                    )
                })
                .collect()
        };
        let s = |x: &str| x.to_owned();
        assert_eq!(
            routes(&p),
            [
                (s("/api/"), s("app"), None),
                (s("/php/"), s("php"), Some(canon("www"))),
                (s("/lib/"), s("php"), Some(canon("lib"))),
                (s("/"), s("fastcgi"), Some(canon("www"))),
            ]
        );
        let other = file.0.join("other");
        let c = cli(&[
            "-c",
            &file.path(),
            "--root",
            other.to_str().unwrap(),
            "--fastcgi",
            "b:9000",
        ]);
        let p = effective_config(&c).unwrap().proxy;
        assert_eq!(
            routes(&p),
            [
                (s("/api/"), s("app"), None),
                (s("/php/"), s("php"), Some(canon("other"))),
                (s("/lib/"), s("php"), Some(canon("lib"))),
                (s("/"), s("fastcgi"), Some(canon("other"))),
            ]
        );
    }

    #[test]
    fn fastcgi_flag_errors() {
        let err = |args: &[&str]| effective_config(&cli(args)).unwrap_err().to_string();
        let with_file = |text: &str| {
            let file = TempFile::new("fastcgi-errors", text);
            err(&["-c", &file.path(), "--fastcgi", "127.0.0.1:9000"])
        };
        assert_eq!(
            err(&["--fastcgi", "127.0.0.1:9000", "--upstream", "127.0.0.1:1"]),
            "--fastcgi: not together with --upstream: both send every path to their upstream; choose one"
        );
        assert_eq!(
            err(&["--fastcgi", "php-fpm"]),
            "--fastcgi: expected HOST:PORT like \"127.0.0.1:9000\", \"[::1]:9000\" or \"app.internal:9000\", got \"php-fpm\" (no port); or a unix socket, like \"unix:/run/php/php-fpm.sock\""
        );
        assert_eq!(
            err(&["--fastcgi", "unix:"]),
            "--fastcgi: expected a socket path after \"unix:\", like \"unix:/run/php/php-fpm.sock\" (in \"unix:\")"
        );
        assert_eq!(
            err(&["--fastcgi", "unix:///run/php.sock"]),
            "--fastcgi: expected \"unix:\" and a path like \"unix:/run/php/php-fpm.sock\", got \"unix:///run/php.sock\" (write \"unix:/run/php.sock\")"
        );
        assert_eq!(
            err(&["--fastcgi", "/run/php/"]),
            "--fastcgi: expected the path of a socket file, got the directory \"/run/php/\""
        );
        let long = format!("/{}", "s".repeat(MAX_UNIX_PATH));
        assert!(err(&["--fastcgi", &long]).ends_with(&format!(
            "a unix socket path may have at most {MAX_UNIX_PATH}"
        )));
        assert_eq!(
            err(&["--fastcgi", "a:1", "--root", "/nonexistent/ringside-root"]),
            "--root: cannot open \"/nonexistent/ringside-root\": No such file or directory"
        );
        assert_eq!(
            with_file("[upstream.fastcgi]\nservers = [\"b:1\"]\n"),
            "--fastcgi: the config already defines [upstream.fastcgi], the name this flag uses; rename it there, or leave out --fastcgi"
        );
        assert_eq!(
            with_file("[upstream.b]\nservers = [\"b:1\"]\n[[route]]\nprefix = \"/\"\nupstream = \"b\"\n"),
            "--fastcgi: \"/\" is already a proxy route for any host (this flag adds a route for every path)"
        );
        assert!(with_file("[[route]]\nprefix = \"/\"\n")
            .starts_with("--fastcgi: \"/\" is already a static route"));
        // A catch-all for some hosts only leaves room for it.
        let file = TempFile::new(
            "fastcgi-hosts",
            "[upstream.b]\nservers = [\"b:1\"]\n[[route]]\nprefix = \"/\"\nupstream = \"b\"\nhost = [\"b.example\"]\n",
        );
        let p = effective_config(&cli(&["-c", &file.path(), "--fastcgi", "a:1"]))
            .unwrap()
            .proxy;
        assert_eq!(p.routes.len(), 2);
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
