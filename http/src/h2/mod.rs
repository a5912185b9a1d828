//! HTTP/2 (RFC 9113), the second protocol driver beside HTTP/1: over TLS
//! where ALPN chose `h2`, and as h2c on a plain listener when the first
//! bytes are the connection preface (see `h1::server`, which looks).
//!
//! The codec is our own (frames, HPACK with a bounded table, flow
//! control, the stream states and their limits), driven on the core's
//! own runtime through [`io::Io`]. Each stream is served in a task of its
//! own on the same core ([`stream`]) on the neutral exchange, so every
//! handler runs unchanged; nothing crosses cores. The client's side, for
//! upstreams, is [`client`], on the same frames and HPACK.
//!
//! ```text
//! preface ─▶ SETTINGS ─▶ accept ─┬─▶ stream task: head ─▶ path ─▶ handler ─▶ HEADERS, DATA
//!   (header timeout)             │   (one per stream, up to max_concurrent_streams)
//!                                ├─ flood budget spent ─▶ GOAWAY ENHANCE_YOUR_CALM
//!                                ├─ frame error (flood.rs) ─▶ GOAWAY naming it
//!                                ├─ drain ─▶ GOAWAY (last stream id), streams finish
//!                                └─ no stream for keepalive_idle ─▶ close
//! ```

pub mod client;
mod file;
pub mod frame;
pub mod hpack;
mod io;
mod recent;
mod recv;
pub(crate) mod request;
mod state;
pub mod stats;
pub(crate) mod stream;
pub mod tunnel;
pub(crate) mod wire;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use bytes::BytesMut;
use ringside_runtime::link::Link;
use ringside_runtime::reload::Current;

use self::frame::Reason;
use self::io::Io;
use self::recv::{Found, Reader};
use self::state::{Local, State};
use crate::Handler;

/// The connection preface a client opens with (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What the connection task and its streams share.
pub(crate) struct Conn {
    pub(crate) link: Rc<Link>,
    pub(crate) st: RefCell<State>,
    /// Streams being served now.
    open: Cell<u32>,
    /// When the connection, with no stream open, is closed.
    idle_until: Cell<Option<Instant>>,
    /// A send is waiting on the client: its deadline holds the slot.
    writing: Cell<bool>,
    /// The client holds as many connections as it may: each stream is
    /// answered with the limit's status, and the connection drains.
    pub(crate) over_limit: bool,
}

impl Conn {
    fn stream_started(&self) {
        self.open.set(self.open.get() + 1);
        if self.idle_until.take().is_some() {
            self.rearm();
        }
    }

    /// A stream's task ended; the last one starts the idle timeout.
    fn stream_ended(&self) {
        let open = self.open.get() - 1;
        self.open.set(open);
        if open == 0 {
            self.idle_until
                .set(Some(Instant::now() + self.link.cfg.timeouts.keepalive_idle));
            self.rearm();
            // The connection task decides whether the connection ends.
            self.st.borrow_mut().wake_task();
        }
    }

