//! RFC 9111's decisions: TODO
