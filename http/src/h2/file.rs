//! DATA frames read straight from a file into the connection's output: one
//! `preadv` lays a batch of frames' bodies behind the room left for their
//! headers, so a large file costs one read per batch and no zeroing, and
//! leaves in sends as large as the batch.
//!
//! Why not without the copy: frames need a 9-byte header every 16 KiB
//! (the client's usual SETTINGS_MAX_FRAME_SIZE), so the kernel cannot
//! send a file into a stream in one call. Measured through ringside
//! (1 MiB over one h2c connection, h2load -c1 -m1): each frame's header
//! written into a pipe and its body spliced in from the file, then the
//! pipe spliced to the socket in 640 KiB runs, no copy at all, gave 1,420
//! to 1,980 req/s; each header sent with MSG_MORE and its 16 KiB spliced
//! after it from a pipe filled from the file, 1,154; this path 2,240 to
//! 3,180, median 2,527 (HTTP/1.1's sendfile 3,273). The pages the splice
//! carries are many small fragments per segment, which costs both ends
//! more than the copy saves. With `sendfile` per frame between headers
//! sent with MSG_MORE, every frame is a segment of its own; corking it
//! cost more still (C, loopback).

use std::fs::File;
use std::io;

use bytes::BytesMut;

use super::frame::{self, HEADER_LEN};

/// Reads up to `n` bytes of `file` from `offset` into `out` as DATA frames
/// of stream `id`, at most `max` bytes each; the last frame read ends the
/// stream when `end` and all `n` bytes came. Returns how many file bytes
/// were framed (fewer than `n` where the file was shorter); `out` holds
/// whole frames only.
pub(crate) fn read_frames(
    out: &mut BytesMut,
    file: &File,
    offset: u64,
    n: usize,
    max: usize,
    id: u32,
    end: bool,
) -> io::Result<usize> {
    let frames = n.div_ceil(max);
    out.reserve(n + frames * HEADER_LEN);
    let base = out.len();
    let got = read_into(out, file, offset, n, max, frames)?;
    let mut at = base;
    let mut left = got;
    while left > 0 {
        let len = left.min(max);
        left -= len;
        let flags = if end && got == n && left == 0 {
            frame::END_STREAM
        } else {
            0
        };
        let head = frame::head_bytes(len, frame::DATA, flags, id);
        // SAFETY: `at + HEADER_LEN + len` is within the capacity reserved
        // above, and the frame's body bytes were written by the read.
        unsafe {
            std::ptr::copy_nonoverlapping(head.as_ptr(), out.as_mut_ptr().add(at), HEADER_LEN);
        }
        at += HEADER_LEN + len;
    }
    // SAFETY: every byte up to `at` is a header written above or body bytes
    // the read wrote: the frames lie back to back, the last maybe short.
    unsafe { out.set_len(at) };
    Ok(got)
}

/// Where frame `k`'s body goes in the spare capacity at `spare`.
///
/// # Safety
/// `read_frames` reserved room for every frame `k` it asks for.
unsafe fn body_at(spare: *mut u8, k: usize, max: usize) -> *mut u8 {
    spare.add(k * (HEADER_LEN + max) + HEADER_LEN)
}

/// Frames a `preadv` takes at once: a 512 KiB batch of 16 KiB frames is
/// 32, so one call; the vectors live on the stack.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
const GROUP: usize = 64;

