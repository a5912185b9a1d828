//! Runs the real `ringside` binary: started on port 0, its first stdout line
//! read for the address (the readiness signal), stopped by pid on drop.
#![allow(dead_code)]

pub mod cache_origin;
pub mod client;
pub mod fcgi_fake;
pub mod h2;
pub mod h3;
pub mod load;
pub mod nginx;
pub mod origin;
pub mod phpfpm;
pub mod pki;
pub mod python;
pub mod recorder;
pub mod script;
pub mod security;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_ringside");

/// The backends every I/O test runs on.
pub const BACKENDS: [&str; 3] = ["io-uring", "epoll", "glommio"];

pub struct Ringside {
    pub child: Child,
    pub addr: SocketAddr,
    pub banner: String,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// Later stdout lines (the admin address).
    lines: std::sync::mpsc::Receiver<String>,
    admin: Option<SocketAddr>,
}

impl Ringside {
    pub fn start(args: &[&str]) -> Ringside {
        Self::start_with(Command::new(BIN).args(args))
    }

    /// One worker on `backend`, listening on port 0, with `args` added.
    pub fn one_worker(backend: &str, args: &[&str]) -> Ringside {
        let mut all = vec![
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--backend",
            backend,
        ];
        all.extend_from_slice(args);
        Self::start(&all)
    }

    /// [`Ringside::one_worker`] serving `root`.
    pub fn serving(backend: &str, root: &Path) -> Ringside {
        Self::one_worker(backend, &["--root", root.to_str().unwrap()])
    }

    /// One worker on `backend` reading `cfg`, on the listeners the
    /// config names (no `--listen` added).
    pub fn as_configured(backend: &str, cfg: &Path) -> Ringside {
        Self::start(&[
            "--workers",
            "1",
            "--backend",
            backend,
            "--config",
            cfg.to_str().unwrap(),
        ])
    }

    /// [`Ringside::one_worker`] reading the config file `cfg`.
    pub fn configured(backend: &str, cfg: &Path) -> Ringside {
        Self::one_worker(backend, &["--config", cfg.to_str().unwrap()])
    }

    /// `workers` workers on `backend`, port 0, reading the config `cfg`.
    pub fn workers(backend: &str, workers: u32, cfg: &Path) -> Ringside {
        Self::workers_with(workers, cfg, &["--backend", backend])
    }

    /// One worker on the default backend, port 0, reading `cfg`, with no
    /// admin listener (none to collide with another test's).
    pub fn without_admin(cfg: &Path) -> Ringside {
        Self::workers_with(1, cfg, &["--admin", "off"])
    }

    /// [`Ringside::workers`] on the default backend, with the admin
    /// listener on a port of its own (see [`Ringside::admin`]).
    pub fn with_admin(workers: u32, cfg: &Path) -> Ringside {
        Self::workers_with(workers, cfg, &["--admin", "127.0.0.1:0"])
    }

    /// [`Ringside::with_admin`] on `backend`.
    pub fn with_admin_on(backend: &str, workers: u32, cfg: &Path) -> Ringside {
        Self::workers_with(
            workers,
            cfg,
            &["--admin", "127.0.0.1:0", "--backend", backend],
        )
    }

    fn workers_with(workers: u32, cfg: &Path, extra: &[&str]) -> Ringside {
        let workers = workers.to_string();
        let mut args = vec!["--listen", "127.0.0.1:0", "--workers", &workers];
        args.extend_from_slice(extra);
        args.extend(["--config", cfg.to_str().unwrap()]);
        Self::start(&args)
    }

    pub fn start_with(cmd: &mut Command) -> Ringside {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        // Die with the test process rather than outlive a failed test.
        // SAFETY: prctl is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("spawn ringside");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut banner = String::new();
        out.read_line(&mut banner).expect("read banner");
        if banner.is_empty() {
            let status = child.wait().unwrap();
            let log = stderr.join().unwrap();
            panic!("ringside exited before serving ({status}):\n{log}");
        }
        // Keep draining stdout so the server never blocks on it.
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            while out.read_line(&mut line).unwrap_or(0) > 0 {
                let _ = tx.send(std::mem::take(&mut line));
            }
        });
        let addr = banner
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in banner {banner:?}"));
        Ringside {
            child,
            addr,
            banner,
            stderr: Some(stderr),
            lines,
            admin: None,
        }
    }

    /// The address of the next listener's banner line (a config with
    /// several listeners prints one line each, the first in `addr`).
    pub fn next_listener(&mut self) -> SocketAddr {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("no further listener banner line");
        line.split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in banner {line:?}"))
    }

    /// The admin listener's address, from its banner line.
    pub fn admin(&mut self) -> SocketAddr {
        if let Some(a) = self.admin {
            return a;
        }
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(10))
                .expect("no admin banner line");
            if let Some(rest) = line.trim().strip_prefix("ringside: admin on http://") {
                let a: SocketAddr = rest.trim_end_matches("/metrics").parse().unwrap();
                self.admin = Some(a);
                return a;
            }
        }
    }

    /// GET `path` from the admin listener: (status, body).
    pub fn admin_get(&mut self, path: &str) -> (u16, String) {
        let a = self.admin();
        let mut s = TcpStream::connect(a).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: admin\r\n\r\n").unwrap();
        let mut all = String::new();
        s.read_to_string(&mut all).unwrap();
        let status = all[9..12].parse().unwrap();
        let body = all.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_owned())
    }

    /// The value of the sample `series` (name with its labels, exactly as
    /// printed) in a scrape; 0 when absent.
    pub fn metric(&mut self, series: &str) -> f64 {
        let (_, text) = self.admin_get("/metrics");
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    }

    /// Waits until the server counted `n` reloads with `result` (the
    /// reload's readiness signal).
    pub fn wait_reloads(&mut self, result: &str, n: u64) {
        let series = format!("ringside_reloads_total{{result=\"{result}\"}}");
        let end = Instant::now() + Duration::from_secs(20);
        while self.metric(&series) < n as f64 {
            assert!(Instant::now() < end, "{series} never reached {n}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Waits for exit, bounded so a hung server fails the test.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let end = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < end,
                "ringside did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server with SIGTERM, checks it exited cleanly, and returns
    /// what it logged.
    pub fn stop(mut self) -> String {
        self.signal(libc::SIGTERM);
        let st = self.wait(Duration::from_secs(20));
        assert!(st.success(), "ringside exited with {st}");
        self.stderr()
    }

    /// Everything the server wrote to stderr; call after it exited.
    pub fn stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default()
    }

    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let text = String::from_utf8_lossy(&all);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status");
        let at = all
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("head end")
            + 4;
        (status, all[at..].to_vec())
    }
}

impl Drop for Ringside {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `ringside` to be run in a network namespace of its own with loopback
/// up: for `check`, which tries the listen addresses, so that what else
/// listens on this machine cannot change the outcome.
pub fn isolated() -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--net",
        "sh",
        "-c",
        "ip link set lo up && exec \"$0\" \"$@\"",
    ])
    .arg(BIN);
    cmd
}

/// A finished command's status and output, for an assertion's message.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("ringside-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
