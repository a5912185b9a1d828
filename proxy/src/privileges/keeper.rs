//! The keeper: a small process that stays root when `[server] user` drops
//! the server's privileges, for what needs root after the start: reopening
//! the access log in a root-owned directory (SIGUSR1, as logrotate sends),
//! reading certificates and keys again at a reload (certbot's keys are
//! root's, mode 0600), and removing the pid file at exit.
//!
//! nginx keeps its master process root for this. Ringside's workers are
//! threads of one process, and keeping that process privileged would put
//! root into the request path; so the process that serves drops root
//! entirely, and a forked child that never sees a request keeps it. It
//! answers two kinds of request on a socket pair, "open log N" (append)
//! and "open file N" (read only), for the paths named at start only (a
//! compromised server cannot ask it to open anything else), and sends back
//! the descriptor. A path is kept only when the user cannot replace an
//! entry on the way to it (`safe_path.rs`), the check is made again at each
//! open, and a log must be a regular file reached without a final symlink;
//! so the user cannot point root at another file. When the server exits, or
//! dies, its end of the pair closes; the keeper then removes the pid file
//! if it still names the server, and exits.
//!
//! A binary upgrade hands the keeper over: the new process gets a copy of
//! the socket and the lists (`handoff`, `adopt`), tells the keeper its pid
//! (which the keeper writes to the pid file, as root), and the old one
//! stops asking. The keeper ends when the last of them closes the socket.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::safe_path::safe_for;

struct Keeper {
    sock: Mutex<OwnedFd>,
    logs: Vec<PathBuf>,
    reads: Vec<PathBuf>,
    pid: libc::pid_t,
    /// The server's user and group, for the logs root does not keep.
    uid: u32,
    gid: u32,
    /// Set at the first reply that did not come as the protocol says: the
    /// next one might answer an earlier request, so none is trusted.
    broken: AtomicBool,
}

/// What the keeper keeps, and for whom.
pub struct Kept {
    /// Opened for appending (created when missing).
    pub logs: Vec<PathBuf>,
    /// Opened read-only: certificates, keys, CA bundles.
    pub reads: Vec<PathBuf>,
    pub pid_file: Option<PathBuf>,
    /// The user and group the server runs as.
    pub uid: u32,
    pub gid: u32,
}

static KEEPER: OnceLock<Keeper> = OnceLock::new();

/// Set once a new process took the keeper over: this one asks it nothing
/// more, so that no answer meant for one goes to the other.
static HANDED: AtomicBool = AtomicBool::new(false);

const OPEN: u8 = b'O';
const READ: u8 = b'R';
const EXIT: u8 = b'X';
/// A new process's pid, which the keeper writes to the pid file and
/// removes it for at the end.
const PARENT: u8 = b'P';

/// This process's keeper, unless it handed it over.
fn keeper() -> Option<&'static Keeper> {
    KEEPER.get().filter(|_| !HANDED.load(Ordering::Relaxed))
}

/// What a new process needs to use this keeper (see [`adopt`]).
pub struct Handoff {
    pub sock: OwnedFd,
    pub pid: libc::pid_t,
    pub uid: u32,
    pub gid: u32,
    pub logs: Vec<PathBuf>,
    pub reads: Vec<PathBuf>,
}

/// A copy of this process's keeper for a new process, if it has one.
pub fn handoff() -> Option<io::Result<Handoff>> {
    let k = keeper()?;
    let sock = k.sock.lock().unwrap_or_else(|e| e.into_inner());
    Some(sock.try_clone().map(|sock| Handoff {
        sock,
        pid: k.pid,
        uid: k.uid,
        gid: k.gid,
        logs: k.logs.clone(),
        reads: k.reads.clone(),
    }))
}

/// The new process is ready with the keeper: this one asks it nothing
/// more, and its exit leaves the keeper and the pid file to the new one.
pub fn handed_over() {
    if KEEPER.get().is_some() {
        HANDED.store(true, Ordering::Relaxed);
    }
}

