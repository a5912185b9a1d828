//! The disk tier's index: which objects this core's directory holds, their
//! charge, and the order they leave in.
//!
//! Eviction is CLOCK (FIFO with a second chance): objects join the queue's
//! tail; at its head, one read since it last passed goes back to the tail
//! with its bit cleared, one not read leaves. A read only sets a bit: no
//! list moves on the read path. An object replaced or removed leaves a
//! stale slot in the queue (its stamp no longer matches), skipped when it
//! reaches the head and swept when stale slots outnumber live ones.
//!
//! Per object: a map slot (8-byte key, 16-byte [`Slot`], a control byte,
//! at 7/8 load: about 29 bytes) and a queue slot (16 bytes): under 50.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Bytes charged: the file's length rounded up to [`BLOCK`].
    pub charge: u64,
    /// Which queue slot is this object's.
    stamp: u32,
    /// Read since it last passed the queue's head.
    referenced: bool,
    /// Its body's checksum was checked in this run (written in this run,
    /// or read whole once since the start).
    pub verified: bool,
}

/// Files take whole blocks: each object is charged its length rounded up
/// to this, so that many small objects cannot overrun the bound.
pub const BLOCK: u64 = 4096;

pub fn charge_of(file_len: u64) -> u64 {
    file_len.div_ceil(BLOCK).max(1) * BLOCK
}

#[derive(Default)]
pub struct Index {
    map: HashMap<u64, Slot, Mix>,
    queue: VecDeque<(u64, u32)>,
    next_stamp: u32,
    bytes: u64,
}

impl Index {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn contains(&self, hash: u64) -> bool {
        self.map.contains_key(&hash)
    }

    pub fn peek(&self, hash: u64) -> Option<Slot> {
        self.map.get(&hash).copied()
    }

    /// Marks `hash` read (its second chance); whether it is held.
    pub fn touch(&mut self, hash: u64) -> bool {
        match self.map.get_mut(&hash) {
            Some(s) => {
                s.referenced = true;
                true
            }
            None => false,
        }
    }

    pub fn set_verified(&mut self, hash: u64) {
        if let Some(s) = self.map.get_mut(&hash) {
            s.verified = true;
        }
    }

    /// Sets `hash`'s charge (a file found to differ from what was noted).
    pub fn recharge(&mut self, hash: u64, charge: u64) {
        if let Some(s) = self.map.get_mut(&hash) {
            self.bytes = self.bytes - s.charge + charge;
            s.charge = charge;
        }
    }

    /// Adds or replaces `hash` at the queue's tail (the newest end).
    pub fn insert(&mut self, hash: u64, charge: u64, verified: bool) {
        let stamp = self.stamp();
        self.put(hash, charge, verified, stamp);
        self.queue.push_back((hash, stamp));
        self.sweep();
    }

    /// Adds `hash` at the queue's head (the oldest end) unless held: for
    /// objects found on disk at the start, older than any written since.
    pub fn insert_oldest(&mut self, hash: u64, charge: u64) -> bool {
        if self.map.contains_key(&hash) {
            return false;
        }
        let stamp = self.stamp();
        self.put(hash, charge, false, stamp);
        self.queue.push_front((hash, stamp));
        true
    }

    fn put(&mut self, hash: u64, charge: u64, verified: bool, stamp: u32) {
        let slot = Slot {
            charge,
            stamp,
            referenced: false,
            verified,
        };
        if let Some(old) = self.map.insert(hash, slot) {
            self.bytes -= old.charge;
        }
        self.bytes += charge;
    }

    fn stamp(&mut self) -> u32 {
        self.next_stamp = self.next_stamp.wrapping_add(1);
        self.next_stamp
    }

    pub fn remove(&mut self, hash: u64) -> Option<Slot> {
        let s = self.map.remove(&hash)?;
        self.bytes -= s.charge;
        self.sweep();
        Some(s)
    }

    /// Takes the next object to evict out of the index: the queue's oldest
    /// not read since it last passed the head.
    pub fn evict(&mut self) -> Option<(u64, Slot)> {
        while let Some((hash, stamp)) = self.queue.pop_front() {
            let Some(s) = self.map.get_mut(&hash) else {
                continue;
            };
            if s.stamp != stamp {
                continue;
            }
            if s.referenced {
                s.referenced = false;
                self.queue.push_back((hash, stamp));
                continue;
            }
            let s = self.map.remove(&hash).expect("held");
            self.bytes -= s.charge;
            return Some((hash, s));
        }
        None
    }

    /// Drops stale queue slots once they outnumber the live ones.
    fn sweep(&mut self) {
        if self.queue.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.queue
                .retain(|(h, st)| map.get(h).is_some_and(|s| s.stamp == *st));
        }
    }
}

/// The keys are already hashes: fold the high half into the low one, which
/// the map's buckets take, and leave the rest.
#[derive(Default, Clone, Copy)]
pub struct MixHasher(u64);

type Mix = BuildHasherDefault<MixHasher>;

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_gives_a_read_object_a_second_chance() {
        let mut ix = Index::default();
        for h in 1..=3 {
            ix.insert(h, BLOCK, true);
        }
        assert!(ix.touch(1));
        assert_eq!(ix.evict().map(|e| e.0), Some(2));
        assert_eq!(ix.evict().map(|e| e.0), Some(3));
        assert_eq!(ix.evict().map(|e| e.0), Some(1));
        assert_eq!(ix.evict().map(|e| e.0), None);
        assert_eq!(ix.bytes(), 0);
    }

    #[test]
    fn replaced_and_removed_leave_no_live_slot_behind() {
        let mut ix = Index::default();
        ix.insert(1, BLOCK, true);
        ix.insert(2, BLOCK, true);
        ix.insert(1, 3 * BLOCK, true);
        assert_eq!(ix.bytes(), 4 * BLOCK);
        assert!(ix.remove(2).is_some());
        assert_eq!(ix.evict().map(|e| (e.0, e.1.charge)), Some((1, 3 * BLOCK)));
        assert_eq!(ix.evict().map(|e| e.0), None);
        for i in 0..10_000 {
            ix.insert(i % 3, BLOCK, true);
        }
        assert!(ix.queue.len() <= 2 * 3 + 65);
        assert_eq!(ix.bytes(), 3 * BLOCK);
    }

    #[test]
    fn found_at_start_go_first_and_never_replace() {
        let mut ix = Index::default();
        ix.insert(1, BLOCK, true);
        assert!(ix.insert_oldest(2, BLOCK));
        assert!(!ix.insert_oldest(1, 9 * BLOCK));
        assert_eq!(ix.peek(1).map(|s| s.charge), Some(BLOCK));
        assert!(!ix.peek(2).unwrap().verified);
        assert_eq!(ix.evict().map(|e| e.0), Some(2));
        assert_eq!(charge_of(0), BLOCK);
        assert_eq!(charge_of(4097), 2 * BLOCK);
    }
}
