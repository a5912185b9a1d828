//! Unit tests for both config layers: defaults, every validation error with
//! its position, toml errors, and the `to_toml` round trip.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ringside_runtime::config::Limits;
use ringside_runtime::config::{
    Affinity, BackendChoice, Http2, RuntimeConfig, ServerConfig, Timeouts, Workers,
};

use super::cpus::allowed_cpus;
use super::error::Position;
use super::{Config, ConfigError};

const NAME: &str = "ringside.toml";

/// `config` written out as `ringside check` writes it, to `path`, and
/// loaded back; the text it writes again must be the same.
pub(super) fn written_back(config: &Config, path: &Path) -> Config {
    let text = config.to_toml();
    fs::write(path, &text).unwrap();
    let back = Config::load(path).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.to_toml(), text);
    back
}

/// The one TOML example holding `marker` in the README and in the `//!`
/// docs of `module` (whose source is `module_src`), with where each came
/// from: every documented example must be a valid config.
pub(super) fn documented_examples(
    module: &'static str,
    module_src: &str,
    marker: &str,
) -> Vec<(&'static str, String)> {
    let module_doc = module_src
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let readme = include_str!("../../../README.md").to_owned();
    [("README.md", readme), (module, module_doc)]
        .into_iter()
        .map(|(source, doc)| {
            let blocks: Vec<&str> = doc
                .split("```toml\n")
                .skip(1)
                .filter_map(|b| b.split("```").next())
                .filter(|b| b.contains(marker))
                .collect();
            assert_eq!(blocks.len(), 1, "{source}: examples holding {marker:?}");
            (source, blocks[0].to_owned())
        })
        .collect()
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new(NAME))
}

/// The Display of the error `text` gives.
fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("ringside-config-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn empty_file_is_the_default() {
    let config = parse("").unwrap();
    let default = Config::default();
    assert_eq!(config.runtime, RuntimeConfig::default());
    assert_eq!(config.server, ServerConfig::default());
    assert_eq!(config.root, default.root);
    assert_eq!(config.source.as_deref(), Some(Path::new(NAME)));
    assert_eq!(default.source, None);
    assert_eq!(
        default.server.listen,
        vec![SocketAddr::from(([127, 0, 0, 1], 8080))]
    );
    assert_eq!(default.runtime.workers, Workers::Auto);
    assert_eq!(default.root, fs::canonicalize(".").unwrap());
    // Empty sections are fine too.
    let config = parse("[runtime]\n[server]\n[limits]\n[timeouts]\n").unwrap();
    assert_eq!(config.runtime, RuntimeConfig::default());
    assert_eq!(config.server, ServerConfig::default());
}

#[test]
fn full_file() {
    let dir = TempDir::new("full");
    fs::create_dir(dir.0.join("www")).unwrap();
    let text = r#"
[runtime]
workers = 3
cpu_affinity = false
backend = "epoll"
ring_entries = 256
coalesce_wait = "200us"

[server]
listen = ["127.0.0.1:8081", "[::1]:8082"]
backlog = 128
root = "www"

[limits]
max_request_line = 4096
max_head = "32k"
max_headers = 100
max_body = "2g"
max_connections = 100

[timeouts]
header_read = "500ms"
keepalive = 5
body_read = "2m"
send = "1h"
shutdown_grace = "1s"
min_rate = "1k"

[http2]
max_concurrent_streams = 64
stream_window = "128k"
connection_window = "2m"
flood_budget = 500
"#;
    let path = dir.0.join(NAME);
    fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    assert_eq!(
        config.runtime,
        RuntimeConfig {
            workers: Workers::Count(3),
            affinity: Affinity::Off,
            backend: BackendChoice::Epoll,
            ring_entries: 256,
            coalesce_wait: Duration::from_micros(200),
        }
    );
    assert_eq!(
        config.server,
        ServerConfig {
            listen: vec![
                "127.0.0.1:8081".parse().unwrap(),
                "[::1]:8082".parse().unwrap()
            ],
            backlog: 128,
            limits: Limits {
                max_request_line: 4096,
                max_head: 32 * 1024,
                max_headers: 100,
                max_body: 2 << 30,
                max_client_connections: 0,
                client_connections_status: 429,
            },
            timeouts: Timeouts {
                header_read: Duration::from_millis(500),
                keepalive_idle: Duration::from_secs(5),
                body_read: Duration::from_secs(120),
                send: Duration::from_secs(3600),
                shutdown_grace: Duration::from_secs(1),
                min_rate: 1024,
            },
            max_connections: 100,
            tls: Vec::new(),
            http2: vec![true, true],
            // Asked for by default; served only where a listener has TLS.
            http3: vec![true, true],
            h3: ringside_runtime::config::Http3::default(),
            proxy_protocol: vec![None, None],
            h2: Http2 {
                max_concurrent_streams: 64,
                stream_window: 128 * 1024,
                connection_window: 2 << 20,
                flood_budget: 500,
            },
        }
    );
    // A relative root is taken from the file's directory, not the cwd.
    assert_eq!(config.root, fs::canonicalize(dir.0.join("www")).unwrap());
    assert_eq!(config.source, Some(path));
}

