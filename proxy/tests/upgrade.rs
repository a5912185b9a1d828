//! Binary upgrade under load, through the real binaries: `ringside
//! upgrade --exe` alternates between the built binary and a copy of it
//! while wrk (keep-alive, and one connection per request), h2load (h2c)
//! and wrk over TLS run, and no client may count a failed request, a
//! socket error or a non-2xx answer. The test process is a child
//! subreaper, so that it reaps every generation and can check that each
//! old one is gone at the end.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::load::parse_wrk;
use common::pki::Ca;
use common::{TempDir, BIN};

/// One test at a time: each loads both cores.
static ONE: Mutex<()> = Mutex::new(());

/// The backends the zero-loss claim is made for: glommio's accept cannot
/// be withdrawn at the stop (see `TcpListener::accept_until`), and under
/// wrk a connection it takes then is lost now and again; glommio is
/// upgraded in `a_failed_upgrade_leaves_the_old_process_serving` only.
const UPGRADE_BACKENDS: [&str; 2] = ["io-uring", "epoll"];

/// How long each load client runs: enough for the upgrades to happen
/// under it.
const LOAD_SECS: u32 = 4;

struct Site {
    dir: TempDir,
    cfg: PathBuf,
    /// A copy of the binary, to alternate with `BIN`.
    alt: PathBuf,
    pid_file: PathBuf,
    tls: bool,
}

impl Site {
    fn new(tag: &str, tls: bool) -> Site {
        let dir = TempDir::new(tag);
        dir.write("www/index.html", b"upgrade test page\n");
        if tls {
            Ca::new("upgrade test CA").leaf(&dir, "site", "localhost", &["localhost"]);
        }
        let alt = dir.path().join("ringside-alt");
        std::fs::copy(BIN, &alt).unwrap();
        let cfg = dir.path().join("ringside.toml");
        let pid_file = dir.path().join("ringside.pid");
        Site {
            dir,
            cfg,
            alt,
            pid_file,
            tls,
        }
    }

