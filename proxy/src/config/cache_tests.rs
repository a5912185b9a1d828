//! `[cache.NAME]` and a route's `cache`: each key read, the defaults, each
//! error at its line and key, and what `to_toml` writes back.

use std::fs;
use std::path::Path;
use std::time::Duration;

use ringside_cache::Settings;
use ringside_runtime::cidr::Cidr;

use crate::config::Config;

const NAME: &str = "ringside.toml";

fn parse(text: &str) -> Result<Config, String> {
    Config::parse(text, Path::new(NAME)).map_err(|e| e.to_string())
}

fn config(text: &str) -> Config {
    parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

const UP: &str = "[upstream.app]\nservers = [\"127.0.0.1:9000\"]\n";

#[test]
fn every_key_is_read() {
    let c = config(
        r#"[cache.pages]
memory = "256m"
max_object = "1m"
disk = "/var/cache/ringside/pages"
disk_size = "8m"
lock_timeout = "250ms"
stale_while_revalidate_max = "1h"
stale_if_error_max = 0
heuristic_percent = 100
heuristic_max = 600
hit_for_miss = "30s"
ignore_query = ["utm_source", "fbclid"]
key_headers = ["Accept-Language", "x-device"]
key_cookies = ["Lang", "ab"]
purge_from = ["10.0.0.0/8", "::1", "all"]
"#,
    );
    let mut purge = Vec::new();
    for s in ["10.0.0.0/8", "::1", "all"] {
        purge.extend(Cidr::parse(s).unwrap());
    }
    assert_eq!(
        c.caches,
        [Settings {
            name: "pages".into(),
            memory: 256 << 20,
            max_object: 1 << 20,
            disk: Some("/var/cache/ringside/pages".into()),
            disk_size: 8 << 20,
            lock_timeout: Duration::from_millis(250),
            stale_while_revalidate_max: Duration::from_secs(3600),
            stale_if_error_max: Duration::ZERO,
            heuristic_percent: 100,
            heuristic_max: Duration::from_secs(600),
            hit_for_miss: Duration::from_secs(30),
            ignore_query: vec!["utm_source".into(), "fbclid".into()],
            // Header names are lower-cased; cookie names keep their case.
            key_headers: vec!["accept-language".into(), "x-device".into()],
            key_cookies: vec!["Lang".into(), "ab".into()],
            purge_from: purge,
        }]
    );
}

#[test]
fn keys_left_out_take_the_defaults() {
    let c = config("[cache.a]\n[cache.b]\nmemory = \"1g\"\n");
    let mut b = Settings::named("b");
    b.memory = 1 << 30;
    assert_eq!(c.caches, [Settings::named("a"), b]);
    assert!(config("").caches.is_empty());
    assert!(Config::default().caches.is_empty());
    // max_object = memory / 16 exactly is taken.
    let c = config("[cache.a]\nmemory = \"64k\"\nmax_object = \"4k\"\n");
    assert_eq!((c.caches[0].memory, c.caches[0].max_object), (65536, 4096));
    // No disk tier unless `disk` is given; its size then defaults to 1g.
    assert_eq!(Settings::named("a").disk, None);
    let c = config("[cache.a]\ndisk = \"/srv/cache\"\n");
    assert_eq!(c.caches[0].disk.as_deref(), Some(Path::new("/srv/cache")));
    assert_eq!(c.caches[0].disk_size, 1 << 30);
    assert_eq!(c.caches[0].disk_size, Settings::named("a").disk_size);
    // disk_size = 1m (the least) with max_object = disk_size / 8 exactly.
    let c = config("[cache.a]\ndisk = \"/d\"\ndisk_size = \"1m\"\nmax_object = \"128k\"\n");
    assert_eq!(
        (c.caches[0].disk_size, c.caches[0].max_object),
        (1 << 20, 128 << 10)
    );
}

/// A relative `disk` is taken from the config file's directory, as the
/// config's other paths are; an absolute one is kept.
#[test]
fn a_relative_disk_is_taken_from_the_files_directory() {
    // The file's directory need not exist; the root (from it too) must.
    let text = "[server]\nroot = \"/\"\n[cache.a]\ndisk = \"cache/a\"\n[cache.b]\ndisk = \"../b/\"\n[cache.c]\ndisk = \"/abs/c\"\n";
    let c = Config::parse(text, Path::new("/etc/ringside/ringside.toml")).unwrap();
    let disks: Vec<_> = c.caches.iter().map(|c| c.disk.clone().unwrap()).collect();
    assert_eq!(
        disks,
        [
            Path::new("/etc/ringside/cache/a"),
            Path::new("/etc/ringside/../b"),
            Path::new("/abs/c"),
        ]
    );
    // A file named without a directory: from the working directory, made
    // absolute.
    let c = config("[cache.a]\ndisk = \"./pages\"\n");
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(c.caches[0].disk, Some(cwd.join("pages")));
}

/// Two caches on one directory would share its files: refused at the
/// `disk` that comes later in the file, however the names sort.
#[test]
fn two_caches_may_not_share_a_disk() {
    let got = err("[cache.b]\ndisk = \"/var/cache/x\"\n[cache.a]\ndisk = \"/var/cache/./x/\"\n");
    let want = "ringside.toml:4:8: [cache.a] disk: /var/cache/x is [cache.b]'s disk too: two caches would share its files; give each cache a directory of its own";
    assert!(got.starts_with(want), "{got}\nwanted {want}");
    // The same directory, once relative and once absolute.
    let text = "[server]\nroot = \"/\"\n\
        [cache.a]\ndisk = \"/etc/ringside/c\"\n[cache.z]\ndisk_size = \"32m\"\ndisk = \"c\"\n";
    let got = Config::parse(text, Path::new("/etc/ringside/ringside.toml"))
        .unwrap_err()
        .to_string();
    let want =
        "/etc/ringside/ringside.toml:7:8: [cache.z] disk: /etc/ringside/c is [cache.a]'s disk too";
    assert!(got.starts_with(want), "{got}\nwanted {want}");
    // Beneath one another is another directory: each core's files are in
    // core-<N>/ of its own cache's.
    let c = config("[cache.a]\ndisk = \"/d\"\n[cache.b]\ndisk = \"/d/b\"\n[cache.c]\n[cache.e]\n");
    assert_eq!(c.caches.len(), 4);
}

#[test]
fn caches_are_sorted_by_name_and_routes_index_them() {
    let c = config(&format!(
        "[cache.zeta]\n[cache.alpha]\n{UP}\
         [[route]]\nprefix = \"/z/\"\nupstream = \"app\"\ncache = \"zeta\"\n\
         [[route]]\nprefix = \"/static/\"\n\
         [[route]]\nprefix = \"/none/\"\nupstream = \"app\"\n\
         [[route]]\nprefix = \"/a/\"\nupstream = \"app\"\ncache = \"alpha\"\n"
    ));
    let names: Vec<&str> = c.caches.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    let routes: Vec<(&str, Option<usize>)> = c
        .proxy
        .routes
        .iter()
        .map(|r| (r.prefix.as_str(), r.cache))
        .collect();
    assert_eq!(
        routes,
        [("/z/", Some(1)), ("/none/", None), ("/a/", Some(0))]
    );
}

#[test]
fn a_fastcgi_route_takes_a_cache() {
    let c = config(
        "[cache.php]\n[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"127.0.0.1:9000\"]\n\
         [[route]]\nprefix = \"/\"\nupstream = \"php\"\ncache = \"php\"\n",
    );
    assert_eq!(c.proxy.routes[0].cache, Some(0));
    assert!(c.proxy.routes[0].fastcgi.is_some());
}

#[test]
fn errors_name_the_line_and_key() {
    let cases: Vec<(String, &str)> = vec![
        (
            "[cache.a]\nmemory = 0\n".into(),
            "ringside.toml:2:10: [cache.a] memory: expected a size of at least 1 bytes, got 0",
        ),
        (
            "[cache.a]\nmemory = \"lots\"\n".into(),
            "ringside.toml:2:10: [cache.a] memory: expected a size like 8192",
        ),
        (
            "[cache.a]\nmemory = \"64m\"\nmax_object = \"5m\"\n".into(),
            "ringside.toml:3:14: [cache.a] max_object: expected at most \"4m\" (memory / 16: one response may take at most 1/16 of the cache), got \"5m\"",
        ),
        (
            "[cache.a]\nmax_object = 0\n".into(),
            "ringside.toml:2:14: [cache.a] max_object: expected a size of at least 1 bytes, got 0",
        ),
        // The default max_object (4m) does not fit a smaller memory.
        (
            "[cache.a]\nmemory = \"16m\"\n".into(),
            "ringside.toml:2:10: [cache.a] memory: expected at least \"64m\" (16 times the default max_object, \"4m\": one response may take at most 1/16 of the cache), got \"16m\"; or give a smaller max_object",
        ),
        (
            "[cache.a]\ndisk = \"\"\n".into(),
            "ringside.toml:2:8: [cache.a] disk: expected a directory path, got \"\"",
        ),
        (
            "[cache.a]\ndisk = 5\n".into(),
            "ringside.toml:2:8: [cache.a] disk: expected a string, got the number 5",
        ),
        (
            "[cache.a]\ndisk_size = \"1g\"\n".into(),
            "ringside.toml:2:13: [cache.a] disk_size: needs [cache.a] disk",
        ),
        (
            "[cache.a]\ndisk = \"/d\"\ndisk_size = \"1023k\"\n".into(),
            "ringside.toml:3:13: [cache.a] disk_size: expected a size of at least 1048576 bytes, got \"1023k\"",
        ),
        (
            "[cache.a]\ndisk = \"/d\"\ndisk_size = \"lots\"\n".into(),
            "ringside.toml:3:13: [cache.a] disk_size: expected a size like 8192",
        ),
        (
            "[cache.a]\ndisk = \"/d\"\ndisk_size = \"16m\"\nmax_object = \"3m\"\n".into(),
            "ringside.toml:4:14: [cache.a] max_object: expected at most \"2m\" (disk_size / 8: the disk tier takes an object of at most 1/8 of its size), got \"3m\"",
        ),
        // The default max_object (4m) does not fit a smaller disk_size.
        (
            "[cache.a]\ndisk = \"/d\"\ndisk_size = \"16m\"\n".into(),
            "ringside.toml:3:13: [cache.a] disk_size: expected at least \"32m\" (8 times max_object, \"4m\": the disk tier takes an object of at most 1/8 of its size), got \"16m\"; or give a smaller max_object",
        ),
        (
            "[cache.a]\nheuristic_percent = 101\n".into(),
            "ringside.toml:2:21: [cache.a] heuristic_percent: expected an integer from 0 to 100, got 101",
        ),
        (
            "[cache.a]\nheuristic_percent = -1\n".into(),
            "ringside.toml:2:21: [cache.a] heuristic_percent: expected an integer from 0 to 100, got -1",
        ),
        (
            "[cache.a]\nlock_timeout = \"5 s\"\n".into(),
            "ringside.toml:2:16: [cache.a] lock_timeout: expected a duration like",
        ),
        (
            "[cache.a]\nstale_while_revalidate_max = \"1d\"\n".into(),
            "ringside.toml:2:30: [cache.a] stale_while_revalidate_max: expected a duration like",
        ),
        (
            "[cache.a]\nstale_if_error_max = -5\n".into(),
            "ringside.toml:2:22: [cache.a] stale_if_error_max: expected a duration like",
        ),
        (
            "[cache.a]\nheuristic_max = \"x\"\n".into(),
            "ringside.toml:2:17: [cache.a] heuristic_max: expected a duration like",
        ),
        (
            "[cache.a]\nhit_for_miss = true\n".into(),
            "ringside.toml:2:16: [cache.a] hit_for_miss: expected a duration like",
        ),
        (
            "[cache.a]\nignore_query = [\"a&b\"]\n".into(),
            "ringside.toml:2:17: [cache.a] ignore_query: expected a query parameter name (visible ASCII without '&', '=' or '#'), got \"a&b\"",
        ),
        (
            "[cache.a]\nignore_query = [\"utm\", \"utm\"]\n".into(),
            "ringside.toml:2:24: [cache.a] ignore_query: \"utm\" is listed twice",
        ),
        (
            "[cache.a]\nignore_query = \"utm\"\n".into(),
            "ringside.toml:2:16: [cache.a] ignore_query: expected a list of query parameter names, like [\"utm_source\"], got the string \"utm\"; write it in brackets: [\"utm\"]",
        ),
        (
            "[cache.a]\nkey_headers = [\"accept language\"]\n".into(),
            "ringside.toml:2:16: [cache.a] key_headers: expected a header name (a token like \"accept-language\"), got \"accept language\"",
        ),
        // Listed twice once lower-cased.
        (
            "[cache.a]\nkey_headers = [\"X-A\", \"x-a\"]\n".into(),
            "ringside.toml:2:23: [cache.a] key_headers: \"x-a\" is listed twice",
        ),
        (
            "[cache.a]\nkey_cookies = [\"a=b\"]\n".into(),
            "ringside.toml:2:16: [cache.a] key_cookies: expected a cookie name (a token like \"session\"), got \"a=b\"",
        ),
        (
            "[cache.a]\npurge_from = [\"10.0.0.1/8\"]\n".into(),
            "ringside.toml:2:15: [cache.a] purge_from: \"10.0.0.1/8\" has bits set past its prefix length; the block is 10.0.0.0/8",
        ),
        (
            "[cache.a]\npurge_from = [\"10.0.0.0/8\", \"nope\"]\n".into(),
            "ringside.toml:2:29: [cache.a] purge_from: expected an address, a CIDR block or \"all\", got \"nope\"",
        ),
        (
            "[cache.a]\npurge_from = [\"::1\", \"::1/128\"]\n".into(),
            "ringside.toml:2:22: [cache.a] purge_from: ::1/128 is listed twice",
        ),
        (
            "[cache.a]\nmemroy = \"1m\"\n".into(),
            "ringside.toml:2:1: [cache.a] memroy: unknown key, expected one of `memory`,",
        ),
        (
            "[cache.\"a b\"]\n".into(),
            "ringside.toml:1:8: [cache.\"a b\"]: expected a cache name of letters, digits, '_' and '-', got \"a b\"",
        ),
        (
            "cache = 5\n".into(),
            "ringside.toml:1:9: cache: expected a table per cache, written [cache.NAME], got the number 5",
        ),
        (
            "[cache]\nmemory = \"1m\"\n".into(),
            "ringside.toml:2:10: [cache] memory: expected a table, written [cache.NAME], got the string \"1m\"",
        ),
    ];
    for (text, want) in cases {
        let got = err(&text);
        assert!(got.starts_with(want), "{got}\nwanted {want}");
    }
    // The unknown key's message names the keys a cache takes.
    let got = err("[cache.a]\nmemroy = \"1m\"\n");
    assert!(got.contains("did you mean `memory`?"), "{got}");
}

#[test]
fn a_route_names_a_cache_there_is() {
    let route = |cache: &str| {
        format!("{UP}[[route]]\nprefix = \"/\"\nupstream = \"app\"\ncache = {cache}\n")
    };
    for (text, want) in [
        (
            route("\"pages\""),
            "ringside.toml:6:9: [[route]] cache: no [cache.pages] is defined (there are no caches)",
        ),
        (
            format!("[cache.b]\n[cache.a]\n{}", route("\"pages\"")),
            "ringside.toml:8:9: [[route]] cache: no [cache.pages] is defined (caches: \"a\", \"b\")",
        ),
        (
            format!("[cache.a]\n{}", route("1")),
            "ringside.toml:7:9: [[route]] cache: expected a string, got the number 1",
        ),
        (
            "[cache.a]\n[[route]]\nprefix = \"/files/\"\ncache = \"a\"\n".to_owned(),
            "ringside.toml:4:9: [[route]] cache: only for a route to an upstream (HTTP or FastCGI): static files are served from the static file cache and are not stored again",
        ),
    ] {
        let got = err(&text);
        assert!(got.starts_with(want), "{got}\nwanted {want}");
    }
}

#[test]
fn a_cache_no_route_names_is_fine() {
    let c = config(&format!(
        "[cache.unused]\n{UP}[[route]]\nprefix = \"/\"\nupstream = \"app\"\n"
    ));
    assert_eq!(c.caches.len(), 1);
    assert_eq!(c.proxy.routes[0].cache, None);
}

#[test]
fn to_toml_writes_every_key_and_reads_back() {
    let dir = std::env::temp_dir().join(format!("ringside-cache-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(NAME);
    let c = config(&format!(
        "[cache.pages]\nmemory = 100000000\nmax_object = 12345\ndisk = \"/var/cache/ringside/a \\\"b\\\"\"\n\
         disk_size = 1234567\nlock_timeout = \"1500ms\"\n\
         heuristic_percent = 0\nhit_for_miss = 0\n\
         ignore_query = [\"utm_source\", \"a\\\"b\"]\nkey_headers = [\"Accept\"]\n\
         key_cookies = [\"s\"]\npurge_from = [\"all\", \"::1\"]\n\
         [cache.plain]\n{UP}\
         [upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"127.0.0.1:9001\"]\n\
         [[route]]\nprefix = \"/a/\"\nupstream = \"app\"\ncache = \"pages\"\n\
         [[route]]\nprefix = \"/b/\"\nupstream = \"app\"\n\
         [[route]]\nprefix = \"/php/\"\nupstream = \"php\"\nroot = \".\"\ncache = \"plain\"\n"
    ));
    let text = c.to_toml();
    let want = r#"
[cache.pages]
memory = 100000000
max_object = 12345
disk = '/var/cache/ringside/a "b"'
disk_size = 1234567
lock_timeout = "1500ms"
stale_while_revalidate_max = "86400s"
stale_if_error_max = "86400s"
heuristic_percent = 0
heuristic_max = "86400s"
hit_for_miss = "0s"
ignore_query = ["utm_source", 'a"b']
key_headers = ["accept"]
key_cookies = ["s"]
purge_from = ["0.0.0.0/0", "::/0", "::1/128"]

[cache.plain]
memory = "64m"
max_object = "4m"
lock_timeout = "5s"
stale_while_revalidate_max = "86400s"
stale_if_error_max = "86400s"
heuristic_percent = 10
heuristic_max = "86400s"
hit_for_miss = "120s"
ignore_query = []
key_headers = []
key_cookies = []
purge_from = []
"#;
    assert!(text.contains(want), "{text}");
    assert!(
        text.contains("upstream = \"app\"\ncache = \"pages\"\n"),
        "{text}"
    );
    assert!(
        text.contains("upstream = \"php\"\ncache = \"plain\"\n"),
        "{text}"
    );
    assert_eq!(text.matches("cache = ").count(), 2, "{text}");
    let back = crate::config::tests::written_back(&c, &path);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(back.caches, c.caches);
    assert_eq!(back.proxy, c.proxy);
}

/// The README's example gives every default (so the README says what
/// `Settings::named` does), and the module doc's is valid.
#[test]
fn documented_examples_are_valid() {
    let examples = crate::config::tests::documented_examples(
        "config/cache.rs",
        include_str!("cache.rs"),
        "[cache.pages]",
    );
    for (source, block) in &examples {
        let c = parse(block).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(c.caches.len(), 1, "{source}");
        assert_eq!(c.caches[0].name, "pages", "{source}");
        if *source == "README.md" {
            assert_eq!(c.caches[0], Settings::named("pages"), "{source}");
            assert_eq!(c.proxy.routes[0].cache, Some(0), "{source}");
        }
    }
}
