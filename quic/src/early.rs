//! 0-RTT (`[http3] early_data`): the TLS side of accepting a resuming
//! client's early data on HTTP/3 only, the TCP listeners' settings as
//! they are.
//!
//! rustls accepts early data only on a session it resumed from its own
//! store (stateful resumption, RFC 8446 §8.1), never from a stateless
//! ticket, and QUIC demands the early data limit be `u32::MAX` (RFC 9001
//! §4.6.1). A stateful ticket is taken out of the store when it is used,
//! so each is good for one resumption: a replay of the same ClientHello
//! finds nothing to resume and gets no 0-RTT. That bounds replay to what
//! an attacker can do before the ticket's first use; the HTTP/3 layer
//! serves only safe methods from early data for what remains.

use std::sync::{Arc, OnceLock};

use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};

/// Sessions the process keeps for QUIC resumption, every core's together
/// (a client's next connection may land on any core). Each connection is
/// sent rustls's two tickets; an entry is a few hundred bytes.
const SESSIONS: usize = 16 * 1024;

fn sessions() -> Arc<dyn StoresServerSessions> {
    static CACHE: OnceLock<Arc<ServerSessionMemoryCache>> = OnceLock::new();
    CACHE
        .get_or_init(|| ServerSessionMemoryCache::new(SESSIONS))
        .clone()
}

/// Makes `t` (the listener's settings, cloned for QUIC) accept early data.
///
/// A listener with stateless tickets gets stateful ones in a store of
/// QUIC's own instead. One without a ticketer keeps its store: a
/// `client_auth` listener's is its verification context's own, which must
/// not be mixed with others; and `tickets = false` sends no tickets, so
/// nothing resumes and no early data comes.
pub(crate) fn accept(t: &mut rustls::ServerConfig) {
    t.max_early_data_size = u32::MAX;
    if t.ticketer.enabled() {
        t.ticketer = Arc::new(ringside_runtime::tls::StatefulTickets);
        t.session_storage = sessions();
    }
}
