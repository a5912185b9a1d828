//! Choosing a server of an upstream for one request.
//!
//! Each core keeps one [`Balancer`] per upstream, so a pick takes no lock and
//! allocates nothing; what a pick may use is passed in: which servers are
//! usable now (health, and on a retry the servers already tried) and this
//! core's count of requests in flight to each server.
//!
//! # Smooth weighted round robin (`round_robin`)
//!
//! nginx's algorithm (`ngx_http_upstream_get_peer`, introduced in nginx
//! 1.3.1): each server keeps a `current` weight. On each pick every usable
//! server adds its weight to `current`, the server with the largest
//! `current` is chosen (the first such on a tie), and the chosen one takes
//! the sum of the usable weights off its `current`. Over any run of
//! `sum(weights)` picks each server is chosen exactly `weight` times, and
//! the picks of a heavy server are spread out instead of bunched: weights
//! {a: 5, b: 1, c: 1} give `a a b a c a a`. A server that is not usable is
//! skipped before it adds its weight, as nginx skips a down peer, so it
//! builds up no credit while down and does not get a burst on return.
//!
//! # Least connections (`least_conn`)
//!
//! The usable server with the fewest requests in flight relative to its
//! weight, comparing `in_flight[a] * weight[b]` with `in_flight[b] *
//! weight[a]` so that no division or float is needed. Servers tied at the
//! least load are chosen among by smooth weighted round robin, as nginx's
//! `least_conn` does, so an idle upstream still sees requests spread by
//! weight. Counts are per core, as nginx's without a shared zone.
//!
//! # Power of two choices (`p2c`)
//!
//! Two distinct usable servers are drawn at random, each with probability
//! proportional to its weight, and the one with fewer requests in flight
//! relative to its weight is taken (the first drawn on a tie). Mitzenmacher
//! ("The Power of Two Choices in Randomized Load Balancing", 2001) showed
//! that comparing just two random choices takes the maximum load from
//! `O(log n / log log n)` down to `O(log log n)`, nearly as good as least
//! connections, while avoiding its herd behaviour when many independent
//! balancers (here, cores) see the same stale picture and all pick the same
//! least loaded server. The random numbers come from a per-core
//! xorshift64* generator seeded by the caller.
//!
//! # Consistent hashing (`hash`)
//!
//! A ketama-style ring (Karger et al., "Consistent Hashing and Random
//! Trees", 1997; the ketama library of last.fm for memcached): every server
//! puts [`POINTS_PER_WEIGHT`] points times its weight on a 64-bit ring, and
//! a key goes to the owner of the first point at or after the key's hash,
//! found by binary search. When a server is not usable the walk carries on
//! around the ring to the next point whose owner is usable, so only the keys
//! of that server move, and each of them to the server that follows it on
//! the ring, spread over all the others. The points of a server depend only
//! on its index, and [`hash_key`] is a fixed function, so every core (and
//! every restart) sends a key to the same server. The ring is capped at
//! about [`MAX_RING_POINTS`] points (each server's share scaled down,
//! keeping at least one point each) so large weights cost no more memory. A
//! request without a key (a missing header or cookie) is balanced by smooth
//! weighted round robin.

use crate::upstream::settings::Balance;

/// Ring points per unit of weight, as ketama (40 MD5 digests of 4 points
/// each, per server).
pub const POINTS_PER_WEIGHT: u64 = 160;

/// Most points on a hash ring, 12 bytes each (192 KiB per core per upstream
/// at most), unless there are more servers than this, which get one each.
pub const MAX_RING_POINTS: u64 = 16_384;

/// Picks servers of one upstream on one core. See the module docs.
#[derive(Debug)]
pub struct Balancer {
    algo: Algo,
    /// At least 1 each.
    weights: Box<[u32]>,
    /// Smooth weighted round robin's `current_weight` per server (used by
    /// round robin, least_conn's ties, and hash without a key).
    current: Box<[i64]>,
    /// xorshift64* state; never 0.
    rng: u64,
    /// Hash ring, sorted by point; `owners[k]` owns `points[k]`. Empty
    /// unless the algorithm is hash.
    points: Box<[u64]>,
    owners: Box<[u32]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    RoundRobin,
    LeastConn,
    P2c,
    Hash,
}

