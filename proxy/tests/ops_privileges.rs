//! Privileges and limits: `[server] user` after binding, the open-files
//! limit raised at start, and EMFILE met without a busy loop.

mod common;

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Ringside, TempDir, BIN};

fn status_field(pid: u32, field: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap()
        .trim()
        .to_owned()
}

/// utime + stime of the whole process (all threads), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5), counted after the command name.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Starts ringside serving `root` with the open-files limit set to
/// (soft, hard) before exec.
fn start_limited(root: &TempDir, soft: u64, hard: u64, extra: &[&str]) -> Ringside {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--admin",
        "off",
        "--root",
        root.path().to_str().unwrap(),
    ])
    .args(extra);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ringside::start_with(&mut cmd)
}

/// For a test that starts ringside as root to run as nobody: a directory
/// with `www/index.html` and the subdirectories `dirs`, each root's and
/// readable by nobody (the roots are opened after the drop).
fn root_dir_for_nobody(tag: &str, dirs: &[&str]) -> TempDir {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test starts ringside as root (the test command runs as root)"
    );
    let dir = TempDir::new(tag);
    dir.write("www/index.html", b"hello\n");
    for d in ["", "www"].iter().chain(dirs) {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
        std::fs::set_permissions(
            dir.path().join(d),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    dir
}

#[test]
fn user_is_dropped_to_after_binding() {
    let dir = root_dir_for_nobody("privileges", &[]);
    let cfg = dir.write(
        "ringside.toml",
        b"[server]\nroot = \"www\"\nuser = \"nobody\"\n",
    );
    let r = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--admin",
        "off",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let pid = r.child.id();
    let nobody = "65534";
    let uid = status_field(pid, "Uid:");
    assert!(uid.split_whitespace().all(|u| u == nobody), "Uid: {uid}");
    let gid = status_field(pid, "Gid:");
    assert!(gid.split_whitespace().all(|g| g == nobody), "Gid: {gid}");
    // Every thread, workers included.
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let t = t.unwrap().file_name();
        let text =
            std::fs::read_to_string(format!("/proc/{pid}/task/{}/status", t.to_str().unwrap()))
                .unwrap();
        let uid = text.lines().find(|l| l.starts_with("Uid:")).unwrap();
        assert!(uid.split_whitespace().skip(1).all(|u| u == nobody), "{uid}");
    }
    assert_eq!(r.get("/index.html"), (200, b"hello\n".to_vec()));
    let log = r.stop();
    assert!(log.contains("dropped privileges"), "{log}");
}

#[test]
fn the_open_files_limit_is_raised_with_a_log_line() {
    let dir = TempDir::new("rlimit");
    let r = start_limited(&dir, 256, 4096, &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", r.child.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[3..5],
        ["4096", "4096"],
        "{line}"
    );
    let log = r.stop();
    assert!(
        log.contains("raised the open-files limit") && log.contains("from=256 to=4096"),
        "{log}"
    );
}

