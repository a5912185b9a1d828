//! Files: positional reads and the zero-copy file-to-socket send.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

use bytes::BytesMut;

use crate::net::TcpStream;

/// Reads up to `buf`'s spare capacity from `file` at `pos`, appending.
///
/// This is a plain pread: files served here are expected to sit in the page
/// cache, and large bodies never pass through this call (see [`send_file`]).
pub fn read_at(file: &std::fs::File, buf: &mut BytesMut, pos: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let spare = buf.spare_capacity_mut();
    // SAFETY: read_at only writes into the slice; u8 has no invalid values.
    let spare =
        unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), spare.len()) };
    let n = file.read_at(spare, pos)?;
    // SAFETY: n bytes past len were just written.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

const CHUNK: u64 = 64 * 1024;

/// `progress` is called after each step that moved bytes.
pub(crate) async fn send_file(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(),
) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    match crate::backend::current() {
        #[cfg(feature = "io-uring")]
        crate::Backend::IoUring => splice_uring(stream, file, offset, len, progress).await,
        #[cfg(rt_glommio)]
        crate::Backend::Glommio => copy_fallback(stream, file, offset, len, progress).await,
        #[cfg(all(
            rt_monoio,
            any(
                target_os = "linux",
                target_os = "macos",
                target_os = "ios",
                target_os = "freebsd",
                target_os = "dragonfly"
            )
        ))]
        _ => sendfile_ready(stream, file, offset, len, progress).await,
        #[allow(unreachable_patterns)]
        _ => copy_fallback(stream, file, offset, len, progress).await,
    }
}

/// file → pipe → socket with io_uring splice ops, 64 KiB at a time.
#[cfg(feature = "io-uring")]
async fn splice_uring(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(),
) -> io::Result<()> {
    use monoio::io::splice::{SpliceDestination, SpliceSource};
    // monoio's splice has no offset argument, so position the file first.
    // SAFETY: lseek on a valid fd.
    if unsafe { libc::lseek(file.as_raw_fd(), offset as libc::off_t, libc::SEEK_SET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // A dup so monoio can own (and close) an fd of its own for the source.
    let src_fd = file.try_clone()?;
    let mut src = monoio::net::TcpStream::from_std(
        // SAFETY: monoio only uses the fd for splice and closes it on drop;
        // it is never treated as a socket.
        unsafe { std::net::TcpStream::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(src_fd)) },
    )?;
    let (mut pr, mut pw) = monoio::net::unix::new_pipe()?;
    let sock = stream.monoio().expect("io_uring worker runs monoio");
    let mut left = len;
    while left > 0 {
        let want = left.min(CHUNK) as u32;
        let mut in_pipe = src.splice_to_pipe(&mut pw, want).await?;
        if in_pipe == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than the range sent",
            ));
        }
        left -= u64::from(in_pipe);
        while in_pipe > 0 {
            let n = sock.splice_from_pipe(&mut pr, in_pipe).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            in_pipe -= n;
            progress();
        }
    }
    Ok(())
}

/// sendfile(2) on a non-blocking socket, waiting for writability on EAGAIN.
#[cfg(all(
    rt_monoio,
    any(
        target_os = "linux",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "dragonfly"
    )
))]
async fn sendfile_ready(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(),
) -> io::Result<()> {
    let mut off = offset as libc::off_t;
    let end = offset + len;
    while (off as u64) < end {
        let want = ((end - off as u64).min(1 << 30)) as usize;
        // SAFETY: both fds are valid; off is a valid pointer.
        let n = unsafe { sendfile_raw(stream.as_raw_fd(), file.as_raw_fd(), &mut off, want) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => {
                    stream
                        .monoio()
                        .expect("monoio worker")
                        .writable(false)
                        .await?;
                }
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        } else if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than the range sent",
            ));
        } else {
            progress();
        }
    }
    Ok(())
}

#[cfg(all(rt_monoio, target_os = "linux"))]
unsafe fn sendfile_raw(sock: i32, file: i32, off: &mut libc::off_t, len: usize) -> isize {
    libc::sendfile(sock, file, off, len)
}

#[cfg(all(
    rt_monoio,
    any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "dragonfly"
    )
))]
unsafe fn sendfile_raw(sock: i32, file: i32, off: &mut libc::off_t, len: usize) -> isize {
    // BSD sendfile reports partial progress through sbytes even on EAGAIN.
    let mut sent: libc::off_t = len as libc::off_t;
    #[cfg(any(target_os = "macos", target_os = "ios"))]
    let r = libc::sendfile(file, sock, *off, &mut sent, std::ptr::null_mut(), 0);
    #[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
    let r = libc::sendfile(file, sock, *off, len, std::ptr::null_mut(), &mut sent, 0);
    *off += sent;
    if r < 0 && sent == 0 {
        -1
    } else {
        sent as isize
    }
}

/// glommio exposes neither splice nor a writability wait, so large bodies go
/// through a reused 64 KiB buffer. The only path in ringside that copies file
/// bytes through user space.
#[allow(dead_code)] // used by glommio, and by readiness backends without sendfile
async fn copy_fallback(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(),
) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(CHUNK as usize);
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        buf.clear();
        let want = (end - pos).min(CHUNK) as usize;
        buf.reserve(want);
        let mut limited = buf.split_off(0);
        let n = {
            let spare = &mut limited.spare_capacity_mut()[..want];
            // SAFETY: read_at only writes into the slice.
            let s =
                unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), want) };
            std::os::unix::fs::FileExt::read_at(file, s, pos)?
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than the range sent",
            ));
        }
        // SAFETY: n bytes were written.
        unsafe { limited.set_len(n) };
        let (r, back) = stream.write_all(limited).await;
        r?;
        buf = back;
        pos += n as u64;
        progress();
    }
    Ok(())
}