/// Takes over the keeper an old process handed over.
pub fn adopt(h: Handoff) {
    let _ = KEEPER.set(Keeper {
        sock: Mutex::new(h.sock),
        logs: h.logs,
        reads: h.reads,
        pid: h.pid,
        uid: h.uid,
        gid: h.gid,
        broken: AtomicBool::new(false),
    });
}

/// Has the keeper write this process's pid to the pid file (as root: its
/// directory may be root's) and remove it for this process at the end.
/// `None` without an adopted keeper.
pub fn write_pid() -> Option<io::Result<()>> {
    let k = keeper()?;
    let sock = k.sock.lock().unwrap_or_else(|e| e.into_inner());
    let mut msg = [PARENT, 0, 0, 0, 0];
    msg[1..].copy_from_slice(&(std::process::id() as libc::pid_t).to_be_bytes());
    let answer = send(sock.as_raw_fd(), &msg, None).and_then(|()| recv(sock.as_raw_fd()));
    Some(match answer {
        Ok((0, _)) => Ok(()),
        Ok((e, _)) => Err(io::Error::from_raw_os_error(e)),
        Err(e) => {
            k.broken.store(true, Ordering::Relaxed);
            Err(e)
        }
    })
}

/// Forks the keeper. Must run before the process starts any thread: the
/// child carries on single-threaded from here.
pub fn spawn(kept: Kept) -> io::Result<()> {
    let Kept {
        logs,
        reads,
        pid_file,
        uid,
        gid,
    } = kept;
    let safe = |list: Vec<PathBuf>| -> Vec<PathBuf> {
        list.into_iter()
            .filter(|p| {
                let ok = safe_for(p, uid, gid);
                if !ok {
                    tracing::warn!(file = %p.display(), uid, "not opened as root after the start: the server's user can write a directory on its path");
                }
                ok
            })
            .collect()
    };
    let (logs, reads) = (safe(logs), safe(reads));
    if logs.len() > usize::from(u16::MAX) || reads.len() > usize::from(u16::MAX) {
        return Err(io::Error::other("too many files to keep"));
    }
    let c_paths = |list: &[PathBuf]| -> io::Result<Vec<CString>> {
        list.iter()
            .map(|p| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other))
            .collect()
    };
    let (c_logs, c_reads) = (c_paths(&logs)?, c_paths(&reads)?);
    let (ours, theirs) = crate::seqpacket::pair()?;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the process is single-threaded here (see above), so the child
    // may go on running ordinary code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(ours);
            serve(
                theirs,
                &c_logs,
                &c_reads,
                pid_file.as_deref(),
                parent,
                (uid, gid),
            )
        }
        pid => {
            drop(theirs);
            // A keeper that stops answering must not hang a reload or the
            // exit.
            let timeout = libc::timeval {
                tv_sec: 10,
                tv_usec: 0,
            };
            // SAFETY: setsockopt with a local timeval of the right size.
            unsafe {
                libc::setsockopt(
                    ours.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    (&timeout as *const libc::timeval).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                );
            }
            let _ = KEEPER.set(Keeper {
                sock: Mutex::new(ours),
                logs,
                reads,
                pid,
                uid,
                gid,
                broken: AtomicBool::new(false),
            });
            tracing::info!(pid, "kept a root helper for log reopening and the pid file");
            Ok(())
        }
    }
}

/// Opens `path` for appending: through the keeper when it is one of the
/// logs named at start, else here. Before privileges are dropped, a log
/// the keeper does not keep is opened as the server's user, so that the
/// file is that user's and the server can open it again itself (SIGUSR1,
/// a reload): made by root, it could not.
pub fn open_log(path: &Path) -> io::Result<std::fs::File> {
    if let Some(file) = ask(OPEN, |k| &k.logs, path) {
        return file;
    }
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    };
    // SAFETY: geteuid has no preconditions.
    let opened = match keeper() {
        Some(k) if unsafe { libc::geteuid() } == 0 => as_user(k.uid, k.gid, open),
        _ => open(),
    };
    opened.map_err(|e| not_kept(path, e))
}

