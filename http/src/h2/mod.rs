//! HTTP/2 (RFC 9113), the second protocol driver beside HTTP/1: over TLS
//! where ALPN chose `h2`, and as h2c on a plain listener when the first
//! bytes are the connection preface (see `h1::server`, which looks).
//!
//! The codec is hyperium's `h2` (framing, HPACK with a bounded table, flow
//! control, the stream state machine and its limits), driven on the core's
//! own runtime through [`io::Io`]. Each stream is served in a task of its
//! own on the same core ([`stream`]) on the neutral exchange, so every
//! handler runs unchanged; nothing crosses cores.
//!
//! ```text
//! preface ─▶ SETTINGS ─▶ accept ─┬─▶ stream task: head ─▶ path ─▶ handler ─▶ HEADERS, DATA
//!   (header timeout)             │   (one per stream, up to max_concurrent_streams)
//!                                ├─ flood budget spent ─▶ GOAWAY ENHANCE_YOUR_CALM
//!                                ├─ frame error (flood.rs) ─▶ GOAWAY naming it
//!                                ├─ drain ─▶ GOAWAY (last stream id), streams finish
//!                                └─ no stream for keepalive_idle ─▶ close
//! ```

mod flood;
mod io;
mod request;
pub mod stats;
mod stream;
pub(crate) mod wire;

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use ringside_runtime::link::Link;
use ringside_runtime::reload::Current;

use crate::Handler;

/// The connection preface a client opens with (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What the connection task and its streams share.
pub(crate) struct Conn {
    pub(crate) link: Rc<Link>,
    pub(crate) watch: Rc<flood::Watch>,
    /// Streams being served now.
    open: Cell<u32>,
    /// The client holds as many connections as it may: each stream is
    /// answered with the limit's status, and the connection drains.
    pub(crate) over_limit: bool,
}

impl Conn {
    fn stream_started(&self) {
        self.open.set(self.open.get() + 1);
    }

    /// A stream's task ended; the last one starts the idle timeout.
    fn stream_ended(&self) {
        let open = self.open.get() - 1;
        self.open.set(open);
        if open == 0 {
            self.watch
                .set_idle_until(Some(Instant::now() + self.link.cfg.timeouts.keepalive_idle));
            self.watch.rearm(&self.link);
        }
    }
}

/// A stream the codec accepted: its request and the handle to answer it.
type Accepted = (
    http::Request<h2::RecvStream>,
    h2::server::SendResponse<Bytes>,
);

enum Event {
    /// Boxed: a stream's handles are large, the other events small.
    Accept(Option<Result<Box<Accepted>, h2::Error>>),
    Stop(h2::Reason),
    Drain,
    /// A send failed or timed out: the connection is gone.
    Broken(std::io::Error),
}

/// Serves one HTTP/2 connection until it closes. `first` holds what was
/// read already (the preface, when HTTP/1's side recognised it);
/// `over_limit`: past its client's connection limit (`client_limit`).
pub(crate) async fn serve<H: Handler>(
    link: Link,
    current: Rc<Current<H>>,
    first: BytesMut,
    over_limit: bool,
) {
    let s = link.cfg.h2;
    let limits = link.cfg.limits;
    stats::add(|s| &s.connections, 1);
    // Never idle in the engine's sense: a drain reaches this connection
    // through its GOAWAY below, not by a shut socket.
    link.set_idle(false);
    let link = Rc::new(link);
    let watch = Rc::new(flood::Watch::new(s.flood_budget));
    let io = io::Io::new(link.clone(), first, watch.clone());
    let out = io.out();
    let mut b = h2::server::Builder::new();
    b.max_concurrent_streams(s.max_concurrent_streams)
        .initial_window_size(s.stream_window)
        .initial_connection_window_size(s.connection_window)
        .max_header_list_size(limits.max_head.min(u16::MAX as usize) as u32)
        // MadeYouReset: streams the client makes the codec reset cost the
        // same budget as the floods the watch counts.
        .max_local_error_reset_streams(Some(s.flood_budget as usize));
    // SETTINGS_ENABLE_CONNECT_PROTOCOL stays off: with no extended CONNECT
    // here, a browser then opens its WebSocket over HTTP/1.1, which works.
    watch.set_idle_until(Some(Instant::now() + link.cfg.timeouts.header_read));
    watch.rearm(&link);
    // The server's SETTINGS stay in `out` until the first turn below sends
    // them: the handshake only waits for the client's preface, which a
    // client sends without waiting for ours. Whatever polls the codec must
    // push `out` after, as that loop does.
    let mut h2c = match b.handshake::<_, Bytes>(io).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "HTTP/2 handshake failed");
            return;
        }
    };
    watch.set_idle_until(Some(Instant::now() + link.cfg.timeouts.keepalive_idle));
    watch.rearm(&link);
    let conn = Rc::new(Conn {
        link,
        watch,
        open: Cell::new(0),
        over_limit,
    });
    let mut drain = std::pin::pin!(ringside_runtime::shutdown::drain_begun());
    let (mut calmed, mut drained) = (false, false);
    loop {
        let ev = std::future::poll_fn(|cx| {
            if !calmed {
                if let Some(reason) = conn.watch.stopped() {
                    return Poll::Ready(Event::Stop(reason));
                }
            }
            if !drained && drain.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Event::Drain);
            }
            let accepted = h2c
                .poll_accept(cx)
                .map(|a| Event::Accept(a.map(|r| r.map(Box::new))));
            // The end of the codec's turn: what it wrote leaves now, in
            // one send (a send still under way wakes this task when done).
            if let Poll::Ready(Err(e)) = out.borrow_mut().push(cx) {
                return Poll::Ready(Event::Broken(e));
            }
            accepted
        })
        .await;
        match ev {
            Event::Accept(Some(Ok(accepted))) => {
                let (req, respond) = *accepted;
                stats::add(|s| &s.streams, 1);
                conn.stream_started();
                conn.watch.set_idle_until(None);
                conn.watch.rearm(&conn.link);
                ringside_runtime::task::spawn(stream::serve(
                    conn.clone(),
                    current.clone(),
                    req,
                    respond,
                ));
                if conn.over_limit && !drained {
                    // One answer, then no more streams on it.
                    drained = true;
                    h2c.graceful_shutdown();
                }
            }
            Event::Accept(Some(Err(e))) => {
                tracing::debug!(error = %e, "HTTP/2 connection ended");
                break;
            }
            Event::Accept(None) => break,
            Event::Stop(reason) => {
                calmed = true;
                tracing::debug!(resets = conn.watch.resets(), %reason, "HTTP/2 connection error");
                h2c.abrupt_shutdown(reason);
                // The codec reads no more; it sends its GOAWAY, then ends.
                conn.watch
                    .set_idle_until(Some(Instant::now() + std::time::Duration::from_secs(1)));
                conn.watch.rearm(&conn.link);
            }
            Event::Drain => {
                drained = true;
                h2c.graceful_shutdown();
            }
            Event::Broken(e) => {
                tracing::debug!(error = %e, "HTTP/2 connection ended");
                break;
            }
        }
    }
    // The codec's last frames (its GOAWAY), within the send timeout.
    let _ = std::future::poll_fn(|cx| out.borrow_mut().push(cx)).await;
    drop(h2c);
    // A client cut off mid-send (a frame error, a flood) still has bytes
    // on the way; closing on them would reset the connection and could
    // destroy the GOAWAY before the client reads it.
    crate::linger::linger(&conn.link, None).await;
}
