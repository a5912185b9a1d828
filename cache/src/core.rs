//! One core's cache for one `[cache.NAME]`: its store, the fills under
//! way (so that concurrent misses for a key wait for one fetch), the keys
//! whose responses were not storable (hit-for-miss), and its counters.
//! Nothing here is shared with another core, so nothing locks.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use ringside_http::capture::Fields;

use crate::entry::{Entry, Variant};
use crate::fill::Fill;
use crate::key::Key;
use crate::policy::{vary, Limits};
use crate::store::memory::Memory;
use crate::Settings;

/// Keys remembered as not storable, at most; past it the oldest half is
/// forgotten (they are fetched collapsed once more, and remembered again).
const PASSES_MAX: usize = 16_384;

pub struct CoreCache {
    pub settings: Settings,
    pub limits: Limits,
    store: RefCell<Memory<Entry>>,
    fills: RefCell<HashMap<u64, Rc<Fill>>>,
    /// Key hash → until when (unix seconds) it is fetched uncollapsed.
    passes: RefCell<HashMap<u64, u64>>,
    pub stats: Arc<Stats>,
    /// The disk tier, where the cache has one (see [`crate::on_disk`]).
    pub(crate) disk: Option<crate::on_disk::Tier>,
}

/// Counters of one core's cache, for `/metrics`: written by the core
/// alone (a load and a store, no read-modify-write), read by the metrics
/// endpoint's thread.
#[derive(Debug, Default)]
pub struct Stats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub stale: AtomicU64,
    pub revalidated: AtomicU64,
    pub collapsed: AtomicU64,
    pub stored: AtomicU64,
    pub passes: AtomicU64,
    pub purged: AtomicU64,
    pub evictions: AtomicU64,
    /// Keys brought back from the disk tier into memory.
    pub from_disk: AtomicU64,
    /// Gauges: bytes charged and entries in the memory tier, and in the
    /// disk tier.
    pub bytes: AtomicU64,
    pub entries: AtomicU64,
    pub disk_bytes: AtomicU64,
    pub disk_entries: AtomicU64,
}

/// Adds one to a counter only this core writes.
pub fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed) + 1, Relaxed);
}

impl CoreCache {
    /// `stats`: this core's counters of the cache, kept by the metrics.
    /// `worker`: this core's index, which names its disk tier directory.
    pub fn new(settings: Settings, stats: Arc<Stats>, worker: usize) -> CoreCache {
        let limits = Limits {
            heuristic_percent: settings.heuristic_percent,
            heuristic_max: settings.heuristic_max.as_secs(),
            stale_while_revalidate_max: settings.stale_while_revalidate_max.as_secs(),
            stale_if_error_max: settings.stale_if_error_max.as_secs(),
        };
        let disk = crate::on_disk::Tier::open(&settings, worker);
        CoreCache {
            disk,
            store: RefCell::new(Memory::new(settings.memory)),
            settings,
            limits,
            fills: RefCell::default(),
            passes: RefCell::default(),
            stats,
        }
    }

