//! Files: positional reads and the zero-copy file-to-socket send.

use std::io;
use std::os::fd::AsRawFd;

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

/// How many bytes into a buffer at `dst` a read of a file from `pos`
/// should start (0 to 63) so that the kernel's copy out of the page cache
/// runs at full speed: with the destination on the source's offset within
/// a cache line. The kernel copies with `rep movsb`, which on this AMD
/// EPYC ran 3.4 times slower when the destination's offset in its page
/// lay 1 to 31 bytes past the source's: 0.50 against 0.15 ms/MiB for
/// 256 KiB preads of a cached file (C, one core). A malloc'd buffer of
/// that size starts 16 bytes into a page, so a piece of a file read
/// behind a 5-byte frame header landed there every time: 27% of the
/// server's CPU on a 100 MiB HTTP/3 download.
pub fn read_pad(dst: *const u8, pos: u64) -> usize {
    (pos as usize).wrapping_sub(dst as usize) % 64
}

const CHUNK: u64 = 64 * 1024;

/// Largest piece handed to one sendfile or file-to-pipe splice: a whole
/// pipe. 256 KiB pieces once let the client read while the sender, over
/// loopback, did its TCP work inside one long call; with the unsent bound
/// ([`UNSENT_BOUND`]) no call runs that far ahead any more, and fewer calls
/// win. Measured, 1 MiB file, 3 rounds: ringside-bench -c10, 4,130 -> 5,566
/// req/s and 234 -> 175 µs per request (lighttpd 163); wrk -c10, 3,438 ->
/// 3,586 req/s and 220 -> 196 µs (epoll's sendfile 246 -> 199 µs).
#[cfg(rt_monoio)]
const SEND_PIECE: usize = pipes::PIPE_SIZE;

/// Unsent bytes a socket may hold before it stops taking more, set on the
/// client socket before a large body is sent into it, whichever way.
///
/// Without a bound the sender queues a whole 1 MiB body at once, far beyond
/// the receiver's window, and the rest goes out later from the receiver's
/// ACKs: in the client's context, not the server's. Over loopback that
/// charged the TCP work of most of every body to the client's CPU.
/// Measured (1 MiB file, wrk -c10 on the other CPU, 2 rounds): no bound
/// 1,655 req/s with 607 µs of wrk's CPU per request; 16 KiB 2,271; 32 KiB
/// 2,372; 64 KiB 2,646 with 376 µs; 128 KiB 2,366; 256 KiB 2,082 (lighttpd:
/// 2,475 with 402 µs). Where the server sets the pace instead
/// (ringside-bench as the client, 64 KiB reads, 3 rounds) it gains as well:
/// 3,428 -> 4,200 req/s, 289 -> 231 µs of server CPU. The copy path gains
/// where the client sets the pace (glommio: 1,319 -> 1,813 req/s); over TLS,
/// where the server's CPU does, it is neutral. A client that stops reading
/// now pins at most about this much unsent data in the kernel, not the
/// whole autotuned send buffer.
const UNSENT_BOUND: libc::c_int = 64 * 1024;

