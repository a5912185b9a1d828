//! The disk tier: one core's objects in files under its own directory,
//! bounded in bytes, checksummed, kept across restarts.
//!
//! # Layout
//!
//! Each core owns `<root>/core-<N>/` ([`core_dir`]); no other core reads or
//! writes it, so nothing locks. One file per object, named by the key's
//! 64-bit hash in hex under a two-level fan-out of 16 × 256 directories
//! (nginx's `levels=1:2`): `a/bc/abc0123456789def.obj`. The file holds a
//! 64-byte header, the full key, the head block (the caller's opaque bytes:
//! the stored response's metadata and fields), then the body, at
//! [`Found::body_offset`] so that the edge can send it with sendfile or
//! splice (see [`mod@format`] for the header).
//!
//! # Never torn, never stale
//!
//! - An object is written whole to a temporary name in its final directory
//!   (`<hash>.<run>-<seq>.tmp`), then renamed over its final name: a crash
//!   of the process leaves the old object or the new one, never a mix. Temp
//!   files of an earlier run are removed at the [rebuild](Disk::rebuild).
//! - No fsync: a crash of the machine may leave a renamed file whose data
//!   never reached the disk. The checksums catch it: the header's at the
//!   rebuild and on every read, the key and head block's on every read, and
//!   the body's on the first read of each object found at the start (and on
//!   every read of an object whose whole file comes with the first read,
//!   64 KiB). An object written in this run is trusted past its head: only a
//!   disk corrupting data after it was written could tear it. Every read
//!   also checks the file's length against its header, so a truncated file
//!   is never sent.
//! - Each file carries the store's generation and the format's version: a
//!   file of another is never served, and the rebuild removes it. Bumping
//!   the generation drops the whole tier at the next start.
//! - A removal ([`Disk::remove`]) while a write of the same hash is under
//!   way cancels the write: a purge is never undone by a fill that started
//!   before it.
//! - A second write of a hash while one is under way is dropped (the edge
//!   collapses fills, so this is rare): the one under way stores it whole.
//!
//! # Restart
//!
//! [`Disk::open`] only makes the directory. [`Disk::rebuild`], spawned on
//! the core, walks it and reads each object's header into the index, while
//! the core serves; until it ends, lookups of objects from before the start
//! miss (objects written since hit). It reads the directories with plain
//! blocking calls (io_uring has no getdents), one directory at a time,
//! giving the core's other tasks a turn between. Until it ends, the bound
//! counts only objects written since the start.
//!
//! # I/O
//!
//! Through [`ringside_runtime::fs`]: on the io-uring backend every open,
//! read, write, statx, rename, unlink and mkdir is an io_uring operation;
//! on the others (epoll, glommio) they are plain blocking calls on the core.
//!
//! # Memory
//!
//! The index keeps under 50 bytes per object (see [`index`]): no key, no
//! head, no path; those are on disk.

pub mod format;
pub mod index;
mod rebuild;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use ringside_runtime::fs::{self, File};

use format::{crc32c, Bad, Header, HEADER_LEN};
use index::{charge_of, Index};

/// An object may take at most this share of the tier (1/8): a larger one
/// would flush most of it for one response.
pub const MAX_OBJECT_SHARE: u64 = 8;

/// The first read of a lookup: the header, key and head block at once, and
/// the whole body when the object is this small.
const FIRST_READ: usize = 64 * 1024;

/// Pieces the body is read in when its checksum is checked.
const BODY_CHUNK: usize = 256 * 1024;

/// Files the rebuild checks between turns it gives the core's other tasks
/// (on io_uring each file's reads wait anyway; elsewhere they block).
const REBUILD_BATCH: usize = 32;

/// This core's directory under the tier's root.
pub fn core_dir(root: &Path, core: usize) -> PathBuf {
    root.join(format!("core-{core}"))
}

/// One core's disk tier: see the [module docs](self). Single-threaded.
pub struct Disk {
    dir: PathBuf,
    max_bytes: u64,
    generation: u64,
    /// Names this run's temp files, so that a rebuild running beside
    /// writes removes only those of earlier runs.
    run: u64,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    index: Index,
    /// Hashes being written → cancelled by a removal meanwhile.
    writing: HashMap<u64, bool>,
    rebuild: Rebuild,
    /// Until the rebuild ends: hashes written, removed or evicted in this
    /// run, which the rebuild must not take from what it read before.
    /// Emptied when it ends (so spawn it at the start).
    touched: HashSet<u64>,
    evictions: u64,
    seq: u64,
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
enum Rebuild {
    #[default]
    NotYet,
    Running,
    Done,
}

/// What [`Disk::rebuild`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RebuildReport {
    /// Objects taken into the index, and the bytes charged for them.
    pub objects: usize,
    pub bytes: u64,
    /// Removed: torn or corrupt (header checksum, length), of another
    /// format version, of another generation, temp files of earlier runs.
    pub corrupt: usize,
    pub other_version: usize,
    pub other_generation: usize,
    pub temp: usize,
    /// Objects evicted at its end to come back within the bound.
    pub evicted: usize,
    /// Files that are not ours, left alone, and directories or files that
    /// could not be read.
    pub foreign: usize,
    pub errors: usize,
}

