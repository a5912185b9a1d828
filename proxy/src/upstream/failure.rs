//! Why a try to an upstream failed, as one closed set of reasons that the
//! error log, the access log (`upstream_error`) and the metrics (`reason`)
//! all name the same way; and the per-core gate that keeps a failing
//! server from flooding the error log.
//!
//! Nothing here runs unless a try failed: a reason is worked out from the
//! `Error` (its kind and cause) only then.

use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use ringside_http::{Error, Kind};

/// Why a try failed. The numbers are what the access log's note carries
/// (`super::outcome`); 0 is "none".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    /// The server refused the connection (nothing listens there).
    ConnectRefused = 1,
    /// Any other connect failure: a Unix socket that is not there, no
    /// route to the host, permission denied.
    ConnectFailed,
    ConnectTimeout,
    /// The server's certificate did not verify against the CAs configured.
    TlsVerify,
    /// Any other TLS handshake failure (an alert, no common version, the
    /// server closed during the handshake).
    TlsHandshake,
    /// The connection was reset or closed before the response was whole.
    Reset,
    /// No response head, or no further body, in time.
    Timeout,
    /// A response that does not parse.
    BadResponse,
    /// Every server is down or was tried already.
    NoServer,
    /// The server, or this server's queue for it, refused for load.
    Overloaded,
}

impl Reason {
    /// Every reason, in the order of their numbers.
    pub const ALL: [Reason; 10] = [
        Reason::ConnectRefused,
        Reason::ConnectFailed,
        Reason::ConnectTimeout,
        Reason::TlsVerify,
        Reason::TlsHandshake,
        Reason::Reset,
        Reason::Timeout,
        Reason::BadResponse,
        Reason::NoServer,
        Reason::Overloaded,
    ];

    /// The token the access log and the metrics write.
    pub fn token(self) -> &'static str {
        match self {
            Reason::ConnectRefused => "connect_refused",
            Reason::ConnectFailed => "connect_failed",
            Reason::ConnectTimeout => "connect_timeout",
            Reason::TlsVerify => "tls_verify",
            Reason::TlsHandshake => "tls_handshake",
            Reason::Reset => "reset",
            Reason::Timeout => "timeout",
            Reason::BadResponse => "bad_response",
            Reason::NoServer => "no_server",
            Reason::Overloaded => "overloaded",
        }
    }

    /// What the error log says, in nginx's words where it has them.
    fn what(self) -> &'static str {
        match self {
            Reason::ConnectRefused | Reason::ConnectFailed => "upstream connect() failed",
            Reason::ConnectTimeout => "upstream timed out while connecting",
            Reason::TlsVerify => "upstream TLS certificate verify error",
            Reason::TlsHandshake => "upstream TLS handshake failed",
            Reason::Reset => "upstream reset or closed the connection prematurely",
            Reason::Timeout => "upstream timed out",
            Reason::BadResponse => "upstream sent an invalid response",
            Reason::NoServer => "no live upstreams",
            Reason::Overloaded => "upstream overloaded",
        }
    }

    pub fn index(self) -> usize {
        self as usize - 1
    }

    pub fn from_code(code: u8) -> Option<Reason> {
        Reason::ALL.get((code as usize).checked_sub(1)?).copied()
    }

    /// The reason of a failed try; `None` for a failure that is not the
    /// upstream's (the client's, or this server's own).
    pub fn of(e: &Error) -> Option<Reason> {
        let cause = e.cause();
        let io = cause.and_then(|c| c.downcast_ref::<io::Error>());
        let broken = io.is_some_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::UnexpectedEof
            )
        });
        Some(match e.kind() {
            Kind::ConnectFailed => {
                if let Some(t) = cause.and_then(|c| c.downcast_ref::<TlsFailed>()) {
                    return Some(t.reason());
                }
                match io.map(io::Error::kind) {
                    Some(io::ErrorKind::ConnectionRefused) => Reason::ConnectRefused,
                    _ if broken => Reason::Reset,
                    _ => Reason::ConnectFailed,
                }
            }
            Kind::ConnectTimeout => Reason::ConnectTimeout,
            Kind::UpstreamTimeout => Reason::Timeout,
            Kind::Stale => Reason::Reset,
            Kind::InvalidResponse if broken => Reason::Reset,
            Kind::InvalidResponse => Reason::BadResponse,
            Kind::NoServer => Reason::NoServer,
            Kind::Overloaded => Reason::Overloaded,
            _ => return None,
        })
    }
}

/// The cause of a failed TLS handshake with a server, so that its reason
/// is known apart from the connect before it.
#[derive(Debug)]
pub struct TlsFailed(pub io::Error);