#[test]
fn emfile_pauses_accepting_without_spinning_and_recovers() {
    let dir = TempDir::new("emfile");
    dir.write("index.html", b"hello\n");
    let r = start_limited(&dir, 48, 48, &[]);
    let pid = r.child.id();
    // Far more connections than descriptors: the kernel completes them all,
    // and ringside runs out while accepting.
    let mut held: Vec<TcpStream> = (0..80)
        .map(|_| TcpStream::connect(r.addr).unwrap())
        .collect();
    // Let the accept loop meet EMFILE, then measure a second of it.
    let open_fds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    let end = Instant::now() + Duration::from_secs(10);
    while open_fds() < 47 {
        assert!(
            Instant::now() < end,
            "ringside never ran out of descriptors"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let before = cpu_ticks(pid);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let ticks = cpu_ticks(pid) - before;
    let ticks_per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let busy = ticks as f64 / ticks_per_sec / window.elapsed().as_secs_f64();
    // A loop retrying accept at once would keep a CPU busy (1.0).
    assert!(
        busy < 0.2,
        "ringside used {busy:.2} of a CPU while out of descriptors"
    );
    // Freed descriptors: the queued connections are served, and new ones.
    held.clear();
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(r.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        use std::io::{Read, Write};
        s.write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut resp = String::new();
        if s.read_to_string(&mut resp).is_ok() && resp.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < end, "ringside did not recover: {resp:?}");
    }
    let log = r.stop();
    let warnings = log.matches("accept failed; pausing accepts").count();
    assert!(
        (1..=3).contains(&warnings),
        "one warning per burst, not per try: {warnings}\n{log}"
    );
}

/// With `user` set, the logs and the pid file live in root-owned
/// directories (as /var/log and /run): SIGUSR1 still reopens the access
/// log after logrotate moved it, and the pid file is removed at exit. The
/// root helper that does it is one thread, and ends with the server.
#[test]
fn with_a_user_sigusr1_reopens_and_the_pid_file_goes_at_exit() {
    let dir = root_dir_for_nobody("privileges-keeper", &["log", "run"]);
    let cfg = dir.write(
        "ringside.toml",
        b"[server]\nroot = \"www\"\nuser = \"nobody\"\npid_file = \"run/ringside.pid\"\n\n[access_log]\npath = \"log/access.log\"\nflush_every = \"10ms\"\n",
    );
    let mut r = Ringside::without_admin(&cfg);
    let pid = r.child.id();
    let pid_file = dir.path().join("run/ringside.pid");
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().trim(),
        pid.to_string()
    );
    let keeper: Vec<u32> = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(keeper.len(), 1, "one helper process: {keeper:?}");
    assert_eq!(status_field(keeper[0], "Threads:"), "1");
    assert!(status_field(keeper[0], "Uid:").starts_with("0\t"));
    assert!(status_field(pid, "Uid:").starts_with("65534\t"));

    let log = dir.path().join("log/access.log");
    let wait_lines = |path: &std::path::Path, n: usize| {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            if text.lines().count() >= n {
                return text;
            }
            assert!(Instant::now() < end, "{} has {text:?}", path.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    assert_eq!(r.get("/index.html").0, 200);
    wait_lines(&log, 1);
    // logrotate: move, then SIGUSR1.
    std::fs::rename(&log, dir.path().join("log/access.log.1")).unwrap();
    r.signal(libc::SIGUSR1);
    let end = Instant::now() + Duration::from_secs(10);
    while !log.exists() {
        assert!(Instant::now() < end, "the log was not reopened");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(r.get("/index.html?after").0, 200);
    let text = wait_lines(&log, 1);
    assert!(text.contains("GET /index.html?after"), "{text}");

    r.signal(libc::SIGTERM);
    assert!(r.wait(Duration::from_secs(20)).success());
    let stderr = r.stderr();
    assert!(!pid_file.exists(), "pid file left behind:\n{stderr}");
    assert!(
        !std::path::Path::new(&format!("/proc/{}", keeper[0])).exists(),
        "the helper outlived the server"
    );
    assert!(stderr.contains("access log reopened"), "{stderr}");
}

/// The subject of the certificate the TLS listener at `port` presents.
fn served_subject(port: u16) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "timeout 10 openssl s_client -connect 127.0.0.1:{port} -servername site.test </dev/null 2>/dev/null | openssl x509 -noout -subject"
        ))
        .output()
        .expect("openssl (scripts/test.sh installs it)");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// With `user` set, certbot's keys (root's, mode 0600, in a 0700
/// directory) are read again at a reload: a renewed certificate is served
/// without a restart, as nginx's root master does.
#[test]
fn with_a_user_a_reload_reads_root_only_keys() {
    let dir = root_dir_for_nobody("privileges-certs", &[]);
    let live = TempDir(dir.path().join("live"));
    std::fs::create_dir_all(&live.0).unwrap();
    let ca = common::pki::Ca::new("test CA");
    ca.leaf(&live, "site", "first", &["site.test"]);
    let lock = |dir: &TempDir| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o700)).unwrap();
        std::fs::set_permissions(
            dir.path().join("site.key"),
            PermissionsExt::from_mode(0o600),
        )
        .unwrap();
    };
    lock(&live);
    let cfg = dir.write(
        "ringside.toml",
        b"[server]\nlisten = [{ addr = \"127.0.0.1:0\", tls = { cert = \"live/site.pem\", key = \"live/site.key\" } }]\nroot = \"www\"\nuser = \"nobody\"\n",
    );
    let mut r = Ringside::start(&[
        "--workers",
        "1",
        "--admin",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let port = r.addr.port();
    assert!(
        served_subject(port).contains("CN = first"),
        "{}",
        served_subject(port)
    );
    ca.leaf(&live, "site", "renewed", &["site.test"]);
    lock(&live);
    r.signal(libc::SIGHUP);
    r.wait_reloads("ok", 1);
    assert!(
        served_subject(port).contains("CN = renewed"),
        "{}",
        served_subject(port)
    );
    let log = r.stop();
    assert!(!log.contains("reload refused"), "{log}");
    std::mem::forget(live);
}

/// With `user` set, an access log in a directory that user can write is
/// not the root helper's to open (a planted symlink could point root
/// anywhere): it is made as the user, so the server, which runs as that
/// user, opens it again on SIGUSR1 and at each reload.
#[test]
fn with_a_user_a_log_in_its_own_directory_is_its_own_and_reopens() {
    let dir = root_dir_for_nobody("privileges-user-log", &["logs"]);
    std::os::unix::fs::chown(dir.path().join("logs"), Some(65534), Some(65534)).unwrap();
    let cfg = dir.write(
        "ringside.toml",
        b"[server]\nroot = \"www\"\nuser = \"nobody\"\n\n[access_log]\npath = \"logs/u.log\"\nflush_every = \"10ms\"\n",
    );
    let mut r = Ringside::start(&[
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--admin",
        "127.0.0.1:0",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let log = dir.path().join("logs/u.log");
    let owner =
        |p: &std::path::Path| std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(p).unwrap());
    assert_eq!(owner(&log), 65534, "the log is the server user's");
    let wait_for = |want: &str| {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(want) {
                return;
            }
            assert!(Instant::now() < end, "no {want:?} in {text:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    assert_eq!(r.get("/index.html?before").0, 200);
    wait_for("GET /index.html?before");
    // logrotate: move, then SIGUSR1; the server makes the new file itself.
    std::fs::rename(&log, dir.path().join("logs/u.log.1")).unwrap();
    r.signal(libc::SIGUSR1);
    assert_eq!(r.get("/index.html?after").0, 200);
    wait_for("GET /index.html?after");
    assert_eq!(owner(&log), 65534);
    // An unchanged config reloads.
    r.signal(libc::SIGHUP);
    r.wait_reloads("ok", 1);
    let text = r.stop();
    assert!(!text.contains("reload refused"), "{text}");
    assert!(!text.contains("cannot reopen"), "{text}");
    // A log root made there (an older release did) is refused by check,
    // run as root, as the start would refuse it, with why.
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, b"").unwrap();
    let out = Command::new(BIN).arg("check").arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("[access_log] path: cannot open")
            && err.contains("Permission denied (opened as the user nobody"),
        "{err}"
    );
}
