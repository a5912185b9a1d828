//! FastCGI (version 1.0) to upstreams: the codec the forward loop runs
//! ([`codec`]), its pool policy ([`capacity`]: a core's queue and when to
//! open a connection for it), the server's capacity as learned from how it
//! answers, shared by the cores ([`learn`]), the opening of a connection
//! and the question that tells whether it is served ([`opener`]), what
//! processes overlapping in an upgrade hold of a server ([`overlap`]), which
//! script a path runs ([`script`]), and the pure parts:
//! the record format ([`record`]), the CGI/1.1 params a request sends
//! ([`params`]) and the CGI response head at the start of its STDOUT
//! ([`cgi_head`]). The pure parts never allocate: writers append to a
//! `BytesMut`, readers look at a byte slice.

pub mod capacity;
pub mod cgi_head;
pub mod codec;
pub mod learn;
pub mod opener;
pub mod overlap;
pub mod params;
pub mod record;
pub mod script;
