//! `ringside check` and `-t` as `nginx -t`: the config file by either
//! spelling, every file it names opened, each listen address tried, names
//! resolved (a warning), every problem placed at its file, line and key;
//! and a start that fails on the same problems with the same words.
//!
//! Each check runs in a network namespace of its own, so that what else
//! listens on this machine cannot change the outcome.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use common::{output_text as text, Ringside, TempDir, BIN};

/// `ringside ARGS` in a network namespace of its own.
fn isolated(args: &[&str]) -> Output {
    common::isolated()
        .args(args)
        .output()
        .expect("unshare (util-linux) and ip (iproute2)")
}

/// Checks the exit status and that stderr says each of `wants`.
fn expect(out: &Output, ok: bool, wants: &[&str]) {
    assert_eq!(out.status.success(), ok, "{}", text(out));
    let err = stderr(out);
    for want in wants {
        assert!(err.contains(want), "want {want:?} in {}", text(out));
    }
}

/// The start refuses `file` with `want`, before serving anything.
fn start_refused(file: &Path, want: &str) {
    let out = isolated(&["--config", s(file)]);
    expect(&out, false, &[want]);
    assert!(out.stdout.is_empty(), "{}", text(&out));
}

/// `ringside ARGS` here: for the tests already in a namespace of their own.
fn here(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// `ringside ARGS` as nobody.
fn as_nobody(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_file_by_any_spelling_and_never_two() {
    let dir = TempDir::new("check-spelling");
    let file = dir.write(
        "a.toml",
        b"[server]\nlisten = [\"127.0.0.1:8080\"]\n\n[runtime]\nworkers = 3\n",
    );
    let other = dir.write("b.toml", b"[runtime]\nworkers = 4\n");
    let plain = isolated(&["check", s(&file)]);
    assert!(plain.status.success(), "{}", text(&plain));
    assert!(stderr(&plain).contains("a.toml: test is successful"));
    for args in [
        vec!["check", "-c", s(&file)],
        vec!["check", "--config", s(&file)],
        vec!["-t", "-c", s(&file)],
        vec!["--test", "--config", s(&file)],
        vec!["check", s(&file), "--config", s(&file)],
    ] {
        let out = isolated(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        assert_eq!(
            out.stdout, plain.stdout,
            "{args:?}: the same effective config"
        );
    }
    let out = isolated(&["check", s(&file), "--config", s(&other)]);
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("two configs named") && err.contains("a.toml") && err.contains("b.toml"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn an_access_log_that_cannot_be_opened_fails_check_and_start_at_its_line() {
    let dir = TempDir::new("check-log");
    let file = dir.write(
        "ringside.toml",
        b"[server]\nlisten = [\"127.0.0.1:0\"]\n\n[admin]\nlisten = \"off\"\n\n[access_log]\npath = \"no/such/dir/access.log\"\n",
    );
    let want = "ringside.toml:8:8: [access_log] path: cannot open";
    let out = isolated(&["check", s(&file)]);
    expect(
        &out,
        false,
        &[want, "No such file or directory", "test failed"],
    );
    // The start refuses with the same words.
    start_refused(&file, want);
}

/// A cache's disk directory is made by check and by the start, parents
/// too, as nginx makes its `proxy_cache_path`; one that cannot be made
/// (beneath a regular file) fails both at its `disk` key.
#[test]
fn a_cache_disk_that_cannot_be_made_fails_check_and_start_at_its_key() {
    let dir = TempDir::new("check-cache-disk");
    dir.write("file", b"not a directory\n");
    let config = |disk: &str| {
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\n\n[admin]\nlisten = \"off\"\n\n[cache.pages]\ndisk = \"{disk}\"\n"
        )
    };
    let file = dir.write("ringside.toml", config("file/pages").as_bytes());
    let want = "ringside.toml:8:8: [cache.pages] disk: cannot create";
    let why = format!("{} is not a directory", dir.path().join("file").display());
    let out = isolated(&["check", s(&file)]);
    expect(&out, false, &[want, &why, "test failed"]);
    start_refused(&file, want);
    // A missing directory is made, and check passes.
    let file = dir.write("made.toml", config("made/pages").as_bytes());
    expect(
        &isolated(&["check", s(&file)]),
        true,
        &["made.toml: test is successful"],
    );
    assert!(dir.path().join("made/pages").is_dir());
}

/// Run as root with `[server] user`, check gives a directory it makes to
/// that user, and refuses one that user cannot write, naming the user.
#[test]
fn a_cache_disk_must_be_writable_by_the_servers_user() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test runs check as root (the test command runs as root)"
    );
    let dir = TempDir::new("check-cache-disk-user");
    std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o755)).unwrap();
    let config = |disk: &str| {
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nuser = \"nobody\"\n\n[admin]\nlisten = \"off\"\n\n[cache.pages]\ndisk = \"{disk}\"\n"
        )
    };
    let made = dir.write("made.toml", config("cache/pages").as_bytes());
    expect(
        &isolated(&["check", s(&made)]),
        true,
        &["test is successful"],
    );
    let meta = std::fs::metadata(dir.path().join("cache/pages")).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (65534, 0o700));
    // Root's, 0755: nobody cannot write it.
    std::fs::create_dir(dir.path().join("roots")).unwrap();
    std::fs::set_permissions(dir.path().join("roots"), PermissionsExt::from_mode(0o755)).unwrap();
    let file = dir.write("ringside.toml", config("roots").as_bytes());
    expect(
        &isolated(&["check", s(&file)]),
        false,
        &[
            "ringside.toml:9:8: [cache.pages] disk: the user nobody, whom the server runs as, cannot write",
            "Permission denied",
        ],
    );
}

