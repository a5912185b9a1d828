//! FastCGI (version 1.0): the record codec, the CGI/1.1 params a request
//! sends, and the CGI response head at the start of its STDOUT.
//!
//! Everything here is pure: writers append to a `BytesMut`, readers look at
//! a byte slice and never allocate. The I/O that drives them lives beside
//! the HTTP upstream code.

pub mod capacity;
pub mod cgi_head;
pub mod forward;
pub mod params;
pub mod probe;
pub mod record;
pub mod script;
