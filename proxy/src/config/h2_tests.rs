//! Unit tests for HTTP/2 upstreams in the config: `protocol = "h2"` and
//! `"auto"`, the `h2_*` keys and their bounds, the keys refused where they
//! would do nothing, `[[route]] grpc`, and what `to_toml` writes back.

use std::path::Path;
use std::time::Duration;

use super::{Config, ConfigError};
use crate::upstream::settings::{H2Settings, HttpVersion, Protocol};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("ringside.toml"))
}

fn parse_ok(text: &str) -> Config {
    parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const ROUTE: &str = "[[route]]\nprefix = \"/\"\nupstream = \"g\"\n";

#[test]
fn h2_upstreams_take_their_keys_and_defaults() {
    let c = parse_ok(&format!(
        "[upstream.g]\nprotocol = \"h2\"\nservers = [\"a:50051\"]\n{ROUTE}"
    ));
    let u = &c.proxy.upstreams[0];
    assert_eq!(u.protocol_kind(), Protocol::H2);
    let h = u.http().unwrap();
    assert_eq!(h.version, HttpVersion::H2);
    assert_eq!(h.h2, H2Settings::default());
    assert_eq!(h.h2.connections, 1);

    let c = parse_ok(&format!(
        "[upstream.g]\nprotocol = \"auto\"\ntls = true\ntls_verify = false\nservers = [\"a:443\"]\n\
         h2_connections = 4\nh2_ping_interval = \"5s\"\nh2_window = \"1m\"\n{ROUTE}grpc = true\n"
    ));
    let h = c.proxy.upstreams[0].http().unwrap();
    assert_eq!(h.version, HttpVersion::Auto);
    assert_eq!(
        h.h2,
        H2Settings {
            connections: 4,
            ping_interval: Duration::from_secs(5),
            stream_window: 1 << 20,
        }
    );
    assert!(c.proxy.routes[0].grpc);
}

#[test]
fn h2_keys_are_refused_where_they_do_nothing_and_out_of_bounds() {
    let cases = [
        (
            "[upstream.g]\nservers = [\"a:1\"]\nh2_connections = 2\n",
            "ringside.toml:3:18: [upstream.g] h2_connections: only for protocol = \"h2\" or \"auto\"",
        ),
        (
            "[upstream.g]\nprotocol = \"fastcgi\"\nservers = [\"a:1\"]\nh2_window = \"1m\"\n",
            "ringside.toml:4:13: [upstream.g] h2_window: only for protocol = \"h2\" or \"auto\"",
        ),
        (
            "[upstream.g]\nprotocol = \"h2\"\nservers = [\"a:1\"]\nh2_connections = 0\n",
            "ringside.toml:4:18: [upstream.g] h2_connections:",
        ),
        (
            "[upstream.g]\nprotocol = \"h2\"\nservers = [\"a:1\"]\nh2_window = 100\n",
            "ringside.toml:4:13: [upstream.g] h2_window:",
        ),
        (
            "[upstream.g]\nprotocol = \"h2\"\nservers = [\"a:1\"]\nh2_ping_interval = 0\n",
            "ringside.toml:4:20: [upstream.g] h2_ping_interval:",
        ),
        (
            "[upstream.g]\nprotocol = \"h2\"\nservers = [\"a:1\"]\nsend_proxy_protocol = \"v2\"\n",
            "ringside.toml:4:23: [upstream.g] send_proxy_protocol: only for protocol = \"http\"",
        ),
        (
            "[[route]]\nprefix = \"/\"\nroot = \"/tmp\"\ngrpc = true\n",
            "ringside.toml:4:8: [[route]] grpc: only for a proxy route",
        ),
    ];
    for (text, want) in cases {
        let got = err(text);
        assert!(got.starts_with(want), "want {want:?}...\n got {got}");
    }
}

#[test]
fn to_toml_writes_the_h2_keys_back() {
    let text = format!(
        "[upstream.g]\nprotocol = \"h2\"\nservers = [\"a:50051\"]\nh2_connections = 3\n{ROUTE}grpc = true\n"
    );
    let c = parse_ok(&text);
    let out = c.to_toml();
    for line in [
        "protocol = \"h2\"",
        "h2_connections = 3",
        "h2_ping_interval = \"30s\"",
        "h2_window = \"256k\"",
        "grpc = true",
    ] {
        assert!(out.contains(line), "{line} missing from\n{out}");
    }
    let again = parse_ok(&out);
    assert_eq!(again.proxy, c.proxy);
}
