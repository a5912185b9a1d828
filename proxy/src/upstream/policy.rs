//! How a try gets its connection to a server: the pool policy the forward
//! loop is given with each upstream.
//!
//! - [`Policy::Lifo`] (HTTP): the idle connection used last, else a new
//!   one; a server takes as many connections as it accepts.
//! - [`Policy::Slots`] (FastCGI): the idle connection used last, else a
//!   place in the core's queue; connections are opened for the queue in the
//!   background, within what the server was seen to serve (see
//!   `fastcgi::capacity` and `fastcgi::learn`), and a full queue or a wait
//!   too long is a 503.
//!
//! The core's `Local` asks its peer's policy for a [`Grant`];
//! `super::acquire` turns the grant into a connection.

use ringside_runtime::net::TcpStream;

use crate::fastcgi::capacity::{Slots, Waiter};

/// What a peer's connections are lent by.
pub enum Policy {
    Lifo,
    Slots(Slots),
}

/// What the policy grants a try that found no pooled connection.
pub enum Grant {
    /// A connection from the pool.
    Pooled(TcpStream),
    /// Open a new connection.
    Open,
    /// Wait in the queue.
    Wait(std::rc::Rc<Waiter>),
    /// The queue is full.
    Full,
    /// The server left the upstream (a DNS change) since it was picked.
    Gone,
}
