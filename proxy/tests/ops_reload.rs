//! Reloading the config (SIGHUP, `ringside reload`): a valid config takes
//! effect without failing a request, an invalid one is reported and the old
//! one keeps serving.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;

use common::origin::Origin;
use common::{Ringside, TempDir, BIN};

/// A config serving `dir/www` with `cache_control`, and `/api/` proxied to
/// `origin`.
fn write_config(dir: &TempDir, origin: u16, cache_control: &str) -> PathBuf {
    dir.write(
        "ringside.toml",
        format!(
            r#"
[server]
root = "www"
pid_file = "ringside.pid"

[static]
cache_control = "{cache_control}"

[upstream.app]
servers = ["127.0.0.1:{origin}"]

[[route]]
prefix = "/api/"
upstream = "app"
"#
        )
        .as_bytes(),
    )
}

fn start(dir: &TempDir, cfg: &Path, workers: u32) -> Ringside {
    let w = workers.to_string();
    let mut r = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        &w,
        "--admin",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    r.admin();
    assert!(dir.path().join("ringside.pid").exists());
    r
}

fn cache_control(r: &Ringside) -> String {
    let mut c = common::client::Conn::open(r.addr);
    c.get("/index.html")
        .header("cache-control")
        .expect("a Cache-Control header")
}

