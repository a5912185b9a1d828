//! Upstreams: per-core connection pools, balancing, health, and the
//! forwarding of one request.

pub mod balance;
pub mod forward;
pub mod hop;
pub mod io;
pub mod local;
pub mod pool;
pub mod request;
pub mod response;
pub mod settings;
pub mod shared;
pub mod tunnel;
