//! The connection driver: waits for a request without holding buffers, reads
//! and checks its head, runs the handler, and keeps the connection, pipelines
//! the next request or closes.
//!
//! ```text
//! idle ──readable──▶ head ──complete──▶ handler ──▶ after
//!  ▲  (no buffers)    │ malformed/limit: status + close     │ keep-alive: next
//!  │                  │ header timeout: 408 + close         │ close: flush, end
//!  └──────────── rbuf empty: flush, give buffers back ◀─────┘ rbuf not empty: head
//! ```
//!
//! Responses to pipelined requests collect in the write buffer and go out in
//! one write, before the driver next waits for the socket.

use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use super::exchange::{Exchange, DISCARD_MAX};
use super::link::Link;
use super::response::write_error;
use super::{parse_head_into, Limits, ParsedHead};
use crate::config::Timeouts;
use crate::net::TcpStream;
use crate::reload::Current;
use crate::shutdown::{draining, BusyGuard};

/// What a connection needs to know, shared by all connections of a worker.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    pub limits: Limits,
    pub timeouts: Timeouts,
    /// Open client connections per worker at most.
    pub max_connections: usize,
    /// Per listener index: its TLS settings (see `ServerConfig::tls`).
    pub tls: Vec<Option<crate::tls::TlsAcceptor>>,
}

/// Answers requests. One value per worker, shared by its connections.
#[allow(async_fn_in_trait)] // workers are single-threaded: no Send bound wanted
pub trait Handler: 'static {
    /// Handles one request. Returning without a response answers 500; an
    /// error means the client connection failed and is closed.
    async fn handle(&self, ex: &mut Exchange<'_>) -> io::Result<()>;

    /// Called once per request after its response is settled, with when its
    /// head was complete: the place for access logs and metrics.
    #[inline]
    fn done(&self, _ex: &Exchange<'_>, _started: Instant) {}

    /// Called for a request refused before any handler ran (a malformed or
    /// oversized head, a head timeout), with the status and body length
    /// sent and a way to learn the client's address.
    #[inline]
    fn refused(
        &self,
        _status: u16,
        _body_bytes: u64,
        _peer: &dyn Fn() -> Option<std::net::SocketAddr>,
    ) {
    }
}

/// Size of a read or write buffer; large enough for a default-limit head.
const BUF_SIZE: usize = 16 * 1024;

fn new_buf() -> BytesMut {
    BytesMut::with_capacity(BUF_SIZE)
}

/// Buffers and head storage of a connection inside a request; pooled per
/// core so that idle connections own none of it, and memory follows the
/// number of busy connections rather than of open ones.
struct Active {
    rbuf: BytesMut,
    wbuf: BytesMut,
    head: ParsedHead,
}

thread_local! {
    // Boxed so a connection holds one pointer, and taking or returning one
    // moves 8 bytes rather than the whole head table.
    #[allow(clippy::vec_box)]
    static ACTIVE_POOL: std::cell::RefCell<Vec<Box<Active>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn acquire() -> Box<Active> {
    ACTIVE_POOL
        .with(|p| p.borrow_mut().pop())
        .unwrap_or_else(|| {
            Box::new(Active {
                rbuf: new_buf(),
                wbuf: new_buf(),
                head: ParsedHead::empty(),
            })
        })
}

fn release(mut a: Box<Active>) {
    a.rbuf.clear();
    a.wbuf.clear();
    // Buffers still shared with a body piece the handler kept are replaced.
    if !a.rbuf.try_reclaim(BUF_SIZE) {
        a.rbuf = new_buf();
    }
    if !a.wbuf.try_reclaim(BUF_SIZE) {
        a.wbuf = new_buf();
    }
    ACTIVE_POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 256 {
            p.push(a);
        }
    });
}

enum Next {
    KeepAlive,
    Close,
    /// Close after reading what the client still sends for a while, so that
    /// our last response is not destroyed by a reset.
    Linger,
}