impl TlsFailed {
    fn reason(&self) -> Reason {
        let rustls = self
            .0
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>());
        match rustls {
            Some(rustls::Error::InvalidCertificate(_)) => Reason::TlsVerify,
            _ => Reason::TlsHandshake,
        }
    }
}

impl fmt::Display for TlsFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for TlsFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// How often one server's failures of one reason are logged, per core.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// One core's error-log gate for one reason of one server: the first
/// failure is logged, then at most one line per [`LOG_EVERY`], which says
/// how many were left out since the last.
#[derive(Debug, Default)]
pub struct Gate {
    next: Option<Instant>,
    suppressed: u64,
}

impl Gate {
    /// Logs `e` at warn unless a line for the same reason went out less
    /// than [`LOG_EVERY`] ago; `server` is `None` for a failure of the
    /// whole upstream.
    pub fn warn(
        &mut self,
        reason: Reason,
        e: &Error,
        upstream: &str,
        server: Option<&dyn fmt::Display>,
    ) {
        let Some(left_out) = self.admit(Instant::now()) else {
            return;
        };
        let what = reason.what();
        let token = reason.token();
        match (server, left_out) {
            (Some(s), 0) => {
                tracing::warn!(
                    reason = token,
                    "{what}: {e}, upstream \"{upstream}\" server {s}"
                )
            }
            (Some(s), n) => tracing::warn!(
                reason = token,
                "{what}: {e}, upstream \"{upstream}\" server {s} ({n} more like it not logged)"
            ),
            (None, 0) => tracing::warn!(reason = token, "{what}: {e}, upstream \"{upstream}\""),
            (None, n) => tracing::warn!(
                reason = token,
                "{what}: {e}, upstream \"{upstream}\" ({n} more like it not logged)"
            ),
        }
    }
}

impl Gate {
    /// Whether a line may go out at `now`, and if so how many were left
    /// out since the last.
    fn admit(&mut self, now: Instant) -> Option<u64> {
        if self.next.is_some_and(|t| now < t) {
            self.suppressed += 1;
            return None;
        }
        self.next = Some(now + LOG_EVERY);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// A gate for each reason.
#[derive(Debug, Default)]
pub struct Gates([Gate; Reason::ALL.len()]);

impl Gates {
    pub fn warn(
        &mut self,
        reason: Reason,
        e: &Error,
        upstream: &str,
        server: Option<&dyn fmt::Display>,
    ) {
        self.0[reason.index()].warn(reason, e, upstream, server);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_their_reasons() {
        let io_err = |k: io::ErrorKind| io::Error::from(k);
        let cases = [
            (
                Error::new(Kind::ConnectFailed, "c")
                    .because(io_err(io::ErrorKind::ConnectionRefused)),
                Some(Reason::ConnectRefused),
            ),
            (
                Error::new(Kind::ConnectFailed, "c").because(io_err(io::ErrorKind::NotFound)),
                Some(Reason::ConnectFailed),
            ),
            (
                Error::new(Kind::ConnectFailed, "t").because(TlsFailed(io::Error::new(
                    io::ErrorKind::InvalidData,
                    rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
                ))),
                Some(Reason::TlsVerify),
            ),
            (
                Error::new(Kind::ConnectFailed, "t")
                    .because(TlsFailed(io_err(io::ErrorKind::UnexpectedEof))),
                Some(Reason::TlsHandshake),
            ),
            (
                Error::new(Kind::InvalidResponse, "r")
                    .because(io_err(io::ErrorKind::ConnectionReset)),
                Some(Reason::Reset),
            ),
            (
                Error::new(Kind::InvalidResponse, "r"),
                Some(Reason::BadResponse),
            ),
            (
                Error::new(Kind::UpstreamTimeout, "r"),
                Some(Reason::Timeout),
            ),
            (Error::new(Kind::NoServer, "r"), Some(Reason::NoServer)),
            (Error::new(Kind::BadRequest, "r"), None),
        ];
        for (e, want) in cases {
            assert_eq!(Reason::of(&e), want, "{e:?}");
        }
        for (i, r) in Reason::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
            assert_eq!(Reason::from_code(r as u8), Some(r));
        }
        assert_eq!(Reason::from_code(0), None);
    }

    #[test]
    fn a_gate_lets_one_line_a_window_through_and_counts_the_rest() {
        let mut g = Gate::default();
        let t = Instant::now();
        assert_eq!(g.admit(t), Some(0));
        assert_eq!(g.admit(t + Duration::from_secs(1)), None);
        assert_eq!(g.admit(t + Duration::from_secs(9)), None);
        assert_eq!(g.admit(t + LOG_EVERY), Some(2));
        assert_eq!(g.admit(t + LOG_EVERY * 2), Some(0));
    }
}
