//! `server_tokens`, `response_headers` and `request_headers`: what each
//! level validates to, how the levels merge, every refusal at its line and
//! key, and the round trip through `to_toml`.

use std::fs;
use std::path::Path;

use ringside_http::fields::Action;

use super::*;
use crate::config::Config;

const NAME: &str = "ringside.toml";
const UP: &str = "[upstream.app]\nservers = [\"127.0.0.1:9000\"]\n";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new(NAME))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

fn pairs(l: &[(&str, &str)]) -> Vec<(String, String)> {
    l.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn levels_validate_to_blocks() {
    let c = parse(&format!(
        "[server]\nserver_tokens = \"edge/2\"\n\
         response_headers = {{ set = {{ \"X-Frame-Options\" = \"DENY\" }}, always = true }}\n\
         {UP}\
         [[vhost]]\nnames = [\"a.example\"]\nrequest_headers = {{ add = {{ \"X-Site\" = \"a\" }} }}\n\
         [[route]]\nprefix = \"/s/\"\nresponse_headers = {{ remove = [\"ETag\"] }}\n\
         [[route]]\nprefix = \"/p/\"\nupstream = \"app\"\n\
         [[route]]\nprefix = \"/q/\"\nupstream = \"app\"\n\
         response_headers = {{ remove = [\"X-Powered-By\"], add = {{ Link = \"</a>; rel=preload\" }} }}\n\
         request_headers = {{ set = {{ \"X-Tenant\" = \"blue\" }}, remove = [\"Cookie\"] }}\n"
    ))
    .unwrap();
    let h = &c.headers;
    assert_eq!(h.server_tokens, ServerTokens::Name("edge/2".into()));
    let server = h.server.response.as_ref().unwrap();
    assert_eq!(server.set, pairs(&[("X-Frame-Options", "DENY")]));
    assert!(server.always);
    assert_eq!(
        h.vhosts[0].request.as_ref().unwrap().add,
        pairs(&[("X-Site", "a")])
    );
    assert_eq!(h.static_routes.len(), 1);
    assert_eq!(
        h.static_route("/s/")
            .unwrap()
            .response
            .as_ref()
            .unwrap()
            .remove,
        ["ETag"]
    );
    assert_eq!(h.proxy_routes.len(), 2);
    assert!(h.proxy_routes[0].is_empty());
    let q = &h.proxy_routes[1];
    let resp = q.response.as_ref().unwrap();
    assert_eq!(resp.remove, ["X-Powered-By"]);
    assert_eq!(resp.add, pairs(&[("Link", "</a>; rel=preload")]));
    assert!(!resp.always);
    let req = q.request.as_ref().unwrap();
    assert_eq!(req.set, pairs(&[("X-Tenant", "blue")]));
    assert_eq!(req.remove, ["Cookie"]);
}

#[test]
fn defaults_are_no_rules_and_the_ringside_token() {
    let c = parse("").unwrap();
    assert!(c.headers.is_empty());
    assert_eq!(c.headers.server_tokens.value(), Some("ringside"));
    let off = parse("[server]\nserver_tokens = false\n").unwrap();
    assert_eq!(off.headers.server_tokens.value(), None);
    let on = parse("[server]\nserver_tokens = true\n").unwrap();
    assert_eq!(on.headers.server_tokens, ServerTokens::On);
}

fn block(set: &[(&str, &str)], add: &[(&str, &str)], remove: &[&str], always: bool) -> Block {
    Block {
        set: pairs(set),
        add: pairs(add),
        remove: remove.iter().map(|s| s.to_string()).collect(),
        always,
    }
}

#[test]
fn levels_merge_field_by_field_the_most_specific_winning() {
    let server = Level {
        response: Some(block(
            &[("X-A", "server"), ("X-B", "server")],
            &[("X-C", "s")],
            &[],
            true,
        )),
        request: Some(block(&[("X-R", "server")], &[], &[], false)),
    };
    let vhost = Level {
        response: Some(block(&[], &[("x-b", "vhost")], &[], false)),
        request: None,
    };
    let route = Level {
        response: Some(block(&[("X-C", "route")], &[], &["X-A"], false)),
        request: None,
    };
    let f = site_fields([Some(&server), Some(&vhost), Some(&route)]).unwrap();
    let got: Vec<(Action, String, String, bool)> = f
        .response
        .rules()
        .iter()
        .map(|r| {
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            (r.action, s(&r.name), s(&r.value), r.always)
        })
        .collect();
    let want = [
        (Action::Add, "x-b".into(), "vhost".into(), false),
        (Action::Set, "X-C".into(), "route".into(), false),
        (Action::Remove, "X-A".into(), "".into(), false),
    ];
    assert_eq!(got, want);
    // The request's rules come from the server alone.
    assert_eq!(f.request.lines(0).count(), 1);
    // Nothing anywhere: no pointer at all.
    assert!(site_fields([None, Some(&Level::default()), None]).is_none());
    // The server's alone, where nothing more specific speaks.
    let f = site_fields([Some(&server), None, None]).unwrap();
    assert_eq!(f.response.rules().len(), 3);
}

#[test]
fn refusals_name_the_line_and_key() {
    let route = |k: &str| format!("{UP}[[route]]\nprefix = \"/\"\nupstream = \"app\"\n{k}\n");
    for (text, want) in [
        (
            route("request_headers = { set = { \"Content-Length\" = \"5\" } }"),
            "ringside.toml:6:29: [[route]] request_headers.set: Content-Length cannot be changed here: it frames",
        ),
        (
            route("request_headers = { set = { Host = \"x\" } }"),
            "ringside.toml:6:29: [[route]] request_headers.set: Host cannot be changed here: set the route's proxy_host instead",
        ),
        (
            route("request_headers = { remove = [\"Transfer-Encoding\"] }"),
            "ringside.toml:6:31: [[route]] request_headers.remove: Transfer-Encoding cannot be changed here",
        ),
        (
            route("request_headers = { add = { Connection = \"close\" } }"),
            "ringside.toml:6:29: [[route]] request_headers.add: Connection cannot be changed here",
        ),
        (
            route("request_headers = { set = { \":authority\" = \"x\" } }"),
            "ringside.toml:6:29: [[route]] request_headers.set: expected a field name (a token of at most 64 characters), got \":authority\"",
        ),
        (
            route("request_headers = { set = { \"X_A\" = \"x\" } }"),
            "ringside.toml:6:29: [[route]] request_headers.set: X_A cannot be changed here: an upstream may read",
        ),
        (
            route("request_headers = { set = { Via = \"x\" } }"),
            "ringside.toml:6:29: [[route]] request_headers.set: Via cannot be changed here: [proxy] via writes it",
        ),
        (
            route("request_headers = { set = { \"X-A\" = \"a\" }, always = true }"),
            "ringside.toml:6:53: [[route]] request_headers.always: always is for response_headers",
        ),
        (
            route("response_headers = { set = { \"X-A\" = \"a\\nb\" } }"),
            "ringside.toml:6:38: [[route]] response_headers.set: expected a non-empty header value",
        ),
        (
            route("response_headers = { set = { \"X-A\" = \" a\" } }"),
            "ringside.toml:6:38: [[route]] response_headers.set: expected a value without leading or trailing whitespace",
        ),
        (
            route("response_headers = { set = { \"X-A\" = \"a\" }, remove = [\"x-a\"] }"),
            "ringside.toml:6:55: [[route]] response_headers.remove: x-a is named twice",
        ),
        (
            route("response_headers = { }"),
            "ringside.toml:6:20: [[route]] response_headers: expected set, add or remove",
        ),
        (
            route("response_headers = { sett = {} }"),
            "ringside.toml:6:22: [route.response_headers] sett: unknown key, expected one of `set`, `add`, `remove`, `always`",
        ),
        (
            "[server]\nresponse_headers = { set = { Server = \"x\" } }\n".into(),
            "ringside.toml:2:30: [server] response_headers.set: Server cannot be changed here: set [server] server_tokens instead",
        ),
        (
            "[server]\nserver_tokens = \"a\\r\\nb\"\n".into(),
            "ringside.toml:2:17: [server] server_tokens: expected a non-empty header value",
        ),
        (
            "[server]\nserver_tokens = 3\n".into(),
            "ringside.toml:2:17: [server] server_tokens: expected true, false or the Server field's value",
        ),
        (
            "[[vhost]]\nnames = [\"a.example\"]\nresponse_headers = { add = { Date = \"x\" } }\n".into(),
            "ringside.toml:3:30: [[vhost]] response_headers.add: Date cannot be changed here",
        ),
        (
            "[[route]]\nprefix = \"/s/\"\nrequest_headers = { set = { \"X-A\" = \"a\" } }\n".into(),
            "ringside.toml:3:19: [[route]] request_headers: a route of static files sends no requests upstream",
        ),
    ] {
        let got = error(&text);
        assert!(got.starts_with(want), "{got}\nwanted {want}");
    }
}

#[test]
fn to_toml_writes_every_level_and_reads_back() {
    let dir = std::env::temp_dir().join(format!("ringside-headers-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(NAME);
    let c = parse(&format!(
        "[server]\nserver_tokens = \"a \\\"b\\\"\"\n\
         response_headers = {{ set = {{ \"X-Frame-Options\" = \"DENY\", \"X-B\" = \"1\" }}, always = true }}\n\
         request_headers = {{ remove = [\"Cookie\", \"X-Debug\"] }}\n\
         {UP}\
         [[vhost]]\nnames = [\"a.example\"]\nresponse_headers = {{ add = {{ \"X-Site\" = \"a\" }} }}\n\
         [[route]]\nprefix = \"/s/\"\nresponse_headers = {{ remove = [\"ETag\"] }}\n\
         [[route]]\nprefix = \"/p/\"\nupstream = \"app\"\n\
         response_headers = {{ add = {{ Link = \"<a>\" }}, remove = [\"X-Powered-By\"] }}\n\
         request_headers = {{ set = {{ \"X-Tenant\" = \"blue\" }}, add = {{ \"X-Two\" = \"2\" }} }}\n"
    ))
    .unwrap();
    let text = c.to_toml();
    for want in [
        "server_tokens = 'a \"b\"'\n",
        "response_headers = { set = { \"X-B\" = \"1\", \"X-Frame-Options\" = \"DENY\" }, always = true }\n",
        "request_headers = { remove = [\"Cookie\", \"X-Debug\"] }\n",
        "response_headers = { add = { \"X-Site\" = \"a\" } }\n",
        "response_headers = { remove = [\"ETag\"] }\n",
        "response_headers = { add = { \"Link\" = \"<a>\" }, remove = [\"X-Powered-By\"] }\n",
        "request_headers = { set = { \"X-Tenant\" = \"blue\" }, add = { \"X-Two\" = \"2\" } }\n",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    let back = crate::config::tests::written_back(&c, &path);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(back.headers, c.headers);
    // The defaults write back as the default.
    let plain = parse("").unwrap().to_toml();
    assert!(plain.contains("server_tokens = true\n"), "{plain}");
    assert!(
        !plain.contains("response_headers") && !plain.contains("request_headers"),
        "{plain}"
    );
}

/// The module doc's example is a valid config.
#[test]
fn documented_example_is_valid() {
    let doc: String = include_str!("headers.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let block = doc
        .split("```toml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let text =
        format!("[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"127.0.0.1:9000\"]\n{block}");
    let c = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(!c.headers.proxy_routes[0].is_empty());
}
