//! `[[rewrite]]` and the vhosts' and routes' `rewrite`: what each key
//! reads as, each error at its line and key, literal prefixes, the rules a
//! request finds, and what `to_toml` writes back.

use std::net::IpAddr;
use std::path::Path;

use crate::config::rewrite::{literal_prefix, Outcome, Part};
use crate::config::Config;
use crate::edge::rewrite::{find, Level, Request};

const NAME: &str = "ringside.toml";
const UP: &str = "[upstream.app]\nservers = [\"127.0.0.1:9000\"]\n";

fn parse(text: &str) -> Result<Config, String> {
    Config::parse(text, Path::new(NAME)).map_err(|e| e.to_string())
}

fn config(text: &str) -> Config {
    parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn every_key_is_read() {
    let c = config(&format!(
        "[[rewrite]]\npattern = \"^/old/(.*)$\"\nhost = [\"A.example\", \"*.b.example\"]\n\
         method = [\"get\"]\nquery = \"x=1\"\nheader = {{ \"User-Agent\" = \"Mobile\" }}\n\
         cookie = {{ beta = \"^1$\" }}\nclient = [\"10.0.0.0/8\", \"::1\"]\n\
         redirect = \"https://$host/new/${{1}}?$query$$\"\nstatus = 301\n\
         [[vhost]]\nnames = [\"a.example\"]\nrewrite = [{{ pattern = \"^/x\", answer = \"no\\n\", status = 403 }}]\n\
         {UP}[[route]]\nprefix = \"/app/\"\nupstream = \"app\"\n\
         rewrite = [{{ pattern = \"^/app/(a)(b)\", to = \"/app/$2/$1?q=$1\" }}]\n\
         [[route]]\nprefix = \"/files/\"\nlisting = true\nrewrite = [{{ pattern = \"/\", to = \"/\" }}]\n"
    ));
    let r = &c.rewrites.server[0];
    assert_eq!(&*r.prefix, b"/old/");
    assert_eq!(r.hosts, ["a.example", "*.b.example"]);
    assert_eq!(r.methods, ["GET"]);
    assert_eq!(r.query.as_ref().unwrap().text, "x=1");
    assert_eq!(r.headers[0].0, "user-agent");
    assert_eq!(r.cookies[0].0, "beta");
    assert_eq!(r.clients.len(), 2);
    let Outcome::Redirect { status: 301, to } = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert_eq!(
        to.parts,
        [
            Part::Text("https://".into()),
            Part::Host,
            Part::Text("/new/".into()),
            Part::Group(1),
            Part::Text("?".into()),
            Part::Query,
            Part::Text("$".into()),
        ]
    );
    assert_eq!(
        c.rewrites.vhosts[0][0].outcome,
        Outcome::Answer {
            status: 403,
            body: "no\n".into(),
            content_type: "text/plain".into()
        }
    );
    let Outcome::Rewrite(t) = &c.rewrites.proxy_routes[0][0].outcome else {
        panic!()
    };
    assert_eq!(t.parts[1], Part::Group(2));
    assert_eq!(c.rewrites.static_route("/files/").len(), 1);
    // A redirect's status defaults to 302, an answer's to 200.
    let c = config(
        "[[rewrite]]\npattern = \"^/a\"\nredirect = \"/b\"\n\
         [[rewrite]]\npattern = \"^/c\"\nanswer = \"\"\n",
    );
    assert!(matches!(
        c.rewrites.server[0].outcome,
        Outcome::Redirect { status: 302, .. }
    ));
    assert!(matches!(
        c.rewrites.server[1].outcome,
        Outcome::Answer { status: 200, .. }
    ));
    assert!(config("").rewrites.is_empty());
}

#[test]
fn errors_name_the_line_and_key() {
    for (text, want) in [
        (
            "[[rewrite]]\npattern = \"^/(a\"\nto = \"/b\"\n",
            "ringside.toml:2:11: [[rewrite]] pattern: expected a regular expression, got \"^/(a\": unclosed group",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nredirect = \"/b\"\nstatus = 404\n",
            "ringside.toml:4:10: [[rewrite]] status: expected a redirect status (301, 302, 303, 307 or 308), got 404",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nanswer = \"x\"\nstatus = 99\n",
            "ringside.toml:4:10: [[rewrite]] status: expected an integer from 200 to 599, got 99",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b\"\nredirect = \"/c\"\n",
            "ringside.toml:4:12: [[rewrite]] redirect: conflicts with to: a rule has one outcome",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\n",
            "ringside.toml:2:11: [[rewrite]] pattern: expected one outcome beside it: to, redirect or answer",
        ),
        (
            "[[rewrite]]\npattern = \"^/(a)/(b)\"\nto = \"/$2/$3\"\n",
            "ringside.toml:3:6: [[rewrite]] to: \"/$2/$3\" names $3, but the pattern has 2 groups",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/$uri\"\n",
            "ringside.toml:3:6: [[rewrite]] to: \"/$uri\": unknown variable $uri",
        ),
        (
            "[[rewrite]]\npattern = \"^/(a)\"\nto = \"$1\"\n",
            "ringside.toml:3:6: [[rewrite]] to: expected a path starting with '/', got \"$1\"",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b#top\"\n",
            "ringside.toml:3:6: [[rewrite]] to: \"/b#top\": a rewrite's path and query hold no '#'",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b\"\nstatus = 301\n",
            "ringside.toml:4:10: [[rewrite]] status: goes with redirect or answer, not to",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nredirect = \"ftp://x/\"\n",
            "ringside.toml:3:12: [[rewrite]] redirect: expected a path or an http(s) URL",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b c\"\n",
            "ringside.toml:3:6: [[rewrite]] to: expected visible ASCII without spaces",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b\"\nclient = [\"10.0.0.1/8\"]\n",
            "ringside.toml:4:11: [[rewrite]] client: \"10.0.0.1/8\" has bits set past its prefix length",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b\"\nmethod = []\n",
            "ringside.toml:4:10: [[rewrite]] method: expected at least one entry",
        ),
        (
            "[[vhost]]\nnames = [\"a.example\"]\nrewrite = [{ pattern = \"[\", to = \"/\" }]\n",
            "ringside.toml:3:24: [[vhost]] rewrite pattern: expected a regular expression, got \"[\": unclosed character class",
        ),
        (
            "[[route]]\nprefix = \"/a/\"\nrewrite = [{ pattern = \"^/a\", to = \"/\", answer = \"x\" }]\n",
            "ringside.toml:3:50: [[route]] rewrite answer: conflicts with to",
        ),
        (
            "[[route]]\nprefix = \"/a/\"\nrewrite = []\n",
            "ringside.toml:3:11: [[route]] rewrite: expected at least one rule",
        ),
        (
            "[[rewrite]]\npattern = \"^/a\"\nto = \"/b\"\nfrom = \"x\"\n",
            "ringside.toml:4:1: [[rewrite]] from: unknown key, expected one of `pattern`,",
        ),
    ] {
        let got = parse(text).err().unwrap_or_else(|| panic!("accepted:\n{text}"));
        assert!(got.starts_with(want), "{got}\nwanted {want}");
    }
}

#[test]
fn literal_prefixes_hold_for_every_match() {
    for (pattern, want) in [
        ("^/legacy-7/(.*)$", "/legacy-7/"),
        ("^/old/", "/old/"),
        ("^/a+b", "/a"),
        ("^/ab?c", "/a"),
        ("^/a|/b", ""),
        ("^(/a|/b)", "/"),
        ("/old/", ""),
        ("(?m)^/x", ""),
        ("^/(.*)$", "/"),
        ("^.*", ""),
    ] {
        assert_eq!(
            String::from_utf8(literal_prefix(pattern)).unwrap(),
            want,
            "{pattern}"
        );
    }
}

/// A request as the rules read it.
#[derive(Default)]
struct Fake {
    path: &'static str,
    host: Option<&'static str>,
    cookie: Option<&'static str>,
    peer: Option<&'static str>,
}

impl Request for Fake {
    fn path(&self) -> &[u8] {
        self.path.as_bytes()
    }
    fn query(&self) -> Option<&[u8]> {
        None
    }
    fn host(&self) -> Option<&[u8]> {
        self.host.map(str::as_bytes)
    }
    fn method(&self) -> &[u8] {
        b"GET"
    }
    fn header(&self, _: &str) -> Option<&[u8]> {
        None
    }
    fn cookie(&self, name: &str) -> Option<&[u8]> {
        crate::edge::rewrite::cookie_in(self.cookie?.as_bytes(), name)
    }
    fn peer(&self) -> Option<IpAddr> {
        self.peer.map(|p| p.parse().unwrap())
    }
}

#[test]
fn the_first_rule_whose_conditions_all_hold_is_found() {
    let c = config(
        "[[rewrite]]\npattern = \"^/beta/\"\nhost = [\"a.example\"]\ncookie = { beta = \"^on$\" }\nto = \"/b/\"\n\
         [[rewrite]]\npattern = \"^/beta/\"\nclient = [\"10.0.0.0/8\"]\nto = \"/c/\"\n\
         [[rewrite]]\npattern = \"^/beta/x\"\nto = \"/d/\"\n",
    );
    let rules = &c.rewrites.server;
    let found = |f: Fake| find(rules, &f).map(|r| rules.iter().position(|q| q == r).unwrap());
    let both = Fake {
        path: "/beta/x",
        host: Some("A.example:80"),
        cookie: Some("a=1; beta=on"),
        ..Fake::default()
    };
    assert_eq!(found(both), Some(0));
    let host_only = Fake {
        path: "/beta/x",
        host: Some("a.example"),
        cookie: Some("beta=off"),
        ..Fake::default()
    };
    assert_eq!(found(host_only), Some(2));
    let cookie_only = Fake {
        path: "/beta/y",
        host: Some("b.example"),
        cookie: Some("beta=on"),
        ..Fake::default()
    };
    assert_eq!(found(cookie_only), None);
    let inside = Fake {
        path: "/beta/y",
        peer: Some("::ffff:10.1.2.3"),
        ..Fake::default()
    };
    assert_eq!(found(inside), Some(1));
    assert_eq!(
        found(Fake {
            path: "/other",
            ..Fake::default()
        }),
        None
    );
}

#[test]
fn to_toml_writes_every_rule_and_reads_back() {
    let dir = std::env::temp_dir().join(format!("ringside-rewrite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(NAME);
    let c = config(&format!(
        "[[rewrite]]\npattern = \"^/old/(.*)$\"\nhost = [\"a.example\"]\nmethod = [\"GET\", \"HEAD\"]\n\
         query = \"a=\\\"b\\\"\"\nheader = {{ \"X-A\" = \"1\", \"X-B\" = \"2\" }}\ncookie = {{ s = \"x\" }}\n\
         client = [\"all\"]\nredirect = \"$scheme://$host/n/$1\"\nstatus = 308\n\
         [[rewrite]]\npattern = \"^/gone\"\nanswer = \"line one\\nline 'two' \\\"q\\\"\"\nstatus = 410\ncontent_type = \"text/html\"\n\
         [[vhost]]\nnames = [\"a.example\"]\nrewrite = [{{ pattern = \"^/v\", to = \"/w?x=1?\" }}, {{ pattern = \"^/u\", answer = \"u\" }}]\n\
         {UP}[[route]]\nprefix = \"/app/\"\nupstream = \"app\"\nrewrite = [{{ pattern = \"^/app/(.*)\", to = \"/app/index?q=$1\" }}]\n\
         [[route]]\nprefix = \"/files/\"\nlisting = true\nrewrite = [{{ pattern = \"^/files/a\", to = \"/files/b\" }}]\n"
    ));
    let text = c.to_toml();
    for want in [
        "\n[[rewrite]]\npattern = \"^/old/(.*)$\"\nhost = [\"a.example\"]\nmethod = [\"GET\", \"HEAD\"]\n",
        "redirect = \"$scheme://$host/n/$1\"\nstatus = 308\n",
        "rewrite = [\n  { pattern = \"^/v\", to = \"/w?x=1?\" },\n",
        "rewrite = [\n  { pattern = \"^/app/(.*)\", to = \"/app/index?q=$1\" },\n]\n",
    ] {
        assert!(text.contains(want), "{want}\nnot in\n{text}");
    }
    let back = crate::config::tests::written_back(&c, &path);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(back.rewrites, c.rewrites);
}

/// Each path finds in an indexed [`Level`] of rules with these patterns
/// the very rule the ordered scan finds.
fn indexed_as_scanned(patterns: &[&str], paths: &[&'static str]) {
    let text: String = patterns
        .iter()
        .map(|p| format!("[[rewrite]]\npattern = \"{p}\"\nto = \"/t\"\n"))
        .collect();
    let c = config(&text);
    let rules = &c.rewrites.server;
    let level = Level::new(rules);
    let at = |r: Option<&crate::config::rewrite::Rule>| {
        r.map(|r| rules.iter().position(|q| q == r).unwrap())
    };
    for &path in paths {
        let f = || Fake {
            path,
            ..Fake::default()
        };
        assert_eq!(at(level.find(&f())), at(find(rules, &f())), "{path:?}");
    }
}

/// A level of many rules finds candidates by the path's byte past their
/// shared prefix: it must find the very rule the ordered scan finds, for
/// rules with and without literal prefixes, prefixes of one another, and
/// paths that end at, inside or past the prefixes.
#[test]
fn an_indexed_level_finds_what_the_ordered_scan_finds() {
    indexed_as_scanned(
        &[
            "^/blog/(.*)$",
            "^/b",
            r"\\.php$",
            "^/blog",
            "^/forum/([0-9]+)$",
            "^/",
            "^/a/b/",
            "^/a/",
            "^/zz",
            "(?i)^/CASE/",
            "^/blog/x$",
            r"^/\\x7f",
            "^/é/",
            "wiki",
            "^/wp-admin/",
        ],
        &[
            "/",
            "/b",
            "/blog",
            "/blog/",
            "/blog/x",
            "/blog/y",
            "/x.php",
            "/forum/12",
            "/forum/x",
            "/a",
            "/a/",
            "/a/b/c",
            "/zz",
            "/zzz",
            "/CASE/1",
            "/case/1",
            "/\u{7f}",
            "/é/x",
            "/wiki",
            "/other/wiki",
            "/wp-admin/",
            "/w",
            "",
        ],
    );
    // Every rule with a literal prefix: a shared gate, then the index.
    indexed_as_scanned(
        &[
            "^/old-a/",
            "^/old-b/",
            "^/old-c/(.*)$",
            "^/old-",
            "^/old-a/x",
            "^/old-d/",
            "^/old-e/",
            "^/old-f/",
            "^/old-g/",
        ],
        &[
            "/old-", "/old-a/", "/old-a/x", "/old-c/1", "/old-z", "/ol", "/new", "/old-g/",
        ],
    );
}
