//! Unit tests for the proxy's sections: `[proxy]`, `[upstream.NAME]` and
//! routes with `upstream`; good configs with what they give, bad ones with
//! the position, key and message of their error.

use std::path::Path;
use std::time::Duration;

use super::addr::{route_host, server_addr};
use super::upstream::proxy_host;
use super::{Config, ConfigError};
use crate::upstream::settings::{
    ActiveHealth, Balance, ForwardHeaders, ForwardPath, HashKey, HostHeader, PassiveHealth,
    PoolSettings, ProxyConfig, ProxyRoute, RetryOn, RetryPolicy, ServerSpec, Underscores,
    UpstreamConfig, UpstreamTimeouts,
};

const NAME: &str = "ringside.toml";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new(NAME))
}

fn proxy(text: &str) -> ProxyConfig {
    parse(text).unwrap_or_else(|e| panic!("{e}\n{text}")).proxy
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

pub(super) fn server(host: &str, port: u16, weight: u32) -> ServerSpec {
    ServerSpec {
        host: host.into(),
        port,
        weight,
        unix: None,
    }
}

pub(super) fn route(prefix: &str, upstream: usize) -> ProxyRoute {
    ProxyRoute {
        hosts: Vec::new(),
        prefix: prefix.into(),
        upstream,
        replace_prefix: None,
        host: HostHeader::Pass,
        fastcgi: None,
        forward_path: ForwardPath::Normalized,
        upgrade: Vec::new(),
        grpc: false,
        cache: None,
    }
}

#[test]
fn no_proxy_sections_is_the_default() {
    assert_eq!(proxy(""), ProxyConfig::default());
    assert_eq!(proxy("[proxy]\n"), ProxyConfig::default());
    assert_eq!(Config::default().proxy, ProxyConfig::default());
    assert_eq!(
        ProxyConfig::default().headers,
        ForwardHeaders {
            x_forwarded: true,
            forwarded: false,
            trusted_forwarders: Vec::new(),
            via: Some("ringside".into()),
            underscores: Underscores::Drop,
        }
    );
    // Static routes stay where they were.
    let config = parse("[[route]]\nprefix = \"/a/\"\nlisting = true\n").unwrap();
    assert_eq!(config.proxy, ProxyConfig::default());
    assert_eq!(config.statics.routes.len(), 1);
}

/// The README's example, every key given.
#[test]
fn full_proxy_config() {
    let text = r#"
[proxy]
x_forwarded = false
forwarded = true
via = "edge-1"

[upstream.app]
servers = ["127.0.0.1:9000", "[::1]:9000", { addr = "App2.Internal:9000", weight = 3 }]
balance = "hash"
hash_key = "header:X-User"
resolve_every = "15s"
max_idle = 8
idle_timeout = "90s"
connect_timeout = "1500ms"
send_timeout = "20s"
response_timeout = "30s"
body_timeout = "40s"
retries = 2
retry_on = ["connect", "timeout", "http_503"]
max_fails = 3
fail_window = "20s"
fail_cooldown = "1m"
health_path = "/healthz"
health_interval = "10s"
health_timeout = "3s"
health_status = 204
health_fall = 4
health_rise = 5

[upstream.api-2]
servers = ["api:80"]

[[route]]
prefix = "/static/"
root = "."

[[route]]
prefix = "/api/"
upstream = "app"
host = ["API.example.com", "*.Example.com"]
strip_prefix = true
proxy_host = "upstream"

[[route]]
prefix = "/v2/"
upstream = "api-2"
replace_prefix = "/v1/"
proxy_host = "Backend.internal:8080"

[[route]]
prefix = "/old/"
upstream = "app"
strip_prefix = false
"#;
    let config = parse(text).unwrap();
    let mut app = UpstreamConfig::new("app", Vec::new());
    app.servers = vec![
        server("127.0.0.1", 9000, 1),
        server("::1", 9000, 1),
        server("app2.internal", 9000, 3),
    ];
    app.balance = Balance::Hash(HashKey::Header("x-user".into()));
    app.resolve_every = s(15);
    app.pool = PoolSettings {
        max_idle: 8,
        idle_timeout: s(90),
    };
    app.timeouts = UpstreamTimeouts {
        connect: Duration::from_millis(1500),
        send: s(20),
        response_head: s(30),
        body_idle: s(40),
    };
    app.retry = RetryPolicy {
        count: 2,
        on: RetryOn {
            connect: true,
            timeout: true,
            http_503: true,
            ..RetryOn::default()
        },
    };
    app.passive = Some(PassiveHealth {
        max_fails: 3,
        window: s(20),
        cooldown: s(60),
    });
    app.http_mut().active = Some(ActiveHealth {
        path: "/healthz".into(),
        interval: s(10),
        timeout: s(3),
        expect_status: 204,
        fall: 4,
        rise: 5,
    });
    // Sorted by name: "api-2" < "app".
    let api = UpstreamConfig::new("api-2", vec![server("api", 80, 1)]);
    let want = ProxyConfig {
        upstreams: vec![api, app],
        routes: vec![
            ProxyRoute {
                hosts: vec!["api.example.com".into(), "*.example.com".into()],
                replace_prefix: Some("/".into()),
                host: HostHeader::Upstream,
                ..route("/api/", 1)
            },
            ProxyRoute {
                replace_prefix: Some("/v1/".into()),
                host: HostHeader::Set("backend.internal:8080".into()),
                ..route("/v2/", 0)
            },
            route("/old/", 1),
        ],
        headers: ForwardHeaders {
            x_forwarded: false,
            forwarded: true,
            trusted_forwarders: Vec::new(),
            via: Some("edge-1".into()),
            underscores: Underscores::Drop,
        },
        encoded_slash: Default::default(),
        path_parameters: Default::default(),
        allow_trace: false,
    };
    assert_eq!(config.proxy, want);
    // The static route is the static layer's alone.
    let prefixes: Vec<&str> = config
        .statics
        .routes
        .iter()
        .map(|r| r.prefix.as_str())
        .collect();
    assert_eq!(prefixes, ["/static/"]);
}

/// One upstream with one key changed from the defaults.
#[test]
fn upstream_keys() {
    type Edit = fn(&mut UpstreamConfig);
    #[rustfmt::skip]
    let cases: &[(&str, Edit)] = &[
        ("", |_| {}),
        ("balance = \"round_robin\"", |_| {}),
        ("balance = \"least_conn\"", |u| u.balance = Balance::LeastConn),
        ("balance = \"p2c\"", |u| u.balance = Balance::P2c),
        ("balance = \"hash\"\nhash_key = \"client_ip\"", |u| u.balance = Balance::Hash(HashKey::ClientIp)),
        ("balance = \"hash\"\nhash_key = \"cookie:Session\"", |u| u.balance = Balance::Hash(HashKey::Cookie("Session".into()))),
        ("max_idle = 0", |u| u.pool.max_idle = 0),
        ("resolve_every = 5", |u| u.resolve_every = Duration::from_secs(5)),
        ("retries = 0", |u| u.retry.count = 0),
        ("retry_on = []", |u| u.retry.on = RetryOn::default()),
        ("retry_on = [\"invalid_response\", \"http_502\", \"http_504\"]", |u| {
            u.retry.on = RetryOn { invalid_response: true, http_502: true, http_504: true, ..RetryOn::default() }
        }),
        ("max_fails = 0", |u| u.passive = None),
        ("max_fails = 5", |u| u.passive.as_mut().unwrap().max_fails = 5),
        ("health_path = \"/up?full=1\"", |u| {
            u.http_mut().active = Some(ActiveHealth {
                path: "/up?full=1".into(), interval: Duration::from_secs(5), timeout: Duration::from_secs(2),
                expect_status: 200, fall: 2, rise: 2,
            })
        }),
        ("health_path = \"/\"\nhealth_interval = \"2s\"", |u| {
            u.http_mut().active = Some(ActiveHealth {
                path: "/".into(), interval: Duration::from_secs(2), timeout: Duration::from_secs(2),
                expect_status: 200, fall: 2, rise: 2,
            })
        }),
    ];
    for &(keys, edit) in cases {
        let text = format!("[upstream.app]\nservers = [\"a:1\"]\n{keys}\n");
        let mut want = UpstreamConfig::new("app", vec![server("a", 1, 1)]);
        edit(&mut want);
        assert_eq!(proxy(&text).upstreams, vec![want], "{text}");
    }
}

#[test]
fn proxy_section_keys() {
    #[rustfmt::skip]
    let cases: &[(&str, bool, bool, Option<&str>)] = &[
        ("", true, false, Some("ringside")),
        ("via = false", true, false, None),
        ("via = \"\"", true, false, None),
        ("via = true", true, false, Some("ringside")),
        ("via = \"my-proxy.1\"", true, false, Some("my-proxy.1")),
        ("x_forwarded = false\nforwarded = true", false, true, Some("ringside")),
    ];
    for &(keys, x_forwarded, forwarded, via) in cases {
        let text = format!("[proxy]\n{keys}\n");
        assert_eq!(
            proxy(&text).headers,
            ForwardHeaders {
                x_forwarded,
                forwarded,
                trusted_forwarders: Vec::new(),
                via: via.map(str::to_owned),
                underscores: Underscores::Drop,
            },
            "{text}"
        );
    }
}

/// Upstream names are sorted, and routes point at them by index, whatever
/// order the file has.
#[test]
fn upstreams_are_sorted_and_routes_indexed() {
    let p = proxy(
        "[upstream.zed]\nservers = [\"z:1\"]\n[upstream.Alpha]\nservers = [\"a:1\"]\n\
         [upstream.mid]\nservers = [\"m:1\"]\n\
         [[route]]\nprefix = \"/z\"\nupstream = \"zed\"\n\
         [[route]]\nprefix = \"/m\"\nupstream = \"mid\"\n\
         [[route]]\nprefix = \"/a\"\nupstream = \"Alpha\"\n",
    );
    let names: Vec<&str> = p.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["Alpha", "mid", "zed"]);
    let routes: Vec<(&str, usize)> = p
        .routes
        .iter()
        .map(|r| (r.prefix.as_str(), r.upstream))
        .collect();
    assert_eq!(routes, [("/z", 2), ("/m", 1), ("/a", 0)]);
    // Dotted keys and inline tables say the same.
    let dotted = proxy("upstream.app.servers = [\"a:1\"]\nupstream.app.max_idle = 3\n");
    let inline = proxy("upstream = { app = { servers = [\"a:1\"], max_idle = 3 } }\n");
    assert_eq!(dotted, inline);
    assert_eq!(dotted.upstreams[0].pool.max_idle, 3);
}

