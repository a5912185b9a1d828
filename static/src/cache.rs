//! This core's cache of files: small ones with their bytes, larger ones as
//! an open descriptor with their metadata (as lighttpd's stat cache and
//! nginx's open_file_cache keep them), so that a hit opens and stats
//! nothing. Bounded by bytes and by open descriptors, least recently used
//! out first, and revalidated with a stat once an entry is older than the
//! revalidation interval, so a file changed on disk is served fresh.
//!
//! Entries live in a slab linked into an LRU list by index; the map from key
//! to slot hashes with FNV-1a (keys are short paths, and the table is private
//! to one core, so a keyed hash buys nothing). A hit is a hash, a probe and
//! two index swaps: no allocation, no lock.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use ringside_http::semantics::conditional::ETag;

/// What the response needs to know about a file.
#[derive(Clone)]
pub struct Meta {
    pub len: u64,
    pub ino: u64,
    pub mtime_ns: i128,
    pub etag: ETag,
    pub last_modified: [u8; 29],
    pub mtime: u64,
}

impl Meta {
    pub fn of(st: &std::fs::Metadata) -> Meta {
        use std::os::unix::fs::MetadataExt;
        let mtime_ns = i128::from(st.mtime()) * 1_000_000_000 + i128::from(st.mtime_nsec());
        let mtime = st.mtime().max(0) as u64;
        let mut last_modified = [0u8; 29];
        ringside_http::date::format_imf_fixdate(mtime, &mut last_modified);
        Meta {
            len: st.len(),
            ino: st.ino(),
            mtime_ns,
            etag: ETag::new(st.ino(), st.len(), mtime_ns),
            last_modified,
            mtime,
        }
    }

    /// Whether the file on disk is still the one this describes.
    pub fn same_file(&self, st: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        let mtime_ns = i128::from(st.mtime()) * 1_000_000_000 + i128::from(st.mtime_nsec());
        self.len == st.len() && self.ino == st.ino() && self.mtime_ns == mtime_ns
    }
}

/// A cached file.
pub struct Entry {
    pub meta: Meta,
    /// The whole file, for a small one; empty when `file` is set.
    pub body: Bytes,
    /// The open file, for one too large to hold in memory.
    pub file: Option<Rc<std::fs::File>>,
    pub ctype: Rc<str>,
    /// Precompressed siblings found on disk, as a bit per `Coding` index.
    pub variants: u8,
    checked: Instant,
    key: Box<[u8]>,
    prev: usize,
    next: usize,
}

impl Entry {
    pub fn new(meta: Meta, body: Bytes, ctype: Rc<str>, variants: u8, now: Instant) -> Entry {
        Entry {
            meta,
            body,
            file: None,
            ctype,
            variants,
            checked: now,
            key: Box::default(),
            prev: NIL,
            next: NIL,
        }
    }

    /// An entry for a file sent from its descriptor.
    pub fn open(
        meta: Meta,
        file: Rc<std::fs::File>,
        ctype: Rc<str>,
        variants: u8,
        now: Instant,
    ) -> Entry {
        let mut e = Entry::new(meta, Bytes::new(), ctype, variants, now);
        e.file = Some(file);
        e
    }
}

const NIL: usize = usize::MAX;

#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

pub enum Lookup {
    /// Present and checked within the interval.
    Fresh(usize),
    /// Present, but due for a stat.
    Stale(usize),
    Miss,
}

pub struct Cache {
    map: HashMap<Box<[u8]>, usize, BuildHasherDefault<Fnv>>,
    slab: slab::Slab<Entry>,
    head: usize,
    tail: usize,
    bytes: u64,
    /// Entries holding a descriptor.
    open: usize,
    pub max_bytes: u64,
    pub max_file: u64,
    pub max_open: usize,
    pub revalidate: Duration,
}

impl Drop for Cache {
    // A reload's old cache goes when its last request ends, and its
    // descriptors with it.
    fn drop(&mut self) {
        ringside_runtime::stats::cached_files(-(self.open as i64));
    }
}

