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
//! the descriptor. When the server exits, or
//! dies, its end of the pair closes; the keeper then removes the pid file
//! if it still names the server, and exits.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

struct Keeper {
    sock: Mutex<OwnedFd>,
    logs: Vec<PathBuf>,
    reads: Vec<PathBuf>,
    pid: libc::pid_t,
}

static KEEPER: OnceLock<Keeper> = OnceLock::new();

const OPEN: u8 = b'O';
const READ: u8 = b'R';
const EXIT: u8 = b'X';

/// Forks the keeper. Must run before the process starts any thread: the
/// child carries on single-threaded from here.
pub fn spawn(logs: Vec<PathBuf>, reads: Vec<PathBuf>, pid_file: Option<PathBuf>) -> io::Result<()> {
    if logs.len() > 255 || reads.len() > 255 {
        return Err(io::Error::other("more than 255 files to keep open"));
    }
    let c_paths = |list: &[PathBuf]| -> io::Result<Vec<CString>> {
        list.iter()
            .map(|p| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other))
            .collect()
    };
    let (c_logs, c_reads) = (c_paths(&logs)?, c_paths(&reads)?);
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair fills the two descriptors on success.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are ours from here.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the process is single-threaded here (see above), so the child
    // may go on running ordinary code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(ours);
            serve(theirs, &c_logs, &c_reads, pid_file.as_deref(), parent)
        }
        pid => {
            drop(theirs);
            let _ = KEEPER.set(Keeper {
                sock: Mutex::new(ours),
                logs,
                reads,
                pid,
            });
            tracing::info!(pid, "kept a root helper for log reopening and the pid file");
            Ok(())
        }
    }
}

/// Opens `path` for appending: through the keeper when it is one of the
/// logs named at start, else here.
pub fn open_log(path: &Path) -> io::Result<std::fs::File> {
    if let Some(file) = ask(OPEN, |k| &k.logs, path) {
        return file;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
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
        None => std::fs::read(path),
    }
}

/// The keeper's answer for `path` in the list `list` picks, or `None` when
/// there is no keeper or it does not keep that path.
fn ask(
    kind: u8,
    list: impl Fn(&Keeper) -> &Vec<PathBuf>,
    path: &Path,
) -> Option<io::Result<std::fs::File>> {
    let k = KEEPER.get()?;
    let i = list(k).iter().position(|p| p == path)?;
    let sock = k.sock.lock().unwrap_or_else(|e| e.into_inner());
    Some((|| {
        send(sock.as_raw_fd(), &[kind, i as u8], None)?;
        match recv(sock.as_raw_fd())? {
            (0, Some(fd)) => Ok(std::fs::File::from(fd)),
            (0, None) => Err(io::Error::other("the keeper sent no descriptor")),
            (e, _) => Err(io::Error::from_raw_os_error(e)),
        }
    })())
}

/// At exit: has the keeper remove the pid file, and waits for it to end.
/// Returns whether there was a keeper.
pub fn finish() -> bool {
    let Some(k) = KEEPER.get() else {
        return false;
    };
    let sock = k.sock.lock().unwrap_or_else(|e| e.into_inner());
    if send(sock.as_raw_fd(), &[EXIT], None).is_ok() {
        let _ = recv(sock.as_raw_fd());
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
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
    parent: libc::pid_t,
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
            kind @ (OPEN | READ) if n >= 2 => {
                let (list, flags) = if kind == OPEN {
                    (logs, libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT)
                } else {
                    (reads, libc::O_RDONLY)
                };
                let opened = list.get(buf[1] as usize).map(|p| {
                    // SAFETY: open with a NUL-terminated path.
                    unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, 0o640) }
                });
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
