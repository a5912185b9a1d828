//! Each core's stored responses: in memory ([`memory`]) and on disk
//! ([`disk`]).

pub mod disk;
pub mod memory;