/// Reads into the spare capacity of `out`, each frame's body `HEADER_LEN`
/// past its start; returns the bytes read.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn read_into(
    out: &mut BytesMut,
    file: &File,
    offset: u64,
    n: usize,
    max: usize,
    frames: usize,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    let none = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut got = 0usize;
    let mut first = 0;
    while first < frames {
        let count = (frames - first).min(GROUP);
        let mut iov = [none; GROUP];
        let mut want = 0;
        for (j, v) in iov[..count].iter_mut().enumerate() {
            let k = first + j;
            v.iov_len = (n - k * max).min(max);
            // SAFETY: frame k is one `read_frames` reserved room for.
            v.iov_base = unsafe { body_at(spare, k, max) }.cast();
            want += v.iov_len;
        }
        // SAFETY: the vectors point into reserved, writable capacity.
        let r = unsafe {
            libc::preadv(
                file.as_raw_fd(),
                iov.as_ptr(),
                count as libc::c_int,
                (offset + got as u64) as libc::off_t,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        got += r as usize;
        if (r as usize) < want {
            // A read cut inside a frame's body: nothing past it is used.
            break;
        }
        first += count;
    }
    Ok(got)
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn read_into(
    out: &mut BytesMut,
    file: &File,
    offset: u64,
    n: usize,
    max: usize,
    frames: usize,
) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    let mut got = 0usize;
    for k in 0..frames {
        let len = (n - k * max).min(max);
        // SAFETY: within the capacity `read_frames` reserved; read_at only
        // writes into the slice.
        let dst = unsafe { std::slice::from_raw_parts_mut(body_at(spare, k, max), len) };
        let r = file.read_at(dst, offset + got as u64)?;
        got += r;
        if r < len {
            break;
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file of `len` bytes (byte i is i % 251), removed on drop.
    struct Temp(std::path::PathBuf, File);

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn temp(len: usize) -> Temp {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("ringside-h2-file-{}-{n}", std::process::id()));
        let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        File::create(&p).unwrap().write_all(&body).unwrap();
        let f = File::open(&p).unwrap();
        Temp(p, f)
    }

    /// Parses `out` back into (flags, body) per frame, checking each
    /// header's type, stream and length.
    fn frames_of(out: &[u8], id: u32) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        let mut at = 0;
        while at < out.len() {
            let h = &out[at..at + HEADER_LEN];
            let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
            assert_eq!(h[3], frame::DATA);
            assert_eq!(u32::from_be_bytes([h[5], h[6], h[7], h[8]]), id);
            v.push((h[4], out[at + HEADER_LEN..at + HEADER_LEN + len].to_vec()));
            at += HEADER_LEN + len;
        }
        assert_eq!(at, out.len());
        v
    }

    #[test]
    fn frames_carry_the_file_in_order_and_end_the_stream() {
        let t = temp(100_000);
        let mut out = BytesMut::from(&b"prior"[..]);
        let got = read_frames(&mut out, &t.1, 1_000, 99_000, 16_384, 7, true).unwrap();
        assert_eq!(got, 99_000);
        assert_eq!(&out[..5], b"prior");
        let frames = frames_of(&out[5..], 7);
        assert_eq!(frames.len(), 7);
        let body: Vec<u8> = frames.iter().flat_map(|f| f.1.clone()).collect();
        let want: Vec<u8> = (1_000..100_000).map(|i| (i % 251) as u8).collect();
        assert_eq!(body, want);
        assert!(frames[..6].iter().all(|f| f.0 == 0 && f.1.len() == 16_384));
        assert_eq!(frames[6].0, frame::END_STREAM);
    }

    #[test]
    fn a_short_file_gives_whole_frames_of_what_was_read_and_no_end() {
        let t = temp(40_000);
        let mut out = BytesMut::new();
        let got = read_frames(&mut out, &t.1, 0, 60_000, 16_384, 3, true).unwrap();
        assert_eq!(got, 40_000);
        let frames = frames_of(&out, 3);
        let lens: Vec<usize> = frames.iter().map(|f| f.1.len()).collect();
        assert_eq!(lens, [16_384, 16_384, 40_000 - 32_768]);
        assert!(
            frames.iter().all(|f| f.0 == 0),
            "a short read never ends the stream"
        );
    }

    #[test]
    fn more_frames_than_one_read_takes_come_whole_and_in_order() {
        let len = 70 * 16_384 + 123;
        let t = temp(len);
        let mut out = BytesMut::new();
        assert_eq!(
            read_frames(&mut out, &t.1, 0, len, 16_384, 5, true).unwrap(),
            len
        );
        let frames = frames_of(&out, 5);
        assert_eq!(frames.len(), 71);
        let body: Vec<u8> = frames.iter().flat_map(|f| f.1.clone()).collect();
        assert!(body.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        assert_eq!(frames[70].0, frame::END_STREAM);
    }

    #[test]
    fn past_the_end_reads_nothing() {
        let t = temp(10);
        let mut out = BytesMut::new();
        assert_eq!(
            read_frames(&mut out, &t.1, 10, 5, 16_384, 1, true).unwrap(),
            0
        );
        assert!(out.is_empty());
    }
}
