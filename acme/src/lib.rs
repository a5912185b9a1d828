//! ringside's ACME client: the protocol of RFC 8555 (accounts, orders,
//! authorizations, finalize, download, revocation), the HTTP-01 and
//! TLS-ALPN-01 challenges (RFC 8737), ACME Renewal Information (RFC 9773),
//! External Account Binding, and what a client keeps between runs.
//!
//! It is blocking and owns no thread: the server runs it on one thread of
//! its own, so the request path never waits on a CA. Every call takes the
//! time it takes the CA to answer, bounded by timeouts.

pub mod ca;
pub mod cert;
pub mod der;
pub mod error;
mod http;
mod jws;
mod pem;
pub mod state;
mod time;

pub use ca::{
    Account, AccountKey, Ca, Challenge, ChallengeKind, Eab, Issued, KeyType, Meta, OrderSpec,
    Responder,
};
pub use cert::{renew_at, Backoff, CertInfo, RenewalInfo};
pub use error::{Error, Problem};
pub use state::StateDir;