/// Routes that may live side by side.
#[test]
fn routes_that_coexist() {
    let up = "[upstream.a]\nservers = [\"a:1\"]\n[upstream.b]\nservers = [\"b:1\"]\n";
    #[rustfmt::skip]
    let cases: &[(&str, usize, usize)] = &[
        // A static route and a proxy route for some hosts.
        ("[[route]]\nprefix = \"/x/\"\n[[route]]\nprefix = \"/x/\"\nupstream = \"a\"\nhost = [\"h.com\"]\n", 1, 1),
        // The same prefix for different hosts, or for some hosts and any.
        ("[[route]]\nprefix = \"/x/\"\nupstream = \"a\"\nhost = [\"h.com\"]\n[[route]]\nprefix = \"/x/\"\nupstream = \"b\"\nhost = [\"g.com\"]\n[[route]]\nprefix = \"/x/\"\nupstream = \"b\"\n", 0, 3),
        // Overlapping host sets that are not the same set.
        ("[[route]]\nprefix = \"/\"\nupstream = \"a\"\nhost = [\"h.com\"]\n[[route]]\nprefix = \"/\"\nupstream = \"b\"\nhost = [\"h.com\", \"g.com\"]\n", 0, 2),
        // Different prefixes.
        ("[[route]]\nprefix = \"/x\"\n[[route]]\nprefix = \"/x/\"\nupstream = \"a\"\n[[route]]\nprefix = \"/\"\nupstream = \"a\"\n", 1, 2),
    ];
    for &(routes, statics, proxies) in cases {
        let text = format!("{up}{routes}");
        let config = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(config.statics.routes.len(), statics, "{text}");
        assert_eq!(config.proxy.routes.len(), proxies, "{text}");
    }
}

