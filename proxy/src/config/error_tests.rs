//! Config errors in the config's words, not serde's: for each kind of
//! mistake (a value of the wrong type for every kind of key, a key given
//! twice, an unknown or a missing key, a table written as an array of
//! tables or the other way round, a value outside a list of names) the
//! exact message, with file, line, column and key. Then every key the file
//! layer knows, with a value of every wrong type: no message may use
//! serde's vocabulary.

use std::path::Path;

use super::Config;

const NAME: &str = "ringside.toml";

fn error(text: &str) -> String {
    Config::parse(text, Path::new(NAME))
        .expect_err(text)
        .to_string()
}

#[test]
fn each_kind_of_mistake_in_words() {
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("[server]\nlisten = \"0.0.0.0:80\"\n",
         "ringside.toml:2:10: [server] listen: expected a list of addresses, like [\"0.0.0.0:80\"], got the string \"0.0.0.0:80\"; write it in brackets: [\"0.0.0.0:80\"]"),
        ("[server]\nbacklog = \"10\"\n",
         "ringside.toml:2:11: [server] backlog: expected a whole number, got the string \"10\"; write it without quotes: 10"),
        ("[upstream.app]\nservers = [\"a:1\"]\nmax_fails = 1.5\n",
         "ringside.toml:3:13: [upstream.app] max_fails: expected a whole number, got the number 1.5"),
        ("[server]\nroot = 5\n",
         "ringside.toml:2:8: [server] root: expected a string, got the number 5"),
        ("[tls]\nmin_version = 1.3\n",
         "ringside.toml:2:15: [tls] min_version: expected a string, got the number 1.3; write it in quotes: \"1.3\""),
        ("[static]\nlisting = \"true\"\n",
         "ringside.toml:2:11: [static] listing: expected true or false, got the string \"true\"; write it without quotes: true"),
        ("[proxy]\nx_forwarded = \"yes\"\n",
         "ringside.toml:2:15: [proxy] x_forwarded: expected true or false, got the string \"yes\""),
        ("[limits]\nmax_body = true\n",
         "ringside.toml:2:12: [limits] max_body: expected a size like 8192, \"16k\" or \"1m\", got true"),
        ("[timeouts]\nkeepalive = [\"5s\"]\n",
         "ringside.toml:2:13: [timeouts] keepalive: expected a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds, got a list"),
        ("[timeouts]\nsend = 2024-01-01\n",
         "ringside.toml:2:8: [timeouts] send: expected a duration like \"500ms\", \"10s\", \"2m\", \"1h\" or integer seconds, got a date"),
        ("[static]\nmime = \"wasm\"\n",
         "ringside.toml:2:8: [static] mime: expected a table of extensions and media types, like { wasm = \"application/wasm\" }, got the string \"wasm\""),
        ("runtime = 1\n",
         "ringside.toml:1:11: runtime: expected a table, written [runtime], got the number 1"),
        ("[static]\nindex = \"index.html\"\n",
         "ringside.toml:2:9: [static] index: expected a list of file names, like [\"index.html\"], got the string \"index.html\"; write it in brackets: [\"index.html\"]"),
        ("[static]\nindex = [1]\n",
         "ringside.toml:2:10: [static] index: expected a string, got the number 1"),
        ("[upstream.app]\nservers = [{ addr = \"a:1\", weight = \"3\" }]\n",
         "ringside.toml:2:37: [upstream.app.servers] weight: expected a whole number, got the string \"3\"; write it without quotes: 3"),
        ("[runtime]\nworkers = 1\nbackend = \"epoll\"\nworkers = 2\n",
         "ringside.toml:4:1: [runtime] workers: given twice (first on line 2); keep one"),
        ("[[route]]\nprefix = \"/a/\"\n\n[[route]]\nprefix = \"/b/\"\nlisting = true\nprefix = \"/c/\"\n",
         "ringside.toml:7:1: [[route]] prefix: given twice (first on line 5); keep one"),
        ("runtime.workers = 1\nruntime.workers = 2\n",
         "ringside.toml:2:9: [runtime] workers: given twice (first on line 1); keep one"),
        ("[static]\nmime = { txt = \"text/plain\", txt = \"text/x\" }\n",
         "ringside.toml:2:30: [static] mime: `txt` is given twice in this table; keep one"),
        ("[runtime]\nworkers = 1\n\n[runtime]\nbackend = \"epoll\"\n",
         "ringside.toml:4:2: [runtime]: this table is written twice (first on line 1); keep its keys under one [runtime]"),
        ("[runtime]\nworker = 2\n",
         "ringside.toml:2:1: [runtime] worker: unknown key, expected one of `workers`, `cpu_affinity`, `backend`, `ring_entries`, `coalesce_wait`; did you mean `workers`?"),
        ("[[route]]\nprefix = \"/a/\"\nalais = \"x\"\n",
         "ringside.toml:3:1: [[route]] alais: unknown key, expected one of `prefix`, `root`, `alias`, `cache_control`, `listing`, `upstream`, `host`, `strip_prefix`, `replace_prefix`, `proxy_host`, `extension`, `index`, `access_log`, `forward_path`, `upgrade`, `allow`, `deny`, `rate_limit`, `compress`, `compress_levels`, `basic_auth`, `grpc`, `cache`, `response_headers`, `request_headers`, `rewrite`, `error_pages`, `intercept_errors`, `try_files`, `fallback`, `require_client_cert`; did you mean `alias`?"),
        ("[server]\nlisten = [{ addr = \"127.0.0.1:1\", tsl = 1 }]\n",
         "ringside.toml:2:35: [server.listen] tsl: unknown key, expected one of `addr`, `tls`, `http2`, `http3`, `proxy_protocol`, `trusted`, `mode`, `owner`, `group`"),
        ("[static]\nzzz = 1\n",
         "ringside.toml:2:1: [static] zzz: unknown key, expected one of `index`, `listing`, `precompressed`, `cache_control`, `mime`, `cache_max_bytes`, `cache_max_file`, `cache_max_open`, `revalidate`"),
        ("[[route]]\nroot = \".\"\n",
         "ringside.toml:1:1: [[route]] prefix: missing: every route needs one, like prefix = \"/\""),
        ("[[vhost]]\nhsts = \"max-age=1\"\n",
         "ringside.toml:1:1: [[vhost]] names: missing: every vhost needs its host names, like names = [\"example.com\"]"),
        ("[upstream.app]\nservers = [{ weight = 3 }]\n",
         "ringside.toml:2:12: [upstream.app.servers] addr: missing: the table form needs its address, like { addr = \"127.0.0.1:9000\" }"),
        ("[route]\nprefix = \"/\"\n",
         "ringside.toml:1:1: [[route]]: written [route], one table, but routes are an array of tables: write [[route]] above each"),
        ("[[server]]\nroot = \".\"\n",
         "ringside.toml:1:1: [server]: written [[server]], an array of tables, but [server] is one table: write [server]"),
        ("[[upstream.app]]\nservers = [\"a:1\"]\n",
         "ringside.toml:1:1: [upstream.app]: written [[upstream.app]], an array of tables, but [upstream.app] is one table: write [upstream.app]"),
        ("[runtime]\nbackend = \"uring\"\n",
         "ringside.toml:2:11: [runtime] backend: expected one of \"auto\", \"io-uring\", \"epoll\", \"kqueue\", \"devpoll\", \"glommio\", got \"uring\""),
        ("[upstream.app]\nservers = [\"a:1\"]\nbalance = \"random\"\n",
         "ringside.toml:3:11: [upstream.app] balance: expected one of \"round_robin\", \"least_conn\", \"p2c\", \"hash\", got \"random\""),
        ("[proxy]\nencoded_slash = \"keep\"\n",
         "ringside.toml:2:17: [proxy] encoded_slash: expected one of \"reject\", \"pass\", got \"keep\""),
        ("[upstream.app]\nservers = [\"a:1\"]\nretry_on = [\"always\"]\n",
         "ringside.toml:3:13: [upstream.app] retry_on: expected one of \"connect\", \"timeout\", \"invalid_response\", \"http_502\", \"http_503\", \"http_504\", got \"always\""),
        // A table written as a list: serde's derived structs took these as
        // tuples of their fields (a certificate, four workers).
        ("[[vhost]]\nnames = [\"a.test\"]\ntls = [\"a.pem\", \"a.key\"]\n",
         "ringside.toml:3:7: [[vhost]] tls: expected a table like { cert = \"PATH\", key = \"PATH\" }, got a list"),
        ("runtime = [4]\n",
         "ringside.toml:1:11: runtime: expected a table, written [runtime], got a list"),
        ("server = [[\"a:1\"]]\n",
         "ringside.toml:1:10: server: expected a table, written [server], got a list"),
        ("[upstream]\napp = [1]\n",
         "ringside.toml:2:7: [upstream] app: expected a table, written [upstream.NAME], got a list"),
        ("runtime = 2024-01-01\n",
         "ringside.toml:1:11: runtime: expected a table, written [runtime], got a date"),
        ("route = [1]\n",
         "ringside.toml:1:10: route: expected [[route]] tables, one per route, got the number 1"),
    ];
    let mut failed = Vec::new();
    for &(text, want) in cases {
        let got = error(text);
        if got != want {
            failed.push(format!("for {text:?}\n want {want}\n  got {got}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Words that name serde's or Rust's types, or that toml leaves without
/// the key they are about.
const SERDE_WORDS: [&str; 14] = [
    "invalid length",
    "__toml",
    "invalid type",
    "invalid value",
    "expected i64",
    "expected u64",
    "a sequence",
    "a map",
    "struct ",
    "missing field",
    "unknown field",
    "duplicate key",
    "a boolean",
    "floating point",
];

/// The keys a table takes, as its unknown-key error lists them, so that a
/// key added to the file layer is covered here without being named.
fn keys_of(table: &str) -> Vec<String> {
    let err = error(&format!("{table}zzz_not_a_key = 1\n"));
    let (_, list) = err
        .split_once("expected ")
        .unwrap_or_else(|| panic!("no key list in {err}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn no_key_answers_in_serde_words() {
    // Each table, with what it needs written before the key under test.
    let tables = [
        "",
        "[runtime]\n",
        "[server]\n",
        "[limits]\n",
        "[timeouts]\n",
        "[static]\n",
        "[proxy]\n",
        "[admin]\n",
        "[access_log]\n",
        "[tls]\n",
        "[upstream.app]\n",
        "[[route]]\nprefix = \"/x/\"\n",
        "[[vhost]]\nnames = [\"a.test\"]\n",
    ];
    let wrong = [
        "1",
        "1.5",
        "true",
        "\"x\"",
        "[1]",
        "[\"x\"]",
        "{ a = 1 }",
        "2024-01-01",
    ];
    let mut seen = 0;
    let mut failed = Vec::new();
    let mut check = |text: String| {
        if let Err(e) = Config::parse(&text, Path::new(NAME)) {
            let e = e.to_string();
            seen += 1;
            let serde = SERDE_WORDS.iter().find(|w| e.contains(*w));
            if !e.starts_with("ringside.toml:") || serde.is_some() {
                failed.push(format!("{text:?}\n  {e}"));
            }
        }
    };
    for table in tables {
        let keys = keys_of(table);
        assert!(!keys.is_empty(), "{table}");
        for key in &keys {
            for value in wrong {
                check(format!("{table}{key} = {value}\n"));
            }
        }
    }
    // The tables inside values: a listen entry, a server entry, a certificate.
    for (before, keys, after) in [
        (
            "[server]\nlisten = [{ addr = \"127.0.0.1:1\", ",
            ["tls"].as_slice(),
            " }]\n",
        ),
        ("[server]\nlisten = [{ ", ["addr"].as_slice(), " }]\n"),
        (
            "[upstream.app]\nservers = [{ addr = \"a:1\", ",
            ["weight"].as_slice(),
            " }]\n",
        ),
        (
            "[upstream.app]\nservers = [{ ",
            ["addr"].as_slice(),
            " }]\n",
        ),
        (
            "[[vhost]]\nnames = [\"a.test\"]\ntls = { key = \"k\", ",
            ["cert"].as_slice(),
            " }\n",
        ),
    ] {
        for key in keys {
            for value in wrong {
                check(format!("{before}{key} = {value}{after}"));
            }
        }
    }
    assert!(seen > 500, "only {seen} errors seen");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
