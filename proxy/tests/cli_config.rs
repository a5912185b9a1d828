//! The binary's command line: --version, `check`, and config errors that name
//! the file, line and key.

mod common;

use std::process::Command;

use common::{TempDir, BIN};

#[test]
fn version_names_the_backends() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim(),
        "ringside 0.1.0 (backends: io-uring, epoll, glommio)"
    );
}

#[test]
fn check_prints_the_effective_config() {
    let dir = TempDir::new("check");
    let file = dir.write(
        "ringside.toml",
        b"[runtime]\nworkers = 3\n\n[timeouts]\nkeepalive = \"5s\"\n\n[[route]]\nprefix = \"/a/\"\ncache_control = \"max-age=9\"\n",
    );
    let out = common::isolated().arg("check").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("workers = 3"), "{text}");
    assert!(text.contains("keepalive = \"5s\""), "{text}");
    assert!(
        text.contains("[[route]]\nprefix = \"/a/\"\ncache_control = \"max-age=9\""),
        "{text}"
    );
    // What check prints is itself a valid config.
    let again = dir.write("effective.toml", text.as_bytes());
    assert!(Command::new(BIN)
        .arg("check")
        .arg(&again)
        .output()
        .unwrap()
        .status
        .success());
}

/// An alias route comes out of `check` as an alias, its directory made
/// absolute, and reads back the same.
#[test]
fn check_prints_alias_routes() {
    let dir = TempDir::new("check-alias");
    dir.write("srv/assets/a.css", b"a");
    let file = dir.write(
        "ringside.toml",
        b"[[route]]\nprefix = \"/assets/\"\nalias = \"srv/assets\"\nlisting = true\n",
    );
    let out = Command::new(BIN).arg("check").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let assets = std::fs::canonicalize(dir.path().join("srv/assets")).unwrap();
    let want = format!(
        "[[route]]\nprefix = \"/assets/\"\nalias = {:?}\nlisting = true\n",
        assets.to_str().unwrap()
    );
    assert!(text.contains(&want), "want {want:?} in\n{text}");
    let again = dir.write("effective.toml", text.as_bytes());
    let out = Command::new(BIN).arg("check").arg(&again).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}

#[test]
fn check_prints_upstreams_and_proxy_routes() {
    let dir = TempDir::new("check-proxy");
    let file = dir.write(
        "ringside.toml",
        br#"
[proxy]
via = false

[upstream.app]
servers = ["127.0.0.1:9000", "[::1]:9000", { addr = "App2.internal:9000", weight = 3 }]
balance = "least_conn"
health_path = "/healthz"

[[route]]
prefix = "/api/"
upstream = "app"
host = ["API.example.com"]
strip_prefix = true
"#,
    );
    let out = common::isolated().arg("check").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "[proxy]\nx_forwarded = true\nforwarded = false\ntrusted_forwarders = []\nvia = false\n",
        "[upstream.app]\nprotocol = \"http\"\nservers = [\"127.0.0.1:9000\", \"[::1]:9000\", { addr = \"app2.internal:9000\", weight = 3 }]\ntls = false\nbalance = \"least_conn\"\n",
        "health_path = \"/healthz\"\nhealth_interval = \"5s\"\nhealth_timeout = \"2s\"\n",
        "[[route]]\nprefix = \"/api/\"\nupstream = \"app\"\nhost = [\"api.example.com\"]\nstrip_prefix = true\nproxy_host = \"pass\"\n",
    ] {
        assert!(text.contains(want), "want {want:?} in\n{text}");
    }
    // What check prints is itself a valid config, and prints the same.
    let again = dir.write("effective.toml", text.as_bytes());
    let out = common::isolated()
        .arg("check")
        .arg(&again)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}

#[test]
fn check_prints_fastcgi_upstreams_and_routes() {
    let dir = TempDir::new("check-fastcgi");
    dir.write("www/index.php", b"<?php echo 1;");
    let file = dir.write(
        "ringside.toml",
        br#"
[upstream.php]
protocol = "fastcgi"
servers = ["unix:run/php.sock", { addr = "127.0.0.1:9000", weight = 2 }]
max_conns = 8
queue_timeout = "2s"

[[route]]
prefix = "/"
upstream = "php"
root = "www"
extension = ".php"
"#,
    );
    let out = common::isolated().arg("check").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let sock = dir.path().join("run/php.sock");
    let www = base.join("www");
    for want in [
        format!(
            "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"unix:{}\", {{ addr = \"127.0.0.1:9000\", weight = 2 }}]\nmax_conns = 8\ncapacity_probe = \"50ms\"\nqueue_size = 1024\nqueue_timeout = \"2s\"\nkeep_conn = true\nbalance = \"round_robin\"\n",
            sock.display()
        ),
        format!(
            "[[route]]\nprefix = \"/\"\nupstream = \"php\"\nroot = \"{}\"\nextension = \".php\"\nindex = \"index.php\"\n",
            www.display()
        ),
    ] {
        assert!(text.contains(&want), "want {want:?} in\n{text}");
    }
    assert!(!text.contains("health_path"), "{text}");
    // What check prints is itself a valid config, and prints the same.
    let again = dir.write("effective.toml", text.as_bytes());
    let out = common::isolated()
        .arg("check")
        .arg(&again)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}