#[test]
fn backends() {
    for (name, want) in [
        ("auto", BackendChoice::Auto),
        ("io-uring", BackendChoice::IoUring),
        ("epoll", BackendChoice::Epoll),
        ("kqueue", BackendChoice::Kqueue),
        ("devpoll", BackendChoice::Devpoll),
        ("glommio", BackendChoice::Glommio),
    ] {
        let config = parse(&format!("[runtime]\nbackend = \"{name}\"\n")).unwrap();
        assert_eq!(config.runtime.backend, want);
    }
}

/// Each refused value, with the exact position of its value.
#[test]
fn validation_errors() {
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("[runtime]\nworkers = 0\n",
         "ringside.toml:2:11: [runtime] workers: expected \"auto\" or a positive integer, got 0"),
        ("\n\n\n\n\n\n[runtime]\nworkers = -4\n",
         "ringside.toml:8:11: [runtime] workers: expected \"auto\" or a positive integer, got -4"),
        ("[runtime]\nworkers = \"lots\"\n",
         "ringside.toml:2:11: [runtime] workers: expected \"auto\" or a positive integer, got \"lots\""),
        ("[runtime]\nworkers = true\n",
         "ringside.toml:2:11: [runtime] workers: expected \"auto\" or a positive integer, got true"),
        ("[runtime]\nbackend = \"uring\"\n",
         "ringside.toml:2:11: [runtime] backend: expected one of \"auto\", \"io-uring\", \"epoll\", \"kqueue\", \"devpoll\", \"glommio\", got \"uring\""),
        ("[runtime]\nring_entries = 0\n",
         "ringside.toml:2:16: [runtime] ring_entries: expected an integer from 1 to 32768, got 0"),
        ("[runtime]\nring_entries = 65536\n",
         "ringside.toml:2:16: [runtime] ring_entries: expected an integer from 1 to 32768, got 65536"),
        ("[runtime]\ncoalesce_wait = \"20ms\"\n",
         "ringside.toml:2:17: [runtime] coalesce_wait: expected at most \"10ms\", got \"20ms\""),
        ("[runtime]\ncoalesce_wait = \"soon\"\n",
         "ringside.toml:2:17: [runtime] coalesce_wait: expected a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds, got \"soon\""),
        ("[runtime]\ncpu_affinity = []\n",
         "ringside.toml:2:16: [runtime] cpu_affinity: expected at least one CPU (false turns pinning off)"),
        ("[runtime]\ncpu_affinity = \"on\"\n",
         "ringside.toml:2:16: [runtime] cpu_affinity: expected \"auto\", true, false or a list of CPU numbers like [0, 2, 4], got \"on\""),
        ("[runtime]\ncpu_affinity = [-1]\n",
         "ringside.toml:2:17: [runtime] cpu_affinity: expected a CPU number, got -1"),
        ("[server]\nlisten = []\n",
         "ringside.toml:2:10: [server] listen: expected at least one address"),
        ("[server]\nlisten = [\"127.0.0.1:80\", \"nonsense\"]\n",
         "ringside.toml:2:27: [server] listen: expected HOST:PORT like \"127.0.0.1:8080\", \"[::1]:8080\" or \"localhost:8080\", got \"nonsense\""),
        ("[server]\nlisten = [\"127.0.0.1:80\", \"127.0.0.1:80\"]\n",
         "ringside.toml:2:27: [server] listen: 127.0.0.1:80 is listed twice"),
        ("[server]\nlisten = [\"127.0.0.1:99999\"]\n",
         "ringside.toml:2:11: [server] listen: expected HOST:PORT like \"127.0.0.1:8080\", \"[::1]:8080\" or \"localhost:8080\", got \"127.0.0.1:99999\""),
        ("[server]\nlisten = \"127.0.0.1:80\"\n",
         "ringside.toml:2:10: [server] listen: expected a list of addresses, like [\"0.0.0.0:80\"], got the string \"127.0.0.1:80\"; write it in brackets: [\"127.0.0.1:80\"]"),
        ("[server]\nbacklog = 0\n",
         "ringside.toml:2:11: [server] backlog: expected an integer from 1 to 65535, got 0"),
        ("[server]\nbacklog = 65536\n",
         "ringside.toml:2:11: [server] backlog: expected an integer from 1 to 65535, got 65536"),
        ("[server]\nroot = \"no-such-dir-here\"\n",
         "ringside.toml:2:8: [server] root: cannot open \"no-such-dir-here\": No such file or directory"),
        ("[server]\nroot = \"Cargo.toml\"\n",
         "ringside.toml:2:8: [server] root: \"Cargo.toml\" is not a directory"),
        ("[limits]\nmax_request_line = 0\n",
         "ringside.toml:2:20: [limits] max_request_line: expected a size from 1 to 16384 bytes, got 0 (max_head is 16384)"),
        ("[limits]\nmax_request_line = \"20k\"\n",
         "ringside.toml:2:20: [limits] max_request_line: expected a size from 1 to 16384 bytes, got \"20k\" (max_head is 16384)"),
        ("[limits]\nmax_head = \"64k\"\n",
         "ringside.toml:2:12: [limits] max_head: expected a size from 1 to 65535 bytes, got \"64k\""),
        ("[limits]\nmax_head = 0\n",
         "ringside.toml:2:12: [limits] max_head: expected a size from 1 to 65535 bytes, got 0"),
        ("[limits]\nmax_head = \"4k\"\n",
         "ringside.toml:2:12: [limits] max_head: expected a size of at least 8192 bytes (the default max_request_line), got \"4k\""),
        ("[limits]\nmax_head = -1\n",
         "ringside.toml:2:12: [limits] max_head: expected a size like 8192, \"16k\" or \"1m\", got -1"),
        ("[limits]\nmax_head = \"big\"\n",
         "ringside.toml:2:12: [limits] max_head: expected a size like 8192, \"16k\" or \"1m\", got \"big\""),
        ("[limits]\nmax_headers = 0\n",
         "ringside.toml:2:15: [limits] max_headers: expected an integer from 1 to 16384, got 0"),
        ("[limits]\nmax_headers = 16385\n",
         "ringside.toml:2:15: [limits] max_headers: expected an integer from 1 to 16384, got 16385"),
        ("[limits]\nmax_body = \"0k\"\n",
         "ringside.toml:2:12: [limits] max_body: expected a size of at least 1 bytes, got \"0k\""),
        ("[limits]\nmax_body = 1.5\n",
         "ringside.toml:2:12: [limits] max_body: expected a size like 8192, \"16k\" or \"1m\", got 1.5"),
        // Found by fuzz/ (regress-cache-max-bytes-below-default-file): the
        // default cache_max_file was not checked, so to_toml() did not load.
        ("[static]\ncache_max_bytes = \"1k\"\n",
         "ringside.toml:2:19: [static] cache_max_bytes: expected a size of at least 65536 bytes (the default cache_max_file), got \"1k\""),
        ("[static]\ncache_max_bytes = \"1k\"\ncache_max_file = \"2k\"\n",
         "ringside.toml:3:18: [static] cache_max_file: expected a size from 0 to 1024 bytes, got \"2k\" (at most cache_max_bytes)"),
        ("[static]\ncache_max_open = -1\n",
         "ringside.toml:2:18: [static] cache_max_open: expected an integer from 0 to 1048576, got -1"),
        ("[timeouts]\nheader_read = \"0s\"\n",
         "ringside.toml:2:15: [timeouts] header_read: expected a nonzero duration, got \"0s\""),
        ("[timeouts]\nkeepalive = 0\n",
         "ringside.toml:2:13: [timeouts] keepalive: expected a nonzero duration, got 0"),
        ("[timeouts]\nbody_read = \"1.5s\"\n",
         "ringside.toml:2:13: [timeouts] body_read: expected a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds, got \"1.5s\""),
        ("[timeouts]\nsend = -3\n",
         "ringside.toml:2:8: [timeouts] send: expected a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds, got -3"),
        ("[timeouts]\nshutdown_grace = \"1d\"\n",
         "ringside.toml:2:18: [timeouts] shutdown_grace: expected a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds, got \"1d\""),
        // Inline tables and dotted keys are located too.
        ("runtime = { workers = 0 }\n",
         "ringside.toml:1:23: [runtime] workers: expected \"auto\" or a positive integer, got 0"),
        ("runtime.workers = 0\n",
         "ringside.toml:1:19: [runtime] workers: expected \"auto\" or a positive integer, got 0"),
    ];
    for &(text, want) in cases {
        assert_eq!(error(text), want, "for {text:?}");
    }
}