impl Cache {
    pub fn new(max_bytes: u64, max_file: u64, max_open: usize, revalidate: Duration) -> Cache {
        Cache {
            map: HashMap::default(),
            slab: slab::Slab::new(),
            head: NIL,
            tail: NIL,
            bytes: 0,
            open: 0,
            max_bytes,
            max_file,
            max_open,
            revalidate,
        }
    }

    pub fn lookup(&mut self, key: &[u8], now: Instant) -> Lookup {
        let Some(&i) = self.map.get(key) else {
            return Lookup::Miss;
        };
        self.touch(i);
        if now.duration_since(self.slab[i].checked) > self.revalidate {
            Lookup::Stale(i)
        } else {
            Lookup::Fresh(i)
        }
    }

    pub fn get(&self, i: usize) -> &Entry {
        &self.slab[i]
    }

    /// The stat showed the file unchanged: fresh for another interval.
    pub fn confirm(&mut self, i: usize, now: Instant) {
        self.slab[i].checked = now;
    }

    pub fn remove(&mut self, i: usize) {
        self.unlink(i);
        let e = self.slab.remove(i);
        self.bytes -= cost(&e);
        if e.file.is_some() {
            self.open -= 1;
            ringside_runtime::stats::cached_files(-1);
        }
        self.map.remove(&e.key);
    }

    /// Caches `e` under `key`, first evicting the least recently used
    /// entries until it fits: by bytes, and for a descriptor, the least
    /// recently used descriptor while `max_open` are held. Bodies larger
    /// than `max_file` are not cached, nor descriptors when `max_open` is 0.
    pub fn insert(&mut self, key: &[u8], mut e: Entry) -> Option<usize> {
        if e.body.len() as u64 > self.max_file
            || cost(&e) > self.max_bytes
            || (e.file.is_some() && self.max_open == 0)
        {
            return None;
        }
        if let Some(&old) = self.map.get(key) {
            self.remove(old);
        }
        if e.file.is_some() {
            while self.open >= self.max_open {
                self.remove(self.oldest_open());
            }
        }
        while self.bytes + cost(&e) > self.max_bytes && self.tail != NIL {
            self.remove(self.tail);
        }
        e.key = key.into();
        self.bytes += cost(&e);
        if e.file.is_some() {
            self.open += 1;
            ringside_runtime::stats::cached_files(1);
        }
        let i = self.slab.insert(e);
        self.map.insert(key.into(), i);
        self.push_front(i);
        Some(i)
    }

    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// The least recently used entry that holds a descriptor; only called
    /// while some do. A walk from the tail, on a miss only.
    fn oldest_open(&self) -> usize {
        let mut i = self.tail;
        while self.slab[i].file.is_none() {
            i = self.slab[i].prev;
        }
        i
    }