/// Each refused config: the start of the error (file, line, column, key)
/// and a part of its message.
#[test]
fn proxy_validation_errors() {
    const UP: &str = "[upstream.app]\nservers = [\"a:1\"]\n";
    const TWO: &str = "[upstream.app]\nservers = [\"a:1\"]\n[upstream.b]\nservers = [\"b:1\"]\n";
    let up = |keys: &str| format!("{UP}{keys}\n");
    let route = |keys: &str| format!("{TWO}[[route]]\nprefix = \"/x/\"\n{keys}\n");
    let server = |s: &str| format!("[upstream.app]\nservers = [{s}]\n");
    #[rustfmt::skip]
    let cases: Vec<(String, &str, &str)> = vec![
        // [upstream.NAME] itself.
        ("[upstream.app]\nmax_idle = 1\n".into(), "1:1: [upstream.app] servers", "missing"),
        ("\n[upstream.app]\nservers = []\n".into(), "3:11: [upstream.app] servers", "expected at least one server"),
        ("[upstream.\"a b\"]\nservers = [\"a:1\"]\n".into(), "1:11: [upstream.\"a b\"]", "expected an upstream name of letters, digits"),
        ("[upstream.\"\"]\nservers = [\"a:1\"]\n".into(), "1:11: [upstream.\"\"]", "expected an upstream name"),
        ("[upstream.app]\nservers = [\"a:1\"]\nbogus = 1\n".into(), "3:1: [upstream.app] bogus", "unknown key"),
        ("[upstream.app]\nservers = \"a:1\"\n".into(), "2:11: [upstream.app] servers", "expected a list of servers, like [\"127.0.0.1:9000\"], got the string \"a:1\"; write it in brackets: [\"a:1\"]"),
        (up("send_proxy_protocol = \"v3\""), "3:23: [upstream.app] send_proxy_protocol", "expected \"v1\" or \"v2\", got \"v3\""),
        (up("protocol = \"fastcgi\"\nsend_proxy_protocol = \"v1\""), "4:23: [upstream.app] send_proxy_protocol", "only for protocol = \"http\""),
        // Server addresses.
        (server("\"http://a:80/\""), "2:12: [upstream.app] servers", "without a scheme, got \"http://a:80/\" (write \"a:80\""),
        (server("\"a\""), "2:12: [upstream.app] servers", "got \"a\" (no port)"),
        (server("\"\""), "2:12: [upstream.app] servers", "got \"\" (no port)"),
        (server("\":80\""), "2:12: [upstream.app] servers", "expected a host name or IP address before the port"),
        (server("\"::1:80\""), "2:12: [upstream.app] servers", "an IPv6 address takes brackets, like \"[::1]:80\""),
        (server("\"[::1]\""), "2:12: [upstream.app] servers", "expected a port after the address"),
        (server("\"[::g]:80\""), "2:12: [upstream.app] servers", "\"::g\" is not an IPv6 address"),
        (server("\"[::1:80\""), "2:12: [upstream.app] servers", "expected HOST:PORT"),
        (server("\"a:0\""), "2:12: [upstream.app] servers", "expected a port from 1 to 65535, got \"0\""),
        (server("\"a:65536\""), "2:12: [upstream.app] servers", "expected a port from 1 to 65535, got \"65536\""),
        (server("\"a:+1\""), "2:12: [upstream.app] servers", "expected a port from 1 to 65535, got \"+1\""),
        (server("\"a b:1\""), "2:12: [upstream.app] servers", "\"a b\" is not a host name"),
        (server("\"a..b:1\""), "2:12: [upstream.app] servers", "1 to 63 characters"),
        (server("\"-a:1\""), "2:12: [upstream.app] servers", "may not start or end with '-'"),
        (server("\"1.2.3.256:1\""), "2:12: [upstream.app] servers", "\"1.2.3.256\" is not an IPv4 address"),
        (server("\"a.123:1\""), "2:12: [upstream.app] servers", "last label may not be all digits"),
        (server(&format!("\"{}:1\"", "a".repeat(64))), "2:12: [upstream.app] servers", "1 to 63 characters"),
        (server("\"a:1\", \"A:1\""), "2:19: [upstream.app] servers", "a:1 is listed twice"),
        (server("\"[::1]:1\", \"[0::1]:1\""), "2:23: [upstream.app] servers", "[::1]:1 is listed twice"),
        (server("5"), "2:12: [upstream.app] servers", "expected \"HOST:PORT\", \"unix:/PATH\" or a table"),
        (server("{ addr = \"a:1\", weight = 0 }"), "2:37: [upstream.app] servers", "weight: expected an integer from 1 to 1000, got 0"),
        (server("{ addr = \"a:1\", weight = 1001 }"), "2:37: [upstream.app] servers", "got 1001"),
        (server("{ addr = \"a\" }"), "2:21: [upstream.app] servers", "(no port)"),
        (server("{ weight = 2 }"), "2:12: [upstream.app.servers] addr", "missing: the table form needs its address"),
        (server("{ addr = \"a:1\", wieght = 2 }"), "2:28: [upstream.app.servers] wieght", "unknown key"),
        // Balancing.
        (up("balance = \"random\""), "3:11: [upstream.app] balance", "expected one of \"round_robin\", \"least_conn\", \"p2c\", \"hash\", got \"random\""),
        (up("balance = \"hash\""), "3:11: [upstream.app] balance", "\"hash\" needs hash_key"),
        (up("hash_key = \"client_ip\""), "3:12: [upstream.app] hash_key", "only with balance = \"hash\""),
        (up("balance = \"p2c\"\nhash_key = \"client_ip\""), "4:12: [upstream.app] hash_key", "only with balance = \"hash\""),
        (up("balance = \"hash\"\nhash_key = \"ip\""), "4:12: [upstream.app] hash_key", "expected \"client_ip\", \"header:NAME\" or \"cookie:NAME\", got \"ip\""),
        (up("balance = \"hash\"\nhash_key = \"header:\""), "4:12: [upstream.app] hash_key", "expected a header name"),
        (up("balance = \"hash\"\nhash_key = \"cookie:a b\""), "4:12: [upstream.app] hash_key", "expected a cookie name"),
        (up("balance = \"hash\"\nhash_key = \"query:a\""), "4:12: [upstream.app] hash_key", "got \"query:a\""),
        // Numbers and durations.
        (up("max_idle = -1"), "3:12: [upstream.app] max_idle", "expected an integer from 0 to 65535, got -1"),
        (up("retries = 101"), "3:11: [upstream.app] retries", "expected an integer from 0 to 100, got 101"),
        (up("max_fails = -1"), "3:13: [upstream.app] max_fails", "from 0 to 1000"),
        (up("resolve_every = \"0s\""), "3:17: [upstream.app] resolve_every", "expected a nonzero duration"),
        (up("idle_timeout = 0"), "3:16: [upstream.app] idle_timeout", "expected a nonzero duration"),
        (up("connect_timeout = \"0ms\""), "3:19: [upstream.app] connect_timeout", "expected a nonzero duration"),
        (up("send_timeout = \"soon\""), "3:16: [upstream.app] send_timeout", "expected a duration like"),
        (up("response_timeout = 0"), "3:20: [upstream.app] response_timeout", "nonzero"),
        (up("body_timeout = -1"), "3:16: [upstream.app] body_timeout", "expected a duration like"),
        // Retries.
        (up("retry_on = [\"connect\", \"5xx\"]"), "3:24: [upstream.app] retry_on", "expected one of \"connect\", \"timeout\", \"invalid_response\", \"http_502\", \"http_503\", \"http_504\", got \"5xx\""),
        (up("retry_on = [\"timeout\", \"timeout\"]"), "3:24: [upstream.app] retry_on", "\"timeout\" is listed twice"),
        (up("retry_on = \"connect\""), "3:12: [upstream.app] retry_on", "expected a list, like [\"connect\", \"timeout\"], got the string \"connect\""),
        // Passive health.
        (up("max_fails = 0\nfail_window = \"1s\""), "4:15: [upstream.app] fail_window", "has no effect with max_fails = 0"),
        (up("max_fails = 0\nfail_cooldown = \"1s\""), "4:17: [upstream.app] fail_cooldown", "has no effect with max_fails = 0"),
        (up("fail_window = 0"), "3:15: [upstream.app] fail_window", "nonzero"),
        // Active health.
        (up("health_status = 200"), "3:17: [upstream.app] health_status", "needs health_path"),
        (up("health_interval = \"1s\""), "3:19: [upstream.app] health_interval", "needs health_path"),
        (up("health_rise = 1"), "3:15: [upstream.app] health_rise", "needs health_path"),
        (up("health_path = \"healthz\""), "3:15: [upstream.app] health_path", "expected a path starting with \"/\""),
        (up("health_path = \"/a b\""), "3:15: [upstream.app] health_path", "no spaces"),
        (up("health_path = \"/\"\nhealth_status = 99"), "4:17: [upstream.app] health_status", "expected an integer from 100 to 599, got 99"),
        (up("health_path = \"/\"\nhealth_status = 600"), "4:17: [upstream.app] health_status", "got 600"),
        (up("health_path = \"/\"\nhealth_fall = 0"), "4:15: [upstream.app] health_fall", "expected an integer from 1 to 100, got 0"),
        (up("health_path = \"/\"\nhealth_rise = 101"), "4:15: [upstream.app] health_rise", "got 101"),
        (up("health_path = \"/\"\nhealth_timeout = 0"), "4:18: [upstream.app] health_timeout", "nonzero"),
        (up("health_path = \"/\"\nhealth_timeout = \"10s\""), "4:18: [upstream.app] health_timeout", "expected at most health_interval (\"5s\"), got \"10s\""),
        (up("health_path = \"/\"\nhealth_interval = \"1s\""), "4:19: [upstream.app] health_interval", "expected at least health_timeout (\"2s\" by default), got \"1s\""),
        // [proxy].
        ("[proxy]\nvia = \"ring side\"\n".into(), "2:7: [proxy] via", "expected a pseudonym"),
        ("[proxy]\nvia = 3\n".into(), "2:7: [proxy] via", "expected a pseudonym like \"ringside\", or false for no Via header, got 3"),
        ("[proxy]\nx_forwarded = \"yes\"\n".into(), "2:15: [proxy] x_forwarded", "expected true or false, got the string \"yes\""),
        ("[proxy]\nbogus = 1\n".into(), "2:1: [proxy] bogus", "unknown key"),
        // Routes: which upstream.
        (route("upstream = \"nope\""), "7:12: [[route]] upstream", "no [upstream.nope] is defined (upstreams: \"app\", \"b\")"),
        ("[[route]]\nprefix = \"/\"\nupstream = \"app\"\n".into(), "3:12: [[route]] upstream", "(there are no upstreams)"),
        (format!("{TWO}[[route]]\nprefix = \"x/\"\nupstream = \"app\"\n"), "6:10: [[route]] prefix", "expected a path starting with \"/\", got \"x/\""),
        // Routes: static keys on proxy routes, proxy keys on static ones.
        (route("upstream = \"app\"\nroot = \".\""), "8:8: [[route]] root", "only for a static route or one to a FastCGI upstream; upstream \"app\" speaks HTTP"),
        (route("upstream = \"app\"\nlisting = true"), "8:11: [[route]] listing", "only for a static route"),
        (route("upstream = \"app\"\ncache_control = \"no-cache\""), "8:17: [[route]] cache_control", "only for a static route"),
        (route("host = [\"a.com\"]"), "7:8: [[route]] host", "only for a proxy route"),
        (route("strip_prefix = true"), "7:16: [[route]] strip_prefix", "only for a proxy route"),
        (route("replace_prefix = \"/\""), "7:18: [[route]] replace_prefix", "only for a proxy route"),
        (route("proxy_host = \"pass\""), "7:14: [[route]] proxy_host", "only for a proxy route"),
        // Routes: prefix rewriting.
        (route("upstream = \"app\"\nstrip_prefix = true\nreplace_prefix = \"/v1/\""), "9:18: [[route]] replace_prefix", "not together with strip_prefix"),
        (route("upstream = \"app\"\nreplace_prefix = \"v1/\""), "8:18: [[route]] replace_prefix", "expected a path starting with \"/\", got \"v1/\""),
        (route("upstream = \"app\"\nreplace_prefix = \"\""), "8:18: [[route]] replace_prefix", "expected a path starting with \"/\""),
        // Routes: hosts.
        (route("upstream = \"app\"\nhost = []"), "8:8: [[route]] host", "expected at least one host name"),
        (route("upstream = \"app\"\nhost = [\"a.*.com\"]"), "8:9: [[route]] host", "a wildcard is only allowed as a leading \"*.\""),
        (route("upstream = \"app\"\nhost = [\"*\"]"), "8:9: [[route]] host", "a wildcard is only allowed"),
        (route("upstream = \"app\"\nhost = [\"*example.com\"]"), "8:9: [[route]] host", "a wildcard is only allowed"),
        (route("upstream = \"app\"\nhost = [\"a.com:80\"]"), "8:9: [[route]] host", "without a port"),
        (route("upstream = \"app\"\nhost = [\"a_b .com\"]"), "8:9: [[route]] host", "is not a host name"),
        (route("upstream = \"app\"\nhost = [\"A.com\", \"a.COM\"]"), "8:18: [[route]] host", "\"a.com\" is listed twice"),
        (route("upstream = \"app\"\nhost = \"a.com\""), "8:8: [[route]] host", "expected a list of host names, like [\"example.com\"], got the string \"a.com\""),
        // Routes: proxy_host.
        (route("upstream = \"app\"\nproxy_host = \"a b\""), "8:14: [[route]] proxy_host", "expected \"pass\", \"upstream\" or a host"),
        (route("upstream = \"app\"\nproxy_host = \"*.a.com\""), "8:14: [[route]] proxy_host", "expected \"pass\""),
        (route("upstream = \"app\"\nproxy_host = \"a.com:0\""), "8:14: [[route]] proxy_host", "expected a port from 1 to 65535"),
        (route("upstream = \"app\"\nproxy_host = \"\""), "8:14: [[route]] proxy_host", "expected \"pass\""),
        // Routes that could never be chosen.
        (route("upstream = \"app\"\n[[route]]\nprefix = \"/x/\"\nupstream = \"b\""), "9:10: [[route]] prefix", "\"/x/\" is already a proxy route for any host"),
        (route("upstream = \"app\"\nhost = [\"a.com\", \"b.com\"]\n[[route]]\nprefix = \"/x/\"\nupstream = \"b\"\nhost = [\"B.com\", \"a.com\"]"), "10:10: [[route]] prefix", "already a proxy route for the same hosts"),
        (route("upstream = \"app\"\n[[route]]\nprefix = \"/x/\""), "9:10: [[route]] prefix", "already a proxy route for any host; a static route beside it would never be used"),
        (route("\n[[route]]\nprefix = \"/x/\"\nupstream = \"b\""), "9:10: [[route]] prefix", "already a static route; a proxy route on it needs host = [...]"),
        (route("upstream = \"app\"\nbogus = 1"), "8:1:", "bogus: unknown key"),
        // Routes: paths as requests are matched, and what goes upstream.
        (format!("{TWO}[[route]]\nprefix = \"/%70rivate/\"\nupstream = \"app\"\n"), "6:10: [[route]] prefix", "normalized path, which is spelled \"/private/\"; write that"),
        ("[[route]]\nprefix = \"/a/../b/\"\n".into(), "2:10: [[route]] prefix", "spelled \"/b/\""),
        ("[[route]]\nprefix = \"/a;v=1/\"\n".into(), "2:10: [[route]] prefix", "segment parameters (;...) set aside, so \"/a;v=1/\" would match none"),
        ("[[route]]\nprefix = \"/my files/\"\n".into(), "2:10: [[route]] prefix", "forbidden byte in path: expected a path as requests are matched"),
        (route("upstream = \"app\"\nforward_path = \"as-is\""), "8:16: [[route]] forward_path", "expected one of \"normalized\", \"raw\", got \"as-is\""),
        (route("forward_path = \"raw\""), "7:16: [[route]] forward_path", "only for a proxy route"),
        (route("upstream = \"app\"\nupgrade = [\"h2c\"]"), "8:12: [[route]] upgrade", "h2c is never passed on"),
        (route("upstream = \"app\"\nupgrade = [\"a b\"]"), "8:12: [[route]] upgrade", "expected a protocol name"),
        (route("upstream = \"app\"\nupgrade = [\"X\", \"x\"]"), "8:17: [[route]] upgrade", "\"x\" is listed twice"),
        ("[proxy]\nencoded_slash = \"keep\"\n".into(), "2:17: [proxy] encoded_slash", "expected one of \"reject\", \"pass\", got \"keep\""),
        ("[proxy]\nunderscores_in_headers = \"on\"\n".into(), "2:26: [proxy] underscores_in_headers", "expected one of \"drop\", \"pass\", \"reject\""),
        ("[proxy]\npath_parameters = \"strip\"\n".into(), "2:19: [proxy] path_parameters", "expected one of \"set_aside\", \"reject\", got \"strip\""),
        ("[proxy]\ntrusted_forwarders = [\"10.0.0.1/8\"]\n".into(), "2:23: [proxy] trusted_forwarders", "has bits set past its prefix length"),
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

/// The examples in the README and the module doc are valid configs.
#[test]
fn documented_examples_are_valid() {
    let examples = super::tests::documented_examples(
        "config/mod.rs",
        include_str!("mod.rs"),
        "[upstream.app]",
    );
    for (source, block) in &examples {
        // The static route's root may not exist here.
        let text = block.replace("alias = \"/srv/assets\"", "alias = \".\"");
        let p = parse(&text).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(p.proxy.upstreams.len(), 1, "{source}");
        assert_eq!(p.proxy.routes.len(), 1, "{source}");
        assert!(p.proxy.upstreams[0].active().is_some(), "{source}");
    }
}

#[test]
fn server_addresses() {
    #[rustfmt::skip]
    let cases: &[(&str, Option<(&str, u16)>)] = &[
        ("127.0.0.1:9000",        Some(("127.0.0.1", 9000))),
        ("[::1]:9000",            Some(("::1", 9000))),
        ("[0:0::1]:1",            Some(("::1", 1))),
        ("[2001:DB8::1]:65535",   Some(("2001:db8::1", 65535))),
        ("localhost:80",          Some(("localhost", 80))),
        ("App2.Internal:9000",    Some(("app2.internal", 9000))),
        ("my_service:8080",       Some(("my_service", 8080))),
        ("a.example.com.:443",    Some(("a.example.com.", 443))),
        ("x-1.y2:1",              Some(("x-1.y2", 1))),
        ("a",                     None),
        ("a:",                    None),
        (":1",                    None),
        ("a:0",                   None),
        ("a:65536",               None),
        ("a:1a",                  None),
        ("a:-1",                  None),
        ("::1",                   None),
        ("[::1]",                 None),
        ("[::1]:",                None),
        ("[::1]x:1",              None),
        ("[1.2.3.4]:1",           None),
        ("http://a:1",            None),
        ("a:1/path",              None),
        ("a/b:1",                 None),
        ("a b:1",                 None),
        ("é.com:1",               None),
        ("1.2.3:1",               None),
        ("999.0.0.1:1",           None),
        ("a-.b:1",                None),
        ("*.a:1",                 None),
    ];
    for &(text, want) in cases {
        let got = server_addr(text);
        assert_eq!(
            got.as_ref().ok().map(|(h, p)| (h.as_str(), *p)),
            want,
            "{text:?}: {got:?}"
        );
    }
}

#[test]
fn route_hosts_and_host_headers() {
    #[rustfmt::skip]
    let hosts: &[(&str, Option<&str>)] = &[
        ("Example.COM",    Some("example.com")),
        ("*.Example.com",  Some("*.example.com")),
        ("example.com.",   Some("example.com")),
        ("127.0.0.1",      Some("127.0.0.1")),
        ("[::1]",          Some("[::1]")),
        ("localhost",      Some("localhost")),
        ("*.",             None),
        ("*.1.2.3.4",      None),
        ("a.*",            None),
        ("**.a",           None),
        ("a:80",           None),
        ("",               None),
        ("[::1]:80",       None),
    ];
    for &(text, want) in hosts {
        assert_eq!(route_host(text).ok().as_deref(), want, "{text:?}");
    }
    #[rustfmt::skip]
    let headers: &[(&str, Option<HostHeader>)] = &[
        ("pass",             Some(HostHeader::Pass)),
        ("upstream",         Some(HostHeader::Upstream)),
        ("App.internal",     Some(HostHeader::Set("app.internal".into()))),
        ("app:8080",         Some(HostHeader::Set("app:8080".into()))),
        ("10.0.0.1:80",      Some(HostHeader::Set("10.0.0.1:80".into()))),
        ("[::1]:80",         Some(HostHeader::Set("[::1]:80".into()))),
        ("[::1]",            Some(HostHeader::Set("[::1]".into()))),
        // The keywords in any case: a host named "Pass" would be written
        // back as the keyword (found by the config fuzzer).
        ("Pass",             Some(HostHeader::Pass)),
        ("UPSTREAM",         Some(HostHeader::Upstream)),
        ("",                 None),
        ("a:",               None),
        ("a:99999",          None),
        ("*.a.com",          None),
        ("http://a",         None),
        ("a b",              None),
    ];
    for (text, want) in headers {
        assert_eq!(proxy_host(text).ok(), *want, "{text:?}");
    }
}

/// A config with every kind of proxy value, for the round trip in
/// `tests.rs`.
pub(super) const ROUND_TRIP: &str = r#"
[server]
deny = ["198.51.100.0/24"]

[proxy]
x_forwarded = false
forwarded = true
trusted_forwarders = ["10.0.0.0/8", "::1"]
via = false
encoded_slash = "pass"
path_parameters = "reject"
allow_trace = true
underscores_in_headers = "reject"

[upstream."z-last"]
servers = ["[2001:db8::1]:443", { addr = "Name.Example:80", weight = 1000 }, "10.0.0.1:1"]
balance = "hash"
hash_key = "cookie:SID"
resolve_every = "1500ms"
max_idle = 0
idle_timeout = "1h"
connect_timeout = "250ms"
send_timeout = 7
response_timeout = "2m"
body_timeout = "90s"
retries = 0
retry_on = []
max_fails = 0
health_path = "/h?x=1"
health_interval = "3s"
health_timeout = "3s"
health_status = 599
health_fall = 1
health_rise = 100

[upstream.a]
servers = ["a:1"]
balance = "least_conn"
retry_on = ["connect", "timeout", "invalid_response", "http_502", "http_503", "http_504"]
max_fails = 7
fail_window = "1s"
fail_cooldown = "2s"

[upstream.m]
servers = ["m:1"]
balance = "hash"
hash_key = "header:X-Real-IP"

[upstream.p]
servers = ["p:1"]
balance = "p2c"

[[route]]
prefix = "/s/"
listing = true
allow = ["10.0.0.0/8", "2001:db8::/32"]
deny = ["10.6.0.0/16"]
rate_limit = "api"

[[rate_limit]]
name = "api"
key = "header:X-Api-Key"
rate = "30/m"
burst = 5
status = 503

[[rate_limit]]
name = "whole"
key = "route"
rate = "100/s"

[[vhost]]
names = ["v.example"]
allow = ["192.0.2.7"]

[cache.pages]
memory = "1g"
max_object = 1000
lock_timeout = "100ms"
stale_while_revalidate_max = 0
stale_if_error_max = "1h"
heuristic_percent = 0
heuristic_max = "90s"
hit_for_miss = "2m"
ignore_query = ["utm_source", "gclid"]
key_headers = ["Accept-Language"]
key_cookies = ["Lang"]
purge_from = ["10.0.0.0/8", "all"]

[cache.unused]

[[route]]
prefix = "/"
upstream = "z-last"
cache = "pages"
proxy_host = "upstream"
forward_path = "raw"
upgrade = ["my-proto", "other"]

[[route]]
prefix = "/s/"
upstream = "a"
host = ["b.example", "*.a.example"]
strip_prefix = true
proxy_host = "[::1]:8080"

[[route]]
prefix = "/r/"
upstream = "m"
deny = ["all"]
replace_prefix = "/other/"
proxy_host = "literal.example"

[[route]]
prefix = "/p"
upstream = "p"
rate_limit = "whole"
strip_prefix = false

[upstream.php]
protocol = "fastcgi"
servers = ["unix:php.sock", { addr = "unix:/run/php/b.sock", weight = 5 }, "127.0.0.1:9000"]
max_conns = 65535
queue_size = 0
queue_timeout = "250ms"
keep_conn = false
max_fails = 0

[upstream.fpm]
protocol = "fastcgi"
servers = ["[::1]:9000"]
balance = "hash"
hash_key = "cookie:PHPSESSID"

[[route]]
prefix = "/php/"
upstream = "php"
host = ["php.example"]
root = "."
extension = ".phtml"
index = "main.phtml"

[[route]]
prefix = "/fpm/"
upstream = "fpm"
cache = "unused"
"#;