#[test]
fn error_fields() {
    let err = parse("[runtime]\nworkers = 0\n").unwrap_err();
    assert_eq!(
        err,
        ConfigError::File {
            file: NAME.into(),
            position: Some(Position {
                line: 2,
                column: 11
            }),
            key: Some("[runtime] workers".into()),
            message: "expected \"auto\" or a positive integer, got 0".into(),
        }
    );
}

#[test]
fn unknown_keys_are_named_with_their_line() {
    assert_eq!(
        error("[runtime]\nworkers = 2\nworker = 3\n"),
        "ringside.toml:3:1: [runtime] worker: unknown key, expected one of `workers`, `cpu_affinity`, `backend`, `ring_entries`, `coalesce_wait`; did you mean `workers`?"
    );
    assert_eq!(
        error("[server]\n  listen = [\"127.0.0.1:1\"]\n  port = 80\n"),
        "ringside.toml:3:3: [server] port: unknown key, expected one of `listen`, `backlog`, `root`, `user`, `group`, `pid_file`, `allow`, `deny`, `server_tokens`, `response_headers`, `request_headers`, `error_pages`"
    );
    assert_eq!(
        error("# a comment\n[runtimes]\n"),
        "ringside.toml:2:2: runtimes: unknown key, expected one of `runtime`, `server`, `limits`, `timeouts`, `http2`, `http3`, `static`, `proxy`, `upstream`, `route`, `admin`, `access_log`, `tls`, `vhost`, `rate_limit`, `compression`, `cache`, `rewrite`, `real_ip`, `acme`; did you mean `runtime`?"
    );
    assert_eq!(
        error("verbose = true\n"),
        "ringside.toml:1:1: verbose: unknown key, expected one of `runtime`, `server`, `limits`, `timeouts`, `http2`, `http3`, `static`, `proxy`, `upstream`, `route`, `admin`, `access_log`, `tls`, `vhost`, `rate_limit`, `compression`, `cache`, `rewrite`, `real_ip`, `acme`"
    );
}

