//! Unix-socket listeners (`listen = ["unix:/run/ringside.sock"]`, see
//! `config::unix_listen`): bound by the main thread at start, before
//! privileges are dropped, and handed to every worker.
//!
//! A unix socket has no `SO_REUSEPORT` spreading, so there is one socket,
//! and each worker accepts from its own descriptor of it
//! (`ringside_runtime::worker::Bound::add_unix`): whichever worker is free
//! takes the next connection, as nginx's workers share their listeners.
//!
//! A path where something answers is refused: another server is there (a
//! second ringside, say), and taking its path would steal its clients. A
//! socket file nothing answers on is left from a server that did not
//! remove it, and is replaced. Anything else at the path is refused. The
//! file gets its `mode`, `owner` and `group` before it listens, so no
//! client connects through looser permissions, and is removed at exit if
//! it is still ours (the directory must let the server write to it then:
//! under `[server] user`, a directory of that user's, such as systemd's
//! RuntimeDirectory).

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use crate::check::locate::{Locator, Setting};
use crate::check::Finding;
use crate::config::error::io_reason;
use crate::config::unix_listen::UnixListen;

/// The bound sockets; their files are removed when this is dropped.
#[derive(Default)]
pub struct UnixSockets {
    bound: Vec<Bound>,
}

struct Bound {
    listener: UnixListener,
    path: PathBuf,
    /// The file's device and inode, to remove only our own.
    id: (u64, u64),
}

/// What is at a listener's path now.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Nothing,
    /// A socket nothing answers on: left behind, replaced at start.
    Stale,
    /// A socket a server answers on.
    Live,
    /// A file of another kind.
    NotSocket,
}

/// Looks at `path` without changing it.
pub fn look(path: &Path) -> io::Result<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        r => r?,
    };
    if !meta.file_type().is_socket() {
        return Ok(Found::NotSocket);
    }
    use socket2::{Domain, SockAddr, Socket, Type};
    let s = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    // Non-blocking: a live server's full backlog must not stall the start.
    s.set_nonblocking(true)?;
    match s.connect(&SockAddr::unix(path)?) {
        Ok(()) => Ok(Found::Live),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Found::Live),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(Found::Stale),
        Err(e) => Err(e),
    }
}

/// Why a listener's path cannot be taken, if it cannot.
pub fn refusal(path: &Path) -> Option<String> {
    let at = path.display();
    match look(path) {
        Ok(Found::Nothing | Found::Stale) => None,
        Ok(Found::Live) => Some(format!(
            "unix:{at} is served by another process already (it accepts connections); stop it first, or listen elsewhere"
        )),
        Ok(Found::NotSocket) => Some(format!(
            "cannot listen on unix:{at}: a file that is not a socket is there; ringside does not remove it"
        )),
        Err(e) => Some(format!("cannot listen on unix:{at}: {}", io_reason(&e))),
    }
}

/// `ringside check`'s findings on the unix listeners: a socket a server
/// answers on is a warning (this config's ringside, running, is one; a
/// second start would be refused), a missing directory or a file of
/// another kind at the path an error.
pub fn check(cfg: &crate::config::Config, loc: &Locator, out: &mut Vec<Finding>) {
    for u in &cfg.unix_listen {
        let (error, message) = match look(&u.path) {
            Ok(Found::Nothing) => match u.path.parent() {
                Some(dir) if !dir.is_dir() => (
                    true,
                    format!(
                        "cannot listen on unix:{}: no directory {}",
                        u.path.display(),
                        dir.display()
                    ),
                ),
                _ => continue,
            },
            Ok(Found::Stale) => continue,
            Ok(Found::Live) => (
                false,
                format!(
                    "unix:{} is served now; a reload keeps it, a second start would be refused",
                    u.path.display()
                ),
            ),
            _ => match refusal(&u.path) {
                Some(why) => (true, why),
                None => continue,
            },
        };
        out.push(Finding {
            error,
            what: loc.error(Setting::UnixListen(&u.path), message),
        });
    }
}

impl UnixSockets {
    /// Binds every listener in `list`.
    pub fn bind(list: &[UnixListen], backlog: i32) -> Result<UnixSockets, String> {
        let mut out = UnixSockets::default();
        for u in list {
            out.bound.push(bind_one(u, backlog)?);
        }
        Ok(out)
    }

    /// Hands every socket to the workers, in the config's order.
    pub fn add_to(&self, workers: &mut ringside_runtime::worker::Bound) -> io::Result<()> {
        for b in &self.bound {
            workers.add_unix(&b.listener)?;
        }
        Ok(())
    }

