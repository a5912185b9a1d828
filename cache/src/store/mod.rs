//! Each core's stored responses.

pub mod memory;
