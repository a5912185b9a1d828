//! The new process's side of an upgrade: takes the sockets the old one
//! hands over, checks them against its config, and says when it is ready
//! (or why it gives up).

use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::Duration;

use ringside_runtime::worker::Inherited;

use super::wire;
use crate::config::ops::AdminListen;

/// The handover socket, while the old process waits on it.
static CHANNEL: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// How long the old process may take between messages.
const MESSAGE_WAIT: Duration = Duration::from_secs(10);

/// What the old process handed over.
pub struct Handed {
    listeners: Vec<(SocketAddr, Vec<TcpListener>)>,
    admin: Option<(SocketAddr, TcpListener)>,
    unix: Vec<(std::path::PathBuf, std::os::unix::net::UnixListener)>,
}

/// The sockets handed over, when this process was started by an upgrade.
pub fn receive() -> Result<Option<Handed>, String> {
    let Some(v) = std::env::var_os(super::ENV) else {
        return Ok(None);
    };
    let fd: i32 = v
        .to_str()
        .and_then(|s| s.parse().ok())
        .filter(|&fd| fd > 2)
        .ok_or_else(|| format!("{}: not a descriptor: {v:?}", super::ENV))?;
    // SAFETY: the old process passed this descriptor for us alone; it
    // closes on exec again, so a later upgrade's process does not get it.
    let sock = unsafe {
        if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
            return Err(format!(
                "{}={fd}: {}",
                super::ENV,
                std::io::Error::last_os_error()
            ));
        }
        OwnedFd::from_raw_fd(fd)
    };
    let mut handed = Handed {
        listeners: Vec::new(),
        admin: None,
        unix: Vec::new(),
    };
    let mut fastcgi = Vec::new();
    let mut keeper: Option<crate::privileges::keeper::Handoff> = None;
    let broken = |e: std::io::Error| format!("receiving the listeners from the old process: {e}");
    loop {
        let Some((text, fds)) = wire::recv(&sock, Some(MESSAGE_WAIT)).map_err(broken)? else {
            return Err("the old process closed the handover socket".into());
        };
        if let Some(path) = text.strip_prefix("keeper-log ") {
            if let Some(k) = &mut keeper {
                k.logs.push(path.into());
            }
            continue;
        }
        if let Some(path) = text.strip_prefix("keeper-read ") {
            if let Some(k) = &mut keeper {
                k.reads.push(path.into());
            }
            continue;
        }
        if let Some(path) = text.strip_prefix("unix ") {
            if let Some(fd) = fds.into_iter().next() {
                handed.unix.push((path.into(), fd.into()));
            }
            continue;
        }
        let words: Vec<&str> = text.split(' ').collect();
        let addr = |s: &str| {
            s.parse::<SocketAddr>()
                .map_err(|_| format!("bad address in {text:?}"))
        };
        match words.as_slice() {
            ["end"] => break,
            ["keeper", pid, uid, gid] => {
                let (Some(sock), Ok(pid), Ok(uid), Ok(gid)) = (
                    fds.into_iter().next(),
                    pid.parse(),
                    uid.parse(),
                    gid.parse(),
                ) else {
                    return Err(format!("bad keeper message {text:?}"));
                };
                keeper = Some(crate::privileges::keeper::Handoff {
                    sock,
                    pid,
                    uid,
                    gid,
                    logs: Vec::new(),
                    reads: Vec::new(),
                });
            }
            ["fastcgi", server, limit] => {
                if let Ok(l) = limit.parse::<u32>() {
                    fastcgi.push((server.to_string(), l));
                }
            }
            ["fastcgi-counts"] => {
                if let Some(fd) = fds.into_iter().next() {
                    crate::fastcgi::overlap::hand_over_in(fd);
                }
            }
            ["listen", i, a] => {
                let i: usize = i.parse().map_err(|_| format!("bad index in {text:?}"))?;
                let a = addr(a)?;
                if i == handed.listeners.len() {
                    handed.listeners.push((a, Vec::new()));
                }
                match handed.listeners.get_mut(i) {
                    Some((_, socks)) => socks.extend(fds.into_iter().map(TcpListener::from)),
                    None => return Err(format!("listener {i} out of order")),
                }
            }
            ["admin", a] => {
                let a = addr(a)?;
                handed.admin = fds.into_iter().next().map(|fd| (a, TcpListener::from(fd)));
            }
            // From a later version: what this one does not know it does
            // without, so that a downgrade works too.
            _ => tracing::debug!(message = %text, "unknown handover message ignored"),
        }
    }
    crate::fastcgi::learn::hand_over_in(fastcgi);
    if let Some(k) = keeper {
        crate::privileges::keeper::adopt(k);
    }
    *CHANNEL.lock().unwrap_or_else(|e| e.into_inner()) = Some(sock);
    Ok(Some(handed))
}

