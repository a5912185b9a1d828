//! FastCGI (version 1.0) to upstreams: the codec the forward loop runs
//! ([`codec`]), its pool policy ([`capacity`]: slots within the server's
//! capacity, and a queue), the capacity asked of a server at start
//! ([`probe`]), which script a path runs ([`script`]), and the pure parts:
//! the record format ([`record`]), the CGI/1.1 params a request sends
//! ([`params`]) and the CGI response head at the start of its STDOUT
//! ([`cgi_head`]). The pure parts never allocate: writers append to a
//! `BytesMut`, readers look at a byte slice.

pub mod capacity;
pub mod cgi_head;
pub mod codec;
pub mod params;
pub mod probe;
pub mod record;
pub mod script;
