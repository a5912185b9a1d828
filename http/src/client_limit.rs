//! Concurrent connections per client address (`[limits]
//! max_client_connections`), per core as everything is: each core counts
//! the connections it holds, by the address the client comes from (the
//! PROXY protocol's, on a listener that reads one). A connection past the
//! limit is not served: its first request is answered with the configured
//! status (429, or 503) and `Retry-After`, and it closes (HTTP/2: the
//! first stream is answered so, and a GOAWAY follows). With W workers a
//! client whose connections the kernel spreads over them may hold up to W
//! times the limit in all.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

thread_local! {
    static OPEN: RefCell<HashMap<IpAddr, u32>> = RefCell::new(HashMap::new());
    static STATS: RefCell<Option<Arc<ClientLimitStats>>> = const { RefCell::new(None) };
}

/// One core's count of connections refused for their client's count.
#[derive(Debug, Default)]
pub struct ClientLimitStats {
    pub refused: AtomicU64,
}

/// Makes `stats` this thread's (the core's) counters.
pub fn set_current(stats: Arc<ClientLimitStats>) {
    STATS.with(|s| *s.borrow_mut() = Some(stats));
}

pub(crate) fn count_refused() {
    STATS.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.refused.store(s.refused.load(Relaxed) + 1, Relaxed);
        }
    });
}

/// A connection counted against its client; uncounted when dropped.
pub(crate) struct Held(IpAddr);

impl Drop for Held {
    fn drop(&mut self) {
        OPEN.with(|o| {
            let mut o = o.borrow_mut();
            if let Some(n) = o.get_mut(&self.0) {
                *n -= 1;
                if *n == 0 {
                    o.remove(&self.0);
                }
            }
        });
    }
}

/// An IPv4 client is one address however the socket spells it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Counts a connection from `ip` against `limit` (0: none). `Ok(None)`
/// when nothing is counted; `Err(())` when the client holds `limit`
/// connections on this core already (this one is then counted nowhere).
pub(crate) fn admit(ip: IpAddr, limit: u32) -> Result<Option<Held>, ()> {
    if limit == 0 {
        return Ok(None);
    }
    let ip = canonical(ip);
    OPEN.with(|o| {
        let mut o = o.borrow_mut();
        let n = o.entry(ip).or_insert(0);
        if *n >= limit {
            return Err(());
        }
        *n += 1;
        Ok(Some(Held(ip)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_address_until_dropped() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        assert!(admit(a, 0).unwrap().is_none(), "no limit, nothing counted");
        let first = admit(a, 2).unwrap().unwrap();
        let second = admit(mapped, 2).unwrap().unwrap();
        assert!(admit(a, 2).is_err(), "a third from the same address");
        let other = admit(b, 2).unwrap();
        assert!(other.is_some());
        drop(first);
        let again = admit(a, 2).unwrap();
        assert!(again.is_some());
        drop((second, again, other));
        OPEN.with(|o| assert!(o.borrow().is_empty()));
    }
}
