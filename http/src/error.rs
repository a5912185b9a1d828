//! One error type for the whole request path, in the spirit of Pingora's:
//! what failed ([`Kind`]), on which side ([`Side`]), the status to answer,
//! whether another server may be tried, and the cause.
//!
//! The status a failure is answered with is decided here and nowhere else
//! ([`Kind::status`]). A protocol driver answers a handler's error itself:
//! - a client-side error (a malformed or oversized request, a body that
//!   timed out) is answered with its 4xx and the connection closes after
//!   it, since what the client sends next cannot be trusted to line up;
//! - an upstream or internal error is answered like any response (502,
//!   503, 504, 500), and the connection may be kept;
//! - [`Kind::ClientGone`] and any error after the response started end the
//!   connection without an answer: a half-sent response must never look
//!   complete.
//!
//! Parsers keep small `Copy` error enums of their own (httparse style);
//! each converts into this type, which is where its status comes from.

use std::borrow::Cow;
use std::fmt;
use std::io;

/// Which side of the server a failure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client: its request, its body, its connection.
    Client,
    /// A server behind this one: connect, send, response.
    Upstream,
    /// This server itself.
    Internal,
}

/// What failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A malformed request (head, target, path, body framing, or a body
    /// that ended early).
    BadRequest,
    /// The request line is longer than allowed.
    UriTooLong,
    /// The header section is larger, or has more fields, than allowed.
    HeadersTooLarge,
    /// The body is larger than allowed.
    BodyTooLarge,
    /// An `Expect` other than `100-continue`.
    ExpectationFailed,
    /// A protocol version this server does not speak.
    VersionNotSupported,
    /// A transfer coding this server does not implement.
    NotImplemented,
    /// The client was too slow to send its request.
    ClientTimeout,
    /// The client's connection failed (reset, closed, too slow to read):
    /// nothing can be answered.
    ClientGone,
    /// No connection could be made to the server.
    ConnectFailed,
    /// The connection to the server was not made in time.
    ConnectTimeout,
    /// The server did not answer, or did not go on, in time.
    UpstreamTimeout,
    /// A pooled connection turned out closed before the server answered:
    /// not the server's fault, and a replayable request may go again on a
    /// fresh connection.
    Stale,
    /// The server's response was malformed, or cut short.
    InvalidResponse,
    /// No server of the upstream is usable.
    NoServer,
    /// The server, or this server's queue for it, refused for load.
    Overloaded,
    /// A fault of this server.
    Internal,
}

impl Kind {
    /// The status to answer with: the one place it is decided.
    pub fn status(self) -> u16 {
        match self {
            Kind::BadRequest | Kind::ClientGone => 400,
            Kind::UriTooLong => 414,
            Kind::HeadersTooLarge => 431,
            Kind::BodyTooLarge => 413,
            Kind::ExpectationFailed => 417,
            Kind::VersionNotSupported => 505,
            Kind::NotImplemented => 501,
            Kind::ClientTimeout => 408,
            Kind::ConnectFailed | Kind::Stale | Kind::InvalidResponse | Kind::NoServer => 502,
            Kind::ConnectTimeout | Kind::UpstreamTimeout => 504,
            Kind::Overloaded => 503,
            Kind::Internal => 500,
        }
    }

    pub fn side(self) -> Side {
        match self {
            Kind::BadRequest
            | Kind::UriTooLong
            | Kind::HeadersTooLarge
            | Kind::BodyTooLarge
            | Kind::ExpectationFailed
            | Kind::VersionNotSupported
            | Kind::NotImplemented
            | Kind::ClientTimeout
            | Kind::ClientGone => Side::Client,
            Kind::ConnectFailed
            | Kind::ConnectTimeout
            | Kind::UpstreamTimeout
            | Kind::Stale
            | Kind::InvalidResponse
            | Kind::NoServer
            | Kind::Overloaded => Side::Upstream,
            Kind::Internal => Side::Internal,
        }
    }

    /// Whether no byte of the request reached a server, so any request,
    /// with a body or not, may go to another one.
    pub fn nothing_sent(self) -> bool {
        matches!(self, Kind::ConnectFailed | Kind::ConnectTimeout)
    }

    /// Whether the failure counts against the server in passive health
    /// checks: a stale pooled connection, a refusal for load or a client's
    /// fault say nothing about the server's health.
    pub fn server_failed(self) -> bool {
        matches!(
            self,
            Kind::ConnectFailed
                | Kind::ConnectTimeout
                | Kind::UpstreamTimeout
                | Kind::InvalidResponse
        )
    }
}

