//! `ringside upgrade` over the server's reload socket (see
//! [`crate::control`], which checks who asks): the request `upgrade PATH`
//! makes the server signal itself SIGUSR2, and is answered with the
//! verdict of the first upgrade that began after it arrived: `ok PID` (the
//! new process's) or `refused: REASON`.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// The new process reads its config and opens its roots first.
const VERDICT_WAIT: Duration = Duration::from_secs(60);

struct State {
    begun: u64,
    ended: u64,
    /// The executable the last request named.
    exe: Option<PathBuf>,
    last: Result<u32, String>,
}

static STATE: Mutex<State> = Mutex::new(State {
    begun: 0,
    ended: 0,
    exe: None,
    last: Ok(0),
});
static ENDED: Condvar = Condvar::new();
/// Verdicts being written: a process that drains in a few milliseconds
/// could otherwise exit before the asker hears that the upgrade it asked
/// for happened.
static ANSWERING: AtomicU32 = AtomicU32::new(0);

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The main thread, as it takes SIGUSR2: the executable asked for.
pub(super) fn begins() -> Option<PathBuf> {
    let mut s = state();
    s.begun += 1;
    s.exe.take()
}

pub(super) fn ended(result: &Result<u32, String>) {
    let mut s = state();
    s.ended += 1;
    s.last = result.clone();
    ENDED.notify_all();
}

/// Answers a request whose first line was `upgrade` + `rest`.
pub fn answer(mut conn: UnixStream, rest: &str) -> io::Result<()> {
    ANSWERING.fetch_add(1, Ordering::AcqRel);
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            ANSWERING.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let _done = Done;
    let path = rest.trim_end_matches('\n').trim_start_matches(' ');
    let asked_at = {
        let mut s = state();
        s.exe = (!path.is_empty()).then(|| PathBuf::from(path));
        s.begun
    };
    // SAFETY: signals this process; the main thread takes it in sigwait.
    unsafe { libc::kill(libc::getpid(), libc::SIGUSR2) };
    let (s, _) = ENDED
        .wait_timeout_while(state(), VERDICT_WAIT, |s| s.ended <= asked_at)
        .unwrap_or_else(|e| e.into_inner());
    let reply = match &s.last {
        _ if s.ended <= asked_at => {
            "refused: no verdict in time; see the server's log\n".to_owned()
        }
        Ok(pid) => format!("ok {pid}\n"),
        Err(e) => format!("refused: {}\n", e.replace('\n', " ")),
    };
    drop(s);
    conn.write_all(reply.as_bytes())
}

/// Before the process exits: waits (a second at most) for the verdicts
/// still being written.
pub fn finish() {
    let end = std::time::Instant::now() + Duration::from_secs(1);
    while ANSWERING.load(Ordering::Acquire) > 0 && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Asks the server `pid` to upgrade (to `exe`, else its own executable):
/// the new process's pid, or why not.
pub fn request(pid: u32, exe: Option<&Path>) -> Result<u32, String> {
    let conn = crate::control::address(pid)
        .and_then(|a| UnixStream::connect_addr(&a))
        .map_err(|e| {
            format!(
                "pid {pid} has no reload socket ({e}), so it cannot be asked; SIGUSR2 upgrades \
                 a ringside that has this command (an older one would stop on it)"
            )
        })?;
    let (_, holder) = crate::control::peer(&conn).map_err(|e| format!("reload socket: {e}"))?;
    if holder != pid as i32 {
        return Err(format!(
            "the reload socket of pid {pid} is held by pid {holder}, not by the server; not asking it"
        ));
    }
    let io = |e: io::Error| format!("reload socket of pid {pid}: {e}");
    let mut conn = conn;
    conn.set_read_timeout(Some(VERDICT_WAIT + Duration::from_secs(5)))
        .map_err(io)?;
    let line = match exe {
        Some(p) => format!("upgrade {}\n", p.display()),
        None => "upgrade\n".to_owned(),
    };
    conn.write_all(line.as_bytes()).map_err(io)?;
    let mut reply = String::new();
    conn.read_to_string(&mut reply).map_err(io)?;
    let reply = reply.trim_end();
    if reply == "refused: not a reload request" {
        return Err(format!(
            "pid {pid} predates ringside upgrade (it answers reload only); restart it to run the new binary"
        ));
    }
    if let Some(why) = reply.strip_prefix("refused: ") {
        return Err(why.to_owned());
    }
    reply
        .strip_prefix("ok ")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("pid {pid} answered {reply:?}"))
}
