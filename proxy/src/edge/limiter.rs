//! Request rates per key, per core: a token bucket for each key a route's
//! `[[rate_limit]]` names (`config::rate`), checked after routing and
//! `allow`/`deny`. Nothing is shared between cores: each core's buckets
//! fill at the whole rate, so a client spread over W cores may get up to W
//! times it (README: Rate limits).

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use ringside_http::Exchange;

use super::router::Target;
use crate::config::rate::{LimitKey, RateConfig, RateLimit};
use crate::upstream::balance::hash_key;
use crate::upstream::forward::request_key;
use crate::upstream::settings::HashKey;

/// Keys kept per limit per core. Past it, full buckets (idle keys) are
/// dropped, then the longest unused down to nine tenths: a flood of new
/// keys neither grows memory nor refills the buckets of keys in use (theirs
/// are the newest), and the sweep runs once per tenth of the table.
const MAX_KEYS: usize = 100_000;

struct Bucket {
    tokens: f64,
    at: Instant,
}

pub struct Limiter {
    limits: Vec<RateLimit>,
    proxy_routes: Vec<Option<usize>>,
    /// By `Target::Static` index: 0 is the root, which has no route.
    statics: Vec<Option<usize>>,
    /// By limit: each key's bucket.
    buckets: RefCell<Vec<HashMap<u64, Bucket>>>,
}

/// A request over its limit: the status to answer, and the seconds until
/// the bucket holds a token again (Retry-After).
pub struct Limited {
    pub status: u16,
    pub retry_after: u64,
}

impl Limiter {
    /// `None` when no route takes a limit.
    pub fn new(cfg: &RateConfig, static_prefixes: &[String]) -> Option<Limiter> {
        if cfg.is_empty() {
            return None;
        }
        let mut statics = vec![None];
        for p in static_prefixes {
            statics.push(
                cfg.static_routes
                    .iter()
                    .find(|(q, _)| q == p)
                    .map(|(_, l)| *l),
            );
        }
        Some(Limiter {
            limits: cfg.limits.clone(),
            proxy_routes: cfg.proxy_routes.clone(),
            statics,
            buckets: RefCell::new(cfg.limits.iter().map(|_| HashMap::new()).collect()),
        })
    }

    /// Takes a token for the request, or says it is over its limit.
    pub fn check(&self, ex: &Exchange<'_>, target: Target) -> Option<Limited> {
        let index = match target {
            Target::Proxy(i) => self.proxy_routes.get(i).copied().flatten(),
            Target::Static(i) => self.statics.get(i).copied().flatten(),
            Target::NotFound => None,
        }?;
        let limit = &self.limits[index];
        let key = match &limit.key {
            LimitKey::Route => 0,
            LimitKey::By(HashKey::ClientIp) => client_key(ex.peer().ok()?.ip()),
            LimitKey::By(k) => request_key(ex, k)?,
        };
        self.take(index, key, Instant::now())
    }

    fn take(&self, index: usize, key: u64, now: Instant) -> Option<Limited> {
        let limit = &self.limits[index];
        let (rate, burst) = (limit.per_second(), f64::from(limit.burst));
        let mut all = self.buckets.borrow_mut();
        let buckets = &mut all[index];
        if buckets.len() >= MAX_KEYS && !buckets.contains_key(&key) {
            sweep(buckets, rate, burst, now);
        }
        let b = buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            return None;
        }
        Some(Limited {
            status: limit.status,
            // Less a hair, so 10.000000002 seconds is 10, not 11.
            retry_after: ((1.0 - b.tokens) / rate - 1e-6).ceil().max(1.0) as u64,
        })
    }
}

/// Drops full buckets, then the longest unused down to nine tenths.
fn sweep(buckets: &mut HashMap<u64, Bucket>, rate: f64, burst: f64, now: Instant) {
    buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
    let keep = MAX_KEYS * 9 / 10;
    if buckets.len() > keep {
        let mut ats: Vec<Instant> = buckets.values().map(|b| b.at).collect();
        let drop = buckets.len() - keep;
        let (_, &mut cutoff, _) = ats.select_nth_unstable(drop);
        buckets.retain(|_, b| b.at > cutoff);
    }
}

/// A client's key: an IPv4-mapped address as the IPv4 address it is, and
/// IPv6 by its /64 (what one host is given, and can cycle through).
fn client_key(ip: IpAddr) -> u64 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => hash_key(&v4.octets()),
        IpAddr::V6(v6) => hash_key(&v6.octets()[..8]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limiter(count: u32, unit: char, burst: u32) -> Limiter {
        let cfg = RateConfig {
            limits: vec![RateLimit {
                name: "l".into(),
                key: LimitKey::Route,
                count,
                unit,
                burst,
                status: 429,
            }],
            proxy_routes: vec![Some(0)],
            static_routes: Vec::new(),
        };
        Limiter::new(&cfg, &[]).unwrap()
    }

    #[test]
    fn a_bucket_takes_its_burst_then_the_rate() {
        let l = limiter(10, 's', 5);
        let t0 = Instant::now();
        for _ in 0..5 {
            assert!(l.take(0, 1, t0).is_none());
        }
        let over = l.take(0, 1, t0).expect("burst spent");
        assert_eq!((over.status, over.retry_after), (429, 1));
        // Another key has its own bucket.
        assert!(l.take(0, 2, t0).is_none());
        // 10/s: one token per 100 ms.
        assert!(l.take(0, 1, t0 + Duration::from_millis(99)).is_some());
        assert!(l.take(0, 1, t0 + Duration::from_millis(101)).is_none());
        assert!(l.take(0, 1, t0 + Duration::from_millis(150)).is_some());
        // A long pause refills to the burst, no further.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..5 {
            assert!(l.take(0, 1, later).is_none());
        }
        assert!(l.take(0, 1, later).is_some());
    }

    #[test]
    fn retry_after_counts_whole_seconds_to_the_next_token() {
        let l = limiter(2, 'm', 1);
        let t0 = Instant::now();
        assert!(l.take(0, 1, t0).is_none());
        assert_eq!(l.take(0, 1, t0).unwrap().retry_after, 30);
        assert_eq!(
            l.take(0, 1, t0 + Duration::from_secs(20))
                .unwrap()
                .retry_after,
            10
        );
    }

    #[test]
    fn keys_stay_bounded_and_a_flood_refills_no_one() {
        let l = limiter(1, 'h', 1);
        let t0 = Instant::now();
        // A key in use, its bucket spent, and asking on.
        assert!(l.take(0, u64::MAX, t0).is_none());
        for k in 0..(MAX_KEYS as u64 * 2) {
            let at = t0 + Duration::from_micros(k);
            l.take(0, k, at);
            if k % 1000 == 0 {
                assert!(
                    l.take(0, u64::MAX, at).is_some(),
                    "{k}: refilled by the flood"
                );
            }
        }
        assert!(l.buckets.borrow()[0].len() <= MAX_KEYS);
    }

    #[test]
    fn clients_are_keyed_as_hosts() {
        let k = |s: &str| client_key(s.parse().unwrap());
        assert_eq!(k("10.1.2.3"), k("::ffff:10.1.2.3"));
        assert_ne!(k("10.1.2.3"), k("10.1.2.4"));
        assert_eq!(k("2001:db8:1:2::1"), k("2001:db8:1:2:ffff::9"));
        assert_ne!(k("2001:db8:1:2::1"), k("2001:db8:1:3::1"));
    }
}
