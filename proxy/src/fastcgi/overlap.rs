//! What each process holds of a FastCGI server while two of them overlap
//! in a binary upgrade.
//!
//! A php-fpm pool serves as many connections as it has children, and a
//! process bounds its own connections by the capacity it learned
//! (`super::learn`). While an upgrade's old process drains and the new one
//! starts, each would take the whole capacity, and the surplus waits in
//! php-fpm's listen backlog. So each process publishes what it holds
//! (connections served and being opened) per server in a page of shared
//! memory, a memfd the old process hands the new one with its listeners
//! (`crate::upgrade`), and a process that opens counts what the others
//! hold. A process stopping for good needs none of it.
//!
//! The page has a slot per process (four overlap at most: the fifth does
//! without) and in it an entry per server (keyed by a hash of its
//! address). A slot whose process died (killed in the middle of its drain)
//! is skipped by the others, and reused by the next process to start.
//! Only connections opening and closing write here, and a request served
//! from the core's pool reads one word: its own entry's ask to release.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

const SLOTS: usize = 4;
const ENTRIES: usize = 63;

/// One process's counts for one server.
#[repr(C)]
pub struct Entry {
    /// A hash of the server's address; 0: free.
    key: AtomicU64,
    /// Connections served or being opened.
    held: AtomicU32,
    /// Connections another process asked this one to close, its own
    /// requests waiting for a child this one's connections hold.
    release: AtomicU32,
}

/// One process's part of the page.
#[repr(C, align(64))]
struct Slot {
    pid: AtomicU32,
    /// The sum of `held` over the entries: zero lets a reader skip them.
    total: AtomicU32,
    entries: [Entry; ENTRIES],
}

#[repr(C)]
struct Page {
    slots: [Slot; SLOTS],
}

struct Region {
    page: &'static Page,
    fd: OwnedFd,
    mine: usize,
}

/// The page the old process handed over, until this one first needs it.
static HANDED: Mutex<Option<OwnedFd>> = Mutex::new(None);
static REGION: OnceLock<Option<Region>> = OnceLock::new();

/// Takes the page a previous process handed over (see `crate::upgrade`).
pub fn hand_over_in(fd: OwnedFd) {
    *HANDED.lock().unwrap_or_else(|e| e.into_inner()) = Some(fd);
}

/// The page to hand to a new process, if this one has one.
pub fn to_hand() -> Option<RawFd> {
    REGION.get()?.as_ref().map(|r| r.fd.as_raw_fd())
}

fn region() -> Option<&'static Region> {
    REGION
        .get_or_init(|| {
            let handed = HANDED.lock().unwrap_or_else(|e| e.into_inner()).take();
            let made = handed.map_or_else(create, Ok).and_then(map);
            match made {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "FastCGI counts not shared with a later process");
                    None
                }
            }
        })
        .as_ref()
}

