//! Dropping root after binding (`[server] user` and `group`), and raising
//! the open-files limit.

pub mod keeper;
mod safe_path;

use std::ffi::CString;

/// Switches the whole process to `user` (and `group`, else the user's own
/// group). glibc's setuid and setgid apply to every thread, so workers
/// started before this follow too.
pub fn drop_to(user: &str, group: Option<&str>) -> Result<(), String> {
    let (uid, gid) = ids(user, group)?;
    // SAFETY: plain syscalls on values.
    unsafe {
        if libc::geteuid() != 0 {
            if libc::geteuid() == uid {
                return Ok(());
            }
            return Err(format!("cannot switch to user {user}: not started as root"));
        }
        if libc::setgroups(1, &gid) != 0 {
            return Err(format!(
                "setgroups({gid}): {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::setgid(gid) != 0 {
            return Err(format!(
                "setgid({gid}): {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::setuid(uid) != 0 {
            return Err(format!(
                "setuid({uid}): {}",
                std::io::Error::last_os_error()
            ));
        }
        // Root must not be recoverable.
        if uid != 0 && libc::setuid(0) == 0 {
            return Err("still able to regain root after setuid".into());
        }
    }
    tracing::info!(user, uid, gid, "dropped privileges");
    Ok(())
}

/// The uid and gid `[server] user` and `group` name (the user's own group
/// when no group is given).
pub fn ids(user: &str, group: Option<&str>) -> Result<(libc::uid_t, libc::gid_t), String> {
    let (uid, user_gid) = lookup_user(user)?;
    let gid = match group {
        Some(g) => lookup_group(g)?,
        None => user_gid,
    };
    Ok((uid, gid))
}

/// The gid of the group `name`.
pub fn group_id(name: &str) -> Result<libc::gid_t, String> {
    lookup_group(name)
}

fn lookup_user(name: &str) -> Result<(libc::uid_t, libc::gid_t), String> {
    let c = CString::new(name).map_err(|_| format!("bad user name {name:?}"))?;
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwnam_r with our own buffers.
    let r =
        unsafe { libc::getpwnam_r(c.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return Err(format!("no such user: {name}"));
    }
    Ok((pwd.pw_uid, pwd.pw_gid))
}

fn lookup_group(name: &str) -> Result<libc::gid_t, String> {
    let c = CString::new(name).map_err(|_| format!("bad group name {name:?}"))?;
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: getgrnam_r with our own buffers.
    let r =
        unsafe { libc::getgrnam_r(c.as_ptr(), &mut grp, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return Err(format!("no such group: {name}"));
    }
    Ok(grp.gr_gid)
}

/// The user and group `check`, run as root, must open `path` as: those of
/// `[server] user` when the root helper would not keep it (its directory is
/// writable by that user), so that `check` sees what the server will.
pub fn opener_of(
    path: &std::path::Path,
    user: Option<&str>,
    group: Option<&str>,
) -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let (uid, gid) = ids(user?, group).ok()?;
    (!safe_path::safe_for(path, uid, gid)).then_some((uid, gid))
}

/// Raises the soft open-files limit to the hard one: each connection is a
/// descriptor (two when proxied), and the usual soft default of 1024 is far
/// below what one core serves.
pub fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return;
        }
        let before = lim.rlim_cur;
        if before >= lim.rlim_max {
            tracing::info!(limit = before, "open-files limit");
            return;
        }
        lim.rlim_cur = lim.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
            tracing::warn!(limit = before, "cannot raise the open-files limit");
        } else {
            tracing::info!(
                from = before,
                to = lim.rlim_max,
                "raised the open-files limit"
            );
        }
    }
}