#[test]
fn syntax_errors_have_positions() {
    let err = parse("[runtime]\nworkers = \n").unwrap_err();
    let ConfigError::File { position, key, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        *position,
        Some(Position {
            line: 2,
            column: 11
        })
    );
    assert_eq!(*key, None);
    assert!(err.to_string().starts_with("ringside.toml:2:11: "), "{err}");

    let err = error("[runtime\n");
    assert!(err.starts_with("ringside.toml:1:9: "), "{err}");

    let err = error("[runtime]\nworkers = 1\nworkers = 2\n");
    assert!(err.starts_with("ringside.toml:3:1: "), "{err}");
    assert!(
        err.contains("[runtime] workers: given twice (first on line 2)"),
        "{err}"
    );
}

#[test]
fn unreadable_file() {
    let err = Config::load(Path::new("/nonexistent/ringside.toml")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/nonexistent/ringside.toml: cannot read: No such file or directory"
    );
    assert!(matches!(err, ConfigError::Read { .. }));
}

#[test]
fn cpu_lists() {
    let allowed = allowed_cpus();
    let first = allowed[0];
    let config = parse(&format!("[runtime]\ncpu_affinity = [{first}]\n")).unwrap();
    assert_eq!(config.runtime.affinity, Affinity::Cpus(vec![first]));
    if let [a, b, ..] = allowed[..] {
        let config = parse(&format!("[runtime]\ncpu_affinity = [{b}, {a}]\n")).unwrap();
        assert_eq!(config.runtime.affinity, Affinity::Cpus(vec![b, a]));
    }
    assert_eq!(
        parse("[runtime]\ncpu_affinity = true\n")
            .unwrap()
            .runtime
            .affinity,
        Affinity::On
    );
    assert_eq!(
        parse("[runtime]\ncpu_affinity = \"auto\"\n")
            .unwrap()
            .runtime
            .affinity,
        Affinity::Auto
    );
    assert_eq!(
        parse("[runtime]\ncpu_affinity = false\n")
            .unwrap()
            .runtime
            .affinity,
        Affinity::Off
    );
    // The duplicate is reported at its second mention: "[runtime]\ncpu_affinity = [F, F]".
    let col = "cpu_affinity = [".len() + first.to_string().len() + ", ".len() + 1;
    assert_eq!(
        error(&format!("[runtime]\ncpu_affinity = [{first}, {first}]\n")),
        format!("ringside.toml:2:{col}: [runtime] cpu_affinity: CPU {first} is listed twice")
    );
    let beyond = allowed.last().unwrap() + 1;
    let err = error(&format!("[runtime]\ncpu_affinity = [{beyond}]\n"));
    assert!(
        err.starts_with(&format!(
            "ringside.toml:2:17: [runtime] cpu_affinity: CPU {beyond} is not available to this process (available: "
        )),
        "{err}"
    );
}

