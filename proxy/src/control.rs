//! The server's answer to `ringside reload`: whether the reload it asked
//! for took effect, and why not.
//!
//! A signal carries no answer back, so `kill -HUP` (and a `ringside reload`
//! that only signals) exits 0 on a config the server then refuses, and
//! systemd's `ExecReload` reports success. So the server listens on an
//! abstract unix socket named after its pid (`@ringside-reload.PID`, no
//! file to create in a directory the server may not write). A request
//! there makes the server signal itself, and is answered with the verdict
//! of the first reload that began after the request arrived: `ok`, or
//! `refused: REASON`.
//!
//! Only root and the server's own user may ask (as only they may signal
//! it); the client checks that the socket's holder is the pid it looked
//! for, so another user's socket of that name cannot answer for the
//! server.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// What the request says.
const REQUEST: &str = "reload\n";

/// How long a reload may take before the client stops waiting: it reads
/// certificates and resolves upstream names.
const VERDICT_WAIT: Duration = Duration::from_secs(120);

/// Reloads begun and ended, and the last one's result.
struct Verdicts {
    begun: u64,
    ended: u64,
    last: Result<(), String>,
}

static STATE: Mutex<Verdicts> = Mutex::new(Verdicts {
    begun: 0,
    ended: 0,
    last: Ok(()),
});
static ENDED: Condvar = Condvar::new();

fn state() -> std::sync::MutexGuard<'static, Verdicts> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn address(pid: u32) -> io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("ringside-reload.{pid}"))
}

/// The main thread, as it takes a SIGHUP: before reading the config.
pub fn reload_begins() {
    state().begun += 1;
}

/// The main thread, after the reload: its verdict, for whoever waits.
pub fn reload_ended(result: &Result<(), String>) {
    let mut s = state();
    s.ended += 1;
    s.last = result.clone();
    ENDED.notify_all();
}

/// Listens for `ringside reload` on a thread of its own. A failure is a
/// warning: SIGHUP still reloads, only without an answer.
pub fn spawn() {
    let listener = match address(std::process::id()).and_then(|a| UnixListener::bind_addr(&a)) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "no reload socket: `ringside reload` will signal without learning the verdict");
            return;
        }
    };
    let started = std::thread::Builder::new()
        .name("ringside-ctl".into())
        .spawn(move || {
            for conn in listener.incoming() {
                match conn.and_then(answer) {
                    Ok(()) => {}
                    // Out of descriptors, say: retried at once it would spin.
                    Err(e) => {
                        tracing::debug!(error = %e, "reload request dropped");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start the reload socket's thread");
    }
}

/// The uid and pid of the process at the other end of `s`.
pub(crate) fn peer(s: &UnixStream) -> io::Result<(u32, i32)> {
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt into a local ucred of the given size.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((cred.uid, cred.pid))
}

fn answer(mut conn: UnixStream) -> io::Result<()> {
    let (uid, _) = peer(&conn)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if uid != 0 && uid != me {
        return conn.write_all(
            format!("refused: only root or uid {me} may reload this server\n").as_bytes(),
        );
    }
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    // Room for `upgrade PATH`.
    BufReader::new((&conn).take(4200)).read_line(&mut line)?;
    if let Some(rest) = line.strip_prefix("upgrade") {
        return crate::upgrade::ask::answer(conn, rest);
    }
    if line != REQUEST {
        return conn.write_all(b"refused: not a reload request\n");
    }
    if crate::metrics::admin::DRAINING.load(std::sync::atomic::Ordering::Relaxed) {
        return conn.write_all(b"refused: the server is stopping\n");
    }
    let asked_at = state().begun;
    // SAFETY: signals this process; the main thread takes it in sigwait.
    unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
    let s = state();
    // A reload numbered past `asked_at` began after the request, so it
    // read the config as the client left it.
    let (s, _) = ENDED
        .wait_timeout_while(s, VERDICT_WAIT, |s| s.ended <= asked_at)
        .unwrap_or_else(|e| e.into_inner());
    let reply = if s.ended <= asked_at {
        "refused: no verdict in time; see the server's log\n".to_owned()
    } else {
        match &s.last {
            Ok(()) => "ok\n".to_owned(),
            Err(e) => format!("refused: {}\n", e.replace('\n', " ")),
        }
    };
    drop(s);
    conn.write_all(reply.as_bytes())
}

/// What the server said.
pub enum Verdict {
    Reloaded,
    Refused(String),
}

/// Asks the server `pid` to reload and waits for its verdict. `Ok(None)`:
/// it has no reload socket (an older server, or another network
/// namespace), and the caller signals it instead.
pub fn request(pid: u32) -> Result<Option<Verdict>, String> {
    let conn = match address(pid).and_then(|a| UnixStream::connect_addr(&a)) {
        Ok(c) => c,
        Err(_) => return Ok(None),
    };
    let (_, holder) = peer(&conn).map_err(|e| format!("reload socket: {e}"))?;
    if holder != pid as i32 {
        return Err(format!(
            "the reload socket of pid {pid} is held by pid {holder}, not by the server; not asking it"
        ));
    }
    let mut conn = conn;
    let io = |e: io::Error| format!("reload socket of pid {pid}: {e}");
    conn.set_read_timeout(Some(VERDICT_WAIT + Duration::from_secs(5)))
        .map_err(io)?;
    conn.write_all(REQUEST.as_bytes()).map_err(io)?;
    let mut reply = String::new();
    conn.read_to_string(&mut reply).map_err(io)?;
    let reply = reply.trim_end();
    match reply.strip_prefix("refused: ") {
        Some(why) => Ok(Some(Verdict::Refused(why.to_owned()))),
        None if reply == "ok" => Ok(Some(Verdict::Reloaded)),
        None => Err(format!("pid {pid} answered {reply:?}")),
    }
}