impl Balancer {
    /// `weights[i]` >= 1 for server i (0 is taken as 1). `seed` seeds the
    /// per-core xorshift RNG used by p2c.
    pub fn new(kind: &Balance, weights: &[u32], seed: u64) -> Balancer {
        let algo = match kind {
            Balance::RoundRobin => Algo::RoundRobin,
            Balance::LeastConn => Algo::LeastConn,
            Balance::P2c => Algo::P2c,
            Balance::Hash(_) => Algo::Hash,
        };
        let weights: Box<[u32]> = weights.iter().map(|&w| w.max(1)).collect();
        let (points, owners) = if algo == Algo::Hash {
            build_ring(&weights)
        } else {
            (Box::default(), Box::default())
        };
        let mut rng = splitmix64(seed);
        if rng == 0 {
            rng = 0x9E37_79B9_7F4A_7C15;
        }
        Balancer {
            algo,
            current: vec![0; weights.len()].into_boxed_slice(),
            weights,
            rng,
            points,
            owners,
        }
    }

    /// The number of servers.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Picks a server among those for which `usable(i)` is true; `None` when
    /// none is. `usable` may be called more than once for a server and must
    /// answer the same within one pick.
    ///
    /// `in_flight[i]` is this core's count of requests in flight to server
    /// i (a missing entry counts as 0). `key` is [`hash_key`] of the
    /// request's hash key (ignored unless hash; a hash balancer given `None`
    /// falls back to round robin).
    ///
    /// A retry calls `pick` again with the servers already tried made
    /// unusable by `usable`.
    pub fn pick(
        &mut self,
        usable: &dyn Fn(usize) -> bool,
        in_flight: &[u32],
        key: Option<u64>,
    ) -> Option<usize> {
        debug_assert!(in_flight.is_empty() || in_flight.len() == self.len());
        match self.algo {
            Algo::RoundRobin => smooth_wrr(&self.weights, &mut self.current, usable),
            Algo::LeastConn => self.least_conn(usable, in_flight),
            Algo::P2c => self.p2c(usable, in_flight),
            Algo::Hash => match key {
                Some(k) => self.ring_lookup(usable, k),
                None => smooth_wrr(&self.weights, &mut self.current, usable),
            },
        }
    }

    fn least_conn(&mut self, usable: &dyn Fn(usize) -> bool, in_flight: &[u32]) -> Option<usize> {
        let mut best: Option<usize> = None;
        let mut tied = false;
        for i in 0..self.len() {
            if !usable(i) {
                continue;
            }
            match best {
                None => best = Some(i),
                Some(b) => match load_cmp(&self.weights, in_flight, i, b) {
                    std::cmp::Ordering::Less => {
                        best = Some(i);
                        tied = false;
                    }
                    std::cmp::Ordering::Equal => tied = true,
                    std::cmp::Ordering::Greater => {}
                },
            }
        }
        let best = best?;
        if !tied {
            return Some(best);
        }
        let weights = &self.weights;
        let among = |i: usize| {
            i >= best
                && usable(i)
                && load_cmp(weights, in_flight, i, best) == std::cmp::Ordering::Equal
        };
        smooth_wrr(weights, &mut self.current, &among)
    }

    fn p2c(&mut self, usable: &dyn Fn(usize) -> bool, in_flight: &[u32]) -> Option<usize> {
        let mut total: u64 = 0;
        let mut count = 0usize;
        let mut only = 0usize;
        for i in 0..self.len() {
            if usable(i) {
                total += u64::from(self.weights[i]);
                count += 1;
                only = i;
            }
        }
        match count {
            0 => return None,
            1 => return Some(only),
            _ => {}
        }
        let r = below(self.next_random(), total);
        let a = weighted_at(&self.weights, usable, None, r);
        let r = below(self.next_random(), total - u64::from(self.weights[a]));
        let b = weighted_at(&self.weights, usable, Some(a), r);
        if load_cmp(&self.weights, in_flight, b, a) == std::cmp::Ordering::Less {
            Some(b)
        } else {
            Some(a)
        }
    }

