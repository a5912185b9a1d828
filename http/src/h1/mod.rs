//! HTTP/1.1 (RFC 9112), both sides, split by concern rather than by who
//! uses it: the request-head parser ([`parse`]), the response-head parser
//! for upstream responses ([`response`]), the wire format written by the
//! server and by the proxy's client ([`encode`]), the chunked coding
//! ([`chunked`]), one exchange on the wire (`wire`), and the server's
//! connection driver (`server`).

pub mod chunked;
pub mod encode;
pub mod parse;
pub mod response;
pub(crate) mod server;
pub(crate) mod wire;

pub use chunked::{ChunkError, ChunkedDecoder, Decoded};
pub use parse::{parse_head, parse_head_into, HeadError};
