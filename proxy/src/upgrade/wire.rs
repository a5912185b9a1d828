//! The handover channel between the old and the new process: a
//! `SOCK_SEQPACKET` socket pair, so that each message (a line of text and
//! the descriptors that go with it, passed with `SCM_RIGHTS`) arrives
//! whole and alone.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The most descriptors one message carries (the kernel's SCM_MAX_FD is
/// 253).
pub const FDS_PER_MESSAGE: usize = 200;
/// The longest message text.
const TEXT_MAX: usize = 4096;

/// Sends `text` with `fds` attached.
pub fn send(sock: &OwnedFd, text: &str, fds: &[RawFd]) -> io::Result<()> {
    assert!(fds.len() <= FDS_PER_MESSAGE && text.len() <= TEXT_MAX);
    let mut iov = libc::iovec {
        iov_base: text.as_ptr() as *mut libc::c_void,
        iov_len: text.len(),
    };
    let bytes = std::mem::size_of_val(fds) as u32;
    // SAFETY: CMSG_SPACE is arithmetic.
    let space = unsafe { libc::CMSG_SPACE(bytes) } as usize;
    let mut control = vec![0u8; space.max(1)];
    // SAFETY: a zeroed msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: control holds CMSG_SPACE(bytes), so the first header
        // and its data fit.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c).cast::<RawFd>(),
                fds.len(),
            );
        }
    }
    // SAFETY: msg points at live buffers.
    let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message; `None` when the other end closed. Waits at most
/// `timeout` (`None`: for ever).
pub fn recv(
    sock: &OwnedFd,
    timeout: Option<Duration>,
) -> io::Result<Option<(String, Vec<OwnedFd>)>> {
    if let Some(t) = timeout {
        let mut p = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = t.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: poll on one local pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        if r == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
    }
    let mut text = vec![0u8; TEXT_MAX];
    let mut iov = libc::iovec {
        iov_base: text.as_mut_ptr().cast(),
        iov_len: text.len(),
    };
    // SAFETY: CMSG_SPACE is arithmetic.
    let space = unsafe { libc::CMSG_SPACE((FDS_PER_MESSAGE * std::mem::size_of::<RawFd>()) as u32) }
        as usize;
    let mut control = vec![0u8; space];
    // SAFETY: as in send.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg points at live buffers; received fds close on exec.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control headers the kernel wrote.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::other("descriptors were cut off"));
    }
    if n == 0 && fds.is_empty() {
        return Ok(None);
    }
    text.truncate(n as usize);
    let text = String::from_utf8(text).map_err(|_| io::Error::other("not UTF-8"))?;
    Ok(Some((text, fds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn text_and_descriptors_arrive_together_and_whole() {
        let (a, b) = crate::seqpacket::pair().unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        send(&a, "listen 0 127.0.0.1:1", &[l.as_raw_fd(), l.as_raw_fd()]).unwrap();
        send(&a, "end", &[]).unwrap();
        let (text, fds) = recv(&b, Some(Duration::from_secs(5))).unwrap().unwrap();
        assert_eq!((text.as_str(), fds.len()), ("listen 0 127.0.0.1:1", 2));
        let got = std::net::TcpListener::from(fds[0].as_fd().try_clone_to_owned().unwrap());
        assert_eq!(got.local_addr().unwrap(), addr);
        let (text, fds) = recv(&b, None).unwrap().unwrap();
        assert_eq!((text.as_str(), fds.len()), ("end", 0));
        drop(a);
        assert!(recv(&b, None).unwrap().is_none());
    }
}