#[test]
fn listen_resolves_names() {
    let config = parse("[server]\nlisten = [\"localhost:8080\"]\n").unwrap();
    assert!(!config.server.listen.is_empty());
    assert!(config
        .server
        .listen
        .iter()
        .all(|a| a.port() == 8080 && a.ip().is_loopback()));
    let err = error("[server]\nlisten = [\"no-such-host.invalid:80\"]\n");
    assert!(
        err.starts_with(
            "ringside.toml:2:11: [server] listen: cannot resolve \"no-such-host.invalid:80\""
        ),
        "{err}"
    );
}

#[test]
fn proxy_protocol_listeners() {
    let c = parse(
        "[server]\nlisten = [\"127.0.0.1:1\", { addr = \"127.0.0.1:2\", proxy_protocol = true }, \
         { addr = \"127.0.0.1:3\", proxy_protocol = true, trusted = [\"10.0.0.0/8\"] }]\n",
    )
    .unwrap();
    let pp = &c.server.proxy_protocol;
    assert_eq!(pp.len(), 3);
    assert_eq!(pp[0], None);
    let loopback = pp[1].as_ref().unwrap();
    assert_eq!(
        loopback.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        ["127.0.0.0/8", "::1/128"]
    );
    assert_eq!(pp[2].as_ref().unwrap()[0].to_string(), "10.0.0.0/8");
    for (text, want) in [
        (
            "[server]\nlisten = [{ addr = \"127.0.0.1:1\", trusted = [\"10.0.0.0/8\"] }]\n",
            "ringside.toml:2:45: [server] listen: trusted: needs proxy_protocol = true",
        ),
        (
            "[server]\nlisten = [{ addr = \"127.0.0.1:1\", proxy_protocol = true, trusted = [\"10.0.0.1/8\"] }]\n",
            "ringside.toml:2:69: [server] listen: trusted: \"10.0.0.1/8\" has bits set past its prefix length",
        ),
        (
            "[server]\nlisten = [{ addr = \"127.0.0.1:1\", proxy_protocol = true, trusted = [] }]\n",
            "ringside.toml:2:68: [server] listen: trusted: expected at least one address",
        ),
    ] {
        let got = error(text);
        assert!(got.starts_with(want), "{got}\nwanted {want}");
    }
}