/// Runs `f` with this thread's file-system ids set to the user's: its
/// opens are checked against, and create files for, that user. The kernel
/// drops root's file capabilities with the fsuid, so root's override of
/// permissions does not apply either.
pub(crate) fn as_user<T>(uid: u32, gid: u32, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    // SAFETY: setfsgid/setfsuid change this thread's file-system ids only,
    // and the previous ones they return are put back.
    let (old_gid, old_uid) = unsafe { (libc::setfsgid(gid), libc::setfsuid(uid)) };
    let r = f();
    // SAFETY: as above.
    unsafe {
        libc::setfsuid(old_uid as u32);
        libc::setfsgid(old_gid as u32);
    }
    r
}

/// An error opening a file the keeper does not keep, with why root did not
/// open it when that may be the reason.
fn not_kept(path: &Path, e: io::Error) -> io::Error {
    if keeper().is_none() || e.kind() != io::ErrorKind::PermissionDenied {
        return e;
    }
    io::Error::new(
        e.kind(),
        format!(
            "{e}; the root helper opens only the files named at start in directories the server's user cannot write, so {} is opened as that user",
            path.display()
        ),
    )
}

/// Reads `path` whole: through the keeper when it is one of the
/// certificate, key or CA files named at start, else here.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    match ask(READ, |k| &k.reads, path) {
        Some(file) => {
            let mut out = Vec::new();
            io::Read::read_to_end(&mut file?, &mut out)?;
            Ok(out)
        }
        None => std::fs::read(path).map_err(|e| not_kept(path, e)),
    }
}

/// The keeper's answer for `path` in the list `list` picks, or `None` when
/// there is no keeper or it does not keep that path.
fn ask(
    kind: u8,
    list: impl Fn(&Keeper) -> &Vec<PathBuf>,
    path: &Path,
) -> Option<io::Result<std::fs::File>> {
    let k = keeper()?;
    let i = list(k).iter().position(|p| p == path)? as u16;
    let sock = k.sock.lock().unwrap_or_else(|e| e.into_inner());
    if k.broken.load(Ordering::Relaxed) {
        return Some(Err(io::Error::other("the root helper stopped answering")));
    }
    let [hi, lo] = i.to_be_bytes();
    let answer =
        send(sock.as_raw_fd(), &[kind, hi, lo], None).and_then(|()| recv(sock.as_raw_fd()));
    Some(match answer {
        Ok((0, Some(fd))) => Ok(std::fs::File::from(fd)),
        Ok((0, None)) => Err(io::Error::other(
            "the root helper's descriptor did not arrive (out of descriptors?)",
        )),
        Ok((e, _)) => Err(io::Error::from_raw_os_error(e)),
        Err(e) => {
            k.broken.store(true, Ordering::Relaxed);
            Err(e)
        }
    })
}

/// At exit: has the keeper remove the pid file, and waits for it to end.
/// Returns whether there was a keeper.
pub fn finish() -> bool {
    let Some(k) = keeper() else {
        return false;
    };
    let sock = k.sock.lock().unwrap_or_else(|e| e.into_inner());
    if send(sock.as_raw_fd(), &[EXIT], None).is_ok() {
        let _ = recv(sock.as_raw_fd());
    }
    let mut status = 0;
    // SAFETY: waits for our own child; an adopted keeper is not ours (it
    // answered EXIT, so the pid file is gone already).
    unsafe { libc::waitpid(k.pid, &mut status, 0) };
    true
}

