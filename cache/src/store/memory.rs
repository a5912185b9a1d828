//! The memory tier: one core's entries, bounded in bytes, evicted by S3-FIFO
//! (Yang et al., "FIFO queues are all you need for cache eviction",
//! SOSP'23).
//!
//! Most objects an edge sees are asked for once. S3-FIFO keeps them from
//! pushing out the ones asked for again with three FIFO queues:
//!
//! ```text
//!  insert ──► small ~10% ──► ┬─ hit there ───────► main ~90% ──► ┬─ freq 0: evicted
//!                            │                      ▲   ▲        │
//!                            │ not hit              │   └────────┘ freq > 0: again,
//!                            ▼                      │               freq - 1
//!             ghost (hashes only) ──► forgotten     │
//!                └── inserted again while in it ────┘
//! ```
//!
//! Each queue runs left to right: entries join at the tail, leave at the
//! head (the oldest end).
//!
//! - A new key enters the small queue. When it reaches the small queue's
//!   head, it moves to main (with its frequency reset) if it was hit while
//!   there, otherwise it is evicted and its hash goes to the ghost queue.
//!   One hit is enough (some versions of the paper ask for two): at an
//!   edge, a second request within the small queue's window is already a
//!   good sign the object is not a one-off.
//! - A key inserted again while its hash is still in the ghost was evicted
//!   too early: it goes straight to main.
//! - Main is a FIFO with reinsertion (CLOCK): at its head, an entry with
//!   frequency > 0 goes back in with one less; one with 0 is evicted.
//! - A hit only bumps the entry's frequency (capped at 3): no list moves on
//!   the read path.
//!
//! The small queue is evicted from while it holds at least its share of
//! the bytes, main otherwise, so a flood of one-off keys churns through the
//! small queue and the ghost and never reaches main.
//!
//! Keys are 64-bit hashes the caller computes: two of its keys may share
//! one. The caller keeps its full key inside the value and checks it on
//! every hit (a mismatch is a miss; inserting replaces the other key's
//! entry). The store is single-threaded: each core has its own, nothing is
//! locked.
//!
//! Memory stays bounded: entries are bounded by the byte capacity (each is
//! charged [`ENTRY_OVERHEAD`] besides its own bytes), the ghost holds only
//! hashes and at most as many as the larger queue holds entries, and
//! nothing is kept for a key once it has left the ghost.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use slab::Slab;

/// Bytes each entry is charged besides the caller's `bytes`: what the store's
/// own bookkeeping takes for it, on a 64-bit target. Its slab node is about
/// 40 (key, charge, two links, frequency and queue, the slab's tag), its map
/// slot about 20 (16 and a control byte, at 7/8 load), and the ghost slot it
/// may come to hold (the ghost keeps at most one per entry) about 40 (the
/// FIFO's 16 and the ghost map's 17, at 7/8 load): about 100, rounded up for
/// the slack that doubling vectors and tables leave.
pub const ENTRY_OVERHEAD: u64 = 128;

/// The highest frequency an entry counts: a main entry survives at most this
/// many passes of the queue's head without a hit.
const MAX_FREQ: u8 = 3;

/// The end of a list.
const NIL: u32 = u32::MAX;

/// The most entries the `u32` links can name, times their least charge.
const MAX_CAPACITY: u64 = (NIL as u64 - 1) * ENTRY_OVERHEAD;

/// A value [`Memory::insert`] would not store: it is larger than the small
/// queue (a tenth of the capacity), and would flush it. The value comes
/// back; the store is left as it was (an older value under the key stays).
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge<V>(pub V);

/// One core's memory tier: see the [module docs](self).
pub struct Memory<V> {
    capacity: u64,
    /// The charge above which an entry is refused: the small queue's share.
    small_target: u64,
    /// Charged bytes in both queues.
    bytes: u64,
    evictions: u64,
    nodes: Slab<Node<V>>,
    index: HashMap<u64, u32, Mix>,
    small: Queue,
    main: Queue,
    ghost: Ghost,
}

struct Node<V> {
    key: u64,
    /// `bytes` plus [`ENTRY_OVERHEAD`].
    charge: u64,
    /// Toward the queue's tail (newer).
    newer: u32,
    /// Toward the queue's head (older).
    older: u32,
    freq: u8,
    in_main: bool,
    value: V,
}

/// A doubly linked FIFO threaded through the slab, so that `remove` and
/// `retain` unlink from its middle in O(1). Entries enter at the tail and
/// leave at the head.
#[derive(Clone, Copy)]
struct Queue {
    head: u32,
    tail: u32,
    len: usize,
    bytes: u64,
}

/// Hashes of keys evicted from the small queue, oldest first. A hash taken
/// back out (its key came back) stays in the FIFO as a stale slot until it
/// reaches the front: the map's sequence number tells the two apart.
#[derive(Default)]
struct Ghost {
    fifo: VecDeque<(u64, u64)>,
    seq_of: HashMap<u64, u64, Mix>,
    seq: u64,
}

