//! Which of the last 256 streams a client opened were reset by this side:
//! a bitmap relative to the newest stream id, 36 bytes whatever the
//! number. DATA a client sent before it saw our RST_STREAM must be
//! ignored (RFC 9113 §5.1), however many streams were reset meanwhile;
//! a stream further back is taken to be closed long ago.

/// Streams remembered, counted back from the newest.
const SPAN: u32 = 256;

#[derive(Default)]
pub(crate) struct Recent {
    /// Bit `i`: stream `base - 2i` was reset.
    bits: [u64; 4],
    /// The newest client stream id the bits count back from.
    base: u32,
}

impl Recent {
    /// Notes that client stream `id` was reset; `newest` is the newest
    /// stream id the client opened.
    pub(crate) fn mark(&mut self, id: u32, newest: u32) {
        self.advance(newest.max(id));
        if let Some(i) = self.index(id) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    pub(crate) fn contains(&self, id: u32) -> bool {
        self.index(id)
            .is_some_and(|i| self.bits[i / 64] & (1 << (i % 64)) != 0)
    }

    fn index(&self, id: u32) -> Option<usize> {
        let back = self.base.checked_sub(id)? / 2;
        (back < SPAN && id % 2 == self.base % 2).then_some(back as usize)
    }

    /// Moves the base up to `to`, shifting the bits back.
    fn advance(&mut self, to: u32) {
        if to <= self.base {
            return;
        }
        let shift = (to - self.base) / 2;
        self.base = to;
        if shift >= SPAN {
            self.bits = [0; 4];
            return;
        }
        let (words, bits) = ((shift / 64) as usize, shift % 64);
        let old = self.bits;
        for i in 0..4usize {
            let lo = i.checked_sub(words).map_or(0, |j| old[j]);
            let below = i.checked_sub(words + 1).map_or(0, |j| old[j]);
            self.bits[i] = if bits == 0 {
                lo
            } else {
                (lo << bits) | (below >> (64 - bits))
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_256_streams_reset() {
        let mut r = Recent::default();
        for id in (1..=199).step_by(2) {
            r.mark(id, id);
        }
        // 100 streams reset in a row: all still known, none other.
        assert!((1..=199).step_by(2).all(|id| r.contains(id)));
        assert!(!r.contains(201) && !r.contains(2));
        // Streams opened since move the window but keep what it holds.
        r.mark(301, 701);
        assert!(r.contains(301) && r.contains(199) && !r.contains(601));
        // 256 streams back and more are forgotten.
        assert!(r.contains(191));
        assert!(!r.contains(189), "701 - 189 is 256 streams back");
        r.mark(10_001, 10_001);
        assert!(r.contains(10_001) && !r.contains(301));
    }

    #[test]
    fn a_shift_across_words_keeps_bits_in_place() {
        for shift in [1u32, 63, 64, 65, 127, 128, 200] {
            let mut r = Recent::default();
            r.mark(101, 101);
            r.mark(99, 101);
            r.mark(101 + 2 * shift, 101 + 2 * shift);
            let back = |id: u32| r.contains(id);
            assert_eq!(back(101), shift < 256, "shift {shift}");
            assert_eq!(back(99), shift < 255, "shift {shift}");
            assert!(!back(97), "shift {shift}");
        }
    }
}
