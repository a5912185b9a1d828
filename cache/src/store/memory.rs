//! The memory tier: TODO