impl<V> Memory<V> {
    /// A store of `capacity` bytes, counting each entry's `bytes` plus
    /// [`ENTRY_OVERHEAD`]. Capacities beyond what `u32` links can index
    /// (hundreds of GiB) are cut to that.
    pub fn new(capacity: u64) -> Self {
        let capacity = capacity.min(MAX_CAPACITY);
        Self {
            capacity,
            // The paper's 10%.
            small_target: capacity / 10,
            bytes: 0,
            evictions: 0,
            nodes: Slab::new(),
            index: HashMap::default(),
            small: Queue::EMPTY,
            main: Queue::EMPTY,
            ghost: Ghost::default(),
        }
    }

    /// A hit: the value, marked as used. The caller checks its full key.
    pub fn get(&mut self, key: u64) -> Option<&V> {
        self.get_mut(key).map(|v| &*v)
    }

    /// A hit, as [`get`](Self::get), that may change the value in place
    /// (its charge stays; insert again to change that).
    pub fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        let at = *self.index.get(&key)?;
        let node = &mut self.nodes[at as usize];
        node.freq = (node.freq + 1).min(MAX_FREQ);
        Some(&mut node.value)
    }

    /// The value, not marked as used (for looking without keeping it).
    pub fn peek(&self, key: u64) -> Option<&V> {
        let at = *self.index.get(&key)?;
        Some(&self.nodes[at as usize].value)
    }

    /// Stores `value` under `key`, charged `bytes` plus [`ENTRY_OVERHEAD`],
    /// evicting until it fits. Returns the value it replaced, if any; the
    /// replacement keeps the old entry's queue and frequency, and enters it
    /// at the tail. A value charged more than a tenth of the capacity is
    /// refused and handed back in [`TooLarge`].
    pub fn insert(&mut self, key: u64, value: V, bytes: u64) -> Result<Option<V>, TooLarge<V>> {
        let charge = bytes.saturating_add(ENTRY_OVERHEAD);
        if charge > self.small_target {
            return Err(TooLarge(value));
        }
        let old = self.index.get(&key).copied().map(|at| self.unlink(at));
        let (in_main, freq) = match &old {
            Some(old) => (old.in_main, old.freq),
            // Evicted from small too early: it gets main's longer stay.
            None => (self.ghost.take(key), 0),
        };
        // The whole capacity is never short of one small-queue-sized entry,
        // so this ends at the latest with the store empty.
        while self.bytes + charge > self.capacity {
            self.evict();
        }
        let at = self.nodes.insert(Node {
            key,
            charge,
            newer: NIL,
            older: NIL,
            freq,
            in_main,
            value,
        });
        let at = u32::try_from(at).expect("MAX_CAPACITY bounds the entries below u32::MAX");
        self.index.insert(key, at);
        self.push(at);
        Ok(old.map(|n| n.value))
    }

    /// Takes the entry out (a purge or an invalidation: its key does not go
    /// to the ghost).
    pub fn remove(&mut self, key: u64) -> Option<V> {
        let at = self.index.remove(&key)?;
        Some(self.unlink(at).value)
    }

    /// Visits every entry, in no particular order; those `f` returns false
    /// for are removed (as by [`remove`](Self::remove)). Returns how many.
    /// It scans the whole store: for purges by tag or prefix, not requests.
    pub fn retain(&mut self, mut f: impl FnMut(u64, &mut V) -> bool) -> usize {
        let doomed: Vec<u32> = self
            .nodes
            .iter_mut()
            .filter_map(|(at, node)| (!f(node.key, &mut node.value)).then_some(at as u32))
            .collect();
        for &at in &doomed {
            let node = self.unlink(at);
            self.index.remove(&node.key);
        }
        doomed.len()
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Charged bytes in use: the entries' `bytes` plus their overhead.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Entries evicted to make room, ever (not those removed or replaced).
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Frees at least one entry: from the small queue while it holds its
    /// share (or main is empty), from main otherwise.
    fn evict(&mut self) {
        if self.small.len > 0 && (self.small.bytes >= self.small_target || self.main.len == 0) {
            while let Some(at) = self.pop(Which::Small) {
                let node = &mut self.nodes[at as usize];
                if node.freq > 0 {
                    // Hit while in small: promoted. Its hits there earned
                    // the move, not extra passes in main.
                    node.freq = 0;
                    node.in_main = true;
                    self.push(at);
                } else {
                    let key = node.key;
                    self.drop_evicted(at);
                    let bound = self.main.len.max(self.small.len);
                    self.ghost.push(key, bound);
                    return;
                }
            }
            // Everything in small was promoted: main gives the room.
        }
        while let Some(at) = self.pop(Which::Main) {
            let node = &mut self.nodes[at as usize];
            if node.freq > 0 {
                node.freq -= 1;
                self.push(at);
            } else {
                self.drop_evicted(at);
                return;
            }
        }
    }

    /// Removes an entry already popped off its queue (and the total), counting
    /// the eviction.
    fn drop_evicted(&mut self, at: u32) {
        let node = self.nodes.remove(at as usize);
        self.index.remove(&node.key);
        self.evictions += 1;
    }

    /// Unlinks an entry from its queue and the slab (the index is the
    /// caller's to update).
    fn unlink(&mut self, at: u32) -> Node<V> {
        let (older, newer, in_main) = {
            let n = &self.nodes[at as usize];
            (n.older, n.newer, n.in_main)
        };
        if older != NIL {
            self.nodes[older as usize].newer = newer;
        }
        if newer != NIL {
            self.nodes[newer as usize].older = older;
        }
        let node = self.nodes.remove(at as usize);
        let q = if in_main {
            &mut self.main
        } else {
            &mut self.small
        };
        if q.head == at {
            q.head = newer;
        }
        if q.tail == at {
            q.tail = older;
        }
        q.len -= 1;
        q.bytes -= node.charge;
        self.bytes -= node.charge;
        node
    }

    /// Appends a slab entry at the tail of the queue its `in_main` names.
    fn push(&mut self, at: u32) {
        let node = &mut self.nodes[at as usize];
        let (in_main, charge) = (node.in_main, node.charge);
        let q = if in_main {
            &mut self.main
        } else {
            &mut self.small
        };
        node.older = q.tail;
        node.newer = NIL;
        let old_tail = q.tail;
        q.tail = at;
        if q.head == NIL {
            q.head = at;
        }
        q.len += 1;
        q.bytes += charge;
        if old_tail != NIL {
            self.nodes[old_tail as usize].newer = at;
        }
        self.bytes += charge;
    }

    /// Takes the head (oldest) off a queue, leaving it in the slab; its
    /// charge leaves the queue and the total until it is pushed again.
    fn pop(&mut self, which: Which) -> Option<u32> {
        let q = match which {
            Which::Small => &mut self.small,
            Which::Main => &mut self.main,
        };
        let at = q.head;
        if at == NIL {
            return None;
        }
        let node = &mut self.nodes[at as usize];
        q.head = node.newer;
        if q.head == NIL {
            q.tail = NIL;
        }
        q.len -= 1;
        q.bytes -= node.charge;
        let newer = node.newer;
        node.newer = NIL;
        if newer != NIL {
            self.nodes[newer as usize].older = NIL;
        }
        self.bytes -= self.nodes[at as usize].charge;
        Some(at)
    }
}