/// Whether `have` (a bound address) serves what `want` (from the config,
/// port 0 meaning any) asks for.
fn serves(have: SocketAddr, want: SocketAddr) -> bool {
    have.ip() == want.ip() && (want.port() == 0 || want.port() == have.port())
}

impl Handed {
    /// The handed-over admin listener, when the config's admin address is
    /// the one it listens on.
    pub fn take_admin(&mut self, want: &AdminListen) -> Option<TcpListener> {
        let want = want.addr()?;
        match self.admin.take() {
            Some((have, l)) if serves(have, want) => Some(l),
            _ => None,
        }
    }

    /// The unix-socket listeners handed over, by path.
    pub fn take_unix(&mut self) -> Vec<(std::path::PathBuf, std::os::unix::net::UnixListener)> {
        std::mem::take(&mut self.unix)
    }

    /// The listeners for `listen` (the new config's addresses); refused
    /// when they differ from the running server's, whose sockets an
    /// upgrade cannot move.
    pub fn listeners(&mut self, listen: &[SocketAddr]) -> Result<Inherited, String> {
        let have: Vec<SocketAddr> = self.listeners.iter().map(|(a, _)| *a).collect();
        let same =
            have.len() == listen.len() && have.iter().zip(listen).all(|(h, w)| serves(*h, *w));
        if !same {
            let list = |l: &[SocketAddr]| {
                l.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(format!(
                "[server] listen changed: the running server listens on {}, the new config on {}; \
                 an upgrade keeps the listen addresses (restart to change them)",
                list(&have),
                list(listen)
            ));
        }
        Ok(std::mem::take(&mut self.listeners)
            .into_iter()
            .map(|(_, s)| s)
            .collect())
    }
}

fn tell(text: &str) {
    if let Some(sock) = CHANNEL.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let mut text = text.replace('\n', " ");
        text.truncate(4000);
        if let Err(e) = wire::send(&sock, &text, &[]) {
            tracing::warn!(error = %e, "cannot answer the old process");
        }
    }
}

/// This process gives up: the old one keeps serving, and says why.
pub fn failed(why: &str) {
    let mut end = why.len().min(3900);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    tell(&format!("failed: {}", &why[..end]));
}

/// Every worker accepts: the old process may stop.
pub fn ready() {
    tell("ready");
}

/// Whether this process was started by an upgrade and has not answered yet.
pub fn pending() -> bool {
    CHANNEL.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_zero_in_the_config_takes_the_bound_port() {
        let have: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(serves(have, "127.0.0.1:0".parse().unwrap()));
        assert!(serves(have, have));
        assert!(!serves(have, "127.0.0.1:8081".parse().unwrap()));
        assert!(!serves(have, "0.0.0.0:8080".parse().unwrap()));
    }

    #[test]
    fn a_changed_listen_list_is_refused_with_both_lists() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let mut h = Handed {
            listeners: vec![(a, vec![l])],
            admin: None,
            unix: Vec::new(),
        };
        let other: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let e = h.listeners(&[a, other]).unwrap_err();
        assert!(
            e.contains("[server] listen changed") && e.contains(&a.to_string()),
            "{e}"
        );
        assert_eq!(h.listeners(&[a]).unwrap().len(), 1);
    }
}