/// A pid file whose directory is missing fails the start at its line;
/// `check` warns only, as a stopped service has no /run/ringside yet.
#[test]
fn a_pid_file_in_a_missing_directory_is_placed_at_its_line() {
    let dir = TempDir::new("check-pid");
    let file = dir.write(
        "ringside.toml",
        b"[admin]\nlisten = \"off\"\n\n[server]\nlisten = [\"127.0.0.1:0\"]\npid_file = \"gone/ringside.pid\"\n",
    );
    let want = "ringside.toml:6:12: [server] pid_file: cannot write";
    let warning = format!("warning: {}", dir.path().join(want).display());
    expect(&isolated(&["check", s(&file)]), true, &[&warning]);
    start_refused(&file, want);
}

/// A listen address that another program holds: check and start both
/// name the program; a port below 1024 for a user without the right to it
/// is refused by check with the kernel's reason.
#[test]
fn listen_addresses_are_tried() {
    if !common::load::in_own_netns("listen_addresses_are_tried") {
        return;
    }
    let dir = TempDir::new("check-listen");
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let file = dir.write(
        "ringside.toml",
        format!("[admin]\nlisten = \"off\"\n\n[server]\nlisten = [\"127.0.0.1:{port}\"]\n")
            .as_bytes(),
    );
    let me = std::process::id();
    let want = format!(
        "ringside.toml:5:11: [server] listen: cannot listen on 127.0.0.1:{port}: in use by "
    );
    expect(
        &here(&["check", s(&file)]),
        false,
        &[&want, &format!("(pid {me})")],
    );
    let served = format!("127.0.0.1:{port} is served by ");
    expect(&here(&["--config", s(&file)]), false, &[&served]);
    drop(held);
    expect(&here(&["check", s(&file)]), true, &[]);

    let low = dir.write(
        "low.toml",
        b"[admin]\nlisten = \"off\"\n\n[server]\nlisten = [\"127.0.0.1:81\"]\n",
    );
    expect(
        &as_nobody(&["check", s(&low)]),
        false,
        &["[server] listen: cannot listen on 127.0.0.1:81: Permission denied"],
    );
}