#[derive(Clone, Copy)]
enum Which {
    Small,
    Main,
}

impl Queue {
    const EMPTY: Queue = Queue {
        head: NIL,
        tail: NIL,
        len: 0,
        bytes: 0,
    };
}

impl Ghost {
    /// Remembers `key`, forgetting the oldest beyond `bound` slots. The
    /// bound is the paper's (main's entry count) but at least the small
    /// queue's, so that a store still filling main, or one a flood has
    /// left with little in main, keeps a useful memory.
    fn push(&mut self, key: u64, bound: usize) {
        self.seq += 1;
        self.seq_of.insert(key, self.seq);
        self.fifo.push_back((key, self.seq));
        while self.fifo.len() > bound {
            let Some((old, seq)) = self.fifo.pop_front() else {
                break;
            };
            if self.seq_of.get(&old) == Some(&seq) {
                self.seq_of.remove(&old);
            }
        }
    }

    /// Whether `key` was remembered; it is forgotten either way.
    fn take(&mut self, key: u64) -> bool {
        self.seq_of.remove(&key).is_some()
    }
}

/// The hasher of the store's maps. Keys are already hashes, so one multiply
/// (Fibonacci hashing) and a rotation are enough: the table picks buckets
/// by the low bits and tags by the top seven, and both come out mixed even
/// for keys that are small counters, as in tests.
#[derive(Default, Clone, Copy)]
struct MixHasher(u64);

type Mix = BuildHasherDefault<MixHasher>;

impl Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; this keeps other input correct anyway.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(32)
    }
}

#[cfg(test)]
impl<V> Memory<V> {
    pub(crate) fn ghost_len(&self) -> usize {
        self.ghost.fifo.len()
    }

    pub(crate) fn in_main(&self, key: u64) -> Option<bool> {
        self.index
            .get(&key)
            .map(|&at| self.nodes[at as usize].in_main)
    }

    /// Walks both queues and checks every count against the structures.
    pub(crate) fn check(&self) {
        let mut seen = 0;
        for (q, main) in [(&self.small, false), (&self.main, true)] {
            let (mut at, mut prev, mut len, mut bytes) = (q.head, NIL, 0, 0);
            while at != NIL {
                let n = &self.nodes[at as usize];
                assert_eq!(n.in_main, main);
                assert_eq!(n.older, prev);
                assert_eq!(self.index[&n.key], at);
                assert!(n.freq <= MAX_FREQ);
                len += 1;
                bytes += n.charge;
                prev = at;
                at = n.newer;
            }
            assert_eq!(q.tail, prev);
            assert_eq!((q.len, q.bytes), (len, bytes));
            seen += len;
        }
        assert_eq!(seen, self.index.len());
        assert_eq!(seen, self.nodes.len());
        assert_eq!(self.small.bytes + self.main.bytes, self.bytes);
        assert!(self.bytes <= self.capacity);
        assert!(self.ghost.seq_of.len() <= self.ghost.fifo.len());
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
