//! Binary upgrade without a refused or dropped connection (SIGUSR2, or
//! `ringside upgrade`), as nginx's USR2 and HAProxy's `-x` do it.
//!
//! The running process starts the binary at its executable path (or one
//! named) with its own arguments, and hands it over a socket pair every
//! listening socket it holds: each worker's socket of every `[server]
//! listen` address and the admin listener. The new process binds none of
//! those, starts its workers on them, writes the pid file, tells systemd,
//! and answers `ready`. Only then does the old one stop accepting and
//! drain, as on SIGTERM except that idle keep-alive connections wait a
//! moment for their next request (see `ringside_runtime::shutdown`). If
//! the new process exits, refuses its config, or is not ready in time,
//! the old one closes nothing, keeps serving and says why.
//!
//! No socket is closed on the way, so nothing queued on one is reset:
//! both processes hold every socket until the old one exits.

pub mod ask;
pub mod child;
pub mod command;
mod wire;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ringside_runtime::worker::Bound;

/// The environment variable that gives the new process its end of the
/// handover socket.
pub const ENV: &str = "RINGSIDE_UPGRADE_FD";

/// How long the new process has to become ready: it reads certificates,
/// resolves upstream names and opens its roots, as a start does.
const READY_WAIT: Duration = Duration::from_secs(30);

/// What the running process keeps, from its start, to hand over.
pub struct Handover {
    exe: Option<PathBuf>,
    args: Vec<OsString>,
    listeners: Vec<(SocketAddr, Vec<OwnedFd>)>,
    admin: Option<(SocketAddr, OwnedFd)>,
    /// The unix-socket listeners, by path.
    unix: Vec<(PathBuf, OwnedFd)>,
}

