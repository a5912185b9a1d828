//! One HTTP/2 stream, served in a task of its own on the connection's
//! core: its head laid out as a [`RequestHead`], its path normalized, the
//! handler run on an [`Exchange`], and its error answered, as the HTTP/1
//! driver does for a request. A failure ends the stream, never the
//! connection: a refused request gets its status on its stream, and a
//! response that cannot be finished is reset.

use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;
use ringside_runtime::reload::Current;

use super::recv::Opened;
use super::wire::Wire as H2Wire;
use super::Conn;
use crate::error::{Error, Side};
use crate::exchange::{Exchange, Wire};
use crate::head::{Method, RequestHead};
use crate::path::Normalized;
use crate::Handler;

/// A stream's head storage, pooled per core as HTTP/1's buffers are.
pub(crate) struct Slot {
    pub buf: BytesMut,
    pub head: RequestHead,
    pub paths: Normalized,
}

const SLOT_BUF: usize = 1024;

thread_local! {
    #[allow(clippy::vec_box)]
    static SLOTS: std::cell::RefCell<Vec<Box<Slot>>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(crate) fn acquire() -> Box<Slot> {
    SLOTS.with(|p| p.borrow_mut().pop()).unwrap_or_else(|| {
        ringside_runtime::stats::buffers(SLOT_BUF, true);
        Box::new(Slot {
            buf: BytesMut::with_capacity(SLOT_BUF),
            head: RequestHead::empty(),
            paths: Normalized::default(),
        })
    })
}

impl Drop for Slot {
    fn drop(&mut self) {
        ringside_runtime::stats::buffers(SLOT_BUF, false);
    }
}

pub(crate) fn release(s: Box<Slot>) {
    SLOTS.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 256 {
            p.push(s);
        }
    });
}

/// Serves one stream in its own task.
///
/// A plain fn returning an `async move` block, and the arguments used in
/// place: an async fn keeps each argument twice in its future, and every
/// stream's task is allocated at this future's size. (It is 3,256 bytes
/// with the proxied request's future inline, past glibc's per-thread
/// cache; monoio's task cells of that size are kept per thread for the
/// next stream, see vendor/monoio/src/task/recycle.rs.)
#[allow(clippy::manual_async_fn)]
pub(crate) fn serve<H: Handler>(
    conn: Rc<Conn>,
    current: Rc<Current<H>>,
    mut opened: Opened,
) -> impl std::future::Future<Output = ()> {
    async move {
        let _busy = conn.link.busy();
        let handler = current.get().0;
        let (id, key) = (opened.id, opened.key);
        let Slot { buf, head, paths } = &mut *opened.slot;
        match &opened.laid {
            Ok(()) => {
                let raw = head.raw_path_span(buf);
                let is_path = head.method != Method::Connect && head.target(buf) != b"*";
                let (slash, params) = (handler.encoded_slash(), handler.path_parameters());
                let normal = paths.set(buf, raw, is_path, slash, params);
                let is_head = head.method == Method::Head;
                let wire = H2Wire::new(&conn, key, id, is_head, head.expect_continue);
                let mut ex = Exchange::new(Wire::H2(wire), head, buf, paths);
                match normal {
                    // Past the client's connection limit: answered, not served.
                    _ if conn.over_limit => {
                        let status = current.get().1.limits.client_connections_status;
                        crate::client_limit::count_refused();
                        let text = crate::status::reason(status);
                        let _ = ex.send(
                            status,
                            &[("Retry-After", b"1"), ("Content-Type", b"text/plain")],
                            format!("{status} {text}\n").as_bytes(),
                        );
                        handler.over_limit(&crate::Refusal {
                            status,
                            body_bytes: ex.body_bytes(),
                            line: Some(crate::RequestLine {
                                method: ex.method_bytes(),
                                target: ex.target(),
                                version: ex.version(),
                            }),
                            elapsed: Duration::ZERO,
                            peer: &|| conn.link.client_addr().ok(),
                        });
                    }
                    Ok(()) => {
                        let started = ringside_runtime::clock::now();
                        let result = handler.handle(&mut ex).await;
                        settle(&mut ex, result);
                        handler.done(&ex, started);
                    }
                    Err(e) => {
                        settle(&mut ex, Err(e.into()));
                        handler.done(&ex, ringside_runtime::clock::now());
                    }
                }
            }
            Err(e) => {
                // No head to give a handler: the status on the stream, and
                // the refusal counted as HTTP/1's are.
                tracing::debug!(error = %e, "HTTP/2 request refused");
                let status = e.status();
                let mut wire = H2Wire::new(&conn, key, id, false, false);
                let len = wire.write_refusal(status);
                drop(wire);
                handler.refused(&crate::Refusal {
                    status,
                    body_bytes: len,
                    line: None,
                    elapsed: Duration::ZERO,
                    peer: &|| conn.link.client_addr().ok(),
                });
            }
        }
        release(opened.slot);
        conn.stream_ended();
    }
}

/// After the handler: its error answered on the stream if nothing was
/// sent yet, else the stream reset so a cut response never looks whole.
pub(crate) fn settle(ex: &mut Exchange<'_>, result: Result<(), Error>) {
    if let Err(e) = result {
        match e.answer() {
            Some(status) if !ex.responded() && e.side() == Side::Client => {
                tracing::debug!(error = %e, "request refused");
                ex.refuse(status);
                return;
            }
            Some(status) if !ex.responded() => {
                tracing::debug!(status, error = %e, "error response");
                let _ = ex.send_status(status);
            }
            _ => {
                tracing::debug!(error = %e, "handler failed; resetting the stream");
                ex.reset_stream();
                return;
            }
        }
    }
    if ex.unfinished() || ex.upgraded() {
        ex.reset_stream();
        return;
    }
    if !ex.responded() {
        let _ = ex.send(
            500,
            &[("content-type", b"text/plain")],
            b"500 Internal Server Error\n",
        );
    }
}
