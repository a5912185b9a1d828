//! The HTTP/1 connection driver: waits for a request without holding
//! buffers, reads and checks its head, normalizes its path, runs the
//! handler, answers its error if it failed, and keeps the connection,
//! pipelines the next request or closes.
//!
//! ```text
//! idle ──readable──▶ head ──complete──▶ path ──normal──▶ handler ──▶ after
//!  ▲  (no buffers)    │ malformed/limit: status + close     │ keep-alive: next
//!  │                  │ header timeout: 408 + close         │ close: flush, end
//!  └──────────── rbuf empty: flush, give buffers back ◀─────┘ rbuf not empty: head
//! ```
//!
//! Responses to pipelined requests collect in the write buffer and go out in
//! one write, before the driver next waits for the socket.

use std::io;
use std::rc::Rc;

use bytes::BytesMut;
use ringside_runtime::link::Link;
use ringside_runtime::reload::Current;

use super::parse::parse_head_into;
use super::wire::{Wire as H1Wire, DISCARD_MAX};
use crate::error::{Error, Side};
use crate::exchange::{Exchange, Wire};
use crate::head::{Method, RequestHead};
use crate::path::Normalized;
use crate::recycled::Recycled;
use crate::Handler;

/// Size of a read or write buffer; large enough for a default-limit head.
const BUF_SIZE: usize = 16 * 1024;

fn new_buf() -> BytesMut {
    BytesMut::with_capacity(BUF_SIZE)
}

/// Buffers, head storage and path scratch of a connection inside a
/// request; pooled per core so that idle connections own none of it, and
/// memory follows the number of busy connections rather than of open ones.
struct Active {
    rbuf: BytesMut,
    wbuf: BytesMut,
    head: RequestHead,
    /// The normalized path, where it differs from the one sent.
    paths: Normalized,
}