    /// Writes the config the next process reads: `workers` workers on
    /// `backend`, with a third listener when `extra`.
    fn config(&self, backend: &str, workers: u32, extra: bool) {
        let d = self.dir.path().display();
        let mut listen = vec![r#""127.0.0.1:0""#.to_owned()];
        if self.tls {
            listen.push(format!(
                r#"{{ addr = "127.0.0.2:0", tls = {{ cert = "{d}/site.pem", key = "{d}/site.key" }} }}"#
            ));
        }
        if extra {
            listen.push(r#""127.0.0.3:0""#.to_owned());
        }
        let text = format!(
            "[server]\nroot = \"{d}/www\"\nlisten = [{}]\npid_file = \"{}\"\n\n\
             [runtime]\nworkers = {workers}\nbackend = \"{backend}\"\n",
            listen.join(", "),
            self.pid_file.display()
        );
        std::fs::write(&self.cfg, text).unwrap();
    }

    fn pid(&self) -> i32 {
        std::fs::read_to_string(&self.pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// `ringside upgrade --exe EXE`: the new pid, or what it printed.
    fn upgrade(&self, exe: &Path) -> Result<i32, String> {
        let out = Command::new(BIN)
            .args(["upgrade", "--config"])
            .arg(&self.cfg)
            .arg("--exe")
            .arg(exe)
            .output()
            .unwrap();
        let text = common::output_text(&out);
        if !out.status.success() {
            return Err(text);
        }
        let pid = String::from_utf8_lossy(&out.stdout)
            .split("pid ")
            .nth(2)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no new pid in {text}"));
        Ok(pid)
    }
}

/// Every generation of the server; whatever still runs at the end, or
/// after a failed assertion, is killed.
struct Generations {
    pids: Vec<i32>,
    /// The first generation's stdout lines, which later ones share.
    lines: Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    plain: SocketAddr,
    tls: Option<SocketAddr>,
    /// The admin listener's address, which every generation keeps.
    admin: Option<SocketAddr>,
    /// Names the generation a failed assertion may not have listed yet.
    pid_file: PathBuf,
}

fn subreaper() {
    // SAFETY: prctl with plain integer arguments.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(r, 0, "PR_SET_CHILD_SUBREAPER");
}

fn alive(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: reaps our own child (or a reparented one) if it ended.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn address(line: &str) -> SocketAddr {
    line.split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
}

impl Generations {
    fn start(site: &Site) -> Generations {
        Self::start_with(site, &[])
    }

    fn start_with(site: &Site, env: &[(&str, &Path)]) -> Generations {
        subreaper();
        // Reaped by pid, as every later generation is (see `alive`).
        #[allow(clippy::zombie_processes)]
        let mut child: Child = Command::new(BIN)
            .arg("--config")
            .arg(&site.cfg)
            .args(["--admin", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut g = Generations {
            pids: vec![pid],
            lines,
            stderr: Some(stderr),
            plain: "127.0.0.1:1".parse().unwrap(),
            tls: None,
            admin: None,
            pid_file: site.pid_file.clone(),
        };
        let banner = g.banner();
        g.plain = address(&banner[0]);
        g.tls = banner.get(1).map(|l| address(l));
        g
    }

    /// The next generation's banner: its serving lines, up to its admin
    /// line.
    fn banner(&mut self) -> Vec<String> {
        let mut serving = Vec::new();
        loop {
            let line = match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => l,
                Err(_) => panic!("no banner; log:\n{}", self.log()),
            };
            if line.contains("admin on") {
                let a = address(&line);
                assert_eq!(*self.admin.get_or_insert(a), a, "the admin listener moved");
                return serving;
            }
            // TCP listeners' lines; a unix socket's names its path.
            if line.contains("serving") && line.contains("://") {
                serving.push(line);
            }
        }
    }

    fn log(&mut self) -> String {
        self.kill_all();
        self.stderr
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }

    fn kill_all(&mut self) {
        let named = std::fs::read_to_string(&self.pid_file).ok();
        if let Some(pid) = named.and_then(|s| s.trim().parse().ok()) {
            if !self.pids.contains(&pid) {
                self.pids.push(pid);
            }
        }
        for &pid in &self.pids {
            if alive(pid) {
                // SAFETY: a server generation this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        for &pid in &self.pids {
            let mut status = 0;
            // SAFETY: reaps it.
            unsafe { libc::waitpid(pid, &mut status, 0) };
        }
    }

    /// SIGTERM to the last generation, then waits for every generation to
    /// be gone (each old one drained and exited on its own).
    fn finish(mut self) {
        let last = *self.pids.last().unwrap();
        // SAFETY: our server's pid.
        unsafe { libc::kill(last, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.pids.iter().any(|&p| alive(p)) {
            if Instant::now() > deadline {
                let left: Vec<i32> = self.pids.iter().copied().filter(|&p| alive(p)).collect();
                panic!("generations {left:?} never exited; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Generations {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The load clients, started together.
struct Load {
    clients: Vec<(&'static str, Child)>,
    h2_log: PathBuf,
}

fn wrk(url: String, conns: u32, extra: &[&str], secs: u32) -> Child {
    Command::new("wrk")
        .args(["-t1", "-c", &conns.to_string(), "-d", &format!("{secs}s")])
        // A starved debug build on two shared cores may be slow; a timeout
        // would count as a socket error without saying anything of loss.
        .args(["--timeout", "60s"])
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wrk")
}

impl Load {
    fn start(g: &Generations, dir: &TempDir) -> Load {
        let plain = g.plain;
        let h2_log = dir.path().join("h2load.log");
        let mut clients = vec![
            (
                "wrk keep-alive",
                wrk(format!("http://{plain}/"), 100, &[], LOAD_SECS),
            ),
            (
                "wrk close",
                wrk(
                    format!("http://{plain}/"),
                    20,
                    &["-H", "Connection: close"],
                    LOAD_SECS,
                ),
            ),
            (
                "h2load",
                Command::new("h2load")
                    .args(["-c", "10", "-m", "4", "-D", &LOAD_SECS.to_string()])
                    .arg("--log-file")
                    .arg(&h2_log)
                    .arg(format!("http://{plain}/"))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("h2load"),
            ),
        ];
        if let Some(tls) = g.tls {
            clients.push((
                "wrk TLS",
                wrk(format!("https://{tls}/"), 20, &[], LOAD_SECS),
            ));
        }
        Load { clients, h2_log }
    }

    /// Waits for every client and checks what each counted.
    fn check(self) {
        for (what, child) in self.clients {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what} failed:\n{text}");
            if what == "h2load" {
                check_h2load(&text, &self.h2_log);
                continue;
            }
            let r = parse_wrk(text);
            assert!(r.requests > 0, "{what}: no requests:\n{}", r.text);
            assert_eq!(r.socket_errors, 0, "{what}: socket errors:\n{}", r.text);
            assert_eq!(r.non_2xx_3xx, 0, "{what}: non-2xx answers:\n{}", r.text);
        }
    }
}

/// h2load's log has a line per request: when it went out (0: never),
/// its status (-1: none) and its time. Every request that went out must
/// have been answered 200. Requests h2load queued in nghttp2 but had not
/// sent when a GOAWAY arrived are closed by nghttp2 itself (a client may
/// not open streams after GOAWAY, RFC 9113 section 6.8) and logged as
/// never sent, with -1: h2load's summary counts those as failed, though
/// no server saw them. So its failed count must be exactly those.
fn check_h2load(text: &str, log: &Path) {
    let log = std::fs::read_to_string(log).unwrap_or_default();
    let entries: Vec<(&str, &str)> = log
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?, f.next()?))
        })
        .collect();
    let (unsent, sent): (Vec<_>, Vec<_>) = entries.iter().partition(|(start, _)| *start == "0");
    assert!(!sent.is_empty(), "h2load sent nothing:\n{text}");
    let bad: Vec<_> = sent.iter().filter(|(_, status)| *status != "200").collect();
    assert!(
        bad.is_empty(),
        "h2load: {} of {} requests sent were not answered 200 ({:?}...):\n{text}",
        bad.len(),
        sent.len(),
        &bad[..bad.len().min(5)]
    );
    assert!(unsent.iter().all(|(_, status)| *status == "-1"));
    let line = text
        .lines()
        .find(|l| l.starts_with("requests:"))
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    let count = |what: &str| -> u64 {
        line.split(',')
            .find(|p| p.trim().ends_with(what))
            .and_then(|p| p.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {what} in {line}"))
    };
    assert_eq!(
        count("failed"),
        unsent.len() as u64,
        "h2load counted failures beyond the requests it never sent:\n{text}"
    );
    assert_eq!(count("timeout"), 0, "{text}");
}

/// Upgrades `n` times, alternating between the copy and the original, a
/// moment apart so that the load meets every generation.
fn upgrade_times(site: &Site, g: &mut Generations, n: usize) {
    for i in 0..n {
        std::thread::sleep(Duration::from_millis(300));
        let exe = if i % 2 == 0 {
            site.alt.as_path()
        } else {
            Path::new(BIN)
        };
        let pid = site
            .upgrade(exe)
            .unwrap_or_else(|e| panic!("upgrade {i} failed: {e}\nlog:\n{}", g.log()));
        assert_eq!(site.pid(), pid, "the pid file names the new process");
        g.pids.push(pid);
        g.banner();
    }
}

#[test]
fn five_upgrades_under_load_lose_nothing() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for backend in UPGRADE_BACKENDS {
        let site = Site::new(&format!("upgrade-{backend}"), true);
        site.config(backend, 2, false);
        let mut g = Generations::start(&site);
        let load = Load::start(&g, &site.dir);
        upgrade_times(&site, &mut g, 5);
        load.check();
        assert_eq!(g.pids.len(), 6);
        g.finish();
    }
}

#[test]
fn worker_count_changes_across_upgrades() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for backend in UPGRADE_BACKENDS {
        let site = Site::new(&format!("upgrade-workers-{backend}"), false);
        site.config(backend, 2, false);
        let mut g = Generations::start(&site);
        let load = Load::start(&g, &site.dir);
        for (i, workers) in [1u32, 3, 2].into_iter().enumerate() {
            std::thread::sleep(Duration::from_millis(300));
            site.config(backend, workers, false);
            let exe = if i % 2 == 0 {
                site.alt.as_path()
            } else {
                Path::new(BIN)
            };
            let pid = site.upgrade(exe).unwrap_or_else(|e| {
                panic!(
                    "upgrade to {workers} workers failed: {e}\nlog:\n{}",
                    g.log()
                )
            });
            g.pids.push(pid);
            let banner = g.banner();
            assert!(
                banner[0].contains(&format!("(workers: {workers},")),
                "{banner:?}"
            );
        }
        // SIGUSR2 does the same as the command.
        let before = site.pid();
        // SAFETY: our server's pid.
        unsafe { libc::kill(before, libc::SIGUSR2) };
        g.banner();
        let after = site.pid();
        assert_ne!(after, before);
        g.pids.push(after);
        load.check();
        g.finish();
    }
}

#[test]
fn a_failed_upgrade_leaves_the_old_process_serving() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for backend in common::BACKENDS {
        let site = Site::new(&format!("upgrade-fail-{backend}"), false);
        site.config(backend, 2, false);
        let broken = site
            .dir
            .write("broken-ringside", b"#!/bin/sh\necho starting >&2\nexit 1\n");
        std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let mut g = Generations::start(&site);
        let first = g.pids[0];
        let load = Load::start(&g, &site.dir);
        std::thread::sleep(Duration::from_millis(300));
        let e = site.upgrade(&broken).unwrap_err();
        assert!(
            e.contains("upgrade failed")
                && e.contains("exited")
                && e.contains("old process keeps serving"),
            "{e}"
        );
        // A config the new process refuses: the listeners cannot move.
        site.config(backend, 2, true);
        let e = site.upgrade(Path::new(BIN)).unwrap_err();
        assert!(e.contains("[server] listen changed"), "{e}");
        site.config(backend, 2, false);
        load.check();
        assert_eq!(
            site.pid(),
            first,
            "the pid file still names the old process"
        );
        assert!(alive(first));
        // And it can still upgrade once the config is right.
        let pid = site
            .upgrade(Path::new(BIN))
            .unwrap_or_else(|e| panic!("{e}"));
        g.pids.push(pid);
        g.banner();
        for (proto, url) in [
            ("--http1.1", format!("http://{}/", g.plain)),
            ("--http2-prior-knowledge", format!("http://{}/", g.plain)),
            ("--http1.1", format!("http://{}/metrics", g.admin.unwrap())),
        ] {
            let out = Command::new("curl")
                .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", proto, &url])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{proto} {url}");
        }
        g.finish();
    }
}

/// The most connections open to php-fpm at once (taken by a child or
/// waiting in its backlog), sampled until stopped.
fn watch_fpm(
    fpm: &common::phpfpm::PhpFpm,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    use std::sync::atomic::Ordering;
    let common::phpfpm::Listen::Tcp(addr) = fpm.listen.clone() else {
        panic!("a TCP php-fpm");
    };
    // What stays open for two readings in a row: a connection ringside let
    // go is closed by its loop's next turn, and a reading in between
    // would count it beside the one opened in its place.
    std::thread::spawn(move || {
        let (mut most, mut last) = (0, 0);
        while !stop.load(Ordering::Relaxed) {
            let now = common::phpfpm::open_to(addr.port());
            most = most.max(now.min(last));
            last = now;
            std::thread::sleep(Duration::from_millis(2));
        }
        most
    })
}

/// FastCGI across upgrades: every request answered while the processes
/// overlap (the old one lets its idle connections go as its drain begins
/// and its busy ones after their request) and after, and the capacity
/// learned under load handed to the next process. While they overlap, the
/// two together hold no more connections to php-fpm than one process
/// alone: the capacity learned, and at most one a core waiting in
/// php-fpm's backlog to find out whether the pool grew (each process
/// counts the other's connections, `fastcgi::overlap`; without that, 8
/// were open with 4 children, 2 workers and 50 ms scripts, every run). Run
/// in a network namespace of its own, so that `/proc/net/tcp` holds this
/// test's connections only.
#[test]
fn fastcgi_requests_survive_upgrades() {
    if !common::load::in_own_netns("fastcgi_requests_survive_upgrades") {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let children = 4;
    let workers: usize = 2;
    let fpm = common::phpfpm::PhpFpm::start_tcp(children);
    for backend in UPGRADE_BACKENDS {
        let site = Site::new(&format!("upgrade-fcgi-{backend}"), false);
        let base = fpm.ringside_config(&site.dir, "");
        let text = std::fs::read_to_string(&base).unwrap()
            + &format!(
                "\n[server]\nlisten = [\"127.0.0.1:0\"]\npid_file = \"{}\"\n\n\
                 [runtime]\nworkers = {workers}\nbackend = \"{backend}\"\n",
                site.pid_file.display()
            );
        std::fs::write(&site.cfg, text).unwrap();
        let mut g = Generations::start(&site);
        let phase = |g: &Generations, path: &str, secs: u32| {
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let watch = watch_fpm(&fpm, stop.clone());
            let load = wrk(format!("http://{}{path}", g.plain), 20, &[], secs);
            (load, stop, watch)
        };
        let finish = |(load, stop, watch): (
            Child,
            std::sync::Arc<std::sync::atomic::AtomicBool>,
            std::thread::JoinHandle<usize>,
        )| {
            let out = load.wait_with_output().unwrap();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let most = watch.join().unwrap();
            let r = parse_wrk(String::from_utf8_lossy(&out.stdout).into_owned());
            assert!(r.requests > 0, "{}", r.text);
            assert_eq!((r.socket_errors, r.non_2xx_3xx), (0, 0), "{}", r.text);
            most
        };
        // The first process learns the pool's capacity under load.
        let most = finish(phase(&g, "/hello.php", 2));
        eprintln!("{backend}: at most {most} open while the first process learns");
        // Scripts of 50 ms: the old process's last requests hold their
        // children long enough for the new one to pile up connections
        // behind them, were it not counting them.
        let during = phase(&g, "/slow.php?s=0.05", LOAD_SECS);
        upgrade_times(&site, &mut g, 3);
        let most = finish(during);
        eprintln!("{backend}: at most {most} connections open to php-fpm across the upgrades ({children} children)");
        assert!(
            most <= children as usize + workers,
            "{backend}: {most} connections open to php-fpm across the upgrades, \
             over its {children} children and one waiting per core"
        );
        let last = *g.pids.last().unwrap();
        while g.pids.iter().any(|&p| p != last && alive(p)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let most = finish(phase(&g, "/hello.php", 2));
        eprintln!("{backend}: at most {most} open once the old processes are gone");
        // The capacity learned under load is handed to the next process,
        // which knows it at its first request (a fresh one would not:
        // learning needs a connection php-fpm left waiting).
        let common::phpfpm::Listen::Tcp(fpm_addr) = fpm.listen.clone() else {
            unreachable!()
        };
        let series = format!("ringside_fastcgi_capacity{{upstream=\"php\",server=\"{fpm_addr}\"}}");
        let metric = |g: &Generations| {
            let out = Command::new("curl")
                .args(["-sS", &format!("http://{}/metrics", g.admin.unwrap())])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .find_map(|l| l.strip_prefix(&series).map(|v| v.trim().to_owned()))
        };
        let learned = metric(&g).expect("a capacity learned under load");
        let pid = site
            .upgrade(Path::new(BIN))
            .unwrap_or_else(|e| panic!("{e}"));
        g.pids.push(pid);
        g.banner();
        while g.pids.iter().any(|&p| p != pid && alive(p)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let one = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("http://{}/hello.php", g.plain))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&one.stdout), "200");
        assert_eq!(
            metric(&g),
            Some(learned),
            "{backend}: the learned capacity was handed over"
        );
        g.finish();
    }
}

/// Under systemd (`Type=notify`, `NotifyAccess=main`): the new process
/// says READY=1 with its pid, and the old one, still the main process,
/// names the new one with MAINPID= before it drains, without STOPPING=1
/// (the service is not stopping).
#[test]
fn systemd_is_told_the_new_main_pid() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let site = Site::new("upgrade-notify", false);
    site.config("epoll", 1, false);
    let sock_path = site.dir.path().join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let next = || {
        let mut buf = [0u8; 512];
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let mut g = Generations::start_with(&site, &[("NOTIFY_SOCKET", &sock_path)]);
    let first = g.pids[0];
    assert_eq!(next(), format!("READY=1\nMAINPID={first}"));
    let new = site.upgrade(&site.alt).unwrap_or_else(|e| panic!("{e}"));
    g.pids.push(new);
    g.banner();
    let mut got = vec![next(), next()];
    got.sort();
    assert_eq!(
        got,
        [format!("MAINPID={new}"), format!("READY=1\nMAINPID={new}")]
    );
    while alive(first) {
        std::thread::sleep(Duration::from_millis(20));
    }
    g.finish();
    // The only STOPPING=1 is the last process's, at its SIGTERM.
    assert_eq!(next(), "STOPPING=1");
    sock.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 512];
    assert!(sock.recv(&mut buf).is_err(), "a further notification");
}

/// One request over the unix socket at `path` on a connection of its own:
/// whether it got a 200.
fn unix_get(path: &Path) -> bool {
    use std::io::Write;
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(path) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    if s.write_all(b"GET / HTTP/1.1\r\nHost: local\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out.starts_with(b"HTTP/1.1 200") && out.ends_with(b"upgrade test page\n")
}

#[test]
fn a_unix_socket_listener_is_handed_over_and_its_file_kept() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for backend in UPGRADE_BACKENDS {
        let site = Site::new(&format!("upgrade-unix-{backend}"), false);
        let sock = site.dir.path().join("http.sock");
        let d = site.dir.path().display();
        let text = format!(
            "[server]\nroot = \"{d}/www\"\nlisten = [\"127.0.0.1:0\", \"unix:{}\"]\npid_file = \"{}\"\n\n\
             [runtime]\nworkers = 2\nbackend = \"{backend}\"\n",
            sock.display(),
            site.pid_file.display()
        );
        std::fs::write(&site.cfg, text).unwrap();
        let mut g = Generations::start(&site);
        assert!(
            unix_get(&sock),
            "served on the unix socket before any upgrade"
        );
        // A client opening a connection per request all through the
        // upgrades: the socket and its file stay, so none is refused.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let client = {
            let (sock, stop) = (sock.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut ok, mut failed) = (0u32, 0u32);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if unix_get(&sock) {
                        ok += 1;
                    } else {
                        failed += 1;
                    }
                }
                (ok, failed)
            })
        };
        upgrade_times(&site, &mut g, 3);
        // Every old generation drains and exits, leaving the file to the
        // last one.
        let (old, last) = g.pids.split_at(g.pids.len() - 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        while old.iter().any(|&p| alive(p)) {
            assert!(Instant::now() < deadline, "an old generation never exited");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(alive(last[0]));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (ok, failed) = client.join().unwrap();
        assert!(ok > 0, "no request over the unix socket was answered");
        assert_eq!(
            failed,
            0,
            "{failed} of {} unix-socket requests failed",
            ok + failed
        );
        assert!(unix_get(&sock), "the last generation serves the same file");
        g.finish();
        assert!(
            !sock.exists(),
            "the last generation removes its socket file at exit"
        );
    }
}

/// With `[server] user`, the logs and the pid file live in root-owned
/// directories: the new process, which starts as that user, takes over the
/// old one's root helper, so it writes the pid file and reopens the log on
/// SIGUSR1 through it, and at its exit the helper removes the pid file and
/// ends.
#[test]
fn with_a_user_the_root_helper_is_handed_over() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test starts ringside as root (the test command runs as root)"
    );
    let mut site = Site::new("upgrade-keeper", false);
    let d = site.dir.path().to_path_buf();
    for sub in ["", "www", "log", "run"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
        std::fs::set_permissions(
            d.join(sub),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    let pid_file = d.join("run/ringside.pid");
    let log = d.join("log/access.log");
    let text = format!(
        "[server]\nroot = \"{dir}/www\"\nlisten = [\"127.0.0.1:0\"]\nuser = \"nobody\"\npid_file = \"{pid}\"\n\n\
         [access_log]\npath = \"{log}\"\nflush_every = \"10ms\"\n\n[runtime]\nworkers = 1\n",
        dir = d.display(),
        pid = pid_file.display(),
        log = log.display(),
    );
    std::fs::write(&site.cfg, text).unwrap();
    site.pid_file = pid_file.clone();
    let mut g = Generations::start(&site);
    let first = g.pids[0];
    let keeper: i32 = std::fs::read_to_string(format!("/proc/{first}/task/{first}/children"))
        .unwrap()
        .split_whitespace()
        .next()
        .expect("a root helper")
        .parse()
        .unwrap();
    let get = |g: &Generations, q: &str| {
        let out = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("http://{}/index.html?{q}", g.plain))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let logged = |q: &str| {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains(q)
            {
                return;
            }
            assert!(Instant::now() < end, "{q} never reached {}", log.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    assert_eq!(get(&g, "first"), "200");
    logged("?first");
    let new = site
        .upgrade(Path::new(BIN))
        .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", g.log()));
    g.pids.push(new);
    g.banner();
    assert_eq!(site.pid(), new, "the helper wrote the new pid");
    let end = Instant::now() + Duration::from_secs(60);
    while alive(first) {
        assert!(Instant::now() < end, "the old process never exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(alive(keeper), "the root helper outlives the old process");
    assert_eq!(get(&g, "second"), "200");
    logged("?second");
    // logrotate: move, then SIGUSR1 to the new process, which runs as
    // nobody and reopens the log in the root-owned directory through the
    // helper.
    std::fs::rename(&log, d.join("log/access.log.1")).unwrap();
    // SAFETY: our server's pid.
    unsafe { libc::kill(new, libc::SIGUSR1) };
    let end = Instant::now() + Duration::from_secs(10);
    while !log.exists() {
        assert!(Instant::now() < end, "the log was not reopened");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(get(&g, "third"), "200");
    logged("?third");
    g.finish();
    assert!(
        !pid_file.exists(),
        "the helper removes the new pid's file at the end"
    );
    let end = Instant::now() + Duration::from_secs(10);
    while alive(keeper) {
        assert!(Instant::now() < end, "the root helper outlived the server");
        std::thread::sleep(Duration::from_millis(10));
    }
}