#[test]
fn errors_name_file_line_and_key() {
    let dir = TempDir::new("errors");
    let cases: &[(&str, &str)] = &[
        ("[runtime]\nworkers = 0\n", ":2:11: [runtime] workers"),
        (
            "[server]\nlisten = [\"127.0.0.1:80\"]\nbogus = 1\n",
            ":3:1:",
        ),
        (
            "[timeouts]\nkeepalive = \"soon\"\n",
            ":2:13: [timeouts] keepalive",
        ),
        ("[limits]\nmax_head = \"1g\"\n", ":2:12: [limits] max_head"),
        ("[runtime\nworkers = 1\n", ":1:"),
        (
            "[[route]]\nprefix = \"assets\"\n",
            ":2:10: [[route]] prefix",
        ),
        (
            "[static]\ncache_control = \"a\\r\\nX-Injected: 1\"\n",
            ":2:17: [static] cache_control",
        ),
        ("[static]\nmime = { txt = \"plain\" }\n", "[static] mime"),
        (
            "[static]\ncache_max_file = \"2m\"\ncache_max_bytes = \"1m\"\n",
            "[static] cache_max_file",
        ),
        (
            "[upstream.app]\nservers = [\"http://a:80\"]\n",
            ":2:12: [upstream.app] servers",
        ),
        (
            "[upstream.app]\nservers = [\"a:80\"]\nbalance = \"hash\"\n",
            ":3:11: [upstream.app] balance",
        ),
        (
            "[[route]]\nprefix = \"/\"\nupstream = \"app\"\n",
            ":3:12: [[route]] upstream",
        ),
        ("[proxy]\nvia = 1\n", ":2:7: [proxy] via"),
        (
            "[upstream.app]\nservers = [\"a:80\"]\nmax_conns = 8\n",
            ":3:13: [upstream.app] max_conns",
        ),
        (
            "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:9000\"]\nhealth_path = \"/\"\n",
            ":4:15: [upstream.php] health_path",
        ),
        (
            "[upstream.app]\nservers = [\"/run/app.sock\"]\n",
            ":2:12: [upstream.app] servers",
        ),
        (
            "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"a:9000\"]\n[[route]]\nprefix = \"/\"\nupstream = \"php\"\nstrip_prefix = true\n",
            ":7:16: [[route]] strip_prefix",
        ),
        (
            "[[route]]\nprefix = \"/\"\nextension = \".php\"\n",
            ":3:13: [[route]] extension",
        ),
    ];
    for (text, want) in cases {
        let file = dir.write("bad.toml", text.as_bytes());
        let out = common::isolated().arg("check").arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{text}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("bad.toml"), "{err}");
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    // The server refuses to start on a broken config, naming it the same way.
    let file = dir.write("bad.toml", b"[runtime]\nworkers = 0\n");
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.toml:2:11"));
}

/// A broken file is explained in the config's words, at its line and key,
/// not in serde's ("invalid type: string, expected a sequence").
#[test]
fn broken_configs_are_explained() {
    let dir = TempDir::new("broken");
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("[server]\nlisten = \"0.0.0.0:80\"\n",
         "broken.toml:2:10: [server] listen: expected a list of addresses, like [\"0.0.0.0:80\"], got the string \"0.0.0.0:80\"; write it in brackets: [\"0.0.0.0:80\"]\n"),
        ("[limits]\nmax_headers = \"100\"\n",
         "broken.toml:2:15: [limits] max_headers: expected a whole number, got the string \"100\"; write it without quotes: 100\n"),
        ("[runtime]\nworkers = 2\nbackend = \"epoll\"\nworkers = 3\n",
         "broken.toml:4:1: [runtime] workers: given twice (first on line 2); keep one\n"),
        ("[route]\nprefix = \"/\"\n",
         "broken.toml:1:1: [[route]]: written [route], one table, but routes are an array of tables: write [[route]] above each\n"),
        ("[[route]]\nprefix = \"/a/\"\nroot = \".\"\nalias = \".\"\n",
         "broken.toml:4:9: [[route]] alias: root is given too (line 3); a route takes one: root looks the whole path up beneath it, alias replaces the prefix with it\n"),
    ];
    for (text, want) in cases {
        let file = dir.write("broken.toml", text.as_bytes());
        let out = common::isolated().arg("check").arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(out.stdout.is_empty(), "{text}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains(want) && err.ends_with("broken.toml: test failed\n"),
            "want {want:?}, then the verdict, in {err:?}"
        );
    }
}

#[test]
fn bad_flags_are_named() {
    let out = Command::new(BIN)
        .args(["--workers", "zero", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workers"));
}

/// `--fastcgi` refused before anything starts, naming the flag.
#[test]
fn fastcgi_flag_errors_are_named() {
    let dir = TempDir::new("fastcgi-flag");
    let taken = dir.write(
        "taken.toml",
        b"[upstream.fastcgi]\nservers = [\"127.0.0.1:1\"]\n",
    );
    let cases: &[(&[&str], &str)] = &[
        (
            &["--fastcgi", "127.0.0.1:9000", "--upstream", "127.0.0.1:1"],
            "--fastcgi: not together with --upstream",
        ),
        (&["--fastcgi", "php-fpm"], "--fastcgi: expected HOST:PORT"),
        (
            &["--fastcgi", "unix:"],
            "--fastcgi: expected a socket path after \"unix:\"",
        ),
        (
            &[
                "--config",
                taken.to_str().unwrap(),
                "--fastcgi",
                "unix:/run/php.sock",
            ],
            "--fastcgi: the config already defines [upstream.fastcgi]",
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(BIN)
            .args(["--listen", "127.0.0.1:0"])
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "want {want:?} in {err}");
    }
}
