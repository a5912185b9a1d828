//! What one `[cache.NAME]` section configures, validated. Every core keeps
//! its own store of `memory` bytes for each cache.

use std::time::Duration;

pub use ringside_runtime::cidr::Cidr;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The section's name, as routes' `cache = "NAME"` refer to it.
    pub name: String,
    /// Bytes of responses (heads and bodies) each core keeps in memory.
    pub memory: u64,
    /// A response with a larger body is passed on, never stored.
    pub max_object: u64,
    /// The disk tier's directory (each core keeps `core-<N>` beneath it),
    /// if the cache has one.
    pub disk: Option<std::path::PathBuf>,
    /// Bytes of objects each core keeps on disk.
    pub disk_size: u64,
    /// How long requests for a key wait for another request's fetch of it
    /// before they go to the origin on their own (nginx's
    /// `proxy_cache_lock_timeout`).
    pub lock_timeout: Duration,
    /// The most `stale-while-revalidate` a response may ask for.
    pub stale_while_revalidate_max: Duration,
    /// The most `stale-if-error` a response may ask for.
    pub stale_if_error_max: Duration,
    /// Heuristic freshness (RFC 9111 §4.2.2): this percentage of the time
    /// since `Last-Modified`, at most `heuristic_max`. 0 turns it off.
    pub heuristic_percent: u32,
    pub heuristic_max: Duration,
    /// How long a key whose response was not storable is fetched without
    /// collapsing (Varnish's hit-for-miss).
    pub hit_for_miss: Duration,
    /// Query parameters left out of the key (`utm_source`, say).
    pub ignore_query: Vec<String>,
    /// Request headers whose values join the key.
    pub key_headers: Vec<String>,
    /// Cookies whose values join the key.
    pub key_cookies: Vec<String>,
    /// Client addresses a `PURGE` is taken from; empty: loopback only.
    pub purge_from: Vec<Cidr>,
}

impl Settings {
    /// A cache with the defaults the README documents.
    pub fn named(name: &str) -> Settings {
        Settings {
            name: name.to_owned(),
            memory: 64 << 20,
            max_object: 4 << 20,
            disk: None,
            disk_size: 1 << 30,
            lock_timeout: Duration::from_secs(5),
            stale_while_revalidate_max: Duration::from_secs(86_400),
            stale_if_error_max: Duration::from_secs(86_400),
            heuristic_percent: 10,
            heuristic_max: Duration::from_secs(86_400),
            hit_for_miss: Duration::from_secs(120),
            ignore_query: Vec::new(),
            key_headers: Vec::new(),
            key_cookies: Vec::new(),
            purge_from: Vec::new(),
        }
    }
}
