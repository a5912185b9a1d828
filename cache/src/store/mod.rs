//! Each core's stored responses.

pub mod disk;
pub mod memory;