/// Two ringsides on one port would split its connections: the second
/// refuses to start, naming the first, unless told it is wanted. `check`
/// on the running server's config passes (that is what a reload runs).
#[test]
fn a_second_server_on_a_port_refuses_to_start() {
    if !common::load::in_own_netns("a_second_server_on_a_port_refuses_to_start") {
        return;
    }
    let dir = TempDir::new("one-instance");
    dir.write("a/index.html", b"from a\n");
    dir.write("b/index.html", b"from b\n");
    let first = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--admin",
        "off",
        "--root",
        s(&dir.path().join("a")),
    ]);
    let addr = first.addr.to_string();
    let second = |extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "--listen",
            &addr,
            "--workers",
            "1",
            "--admin",
            "off",
            "--root",
        ])
        .arg(dir.path().join("b"))
        .args(extra);
        cmd
    };
    let out = second(&[]).output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let want = format!(
        "--listen: {addr} is served by ringside (pid {}) already",
        first.child.id()
    );
    assert!(stderr(&out).contains(&want), "{}", text(&out));
    assert!(
        stderr(&out).contains("--reuse-port-with-others"),
        "{}",
        text(&out)
    );
    // Still served by the first alone.
    for _ in 0..20 {
        assert_eq!(first.get("/index.html"), (200, b"from a\n".to_vec()));
    }
    // `check` on what runs now: a warning, not a failure.
    let cfg = dir.write(
        "run.toml",
        format!("[admin]\nlisten = \"off\"\n\n[server]\nlisten = [\"{addr}\"]\n").as_bytes(),
    );
    let out = Command::new(BIN).arg("check").arg(&cfg).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains(&format!(
            "warning: {}:5:11: [server] listen: {addr} is served by ringside (pid {})",
            cfg.display(),
            first.child.id()
        )),
        "{}",
        text(&out)
    );
    // Asked for, the second starts beside the first.
    let mut both = Ringside::start_with(&mut second(&["--reuse-port-with-others"]));
    assert_eq!(both.addr.to_string(), addr);
    both.signal(libc::SIGTERM);
    assert!(both.wait(std::time::Duration::from_secs(20)).success());
    assert!(both.stderr().contains("sharing the address"));
    first.stop();
}

/// A name that does not resolve is a warning with its line; the config
/// passes, as the server would start with that server down.
#[test]
fn an_unresolvable_upstream_name_is_a_warning() {
    let dir = TempDir::new("check-dns");
    let file = dir.write(
        "ringside.toml",
        b"[server]\nlisten = [\"127.0.0.1:0\"]\n\n[upstream.app]\nservers = [\"127.0.0.1:9\", \"app.ringside.invalid:80\"]\nresolve_every = \"7s\"\n\n[[route]]\nprefix = \"/\"\nupstream = \"app\"\n",
    );
    // No network in the namespace: the lookup fails at once, wherever
    // this machine's resolver points.
    let out = isolated(&["check", s(&file)]);
    assert!(out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: ")
            && err.contains(
                "ringside.toml:5:27: [upstream.app] servers: cannot resolve app.ringside.invalid"
            ),
        "{err}"
    );
    assert!(err.contains("resolves it again every 7s"), "{err}");
    assert!(err.contains("test is successful"), "{err}");
}

/// The check systemd's ExecReload runs, as the server's own user, while a
/// server that dropped root to that user serves the address: the server
/// is not dumpable, so its descriptors cannot be looked into; its pid
/// file names it, and the check passes with a warning.
#[test]
fn check_as_the_servers_user_passes_while_it_serves() {
    if !common::load::in_own_netns("check_as_the_servers_user_passes_while_it_serves") {
        return;
    }
    let dir = TempDir::new("check-as-user");
    dir.write("www/index.html", b"hi\n");
    std::fs::create_dir_all(dir.path().join("run")).unwrap();
    let cfg = dir.write(
        "ringside.toml",
        b"[admin]\nlisten = \"off\"\n\n[server]\nlisten = [\"127.0.0.1:8080\"]\nroot = \"www\"\nuser = \"nobody\"\npid_file = \"run/ringside.pid\"\n",
    );
    for d in ["", "www", "run"] {
        std::fs::set_permissions(
            dir.path().join(d),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    let server = Ringside::start(&["--workers", "1", "--config", s(&cfg)]);
    let served = format!(
        "127.0.0.1:8080 is served by ringside (pid {}) now",
        server.child.id()
    );
    expect(&as_nobody(&["check", s(&cfg)]), true, &[&served]);
    server.stop();
}

/// With another ringside on the built-in admin address, `check` and the
/// start say the same: the start goes on without the admin listener, and
/// `--admin` gives it one of its own.
#[test]
fn check_and_start_agree_on_a_taken_default_admin_address() {
    if !common::load::in_own_netns("check_and_start_agree_on_a_taken_default_admin_address") {
        return;
    }
    let dir = TempDir::new("check-admin");
    dir.write("index.html", b"hi\n");
    let first = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--admin",
        "127.0.0.1:9180",
        "--root",
        s(dir.path()),
    ]);
    let cfg = dir.write("second.toml", b"[server]\nlisten = [\"127.0.0.1:0\"]\n");
    let says = [
        "a start runs without the admin listener (/metrics, /healthz)",
        "--admin ADDR",
    ];
    let out = here(&["check", s(&cfg)]);
    expect(&out, true, &says);
    expect(
        &out,
        true,
        &[&format!(
            "127.0.0.1:9180 is served by ringside (pid {}) now",
            first.child.id()
        )],
    );
    assert!(!stderr(&out).contains("refused"), "{}", text(&out));
    let second = Ringside::start(&["--workers", "1", "--config", s(&cfg)]);
    assert_eq!(second.get("/index.html").0, 200);
    let log = second.stop();
    for want in says {
        assert!(log.contains(want), "want {want:?} in {log}");
    }
    first.stop();
}