    fn ring_lookup(&self, usable: &dyn Fn(usize) -> bool, key: u64) -> Option<usize> {
        let n = self.points.len();
        // Not one usable server: say so now rather than walk the whole ring.
        if n == 0 || !(0..self.len()).any(usable) {
            return None;
        }
        let start = self.points.partition_point(|&p| p < key);
        let mut rejected = u32::MAX;
        for step in 0..n {
            let owner = self.owners[(start + step) % n];
            if owner == rejected {
                continue;
            }
            if usable(owner as usize) {
                return Some(owner as usize);
            }
            rejected = owner;
        }
        None
    }

    /// xorshift64* (Vigna, "An experimental exploration of Marsaglia's
    /// xorshift generators, scrambled", 2016).
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// A stable 64-bit hash of a key: FNV-1a, then MurmurHash3's 64-bit
/// finalizer so that short keys differing in one byte still land far apart
/// on the ring. The same on every core, run and platform.
pub fn hash_key(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    fmix64(h)
}

/// nginx's smooth weighted round robin over the servers for which
/// `eligible(i)` holds; the others keep their `current` as it is.
fn smooth_wrr(
    weights: &[u32],
    current: &mut [i64],
    eligible: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let mut total: i64 = 0;
    let mut best: Option<usize> = None;
    for i in 0..weights.len() {
        if !eligible(i) {
            continue;
        }
        let w = i64::from(weights[i]);
        current[i] += w;
        total += w;
        // The first of equals wins, as in nginx.
        match best {
            Some(b) if current[i] <= current[b] => {}
            _ => best = Some(i),
        }
    }
    let best = best?;
    current[best] -= total;
    Some(best)
}

/// How the load of server `a` (in flight per unit of weight) compares with
/// that of `b`.
fn load_cmp(weights: &[u32], in_flight: &[u32], a: usize, b: usize) -> std::cmp::Ordering {
    let fa = u64::from(in_flight.get(a).copied().unwrap_or(0));
    let fb = u64::from(in_flight.get(b).copied().unwrap_or(0));
    (fa * u64::from(weights[b])).cmp(&(fb * u64::from(weights[a])))
}

/// The usable server (other than `skip`) under offset `r` when the usable
/// weights are laid end to end; `r` is below their sum.
fn weighted_at(
    weights: &[u32],
    usable: &dyn Fn(usize) -> bool,
    skip: Option<usize>,
    mut r: u64,
) -> usize {
    let mut last = 0;
    for (i, &w) in weights.iter().enumerate() {
        if Some(i) == skip || !usable(i) {
            continue;
        }
        let w = u64::from(w);
        if r < w {
            return i;
        }
        r -= w;
        last = i;
    }
    // Only if `usable` changed its answer since the sum was taken.
    last
}

/// A number below `n` (> 0) from a uniform 64-bit `x`, by Lemire's
/// multiply-and-shift (bias at most n / 2^64).
fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

fn build_ring(weights: &[u32]) -> (Box<[u64]>, Box<[u32]>) {
    let sum: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let uncapped = sum * POINTS_PER_WEIGHT;
    let share = |w: u32| -> u64 {
        if uncapped <= MAX_RING_POINTS {
            u64::from(w) * POINTS_PER_WEIGHT
        } else {
            (MAX_RING_POINTS * u64::from(w) / sum).max(1)
        }
    };
    let mut ring: Vec<(u64, u32)> = Vec::with_capacity(uncapped.min(MAX_RING_POINTS) as usize);
    for (i, &w) in weights.iter().enumerate() {
        for j in 0..share(w) {
            ring.push((ring_point(i as u64, j), i as u32));
        }
    }
    // Ties (as good as never, at 64 bits) are broken by index, so every
    // core builds the same ring.
    ring.sort_unstable();
    let points = ring.iter().map(|&(p, _)| p).collect();
    let owners = ring.iter().map(|&(_, o)| o).collect();
    (points, owners)
}

/// The `j`th point of server `i`: a fixed function of both, so the ring is
/// the same on every core and run.
fn ring_point(i: u64, j: u64) -> u64 {
    splitmix64((i << 32) ^ j ^ 0x7269_6e67_7369_6465)
}

/// MurmurHash3's 64-bit finalizer.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// SplitMix64's output function (a good mixer of a counter or a seed).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::settings::HashKey;

