//! A real php-fpm (Debian's `php8.2-fpm`, or any `/usr/sbin/php-fpm*`) as the
//! FastCGI peer of tests, with a small blocking FastCGI client of its own.
//!
//! [`PhpFpm::start_tcp`] / [`PhpFpm::start_unix`] fill in
//! `deploy/bench/php-fpm.conf` (one static pool, `pm.status_path =
//! /fpm-status`, script stderr caught into the log) in a fresh temp dir and
//! run `php-fpm -F -y CONF` (plus `-R` as root, which php-fpm needs to run
//! as root at all). php-fpm is ready when its master logs "ready to handle
//! connections" (after it bound the socket and forked the children); the
//! helper waits for that line, bounded by 10 s, rather than connecting,
//! since every connection php-fpm accepts moves its counters. php-fpm cannot
//! listen on port 0, so a TCP listener gets a port that was free a moment
//! ago, and another one if php-fpm then fails with "Address already in use".
//! Drop (and [`PhpFpm::restart`]) sends SIGTERM to the master by pid and
//! waits for it; the master stops its children before it exits.
//!
//! When php-fpm is not installed, starting one panics: tests that need the
//! peer fail, never skip (`scripts/test.sh` installs it).
//!
//! Things about php-fpm (8.2) a FastCGI front end must know, each shown by
//! `tests/phpfpm_support.rs`:
//! - A child serves one connection until the connection closes: with
//!   FCGI_KEEP_CONN, a kept idle connection holds a child. When the kept
//!   connections reach `pm.max_children`, new connections wait in the
//!   listen backlog, unserved, until a kept one closes. Even `/fpm-status`
//!   needs a free child.
//! - After a request without FCGI_KEEP_CONN, php-fpm shuts down its side
//!   of the connection and then reads until the client closes its side: a
//!   client that holds the socket open holds the child.
//! - A kept connection idle longer than `request_terminate_timeout` (30 s
//!   here; none when 0) gets its child killed ("execution timed out"), so
//!   the front end sees EOF. Idle timeouts in a pool must stay below it.
//! - `accepted conn` counts the times a child began to read a request: once
//!   per accepted connection, and once more after each request on a kept
//!   connection (the child goes back to wait on it), and once for a
//!   connection closed without any request. It is not a count of
//!   connections. A status fetch counts itself.
//! - `idle processes`, `active processes` and `total processes` are moved
//!   by the children as they work and set right by the master once a
//!   second: just after start `total` may be short of `pm.max_children`,
//!   and with kept connections `active` drifts (7 active of 2 children
//!   seen). A child waiting on a kept idle connection is active. Count
//!   children with [`PhpFpm::workers`] instead.
//! - FCGI_GET_VALUES is answered with `FCGI_MPXS_CONNS=0` only (no
//!   FCGI_MAX_CONNS, no FCGI_MAX_REQS), by a child, and the connection stays
//!   open: a connection waiting in the backlog gets no answer until a child
//!   takes it. `accepted conn` counts the question as one more read.
//! - Script stderr (php://stderr) reaches the log through the master, after
//!   the response: wait for it with [`PhpFpm::wait_for_log`]. PHP warnings
//!   and errors go to the front end as FCGI_STDERR records ("PHP message:
//!   ...") and to the log too; a missing script is a 404 with FCGI_STDERR
//!   "Primary script unknown".
#![allow(dead_code)]

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::TempDir;

const TEMPLATE: &str = include_str!("../../../deploy/bench/php-fpm.conf");
const MISSING: &str = "php-fpm is needed for this test (scripts/test.sh installs it)";
const READY_LINE: &str = "ready to handle connections";
const START_LIMIT: Duration = Duration::from_secs(10);

/// Where php-fpm listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl fmt::Display for Listen {
    /// The form ringside's `--fastcgi` and `servers` take:
    /// `127.0.0.1:PORT` or `unix:/path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "{a}"),
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// The figures of php-fpm's status page (`/fpm-status`, plain text).
#[derive(Clone, Debug, Default)]
pub struct FpmStatus {
    /// Times a child began to read a request (see the module docs): not
    /// connections. Includes the status request that fetched this.
    pub accepted_conn: u64,
    pub listen_queue: u32,
    pub max_listen_queue: u32,
    pub listen_queue_len: u32,
    /// `idle`, `active` and `total` are approximate (see the module docs).
    pub idle: u32,
    /// Includes children waiting on a kept idle connection.
    pub active: u32,
    pub total: u32,
    pub max_active: u32,
    pub max_children_reached: u64,
    pub slow_requests: u64,
    /// The page as php-fpm wrote it.
    pub raw: String,
}