    fn touch(&mut self, i: usize) {
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
    }

    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.slab[i].prev, self.slab[i].next);
        if p != NIL {
            self.slab[p].next = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.slab[n].prev = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, i: usize) {
        self.slab[i].prev = NIL;
        self.slab[i].next = self.head;
        if self.head != NIL {
            self.slab[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }
}

/// Bytes an entry is charged: its body and key, plus a fixed overhead.
fn cost(e: &Entry) -> u64 {
    e.body.len() as u64 + e.key.len() as u64 + 256
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize, now: Instant) -> Entry {
        let st = std::fs::metadata("/").unwrap();
        Entry::new(
            Meta::of(&st),
            Bytes::from(vec![b'x'; n]),
            "text/plain".into(),
            0,
            now,
        )
    }

    #[test]
    fn evicts_least_recently_used_by_bytes() {
        let now = ringside_runtime::clock::now();
        let mut c = Cache::new(3 * (1000 + 256 + 1), 2000, 0, Duration::from_secs(1));
        c.insert(b"a", entry(1000, now)).unwrap();
        c.insert(b"b", entry(1000, now)).unwrap();
        c.insert(b"c", entry(1000, now)).unwrap();
        assert!(matches!(c.lookup(b"a", now), Lookup::Fresh(_)));
        c.insert(b"d", entry(1000, now)).unwrap();
        // b was the least recently used, not a.
        assert!(matches!(c.lookup(b"b", now), Lookup::Miss));
        for k in [b"a", b"c", b"d"] {
            assert!(matches!(c.lookup(k, now), Lookup::Fresh(_)));
        }
        assert!(c.bytes() <= c.max_bytes);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn too_large_is_not_cached_and_staleness_follows_the_interval() {
        let now = ringside_runtime::clock::now();
        let mut c = Cache::new(1 << 20, 100, 0, Duration::from_millis(500));
        assert!(c.insert(b"big", entry(101, now)).is_none());
        let i = c.insert(b"small", entry(10, now)).unwrap();
        assert!(matches!(
            c.lookup(b"small", now + Duration::from_millis(400)),
            Lookup::Fresh(_)
        ));
        assert!(matches!(
            c.lookup(b"small", now + Duration::from_millis(600)),
            Lookup::Stale(_)
        ));
        c.confirm(i, now + Duration::from_millis(600));
        assert!(matches!(
            c.lookup(b"small", now + Duration::from_millis(700)),
            Lookup::Fresh(_)
        ));
        c.remove(i);
        assert!(matches!(c.lookup(b"small", now), Lookup::Miss));
        assert_eq!(c.bytes(), 0);
    }

    #[test]
    fn replacing_a_key_keeps_accounting_right() {
        let now = ringside_runtime::clock::now();
        let mut c = Cache::new(1 << 20, 1 << 20, 0, Duration::from_secs(1));
        c.insert(b"k", entry(10, now)).unwrap();
        c.insert(b"k", entry(20, now)).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c.bytes(), 20 + 1 + 256);
    }

    fn open_entry(now: Instant) -> Entry {
        let st = std::fs::metadata("/").unwrap();
        let file = Rc::new(std::fs::File::open("/").unwrap());
        Entry::open(Meta::of(&st), file, "text/plain".into(), 0, now)
    }

    #[test]
    fn descriptors_are_bounded_apart_from_bytes() {
        let now = ringside_runtime::clock::now();
        let mut c = Cache::new(1 << 20, 100, 2, Duration::from_secs(1));
        c.insert(b"f1", open_entry(now)).unwrap();
        c.insert(b"small", entry(10, now)).unwrap();
        c.insert(b"f2", open_entry(now)).unwrap();
        assert!(matches!(c.lookup(b"f1", now), Lookup::Fresh(_)));
        c.insert(b"f3", open_entry(now)).unwrap();
        // f1 was used after f2, so f2 goes; the small entry, used before
        // both, stays: only descriptors count against max_open.
        assert!(matches!(c.lookup(b"f2", now), Lookup::Miss));
        for k in [&b"f1"[..], b"f3", b"small"] {
            assert!(matches!(c.lookup(k, now), Lookup::Fresh(_)));
        }
        assert_eq!(c.open, 2);
        let i = match c.lookup(b"f3", now) {
            Lookup::Fresh(i) => i,
            _ => unreachable!(),
        };
        c.remove(i);
        assert_eq!(c.open, 1);
        // Replacing a descriptor entry by a small one gives the slot back.
        c.insert(b"f1", entry(10, now)).unwrap();
        assert_eq!((c.open, c.len()), (0, 2));
    }

    #[test]
    fn no_descriptors_when_max_open_is_zero() {
        let now = ringside_runtime::clock::now();
        let mut c = Cache::new(1 << 20, 100, 0, Duration::from_secs(1));
        assert!(c.insert(b"f", open_entry(now)).is_none());
        assert_eq!((c.open, c.len()), (0, 0));
    }
}