    /// Sets the connection's one deadline in the engine's table: a send
    /// waiting on the client first, else the idle timeout, else none (the
    /// streams' own waits bound themselves).
    fn rearm(&self) {
        if self.writing.get() {
            return;
        }
        match self.idle_until.get() {
            Some(at) => self.link.watch(at, false),
            None => self.link.disarm(),
        }
    }
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
    let local = Local {
        max_streams: s.max_concurrent_streams,
        stream_window: s.stream_window,
        connection_window: s.connection_window,
        max_head: limits.max_head.min(u16::MAX as usize),
        flood_budget: s.flood_budget,
    };
    let conn = Rc::new(Conn {
        link: link.clone(),
        st: RefCell::new(State::new(local)),
        open: Cell::new(0),
        idle_until: Cell::new(Some(Instant::now() + link.cfg.timeouts.header_read)),
        writing: Cell::new(false),
        over_limit,
    });
    conn.rearm();
    let mut io = Io::new(conn.clone(), first);
    let mut reader = Reader::new();
    let mut found = Found::default();
    let mut drain = std::pin::pin!(ringside_runtime::shutdown::drain_begun());
    let mut drained = false;
    let mut notice: Option<std::pin::Pin<Box<ringside_runtime::task::Sleep>>> = None;
    let mut preface = false;
    let end = std::future::poll_fn(|cx| {
        conn.st.borrow_mut().task_polled(cx.waker());
        if !drained && drain.as_mut().poll(cx).is_ready() {
            drained = true;
            if ringside_runtime::shutdown::handing_over() {
                notice = Some(goaway_notice(&conn));
            } else {
                goaway(&conn);
            }
        }
        if notice
            .as_mut()
            .is_some_and(|n| n.as_mut().poll(cx).is_ready())
        {
            notice = None;
            goaway(&conn);
        }
        // Read and act on what the client sent, as long as it sends.
        let why = loop {
            if conn.st.borrow().failed.is_some() {
                break None;
            }
            match io.read(cx) {
                Poll::Pending => {
                    if conn.open.get() == 0 {
                        // Idle: nothing kept for streams to come.
                        found = Found::default();
                    }
                    break None;
                }
                Poll::Ready(Err(e)) => break Some(e),
                Poll::Ready(Ok(())) => {}
            }
            if !preface {
                match io.preface() {
                    Some(true) => {
                        preface = true;
                        conn.st.borrow_mut().preface();
                        conn.idle_until
                            .set(Some(Instant::now() + link.cfg.timeouts.keepalive_idle));
                        conn.rearm();
                    }
                    Some(false) => {
                        return Poll::Ready(Some(std::io::ErrorKind::InvalidData.into()))
                    }
                    None => continue,
                }
            }
            io.frames(&mut reader, &limits, &mut found);
            let (handler, _) = current.get();
            for _ in 0..std::mem::take(&mut found.malformed) {
                handler.refused(&crate::Refusal {
                    status: 400,
                    body_bytes: 0,
                    line: None,
                    elapsed: std::time::Duration::ZERO,
                    peer: &|| link.client_addr().ok(),
                });
            }
            for opened in found.opened.drain(..) {
                stats::add(|s| &s.streams, 1);
                conn.stream_started();
                ringside_runtime::task::spawn_with(|| {
                    stream::serve(conn.clone(), current.clone(), opened)
                });
                if conn.over_limit && !drained {
                    // One answer, then no more streams on it.
                    drained = true;
                    goaway(&conn);
                }
            }
        };
        if notice.is_some() && conn.st.borrow().notice_acked {
            notice = None;
            goaway(&conn);
        }
        // The end of the connection's turn: what it and its streams wrote
        // leaves now, in one send.
        if let Poll::Ready(Err(e)) = io.push(cx) {
            return Poll::Ready(Some(e));
        }
        if why.is_some() {
            return Poll::Ready(why);
        }
        let st = conn.st.borrow();
        let idle = conn.open.get() == 0;
        if st.failed.is_some() || (idle && st.goaway_last.is_some()) {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await;
    if let Some(e) = end {
        tracing::debug!(error = %e, "HTTP/2 connection ended");
    }
    if let Some(reason) = conn.st.borrow().failed {
        tracing::debug!(
            resets = conn.st.borrow().resets_received,
            %reason,
            "HTTP/2 connection error"
        );
    }
    // The last frames (a GOAWAY), within the send timeout.
    let _ = std::future::poll_fn(|cx| io.push(cx)).await;
    conn.st.borrow_mut().close();
    // A client cut off mid-send (a frame error, a flood) still has bytes
    // on the way; closing on them would reset the connection and could
    // destroy the GOAWAY before the client reads it.
    crate::linger::linger(&link, None).await;
}

/// The most a handover's first GOAWAY stands before the final one, for a
/// client that does not acknowledge the PING sent with it.
const GOAWAY_NOTICE: std::time::Duration = std::time::Duration::from_secs(5);

/// The payload of the PING sent with a handover's first GOAWAY.
pub(crate) const NOTICE_PING: &[u8] = b"handover";

/// A handover's first GOAWAY (RFC 9113 section 6.8), naming the highest
/// stream id: the client opens no more streams here and reconnects (to the
/// new process), while the streams it sent before reading it are still
/// served, rather than refused as a GOAWAY naming the last id seen would
/// refuse them. A PING follows it, and the final GOAWAY goes out when the
/// client acknowledges that PING: having read the first GOAWAY before it,
/// the client opened nothing since, and every stream it opened before
/// came ahead of the acknowledgement (one round trip, however slow the
/// client is to read), or after [`GOAWAY_NOTICE`] at most.
fn goaway_notice(conn: &Conn) -> std::pin::Pin<Box<ringside_runtime::task::Sleep>> {
    let mut st = conn.st.borrow_mut();
    frame::put_goaway(&mut st.out, (1 << 31) - 1, Reason::NO_ERROR, b"");
    let payload: &[u8; 8] = NOTICE_PING.try_into().expect("8 bytes");
    frame::put_ping(&mut st.out, false, payload);
    stats::add(|s| &s.goaways_sent, 1);
    Box::pin(ringside_runtime::task::sleep(GOAWAY_NOTICE))
}

/// GOAWAY for a drain: the streams opened so far finish, no more are
/// served.
fn goaway(conn: &Conn) {
    let mut st = conn.st.borrow_mut();
    if st.goaway_last.is_some() || st.failed.is_some() {
        return;
    }
    let last = st.last_peer_id;
    st.goaway_last = Some(last);
    frame::put_goaway(&mut st.out, last, Reason::NO_ERROR, b"");
    stats::add(|s| &s.goaways_sent, 1);
}
