//! Where a server listens.

use std::net::SocketAddr;
use std::sync::Arc;

/// Where a server listens: TCP, or a unix socket.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerAddr {
    Inet(SocketAddr),
    Unix(Arc<std::path::Path>),
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Inet(a) => a.fmt(f),
            PeerAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}