/// Serves one connection until it closes.
///
/// A plain fn returning an `async move` block rather than an `async fn`:
/// an async fn keeps each argument twice in its future (once captured, once
/// moved into the body), and every idle connection holds this future.
///
/// With `tls`, the handshake runs first, within the header timeout.
pub fn serve<H: Handler>(
    mut stream: TcpStream,
    current: Rc<Current<H>>,
    tls: Option<crate::tls::TlsAcceptor>,
) -> impl std::future::Future<Output = ()> {
    let _ = stream.set_nodelay(true);
    // Started here, so the future keeps a flag rather than the settings.
    let refused = tls.is_some_and(|t| match stream.start_tls_server(&t) {
        Ok(()) => false,
        Err(e) => {
            tracing::warn!(error = %e, "TLS not started");
            true
        }
    });
    let mut link = Link::new(stream, current.conn());
    async move {
        if refused {
            return;
        }
        // Boxed: only TLS connections carry its future, and only until the
        // handshake is over.
        if link.stream.is_tls() && Box::pin(handshake(&link)).await.is_err() {
            return;
        }
        let mut active: Option<Box<Active>> = None;
        let mut first = true;
        let next = loop {
            let buffered = active.as_ref().is_some_and(|a| !a.rbuf.is_empty());
            if !buffered {
                if let Some(a) = active.take() {
                    release(a);
                }
                if draining() {
                    break Next::Close;
                }
                let t = &link.cfg.timeouts;
                let idle = if first {
                    t.header_read
                } else {
                    t.keepalive_idle
                };
                link.guard.set_idle(true);
                let ready = link.readable_until(Instant::now() + idle).await;
                link.guard.set_idle(false);
                if ready.is_err() || link.expired() || draining() {
                    break Next::Close;
                }
            }
            first = false;
            let a = active.get_or_insert_with(acquire);
            let _busy = BusyGuard::new();
            // Taken per request: a reload reaches keep-alive connections at
            // their next request, never in the middle of one.
            let (handler, cfg) = current.get();
            link.cfg = cfg;
            match one_request(&mut link, a, &*handler).await {
                Next::KeepAlive => {
                    let flush_now = a.rbuf.is_empty() || a.wbuf.len() >= DISCARD_MAX as usize;
                    if flush_now && link.flush(&mut a.wbuf).await.is_err() {
                        break Next::Close;
                    }
                }
                other => {
                    let _ = link.flush(&mut a.wbuf).await;
                    break other;
                }
            }
        };
        if let Next::Linger = next {
            Box::pin(linger(&link, active.as_mut().map(|a| &mut a.rbuf))).await;
        }
        if let Some(a) = active.take() {
            release(a);
        }
    }
}

/// Runs the client connection's TLS handshake within the header timeout
/// (a client stalling mid-handshake is a slowloris too).
async fn handshake(link: &Link) -> io::Result<()> {
    let deadline = Instant::now() + link.cfg.timeouts.header_read;
    let r = link.handshake(deadline).await;
    crate::stats::tls_handshake(&r, &link.stream);
    if let Err(e) = &r {
        tracing::debug!(error = %e, "TLS handshake failed");
    }
    r
}

/// Reads one head, runs the handler and settles the body. Responses are
/// left in `a.wbuf` for the caller to flush.
async fn one_request<H: Handler>(link: &mut Link, a: &mut Active, handler: &H) -> Next {
    // The head goes straight into the pooled slot: a ParsedHead local here
    // would stay in this future (and every idle connection's) for good.
    match read_head(link, a).await {
        Ok(()) => {}
        Err(HeadFail::Status(status)) => {
            let body = write_error(&mut a.wbuf, status);
            handler.refused(status, body, &|| link.stream.peer_addr().ok());
            return Next::Linger;
        }
        Err(HeadFail::Closed) => return Next::Close,
    }
    let Active { rbuf, wbuf, head } = a;
    link.sending.set(Default::default());
    let mut head_bytes = rbuf.split_to(head.head_len);
    let max_body = link.cfg.limits.max_body;
    let started = Instant::now();
    let mut ex = Exchange::new(link, head, &head_bytes, rbuf, wbuf, max_body);
    let result = handler.handle(&mut ex).await;
    let next = settle(&mut ex, result).await;
    handler.done(&ex, started);
    drop(ex);
    head_bytes.clear();
    drop(head_bytes);
    next
}