#[test]
fn to_toml_round_trips() {
    let dir = TempDir::new("round-trip");
    let path = dir.0.join(NAME);
    let allowed = allowed_cpus();
    let mut configs = vec![Config::default(), parse("").unwrap()];
    configs.push(
        parse(&format!(
            r#"
[runtime]
workers = 7
cpu_affinity = [{}]
backend = "glommio"
ring_entries = 4096
[server]
listen = ["0.0.0.0:1", "[::]:2", "127.0.0.1:3", {{ addr = "127.0.0.1:4", proxy_protocol = true }}, {{ addr = "127.0.0.1:5", http2 = false, proxy_protocol = true, trusted = ["10.0.0.0/8", "::1"] }}]
backlog = 1
[limits]
max_request_line = 1000
max_head = 65535
max_headers = 1
max_body = 12345678901
[timeouts]
header_read = "1500ms"
keepalive = "90s"
body_read = "2h"
send = "750us"
shutdown_grace = 1
"#,
            allowed[0]
        ))
        .unwrap(),
    );
    configs.push(parse("[runtime]\ncpu_affinity = false\nworkers = \"auto\"\n").unwrap());
    let mut odd = Config::default();
    odd.server.limits.max_body = u64::MAX;
    odd.server.timeouts.send = Duration::new(1, 1);
    configs.push(odd);
    // The proxy's sections, written in the temp dir so that the static
    // route's root is the same after the round trip.
    fs::write(&path, super::proxy_tests::ROUND_TRIP).unwrap();
    let proxied = Config::load(&path).unwrap();
    assert_eq!(proxied.proxy.upstreams.len(), 6);
    assert_eq!(proxied.proxy.routes.len(), 6);
    let fastcgi = proxied.proxy.routes.iter().filter(|r| r.fastcgi.is_some());
    assert_eq!(fastcgi.count(), 2);
    assert_eq!(proxied.caches.len(), 2);
    let cached = proxied.proxy.routes.iter().filter(|r| r.cache.is_some());
    assert_eq!(cached.count(), 2);
    configs.push(proxied);
    // What `--upstream` builds.
    let flag = Config {
        proxy: parse(
            "[upstream.default]\nservers = [\"127.0.0.1:1\"]\n[[route]]\nprefix = \"/\"\nupstream = \"default\"\n",
        )
        .unwrap()
        .proxy,
        ..Config::default()
    };
    configs.push(flag);
    for config in configs {
        let back = written_back(&config, &path);
        let text = config.to_toml();
        assert_eq!(back.runtime, config.runtime, "{text}");
        assert_eq!(back.server, config.server, "{text}");
        assert_eq!(back.root, config.root, "{text}");
        assert_eq!(back.statics, config.statics, "{text}");
        assert_eq!(back.proxy, config.proxy, "{text}");
        assert_eq!(back.ops, config.ops, "{text}");
        assert_eq!(back.caches, config.caches, "{text}");
    }
}