/// The keeper's life. Ends the process: nothing of the server's state may
/// run here (no destructors, no atexit).
fn serve(
    sock: OwnedFd,
    logs: &[CString],
    reads: &[CString],
    pid_file: Option<&Path>,
    mut parent: libc::pid_t,
    (uid, gid): (u32, u32),
) -> ! {
    let fd = sock.as_raw_fd();
    // SAFETY: prctl with a static NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"ringside-keep".as_ptr()) };
    let mut exit_asked = false;
    loop {
        let mut buf = [0u8; 16];
        // SAFETY: recv into a local buffer.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        match buf[0] {
            kind @ (OPEN | READ) if n >= 3 => {
                let (list, flags) = if kind == OPEN {
                    let log = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT;
                    (logs, log | libc::O_NOFOLLOW)
                } else {
                    (reads, libc::O_RDONLY)
                };
                let index = usize::from(u16::from_be_bytes([buf[1], buf[2]]));
                let opened = list.get(index).map(|p| open_regular(p, flags, uid, gid));
                let reply = match opened {
                    Some(-1) => send(fd, &errno_bytes(last_errno()), None),
                    Some(log) => {
                        let r = send(fd, &errno_bytes(0), Some(log));
                        // SAFETY: the descriptor opened above, sent or not.
                        unsafe { libc::close(log) };
                        r
                    }
                    None => send(fd, &errno_bytes(libc::EINVAL), None),
                };
                if reply.is_err() {
                    break;
                }
            }
            PARENT if n >= 5 => {
                parent = libc::pid_t::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
                let written = match pid_file {
                    Some(p) => std::fs::write(p, format!("{parent}\n"))
                        .map_or_else(|e| e.raw_os_error().unwrap_or(libc::EIO), |()| 0),
                    None => 0,
                };
                if send(fd, &errno_bytes(written), None).is_err() {
                    break;
                }
            }
            EXIT => {
                exit_asked = true;
                break;
            }
            _ => {}
        }
    }
    if let Some(p) = pid_file {
        let ours = std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<libc::pid_t>().ok())
            == Some(parent);
        if ours {
            let _ = std::fs::remove_file(p);
        }
    }
    if exit_asked {
        let _ = send(fd, &[EXIT], None);
    }
    // SAFETY: ends the child without running the parent's exit handlers.
    unsafe { libc::_exit(0) }
}

/// Opens `path` as root only while the user still cannot replace an entry
/// on the way, and only a regular file (a FIFO would block the keeper, a
/// device is never a log or a key). Non-blocking, so a FIFO planted
/// there cannot hang the open. -1 with errno set on refusal.
fn open_regular(path: &CString, flags: i32, uid: u32, gid: u32) -> RawFd {
    let as_path = Path::new(std::ffi::OsStr::from_bytes(path.as_bytes()));
    if !safe_for(as_path, uid, gid) {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EPERM };
        return -1;
    }
    // SAFETY: open with a NUL-terminated path; fstat into a local.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            flags | libc::O_CLOEXEC | libc::O_NONBLOCK,
            0o640,
        );
        if fd < 0 {
            return fd;
        }
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            libc::close(fd);
            *libc::__errno_location() = libc::EINVAL;
            return -1;
        }
        fd
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn errno_bytes(e: i32) -> [u8; 4] {
    e.to_ne_bytes()
}

/// One message, with a descriptor attached when given.
fn send(sock: RawFd, data: &[u8], fd: Option<RawFd>) -> io::Result<()> {
    // SAFETY: a msghdr over local buffers; the control buffer is sized by
    // CMSG_SPACE for one descriptor and aligned for cmsghdr.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some(fd) = fd {
            let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        }
        loop {
            if libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// One reply: the errno it carries and the descriptor, if one came.
fn recv(sock: RawFd) -> io::Result<(i32, Option<OwnedFd>)> {
    // SAFETY: as in `send`; a descriptor that arrives is owned from here.
    unsafe {
        let mut data = [0u8; 4];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        let n = loop {
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        if n < 4 {
            return Err(io::Error::other("a short reply from the root helper"));
        }
        let mut fd = None;
        let c = libc::CMSG_FIRSTHDR(&msg);
        if !c.is_null() && (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS
        {
            let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>());
            fd = Some(OwnedFd::from_raw_fd(raw));
        }
        Ok((i32::from_ne_bytes(data), fd))
    }
}