/// Bounds `fd`'s unsent bytes (see [`UNSENT_BOUND`]) before a body of
/// `len` bytes, if it is larger than the bound. Best effort: a kernel
/// without TCP_NOTSENT_LOWAT only loses the speed-up.
pub(crate) fn bound_unsent(fd: std::os::fd::RawFd, len: u64) {
    if len <= UNSENT_BOUND as u64 {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: setsockopt on a live socket with a pointer to an int of the
    // size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&UNSENT_BOUND as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Sends `len` bytes of `file` from `offset` to the socket without copying
/// them through user space, where the engine allows it:
/// - io_uring: splice file → pipe → socket (moves the file's offset);
/// - epoll, kqueue, devpoll: sendfile(2) on the non-blocking socket;
/// - glommio: has neither, so it falls back to pread + write in 64 KiB
///   chunks (a copy, documented as such).
///
/// Give each transfer its own open file: the io_uring path seeks it.
/// `progress` is called after each step that moved bytes, with how many
/// reached the socket in that step.
pub(crate) async fn send_file(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(u64),
) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    bound_unsent(stream.as_raw_fd(), len);
    if stream.is_tls() {
        // The bytes must be encrypted in user space (no kTLS; see `tls`).
        return copy_fallback(stream, file, offset, len, progress).await;
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

/// file → pipe → socket with splice(2), through a pipe from this core's
/// pool (grown to 1 MiB), waiting for writability through io_uring.
///
/// Measured: monoio's io_uring splice ops run file splices on io-wq kernel
/// threads, and served 1 MiB files at half the rate of this (2.5k against
/// 5k+ req/s, 10 clients); the direct calls move page references from the
/// page cache without a copy and without a thread hop.
#[cfg(feature = "io-uring")]
async fn splice_uring(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(u64),
) -> io::Result<()> {
    let pipe = pipes::take()?;
    // io_uring's sockets are blocking, and SPLICE_F_NONBLOCK only covers the
    // pipe side: without O_NONBLOCK on the socket, a client that stops
    // reading would block this whole core inside splice. The socket is
    // non-blocking just for the transfer; nothing else uses it meanwhile.
    let fd = stream.as_raw_fd();
    // SAFETY: fcntl on a live socket of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let r = splice_through(stream, file, offset, len, progress, &pipe).await;
    // SAFETY: as above; restores the flags read before.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    if r.is_ok() {
        pipes::give(pipe);
    }
    r
}

#[cfg(feature = "io-uring")]
async fn splice_through(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(u64),
    pipe: &pipes::Pipe,
) -> io::Result<()> {
    let sock = stream.as_raw_fd();
    let mut off = offset as libc::loff_t;
    let end = offset + len;
    while (off as u64) < end {
        let want = (end - off as u64).min(SEND_PIECE as u64) as usize;
        // SAFETY: valid fds and offset pointer; the pipe is ours.
        let n = unsafe {
            libc::splice(
                file.as_raw_fd(),
                &mut off,
                pipe.w,
                std::ptr::null_mut(),
                want,
                libc::SPLICE_F_MOVE,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than the range sent",
            ));
        }
        let mut in_pipe = n as usize;
        while in_pipe > 0 {
            // SAFETY: valid fds; the pipe holds in_pipe bytes.
            let m = unsafe {
                libc::splice(
                    pipe.r,
                    std::ptr::null_mut(),
                    sock,
                    std::ptr::null_mut(),
                    in_pipe,
                    libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                )
            };
            if m < 0 {
                wait_after_error(stream).await?;
                continue;
            }
            in_pipe -= m as usize;
            progress(m as u64);
        }
    }
    Ok(())
}

/// This core's spare pipes for splice; a pipe goes back only when empty.
#[cfg(rt_monoio)]
pub(crate) mod pipes {
    use std::cell::RefCell;
    use std::io;

    pub const PIPE_SIZE: usize = 1 << 20;

    pub struct Pipe {
        pub r: i32,
        pub w: i32,
    }

    impl Drop for Pipe {
        fn drop(&mut self) {
            // SAFETY: both fds are ours.
            unsafe {
                libc::close(self.r);
                libc::close(self.w);
            }
        }
    }

    thread_local! {
        static SPARE: RefCell<Vec<Pipe>> = const { RefCell::new(Vec::new()) };
    }

    pub fn take() -> io::Result<Pipe> {
        let spare = SPARE.with(|s| {
            let mut s = s.borrow_mut();
            let p = s.pop();
            crate::stats::spare_pipes(s.len());
            p
        });
        if let Some(p) = spare {
            return Ok(p);
        }
        let mut fds = [0i32; 2];
        // SAFETY: fds has room for two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let p = Pipe {
            r: fds[0],
            w: fds[1],
        };
        // Larger pipes mean fewer splices; refused above pipe-max-size, which
        // only costs calls.
        // SAFETY: fcntl on our own fd.
        unsafe { libc::fcntl(p.w, libc::F_SETPIPE_SZ, PIPE_SIZE as libc::c_int) };
        Ok(p)
    }

    pub fn give(p: Pipe) {
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < crate::stats::SPARE_PIPES_MAX {
                s.push(p);
                crate::stats::spare_pipes(s.len());
            }
        });
    }
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
    progress: &dyn Fn(u64),
) -> io::Result<()> {
    let mut off = offset as libc::off_t;
    let end = offset + len;
    while (off as u64) < end {
        let want = (end - off as u64).min(SEND_PIECE as u64) as usize;
        // SAFETY: both fds are valid; off is a valid pointer.
        let n = unsafe { sendfile_raw(stream.as_raw_fd(), file.as_raw_fd(), &mut off, want) };
        if n < 0 {
            wait_after_error(stream).await?;
        } else if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than the range sent",
            ));
        } else {
            progress(n as u64);
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

/// After a failed non-blocking send of file data: waits for room on
/// EAGAIN, returns at once on EINTR (the caller retries), fails otherwise.
#[cfg(rt_monoio)]
async fn wait_after_error(stream: &mut TcpStream) -> io::Result<()> {
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => {
            stream
                .monoio()
                .expect("monoio worker")
                .writable(false)
                .await
        }
        io::ErrorKind::Interrupted => Ok(()),
        _ => Err(e),
    }
}