/// A failure on the request path. Boxed, so a `Result<(), Error>` is one
/// pointer in every future that holds one.
pub struct Error(Box<Inner>);

struct Inner {
    kind: Kind,
    context: Cow<'static, str>,
    cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    pub fn new(kind: Kind, context: impl Into<Cow<'static, str>>) -> Error {
        Error(Box::new(Inner {
            kind,
            context: context.into(),
            cause: None,
        }))
    }

    /// The same error, with what caused it.
    pub fn because(mut self, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        self.0.cause = Some(cause.into());
        self
    }

    /// The client's connection failed while `doing`.
    pub fn client_gone(doing: &'static str, cause: io::Error) -> Error {
        Error::new(Kind::ClientGone, doing).because(cause)
    }

    /// A fault of this server.
    pub fn internal(context: impl Into<Cow<'static, str>>) -> Error {
        Error::new(Kind::Internal, context)
    }

    #[inline]
    pub fn kind(&self) -> Kind {
        self.0.kind
    }

    #[inline]
    pub fn side(&self) -> Side {
        self.0.kind.side()
    }

    #[inline]
    pub fn status(&self) -> u16 {
        self.0.kind.status()
    }

    /// The status to answer with, or `None` when there is no one to
    /// answer ([`Kind::ClientGone`]).
    pub fn answer(&self) -> Option<u16> {
        (self.0.kind != Kind::ClientGone).then(|| self.status())
    }

    pub fn context(&self) -> &str {
        &self.0.context
    }

    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.0.cause.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.context)?;
        if let Some(c) = &self.0.cause {
            write!(f, ": {c}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({}): {self}", self.0.kind, self.status())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// An I/O error that reaches a handler's `?` without a side of its own
/// (reading a file, say) is this server's fault. Errors of the client's
/// or an upstream's sockets are made with their kind where they happen.
impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::new(Kind::Internal, "I/O error").because(e)
    }
}

impl From<crate::path::PathError> for Error {
    fn from(e: crate::path::PathError) -> Error {
        Error::new(Kind::BadRequest, "request path refused").because(e)
    }
}

/// An upstream's response head refused by the parser: said once here, so
/// the cause names only what was wrong with it.
impl From<crate::h1::response::RespError> for Error {
    fn from(e: crate::h1::response::RespError) -> Error {
        Error::new(Kind::InvalidResponse, "malformed response head").because(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_status_and_side() {
        #[rustfmt::skip]
        let cases: &[(Kind, u16, Side)] = &[
            (Kind::BadRequest, 400, Side::Client), (Kind::UriTooLong, 414, Side::Client),
            (Kind::HeadersTooLarge, 431, Side::Client), (Kind::BodyTooLarge, 413, Side::Client),
            (Kind::ExpectationFailed, 417, Side::Client), (Kind::VersionNotSupported, 505, Side::Client),
            (Kind::NotImplemented, 501, Side::Client), (Kind::ClientTimeout, 408, Side::Client),
            (Kind::ClientGone, 400, Side::Client),
            (Kind::ConnectFailed, 502, Side::Upstream), (Kind::ConnectTimeout, 504, Side::Upstream),
            (Kind::UpstreamTimeout, 504, Side::Upstream), (Kind::Stale, 502, Side::Upstream),
            (Kind::InvalidResponse, 502, Side::Upstream), (Kind::NoServer, 502, Side::Upstream),
            (Kind::Overloaded, 503, Side::Upstream), (Kind::Internal, 500, Side::Internal),
        ];
        for &(kind, status, side) in cases {
            let e = Error::new(kind, "x");
            assert_eq!((e.status(), e.side()), (status, side), "{kind:?}");
        }
        assert_eq!(Error::new(Kind::ClientGone, "x").answer(), None);
        assert_eq!(Error::new(Kind::Overloaded, "x").answer(), Some(503));
    }

    #[test]
    fn display_has_context_and_cause() {
        let e = Error::new(Kind::ConnectFailed, "connecting to 10.0.0.1:80")
            .because(io::Error::from(io::ErrorKind::ConnectionRefused));
        assert_eq!(
            e.to_string(),
            "connecting to 10.0.0.1:80: connection refused"
        );
        assert_eq!(std::mem::size_of::<Result<(), Error>>(), 8);
    }
}
