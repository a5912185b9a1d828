use super::*;

/// Bytes to ask for so that an entry is charged exactly `charge`.
fn payload(charge: u64) -> u64 {
    charge - ENTRY_OVERHEAD
}

/// A store of `entries` entries of 1000 charged bytes each.
fn store(entries: u64) -> Memory<u64> {
    Memory::new(entries * 1000)
}

/// SplitMix64: deterministic, no crates.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Draws ranks 0..n with probability proportional to 1/(rank+1).
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize) -> Self {
        let mut sum = 0.0;
        let cdf = (1..=n)
            .map(|r| {
                sum += 1.0 / r as f64;
                sum
            })
            .collect::<Vec<_>>();
        Zipf(cdf.iter().map(|c| c / sum).collect())
    }

    fn draw(&self, rng: &mut Rng) -> u64 {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        self.0.partition_point(|&c| c < u).min(self.0.len() - 1) as u64
    }
}

#[test]
fn bytes_never_exceed_capacity() {
    let mut m = Memory::new(50_000);
    let mut rng = Rng(7);
    for i in 0..20_000u64 {
        let key = rng.below(300);
        match rng.below(10) {
            0..=4 => {
                // Sizes around and beyond the largest admitted (5000 charged).
                let bytes = rng.below(5_500);
                let fits = bytes + ENTRY_OVERHEAD <= 5_000;
                assert_eq!(m.insert(key, i, bytes).is_ok(), fits);
                assert!(m.bytes() <= m.capacity());
            }
            5..=7 => {
                m.get(key);
            }
            8 => {
                m.remove(key);
            }
            _ => {
                if i % 1000 == 0 {
                    m.retain(|k, _| k % 7 != 0);
                } else {
                    m.peek(key);
                }
            }
        }
        m.check();
    }
    assert!(m.evictions() > 0);
}

#[test]
fn replace_returns_the_old_value_and_recharges() {
    let mut m = Memory::new(100_000);
    assert_eq!(m.insert(1, "old", 100), Ok(None));
    assert_eq!(m.bytes(), 100 + ENTRY_OVERHEAD);
    assert_eq!(m.insert(1, "new", 3_000), Ok(Some("old")));
    assert_eq!((m.len(), m.bytes()), (1, 3_000 + ENTRY_OVERHEAD));
    assert_eq!(m.peek(1), Some(&"new"));
    assert_eq!(m.insert(1, "small", 10), Ok(Some("new")));
    assert_eq!(m.bytes(), 10 + ENTRY_OVERHEAD);
    m.check();
}

#[test]
fn replace_keeps_an_entry_in_main() {
    let mut m = store(100);
    m.insert(1, 1, payload(1000)).unwrap();
    m.get(1);
    for k in 100..300 {
        m.insert(k, k, payload(1000)).unwrap();
    }
    assert_eq!(m.in_main(1), Some(true));
    m.insert(1, 2, payload(2000)).unwrap();
    assert_eq!(m.in_main(1), Some(true));
    m.check();
}

#[test]
fn remove_frees() {
    let mut m = Memory::new(100_000);
    m.insert(1, 10, 500).unwrap();
    m.insert(2, 20, 700).unwrap();
    assert_eq!(m.remove(1), Some(10));
    assert_eq!(m.remove(1), None);
    assert_eq!((m.len(), m.bytes()), (1, 700 + ENTRY_OVERHEAD));
    assert_eq!(m.remove(2), Some(20));
    assert!(m.is_empty());
    assert_eq!(m.bytes(), 0);
    assert_eq!(m.evictions(), 0);
    m.check();
}

#[test]
fn retain_removes_what_it_says() {
    let mut m = store(1000);
    for k in 0..100 {
        m.insert(k, k * 10, payload(1000)).unwrap();
        if k % 3 == 0 {
            m.get(k);
        }
    }
    let mut visited = 0;
    let removed = m.retain(|k, v| {
        visited += 1;
        assert_eq!(*v, k * 10);
        *v += 1;
        k % 2 == 1
    });
    assert_eq!((visited, removed, m.len()), (100, 50, 50));
    assert_eq!(m.bytes(), 50 * 1000);
    for k in 0..100 {
        assert_eq!(m.peek(k).copied(), (k % 2 == 1).then_some(k * 10 + 1));
    }
    // A purge is no eviction, and a purged key is not readmitted to main.
    assert_eq!(m.evictions(), 0);
    m.insert(0, 0, payload(1000)).unwrap();
    assert_eq!(m.in_main(0), Some(false));
    m.check();
}

#[test]
fn too_large_is_refused_and_changes_nothing() {
    // The largest entry is the small queue's share: a tenth, 1000 charged.
    let mut m = Memory::new(10_000);
    assert_eq!(m.insert(1, "fits", payload(1000)), Ok(None));
    assert_eq!(m.insert(1, "big", payload(1001)), Err(TooLarge("big")));
    assert_eq!(m.insert(2, "huge", u64::MAX), Err(TooLarge("huge")));
    assert_eq!(m.peek(1), Some(&"fits"));
    assert_eq!((m.len(), m.bytes()), (1, 1000));
    assert!(Memory::new(0).insert(1, (), 0).is_err());
    m.check();
}