/// glommio exposes neither splice nor a writability wait, and TLS must
/// encrypt in user space, so there large bodies go through a reused 64 KiB
/// buffer: the only path in ringside that copies file bytes through user
/// space.
async fn copy_fallback(
    stream: &mut TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    progress: &dyn Fn(u64),
) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(CHUNK as usize);
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        buf.clear();
        let want = (end - pos).min(CHUNK) as usize;
        buf.reserve(want + 64);
        let mut limited = buf.split_off(0);
        // The pad is written (and cut off unsent) so that every byte up to
        // the read's end is initialised.
        limited.extend_from_slice(&[0; 64][..read_pad(limited.as_ptr(), pos)]);
        let pad = limited.len();
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
        // SAFETY: n bytes were written after the pad.
        unsafe { limited.set_len(pad + n) };
        bytes::Buf::advance(&mut limited, pad);
        let (r, back) = stream.write_all(limited).await;
        r?;
        buf = back;
        pos += n as u64;
        progress(n as u64);
    }
    Ok(())
}

// ---- Files read and written by the core: the disk cache's objects ----
//
// On the io-uring backend each call below is one io_uring operation
// (openat, read, write, statx, fsync, renameat, unlinkat, mkdirat), so the
// core serves its other connections while the disk works. Elsewhere they
// are the plain blocking calls: the readiness engines (epoll, kqueue,
// devpoll) have no readiness for regular files, and glommio's files are its
// own types (DMA or buffered), which this small API does not wrap; there a
// call holds the core for as long as the disk takes, which the page cache
// makes short for the recently written and read files these are.

/// Whether this thread's engine does file I/O through io_uring.
#[cfg(feature = "io-uring")]
#[inline]
fn on_uring() -> bool {
    crate::backend::current() == crate::Backend::IoUring
}

/// An open file for [`File::read_exact_at`] and [`File::write_all_at`]
/// through the core's engine (see above). [`File::std`] lends it as a
/// `std::fs::File` for the calls that take one (the zero-copy send).
pub struct File {
    /// The descriptor, seen as a std file. Closed on drop only when
    /// `uring` is None; otherwise the monoio file owns it.
    std: std::mem::ManuallyDrop<std::fs::File>,
    #[cfg(feature = "io-uring")]
    uring: Option<monoio::fs::File>,
}

impl Drop for File {
    fn drop(&mut self) {
        #[cfg(feature = "io-uring")]
        if self.uring.is_some() {
            // The monoio file closes the descriptor.
            return;
        }
        // SAFETY: dropped once, here; nothing else owns the descriptor.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.std) }
    }
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("fd", &self.std.as_raw_fd())
            .finish()
    }
}

impl File {
    fn from_std(f: std::fs::File) -> File {
        File {
            std: std::mem::ManuallyDrop::new(f),
            #[cfg(feature = "io-uring")]
            uring: None,
        }
    }

    #[cfg(feature = "io-uring")]
    fn from_monoio(f: monoio::fs::File) -> File {
        use std::os::fd::FromRawFd;
        // SAFETY: the view never closes the descriptor (ManuallyDrop, and
        // Drop skips it while `uring` holds the owner).
        let std = unsafe { std::fs::File::from_raw_fd(f.as_raw_fd()) };
        File {
            std: std::mem::ManuallyDrop::new(std),
            uring: Some(f),
        }
    }