/// A running php-fpm; stopped by pid on drop.
pub struct PhpFpm {
    pub listen: Listen,
    pub children: u32,
    child: Option<Child>,
    dir: TempDir,
    conf: PathBuf,
    extra: String,
    /// Status fetches since this master started, each counted by php-fpm
    /// in `accepted conn`.
    probes: std::cell::Cell<u64>,
}

impl PhpFpm {
    /// `children` PHP workers listening on 127.0.0.1 (a free port).
    pub fn start_tcp(children: u32) -> PhpFpm {
        Self::start_with(false, children, "")
    }

    /// `children` PHP workers listening on a unix socket in a temp dir.
    pub fn start_unix(children: u32) -> PhpFpm {
        Self::start_with(true, children, "")
    }

    /// As the others, with `extra` appended to the pool section, e.g.
    /// `"request_terminate_timeout = 2s\n"` (a later line wins).
    pub fn start_with(unix: bool, children: u32, extra: &str) -> PhpFpm {
        assert!(children > 0, "php-fpm needs at least one child");
        let dir = TempDir::new("php-fpm");
        let listen = if unix {
            Listen::Unix(dir.path().join("php-fpm.sock"))
        } else {
            Listen::Tcp(free_port())
        };
        let conf = dir.path().join("php-fpm.conf");
        let mut fpm = PhpFpm {
            listen,
            children,
            child: None,
            dir,
            conf,
            extra: extra.to_owned(),
            probes: std::cell::Cell::new(0),
        };
        fpm.launch(!unix);
        fpm
    }