thread_local! {
    // Boxed so a connection holds one pointer, and taking or returning one
    // moves 8 bytes rather than the whole slot.
    #[allow(clippy::vec_box)]
    static ACTIVE_POOL: std::cell::RefCell<Vec<Box<Active>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn acquire() -> Box<Active> {
    ACTIVE_POOL
        .with(|p| p.borrow_mut().pop())
        .unwrap_or_else(|| {
            ringside_runtime::stats::buffers(2 * BUF_SIZE, true);
            Box::new(Active {
                rbuf: new_buf(),
                wbuf: new_buf(),
                head: RequestHead::empty(),
                paths: Normalized::default(),
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

impl Drop for Active {
    fn drop(&mut self) {
        ringside_runtime::stats::buffers(2 * BUF_SIZE, false);
    }
}

enum Next {
    KeepAlive,
    Close,
    /// Close after reading what the client still sends for a while, so that
    /// our last response is not destroyed by a reset.
    Linger,
}

/// Serves one HTTP/1 connection until it closes.
///
/// A plain fn returning an `async move` block rather than an `async fn`:
/// an async fn keeps each argument twice in its future (once captured, once
/// moved into the body), and every idle connection holds this future.
#[allow(clippy::manual_async_fn)]
pub(crate) fn serve<H: Handler>(
    mut link: Link,
    current: Rc<Current<H>>,
) -> impl std::future::Future<Output = ()> {
    async move {
        let mut active: Option<Box<Active>> = None;
        if let Some(trusted) = link.cfg.proxy_trusted(link.listener()) {
            // Before TLS, whose handshake follows the header. Boxed: only
            // these listeners' connections carry it, and only until read.
            let mut a = acquire();
            if let Err(why) =
                Box::pin(crate::proxy_protocol::read(&link, trusted, &mut a.rbuf)).await
            {
                tracing::debug!(peer = ?link.client_addr().ok(), why, "connection refused");
                release(a);
                return;
            }
            active = Some(a);
        }
        // Boxed: only TLS connections carry its future, and only until the
        // handshake is over.
        if link.stream.is_tls() && Box::pin(handshake(&link)).await.is_err() {
            return;
        }
        // Plain connections receive through the ring from here on (TLS
        // reads the socket itself).
        link.stream.receive_multishot();
        // Counted from the address the client came from (after a PROXY
        // header), uncounted when this connection ends.
        let limit = link.cfg.limits.max_client_connections;
        let (_held, over) = match link.client_addr() {
            Ok(a) => match crate::client_limit::admit(a.ip(), limit) {
                Ok(held) => (held, false),
                Err(()) => (None, true),
            },
            Err(_) => (None, false),
        };
        // Boxed as the handshake is: an HTTP/1 connection's future holds
        // a pointer for it, not HTTP/2's state.
        if link.stream.alpn_is(b"h2") {
            return Box::pin(crate::h2::serve(link, current, BytesMut::new(), over)).await;
        }
        // A CA's TLS-ALPN-01 validation: the handshake was all of it, and
        // no HTTP is spoken on such a connection (RFC 8737 §3).
        if link.stream.alpn_is(b"acme-tls/1") {
            return;
        }
        let h2c = !link.stream.is_tls() && link.cfg.http2_on(link.listener());
        let mut first = true;
        let next = loop {
            let buffered = active.as_ref().is_some_and(|a| !a.rbuf.is_empty());
            if !buffered {
                if let Some(a) = active.take() {
                    release(a);
                }
                if link.closes_idle() {
                    break Next::Close;
                }
                let t = &link.cfg.timeouts;
                let idle = if first {
                    t.header_read
                } else {
                    t.keepalive_idle
                };
                link.set_idle(true);
                let ready = link
                    .readable_until(ringside_runtime::clock::now() + idle)
                    .await;
                link.set_idle(false);
                if ready.is_err() || link.expired() || link.closes_idle() {
                    break Next::Close;
                }
            }
            let a = active.get_or_insert_with(acquire);
            if first && h2c {
                match Box::pin(sniff_preface(&link, &mut a.rbuf)).await {
                    Sniff::H2 => {
                        let first = std::mem::take(&mut a.rbuf);
                        if let Some(a) = active.take() {
                            release(a);
                        }
                        return Box::pin(crate::h2::serve(link, current, first, over)).await;
                    }
                    Sniff::Gone => break Next::Close,
                    Sniff::H1 => {}
                }
            }
            first = false;
            let _busy = link.busy();
            // Taken per request: a reload reaches keep-alive connections at
            // their next request, never in the middle of one.
            let (handler, cfg) = current.get();
            link.cfg = cfg;
            if over {
                break Box::pin(async {
                    let next = refuse_over_limit(&mut link, a, &*handler).await;
                    let _ = link.flush(&mut a.wbuf).await;
                    next
                })
                .await;
            }
            // On the heap: a request's future (head, exchange, the
            // handler's own) is most of this one's size, and every idle
            // connection would hold that room for good. In a block the
            // core reuses, so no request allocates for it.
            // The flush too: its send through the ring would otherwise
            // sit in every connection's future.
            match Recycled::with(|| request_and_flush(&mut link, a, &*handler)).await {
                Next::KeepAlive => {}
                other => break other,
            }
        };
        if let Next::Linger = next {
            Box::pin(crate::linger::linger(
                &link,
                active.as_mut().map(|a| &mut a.rbuf),
            ))
            .await;
        }
        if let Some(a) = active.take() {
            release(a);
        }
    }
}

enum Sniff {
    H1,
    H2,
    Gone,
}

/// Reads a plain connection's first bytes until they are HTTP/2's
/// preface or cannot be (h2c by prior knowledge, RFC 9113 §3.3); what was
/// read stays in `rbuf` for whichever protocol it is.
async fn sniff_preface(link: &Link, rbuf: &mut BytesMut) -> Sniff {
    let deadline = ringside_runtime::clock::now() + link.cfg.timeouts.header_read;
    let preface = crate::h2::PREFACE;
    loop {
        let n = rbuf.len().min(preface.len());
        if rbuf[..n] != preface[..n] {
            return Sniff::H1;
        }
        if n == preface.len() {
            return Sniff::H2;
        }
        match link.stream.try_read(rbuf) {
            Ok(0) => {
                return if rbuf.is_empty() {
                    Sniff::Gone
                } else {
                    Sniff::H1
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if link.readable_until(deadline).await.is_err() || link.expired() {
                    return Sniff::Gone;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Sniff::Gone,
        }
    }
}

/// Runs the client connection's TLS handshake within the header timeout
/// (a client stalling mid-handshake is a slowloris too).
async fn handshake(link: &Link) -> io::Result<()> {
    let deadline = ringside_runtime::clock::now() + link.cfg.timeouts.header_read;
    let r = link.handshake(deadline).await;
    if let Err(e) = &r {
        tracing::debug!(error = %e, "TLS handshake failed");
    }
    r
}

/// [`one_request`], then its response sent: at once when nothing more
/// came in, else batched with the next pipelined one's (up to
/// `DISCARD_MAX` bytes). `Next::Close` when the send fails.
async fn request_and_flush<H: Handler>(link: &mut Link, a: &mut Active, handler: &H) -> Next {
    match one_request(link, a, handler).await {
        Next::KeepAlive => {
            let flush_now = a.rbuf.is_empty() || a.wbuf.len() >= DISCARD_MAX as usize;
            if flush_now && link.flush(&mut a.wbuf).await.is_err() {
                return Next::Close;
            }
            Next::KeepAlive
        }
        other => {
            let _ = link.flush(&mut a.wbuf).await;
            other
        }
    }
}

/// Reads one head, runs the handler and settles the body. Responses are
/// left in `a.wbuf` for the caller to flush.
async fn one_request<H: Handler>(link: &mut Link, a: &mut Active, handler: &H) -> Next {
    // The head goes straight into the pooled slot: a RequestHead local here
    // would stay in this future (and every idle connection's) for good.
    let began = ringside_runtime::clock::now();
    if let Err(refusal) = read_head(link, a).await {
        return match refusal {
            Some(e) => refuse(link, a, handler, e, began),
            None => Next::Close,
        };
    }
    let Active {
        rbuf,
        wbuf,
        head,
        paths,
    } = a;
    let mut head_bytes = rbuf.split_to(head.head_len);
    // `*` and CONNECT's authority have no path to normalize.
    let raw = head.raw_path_span(&head_bytes);
    let is_path = head.method != Method::Connect && head.target(&head_bytes) != b"*";
    let (slash, params) = (handler.encoded_slash(), handler.path_parameters());
    let normal = paths.set(&head_bytes, raw, is_path, slash, params);
    link.sending.set(Default::default());
    let started = ringside_runtime::clock::now();
    let wire = Wire::H1(H1Wire::new(link, head, rbuf, wbuf));
    let mut ex = Exchange::new(wire, head, &head_bytes, paths);
    let next = match normal {
        Ok(()) => {
            let result = handler.handle(&mut ex).await;
            settle(&mut ex, result).await
        }
        // A path no route may be decided on: refused before any handler
        // sees it, but logged with its target like any request.
        Err(e) => settle(&mut ex, Err(e.into())).await,
    };
    handler.done(&ex, started);
    drop(ex);
    head_bytes.clear();
    drop(head_bytes);
    next
}

/// The first request of a connection past its client's limit: its head is
/// read (so the answer is one), then the configured status with
/// Retry-After, and the connection ends.
async fn refuse_over_limit<H: Handler>(link: &mut Link, a: &mut Active, handler: &H) -> Next {
    let began = ringside_runtime::clock::now();
    if let Err(refusal) = read_head(link, a).await {
        return match refusal {
            Some(e) => refuse(link, a, handler, e, began),
            None => Next::Close,
        };
    }
    let status = link.cfg.limits.client_connections_status;
    crate::client_limit::count_refused();
    let body = super::encode::write_error_with(&mut a.wbuf, status, b"Retry-After: 1\r\n");
    let peer = || link.client_addr().ok();
    handler.over_limit(&refusal(&peer, &a.rbuf, status, body, began));
    Next::Linger
}

/// A request refused before any handler ran: its status, then close.
fn refuse<H: Handler>(
    link: &mut Link,
    a: &mut Active,
    handler: &H,
    e: Error,
    began: std::time::Instant,
) -> Next {
    tracing::debug!(error = %e, "bad request");
    let status = e.status();
    let body = super::encode::write_error(&mut a.wbuf, status);
    let peer = || link.client_addr().ok();
    handler.refused(&refusal(&peer, &a.rbuf, status, body, began));
    Next::Linger
}

/// What the handler is told of a refused request whose head, whole or
/// not, is at the start of `rbuf`.
fn refusal<'a>(
    peer: &'a dyn Fn() -> Option<std::net::SocketAddr>,
    rbuf: &'a [u8],
    status: u16,
    body_bytes: u64,
    began: std::time::Instant,
) -> crate::Refusal<'a> {
    crate::Refusal {
        status,
        body_bytes,
        line: crate::RequestLine::parse(rbuf),
        elapsed: ringside_runtime::clock::now().saturating_duration_since(began),
        peer,
    }
}

/// After the handler: answer its error if it failed before responding,
/// drop a small unread body, and decide whether the connection goes on.
async fn settle(ex: &mut Exchange<'_>, result: Result<(), Error>) -> Next {
    if let Err(e) = result {
        match e.answer() {
            Some(status) if !ex.responded() && e.side() == Side::Client => {
                tracing::debug!(error = %e, "request refused");
                ex.refuse(status);
                return Next::Linger;
            }
            Some(status) if !ex.responded() => {
                tracing::debug!(status, error = %e, "error response");
                let _ = ex.send_status(status);
            }
            _ => {
                tracing::debug!(peer = ?ex.peer().ok(), error = %e, "handler failed; closing");
                return Next::Close;
            }
        }
    }
    if ex.upgraded() || ex.unfinished() {
        // A body that was never ended must not look complete.
        return Next::Close;
    }
    if !ex.responded() {
        let _ = ex.send(
            500,
            &[("Content-Type", b"text/plain")],
            b"500 Internal Server Error\n",
        );
    }
    let Wire::H1(w) = &ex.wire else {
        unreachable!("the HTTP/1 driver runs HTTP/1 exchanges only")
    };
    if !w.keep_alive {
        // A client that asked to close and sent nothing more can be closed
        // on. Otherwise the server chose to close (draining, an unread
        // body) and the client may have sent more already: closing with
        // unread bytes resets the connection and can destroy the response
        // in flight, so linger as nginx does.
        let client_closes = !w.client_keep_alive;
        return if client_closes && w.body_done() && w.rbuf.is_empty() {
            Next::Close
        } else {
            Next::Linger
        };
    }
    if w.body_done() {
        return Next::KeepAlive;
    }
    // Small unread body: read and drop it so the next request lines up.
    // Boxed, being rare, so its future does not grow every connection's.
    Box::pin(discard_body(ex)).await
}

async fn discard_body(ex: &mut Exchange<'_>) -> Next {
    loop {
        match ex.read_body().await {
            Ok(Some(_)) => {}
            Ok(None) => return Next::KeepAlive,
            Err(_) => return Next::Close,
        }
    }
}

/// Reads until a complete head is parsed into `a.head`. `Err(Some(e))`:
/// refuse the request with `e`; `Err(None)`: the client closed.
async fn read_head(link: &mut Link, a: &mut Active) -> Result<(), Option<Error>> {
    let deadline = ringside_runtime::clock::now() + link.cfg.timeouts.header_read;
    loop {
        match parse_head_into(&a.rbuf, &link.cfg.limits, &mut a.head) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(Some(e.into())),
        }
        loop {
            match link.stream.try_read(&mut a.rbuf) {
                Ok(0) if link.expired() && !a.rbuf.is_empty() => {
                    return Err(Some(Error::new(
                        crate::error::Kind::ClientTimeout,
                        "request head too slow",
                    )))
                }
                Ok(0) => return Err(None),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Never wait on the client while it waits on us.
                    if !a.wbuf.is_empty() && Box::pin(link.flush(&mut a.wbuf)).await.is_err() {
                        return Err(None);
                    }
                    if link.readable_until(deadline).await.is_err() {
                        return Err(None);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(None),
            }
        }
    }
}