    /// Opens `path` for reading.
    pub async fn open(path: &std::path::Path) -> io::Result<File> {
        #[cfg(feature = "io-uring")]
        if on_uring() {
            let f = monoio::fs::OpenOptions::new().read(true).open(path).await?;
            return Ok(File::from_monoio(f));
        }
        std::fs::File::open(path).map(File::from_std)
    }

    /// Creates `path` for writing, failing if it exists (`O_EXCL`), with
    /// mode 0600 (before the umask).
    pub async fn create_new(path: &std::path::Path) -> io::Result<File> {
        #[cfg(feature = "io-uring")]
        if on_uring() {
            use std::os::unix::fs::OpenOptionsExt;
            let f = monoio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .await?;
            return Ok(File::from_monoio(f));
        }
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map(File::from_std)
    }

    /// The file as a `std::fs::File`, for calls that take one. Do not
    /// close it (it is borrowed).
    pub fn std(&self) -> &std::fs::File {
        &self.std
    }

    /// Reads exactly `buf.len()` bytes at `pos` into `buf`; a file that
    /// ends first is `UnexpectedEof`. The buffer comes back either way.
    pub async fn read_exact_at(&self, buf: Vec<u8>, pos: u64) -> (io::Result<()>, Vec<u8>) {
        #[cfg(feature = "io-uring")]
        if let Some(f) = &self.uring {
            use monoio::buf::{IoBufMut, SliceMut};
            // A slice of exactly len: monoio fills a Vec up to its capacity.
            let len = buf.len();
            let (r, back) = f.read_exact_at(buf.slice_mut(0..len), pos).await;
            let mut back = SliceMut::into_inner(back);
            // SAFETY: 0..len was initialized before the read, which only
            // overwrote bytes (monoio sets the length to what it read).
            unsafe { back.set_len(len) };
            return (r, back);
        }
        let mut buf = buf;
        let r = std::os::unix::fs::FileExt::read_exact_at(&*self.std, &mut buf, pos);
        (r, buf)
    }

    /// Reads up to `buf.len()` bytes at `pos` into `buf`, returning how many
    /// (0 at the end of the file); `buf`'s length is left as it was.
    pub async fn read_at(&self, buf: Vec<u8>, pos: u64) -> (io::Result<usize>, Vec<u8>) {
        #[cfg(feature = "io-uring")]
        if let Some(f) = &self.uring {
            use monoio::buf::{IoBufMut, SliceMut};
            let len = buf.len();
            let (r, back) = f.read_at(buf.slice_mut(0..len), pos).await;
            let mut back = SliceMut::into_inner(back);
            // SAFETY: as in read_exact_at.
            unsafe { back.set_len(len) };
            return (r, back);
        }
        let mut buf = buf;
        let r = std::os::unix::fs::FileExt::read_at(&*self.std, &mut buf, pos);
        (r, buf)
    }

    /// Writes all of `buf` at `pos`. The buffer comes back either way.
    pub async fn write_all_at<B>(&self, buf: B, pos: u64) -> (io::Result<()>, B)
    where
        B: AsRef<[u8]> + WriteBuf,
    {
        #[cfg(feature = "io-uring")]
        if let Some(f) = &self.uring {
            return f.write_all_at(buf, pos).await;
        }
        let r = std::os::unix::fs::FileExt::write_all_at(&*self.std, buf.as_ref(), pos);
        (r, buf)
    }

    /// The file's length, from its metadata (statx on io_uring).
    pub async fn len(&self) -> io::Result<u64> {
        #[cfg(feature = "io-uring")]
        if let Some(f) = &self.uring {
            return f.metadata().await.map(|m| m.len());
        }
        self.std.metadata().map(|m| m.len())
    }

    /// Flushes the file's data (and the metadata needed to read it back)
    /// to the device: fdatasync.
    pub async fn sync_data(&self) -> io::Result<()> {
        #[cfg(feature = "io-uring")]
        if let Some(f) = &self.uring {
            return f.sync_data().await;
        }
        self.std.sync_data()
    }
}

/// Buffers [`File::write_all_at`] takes: owned, so that io_uring may hold
/// them while the kernel writes.
#[cfg(feature = "io-uring")]
pub trait WriteBuf: monoio::buf::IoBuf {}
#[cfg(feature = "io-uring")]
impl<T: monoio::buf::IoBuf> WriteBuf for T {}
/// Buffers [`File::write_all_at`] takes: owned, so that io_uring may hold
/// them while the kernel writes.
#[cfg(not(feature = "io-uring"))]
pub trait WriteBuf: 'static {}
#[cfg(not(feature = "io-uring"))]
impl<T: 'static> WriteBuf for T {}