/// After the handler: answer for it if it did not, drop a small unread body,
/// and decide whether the connection goes on.
async fn settle(ex: &mut Exchange<'_>, result: io::Result<()>) -> Next {
    if let Err(e) = &result {
        if !ex.responded() {
            if let Some(status) = ex.body_error {
                ex.send_error(status);
                return Next::Linger;
            }
        }
        tracing::debug!(peer = ?ex.peer().ok(), error = %e, "handler failed; closing");
        return Next::Close;
    }
    if ex.upgraded() {
        return Next::Close;
    }
    if ex.unfinished_stream() {
        // A body that was never ended must not look complete.
        return Next::Close;
    }
    if !ex.responded() {
        if let Some(status) = ex.body_error {
            ex.send_error(status);
            return Next::Linger;
        }
        let _ = ex.send(
            500,
            &[("Content-Type", b"text/plain")],
            b"500 Internal Server Error\n",
        );
    }
    if !ex.keep_alive {
        // A client that asked to close and sent nothing more can be closed
        // on. Otherwise the server chose to close (draining, an unread
        // body) and the client may have sent more already: closing with
        // unread bytes resets the connection and can destroy the response
        // in flight, so linger as nginx does.
        let client_closes = !ex.head.keep_alive;
        return if client_closes && ex.body_done() && ex.rbuf.is_empty() {
            Next::Close
        } else {
            Next::Linger
        };
    }
    if ex.body_done() {
        return Next::KeepAlive;
    }
    // Small unread body: read and drop it so the next request lines up.
    // Boxed, being rare, so its future does not grow every connection's.
    Box::pin(discard_body(ex)).await
}

async fn discard_body(ex: &mut Exchange<'_>) -> Next {
    while !ex.body_done() {
        match ex.read_body().await {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => return Next::Close,
        }
    }
    Next::KeepAlive
}

enum HeadFail {
    Status(u16),
    Closed,
}

/// Reads until a complete head is parsed into `a.head`.
async fn read_head(link: &mut Link, a: &mut Active) -> Result<(), HeadFail> {
    let deadline = Instant::now() + link.cfg.timeouts.header_read;
    loop {
        match parse_head_into(&a.rbuf, &link.cfg.limits, &mut a.head) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => {
                tracing::debug!(error = %e, "bad request head");
                return Err(HeadFail::Status(e.status()));
            }
        }
        loop {
            match link.stream.try_read(&mut a.rbuf) {
                Ok(0) if link.expired() && !a.rbuf.is_empty() => return Err(HeadFail::Status(408)),
                Ok(0) => return Err(HeadFail::Closed),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Never wait on the client while it waits on us.
                    if !a.wbuf.is_empty() && Box::pin(link.flush(&mut a.wbuf)).await.is_err() {
                        return Err(HeadFail::Closed);
                    }
                    if link.readable_until(deadline).await.is_err() {
                        return Err(HeadFail::Closed);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(HeadFail::Closed),
            }
        }
    }
}

/// Half-closes, then reads and drops what the client still sends, for a
/// bounded time and amount, so that the response already sent is read
/// before the kernel answers further data with a reset.
async fn linger(link: &Link, rbuf: Option<&mut BytesMut>) {
    const LINGER_TIME: Duration = Duration::from_secs(2);
    const LINGER_BYTES: usize = 256 * 1024;
    if link.stream.shutdown_write().is_err() {
        return;
    }
    let mut scratch = BytesMut::new();
    let buf = rbuf.unwrap_or(&mut scratch);
    let deadline = Instant::now() + LINGER_TIME;
    let mut total = 0;
    while total < LINGER_BYTES {
        buf.clear();
        match link.stream.try_read(buf) {
            Ok(0) => return,
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if link.readable_until(deadline).await.is_err() || link.expired() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
