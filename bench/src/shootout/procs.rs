//! Starting and stopping the processes of a shootout: each pinned to its
//! CPUs, its port checked free before and connected to for readiness after,
//! and stopped by pid.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to accept its first connection.
const READY_LIMIT: Duration = Duration::from_secs(15);
/// How long a server may take to exit after SIGTERM before SIGKILL.
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// A private directory for one process's config, pid file and logs.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("shootout-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create a scratch directory");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Reads `template`, replaces each `@KEY@` with its value, writes the
/// result as `name` in `dir`. A placeholder left unfilled is an error.
pub fn fill(
    template: &Path,
    dir: &Path,
    name: &str,
    vars: &[(&str, String)],
) -> Result<PathBuf, String> {
    let mut text =
        fs::read_to_string(template).map_err(|e| format!("{}: {e}", template.display()))?;
    for (k, v) in vars {
        text = text.replace(&format!("@{k}@"), v);
    }
    let unfilled = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim_start().starts_with(';'))
        .find_map(|l| {
            let start = l.find('@')?;
            let rest = &l[start + 1..];
            let end = rest.find('@')?;
            let key = &rest[..end];
            (!key.is_empty() && key.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
                .then(|| key.to_owned())
        });
    if let Some(k) = unfilled {
        return Err(format!("{}: @{k}@ not filled in", template.display()));
    }
    let out = dir.join(name);
    fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(out)
}

/// A running process of the shootout, stopped on drop.
pub struct Proc {
    pub name: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Proc {
    /// Spawns `argv` on `cpus` with its output in `dir`, after checking
    /// that `port` is free; then waits until `port` accepts a connection.
    pub fn start(
        name: &str,
        argv: &[String],
        cpus: &[usize],
        port: u16,
        dir: &Path,
    ) -> Result<Proc, String> {
        if !port_is_free(port) {
            return Err(format!("{name}: port {port} is taken"));
        }
        let mut p = Self::spawn(name, argv, cpus, dir, Stdio::null())?;
        p.wait_ready(port)?;
        Ok(p)
    }

    /// Spawns `argv` on `cpus`, its stdin a pipe held open (some servers
    /// stop at its EOF), and reads the port from its first stdout line
    /// (`PORT n`), then waits until it accepts.
    pub fn start_reporting(
        name: &str,
        argv: &[String],
        cpus: &[usize],
        dir: &Path,
    ) -> Result<(Proc, u16), String> {
        let mut p = Self::spawn(name, argv, cpus, dir, Stdio::piped())?;
        let child = p.child.as_mut().expect("spawned");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout piped");
        let _ = BufReader::new(out).read_line(&mut line);
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("{name} did not report its port: {line:?}{}", p.log_tail()))?;
        p.wait_ready(port)?;
        Ok((p, port))
    }

    fn spawn(
        name: &str,
        argv: &[String],
        cpus: &[usize],
        dir: &Path,
        stdout: Stdio,
    ) -> Result<Proc, String> {
        let log = dir.join(format!("{name}.log"));
        let err = fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(err);
        pin(&mut cmd, cpus);
        let child = cmd
            .spawn()
            .map_err(|e| format!("{name}: cannot run {}: {e}", argv[0]))?;
        Ok(Proc {
            name: name.to_owned(),
            child: Some(child),
            log,
        })
    }

    fn wait_ready(&mut self, port: u16) -> Result<(), String> {
        let end = Instant::now() + READY_LIMIT;
        loop {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(());
            }
            let child = self.child.as_mut().expect("spawned");
            if let Ok(Some(st)) = child.try_wait() {
                return Err(format!(
                    "{} exited before serving ({st}){}",
                    self.name,
                    self.log_tail()
                ));
            }
            if Instant::now() > end {
                return Err(format!(
                    "{} did not accept on port {port} within {READY_LIMIT:?}{}",
                    self.name,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let text = text.trim();
        let tail = &text[text.len().saturating_sub(600)..];
        if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGTERM by pid, then SIGKILL if it lingers.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: our own child's pid, not yet reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + STOP_LIMIT;
        while Instant::now() < end {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `cmd` on `cpus` only, and never past the shootout's own life.
fn pin(cmd: &mut Command, cpus: &[usize]) {
    let cpus = cpus.to_vec();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in &cpus {
                libc::CPU_SET(c, &mut set);
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // A group of its own: lighttpd's master with workers ends them
            // with kill(0, SIGTERM), which would reach the shootout too.
            libc::setsid();
            Ok(())
        });
    }
}

/// Runs `argv` to its end on `cpus`; its stdout, or why it failed.
pub fn run_pinned(argv: &[String], cpus: &[usize]) -> Result<String, String> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null());
    pin(&mut cmd, cpus);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} failed ({}): {}",
            argv[0],
            out.status,
            err.trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// The first of `names` found as an executable in /usr/sbin, /usr/bin or
/// PATH.
pub fn find_binary(names: &[&str]) -> Option<PathBuf> {
    let mut dirs = vec![PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    names
        .iter()
        .find_map(|n| dirs.iter().map(|d| d.join(n)).find(|p| p.is_file()))
}