/// Renames `from` to `to`, replacing `to` atomically if it exists.
pub async fn rename(from: &std::path::Path, to: &std::path::Path) -> io::Result<()> {
    #[cfg(feature = "io-uring")]
    if on_uring() {
        return monoio::fs::rename(from, to).await;
    }
    std::fs::rename(from, to)
}

/// Removes the file at `path`.
pub async fn remove_file(path: &std::path::Path) -> io::Result<()> {
    #[cfg(feature = "io-uring")]
    if on_uring() {
        return monoio::fs::remove_file(path).await;
    }
    std::fs::remove_file(path)
}

/// Creates the directory `path` (mode 0777 before the umask); its parent
/// must exist.
pub async fn create_dir(path: &std::path::Path) -> io::Result<()> {
    #[cfg(feature = "io-uring")]
    if on_uring() {
        return monoio::fs::create_dir(path).await;
    }
    std::fs::create_dir(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_starts_on_its_sources_offset_in_a_cache_line() {
        let buf = vec![0u8; 256];
        for at in 0..64 {
            for pos in [0u64, 5, 63, 64, 4096 + 17, (1 << 40) + 31] {
                let dst = buf.as_ptr().wrapping_add(at);
                let pad = read_pad(dst, pos);
                assert!(pad < 64);
                assert_eq!(
                    (dst as usize + pad) % 64,
                    (pos % 64) as usize,
                    "at {at} pos {pos}"
                );
            }
        }
    }

    /// The file calls on each backend built in that runs here.
    #[test]
    fn file_calls_on_each_backend() {
        #[allow(unused_mut)] // a glommio-only build tests none
        let mut backends: Vec<crate::Backend> = Vec::new();
        #[cfg(feature = "io-uring")]
        if crate::backend::probe_uring().is_ok() {
            backends.push(crate::Backend::IoUring);
        }
        #[cfg(feature = "epoll")]
        backends.push(crate::Backend::Epoll);
        for backend in backends {
            let dir = std::env::temp_dir().join(format!(
                "ringside-fs-{}-{}",
                std::process::id(),
                backend.name()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let d = dir.clone();
            std::thread::spawn(move || {
                crate::worker::run_local(backend, async move {
                    let sub = d.join("sub");
                    create_dir(&sub).await.unwrap();
                    assert_eq!(
                        create_dir(&sub).await.unwrap_err().kind(),
                        io::ErrorKind::AlreadyExists
                    );
                    let a = sub.join("a");
                    let f = File::create_new(&a).await.unwrap();
                    assert!(File::create_new(&a).await.is_err());
                    f.write_all_at(b"hello ".to_vec(), 0).await.0.unwrap();
                    f.write_all_at(bytes::Bytes::from_static(b"world"), 6)
                        .await
                        .0
                        .unwrap();
                    f.sync_data().await.unwrap();
                    assert_eq!(f.len().await.unwrap(), 11);
                    drop(f);
                    let b = sub.join("b");
                    rename(&a, &b).await.unwrap();
                    assert!(!a.exists());
                    let f = File::open(&b).await.unwrap();
                    let (r, buf) = f.read_exact_at(vec![0; 5], 6).await;
                    r.unwrap();
                    assert_eq!(buf, b"world");
                    let (r, _) = f.read_exact_at(vec![0; 5], 7).await;
                    assert_eq!(r.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
                    let (r, buf) = f.read_at(vec![0; 64], 0).await;
                    assert_eq!(r.unwrap(), 11);
                    assert_eq!(buf.len(), 64);
                    assert_eq!(&buf[..11], b"hello world");
                    let mut s = String::new();
                    std::io::Read::read_to_string(&mut f.std(), &mut s).unwrap();
                    assert_eq!(s, "hello world");
                    drop(f);
                    remove_file(&b).await.unwrap();
                    assert!(!b.exists());
                    assert_eq!(
                        remove_file(&b).await.unwrap_err().kind(),
                        io::ErrorKind::NotFound
                    );
                })
                .unwrap()
            })
            .join()
            .unwrap_or_else(|_| panic!("failed on {backend}"));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