    /// The php-fpm binary: `/usr/sbin/php-fpm8.2`, else the newest
    /// `/usr/sbin/php-fpm*`, else `php-fpm*` on PATH. Panics when none.
    pub fn binary() -> PathBuf {
        let preferred = Path::new("/usr/sbin/php-fpm8.2");
        if preferred.is_file() {
            return preferred.to_path_buf();
        }
        let mut dirs = vec![PathBuf::from("/usr/sbin")];
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        for d in dirs {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut found: Vec<PathBuf> = rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("php-fpm"))
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            found.sort();
            if let Some(p) = found.pop() {
                return p;
            }
        }
        panic!("{MISSING}");
    }

    /// `proxy/tests/support/php`, absolute: the scripts the tests run.
    pub fn docroot() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/php")
    }

    /// Writes `ringside.toml` in `dir`: one FastCGI upstream `php` over
    /// this php-fpm (with the upstream keys `extra`), running every `.php`
    /// beneath [`PhpFpm::docroot`].
    pub fn ringside_config(&self, dir: &TempDir, extra: &str) -> PathBuf {
        let text = format!(
            "[upstream.php]\nprotocol = \"fastcgi\"\nservers = [\"{}\"]\n{extra}\n\
             [[route]]\nprefix = \"/\"\nupstream = \"php\"\nroot = \"{}\"\n",
            self.listen,
            Self::docroot().display()
        );
        dir.write("ringside.toml", text.as_bytes())
    }

    /// The master's pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("php-fpm is running").id()
    }

    /// The pids of the master's children (the PHP workers), sorted.
    pub fn workers(&self) -> Vec<u32> {
        let me = self.pid().to_string();
        let mut pids: Vec<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| {
                        // Field 4 (ppid) follows the ")" closing the name.
                        let rest = s.rsplit_once(')')?.1.to_owned();
                        rest.split_whitespace().nth(1).map(|p| p == me)
                    })
                    .unwrap_or(false)
            })
            .collect();
        pids.sort();
        pids
    }

    /// The temp dir holding the config, the pid file and the log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// php-fpm's error log: the master's notices and warnings, and what
    /// scripts wrote to stderr (one line as written, undecorated).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Waits, up to `limit`, for `needle` in the log; returns the log.
    /// Script stderr arrives through the master, after the response.
    pub fn wait_for_log(&self, needle: &str, limit: Duration) -> String {
        let end = Instant::now() + limit;
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            assert!(
                Instant::now() < end,
                "{needle:?} not in php-fpm's log within {limit:?}:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops php-fpm by pid and starts it again on the same address,
    /// waiting until it is ready. Its counters start again from zero.
    pub fn restart(&mut self) {
        self.stop();
        self.launch(false);
    }

    /// Rewrites the config with `children` and reloads php-fpm (SIGUSR2,
    /// as `systemctl reload` does), waiting until the new master is ready.
    /// The master re-executes itself and keeps its listening socket, so
    /// connections waiting in the backlog stay.
    pub fn reload_with(&mut self, children: u32) {
        self.children = children;
        self.write_conf();
        let from = self.log().len();
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.pid() as i32, libc::SIGUSR2) };
        let end = Instant::now() + START_LIMIT;
        loop {
            if self.log().get(from..).unwrap_or("").contains(READY_LINE) {
                return;
            }
            assert!(
                Instant::now() < end,
                "php-fpm did not reload within {START_LIMIT:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `/fpm-status`, fetched over FastCGI on a connection of its own (not
    /// kept). php-fpm counts this very request in `accepted conn`. It needs
    /// a free child: it hangs while kept connections hold them all.
    pub fn status(&self) -> FpmStatus {
        let params = [
            ("SCRIPT_NAME", "/fpm-status"),
            ("SCRIPT_FILENAME", "/fpm-status"),
            ("REQUEST_METHOD", "GET"),
            ("QUERY_STRING", ""),
        ];
        let r = self
            .connect()
            .request(&params, b"", false)
            .expect("fetch /fpm-status");
        self.probes.set(self.probes.get() + 1);
        assert_eq!(r.status(), 200, "/fpm-status: {r:?}");
        parse_status(&String::from_utf8_lossy(r.body()))
    }

    /// `accepted conn` less this helper's own status fetches (this one
    /// included) since the master started; requests made with
    /// [`PhpFpm::get`], [`PhpFpm::request`] or [`PhpFpm::connect`] still
    /// count, as any client's do.
    pub fn accepted_conn_excluding_probes(&self) -> u64 {
        let st = self.status();
        st.accepted_conn - self.probes.get()
    }

    /// A fresh FastCGI connection to this php-fpm.
    pub fn connect(&self) -> FcgiConn {
        FcgiConn::connect(&self.listen).expect("connect to php-fpm")
    }

    /// `GET script?query` on a fresh connection, not kept.
    pub fn get(&self, script: &str, query: &str) -> FcgiResponse {
        self.request("GET", script, query, b"")
    }

    /// One request on a fresh connection, not kept, with the CGI params a
    /// front end sends ([`cgi_params`]).
    pub fn request(&self, method: &str, script: &str, query: &str, body: &[u8]) -> FcgiResponse {
        let params = cgi_params(method, script, query, body.len());
        let params: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.connect()
            .request(&params, body, false)
            .unwrap_or_else(|e| panic!("FastCGI {method} {script}: {e}"))
    }

    /// Connections open to php-fpm now, accepted or waiting in the backlog
    /// (`/proc/net/tcp` or `/proc/net/unix`, from the server's side).
    pub fn open_connections(&self) -> usize {
        match &self.listen {
            Listen::Tcp(a) => {
                // By peer: /proc/net/tcp is read in pieces while sockets
                // come and go, and the same socket can be listed twice.
                let mut peers: Vec<String> = tcp_sockets(a.port())
                    .into_iter()
                    .filter(|(st, _, _)| *st == 0x01)
                    .map(|(_, _, peer)| peer)
                    .collect();
                peers.sort();
                peers.dedup();
                peers.len()
            }
            Listen::Unix(p) => {
                let path = p.to_string_lossy();
                let text = std::fs::read_to_string("/proc/net/unix").unwrap();
                let mut inodes: Vec<&str> = text
                    .lines()
                    .skip(1)
                    .filter_map(|l| {
                        let f: Vec<&str> = l.split_whitespace().collect();
                        // Num RefCount Protocol Flags Type St Inode Path;
                        // St 03 is connected (01 is the listener).
                        (f.len() >= 8 && f[5] == "03" && f[7] == path).then(|| f[6])
                    })
                    .collect();
                // By inode, as a socket can be listed twice (see above).
                inodes.sort_unstable();
                inodes.dedup();
                inodes.len()
            }
        }
    }

    /// Waits until `n` connections are open to php-fpm, bounded by 10 s.
    pub fn wait_open(&self, n: usize) {
        let end = Instant::now() + Duration::from_secs(10);
        while self.open_connections() < n {
            assert!(Instant::now() < end, "php-fpm never saw {n} connections");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// TCP only: connections waiting in the listen backlog, not yet taken
    /// by a child (the listener's receive queue in `/proc/net/tcp`).
    pub fn backlog(&self) -> u32 {
        let Listen::Tcp(a) = &self.listen else {
            panic!("backlog() is for a TCP listener");
        };
        tcp_sockets(a.port())
            .iter()
            .find(|(st, _, _)| *st == 0x0A)
            .map(|(_, rx, _)| *rx)
            .expect("php-fpm's listening socket")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("php-fpm.log")
    }

    fn write_conf(&self) {
        let listen = match &self.listen {
            Listen::Tcp(a) => a.to_string(),
            Listen::Unix(p) => p.to_str().unwrap().to_owned(),
        };
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let users = if root {
            "user = root\ngroup = root"
        } else {
            ""
        };
        let mut text = TEMPLATE
            .replace("@PREFIX@", self.dir.path().to_str().unwrap())
            .replace("@LISTEN@", &listen)
            .replace("@CHILDREN@", &self.children.to_string())
            .replace("@USERLINES@", users);
        text.push_str(&self.extra);
        text.push('\n');
        std::fs::write(&self.conf, text).unwrap();
    }

    /// Starts the master and waits for its "ready" line. With `new_ports`,
    /// a TCP listener whose port was taken meanwhile moves to another one.
    fn launch(&mut self, new_ports: bool) {
        let bin = Self::binary();
        for _attempt in 0..10 {
            self.write_conf();
            self.probes.set(0);
            let from = self.log().len();
            let mut cmd = Command::new(&bin);
            cmd.arg("-F").arg("-y").arg(&self.conf);
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 {
                cmd.arg("-R");
            }
            // What php-fpm says before its log is open (a bad config).
            let early = std::fs::File::create(self.dir.path().join("php-fpm.stderr")).unwrap();
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(early));
            // SIGTERM (not SIGKILL) when the test thread dies: the master
            // then stops its children, which SIGKILL would orphan.
            // SAFETY: prctl is async-signal-safe.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
            self.child = Some(
                cmd.spawn()
                    .unwrap_or_else(|e| panic!("{MISSING}: {}: {e}", bin.display())),
            );
            let end = Instant::now() + START_LIMIT;
            loop {
                let log = self.log();
                let new = log.get(from..).unwrap_or("");
                if new.contains(READY_LINE) {
                    return;
                }
                if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                    self.child = None;
                    if new_ports
                        && new.contains("Address already in use")
                        && matches!(self.listen, Listen::Tcp(_))
                    {
                        release_port(&self.listen);
                        self.listen = Listen::Tcp(free_port());
                        break;
                    }
                    let early = std::fs::read_to_string(self.dir.path().join("php-fpm.stderr"))
                        .unwrap_or_default();
                    panic!(
                        "php-fpm ({}) exited before it was ready ({st}):\n{early}{new}",
                        bin.display()
                    );
                }
                if Instant::now() >= end {
                    self.stop();
                    panic!("php-fpm was not ready within {START_LIMIT:?}:\n{new}");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        panic!("php-fpm found no free port in 10 tries");
    }

    /// SIGTERM to the master by pid, then wait for it.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if child.try_wait().ok().flatten().is_none() {
                // SAFETY: kill on our own child's pid, not yet reaped.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                let _ = child.wait();
            }
        }
    }
}

impl Drop for PhpFpm {
    fn drop(&mut self) {
        self.stop();
        release_port(&self.listen);
    }
}

/// The CGI/1.1 params for `method script?query` with the helper's docroot,
/// as a front end sends them (no PATH_INFO, REMOTE_ADDR 127.0.0.1).
pub fn cgi_params(
    method: &str,
    script: &str,
    query: &str,
    body_len: usize,
) -> Vec<(String, String)> {
    let root = PhpFpm::docroot();
    let uri = if query.is_empty() {
        script.to_owned()
    } else {
        format!("{script}?{query}")
    };
    let mut p = vec![
        ("GATEWAY_INTERFACE", "CGI/1.1".to_owned()),
        ("SERVER_SOFTWARE", "ringside-tests".to_owned()),
        ("SERVER_PROTOCOL", "HTTP/1.1".to_owned()),
        ("SERVER_NAME", "localhost".to_owned()),
        ("SERVER_ADDR", "127.0.0.1".to_owned()),
        ("SERVER_PORT", "80".to_owned()),
        ("REMOTE_ADDR", "127.0.0.1".to_owned()),
        ("REMOTE_PORT", "40000".to_owned()),
        ("REQUEST_METHOD", method.to_owned()),
        ("REQUEST_URI", uri),
        ("QUERY_STRING", query.to_owned()),
        ("DOCUMENT_ROOT", root.to_str().unwrap().to_owned()),
        ("SCRIPT_NAME", script.to_owned()),
        (
            "SCRIPT_FILENAME",
            format!("{}{script}", root.to_str().unwrap()),
        ),
        ("HTTP_HOST", "localhost".to_owned()),
    ];
    if body_len > 0 || method == "POST" || method == "PUT" {
        p.push(("CONTENT_LENGTH", body_len.to_string()));
        p.push(("CONTENT_TYPE", "application/octet-stream".to_owned()));
    }
    p.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Ports held by this process's php-fpms, restarts included: never handed
/// out again while one holds it (a restart leaves its port free a moment).
static PORTS: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());

/// A loopback port free a moment ago and held by no other php-fpm here.
fn free_port() -> SocketAddr {
    let mut taken = PORTS.lock().unwrap_or_else(|e| e.into_inner());
    // Keep the refused listeners open, so that bind(0) moves on.
    let mut refused = Vec::new();
    loop {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind port 0");
        let a = l.local_addr().unwrap();
        if taken.contains(&a.port()) {
            refused.push(l);
            continue;
        }
        taken.push(a.port());
        return a;
    }
}

fn release_port(listen: &Listen) {
    if let Listen::Tcp(a) = listen {
        PORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| *p != a.port());
    }
}

/// (state, rx_queue, remote address) of IPv4 sockets whose local port is
/// `port`.
/// Connections php-fpm on TCP `port` has taken now: those open from its
/// side less those still in its listen backlog. Read twice and the
/// smaller kept: the listener's line comes before the connections' in
/// `/proc/net/tcp`, so one arriving between them would count as taken.
pub fn taken_now(port: u16) -> usize {
    let once = || {
        let socks = tcp_sockets(port);
        let backlog = socks
            .iter()
            .find(|(st, _, _)| *st == 0x0A)
            .map_or(0, |(_, rx, _)| *rx as usize);
        let mut peers: Vec<&str> = socks
            .iter()
            .filter(|(st, _, _)| *st == 0x01)
            .map(|(_, _, peer)| peer.as_str())
            .collect();
        peers.sort_unstable();
        peers.dedup();
        peers.len().saturating_sub(backlog)
    };
    once().min(once())
}

/// Connections open to php-fpm on TCP `port` now, taken or waiting in the
/// backlog: those established at both ends. `/proc/net/tcp` is read in
/// pieces while sockets come and go, so one end of a connection closing
/// meanwhile can be listed as it was and the other as it is now, and a
/// socket can be listed twice; a connection counts once, and only where
/// both ends say it is open.
pub fn open_to(port: u16) -> usize {
    let want = format!(":{port:04X}");
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let mut server = std::collections::HashSet::new();
    let mut client = std::collections::HashSet::new();
    for l in text.lines().skip(1) {
        // sl local_address rem_address st ...
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 || f[3] != "01" {
            continue;
        }
        if f[1].ends_with(&want) {
            server.insert(f[2].to_owned());
        } else if f[2].ends_with(&want) {
            client.insert(f[1].to_owned());
        }
    }
    server.intersection(&client).count()
}

fn tcp_sockets(port: u16) -> Vec<(u8, u32, String)> {
    let want = format!(":{port:04X}");
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            // sl local_address rem_address st tx_queue:rx_queue ...
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 || !f[1].ends_with(&want) {
                return None;
            }
            let st = u8::from_str_radix(f[3], 16).ok()?;
            let rx = u32::from_str_radix(f[4].split(':').nth(1)?, 16).ok()?;
            Some((st, rx, f[2].to_owned()))
        })
        .collect()
}

