//! HTTP/3's codec (RFC 9114) and QPACK (RFC 9204), byte in and byte out,
//! with no I/O: the QUIC transport and the connection driver
//! feed it a stream's bytes and send what it writes.
//!
//! - [`varint`]: QUIC's variable-length integers (RFC 9000 §16).
//! - [`frame`]: frames read off a stream as they arrive, DATA without a
//!   copy; [`settings`]: the SETTINGS payload; [`stream_type`]: what a
//!   unidirectional stream opens with.
//! - [`qpack`]: field sections without a dynamic table (we advertise
//!   QPACK_MAX_TABLE_CAPACITY 0 and never use the peer's), and the checks
//!   of the peer's encoder and decoder streams that this leaves.
//! - [`request`]: a request's HEADERS laid out as the neutral head, by
//!   HTTP/2's rules, which RFC 9114 takes over.
//! - [`ErrorCode`]: the codes a connection or stream ends with.
//!
//! And the driver on a worker's QUIC endpoint (`ringside-quic`):
//! `conn` (control streams, GOAWAY), `stream` (a request in a task of its
//! own, on the neutral exchange, so every handler runs unchanged) and
//! `wire` (what the exchange writes, framed into the stream).

pub(crate) mod conn;
pub mod error;
mod file_pieces;
pub mod frame;
pub mod qpack;
pub mod request;
pub mod settings;
mod stream;
pub mod stream_type;
pub mod varint;
pub(crate) mod wire;

pub use error::ErrorCode;