/// Runs ringside-bench (built beside ringside by `cargo test --workspace`)
/// and returns its JSON report.
fn bench(args: Vec<String>) -> serde_json::Value {
    let bin = Path::new(BIN).with_file_name("ringside-bench");
    assert!(
        bin.exists(),
        "{} is missing: run the workspace's tests (cargo test --workspace)",
        bin.display()
    );
    let out = Command::new(&bin)
        .args(&args)
        .output()
        .expect("run ringside-bench");
    assert!(
        out.status.success(),
        "ringside-bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

#[test]
fn ten_reloads_under_load_fail_no_request() {
    let dir = TempDir::new("reload-load");
    dir.write("www/index.html", b"hello\n");
    let origin = Origin::start("app");
    let cfg = write_config(&dir, origin.port(), "max-age=0");
    let mut r = start(&dir, &cfg, 2);
    let addr = r.addr;
    let load = |path: &str, keepalive: bool| {
        let mut args: Vec<String> = [
            "--json",
            "-q",
            "--http1.1",
            "-c",
            "64",
            "--duration",
            "5s",
            "-s",
            "10",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if keepalive {
            args.push("-k".into());
        }
        args.push(format!("http://{addr}{path}"));
        thread::spawn(move || bench(args))
    };
    // Keep-alive clients meet reloads between their requests; the others
    // open a connection per request, so there are always some queued in
    // the listeners' accept queues when a reload happens.
    let static_load = load("/index.html", true);
    let proxy_load = load("/api/ok", false);
    // Wait until both are sending before reloading.
    while r.metric("ringside_accepted_connections_total{worker=\"0\"}")
        + r.metric("ringside_accepted_connections_total{worker=\"1\"}")
        < 200.0
    {
        assert!(
            !static_load.is_finished() && !proxy_load.is_finished(),
            "a load ended before it was under way (its report says why)"
        );
        thread::sleep(std::time::Duration::from_millis(5));
    }
    for i in 1..=10u64 {
        write_config(&dir, origin.port(), &format!("max-age={i}"));
        r.signal(libc::SIGHUP);
        r.wait_reloads("ok", i);
        assert_eq!(cache_control(&r), format!("max-age={i}"));
    }
    assert!(
        !static_load.is_finished() && !proxy_load.is_finished(),
        "the reloads must all happen while the load runs"
    );
    for (name, load) in [("static", static_load), ("proxy", proxy_load)] {
        let report = load.join().unwrap();
        let counts = &report["counts"];
        assert!(
            counts["complete"].as_u64().unwrap() > 1000,
            "{name}: {report}"
        );
        assert_eq!(report["failed_requests"], 0, "{name}: {report}");
        assert_eq!(counts["resets"], 0, "{name}: {report}");
        assert_eq!(counts["non_2xx"], 0, "{name}: {report}");
        assert_eq!(counts["timeouts"], 0, "{name}: {report}");
    }
    assert_eq!(r.metric("ringside_reloads_total{result=\"failed\"}"), 0.0);
    let log = r.stop();
    assert_eq!(log.matches("config reloaded").count(), 10, "{log}");
}

#[test]
fn an_invalid_config_is_reported_and_the_old_one_keeps_serving() {
    let dir = TempDir::new("reload-invalid");
    dir.write("www/index.html", b"hello\n");
    let origin = Origin::start("app");
    let cfg = write_config(&dir, origin.port(), "max-age=7");
    let mut r = start(&dir, &cfg, 1);
    // Keep one connection open across the failed reload.
    let mut kept = common::client::Conn::open(r.addr);
    assert_eq!(kept.get("/api/ok").status, 200);

    let good = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        good.replace("cache_control = \"max-age=7\"", "cache_control = 7"),
    )
    .unwrap();
    // `ringside reload --config` checks first and does not signal.
    let out = Command::new(BIN)
        .args(["reload", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ringside.toml:7") && err.contains("[static] cache_control"),
        "{err}"
    );
    // SIGHUP anyway: the server refuses it the same way.
    r.signal(libc::SIGHUP);
    r.wait_reloads("failed", 1);
    assert_eq!(cache_control(&r), "max-age=7");
    assert_eq!(kept.get("/api/ok").status, 200);
    assert_eq!(kept.get("/index.html").status, 200);

    // Fixed, and sent by pid file: it takes effect, on the kept
    // connection's next request too.
    write_config(&dir, origin.port(), "max-age=8");
    let out = Command::new(BIN)
        .args(["reload", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    r.wait_reloads("ok", 1);
    assert_eq!(
        kept.get("/index.html").header("cache-control").unwrap(),
        "max-age=8"
    );
    let log = r.stop();
    assert!(
        log.contains("reload refused, the old config keeps serving")
            && log.contains("ringside.toml:7")
            && log.contains("[static] cache_control"),
        "{log}"
    );
    assert!(
        !dir.path().join("ringside.pid").exists(),
        "the pid file is removed at exit"
    );
}

#[test]
fn restart_only_settings_are_named_and_kept() {
    let dir = TempDir::new("reload-restart-only");
    dir.write("www/index.html", b"hello\n");
    let origin = Origin::start("app");
    let cfg = write_config(&dir, origin.port(), "max-age=1");
    let mut r = start(&dir, &cfg, 1);
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace(
            "[server]",
            "[runtime]\nring_entries = 512\n\n[http3]\nsend_window = \"1m\"\n\n[server]",
        ),
    )
    .unwrap();
    r.signal(libc::SIGHUP);
    r.wait_reloads("ok", 1);
    assert_eq!(r.get("/api/ok").0, 200);
    let log = r.stop();
    assert!(
        log.contains("take effect only at restart")
            && log.contains("[runtime]")
            && log.contains("[http3]"),
        "{log}"
    );
}

/// A reload re-reads an upstream's CA bundle by its contents: replacing the
/// file that `tls_ca` names (same path, same settings) makes the new roots
/// trusted at the next SIGHUP.
#[test]
fn a_replaced_ca_bundle_is_trusted_after_a_reload() {
    let dir = TempDir::new("reload-ca");
    let pki = common::pki::Ca::new("ringside test CA");
    let other = common::pki::Ca::new("another CA");
    pki.leaf(&dir, "origin", "origin", &["origin.test"]);
    dir.write("www/hello.txt", b"hi\n");
    let origin_cfg = dir.write(
        "origin.toml",
        b"[server]\nlisten = [{ addr = \"127.0.0.1:0\", tls = { cert = \"origin.pem\", key = \"origin.key\" } }]\nroot = \"www\"\n[admin]\nlisten = \"off\"\n",
    );
    let origin = Ringside::start(&["--workers", "1", "--config", origin_cfg.to_str().unwrap()]);
    let ca = dir.write("ca.pem", other.pem().as_bytes());
    let cfg = dir.write(
        "front.toml",
        format!(
            "[upstream.o]\nservers = [\"127.0.0.1:{}\"]\ntls = true\ntls_ca = {:?}\ntls_sni = \"origin.test\"\nmax_fails = 0\n\n[[route]]\nprefix = \"/\"\nupstream = \"o\"\n",
            origin.addr.port(),
            ca.to_str().unwrap()
        )
        .as_bytes(),
    );
    let mut front = Ringside::with_admin(1, &cfg);
    front.admin();
    assert_eq!(front.get("/hello.txt").0, 502, "signed by a CA not trusted");
    dir.write("ca.pem", pki.pem().as_bytes());
    front.signal(libc::SIGHUP);
    front.wait_reloads("ok", 1);
    assert_eq!(front.get("/hello.txt"), (200, b"hi\n".to_vec()));
    let log = front.stop();
    assert!(log.contains("CA bundle changed"), "{log}");
    origin.stop();
}

/// `ringside reload` waits for the server's verdict: it exits 1 with the
/// server's reason when the server keeps its old config, and 0 once the
/// new one serves (systemd's `ExecReload` reports what it returns).
#[test]
fn ringside_reload_exits_with_the_servers_verdict() {
    let dir = TempDir::new("reload-verdict");
    dir.write("www/index.html", b"hello\n");
    let origin = Origin::start("app");
    let cfg = write_config(&dir, origin.port(), "max-age=7");
    let r = start(&dir, &cfg, 1);
    let pid_file = dir.path().join("ringside.pid");
    let reload = || {
        Command::new(BIN)
            .args(["reload", "--pid-file", pid_file.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let good = std::fs::read_to_string(&cfg).unwrap();
    // Not checked here (no --config): the server refuses it.
    std::fs::write(
        &cfg,
        good.replace("cache_control = \"max-age=7\"", "cache_control = 7"),
    )
    .unwrap();
    let out = reload();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        err.contains("reload refused")
            && err.contains("ringside.toml:7")
            && err.contains("[static] cache_control")
            && err.contains("the old config keeps serving"),
        "{err}"
    );
    assert_eq!(cache_control(&r), "max-age=7");
    // Accepted: the new config serves as soon as the command returns.
    write_config(&dir, origin.port(), "max-age=8");
    let out = reload();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ringside: reloaded"),
        "{out:?}"
    );
    assert_eq!(cache_control(&r), "max-age=8");
    r.stop();
}

/// With no pid file anywhere (the built-in config sets none), `ringside
/// reload` finds the ringside serving the config's listen address, as
/// `check` does; when none serves it, it says what to set.
#[test]
fn ringside_reload_finds_the_server_by_its_listen_address() {
    let dir = TempDir::new("reload-by-address");
    dir.write("www/index.html", b"hello\n");
    let cfg = dir.write(
        "ringside.toml",
        b"[server]\nroot = \"www\"\n\n[static]\ncache_control = \"max-age=1\"\n",
    );
    let r = Ringside::without_admin(&cfg);
    let addr = r.addr.to_string();
    std::fs::write(
        &cfg,
        "[server]\nroot = \"www\"\n\n[static]\ncache_control = \"max-age=2\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["--listen", &addr, "reload", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("pid {}, serving {addr}", r.child.id())),
        "{said}"
    );
    assert_eq!(cache_control(&r), "max-age=2");
    r.stop();

    // Nothing there (a namespace of its own): the message says what to set.
    let out = common::isolated()
        .args(["--listen", "127.0.0.1:8080", "reload"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nothing serves 127.0.0.1:8080")
            && err.contains("set [server] pid_file")
            && err.contains("--pid-file"),
        "{err}"
    );
}