    /// Takes over the sockets an old process handed over: the same paths
    /// as the config's, or the upgrade is refused (a path dropped would be
    /// left without a server, a new one is a restart's).
    pub fn adopt(
        list: &[UnixListen],
        handed: Vec<(PathBuf, UnixListener)>,
    ) -> Result<UnixSockets, String> {
        let want: Vec<&Path> = list.iter().map(|u| u.path.as_path()).collect();
        let have: Vec<&Path> = handed.iter().map(|(p, _)| p.as_path()).collect();
        if want != have {
            let show = |l: &[&Path]| {
                l.iter()
                    .map(|p| format!("unix:{}", p.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(format!(
                "[server] listen's unix sockets changed: the running server listens on [{}], \
                 the new config on [{}]; an upgrade keeps them (restart to change them)",
                show(&have),
                show(&want)
            ));
        }
        let mut out = UnixSockets::default();
        for (path, listener) in handed {
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| format!("unix:{}: {}", path.display(), io_reason(&e)))?;
            out.bound.push(Bound {
                listener,
                path,
                id: (meta.dev(), meta.ino()),
            });
        }
        Ok(out)
    }

    /// Copies of the sockets, by path, for a new process.
    pub fn copies(&self) -> io::Result<Vec<(PathBuf, std::os::fd::OwnedFd)>> {
        self.bound
            .iter()
            .map(|b| Ok((b.path.clone(), b.listener.try_clone()?.into())))
            .collect()
    }

    /// Leaves the files in place at exit: a new process serves them.
    pub fn leave_files(&mut self) {
        for b in &mut self.bound {
            // No file has this device and inode, so the drop removes none.
            b.id = (u64::MAX, u64::MAX);
        }
    }

    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.bound.iter().map(|b| b.path.as_path())
    }
}

fn bind_one(u: &UnixListen, backlog: i32) -> Result<Bound, String> {
    let at = u.path.display();
    let fail = |e: io::Error| format!("cannot listen on unix:{at}: {}", io_reason(&e));
    if let Some(why) = refusal(&u.path) {
        return Err(why);
    }
    if look(&u.path).map_err(fail)? == Found::Stale {
        tracing::info!(path = %at, "removing a stale socket file nothing answers on");
        std::fs::remove_file(&u.path).map_err(fail)?;
    }
    use socket2::{Domain, SockAddr, Socket, Type};
    let s = Socket::new(Domain::UNIX, Type::STREAM, None).map_err(fail)?;
    s.set_cloexec(true).map_err(fail)?;
    s.bind(&SockAddr::unix(&u.path).map_err(fail)?)
        .map_err(fail)?;
    let listener: UnixListener = std::os::fd::OwnedFd::from(s).into();
    // From here on the file is ours: a failure removes it again.
    let meta = std::fs::metadata(&u.path).map_err(fail)?;
    let bound = Bound {
        listener,
        path: u.path.clone(),
        id: (meta.dev(), meta.ino()),
    };
    if let Some(mode) = u.mode {
        std::fs::set_permissions(&u.path, std::fs::Permissions::from_mode(mode)).map_err(fail)?;
    }
    if u.owner.is_some() || u.group.is_some() {
        let (uid, gid) = owner(u)?;
        std::os::unix::fs::chown(&u.path, uid, gid).map_err(fail)?;
    }
    // SAFETY: listen(2) on our bound socket.
    if unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&bound.listener), backlog) } != 0 {
        return Err(fail(io::Error::last_os_error()));
    }
    Ok(bound)
}

/// The uid and gid `owner` and `group` name (`None`: left as they are).
fn owner(u: &UnixListen) -> Result<(Option<u32>, Option<u32>), String> {
    let at = u.path.display();
    match (&u.owner, &u.group) {
        (Some(user), group) => {
            let (uid, gid) = crate::privileges::ids(user, group.as_deref())
                .map_err(|e| format!("unix:{at} owner: {e}"))?;
            Ok((Some(uid), group.as_ref().map(|_| gid)))
        }
        (None, Some(group)) => crate::privileges::group_id(group)
            .map(|g| (None, Some(g)))
            .map_err(|e| format!("unix:{at} group: {e}")),
        (None, None) => Ok((None, None)),
    }
}

impl Drop for Bound {
    /// Removes the socket file, unless another took its path meanwhile.
    fn drop(&mut self) {
        let ours =
            std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id);
        if ours {
            if let Err(e) = std::fs::remove_file(&self.path) {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove the socket file");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringside-unix-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn listen(path: &Path, mode: Option<u32>) -> UnixListen {
        UnixListen {
            path: path.to_owned(),
            mode,
            owner: None,
            group: None,
        }
    }

    #[test]
    fn binds_with_its_mode_refuses_a_live_path_and_replaces_a_stale_one() {
        let d = temp("bind");
        let p = d.join("a.sock");
        assert_eq!(look(&p).unwrap(), Found::Nothing);
        let s = UnixSockets::bind(&[listen(&p, Some(0o660))], 16).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert!(m.file_type().is_socket());
        assert_eq!(m.permissions().mode() & 0o777, 0o660);
        assert_eq!(look(&p).unwrap(), Found::Live);
        let e = UnixSockets::bind(&[listen(&p, None)], 16).err().unwrap();
        assert!(e.contains("served by another process"), "{e}");
        drop(s);
        assert_eq!(look(&p).unwrap(), Found::Nothing);

        // A socket left behind (bound, never removed, nobody listening).
        let left = std::os::unix::net::UnixListener::bind(&p).unwrap();
        drop(left);
        assert_eq!(look(&p).unwrap(), Found::Stale);
        let s = UnixSockets::bind(&[listen(&p, None)], 16).unwrap();
        assert_eq!(look(&p).unwrap(), Found::Live);
        drop(s);

        std::fs::write(&p, b"not a socket").unwrap();
        let e = UnixSockets::bind(&[listen(&p, None)], 16).err().unwrap();
        assert!(e.contains("not a socket"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"not a socket");
        let _ = std::fs::remove_dir_all(&d);
    }
}
