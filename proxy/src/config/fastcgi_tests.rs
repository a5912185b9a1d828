//! Unit tests for FastCGI in the config: `protocol = "fastcgi"` upstreams,
//! `unix:` servers, the FastCGI keys, and routes that run scripts; good
//! configs with what they give, bad ones with the position, key and message
//! of their error, and what `to_toml` writes for them.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::addr::MAX_UNIX_PATH;
use super::fastcgi::{extension, script_index};
use super::proxy_tests::{route, server};
use super::{Config, ConfigError};
use crate::upstream::settings::{
    Balance, FastCgiRoute, FastCgiSettings, HashKey, HostHeader, Protocol, ProxyRoute, RetryOn,
    ServerSpec, UpstreamConfig, UpstreamProtocol,
};

const NAME: &str = "ringside.toml";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new(NAME))
}

fn parse_ok(text: &str) -> Config {
    parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn unix(path: impl Into<PathBuf>, weight: u32) -> ServerSpec {
    let path = path.into();
    ServerSpec {
        host: path.to_str().unwrap().into(),
        port: 0,
        weight,
        unix: Some(path),
    }
}

fn fastcgi(name: &str, servers: Vec<ServerSpec>) -> UpstreamConfig {
    UpstreamConfig {
        protocol: UpstreamProtocol::FastCgi(FastCgiSettings::default()),
        ..UpstreamConfig::new(name, servers)
    }
}

fn script(root: &Path, ext: &str, index: &str) -> Option<FastCgiRoute> {
    Some(FastCgiRoute {
        root: root.to_path_buf(),
        extension: ext.into(),
        index: index.into(),
    })
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("ringside-fcgi-{tag}-{}", std::process::id()));
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

/// Every key given, beside routes with and without their own keys.
#[test]
fn full_fastcgi_config() {
    let text = r#"
[upstream.php]
protocol = "fastcgi"
servers = ["unix:/run/php/php-fpm.sock", { addr = "127.0.0.1:9000", weight = 2 }, { addr = "unix:rel.sock", weight = 3 }]
max_conns = 16
capacity_probe = "20ms"
queue_size = 0
queue_timeout = "1500ms"
keep_conn = false
balance = "least_conn"
max_idle = 4
max_fails = 0
retries = 0

[upstream.web]
protocol = "http"
servers = ["web:80"]

[[route]]
prefix = "/"
upstream = "php"

[[route]]
prefix = "/app/"
upstream = "php"
host = ["Example.com"]
root = "src"
extension = ".phtml"

[[route]]
prefix = "/web/"
upstream = "web"
"#;
    let config = parse_ok(text);
    let cwd = std::env::current_dir().unwrap();
    let mut php = fastcgi(
        "php",
        vec![
            unix("/run/php/php-fpm.sock", 1),
            server("127.0.0.1", 9000, 2),
            unix(cwd.join("rel.sock"), 3),
        ],
    );
    *php.fastcgi_mut() = FastCgiSettings {
        max_conns: Some(16),
        capacity_probe: Duration::from_millis(20),
        queue_size: 0,
        queue_timeout: Duration::from_millis(1500),
        keep_conn: false,
    };
    php.balance = Balance::LeastConn;
    php.pool.max_idle = 4;
    php.passive = None;
    php.retry.count = 0;
    let web = UpstreamConfig::new("web", vec![server("web", 80, 1)]);
    assert_eq!(config.proxy.upstreams, vec![php, web]);
    let src = fs::canonicalize("src").unwrap();
    assert_eq!(
        config.proxy.routes,
        vec![
            ProxyRoute {
                fastcgi: script(&config.root, ".php", "index.php"),
                ..route("/", 0)
            },
            ProxyRoute {
                hosts: vec!["example.com".into()],
                fastcgi: script(&src, ".phtml", "index.phtml"),
                ..route("/app/", 0)
            },
            route("/web/", 1),
        ]
    );
    // The server root is "." beside ringside.toml: the working directory.
    assert_eq!(config.root, fs::canonicalize(".").unwrap());
}

/// One FastCGI upstream with one key changed from the defaults.
#[test]
fn fastcgi_upstream_keys() {
    type Edit = fn(&mut UpstreamConfig);
    #[rustfmt::skip]
    let cases: &[(&str, Edit)] = &[
        ("", |_| {}),
        ("max_conns = 1", |u| u.fastcgi_mut().max_conns = Some(1)),
        ("max_conns = 65535", |u| u.fastcgi_mut().max_conns = Some(65535)),
        ("queue_size = 0", |u| u.fastcgi_mut().queue_size = 0),
        ("queue_size = 1000000", |u| u.fastcgi_mut().queue_size = 1_000_000),
        ("queue_timeout = \"250ms\"", |u| u.fastcgi_mut().queue_timeout = Duration::from_millis(250)),
        ("capacity_probe = 0", |u| u.fastcgi_mut().capacity_probe = Duration::ZERO),
        ("capacity_probe = \"5ms\"", |u| u.fastcgi_mut().capacity_probe = Duration::from_millis(5)),
        ("queue_timeout = 3", |u| u.fastcgi_mut().queue_timeout = Duration::from_secs(3)),
        ("keep_conn = false", |u| u.fastcgi_mut().keep_conn = false),
        ("keep_conn = true", |_| {}),
        ("balance = \"hash\"\nhash_key = \"cookie:PHPSESSID\"", |u| u.balance = Balance::Hash(HashKey::Cookie("PHPSESSID".into()))),
        ("balance = \"hash\"\nhash_key = \"header:X-User\"", |u| u.balance = Balance::Hash(HashKey::Header("x-user".into()))),
        ("max_fails = 0", |u| u.passive = None),
        ("retry_on = [\"connect\", \"timeout\"]", |u| u.retry.on = RetryOn { connect: true, timeout: true, ..RetryOn::default() }),
        ("response_timeout = \"5m\"", |u| u.timeouts.response_head = Duration::from_secs(300)),
        ("max_idle = 0", |u| u.pool.max_idle = 0),
    ];
    for &(keys, edit) in cases {
        let text =
            format!("[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:9000\"]\n{keys}\n");
        let mut want = fastcgi("php", vec![server("a", 9000, 1)]);
        edit(&mut want);
        assert_eq!(parse_ok(&text).proxy.upstreams, vec![want], "{text}");
    }
    // The defaults, and "http" said out loud.
    assert_eq!(FastCgiSettings::default().queue_size, 1024);
    assert_eq!(FastCgiSettings::default().max_conns, None);
    let http = parse_ok("[upstream.a]\nprotocol = \"http\"\nservers = [\"a:1\"]\n");
    assert_eq!(
        http.proxy.upstreams,
        vec![UpstreamConfig::new("a", vec![server("a", 1, 1)])]
    );
}

/// Relative socket paths and roots are taken from the config file's
/// directory; a route without a root takes the `[server] root`.
#[test]
fn paths_are_taken_from_the_file() {
    let dir = TempDir::new("paths");
    for sub in ["www", "scripts"] {
        fs::create_dir(dir.0.join(sub)).unwrap();
    }
    let text = "[server]\nroot = \"www\"\n\
        [upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"unix:run/php.sock\", \"unix:../x/./y.sock\"]\n\
        [[route]]\nprefix = \"/\"\nupstream = \"php\"\n\
        [[route]]\nprefix = \"/s/\"\nupstream = \"php\"\nroot = \"scripts\"\nindex = \"app.php\"\n\
        [[route]]\nprefix = \"/d/\"\nupstream = \"php\"\nroot = \".\"\n";
    let config = Config::parse(text, &dir.0.join(NAME)).unwrap();
    let www = fs::canonicalize(dir.0.join("www")).unwrap();
    assert_eq!(config.root, www);
    let servers = &config.proxy.upstreams[0].servers;
    assert_eq!(servers[0], unix(dir.0.join("run/php.sock"), 1));
    let second = servers[1].unix.as_deref().unwrap();
    assert!(second.is_absolute(), "{second:?}");
    assert!(second.ends_with("x/y.sock"), "{second:?}");
    let roots: Vec<Option<FastCgiRoute>> = config
        .proxy
        .routes
        .iter()
        .map(|r| r.fastcgi.clone())
        .collect();
    assert_eq!(
        roots,
        [
            script(&www, ".php", "index.php"),
            script(
                &fs::canonicalize(dir.0.join("scripts")).unwrap(),
                ".php",
                "app.php"
            ),
            script(&fs::canonicalize(&dir.0).unwrap(), ".php", "index.php"),
        ]
    );
    // `--root` moves the routes that ran scripts from the served directory.
    let mut moved = config.clone();
    let scripts = fs::canonicalize(dir.0.join("scripts")).unwrap();
    moved.set_root(scripts.clone());
    let roots: Vec<PathBuf> = moved
        .proxy
        .routes
        .iter()
        .map(|r| r.fastcgi.as_ref().unwrap().root.clone())
        .collect();
    assert_eq!(
        roots,
        [scripts.clone(), scripts, fs::canonicalize(&dir.0).unwrap()]
    );
}

/// FastCGI routes live beside static and HTTP routes by the same rules.
#[test]
fn fastcgi_routes_coexist() {
    let ups = "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:9000\"]\n\
               [upstream.web]\nservers = [\"w:80\"]\n";
    let text = format!(
        "{ups}[[route]]\nprefix = \"/\"\n\
         [[route]]\nprefix = \"/\"\nupstream = \"php\"\nhost = [\"php.example\"]\n\
         [[route]]\nprefix = \"/\"\nupstream = \"web\"\nhost = [\"web.example\"]\n\
         [[route]]\nprefix = \"/x/\"\nupstream = \"php\"\n"
    );
    let config = parse_ok(&text);
    assert_eq!(config.statics.routes.len(), 1);
    let kinds: Vec<(&str, bool)> = config
        .proxy
        .routes
        .iter()
        .map(|r| (r.prefix.as_str(), r.fastcgi.is_some()))
        .collect();
    assert_eq!(kinds, [("/", true), ("/", false), ("/x/", true)]);
    assert!(config
        .proxy
        .routes
        .iter()
        .all(|r| r.replace_prefix.is_none() && r.host == HostHeader::Pass));
}

/// Each refused config: the start of the error (file, line, column, key)
/// and a part of its message.
#[test]
fn fastcgi_validation_errors() {
    const HTTP: &str = "[upstream.app]\nservers = [\"a:1\"]\n";
    const FCGI: &str = "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:9000\"]\n";
    let up = |keys: &str| format!("{HTTP}{keys}\n");
    let fup = |keys: &str| format!("{FCGI}{keys}\n");
    let hserver = |s: &str| format!("[upstream.app]\nservers = [{s}]\n");
    let fserver = |s: &str| format!("[upstream.php]\nprotocol = \"fastcgi\"\nservers = [{s}]\n");
    // Both upstreams take lines 1 to 5; a route's own keys start on line 9.
    let route = |to: &str, keys: &str| {
        format!("{HTTP}{FCGI}[[route]]\nprefix = \"/x/\"\nupstream = \"{to}\"\n{keys}\n")
    };
    let statik = |keys: &str| format!("{HTTP}{FCGI}[[route]]\nprefix = \"/x/\"\n{keys}\n");
    let long = format!("\"unix:/{}\"", "s".repeat(MAX_UNIX_PATH));
    let at_most = format!("a unix socket path may have at most {MAX_UNIX_PATH}");
    #[rustfmt::skip]
    let cases: Vec<(String, &str, &str)> = vec![
        // protocol.
        (up("protocol = \"fcgi\""), "3:12: [upstream.app] protocol", "expected \"http\", \"h2\", \"auto\" or \"fastcgi\", got \"fcgi\""),
        (up("protocol = \"FastCGI\""), "3:12: [upstream.app] protocol", "got \"FastCGI\""),
        (up("protocol = true"), "3:12: [upstream.app] protocol", "expected a string, got true"),
        // FastCGI keys on an HTTP upstream.
        (up("max_conns = 8"), "3:13: [upstream.app] max_conns", "only for protocol = \"fastcgi\" (this upstream speaks HTTP)"),
        (up("protocol = \"http\"\nqueue_size = 10"), "4:14: [upstream.app] queue_size", "only for protocol = \"fastcgi\""),
        (up("queue_timeout = \"1s\""), "3:17: [upstream.app] queue_timeout", "only for protocol = \"fastcgi\""),
        (up("capacity_probe = \"1s\""), "3:18: [upstream.app] capacity_probe", "only for protocol = \"fastcgi\""),
        (fup("capacity_probe = \"soon\""), "4:18: [upstream.php] capacity_probe", "expected a duration like"),
        (up("keep_conn = false"), "3:13: [upstream.app] keep_conn", "only for protocol = \"fastcgi\""),
        // FastCGI keys' values.
        (fup("max_conns = 0"), "4:13: [upstream.php] max_conns", "expected an integer from 1 to 65535, got 0"),
        (fup("max_conns = 65536"), "4:13: [upstream.php] max_conns", "got 65536"),
        (fup("max_conns = \"auto\""), "4:13: [upstream.php] max_conns", "expected a whole number, got the string \"auto\""),
        (fup("queue_size = -1"), "4:14: [upstream.php] queue_size", "expected an integer from 0 to 1000000, got -1"),
        (fup("queue_size = 1000001"), "4:14: [upstream.php] queue_size", "got 1000001"),
        (fup("queue_timeout = 0"), "4:17: [upstream.php] queue_timeout", "expected a nonzero duration"),
        (fup("queue_timeout = \"soon\""), "4:17: [upstream.php] queue_timeout", "expected a duration like"),
        (fup("keep_conn = \"yes\""), "4:13: [upstream.php] keep_conn", "expected true or false, got the string \"yes\""),
        (fup("max_conns = 1\nbogus = 1"), "5:1: [upstream.php] bogus", "unknown key"),
        // Active health checks cannot probe FastCGI.
        (fup("health_path = \"/ping\""), "4:15: [upstream.php] health_path", "not for protocol = \"fastcgi\": active health checks are HTTP requests, which a FastCGI server cannot answer (passive checks, max_fails, still apply)"),
        (fup("health_status = 200"), "4:17: [upstream.php] health_status", "not for protocol = \"fastcgi\""),
        (fup("health_interval = \"1s\""), "4:19: [upstream.php] health_interval", "not for protocol = \"fastcgi\""),
        // Unix sockets.
        (hserver("\"/run/app.sock\""), "2:12: [upstream.app] servers", "(a unix socket is written \"unix:/run/app.sock\")"),
        (fserver("\"unix:\""), "3:12: [upstream.php] servers", "expected a socket path after \"unix:\""),
        (fserver("\"unix:///run/php.sock\""), "3:12: [upstream.php] servers", "(write \"unix:/run/php.sock\")"),
        (fserver("\"unix:/run/php/\""), "3:12: [upstream.php] servers", "expected the path of a socket file, got the directory \"/run/php/\""),
        (fserver("\"unix:/a\\u0000b\""), "3:12: [upstream.php] servers", "may not contain NUL"),
        (fserver("\"/run/php.sock\""), "3:12: [upstream.php] servers", "(a FastCGI unix socket is written \"unix:/run/php.sock\")"),
        (fserver(&long), "3:12: [upstream.php] servers", &at_most),
        (fserver("\"unix:/a.sock\", { addr = \"unix:/a.sock\", weight = 2 }"), "3:28: [upstream.php] servers", "unix:/a.sock is listed twice"),
        (fserver("{ addr = \"unix:/a.sock\", weight = 0 }"), "3:46: [upstream.php] servers", "weight: expected an integer from 1 to 1000, got 0"),
        (fserver("\"a:1\", \"A:1\""), "3:19: [upstream.php] servers", "a:1 is listed twice"),
        (fserver("\"http://a:9000\""), "3:12: [upstream.php] servers", "without a scheme"),
        // Script keys on other routes.
        (route("app", "extension = \".php\""), "9:13: [[route]] extension", "only for a route to an upstream with protocol = \"fastcgi\"; upstream \"app\" speaks HTTP"),
        (route("app", "index = \"index.php\""), "9:9: [[route]] index", "upstream \"app\" speaks HTTP"),
        (route("app", "root = \".\""), "9:8: [[route]] root", "only for a static route or one to a FastCGI upstream; upstream \"app\" speaks HTTP"),
        (statik("extension = \".php\""), "8:13: [[route]] extension", "only for a route to an upstream with protocol = \"fastcgi\"; this is a static route"),
        (statik("index = \"index.php\""), "8:9: [[route]] index", "this is a static route (whose index files are [static] index)"),
        // Keys that rewrite the request, on a FastCGI route.
        (route("php", "strip_prefix = true"), "9:16: [[route]] strip_prefix", "not for a route to a FastCGI upstream (upstream \"php\"): the script sees the request's own path as SCRIPT_NAME"),
        (route("php", "strip_prefix = false"), "9:16: [[route]] strip_prefix", "not for a route to a FastCGI upstream"),
        (route("php", "replace_prefix = \"/\""), "9:18: [[route]] replace_prefix", "SCRIPT_NAME"),
        (route("php", "proxy_host = \"pass\""), "9:14: [[route]] proxy_host", "not for a route to a FastCGI upstream (upstream \"php\"): the client's Host goes to the script as HTTP_HOST"),
        (route("php", "cache_control = \"no-cache\""), "9:17: [[route]] cache_control", "only for a static route; this one goes to upstream \"php\""),
        (route("php", "listing = true"), "9:11: [[route]] listing", "only for a static route"),
        // A FastCGI route's own keys.
        (route("php", "root = \"no-such-dir-here\""), "9:8: [[route]] root", "cannot open \"no-such-dir-here\": No such file or directory"),
        (route("php", "root = \"Cargo.toml\""), "9:8: [[route]] root", "\"Cargo.toml\" is not a directory"),
        (route("php", "extension = \"php\""), "9:13: [[route]] extension", "expected an extension like \".php\": '.' then letters, digits, '_', '-' or '.', got \"php\""),
        (route("php", "extension = \".\""), "9:13: [[route]] extension", "got \".\""),
        (route("php", "extension = \"\""), "9:13: [[route]] extension", "got \"\""),
        (route("php", "extension = \".p/p\""), "9:13: [[route]] extension", "got \".p/p\""),
        (route("php", "index = \"index.html\""), "9:9: [[route]] index", "expected a script name ending in the extension \".php\", got \"index.html\""),
        (route("php", "extension = \".phtml\"\nindex = \"index.php\""), "10:9: [[route]] index", "ending in the extension \".phtml\""),
        (route("php", "index = \".php\""), "9:9: [[route]] index", "not starting with '.'"),
        (route("php", "index = \"a/index.php\""), "9:9: [[route]] index", "without '/'"),
        (route("php", "index = \"\""), "9:9: [[route]] index", "expected a file name"),
        (route("php", "index = [\"index.php\"]"), "9:9: [[route]] index", "expected a string, got a list"),
        (route("php", "bogus = 1"), "9:1:", "bogus: unknown key"),
        // Routes that could never be chosen.
        (format!("{HTTP}{FCGI}[[route]]\nprefix = \"/x/\"\n[[route]]\nprefix = \"/x/\"\nupstream = \"php\"\n"), "9:10: [[route]] prefix", "already a static route; a proxy route on it needs host = [...]"),
        (format!("{HTTP}{FCGI}[[route]]\nprefix = \"/\"\nupstream = \"app\"\n[[route]]\nprefix = \"/\"\nupstream = \"php\"\n"), "10:10: [[route]] prefix", "\"/\" is already a proxy route for any host"),
    ];
    let mut failed = Vec::new();
    for (text, at, message) in &cases {
        let err = match parse(text) {
            Ok(c) => {
                failed.push(format!("accepted:\n{text}\n{:?}", c.proxy));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let want = format!("{NAME}:{at}");
        if !err.starts_with(&want) || !err.contains(message) {
            failed.push(format!(
                "want {want:?} ... {message:?}, got\n{err}\nfor\n{text}"
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn extensions_and_indexes() {
    #[rustfmt::skip]
    let exts: &[(&str, bool)] = &[
        (".php", true), (".php5", true), (".phtml", true), (".cgi-bin", true), (".a_b.c", true),
        ("php", false), (".", false), ("", false), (". php", false), (".p/p", false), (".é", false),
    ];
    for &(e, ok) in exts {
        assert_eq!(extension(e).is_ok(), ok, "{e:?}");
    }
    #[rustfmt::skip]
    let indexes: &[(&str, &str, bool)] = &[
        ("index.php", ".php", true), ("app.phtml", ".phtml", true),
        ("index.html", ".php", false), (".php", ".php", false), ("a/b.php", ".php", false),
        ("", ".php", false), ("index.php5", ".php", false),
    ];
    for &(n, e, ok) in indexes {
        assert_eq!(script_index(n, e).is_ok(), ok, "{n:?} {e:?}");
    }
}

/// What `to_toml` writes for a FastCGI upstream and its route: the FastCGI
/// keys after `servers`, no `max_conns` when it is learnt, and the route's
/// root, extension and index instead of `proxy_host`.
#[test]
fn to_toml_writes_fastcgi() {
    let config = parse_ok(
        "[upstream.php]\nprotocol = \"fastcgi\"\n\
         servers = [\"unix:/run/php.sock\", { addr = \"a:9000\", weight = 2 }]\nmax_conns = 4\n\
         [upstream.q]\nprotocol = \"fastcgi\"\nservers = [\"q:9000\"]\n\
         [[route]]\nprefix = \"/\"\nupstream = \"php\"\nhost = [\"a.example\"]\n",
    );
    let text = config.to_toml();
    let root = toml::Value::String(config.root.to_string_lossy().into_owned());
    let want = r#"
[upstream.php]
protocol = "fastcgi"
servers = ["unix:/run/php.sock", { addr = "a:9000", weight = 2 }]
max_conns = 4
capacity_probe = "50ms"
queue_size = 1024
queue_timeout = "10s"
keep_conn = true
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

[upstream.q]
protocol = "fastcgi"
servers = ["q:9000"]
capacity_probe = "50ms"
queue_size = 1024
queue_timeout = "10s"
keep_conn = true
"#;
    assert!(text.contains(want), "{text}");
    let route = format!(
        "\n[[route]]\nprefix = \"/\"\nupstream = \"php\"\nhost = [\"a.example\"]\nroot = {root}\nextension = \".php\"\nindex = \"index.php\"\n"
    );
    assert!(text.ends_with(&route), "{text}");
    assert!(!text.contains("proxy_host"), "{text}");
    // And it reads back the same.
    let back = parse_ok(&text);
    assert_eq!(back.proxy, config.proxy);
}

/// The FastCGI examples in the README and the module doc are valid.
#[test]
fn documented_fastcgi_examples_are_valid() {
    let examples = super::tests::documented_examples(
        "config/mod.rs",
        include_str!("mod.rs"),
        "protocol = \"fastcgi\"",
    );
    for (source, block) in &examples {
        // The docroot may not exist here.
        let text = block.replace("root = \"/srv/www\"", "root = \".\"");
        let p = parse(&text)
            .unwrap_or_else(|e| panic!("{source}: {e}"))
            .proxy;
        assert_eq!(p.upstreams.len(), 1, "{source}");
        assert_eq!(
            p.upstreams[0].protocol_kind(),
            Protocol::FastCgi,
            "{source}"
        );
        assert_eq!(p.routes.len(), 1, "{source}");
        assert!(p.routes[0].fastcgi.is_some(), "{source}");
    }
}
