//! One core's HTTP/2 connections to a server: few, each carrying many
//! requests at once. A stream goes on the least loaded connection with a
//! stream free; a new connection opens only when every one is full and
//! fewer than `h2_connections` are open (else the stream waits on the
//! least loaded for one to end). The reaper PINGs quiet connections and
//! drops dead and idle ones.

use std::rc::Rc;
use std::time::Instant;

use ringside_http::h2::client::{ClientConn, ClientSettings};
use ringside_http::Kind;

use super::{Chosen, Local};
use crate::upstream::settings::{HttpVersion, UpstreamConfig};

/// The largest response head taken from a server, decoded.
const MAX_HEAD: usize = 64 * 1024;

impl Local {
    /// Counts a try to `c` that takes no connection of its own (a stream)
    /// as in flight; end it with [`Local::release`]. False when the
    /// server left the upstream since it was picked.
    pub fn begin(&mut self, c: &Chosen) -> bool {
        self.enter(c).is_some()
    }

    /// The connection a new stream to `c` goes on (see above).
    pub fn h2_conn(&mut self, c: &Chosen) -> Option<Rc<ClientConn>> {
        let i = self.find(c)?;
        let h = self.shared.cfg.http()?.h2;
        let p = &mut self.peers[i];
        p.h2.retain(|c| c.usable());
        p.stats.h2_conns.set(p.h2.len() as u64);
        let best =
            p.h2.iter()
                .min_by_key(|c| {
                    let (n, max) = c.load();
                    (n >= max, n)
                })
                .cloned();
        let free = best.as_ref().is_some_and(|b| {
            let (n, max) = b.load();
            n < max
        });
        if free || p.h2.len() >= h.connections as usize {
            return best;
        }
        let conn = ClientConn::new(ClientSettings {
            stream_window: h.stream_window,
            conn_window: h.stream_window.saturating_mul(16).min((1 << 31) - 1),
            max_head: MAX_HEAD,
        });
        p.h2.push(conn.clone());
        p.stats.h2_conns.set(p.h2.len() as u64);
        self.open_h2(c, conn.clone());
        Some(conn)
    }

    /// Whether requests to `c` go over HTTP/1.1 (`auto`, and the server
    /// chose it).
    pub fn http1(&self, c: &Chosen) -> bool {
        self.find(c).is_some_and(|i| self.peers[i].http1)
    }

    /// The server at `c` chose HTTP/1.1: `s` is its first connection.
    fn speaks_http1(&mut self, c: &Chosen, s: ringside_runtime::net::TcpStream) {
        let max = self.pool_max();
        if let Some(i) = self.find(c) {
            let p = &mut self.peers[i];
            p.http1 = true;
            p.give_back(s, max);
            p.idle_changed();
        }
    }

    /// Connects `conn` in a task of its own: the streams opened on it
    /// meanwhile wait in its output.
    fn open_h2(&self, c: &Chosen, conn: Rc<ClientConn>) {
        let Some(me) = self.me.upgrade() else {
            conn.connect_failed(false);
            return;
        };
        let chosen = c.clone();
        ringside_runtime::task::spawn(async move {
            // The caller holds the core's upstream borrowed: an engine that
            // runs a new task at once (glommio) must not take it here.
            ringside_runtime::task::yield_now().await;
            match crate::upstream::acquire::connect(&chosen, &me).await {
                Ok(s) if s.is_tls() && !s.alpn_is(b"h2") => {
                    // `auto`: the server's choice, kept for its later
                    // requests, and this connection pooled for them.
                    let auto =
                        me.borrow().shared.cfg.http().map(|h| h.version) == Some(HttpVersion::Auto);
                    if auto {
                        me.borrow_mut().speaks_http1(&chosen, s);
                        conn.chose_http1();
                    } else {
                        tracing::warn!(server = %chosen.addr, "the server did not agree to HTTP/2 (ALPN)");
                        conn.connect_failed(false);
                    }
                }
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    conn.attach(s);
                }
                Err(e) => conn.connect_failed(e.kind() == Kind::ConnectTimeout),
            }
        });
    }
}

/// The reaper's turn over one server's connections.
pub(super) fn reap(conns: &mut Vec<Rc<ClientConn>>, now: Instant, cfg: &UpstreamConfig) {
    let Some(h) = cfg.http().map(|h| h.h2) else {
        return;
    };
    conns.retain(|c| {
        if !c.check(now, h.ping_interval, cfg.timeouts.send) {
            return false;
        }
        let idle = c
            .idle_since()
            .is_some_and(|t| now.duration_since(t) >= cfg.pool.idle_timeout);
        if idle {
            c.retire();
        }
        !idle
    });
}
