//! One HTTP/3 request stream, served in a task of its own on the
//! connection's core as an HTTP/2 stream is: its HEADERS laid out as a
//! [`RequestHead`](crate::head::RequestHead), its path normalized, the
//! handler run on an [`Exchange`], and its error answered. A malformed
//! request is reset with H3_MESSAGE_ERROR and no handler sees it.

use std::rc::Rc;
use std::time::Duration;

use bytes::Buf;
use ringside_quic::StreamId;
use ringside_runtime::reload::Current;

use super::conn::H3Conn;
use super::frame::{headers_frame_bound, FrameKind, FrameParser, Item, StreamRole};
use super::qpack::Decoder;
use super::request::{lay_out, RequestError};
use super::wire::{Incoming, Wire as H3Wire};
use super::ErrorCode;
use crate::exchange::{Exchange, Wire};
use crate::h2::stream::{acquire, release, settle, Slot};
use crate::head::Method;
use crate::Handler;

/// Where a request's HEADERS lies in `rx.pending`.
struct Section {
    /// The frame's payload.
    payload: std::ops::Range<usize>,
    /// The frame, header and all: consumed once the payload is decoded.
    frame: usize,
    /// The stream ended with it.
    end: bool,
}

/// Reads a request stream's bytes until its HEADERS frame is whole;
/// `None` when the stream ended or failed first (handled here).
async fn read_headers(conn: &H3Conn, id: StreamId, rx: &mut Incoming) -> Option<Section> {
    let quic = &conn.quic;
    loop {
        let step = match rx.parser.next(&rx.pending) {
            Ok(s) => s,
            Err(code) => {
                conn.fail(code, "a request stream's first frame");
                return None;
            }
        };
        match step.item {
            Item::NeedMore => {
                if rx.fin {
                    // Ended before a whole HEADERS: §4.1.2.
                    quic.reset(id, ErrorCode::RequestIncomplete.code());
                    return None;
                }
                match quic.read_into(id, &mut rx.pending, 16 * 1024).await {
                    Ok(fin) => rx.fin = fin,
                    Err(_) => return None,
                }
            }
            Item::Skipped => rx.pending.advance(step.consumed),
            Item::Frame {
                kind: FrameKind::Headers,
                payload,
            } => {
                // Decoded where it lies (a split would share the buffer,
                // an allocation a request). The stream's end came with the
                // HEADERS where it was read with them (`read_into` takes
                // both): a request without a body then reads as one.
                return Some(Section {
                    payload,
                    frame: step.consumed,
                    end: rx.fin && rx.pending.len() == step.consumed,
                });
            }
            Item::Frame { kind, .. } if kind.allowed_on(StreamRole::Request) => {
                rx.pending.advance(step.consumed)
            }
            // DATA before HEADERS, or a control frame (§4.1, §7.2.8).
            _ => {
                conn.fail(ErrorCode::FrameUnexpected, "a request stream's first frame");
                return None;
            }
        }
    }
}

