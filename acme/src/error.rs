//! Why a call to the CA failed, and the CA's own word for it: the problem
//! document (RFC 7807 as RFC 8555 §6.7 uses it).
use std::time::Duration;

use serde_json::Value;

/// Why a call failed.
#[derive(Debug, Clone)]
pub enum Error {
    /// The CA could not be reached or the connection failed (DNS, TCP, TLS,
    /// timeout, a cut response): worth retrying later.
    Transport(String),
    /// The CA answered with a problem document (RFC 8555 §6.7), or an
    /// authorization or order became invalid (its `error` problem).
    Problem(Problem),
    /// The CA answered something this client cannot use.
    Protocol(String),
}

impl Error {
    /// The wait the CA asked for (Retry-After), if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Problem(p) => p.retry_after,
            _ => None,
        }
    }
}

impl std::fmt::Display for Error {
    /// One line: for a problem, its type, detail and status.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Transport(e) => write!(f, "cannot reach the CA: {e}"),
            Error::Protocol(e) => write!(f, "unexpected answer from the CA: {e}"),
            Error::Problem(p) => {
                write!(f, "{}: {}", p.kind, p.detail.replace(['\r', '\n'], " "))?;
                if p.status != 0 {
                    write!(f, " (HTTP {})", p.status)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {}

/// A problem document (RFC 7807 as RFC 8555 §6.7 uses it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The HTTP status it came with (0 for an authorization's or order's `error`).
    pub status: u16,
    /// `type`, e.g. `urn:ietf:params:acme:error:rejectedIdentifier`.
    pub kind: String,
    pub detail: String,
    /// The whole document as the CA sent it, for the log.
    pub json: String,
    pub retry_after: Option<Duration>,
}

impl Problem {
    pub(crate) fn from_value(status: u16, v: &Value, retry_after: Option<Duration>) -> Problem {
        Problem {
            status,
            kind: v["type"].as_str().unwrap_or("about:blank").to_string(),
            detail: v["detail"].as_str().unwrap_or("").to_string(),
            json: v.to_string(),
            retry_after,
        }
    }
}