fn parse_status(text: &str) -> FpmStatus {
    let mut st = FpmStatus {
        raw: text.to_owned(),
        ..FpmStatus::default()
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let n = || v.parse::<u64>().unwrap_or(0);
        match k.trim() {
            "accepted conn" => st.accepted_conn = n(),
            "listen queue" => st.listen_queue = n() as u32,
            "max listen queue" => st.max_listen_queue = n() as u32,
            "listen queue len" => st.listen_queue_len = n() as u32,
            "idle processes" => st.idle = n() as u32,
            "active processes" => st.active = n() as u32,
            "total processes" => st.total = n() as u32,
            "max active processes" => st.max_active = n() as u32,
            "max children reached" => st.max_children_reached = n(),
            "slow requests" => st.slow_requests = n(),
            _ => {}
        }
    }
    st
}

// ---- a blocking FastCGI client (FastCGI 1.0 specification) ----

const FCGI_BEGIN_REQUEST: u8 = 1;
const FCGI_END_REQUEST: u8 = 3;
const FCGI_PARAMS: u8 = 4;
const FCGI_STDIN: u8 = 5;
const FCGI_STDOUT: u8 = 6;
const FCGI_STDERR: u8 = 7;
const FCGI_GET_VALUES: u8 = 9;
const FCGI_GET_VALUES_RESULT: u8 = 10;
const FCGI_RESPONDER: u16 = 1;
const FCGI_KEEP_CONN: u8 = 1;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            Stream::Unix(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(b),
            Stream::Unix(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One FastCGI connection; several requests in turn when kept.
pub struct FcgiConn {
    stream: Stream,
}

/// What the application answered to one request.
#[derive(Debug, Default)]
pub struct FcgiResponse {
    /// FCGI_STDOUT: CGI headers, a blank line, the body.
    pub stdout: Vec<u8>,
    /// FCGI_STDERR (php-fpm: "Primary script unknown" and the like).
    pub stderr: Vec<u8>,
    pub app_status: u32,
    /// 0 is FCGI_REQUEST_COMPLETE.
    pub protocol_status: u8,
}

impl FcgiResponse {
    fn split(&self) -> (&[u8], &[u8]) {
        let s = &self.stdout;
        if let Some(i) = s.windows(4).position(|w| w == b"\r\n\r\n") {
            (&s[..i], &s[i + 4..])
        } else if let Some(i) = s.windows(2).position(|w| w == b"\n\n") {
            (&s[..i], &s[i + 2..])
        } else {
            (s, &[])
        }
    }

    /// The CGI header block as text.
    pub fn head(&self) -> String {
        String::from_utf8_lossy(self.split().0).into_owned()
    }

    pub fn body(&self) -> &[u8] {
        self.split().1
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.body()).into_owned()
    }

    /// A CGI header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head()
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    }

    /// The `Status:` header's code, else 200.
    pub fn status(&self) -> u16 {
        self.header("Status")
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(200)
    }
}

