//! The response cache of ringside's edge (RFC 9111, with RFC 5861's stale
//! serving, RFC 9211's Cache-Status and RFC 9213's targeted fields).
//!
//! - [`policy`]: what may be stored, how long it is fresh, whether a stored
//!   response may answer a request: pure functions of a request's fields,
//!   a stored response's fields and a clock, table-tested without sockets.
//! - [`store`]: each core's own entries, bounded in bytes, with an admission
//!   and eviction policy a scan cannot flush (S3-FIFO); no locks, as no
//!   other core ever reads them. Behind it, each core's disk tier
//!   ([`store::disk`]): checksummed files in the core's own directory,
//!   kept across restarts.
//! - [`settings`]: what a `[cache.NAME]` section configures.

pub mod core;
pub mod entry;
pub mod fill;
pub mod key;
pub mod on_disk;
pub mod policy;
pub mod purge;
pub mod record;
pub mod serve;
pub mod settings;
pub mod store;

pub use self::core::CoreCache;
pub use settings::Settings;
