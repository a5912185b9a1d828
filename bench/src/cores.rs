//! One core's state, shared by its connection tasks, and what the cores
//! share: the worker (`crate::worker`) builds them, each connection task
//! (`crate::conn`) runs on them.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::args::Config;
use crate::rate::{Ticket, Tickets};
use crate::stats::Stats;
use crate::urls::Target;

/// A URL's document length before its first response.
pub const UNSET: u64 = u64::MAX;

/// A counter alone on its cache line, so cores never write the same line.
#[repr(align(128))]
#[derive(Default)]
pub struct Padded(pub AtomicU64);

/// What the cores share.
pub struct Shared {
    /// The first response's body length, per target.
    pub doc_len: Vec<AtomicU64>,
    /// The Server header of the first response.
    pub server: OnceLock<String>,
    /// Requests finished (complete or failed), per core.
    pub progress: Vec<Padded>,
    /// Per target, under `--siege`: its page's assets, once a response
    /// for it was parsed (see [`crate::assets`]).
    pub assets: Vec<OnceLock<Vec<Target>>>,
    /// The first TLS handshake's figures, for the report.
    pub tls_info: OnceLock<crate::tls::TlsInfo>,
    /// The first failed TLS handshake's (or ALPN's) reason, said once.
    pub tls_error: OnceLock<String>,
}

impl Shared {
    pub fn new(targets: usize, cores: usize) -> Shared {
        Shared {
            doc_len: (0..targets).map(|_| AtomicU64::new(UNSET)).collect(),
            server: OnceLock::new(),
            progress: (0..cores).map(|_| Padded::default()).collect(),
            assets: (0..targets).map(|_| OnceLock::new()).collect(),
            tls_info: OnceLock::new(),
            tls_error: OnceLock::new(),
        }
    }

    pub fn done(&self) -> u64 {
        self.progress
            .iter()
            .map(|p| p.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// One core's state, shared by its connection tasks.
pub struct Core {
    pub index: usize,
    pub cfg: Arc<Config>,
    pub targets: Arc<Vec<Target>>,
    pub shared: Arc<Shared>,
    pub tickets: Tickets,
    pub stats: RefCell<Stats>,
    /// Longest request, for sizing send buffers once.
    pub max_request: usize,
    /// This core's TLS client (and session cache), for https targets.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl Core {
    /// Which target a request goes to: the URLs in turn.
    #[inline]
    pub fn target_of(&self, t: Ticket) -> usize {
        ((t.seq + self.index as u64) % self.targets.len() as u64) as usize
    }

    /// What a request is sent to: its URL, or one of that page's assets.
    #[inline]
    pub fn target(&self, t: Ticket) -> &Target {
        let page = self.target_of(t);
        match t.part {
            0 => &self.targets[page],
            n => &self.shared.assets[page].get().expect("assets known")[n as usize - 1],
        }
    }

    pub fn wants_server(&self) -> bool {
        self.shared.server.get().is_none()
    }
}