    fn all(_: usize) -> bool {
        true
    }

    fn hash() -> Balance {
        Balance::Hash(HashKey::ClientIp)
    }

    fn kinds() -> [Balance; 4] {
        [
            Balance::RoundRobin,
            Balance::LeastConn,
            Balance::P2c,
            hash(),
        ]
    }

    /// Counts the picks of `n` calls with nothing in flight; `key(i)` for
    /// the `i`th pick.
    fn counts(b: &mut Balancer, n: usize, key: impl Fn(usize) -> Option<u64>) -> Vec<usize> {
        let zero = vec![0; b.len()];
        let mut c = vec![0; b.len()];
        for i in 0..n {
            c[b.pick(&all, &zero, key(i)).unwrap()] += 1;
        }
        c
    }

    /// Each count is within `tol` (relative) of its share by weight.
    fn assert_by_weight(c: &[usize], weights: &[u32], tol: f64) {
        let n: usize = c.iter().sum();
        let sum: u32 = weights.iter().sum();
        for (i, (&got, &w)) in c.iter().zip(weights).enumerate() {
            let want = n as f64 * f64::from(w) / f64::from(sum);
            let off = (got as f64 - want).abs() / want;
            assert!(
                off <= tol,
                "server {i}: {got} picks, want ~{want:.0} ({c:?})"
            );
        }
    }

    fn key(i: usize) -> u64 {
        hash_key(format!("10.0.{}.{}", i / 256, i % 256).as_bytes())
    }