#[test]
fn ops_keys_read_back_the_same() {
    let config = parse(
        "[server]\nuser = \"nobody\"\ngroup = \"nogroup\"\npid_file = \"/run/r.pid\"\n\
         [admin]\nlisten = \"127.0.0.1:9191\"\n\
         [access_log]\npath = \"/var/log/a.log\"\nformat = \"json\"\nbuffer = \"8k\"\nflush_every = \"250ms\"\n\
         [[route]]\nprefix = \"/quiet/\"\naccess_log = false\n",
    )
    .unwrap();
    let text = config.to_toml();
    for line in [
        "user = \"nobody\"",
        "group = \"nogroup\"",
        "listen = \"127.0.0.1:9191\"",
        "format = \"json\"",
        "buffer = 8192",
        "flush_every = \"250ms\"",
        "access_log = false",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    let dir = std::env::temp_dir().join(format!("ringside-ops-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ringside.toml");
    fs::write(&path, &text).unwrap();
    let back = Config::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(back.ops, config.ops);
}

#[test]
fn ops_keys_are_checked() {
    assert_eq!(
        error("[admin]\nlisten = \"nowhere\"\n").split(": ").nth(1),
        Some("[admin] listen")
    );
    assert!(error("[access_log]\nformat = \"json\"\n").contains("needs [access_log] path"));
    assert!(error("[access_log]\npath = \"a.log\"\nformat = \"clf\"\n")
        .contains("expected \"combined\" or \"json\""));
    assert!(error("[server]\ngroup = \"g\"\n").contains("needs [server] user"));
    assert!(error("[server]\nuser = \"\"\n").contains("[server] user"));
}

#[test]
fn to_toml_writes_every_key() {
    let text = parse("").unwrap().to_toml();
    let root = toml::Value::String(Config::default().root.to_string_lossy().into_owned());
    let want = format!(
        r#"[runtime]
workers = "auto"
cpu_affinity = "auto"
backend = "auto"
ring_entries = 1024
coalesce_wait = "100us"

[server]
listen = ["127.0.0.1:8080"]
backlog = 4096
root = {root}
server_tokens = true

[limits]
max_request_line = "8k"
max_head = "16k"
max_headers = 100
max_body = "1m"
max_connections = 16384
max_client_connections = 0
client_connections_status = 429

[timeouts]
header_read = "10s"
keepalive = "75s"
body_read = "60s"
send = "60s"
shutdown_grace = "30s"
min_rate = 500

[http2]
max_concurrent_streams = 128
stream_window = "256k"
connection_window = "1m"
flood_budget = 1000

[http3]
max_concurrent_streams = 100
stream_window = "1m"
connection_window = "16m"
send_window = "4m"
retry_above = 64
always_retry = false
max_handshakes = 1024
early_data = false

[static]
index = ["index.html"]
listing = false
precompressed = true
mime = {{}}
cache_max_bytes = "64m"
cache_max_file = "64k"
cache_max_open = 256
revalidate = "1s"

[compression]
enabled = true
types = ["text/*", "application/json", "application/*+json", "application/javascript", "application/xml", "application/*+xml", "image/svg+xml", "application/wasm"]
min_size = 256
levels = {{ gzip = 6, br = 5, zstd = 3 }}

[admin]
# listen = "127.0.0.1:9180" (the default)

[proxy]
x_forwarded = true
forwarded = false
trusted_forwarders = []
via = "ringside"
encoded_slash = "reject"
path_parameters = "set_aside"
allow_trace = false
underscores_in_headers = "drop"
"#
    );
    assert_eq!(text, want);
}

#[test]
fn to_toml_writes_upstreams_and_proxy_routes() {
    let text = parse(
        "[upstream.app]\nservers = [\"[::1]:9000\", { addr = \"b:2\", weight = 2 }]\n\
         [[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nhost = [\"A.example\"]\nstrip_prefix = true\n",
    )
    .unwrap()
    .to_toml();
    let want = r#"
[proxy]
x_forwarded = true
forwarded = false
trusted_forwarders = []
via = "ringside"
encoded_slash = "reject"
path_parameters = "set_aside"
allow_trace = false
underscores_in_headers = "drop"

[upstream.app]
protocol = "http"
servers = ["[::1]:9000", { addr = "b:2", weight = 2 }]
tls = false
balance = "round_robin"
resolve_every = "30s"
max_idle = 1024
idle_timeout = "60s"
connect_timeout = "5s"
send_timeout = "60s"
response_timeout = "60s"
body_timeout = "60s"
retries = 1
retry_on = ["connect"]
max_fails = 1
fail_window = "10s"
fail_cooldown = "10s"

[[route]]
prefix = "/api/"
upstream = "app"
host = ["a.example"]
strip_prefix = true
proxy_host = "pass"
"#;
    assert!(text.ends_with(want), "{text}");
}

/// `alias` beside `root`: validated the same way, kept apart from it, and
/// written back as `alias`.
#[test]
fn alias_routes() {
    let dir = TempDir::new("alias");
    fs::create_dir_all(dir.0.join("srv/assets")).unwrap();
    let path = dir.0.join(NAME);
    let text = "[[route]]\nprefix = \"/assets/\"\nalias = \"srv/assets\"\n\n\
                [[route]]\nprefix = \"/srv/\"\nroot = \".\"\n";
    fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    let assets = fs::canonicalize(dir.0.join("srv/assets")).unwrap();
    let routes: Vec<_> = config
        .statics
        .routes
        .iter()
        .map(|r| (r.prefix.as_str(), r.root.clone(), r.alias))
        .collect();
    assert_eq!(
        routes,
        [
            ("/assets/", Some(assets.clone()), true),
            ("/srv/", Some(fs::canonicalize(&dir.0).unwrap()), false),
        ]
    );
    let written = config.to_toml();
    let alias_line = format!("alias = {:?}\n", assets.to_str().unwrap());
    assert!(written.contains(&alias_line), "{written}");
    fs::write(&path, &written).unwrap();
    let back = Config::load(&path).unwrap();
    assert_eq!(back.statics, config.statics);
    assert_eq!(back.to_toml(), written);

    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("[[route]]\nprefix = \"/a/\"\nroot = \".\"\nalias = \".\"\n",
         "ringside.toml:4:9: [[route]] alias: root is given too (line 3); a route takes one: root looks the whole path up beneath it, alias replaces the prefix with it"),
        ("[[route]]\nprefix = \"/a/\"\nalias = \"no-such-dir-here\"\n",
         "ringside.toml:3:9: [[route]] alias: cannot open \"no-such-dir-here\": No such file or directory"),
        ("[upstream.app]\nservers = [\"a:1\"]\n[[route]]\nprefix = \"/a/\"\nupstream = \"app\"\nalias = \".\"\n",
         "ringside.toml:6:9: [[route]] alias: only for a static route; this one goes to upstream \"app\""),
    ];
    for &(text, want) in cases {
        assert_eq!(error(text), want, "for {text:?}");
    }
}

/// The README's static route (and the module doc's) is an alias whose
/// prefix is replaced, as its comment says; with root it looked for
/// /srv/assets/assets/.
#[test]
fn documented_static_route_is_an_alias() {
    let dir = TempDir::new("alias-doc");
    let examples = documented_examples(
        "config/mod.rs",
        include_str!("mod.rs"),
        "prefix = \"/assets/\"",
    );
    for (source, block) in examples {
        let text = block.replace("\"/srv/assets\"", &format!("{:?}", dir.0.to_str().unwrap()));
        assert!(text != block, "{source}: no alias = \"/srv/assets\"");
        let config = parse(&text).unwrap_or_else(|e| panic!("{source}: {e}"));
        let r = config
            .statics
            .routes
            .iter()
            .find(|r| r.prefix == "/assets/");
        let r = r.unwrap_or_else(|| panic!("{source}: no /assets/ route"));
        assert!(r.alias, "{source}: /assets/ is not an alias");
        assert_eq!(r.root, Some(fs::canonicalize(&dir.0).unwrap()), "{source}");
    }
}
