//! ringside: a space's packets sent and not yet acknowledged or lost, by
//! number.
//!
//! Packet numbers rise one at a time (a skipped one now and then), and
//! packets mostly leave from the front, acknowledged in order; so a ring
//! of slots from the oldest packet still tracked does what a `BTreeMap`
//! did, without a node search on each insert and removal (those were
//! about 16% of the server's instructions sending a file over HTTP/3,
//! callgrind). A slot of a packet gone while older ones remain is empty
//! until the front reaches it.

use std::collections::VecDeque;
use std::ops::{Bound, Index, RangeBounds};

use super::spaces::SentPacket;

#[derive(Debug, Default)]
pub(super) struct SentPackets {
    /// The number of the packet in the first slot.
    base: u64,
    slots: VecDeque<Option<SentPacket>>,
    len: usize,
}

impl SentPackets {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Tracks `packet`. Numbers come rising; one at or below a number
    /// tracked still takes its slot (never done, but kept correct).
    pub(super) fn insert(&mut self, number: u64, packet: SentPacket) {
        if self.slots.is_empty() {
            self.base = number;
        }
        while number < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let at = (number - self.base) as usize;
        while self.slots.len() <= at {
            self.slots.push_back(None);
        }
        if self.slots[at].replace(packet).is_none() {
            self.len += 1;
        }
    }

    fn slot(&self, number: u64) -> Option<usize> {
        let at = usize::try_from(number.checked_sub(self.base)?).ok()?;
        (at < self.slots.len()).then_some(at)
    }

    pub(super) fn get(&self, number: &u64) -> Option<&SentPacket> {
        self.slots[self.slot(*number)?].as_ref()
    }

    pub(super) fn remove(&mut self, number: &u64) -> Option<SentPacket> {
        let at = self.slot(*number)?;
        let packet = self.slots[at].take()?;
        self.len -= 1;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        while let Some(None) = self.slots.back() {
            self.slots.pop_back();
        }
        Some(packet)
    }

    /// The packets numbered within `range`, in order, with their numbers.
    pub(super) fn range(
        &self,
        range: impl RangeBounds<u64>,
    ) -> impl Iterator<Item = (u64, &SentPacket)> + '_ {
        let end = self.base + self.slots.len() as u64;
        let from = match range.start_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&n) => n.saturating_add(1),
            Bound::Unbounded => 0,
        }
        .clamp(self.base, end);
        let to = match range.end_bound() {
            Bound::Included(&n) => n.saturating_add(1),
            Bound::Excluded(&n) => n,
            Bound::Unbounded => end,
        }
        .clamp(from, end);
        let skip = (from - self.base) as usize;
        let take = (to - from) as usize;
        self.slots
            .iter()
            .skip(skip)
            .take(take)
            .zip(from..)
            .filter_map(|(p, n)| Some((n, p.as_ref()?)))
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &SentPacket> + '_ {
        self.slots.iter().flatten()
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut SentPacket> + '_ {
        self.slots.iter_mut().flatten()
    }

    pub(super) fn into_values(self) -> impl Iterator<Item = SentPacket> {
        self.slots.into_iter().flatten()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

impl Index<&u64> for SentPackets {
    type Output = SentPacket;
    fn index(&self, number: &u64) -> &SentPacket {
        self.get(number).expect("packet tracked")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn packet(size: u16) -> SentPacket {
        SentPacket {
            path_generation: 0,
            time_sent: Instant::now(),
            size,
            ack_eliciting: true,
            largest_acked: None,
            retransmits: Default::default(),
            stream_frames: Default::default(),
        }
    }

    fn numbers(s: &SentPackets, r: impl RangeBounds<u64>) -> Vec<u64> {
        s.range(r).map(|(n, _)| n).collect()
    }

    #[test]
    fn it_keeps_what_a_map_by_number_would() {
        let mut s = SentPackets::new();
        // 11 skipped, as a sender skips a number now and then.
        for n in [10, 12, 13, 14, 15] {
            s.insert(n, packet(n as u16));
        }
        assert_eq!(s.len(), 5);
        assert_eq!(numbers(&s, ..), [10, 12, 13, 14, 15]);
        assert_eq!(numbers(&s, 11..14), [12, 13]);
        assert_eq!(numbers(&s, 0..=12), [10, 12]);
        assert_eq!(numbers(&s, (Bound::Excluded(13), Bound::Unbounded)), [14, 15]);
        assert_eq!(numbers(&s, 16..100), Vec::<u64>::new());
        assert!(s.get(&11).is_none() && s.get(&9).is_none() && s.get(&16).is_none());
        assert_eq!(s[&13].size, 13);
        // Out of order: the middle, then the front (the ring moves on past
        // the gap), then the back.
        assert_eq!(s.remove(&13).unwrap().size, 13);
        assert!(s.remove(&13).is_none());
        assert_eq!(s.remove(&10).unwrap().size, 10);
        assert_eq!(numbers(&s, ..), [12, 14, 15]);
        assert_eq!(s.remove(&15).unwrap().size, 15);
        assert_eq!(s.values().map(|p| p.size).collect::<Vec<_>>(), [12, 14]);
        s.insert(16, packet(16));
        assert_eq!(numbers(&s, 13..), [14, 16]);
        for p in s.values_mut() {
            p.size += 100;
        }
        assert_eq!(s.len(), 3);
        let left: Vec<u16> = std::mem::take(&mut s).into_values().map(|p| p.size).collect();
        assert_eq!(left, [112, 114, 116]);
        // Emptied, it starts again wherever the next number is.
        s.insert(1000, packet(1));
        assert_eq!(numbers(&s, ..), [1000]);
        s.insert(998, packet(2));
        assert_eq!(numbers(&s, ..), [998, 1000]);
    }
}