    /// The stored variant of `key` whose Vary matches the request.
    pub fn lookup<'h>(
        &self,
        key: &Key,
        request: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
    ) -> Option<Rc<Variant>> {
        let mut store = self.store.borrow_mut();
        let e = store.get(key.hash)?;
        if e.key[..] != key.bytes[..] {
            return None;
        }
        e.variants
            .iter()
            .find(|v| vary::secondary(&v.vary, request.clone()) == v.secondary)
            .cloned()
    }

    /// Whether the key has anything stored (a miss on it is a Vary miss).
    pub fn has(&self, key: &Key) -> bool {
        let store = self.store.borrow();
        store
            .peek(key.hash)
            .is_some_and(|e| e.key[..] == key.bytes[..])
    }

    /// Stores `v` under `key`, in place of the variant with the same
    /// secondary key, and writes it through to the disk tier.
    pub fn store(self: &Rc<Self>, key: &Key, v: Variant) {
        let (v, stored) = self.keep_in_memory(key, v);
        if stored {
            bump(&self.stats.stored);
            self.write_through(key, &v);
        }
    }

    /// Puts `v` in the memory tier; whether it fitted.
    pub(crate) fn keep_in_memory(&self, key: &Key, v: Variant) -> (Rc<Variant>, bool) {
        let mut store = self.store.borrow_mut();
        let mut entry = match store.remove(key.hash) {
            Some(e) if e.key[..] == key.bytes[..] => e,
            _ => Entry {
                key: key.bytes.clone().into_boxed_slice(),
                variants: Vec::new(),
            },
        };
        entry
            .variants
            .retain(|o| !(o.secondary == v.secondary && o.vary == v.vary));
        let v = Rc::new(v);
        entry.variants.insert(0, v.clone());
        // A key that varies on what every client sends differently is
        // held to a few variants.
        entry.variants.truncate(8);
        let w = entry.weight();
        let fitted = store.insert(key.hash, entry, w).is_ok();
        self.gauges(&store);
        (v, fitted)
    }

    /// Puts `new` in the place of `old` in `key`'s entry, if `old` is
    /// still there.
    pub(crate) fn replace(&self, key: &Key, old: &Rc<Variant>, new: Variant) {
        let mut store = self.store.borrow_mut();
        let mut copy = match store.peek(key.hash) {
            Some(e)
                if e.key[..] == key.bytes[..] && e.variants.iter().any(|v| Rc::ptr_eq(v, old)) =>
            {
                Entry {
                    key: e.key.clone(),
                    variants: e.variants.clone(),
                }
            }
            _ => return,
        };
        for v in &mut copy.variants {
            if Rc::ptr_eq(v, old) {
                *v = Rc::new(new);
                break;
            }
        }
        let w = copy.weight();
        let _ = store.insert(key.hash, copy, w);
        self.gauges(&store);
    }

    /// Charges `key`'s entry again for what it grew by (a compressed
    /// copy), in its place in the store.
    pub fn recharge(&self, key: &Key) {
        let mut store = self.store.borrow_mut();
        let copy = match store.peek(key.hash) {
            Some(e) if e.key[..] == key.bytes[..] => Entry {
                key: e.key.clone(),
                variants: e.variants.clone(),
            },
            _ => return,
        };
        let w = copy.weight();
        let _ = store.insert(key.hash, copy, w);
        self.gauges(&store);
    }

    /// Drops what is stored under `key`.
    pub fn invalidate(&self, key: &Key) -> bool {
        let mut store = self.store.borrow_mut();
        let gone = match store.peek(key.hash) {
            Some(e) if e.key[..] == key.bytes[..] => store.remove(key.hash).is_some(),
            _ => false,
        };
        self.gauges(&store);
        if let Some(t) = &self.disk {
            t.disk.remove(key.hash);
        }
        gone
    }

    /// Applies a purge order here: entries in memory at once, the disk
    /// tier's file of a URL with it, and an order by prefix or tag noted
    /// for the objects only on disk. How many entries it took in memory.
    pub fn purge_order(&self, order: &crate::purge::Order, now: u64) -> usize {
        let n = self.purge(order.soft, |e| {
            e.variants.iter().any(|v| order.matches(&e.key, &v.tags))
        });
        if let Some(t) = &self.disk {
            match &order.target {
                crate::purge::Target::Key(k) => t.disk.remove(Key::from_bytes(k.clone()).hash),
                _ => t.note(now, order),
            }
        }
        n
    }

    /// Purges the entries `pick` selects; soft: marked stale instead.
    /// Returns how many.
    pub fn purge(&self, soft: bool, mut pick: impl FnMut(&Entry) -> bool) -> usize {
        let mut n = 0;
        let removed = self.store.borrow_mut().retain(|_, e| {
            if !pick(e) {
                return true;
            }
            n += 1;
            if soft {
                e.variants.iter().for_each(|v| v.soft_purged.set(true));
            }
            soft
        });
        let s = &self.stats.purged;
        s.store(s.load(Relaxed) + n as u64, Relaxed);
        self.gauges(&self.store.borrow());
        removed.max(n)
    }

    /// The fetch under way for `key`, if one is.
    pub fn fill_of(&self, key: &Key) -> Option<Rc<Fill>> {
        self.fills.borrow().get(&key.hash).cloned()
    }

    /// Marks a fetch of `key` under way until the guard drops;
    /// `request`: the fetching request's fields.
    pub fn begin_fill(self: &Rc<Self>, key: &Key, request: Fields) -> Option<FillGuard> {
        let mut fills = self.fills.borrow_mut();
        if fills.contains_key(&key.hash) {
            return None;
        }
        let fill = Rc::new(Fill::new(request));
        fills.insert(key.hash, fill.clone());
        Some(FillGuard {
            cache: self.clone(),
            hash: key.hash,
            fill,
        })
    }

    /// Whether `key` is fetched without collapsing now (hit-for-miss).
    pub fn is_pass(&self, key: &Key, now: u64) -> bool {
        self.passes
            .borrow()
            .get(&key.hash)
            .is_some_and(|&until| until > now)
    }

    pub fn note_pass(&self, key: &Key, now: u64) {
        let mut p = self.passes.borrow_mut();
        if p.len() >= PASSES_MAX {
            p.retain(|_, until| *until > now);
            if p.len() >= PASSES_MAX {
                p.clear();
            }
        }
        p.insert(key.hash, now + self.settings.hit_for_miss.as_secs());
        bump(&self.stats.passes);
    }

    /// Brings the gauges up to date (after the disk tier's index was read).
    pub(crate) fn refresh_gauges(&self) {
        self.gauges(&self.store.borrow());
    }

    pub(crate) fn gauges(&self, store: &Memory<Entry>) {
        self.stats.bytes.store(store.bytes(), Relaxed);
        self.stats.entries.store(store.len() as u64, Relaxed);
        self.stats.evictions.store(store.evictions(), Relaxed);
        if let Some(t) = &self.disk {
            self.stats.disk_bytes.store(t.disk.bytes(), Relaxed);
            self.stats.disk_entries.store(t.disk.len() as u64, Relaxed);
        }
    }

    /// Bytes the memory tier holds, entries, and evictions so far.
    pub fn usage(&self) -> (u64, usize, u64) {
        let s = self.store.borrow();
        (s.bytes(), s.len(), s.evictions())
    }
}

/// A fill under way; its end (stored or not) wakes the requests that
/// waited for it. Dropped before [`Fill::finish`] said it came whole, it
/// failed.
pub struct FillGuard {
    cache: Rc<CoreCache>,
    hash: u64,
    pub fill: Rc<Fill>,
}

impl Drop for FillGuard {
    fn drop(&mut self) {
        self.fill.finish(false);
        let mut fills = self.cache.fills.borrow_mut();
        if fills
            .get(&self.hash)
            .is_some_and(|f| Rc::ptr_eq(f, &self.fill))
        {
            fills.remove(&self.hash);
        }
    }
}