fn create() -> std::io::Result<OwnedFd> {
    // SAFETY: the name is a C string; the descriptor is owned at once.
    let fd = unsafe { libc::memfd_create(c"ringside-fastcgi".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor of ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sizing our own memfd.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), std::mem::size_of::<Page>() as libc::off_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Maps the page and claims a slot in it.
fn map(fd: OwnedFd) -> std::io::Result<Option<Region>> {
    let len = std::mem::size_of::<Page>();
    // SAFETY: a shared mapping of a memfd at least `len` long (ours, or
    // the old process's of the same layout), never unmapped: the page
    // lives as long as the process.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: page-aligned, zero-filled or written by this same layout;
    // every field is an atomic, valid at any bit pattern.
    let page: &'static Page = unsafe { &*(p as *const Page) };
    let me = std::process::id();
    for (i, s) in page.slots.iter().enumerate() {
        let pid = s.pid.load(Ordering::Acquire);
        if (pid == 0 || !alive(pid))
            && s.pid
                .compare_exchange(pid, me, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            for e in &s.entries {
                e.held.store(0, Ordering::Relaxed);
                e.release.store(0, Ordering::Relaxed);
                e.key.store(0, Ordering::Release);
            }
            s.total.store(0, Ordering::Release);
            return Ok(Some(Region { page, fd, mine: i }));
        }
    }
    Ok(None)
}

fn alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn hash(server: &str) -> u64 {
    // FNV-1a: stable across builds, which a std hasher's seed is not.
    let h = server.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h.max(1)
}

/// This process's entry for one server, and the way to the others'.
pub struct Share {
    key: u64,
    entry: &'static Entry,
    region: &'static Region,
}

impl Share {
    /// The entry for the server at `server`, where the page has room.
    pub fn of(server: &str) -> Option<Share> {
        let region = region()?;
        let key = hash(server);
        let slot = &region.page.slots[region.mine];
        for e in &slot.entries {
            let k = e.key.load(Ordering::Acquire);
            let taken = k == key
                || (k == 0
                    && match e
                        .key
                        .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(_) => true,
                        Err(now) => now == key,
                    });
            if taken {
                return Some(Share {
                    key,
                    entry: e,
                    region,
                });
            }
        }
        None
    }

    /// This process holds one connection more (`up`) or one less.
    pub fn count(&self, up: bool) {
        let slot = &self.region.page.slots[self.region.mine];
        if up {
            // SeqCst, as the others' counts are read after it (see
            // `Slots::give_back`).
            self.entry.held.fetch_add(1, Ordering::SeqCst);
            slot.total.fetch_add(1, Ordering::SeqCst);
        } else {
            let less = |n: u32| n.checked_sub(1);
            if self
                .entry
                .held
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, less)
                .is_ok()
            {
                let _ = slot
                    .total
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, less);
            }
        }
    }

    /// The other live processes' entries for this server.
    fn others(&self) -> impl Iterator<Item = &'static Entry> + '_ {
        let region = self.region;
        region
            .page
            .slots
            .iter()
            .enumerate()
            .filter(move |&(i, s)| i != region.mine && s.total.load(Ordering::SeqCst) > 0)
            .filter(|(_, s)| alive(s.pid.load(Ordering::Acquire)))
            .filter_map(move |(_, s)| {
                let key = self.key;
                s.entries
                    .iter()
                    .find(|e| e.key.load(Ordering::Acquire) == key)
            })
    }

    /// What the other processes hold of the server.
    pub fn held_elsewhere(&self) -> u32 {
        self.others().map(|e| e.held.load(Ordering::SeqCst)).sum()
    }

    /// Asks the process holding the most of the server to close one
    /// connection, unless an ask is pending already.
    pub fn ask_release(&self) {
        let most = self
            .others()
            .max_by_key(|e| e.held.load(Ordering::Acquire))
            .filter(|e| e.held.load(Ordering::Acquire) > 0);
        if let Some(e) = most {
            let _ = e
                .release
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Whether another process asked this one to close a connection;
    /// takes the ask.
    pub fn take_release(&self) -> bool {
        let r = &self.entry.release;
        r.load(Ordering::Relaxed) > 0
            && r.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
    }
}

/// Two processes' entries for `server` on a page of their own, as an
/// upgrade leaves them, for tests.
#[cfg(test)]
pub fn pair(server: &str) -> (Share, Share) {
    let fd = create().unwrap();
    let dup = fd.try_clone().unwrap();
    let a: &'static Region = Box::leak(Box::new(map(fd).unwrap().unwrap()));
    let b: &'static Region = Box::leak(Box::new(map(dup).unwrap().unwrap()));
    let share = |region: &'static Region| {
        let entry = &region.page.slots[region.mine].entries[0];
        let key = hash(server);
        entry.key.store(key, Ordering::Release);
        Share { key, entry, region }
    };
    (share(a), share(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_one_page_and_a_slot_a_cache_line_multiple() {
        assert_eq!(std::mem::size_of::<Page>(), 4096);
        assert_eq!(std::mem::size_of::<Slot>() % 64, 0);
    }

    #[test]
    fn hashes_are_stable_and_never_zero() {
        assert_eq!(hash("127.0.0.1:9000"), hash("127.0.0.1:9000"));
        assert_ne!(hash("127.0.0.1:9000"), hash("127.0.0.1:9001"));
        assert_ne!(hash(""), 0);
    }

    /// Two processes sharing one page, as an upgrade leaves them: each
    /// sees what the other holds, a dead one's counts are skipped, and an
    /// ask reaches the holder.
    #[test]
    fn processes_on_one_page_see_each_other() {
        let (sa, sb) = pair("s");
        // Both claimed by this one pid: distinct slots all the same.
        assert_ne!(sa.region.mine, sb.region.mine);
        sa.count(true);
        sa.count(true);
        sb.count(true);
        assert_eq!((sa.held_elsewhere(), sb.held_elsewhere()), (1, 2));
        sb.ask_release();
        assert!(sa.take_release());
        assert!(!sa.take_release(), "one ask, taken once");
        sa.count(false);
        sa.count(false);
        sa.count(false);
        assert_eq!(sb.held_elsewhere(), 0, "counts never go below zero");
        // A slot whose process is gone counts for nothing: a pid above
        // the kernel's highest (2^22).
        sa.count(true);
        let slot = &sa.region.page.slots[sa.region.mine];
        slot.pid.store(4_194_305, Ordering::Release);
        assert_eq!(sb.held_elsewhere(), 0);
    }
}
