//! systemd's readiness protocol (sd_notify(3)): a datagram to
//! `$NOTIFY_SOCKET`, when it is set, so a unit can be `Type=notify`.
//! Written here rather than taken from libsystemd: it is one datagram.

use std::os::unix::net::UnixDatagram;

fn send(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let sent = (|| -> std::io::Result<()> {
        let sock = UnixDatagram::unbound()?;
        let bytes = path.as_encoded_bytes();
        if let Some(name) = bytes.strip_prefix(b"@") {
            // An abstract socket: '@' stands for the leading NUL.
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(state.as_bytes(), &addr)?;
        } else {
            sock.send_to(state.as_bytes(), &path)?;
        }
        Ok(())
    })();
    if let Err(e) = sent {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

/// Every worker accepts.
pub fn ready() {
    send(&format!("READY=1\nMAINPID={}", std::process::id()));
}

/// A reload starts; `ready` again ends it.
pub fn reloading() {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let usec = ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000;
    send(&format!("RELOADING=1\nMONOTONIC_USEC={usec}"));
}

/// A binary upgrade's new process `pid` is ready: it is the service's
/// main process from now on. Sent by the old one, the main process, which
/// `NotifyAccess=main` lets say so; the new one's own `READY=1` came
/// before and is taken only with `NotifyAccess=all`.
pub fn main_pid(pid: u32) {
    send(&format!("MAINPID={pid}"));
}

/// The drain starts.
pub fn stopping() {
    send("STOPPING=1");
}
