//! HTTP semantics that hold whatever the protocol (RFC 9110): conditional
//! requests (§13), range requests (§14), and content-coding negotiation
//! (§12.5.3). Pure functions over header values; the static files use them
//! today, and a response cache would use the same.

pub mod conditional;
pub mod negotiation;
pub mod range;
