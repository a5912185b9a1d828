//! QUIC (RFC 9000) for ringside's HTTP/3, one endpoint per worker.
//!
//! quinn-proto is the protocol core: sans-I/O, so each worker's own loop
//! drives it and nothing crosses cores. Each worker owns one UDP socket of
//! a `SO_REUSEPORT` group on the listener's port; the connection IDs it
//! issues name it in their first byte ([`cid`]), and the group's BPF
//! program (`ringside_runtime::udp_group`) steers every packet of a
//! connection to the worker that holds it, across NAT rebindings and
//! migrations. On io_uring, datagrams arrive by one multishot RECVMSG into
//! a ring of buffers (`ringside_runtime::udp::DatagramRing`); elsewhere,
//! and when that ring runs dry, by our own `recvmsg` with GRO after the
//! engine's readiness wait. They leave as GSO trains: on io_uring by
//! SENDMSG from the ring's send buffers (`ringside_runtime::udp::
//! DatagramSender`), submitted with the loop's one `io_uring_enter`;
//! elsewhere, and with every such buffer in flight, by our own `sendmsg`
//! ([`udp`]).
//!
//! ```text
//! socket ─▶ endpoint::serve: RECVMSG ring | recvmsg (GRO) ─▶ quinn Endpoint::handle
//!             ├─ new client: Retry under load, else accept ─▶ conn::drive task + the caller's task
//!             └─ known: Connection::handle_event ─▶ kick its driver
//! conn::drive: timers, events to the streams' wakers, poll_transmit ─▶ SENDMSG ring | sendmsg (GSO)
//! Conn (the caller's handle): accept, read, write, finish, reset streams
//! ```

pub mod cid;
mod conn;
mod early;
mod endpoint;
mod keys;
mod mtu;
pub mod stats;
mod udp;

pub use conn::{Conn, StreamError};
pub use endpoint::{serve, Setup};
pub use quinn_proto::{Dir, StreamId, VarInt};