#[test]
fn a_hit_in_small_promotes_a_peek_does_not() {
    let mut m = store(100);
    m.insert(1, 1, payload(1000)).unwrap();
    m.insert(2, 2, payload(1000)).unwrap();
    assert_eq!(m.get(1), Some(&1));
    assert_eq!(m.peek(2), Some(&2));
    for k in 100..200 {
        m.insert(k, k, payload(1000)).unwrap();
    }
    assert_eq!(m.in_main(1), Some(true));
    assert_eq!(m.in_main(2), None);
    m.check();
}

#[test]
fn ghost_readmits_to_main() {
    let mut m = store(100);
    m.insert(1, 1, payload(1000)).unwrap();
    // Fill the store, then push key 1 out of the small queue unhit.
    for k in 100..200 {
        m.insert(k, k, payload(1000)).unwrap();
    }
    assert_eq!(m.peek(1), None);
    assert!(m.ghost.seq_of.contains_key(&1));
    m.insert(1, 1, payload(1000)).unwrap();
    assert_eq!(m.in_main(1), Some(true));
    assert!(!m.ghost.seq_of.contains_key(&1));
    // A key never seen starts in small.
    m.insert(5000, 0, payload(1000)).unwrap();
    assert_eq!(m.in_main(5000), Some(false));
    m.check();
}

#[test]
fn main_reinserts_what_was_hit() {
    // Ten entries; the small queue's share is one.
    let mut m = store(10);
    for k in 0..10 {
        m.insert(k, k, payload(1000)).unwrap();
        m.get(k);
    }
    // Full: all ten were hit in small, so all move to main, and main's
    // oldest, 0, makes the room.
    m.insert(10, 10, payload(1000)).unwrap();
    assert_eq!(m.peek(0), None);
    assert!((1..10).all(|k| m.in_main(k) == Some(true)));
    m.get(5);
    m.get(6);
    // Each new key is hit while in small, so its promotion takes room from
    // main: 10 (unhit) goes to the ghost, then main's entries go in order,
    // but 5 and 6 go back in once.
    for k in 100..108 {
        m.insert(k, k, payload(1000)).unwrap();
        m.get(k);
        m.check();
    }
    assert_eq!(m.peek(10), None);
    for k in 1..10 {
        assert_eq!(m.peek(k).is_some(), k == 5 || k == 6, "key {k}");
    }
    assert_eq!(m.evictions(), 1 + 1 + 7);
}

/// The hot set's hit ratio over `requests` Zipf requests, with a one-off
/// insert before each when `flood`.
fn hot_hit_ratio(flood: bool) -> (f64, Memory<u64>) {
    const HOT: usize = 200;
    const REQUESTS: u64 = 100_000;
    let mut m = store(500);
    let zipf = Zipf::new(HOT);
    let mut rng = Rng(42);
    let mut hits = 0;
    for i in 0..REQUESTS {
        if flood {
            let one_off = 1_000_000 + i;
            m.insert(one_off, one_off, payload(1000)).unwrap();
        }
        let key = zipf.draw(&mut rng);
        if m.get(key).is_some() {
            hits += 1;
        } else {
            m.insert(key, key, payload(1000)).unwrap();
        }
    }
    (hits as f64 / REQUESTS as f64, m)
}

#[test]
fn a_flood_of_one_offs_does_not_flush_the_hot_set() {
    let (calm, _) = hot_hit_ratio(false);
    let (flooded, m) = hot_hit_ratio(true);
    assert!(calm > 0.99, "calm {calm}");
    assert!(
        m.evictions() >= 99_000,
        "the flood went through: {}",
        m.evictions()
    );
    eprintln!("hot set hit ratio: calm {calm:.4}, flooded {flooded:.4}");
    assert!(flooded >= calm * 0.9, "calm {calm}, flooded {flooded}");
    // The hot set lives in main; the flood only passed through small.
    for k in 0..200 {
        assert_eq!(m.in_main(k), Some(true), "hot key {k}");
    }
    m.check();
}

#[test]
fn a_million_one_offs_stay_bounded() {
    let mut m = store(100);
    for k in 0..1_000_000 {
        m.insert(k, k, payload(1000)).unwrap();
        assert!(m.ghost_len() <= 100);
    }
    m.check();
    assert_eq!(m.len(), 100);
    assert_eq!(m.evictions(), 1_000_000 - 100);
    // Nothing grew with the evicted keys.
    assert!(m.nodes.capacity() <= 256, "slab {}", m.nodes.capacity());
    assert!(m.index.capacity() <= 256, "index {}", m.index.capacity());
    assert!(
        m.ghost.fifo.capacity() <= 256,
        "ghost {}",
        m.ghost.fifo.capacity()
    );
    assert!(
        m.ghost.seq_of.capacity() <= 256,
        "ghost map {}",
        m.ghost.seq_of.capacity()
    );
}

#[test]
fn overhead_covers_the_bookkeeping() {
    use std::mem::size_of;
    // Slab slot (the node plus the slab's tag), index slot and ghost slots,
    // each with a control byte where a hash table holds it.
    let slab = size_of::<Node<()>>() + size_of::<usize>();
    let index = size_of::<(u64, u32)>() + 1;
    let ghost = size_of::<(u64, u64)>() * 2 + 1;
    let total = (slab + index + ghost) as u64;
    assert!(total * 8 / 7 <= ENTRY_OVERHEAD, "{total}");
    assert!(
        total * 2 >= ENTRY_OVERHEAD,
        "{total}: the constant overcharges"
    );
}
