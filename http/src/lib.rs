//! ringside-http: the HTTP layer every protocol speaks into and every
//! handler reads from.
//!
//! - [`Exchange`]: one request and its response, with nothing of the wire
//!   in its API. HTTP/1 drives it today ([`h1`]); a second protocol adds a
//!   driver and a wire variant, and the static, proxy and FastCGI handlers
//!   run on it unchanged.
//! - [`Error`]: one error type for the request path; the status a failure
//!   is answered with is decided there.
//! - [`path`]: the one normalized path every routing and access decision is
//!   made on, and that goes upstream.
//! - [`head`], [`grammar`], [`hop`], [`status`], [`date`]: the pieces of
//!   HTTP semantics that do not depend on the protocol.
//! - [`semantics`]: conditional requests, ranges and content negotiation,
//!   for the static files and anything else that serves representations.
//!
//! The engine (`ringside-runtime`) accepts connections and hands each, as a
//! `Link`, to [`Http`], the driver the server was started with.

mod authority;
pub mod capture;
pub mod client_limit;
pub mod compress;
pub mod date;
pub mod error;
pub mod error_page;
pub mod exchange;
pub mod fields;
pub mod grammar;
pub mod h1;
pub mod h2;
pub mod h3;
pub mod head;
pub mod hop;
mod linger;
pub mod message;
pub mod path;
pub mod proxy_protocol;
pub mod pseudo;
mod recycled;
pub mod refusal;
pub mod rewritten;
pub mod semantics;
pub mod status;
pub mod upgraded;

use std::rc::Rc;
use std::time::Instant;

pub use error::{Error, Kind, Side};
pub use exchange::Exchange;
pub use head::{BodyKind, Fields, Method, RequestHead, Span, Version};
pub use message::{Body, HeaderLine};
pub use path::{EncodedSlash, PathParameters};
pub use refusal::{Refusal, RequestLine};
pub use ringside_runtime::config::{Limits, DEFAULT_MAX_HEADERS};
pub use upgraded::Upgraded;

use ringside_runtime::config::{RuntimeConfig, ServerConfig};
use ringside_runtime::context::WorkerContext;
use ringside_runtime::link::{Driver, Link};
use ringside_runtime::reload::Current;
use ringside_runtime::worker::{self, Server, StartError};

/// Answers requests. One value per worker, shared by its connections.
#[allow(async_fn_in_trait)] // workers are single-threaded: no Send bound wanted
pub trait Handler: 'static {
    /// Handles one request. Returning without a response answers 500; an
    /// error is answered as [`Error`] says (or ends the connection when
    /// the response had started).
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error>;

    /// Called once per request after its response is settled, with when its
    /// head was complete: the place for access logs and metrics.
    #[inline]
    fn done(&self, _ex: &Exchange<'_>, _started: Instant) {}

    /// Called for a request refused before any handler ran (a malformed or
    /// oversized head, a head timeout): what was sent, and what is known
    /// of the request.
    #[inline]
    fn refused(&self, _r: &Refusal<'_>) {}

    /// Called for a connection refused at its client's connection limit
    /// (`client_limit`), with what its request got; by default as
    /// [`Handler::refused`].
    #[inline]
    fn over_limit(&self, r: &Refusal<'_>) {
        self.refused(r)
    }

    /// What a path's encoded slashes do (see [`path`]): refused unless this
    /// handler's routes were configured to pass them on.
    #[inline]
    fn encoded_slash(&self) -> EncodedSlash {
        EncodedSlash::Reject
    }

    /// What a path's segment parameters (`;x`) do (see [`path`]): set
    /// aside for routing unless refused.
    #[inline]
    fn path_parameters(&self) -> PathParameters {
        PathParameters::SetAside
    }
}

/// The HTTP driver the engine runs each accepted connection with: HTTP/1.1,
/// and HTTP/2 where TLS's ALPN or h2c's preface choose it (`h1::server`
/// looks); and each worker's UDP socket of a listener with HTTP/3.
#[derive(Clone, Copy, Debug, Default)]
pub struct Http;

impl<H: Handler> Driver<H> for Http {
    fn serve(
        self,
        link: Link,
        current: Rc<Current<H>>,
    ) -> impl std::future::Future<Output = ()> + 'static {
        h1::server::serve(link, current)
    }

    fn serve_udp(
        self,
        socket: std::net::UdpSocket,
        at: ringside_runtime::link::UdpAt,
        current: Rc<Current<H>>,
    ) -> impl std::future::Future<Output = ()> + 'static {
        h3::conn::serve_udp(socket, at, current)
    }
}

/// Starts the workers of `rt` serving HTTP on `srv`'s listeners, each with
/// a handler from `make`; for servers that never reload (the binary uses
/// `worker::bind` and a reloadable factory).
pub fn start<H, F>(rt: &RuntimeConfig, srv: &ServerConfig, make: F) -> Result<Server<H>, StartError>
where
    H: Handler,
    F: Fn(&WorkerContext) -> H + Send + Sync + 'static,
{
    worker::start(
        rt,
        srv,
        std::sync::Arc::new(move |ctx, _| Ok(make(ctx))),
        Http,
    )
}