/// A stored object, as [`Disk::get`] finds it.
#[derive(Debug)]
pub struct Found {
    /// The object's file, open for this lookup alone (the io_uring send
    /// moves its offset): send `body_len` bytes from `body_offset`.
    pub file: File,
    /// The head block as it was stored.
    pub head: Bytes,
    pub body_offset: u64,
    pub body_len: u64,
    /// The whole body, when it came with the first read (a file of up to
    /// 64 KiB): serve or promote it without reading the file again.
    pub body: Option<Bytes>,
}

impl Found {
    /// The file, for `Exchange::send_file`.
    pub fn std_file(&self) -> &std::fs::File {
        self.file.std()
    }
}

static RUNS: AtomicU64 = AtomicU64::new(0);

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Disk {
    /// Opens (creating) the core's directory `dir`, holding at most
    /// `max_bytes` (each object charged its file's length rounded up to
    /// 4 KiB). Files of another `generation` are never served. Starts
    /// nothing: spawn [`Disk::rebuild`] to find what the directory holds.
    /// A blocking call, made before the core serves.
    pub fn open(dir: &Path, max_bytes: u64, generation: u64) -> io::Result<Disk> {
        std::fs::create_dir_all(dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let run = nanos
            ^ ((std::process::id() as u64) << 40)
            ^ RUNS
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Ok(Disk {
            dir: dir.to_path_buf(),
            max_bytes,
            generation,
            run,
            state: RefCell::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bytes charged for the objects in the index.
    pub fn bytes(&self) -> u64 {
        self.state.borrow().index.bytes()
    }

    /// Objects in the index.
    pub fn len(&self) -> usize {
        self.state.borrow().index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn evictions(&self) -> u64 {
        self.state.borrow().evictions
    }

    /// Whether the index holds `hash` (another key of the same hash
    /// included; [`Disk::get`] tells them apart).
    pub fn contains(&self, hash: u64) -> bool {
        self.state.borrow().index.contains(hash)
    }

    /// Whether the rebuild has ended.
    pub fn is_rebuilt(&self) -> bool {
        self.state.borrow().rebuild == Rebuild::Done
    }

    /// The largest object [`Disk::put`] stores, header, key and head block
    /// included.
    pub fn max_object(&self) -> u64 {
        self.max_bytes / MAX_OBJECT_SHARE
    }

    /// Where `hash`'s object lives.
    pub fn path_of(&self, hash: u64) -> PathBuf {
        let name = format!("{hash:016x}");
        self.dir
            .join(&name[..1])
            .join(&name[1..3])
            .join(format!("{name}.obj"))
    }

    /// Stores an object: `key` (the full key, checked on each read), `head`
    /// (opaque), `body`. Replaces what `hash` held. Evicts to stay within
    /// the bound. `Ok(false)`: not stored, because it is larger than
    /// [`Disk::max_object`], another write of `hash` is under way, or a
    /// removal of `hash` came while it was written.
    pub async fn put(&self, hash: u64, key: &[u8], head: &[u8], body: Bytes) -> io::Result<bool> {
        if key.len() > format::KEY_MAX || head.len() > format::HEAD_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "key or head block too long for the disk tier",
            ));
        }
        let mut header = Header {
            generation: self.generation,
            hash,
            written_at: now_secs(),
            key_len: key.len() as u32,
            head_len: head.len() as u32,
            body_len: body.len() as u64,
            meta_crc: crc32c(crc32c(0, key), head),
            body_crc: 0,
        };
        let charge = charge_of(header.file_len());
        if header.file_len() > self.max_object() {
            return Ok(false);
        }
        let seq = {
            let mut st = self.state.borrow_mut();
            if st.writing.contains_key(&hash) {
                return Ok(false);
            }
            st.writing.insert(hash, false);
            st.seq += 1;
            st.seq
        };
        let path = self.path_of(hash);
        let mut guard = Writing {
            disk: self,
            hash,
            temp: Some(path.with_file_name(format!("{hash:016x}.{:016x}-{seq}.tmp", self.run))),
        };
        let temp = guard.temp.clone().expect("set");
        header.body_crc = crc32c(0, &body);
        let mut first = Vec::with_capacity(HEADER_LEN + key.len() + head.len());
        first.extend_from_slice(&header.encode());
        first.extend_from_slice(key);
        first.extend_from_slice(head);
        let file = match File::create_new(&temp).await {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.make_dirs(&temp).await?;
                File::create_new(&temp).await?
            }
            r => r?,
        };
        // Zeros up to a large body's page.
        first.resize(header.body_offset() as usize, 0);
        let at = first.len() as u64;
        file.write_all_at(first, 0).await.0?;
        if !body.is_empty() {
            file.write_all_at(body, at).await.0?;
        }
        drop(file);
        if self.cancelled(hash) {
            return Ok(false);
        }
        fs::rename(&temp, &path).await?;
        guard.temp = None;
        if self.cancelled(hash) {
            // Removed while renamed: the removal's unlink may have come
            // first, so unlink again.
            spawn_unlink(path);
            return Ok(false);
        }
        let mut st = self.state.borrow_mut();
        st.index.insert(hash, charge, true);
        if st.rebuild != Rebuild::Done {
            st.touched.insert(hash);
        }
        self.evict_to_bound(&mut st);
        Ok(true)
    }

    fn cancelled(&self, hash: u64) -> bool {
        self.state.borrow().writing.get(&hash) == Some(&true)
    }

    /// Makes the temp file's two fan-out directories.
    async fn make_dirs(&self, temp: &Path) -> io::Result<()> {
        let two = temp.parent().expect("fan-out dir");
        let one = two.parent().expect("fan-out dir");
        for d in [one, two] {
            match fs::create_dir(d).await {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// Evicts the oldest objects not read lately until within the bound;
    /// their files are unlinked off the caller's path.
    fn evict_to_bound(&self, st: &mut State) -> usize {
        let mut n = 0;
        while st.index.bytes() > self.max_bytes {
            let Some((hash, _)) = st.index.evict() else {
                break;
            };
            st.evictions += 1;
            n += 1;
            if st.rebuild != Rebuild::Done {
                st.touched.insert(hash);
            }
            if !st.writing.contains_key(&hash) {
                spawn_unlink(self.path_of(hash));
            }
        }
        n
    }

    /// Removes `hash`'s object: out of the index now, its file unlinked by
    /// a task spawned on the core. A write of it under way is cancelled.
    pub fn remove(&self, hash: u64) {
        let mut st = self.state.borrow_mut();
        st.index.remove(hash);
        if let Some(c) = st.writing.get_mut(&hash) {
            *c = true;
        }
        if st.rebuild != Rebuild::Done {
            st.touched.insert(hash);
        }
        spawn_unlink(self.path_of(hash));
    }

    /// Drops an object found torn, corrupt or stale on a read.
    fn discard(&self, hash: u64, why: &str) {
        tracing::warn!(hash = format_args!("{hash:016x}"), why, dir = %self.dir.display(), "disk cache object dropped");
        let mut st = self.state.borrow_mut();
        st.index.remove(hash);
        if st.rebuild != Rebuild::Done {
            st.touched.insert(hash);
        }
        // A write under way replaces the file anyway.
        if !st.writing.contains_key(&hash) {
            spawn_unlink(self.path_of(hash));
        }
    }

    /// Looks up `hash` under `key`: the open file, the head block, where
    /// the body lies, after checking the header, the key, the head block's
    /// checksum and the file's length (and the body's checksum: see the
    /// [module docs](self)). A different key under the same hash is a miss
    /// (left stored); a torn, corrupt or stale object is a miss, and
    /// removed. Misses until the rebuild has read an object found at the
    /// start.
    pub async fn get(&self, hash: u64, key: &[u8]) -> io::Result<Option<Found>> {
        let slot = {
            let mut st = self.state.borrow_mut();
            if !st.index.touch(hash) {
                return Ok(None);
            }
            st.index.peek(hash).expect("held")
        };
        let file = match File::open(&self.path_of(hash)).await {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Unlinked behind the index (a removal racing a write).
                self.forget(hash);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let want = (slot.charge as usize).clamp(HEADER_LEN, FIRST_READ);
        let (mut buf, at_eof) = read_upto(&file, want, 0).await?;
        let header = match Header::decode(&buf) {
            Ok(h) => h,
            Err(Bad::Corrupt) => {
                self.discard(hash, "bad header");
                return Ok(None);
            }
            Err(Bad::Version) => {
                self.discard(hash, "another format version");
                return Ok(None);
            }
        };
        if header.generation != self.generation || header.hash != hash {
            self.discard(hash, "another generation or hash");
            return Ok(None);
        }
        let body_offset = header.body_offset();
        let file_len = header.file_len();
        let len = if at_eof {
            buf.len() as u64
        } else {
            file.len().await?
        };
        if len != file_len {
            self.discard(hash, "length differs from its header");
            return Ok(None);
        }
        if (buf.len() as u64) < body_offset {
            let have = buf.len();
            let rest = vec![0u8; body_offset as usize - have];
            let (r, rest) = file.read_exact_at(rest, have as u64).await;
            if let Err(e) = r {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    self.discard(hash, "shorter than its header says");
                    return Ok(None);
                }
                return Err(e);
            }
            buf.extend_from_slice(&rest);
        }
        let key_end = HEADER_LEN + header.key_len as usize;
        if &buf[HEADER_LEN..key_end] != key {
            return Ok(None);
        }
        let head_end = header.head_end() as usize;
        if crc32c(0, &buf[HEADER_LEN..head_end]) != header.meta_crc {
            self.discard(hash, "key or head checksum");
            return Ok(None);
        }
        let whole = buf.len() as u64 >= file_len;
        let buf = Bytes::from(buf);
        // Sliced when the body comes along too; else copied, so as not to
        // hold the first read's 64 KiB while the body is sent.
        let head = if whole {
            buf.slice(key_end..head_end)
        } else {
            Bytes::copy_from_slice(&buf[key_end..head_end])
        };
        let mut body = None;
        if whole {
            let b = buf.slice(body_offset as usize..file_len as usize);
            if crc32c(0, &b) != header.body_crc {
                self.discard(hash, "body checksum");
                return Ok(None);
            }
            body = Some(b);
        } else if !slot.verified {
            if body_crc(&file, body_offset, header.body_len).await? != header.body_crc {
                self.discard(hash, "body checksum");
                return Ok(None);
            }
            self.state.borrow_mut().index.set_verified(hash);
        }
        {
            let mut st = self.state.borrow_mut();
            // Removed while this read: not to be served any more.
            let Some(now) = st.index.peek(hash) else {
                return Ok(None);
            };
            if now.charge != charge_of(file_len) {
                st.index.recharge(hash, charge_of(file_len));
            }
        }
        Ok(Some(Found {
            file,
            head,
            body_offset,
            body_len: header.body_len,
            body,
        }))
    }

    /// Takes `hash` out of the index, its file already gone.
    fn forget(&self, hash: u64) {
        let mut st = self.state.borrow_mut();
        st.index.remove(hash);
        if st.rebuild != Rebuild::Done {
            st.touched.insert(hash);
        }
    }
}

/// Ends a write: forgets it, and unlinks its temp file if it never got
/// renamed (failed, cancelled, or the future dropped).
struct Writing<'a> {
    disk: &'a Disk,
    hash: u64,
    temp: Option<PathBuf>,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.disk.state.borrow_mut().writing.remove(&self.hash);
        if let Some(t) = self.temp.take() {
            spawn_unlink(t);
        }
    }
}

fn spawn_unlink(path: PathBuf) {
    ringside_runtime::task::spawn(async move {
        match fs::remove_file(&path).await {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "disk cache unlink failed")
            }
        }
    });
}