impl FcgiConn {
    pub fn connect(listen: &Listen) -> io::Result<FcgiConn> {
        let stream = match listen {
            Listen::Tcp(a) => {
                let s = TcpStream::connect(a)?;
                s.set_read_timeout(Some(Duration::from_secs(30)))?;
                Stream::Tcp(s)
            }
            Listen::Unix(p) => {
                let s = UnixStream::connect(p)?;
                s.set_read_timeout(Some(Duration::from_secs(30)))?;
                Stream::Unix(s)
            }
        };
        Ok(FcgiConn { stream })
    }

    /// How long a read may block (30 s unless set).
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match &self.stream {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// One responder request (id 1): BEGIN_REQUEST (FCGI_KEEP_CONN when
    /// `keep`), the params and an empty PARAMS record, `stdin` and an empty
    /// STDIN record; then the records until END_REQUEST.
    pub fn request(
        &mut self,
        params: &[(&str, &str)],
        stdin: &[u8],
        keep: bool,
    ) -> io::Result<FcgiResponse> {
        self.send_request(params, stdin, keep)?;
        self.read_response()
    }

    /// Writes a whole request without reading the answer.
    pub fn send_request(
        &mut self,
        params: &[(&str, &str)],
        stdin: &[u8],
        keep: bool,
    ) -> io::Result<()> {
        let mut out = Vec::new();
        let flags = if keep { FCGI_KEEP_CONN } else { 0 };
        let mut begin = FCGI_RESPONDER.to_be_bytes().to_vec();
        begin.extend_from_slice(&[flags, 0, 0, 0, 0, 0]);
        record(&mut out, FCGI_BEGIN_REQUEST, 1, &begin);
        let mut body = Vec::new();
        for (k, v) in params {
            name_value(&mut body, k.as_bytes(), v.as_bytes());
        }
        stream_records(&mut out, FCGI_PARAMS, 1, &body);
        stream_records(&mut out, FCGI_STDIN, 1, stdin);
        self.stream.write_all(&out)
    }

    /// Reads records until END_REQUEST.
    pub fn read_response(&mut self) -> io::Result<FcgiResponse> {
        let mut r = FcgiResponse::default();
        loop {
            let (kind, _id, content) = self.read_record()?;
            match kind {
                FCGI_STDOUT => r.stdout.extend_from_slice(&content),
                FCGI_STDERR => r.stderr.extend_from_slice(&content),
                FCGI_END_REQUEST if content.len() >= 5 => {
                    r.app_status = u32::from_be_bytes(content[..4].try_into().unwrap());
                    r.protocol_status = content[4];
                    return Ok(r);
                }
                other => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("unexpected FastCGI record type {other}"),
                    ))
                }
            }
        }
    }

    /// FCGI_GET_VALUES for `names`: the pairs the application answered.
    pub fn get_values(&mut self, names: &[&str]) -> io::Result<Vec<(String, String)>> {
        let mut body = Vec::new();
        for n in names {
            name_value(&mut body, n.as_bytes(), b"");
        }
        let mut out = Vec::new();
        record(&mut out, FCGI_GET_VALUES, 0, &body);
        self.stream.write_all(&out)?;
        self.read_get_values()
    }

    /// The answer to an FCGI_GET_VALUES sent before (by a
    /// [`FcgiConn::get_values`] that timed out waiting for it).
    pub fn read_get_values(&mut self) -> io::Result<Vec<(String, String)>> {
        let (kind, _, content) = self.read_record()?;
        if kind != FCGI_GET_VALUES_RESULT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("FCGI_GET_VALUES answered with record type {kind}"),
            ));
        }
        let mut pairs = Vec::new();
        let mut at = 0;
        let len = |c: &[u8], at: &mut usize| -> usize {
            if c[*at] < 0x80 {
                *at += 1;
                c[*at - 1] as usize
            } else {
                let n = u32::from_be_bytes(c[*at..*at + 4].try_into().unwrap()) & 0x7fff_ffff;
                *at += 4;
                n as usize
            }
        };
        while at < content.len() {
            let nl = len(&content, &mut at);
            let vl = len(&content, &mut at);
            let n = String::from_utf8_lossy(&content[at..at + nl]).into_owned();
            let v = String::from_utf8_lossy(&content[at + nl..at + nl + vl]).into_owned();
            at += nl + vl;
            pairs.push((n, v));
        }
        Ok(pairs)
    }

    /// Reads until the peer closes; true when it closed (EOF), false when
    /// the read timed out first. Bytes that arrive are discarded.
    pub fn closed_by_peer(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    fn read_record(&mut self) -> io::Result<(u8, u16, Vec<u8>)> {
        let mut h = [0u8; 8];
        self.stream.read_exact(&mut h)?;
        if h[0] != 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("FastCGI record of version {}", h[0]),
            ));
        }
        let id = u16::from_be_bytes([h[2], h[3]]);
        let len = u16::from_be_bytes([h[4], h[5]]) as usize;
        let mut content = vec![0u8; len + h[6] as usize];
        self.stream.read_exact(&mut content)?;
        content.truncate(len);
        Ok((h[1], id, content))
    }
}

fn record(out: &mut Vec<u8>, kind: u8, id: u16, content: &[u8]) {
    assert!(content.len() <= 0xffff);
    let pad = (8 - content.len() % 8) % 8;
    out.extend_from_slice(&[1, kind]);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&(content.len() as u16).to_be_bytes());
    out.extend_from_slice(&[pad as u8, 0]);
    out.extend_from_slice(content);
    out.resize(out.len() + pad, 0);
}

/// `bytes` as records of at most 65535 bytes each, then an empty one.
fn stream_records(out: &mut Vec<u8>, kind: u8, id: u16, bytes: &[u8]) {
    for chunk in bytes.chunks(0xffff) {
        record(out, kind, id, chunk);
    }
    record(out, kind, id, &[]);
}

fn name_value(out: &mut Vec<u8>, n: &[u8], v: &[u8]) {
    for len in [n.len(), v.len()] {
        if len < 0x80 {
            out.push(len as u8);
        } else {
            out.extend_from_slice(&(len as u32 | 0x8000_0000).to_be_bytes());
        }
    }
    out.extend_from_slice(n);
    out.extend_from_slice(v);
}