impl Handover {
    /// Copies of `bound`'s sockets and of the admin listener; the
    /// executable and the arguments this process was started with.
    pub fn new(bound: &Bound, admin: Option<&std::net::TcpListener>) -> Handover {
        let listeners = match bound.handover() {
            Ok(per) => bound.local_addrs().iter().copied().zip(per).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot keep copies of the listeners: upgrades will be refused");
                Vec::new()
            }
        };
        let admin = admin.and_then(|l| Some((l.local_addr().ok()?, l.try_clone().ok()?.into())));
        Handover {
            exe: std::env::current_exe().ok(),
            args: std::env::args_os().skip(1).collect(),
            listeners,
            admin,
            unix: Vec::new(),
        }
    }

    /// Copies of the unix-socket listeners too.
    pub fn with_unix(mut self, unix: &crate::unix_listen::UnixSockets) -> Handover {
        match unix.copies() {
            Ok(c) => self.unix = c,
            Err(e) => {
                tracing::warn!(error = %e, "cannot keep copies of the unix sockets: upgrades will be refused");
                self.listeners.clear();
            }
        }
        self
    }

    /// Runs an upgrade asked for by SIGUSR2 (or `ringside upgrade`, which
    /// sends it): whether the new process is ready, and the old one is to
    /// drain.
    pub fn on_signal(&self) -> bool {
        let exe = ask::begins();
        tracing::info!("SIGUSR2: upgrading the binary");
        let result = self.start(exe.as_deref());
        ask::ended(&result);
        match result {
            Ok(pid) => {
                crate::privileges::keeper::handed_over();
                crate::notify::main_pid(pid);
                tracing::info!(
                    pid,
                    "the new process is ready; this one stops accepting and drains"
                );
                true
            }
            Err(why) => {
                tracing::error!("upgrade failed, this process keeps serving: {why}");
                false
            }
        }
    }

    /// Starts the new process and waits until it is ready: its pid, or why
    /// not (it was then stopped, if it still ran).
    pub fn start(&self, exe: Option<&Path>) -> Result<u32, String> {
        if self.listeners.is_empty() {
            return Err("this process kept no copies of its listeners".into());
        }
        if std::process::id() == 1 {
            // A container's init: its exit ends the container, and takes
            // the new process with it.
            return Err("this process is PID 1 (a container's init), whose exit would end the container with the new process in it; replace the container (a rolling update) instead".into());
        }
        let exe = exe
            .map(Path::to_path_buf)
            .or_else(|| self.exe.clone())
            .ok_or(
                "this process does not know its executable; name one (ringside upgrade --exe PATH)",
            )?;
        let (ours, theirs) = crate::seqpacket::pair().map_err(|e| format!("socketpair: {e}"))?;
        let fd = theirs.as_raw_fd();
        let mut cmd = Command::new(&exe);
        cmd.args(&self.args)
            .env(ENV, fd.to_string())
            .stdin(Stdio::null());
        // SAFETY: fcntl is async-signal-safe; it runs in the child between
        // fork and exec, so only the child inherits the descriptor.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        drop(theirs);
        let pid = child.id();
        match self.hand(&ours, &mut child) {
            Ok(()) => Ok(pid),
            Err(why) => {
                if let Ok(None) = child.try_wait() {
                    let _ = child.kill();
                }
                let _ = child.wait();
                Err(format!("{} (pid {pid}): {why}", exe.display()))
            }
        }
    }

    /// Sends the sockets and waits for the new process's answer.
    fn hand(&self, sock: &OwnedFd, child: &mut Child) -> Result<(), String> {
        let mut sent = Ok(());
        for (i, (addr, fds)) in self.listeners.iter().enumerate() {
            let raw: Vec<_> = fds.iter().map(AsRawFd::as_raw_fd).collect();
            for chunk in raw.chunks(wire::FDS_PER_MESSAGE) {
                sent = sent.and_then(|()| wire::send(sock, &format!("listen {i} {addr}"), chunk));
            }
        }
        for (path, fd) in &self.unix {
            // The path is the rest of the line; a line is one message.
            let text = format!("unix {}", path.display());
            sent = sent.and_then(|()| wire::send(sock, &text, &[fd.as_raw_fd()]));
        }
        // The root helper of `[server] user`: the new process, which runs
        // as that user already, reopens logs and writes the pid file
        // through it.
        match crate::privileges::keeper::handoff() {
            Some(Ok(k)) => {
                let text = format!("keeper {} {} {}", k.pid, k.uid, k.gid);
                sent = sent.and_then(|()| wire::send(sock, &text, &[k.sock.as_raw_fd()]));
                for p in &k.logs {
                    let text = format!("keeper-log {}", p.display());
                    sent = sent.and_then(|()| wire::send(sock, &text, &[]));
                }
                for p in &k.reads {
                    let text = format!("keeper-read {}", p.display());
                    sent = sent.and_then(|()| wire::send(sock, &text, &[]));
                }
            }
            Some(Err(e)) => sent = sent.and(Err(e)),
            None => {}
        }
        if let Some((addr, fd)) = &self.admin {
            sent =
                sent.and_then(|()| wire::send(sock, &format!("admin {addr}"), &[fd.as_raw_fd()]));
        }
        // What FastCGI servers were learned to serve: the new process
        // starts from it rather than probing the pool again.
        for (server, limit) in crate::fastcgi::learn::learned_limits() {
            if !server.contains(' ') {
                sent =
                    sent.and_then(|()| wire::send(sock, &format!("fastcgi {server} {limit}"), &[]));
            }
        }
        // And what this process holds of them, so that the two count each
        // other's connections while they overlap.
        if let Some(fd) = crate::fastcgi::overlap::to_hand() {
            sent = sent.and_then(|()| wire::send(sock, "fastcgi-counts", &[fd]));
        }
        sent = sent.and_then(|()| wire::send(sock, "end", &[]));
        // A process that ended already leaves its reason queued, or EOF.
        if let Err(e) = &sent {
            tracing::debug!(error = %e, "handing over the sockets");
        }
        match wire::recv(sock, Some(READY_WAIT)) {
            Ok(Some((text, _))) if text == "ready" => Ok(()),
            Ok(Some((text, _))) => match text.strip_prefix("failed: ") {
                Some(why) => Err(why.to_owned()),
                None => Err(format!("it answered {text:?}")),
            },
            // A process that exited leaves a reset (SOCK_SEQPACKET) or EOF.
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => self.exited(child),
            Ok(None) => self.exited(child),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err(format!(
                "not ready within {} s; stopped it",
                READY_WAIT.as_secs()
            )),
            Err(e) => Err(format!("handover socket: {e}")),
        }
    }

    fn exited(&self, child: &mut Child) -> Result<(), String> {
        let status = child.wait().map_err(|e| e.to_string())?;
        Err(format!(
            "it exited ({status}) before it was ready; see its log"
        ))
    }
}