    #[test]
    fn round_robin_gives_nginx_sequence() {
        let mut b = Balancer::new(&Balance::RoundRobin, &[5, 1, 1], 0);
        let picks: Vec<usize> = (0..14).map(|_| b.pick(&all, &[], None).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn round_robin_is_exact_by_weight() {
        let w = [3, 2, 1, 4];
        let mut b = Balancer::new(&Balance::RoundRobin, &w, 0);
        assert_eq!(counts(&mut b, 10_000, |_| None), [3000, 2000, 1000, 4000]);
    }

    #[test]
    fn round_robin_skips_down_server_without_credit() {
        let mut b = Balancer::new(&Balance::RoundRobin, &[1, 1, 1], 0);
        let not_1 = |i: usize| i != 1;
        for _ in 0..30 {
            assert_ne!(b.pick(&not_1, &[], None), Some(1));
        }
        // Back up: no burst of catching up, one pick each per round.
        for _ in 0..5 {
            let mut round: Vec<usize> = (0..3).map(|_| b.pick(&all, &[], None).unwrap()).collect();
            round.sort_unstable();
            assert_eq!(round, [0, 1, 2]);
        }
    }

    #[test]
    fn none_usable_gives_none() {
        for kind in kinds() {
            let mut b = Balancer::new(&kind, &[1, 2, 3], 7);
            assert_eq!(
                b.pick(&|_| false, &[0, 0, 0], Some(key(1))),
                None,
                "{kind:?}"
            );
            assert_eq!(b.pick(&|_| false, &[0, 0, 0], None), None, "{kind:?}");
            let mut empty = Balancer::new(&kind, &[], 7);
            assert_eq!(empty.len(), 0);
            assert_eq!(empty.pick(&all, &[], Some(key(1))), None, "{kind:?}");
        }
    }

    #[test]
    fn single_server() {
        for kind in kinds() {
            let mut b = Balancer::new(&kind, &[3], 7);
            for i in 0..100 {
                assert_eq!(b.pick(&all, &[i as u32], Some(key(i))), Some(0), "{kind:?}");
            }
            assert_eq!(b.pick(&|_| false, &[0], Some(key(0))), None, "{kind:?}");
        }
    }

    #[test]
    fn retry_excludes_tried_servers() {
        for kind in kinds() {
            let mut b = Balancer::new(&kind, &[1, 2, 1], 3);
            for i in 0..200 {
                let k = Some(key(i));
                let first = b.pick(&all, &[0, 0, 0], k).unwrap();
                let second = b.pick(&|s| s != first, &[0, 0, 0], k).unwrap();
                assert_ne!(first, second, "{kind:?}");
                let third = b.pick(&|s| s != first && s != second, &[0, 0, 0], k);
                assert_eq!(third, Some(3 - first - second), "{kind:?}");
                assert_eq!(b.pick(&|_| false, &[0, 0, 0], k), None, "{kind:?}");
            }
        }
    }

    #[test]
    fn least_conn_picks_least_loaded() {
        let mut b = Balancer::new(&Balance::LeastConn, &[1, 1, 1], 0);
        assert_eq!(b.pick(&all, &[3, 1, 2], None), Some(1));
        assert_eq!(b.pick(&all, &[0, 1, 2], None), Some(0));
        assert_eq!(b.pick(&all, &[5, 9, 2], None), Some(2));
        // The least loaded is down: the next least.
        assert_eq!(b.pick(&|i| i != 2, &[5, 9, 2], None), Some(0));
    }

    #[test]
    fn least_conn_respects_weights() {
        let mut b = Balancer::new(&Balance::LeastConn, &[1, 4], 0);
        // 3/4 < 1/1.
        assert_eq!(b.pick(&all, &[1, 3], None), Some(1));
        // 5/4 > 1/1.
        assert_eq!(b.pick(&all, &[1, 5], None), Some(0));
        // 4/4 = 1/1: a tie, shared by weight.
        let mut c = [0; 2];
        for _ in 0..500 {
            c[b.pick(&all, &[1, 4], None).unwrap()] += 1;
        }
        assert_eq!(c, [100, 400]);
    }

    #[test]
    fn least_conn_ties_go_by_smooth_round_robin() {
        let mut b = Balancer::new(&Balance::LeastConn, &[5, 1, 1], 0);
        let picks: Vec<usize> = (0..7)
            .map(|_| b.pick(&all, &[0, 0, 0], None).unwrap())
            .collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
        // Only the tied least loaded take part (6/5 > 1/1), in turn.
        let picks: Vec<usize> = (0..6)
            .map(|_| b.pick(&all, &[6, 1, 1], None).unwrap())
            .collect();
        assert_eq!(picks, [1, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn p2c_with_nothing_in_flight_goes_by_weight() {
        let w = [1, 2, 3, 4];
        let mut b = Balancer::new(&Balance::P2c, &w, 42);
        assert_by_weight(&counts(&mut b, 100_000, |_| None), &w, 0.05);
    }

    #[test]
    fn p2c_under_load_goes_by_weight() {
        // Each request stays in flight for the next `hold` picks.
        let w = [1, 2, 3, 4];
        let hold = 40;
        let mut b = Balancer::new(&Balance::P2c, &w, 42);
        let mut in_flight = [0u32; 4];
        let mut recent = std::collections::VecDeque::new();
        let mut c = vec![0; 4];
        for _ in 0..100_000 {
            if recent.len() == hold {
                in_flight[recent.pop_front().unwrap()] -= 1;
            }
            let s = b.pick(&all, &in_flight, None).unwrap();
            in_flight[s] += 1;
            recent.push_back(s);
            c[s] += 1;
        }
        assert_by_weight(&c, &w, 0.10);
    }

    #[test]
    fn p2c_prefers_less_loaded() {
        let mut b = Balancer::new(&Balance::P2c, &[1, 1], 9);
        for _ in 0..100 {
            assert_eq!(b.pick(&all, &[10, 0], None), Some(1));
            assert_eq!(b.pick(&all, &[0, 10], None), Some(0));
        }
        // Server 0 loses only when the two drawn are 1 and 2 (1 in 3).
        let mut b = Balancer::new(&Balance::P2c, &[1, 1, 1], 9);
        let n = 30_000;
        let zeros = (0..n)
            .filter(|_| b.pick(&all, &[0, 10, 10], None) == Some(0))
            .count();
        assert!((19_000..21_000).contains(&zeros), "{zeros}");
    }

    #[test]
    fn p2c_is_deterministic_per_seed() {
        let run = |seed| {
            let mut b = Balancer::new(&Balance::P2c, &[1, 1, 1, 1, 1], seed);
            (0..64)
                .map(|_| b.pick(&all, &[], None).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        // A zero seed still gives a working generator.
        let zero = run(0);
        assert!(zero.iter().any(|&s| s != zero[0]));
    }

    #[test]
    fn hash_is_the_same_on_every_core() {
        let w = [1, 2, 1, 3, 1];
        let mut core0 = Balancer::new(&hash(), &w, 1);
        let mut core1 = Balancer::new(&hash(), &w, 2);
        for i in 0..10_000 {
            let k = Some(key(i));
            let s = core0.pick(&all, &[], k);
            assert_eq!(s, core1.pick(&all, &[], k));
            // And the same again: hashing keeps no state.
            assert_eq!(s, core0.pick(&all, &[], k));
        }
    }

    #[test]
    fn hash_spreads_keys_by_weight() {
        let w = [1, 2, 3, 4];
        let mut b = Balancer::new(&hash(), &w, 0);
        assert_by_weight(&counts(&mut b, 100_000, |i| Some(key(i))), &w, 0.25);
    }

    #[test]
    fn hash_moves_only_keys_of_a_down_server() {
        let mut b = Balancer::new(&hash(), &[1; 5], 0);
        let n = 10_000;
        let before: Vec<usize> = (0..n)
            .map(|i| b.pick(&all, &[], Some(key(i))).unwrap())
            .collect();
        let down = 2;
        let mut moved_to = [0; 5];
        for (i, &was) in before.iter().enumerate() {
            let now = b.pick(&|s| s != down, &[], Some(key(i))).unwrap();
            if was == down {
                moved_to[now] += 1;
            } else {
                assert_eq!(now, was, "key {i} moved off a usable server");
            }
        }
        assert_eq!(moved_to[down], 0);
        let moved: usize = moved_to.iter().sum();
        assert!(moved > n / 10, "server {down} had only {moved} keys");
        // The keys of the down server spread over all the others.
        assert!(
            moved_to
                .iter()
                .enumerate()
                .all(|(s, &c)| s == down || c > 0),
            "{moved_to:?}"
        );
    }

    #[test]
    fn hash_without_key_is_round_robin() {
        let mut b = Balancer::new(&hash(), &[5, 1, 1], 0);
        let picks: Vec<usize> = (0..7).map(|_| b.pick(&all, &[], None).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn hash_ring_is_capped() {
        let b = Balancer::new(&hash(), &[1; 5], 0);
        assert_eq!(b.points.len(), 5 * 160);
        let b = Balancer::new(&hash(), &[1000; 10], 0);
        assert!(
            b.points.len() as u64 <= MAX_RING_POINTS,
            "{}",
            b.points.len()
        );
        assert!(b.points.windows(2).all(|p| p[0] <= p[1]));
        // A light server beside heavy ones keeps a point, and its share.
        let mut b = Balancer::new(&hash(), &[1000, 1000, 1], 0);
        assert!(b.owners.contains(&2));
        let c = counts(&mut b, 20_000, |i| Some(key(i)));
        assert!(c[0] > 8_000 && c[1] > 8_000, "{c:?}");
        // More servers than the cap: one point each.
        let b = Balancer::new(&hash(), &vec![1; 20_000], 0);
        assert_eq!(b.points.len(), 20_000);
        // Memory stays small for the largest weights.
        let b = Balancer::new(&hash(), &[u32::MAX; 4], 0);
        assert!(b.points.len() as u64 <= MAX_RING_POINTS);
    }

    #[test]
    fn hash_key_is_stable() {
        // Fixed values: a change here sends keys to other servers after an
        // upgrade.
        assert_eq!(hash_key(b""), 0xefd0_1f60_ba99_2926);
        assert_eq!(hash_key(b"a"), 0x82a2_a958_a9be_ce5b);
        assert_eq!(hash_key(b"192.168.0.1"), 0x49bc_1b8e_d85d_d527);
        assert_ne!(hash_key(b"10.0.0.1"), hash_key(b"10.0.0.2"));
    }
}