pub(crate) async fn serve<H: Handler>(conn: &Rc<H3Conn>, current: Rc<Current<H>>, id: StreamId) {
    let (handler, cfg) = current.get();
    let mut rx = Incoming::new(FrameParser::new(headers_frame_bound(conn.max_section())));
    let t = cfg.timeouts.header_read;
    let Ok(Some(section)) =
        ringside_runtime::task::timeout(t, read_headers(conn, id, &mut rx)).await
    else {
        conn.quic.reset(id, ErrorCode::RequestIncomplete.code());
        return;
    };
    if conn.goaway.get() {
        conn.quic.reset(id, ErrorCode::RequestRejected.code());
        conn.quic.stop(id, ErrorCode::RequestRejected.code());
        return;
    }
    let mut slot = acquire();
    let Slot { buf, head, paths } = &mut *slot;
    // Dropped before the handler runs: its buffers go back for the next
    // request's decoder.
    let end = section.end;
    let laid = lay_out(
        &mut Decoder::new(conn.max_section()),
        &rx.pending[section.payload],
        end,
        head,
        buf,
        &cfg.limits,
    );
    rx.pending.advance(section.frame);
    match laid {
        Ok(declared) if !end && short_of(conn, id, &mut rx, declared) => {
            tracing::debug!("HTTP/3 request body against its content-length");
            conn.quic.reset(id, ErrorCode::MessageError.code());
            count_refused(&*handler, conn, 400, 0);
        }
        Ok(declared) => {
            rx.declared = declared;
            rx.done = end;
            // Early data can be replayed: only a safe request is served
            // from it; any other waits until the handshake proves the
            // client live (RFC 8470 §3), and a replay never gets that far.
            // The driver's flag, not quinn-proto's state: no borrow of the
            // connection per request; a head read just before the driver
            // hands on the handshake's end is taken as early, the safe way.
            let (mut early, mut lost) = (!conn.quic.is_connected(), false);
            if early && !head.method.safe() {
                conn.quic.connected().await;
                early = false;
                lost = conn.quic.is_closed();
                if lost {
                    tracing::debug!("HTTP/3 handshake never ended: a request in 0-RTT dropped");
                }
            }
            conn.learn_certs();
            let raw = head.raw_path_span(buf);
            let is_path = head.method != Method::Connect && head.target(buf) != b"*";
            let (slash, params) = (handler.encoded_slash(), handler.path_parameters());
            let normal = paths.set(buf, raw, is_path, slash, params);
            let is_head = head.method == Method::Head;
            let mut wire = H3Wire::new(conn, id, rx, is_head, head.expect_continue);
            wire.early_data = early;
            let mut ex = Exchange::new(Wire::H3(wire), head, buf, paths);
            match normal {
                _ if lost => {}
                Ok(()) => {
                    if early {
                        ringside_quic::stats::add(|s| &s.early_requests, 1);
                    }
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
        Err(RequestError::Connection(code)) => {
            conn.fail(code, "a request's field section");
        }
        Err(RequestError::Malformed(why)) => {
            tracing::debug!(why, "HTTP/3 request malformed");
            conn.quic.reset(id, ErrorCode::MessageError.code());
            conn.quic.stop(id, ErrorCode::MessageError.code());
            count_refused(&*handler, conn, 400, 0);
        }
        Err(RequestError::Answer(e)) => {
            tracing::debug!(error = %e, "HTTP/3 request refused");
            let status = e.status();
            let mut wire = H3Wire::new(conn, id, rx, false, false);
            let len = wire.write_refusal(status);
            drop(wire);
            count_refused(&*handler, conn, status, len);
        }
    }
    release(slot);
}

/// Whether a request whose whole body is here already (its stream ended)
/// carries other than its content-length in DATA (RFC 9114 §4.1.2): then
/// it is malformed before any handler or upstream sees its head. A body
/// still on its way is counted as it is read (`wire`).
fn short_of(conn: &H3Conn, id: StreamId, rx: &mut Incoming, declared: Option<u64>) -> bool {
    let Some(declared) = declared else {
        return false;
    };
    while !rx.fin {
        match conn.quic.read_into_now(id, &mut rx.pending, 64 * 1024) {
            Some(Ok(fin)) => rx.fin = fin,
            Some(Err(_)) | None => return false,
        }
    }
    let mut parser = rx.parser.clone();
    let (mut at, mut data) = (0, 0u64);
    loop {
        match parser.next(&rx.pending[at..]) {
            Ok(step) => {
                if let Item::Data(r) = &step.item {
                    data += (r.end - r.start) as u64;
                }
                if matches!(step.item, Item::NeedMore) {
                    return data != declared;
                }
                at += step.consumed;
            }
            // A frame error: the body's reader ends the connection for it.
            Err(_) => return false,
        }
    }
}

fn count_refused<H: Handler>(handler: &H, conn: &H3Conn, status: u16, body_bytes: u64) {
    handler.refused(&crate::Refusal {
        status,
        body_bytes,
        line: None,
        elapsed: Duration::ZERO,
        peer: &|| Some(conn.quic.remote_address()),
    });
}