/// Reads up to `want` bytes at `pos`; whether the file ended before.
async fn read_upto(file: &File, want: usize, pos: u64) -> io::Result<(Vec<u8>, bool)> {
    let (r, mut buf) = file.read_at(vec![0u8; want], pos).await;
    let mut have = r?;
    // Short reads of a regular file are rare: only then read on.
    while have < want {
        if have == 0 {
            buf.truncate(0);
            return Ok((buf, true));
        }
        let (r, rest) = file
            .read_at(vec![0u8; want - have], pos + have as u64)
            .await;
        let n = match r {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            buf.truncate(have);
            return Ok((buf, true));
        }
        buf[have..have + n].copy_from_slice(&rest[..n]);
        have += n;
    }
    Ok((buf, false))
}

/// The CRC-32C of `len` bytes at `offset`; a file shorter is an error.
async fn body_crc(file: &File, offset: u64, len: u64) -> io::Result<u32> {
    let mut crc = 0;
    let mut pos = offset;
    let end = offset + len;
    let mut buf = Vec::new();
    while pos < end {
        let n = (end - pos).min(BODY_CHUNK as u64) as usize;
        buf.resize(n, 0);
        let (r, back) = file.read_exact_at(buf, pos).await;
        r?;
        crc = crc32c(crc, &back);
        buf = back;
        pos += n as u64;
    }
    Ok(crc)
}

#[cfg(test)]
#[path = "disk_tests.rs"]
mod tests;
