//! HTTP/1.1 server codec: a strict request-head parser on httparse, a streaming
//! chunked decoder, response heads, the per-core Date header and the
//! connection driver that ties them to a socket.

pub mod chunked;
pub mod date;
pub mod head;
pub mod response;

pub use chunked::{ChunkError, ChunkedDecoder, Decoded};
pub use head::{
    parse_head, parse_head_into, BodyKind, HeadError, Limits, Method, ParsedHead, Span, Version,
};
pub mod conn;
pub mod exchange;
mod link;
mod meter;

pub use conn::{serve, ConnConfig, Handler};
pub use exchange::{Body, Exchange};