/// Only another ringside sets SO_REUSEPORT on its sockets: for a port some
/// other program holds, the start does not offer --reuse-port-with-others
/// (which would fail there too), and refuses with it.
#[test]
fn a_port_held_by_another_program_is_not_offered_for_sharing() {
    let dir = TempDir::new("check-not-ringside");
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let start = |extra: &[&str]| {
        let mut args = vec!["--listen", &addr, "--admin", "off", "--root", s(dir.path())];
        args.extend_from_slice(extra);
        here(&args)
    };
    for extra in [&[][..], &["--reuse-port-with-others"]] {
        let out = start(extra);
        expect(
            &out,
            false,
            &[
                &format!("{addr} is served by "),
                "it is not a ringside, so the address cannot be shared with it",
            ],
        );
        assert!(
            !stderr(&out).contains("start with --reuse-port-with-others"),
            "{}",
            text(&out)
        );
    }
    drop(held);
}

/// Every error in the file is listed, each at its file, line and key, as a
/// compiler lists them; not only the first.
#[test]
fn check_lists_every_error_in_the_file() {
    let dir = TempDir::new("check-every");
    let file = dir.write(
        "many.toml",
        b"[runtime]\nworkers = 0\nbackend = \"fast\"\n\n[server]\nbacklog = -1\nbogus = 1\n\n[static]\ncache_control = 7\n",
    );
    let out = isolated(&["check", s(&file)]);
    let at = |rest: &str| format!("{}:{rest}", file.display());
    expect(
        &out,
        false,
        &[
            &at("2:11: [runtime] workers: "),
            &at("3:11: [runtime] backend: "),
            &at("6:11: [server] backlog: "),
            &at("7:1: [server] bogus"),
            &at("10:17: [static] cache_control: "),
            "many.toml: test failed",
        ],
    );
    // In the file's order, each once.
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("many.toml:") && !l.ends_with("test failed"))
        .collect();
    assert_eq!(lines.len(), 5, "{err}");
    // The start lists them too.
    let out = isolated(&["--config", s(&file)]);
    expect(&out, false, &[&at("2:11:"), &at("10:17:")]);
}

/// The flags work after `check FILE` as before it (the README's
/// `check FILE --listen ...`), and `check --help` says what the pid file
/// is to it.
#[test]
fn check_takes_flags_after_the_file_and_describes_them() {
    let dir = TempDir::new("check-flags");
    let file = dir.write("a.toml", b"[runtime]\nworkers = 2\n");
    let out = isolated(&[
        "check",
        s(&file),
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "3",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("workers = 3") && printed.contains("\"127.0.0.1:0\""),
        "{printed}"
    );
    let help = here(&["check", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let pid = flat
        .split("--pid-file <PATH> ")
        .nth(1)
        .unwrap_or_else(|| panic!("no --pid-file in {help}"));
    assert!(
        pid.starts_with("The pid file: a start writes its process id there; `reload` and `check` read it to find the running server"),
        "{help}"
    );
}
