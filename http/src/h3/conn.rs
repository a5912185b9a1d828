//! An HTTP/3 connection on its worker: our control stream and SETTINGS,
//! the client's control and QPACK streams read and checked, each request
//! stream served in a task of its own ([`super::stream`]), and a drain
//! ending the connection with GOAWAY once its streams are done.
//!
//! ```text
//! quic::serve ─▶ serve_conn: control stream (SETTINGS) ─┬─▶ request stream task per stream
//!                                                      ├─▶ client uni streams: control (SETTINGS first,
//!                                                      │   GOAWAY), QPACK encoder/decoder, others stopped
//!                                                      ├─ a connection error ─▶ CONNECTION_CLOSE naming it
//!                                                      └─ drain ─▶ GOAWAY, streams finish, close
//! ```

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::Waker;

use bytes::{Buf, BytesMut};
use ringside_quic::{Conn, Dir, StreamId};
use ringside_runtime::config::ConnConfig;
use ringside_runtime::link::UdpAt;
use ringside_runtime::reload::Current;
use ringside_runtime::tls::rustls::pki_types::CertificateDer;

use super::frame::{self, FrameKind, FrameParser, Item, StreamRole};
use super::settings::Settings;
use super::stream_type::{self, StreamType};
use super::{qpack, varint, ErrorCode};
use crate::error::{Error, Kind};
use crate::Handler;

/// What a connection's tasks share.
pub(crate) struct H3Conn {
    pub(crate) quic: Conn,
    pub(crate) cfg: Rc<ConnConfig>,
    pub(crate) certs: RefCell<Vec<CertificateDer<'static>>>,
    /// The handshake ended and `certs` holds what it settled.
    certs_final: Cell<bool>,
    /// Request streams being served.
    open: Cell<u32>,
    /// GOAWAY sent: no more requests are served.
    pub(crate) goaway: Cell<bool>,
    /// The next request stream id the client may open, for GOAWAY.
    next_id: Cell<u64>,
    control: Cell<Option<StreamId>>,
    /// The client's control stream came.
    peer_control: Cell<bool>,
    idle: RefCell<Option<Waker>>,
    /// Room the connection's small responses are cut from (`carve`).
    room: RefCell<BytesMut>,
}

/// A connection's room for small responses: one allocation for a score of
/// them. Only its own responses share it, so a client that never
/// acknowledges holds its own answers' room and no one else's.
const ROOM: usize = 4096;
/// A response larger than this is made to measure.
const CARVED: usize = 1024;

impl H3Conn {
    /// Ends the connection with a connection error; the error given back
    /// ends the request that found it.
    pub(crate) fn fail(&self, code: ErrorCode, what: &'static str) -> Error {
        tracing::debug!(code = code.name(), what, "HTTP/3 connection error");
        self.quic.close(code.code(), code.name().as_bytes());
        Error::new(Kind::BadRequest, what)
    }

    pub(crate) fn max_section(&self) -> u64 {
        self.cfg.limits.max_head as u64
    }

    /// Takes the client's certificates, once the handshake ended: they
    /// stand for the connection, so are asked for once. Before that (a
    /// request in 0-RTT) only a resumed session's chain is known, the one
    /// its first handshake verified; it is taken for now.
    pub(crate) fn learn_certs(&self) {
        if self.certs_final.get() {
            return;
        }
        self.certs_final.set(!self.quic.is_handshaking());
        // A resumed session's chain is the same after the handshake: no
        // write then, where a handler may hold the chain across an await.
        if let Some(c) = self.quic.peer_certificates() {
            if *self.certs.borrow() != c {
                *self.certs.borrow_mut() = c;
            }
        }
    }

    /// An empty buffer of `n` bytes' room for a response, cut from the
    /// connection's room where it is small: each had been an allocation,
    /// and its `Bytes` a free, once acknowledged (about 380 instructions
    /// a response, callgrind, 26 B).
    pub(crate) fn carve(&self, n: usize) -> BytesMut {
        if n > CARVED {
            return BytesMut::with_capacity(n);
        }
        let mut room = self.room.borrow_mut();
        if room.capacity() < n {
            *room = BytesMut::with_capacity(ROOM);
        }
        let rest = room.split_off(n);
        std::mem::replace(&mut *room, rest)
    }

    fn stream_ended(&self) {
        self.open.set(self.open.get() - 1);
        if self.open.get() == 0 {
            // An idle connection keeps no room: what was cut from it
            // lives on until acknowledged.
            *self.room.borrow_mut() = BytesMut::new();
            if let Some(w) = self.idle.borrow_mut().take() {
                w.wake();
            }
        }
    }
}

/// Serves a worker's UDP socket of an HTTP/3 listener.
pub(crate) async fn serve_udp<H: Handler>(
    socket: std::net::UdpSocket,
    at: UdpAt,
    current: Rc<Current<H>>,
) {
    let cfg = current.conn();
    let setup = ringside_quic::Setup {
        worker: at.worker,
        workers: at.workers,
        handoff: at.handoff.clone(),
        limits: cfg.h3,
        idle_timeout: cfg.timeouts.keepalive_idle,
    };
    let listener = at.listener;
    let tls_of = current.clone();
    let tls = move || {
        tls_of
            .conn()
            .tls
            .get(listener)
            .cloned()
            .flatten()
            .map(|t| t.0)
    };
    ringside_quic::serve(socket, setup, tls, move |quic| {
        serve_conn(quic, current.clone())
    })
    .await
}

async fn serve_conn<H: Handler>(quic: Conn, current: Rc<Current<H>>) {
    let cfg = current.conn();
    let conn = Rc::new(H3Conn {
        quic: quic.clone(),
        cfg,
        certs: RefCell::new(Vec::new()),
        certs_final: Cell::new(false),
        open: Cell::new(0),
        goaway: Cell::new(false),
        next_id: Cell::new(0),
        control: Cell::new(None),
        peer_control: Cell::new(false),
        idle: RefCell::new(None),
        room: RefCell::new(BytesMut::new()),
    });
    // Our control stream and SETTINGS go first (§6.2.1): no dynamic
    // table (capacity 0 is the default, so left out), our head bound.
    let Some(ctl) = quic.open_uni().await else {
        return;
    };
    conn.control.set(Some(ctl));
    let mut out = BytesMut::new();
    varint::put(&mut out, stream_type::CONTROL);
    Settings {
        max_field_section_size: Some(conn.max_section()),
        ..Settings::default()
    }
    .put_frame(&mut out);
    if quic.write_all_bytes(ctl, out.freeze()).await.is_err() {
        return;
    }
    ringside_runtime::task::spawn(accept_uni(conn.clone()));
    let mut drain = std::pin::pin!(ringside_runtime::shutdown::drain_begun());
    loop {
        let next = ringside_runtime::task::select(quic.accept(Dir::Bi), drain.as_mut()).await;
        match next {
            ringside_runtime::task::Either::Left(Some(id)) => {
                // A stream can come before the driver has handed on the
                // handshake's end (the same datagram): its request waits
                // for it, as the client's certificate does. One of a
                // connection that took 0-RTT goes on to its task, which
                // lets only a safe request on before the handshake ends.
                if !quic.is_connected() && !quic.early_data_accepted() {
                    quic.connected().await;
                    if quic.is_closed() {
                        return;
                    }
                }
                conn.learn_certs();
                conn.next_id.set(id.index() * 4 + 4);
                conn.open.set(conn.open.get() + 1);
                ringside_quic::stats::add(|s| &s.streams, 1);
                let (c, cur) = (conn.clone(), current.clone());
                ringside_runtime::task::spawn_with(move || async move {
                    super::stream::serve(&c, cur, id).await;
                    c.stream_ended();
                });
            }
            ringside_runtime::task::Either::Left(None) => return,
            ringside_runtime::task::Either::Right(()) => break,
        }
    }
    goaway(&conn).await;
    // The streams opened before the GOAWAY finish; then the connection
    // closes with H3_NO_ERROR.
    std::future::poll_fn(|cx| {
        if conn.open.get() == 0 || quic.is_closed() {
            return std::task::Poll::Ready(());
        }
        *conn.idle.borrow_mut() = Some(cx.waker().clone());
        std::task::Poll::Pending
    })
    .await;
    quic.close(ErrorCode::NoError.code(), b"");
}

/// GOAWAY naming the first request stream not served (§5.2).
async fn goaway(conn: &H3Conn) {
    conn.goaway.set(true);
    let Some(ctl) = conn.control.get() else {
        return;
    };
    let mut out = BytesMut::new();
    frame::put_varint_frame(&mut out, FrameKind::Goaway, conn.next_id.get());
    let _ = conn.quic.write_all_bytes(ctl, out.freeze()).await;
}

/// The client's unidirectional streams, each read in a task of its own.
async fn accept_uni(conn: Rc<H3Conn>) {
    while let Some(id) = conn.quic.accept(Dir::Uni).await {
        ringside_runtime::task::spawn(uni_stream(conn.clone(), id));
    }
}

/// Bytes of a control stream's frame this side keeps at most: SETTINGS
/// and the one-number frames are small.
const CONTROL_FRAME_MAX: u64 = 16 * 1024;

async fn uni_stream(conn: Rc<H3Conn>, id: StreamId) {
    let quic = &conn.quic;
    let mut pending = BytesMut::new();
    let kind = loop {
        if let Some((t, n)) = StreamType::parse(&pending) {
            pending.advance(n);
            break t;
        }
        match quic.read(id, 4096).await {
            Ok(Some(b)) => pending.extend_from_slice(&b),
            // Ended or reset before its type: nothing to do (§6.2).
            _ => return,
        }
    };
    let code = match kind {
        StreamType::Control if conn.peer_control.replace(true) => {
            Some(ErrorCode::StreamCreationError)
        }
        StreamType::Control => control_stream(&conn, id, pending).await,
        StreamType::QpackEncoder | StreamType::QpackDecoder => {
            let read = if kind == StreamType::QpackEncoder {
                qpack::read_encoder_stream
            } else {
                qpack::read_decoder_stream
            };
            instruction_stream(&conn, id, pending, read).await
        }
        // Only a server pushes (§6.2.2).
        StreamType::Push => Some(ErrorCode::StreamCreationError),
        _ => {
            quic.stop(id, ErrorCode::StreamCreationError.code());
            None
        }
    };
    if let Some(code) = code {
        conn.fail(code, "the client's unidirectional stream");
    }
}

/// Reads the client's control stream: SETTINGS first and once, then
/// GOAWAY and the like; its end is H3_CLOSED_CRITICAL_STREAM (§6.2.1).
async fn control_stream(conn: &H3Conn, id: StreamId, mut pending: BytesMut) -> Option<ErrorCode> {
    let mut parser = FrameParser::new(CONTROL_FRAME_MAX);
    let mut settings = false;
    loop {
        let step = match parser.next(&pending) {
            Ok(s) => s,
            Err(code) => return Some(code),
        };
        match step.item {
            Item::NeedMore => match conn.quic.read(id, 4096).await {
                Ok(Some(b)) => pending.extend_from_slice(&b),
                Ok(None) | Err(ringside_quic::StreamError::Reset(_)) => {
                    return Some(ErrorCode::ClosedCriticalStream)
                }
                Err(_) => return None,
            },
            Item::Frame { kind, payload } => {
                if !kind.allowed_on(StreamRole::Control) {
                    return Some(ErrorCode::FrameUnexpected);
                }
                match kind {
                    FrameKind::Settings if settings => return Some(ErrorCode::FrameUnexpected),
                    FrameKind::Settings => {
                        if let Err(code) = Settings::decode(&pending[payload]) {
                            return Some(code);
                        }
                        settings = true;
                    }
                    _ if !settings => return Some(ErrorCode::MissingSettings),
                    _ => {
                        if let Err(code) = frame::varint_payload(&pending[payload]) {
                            return Some(code);
                        }
                    }
                }
                pending.advance(step.consumed);
            }
            Item::Skipped if !settings => return Some(ErrorCode::MissingSettings),
            Item::Skipped => pending.advance(step.consumed),
            Item::DataHeader { .. } | Item::Data(_) => return Some(ErrorCode::FrameUnexpected),
        }
    }
}

/// Reads a QPACK encoder or decoder stream, whole instructions at a time.
async fn instruction_stream(
    conn: &H3Conn,
    id: StreamId,
    mut pending: BytesMut,
    read: fn(&[u8]) -> Result<usize, ErrorCode>,
) -> Option<ErrorCode> {
    loop {
        match read(&pending) {
            Ok(n) => pending.advance(n),
            Err(code) => return Some(code),
        }
        if pending.len() > CONTROL_FRAME_MAX as usize {
            return Some(ErrorCode::ExcessiveLoad);
        }
        match conn.quic.read(id, 4096).await {
            Ok(Some(b)) => pending.extend_from_slice(&b),
            Ok(None) | Err(ringside_quic::StreamError::Reset(_)) => {
                return Some(ErrorCode::ClosedCriticalStream)
            }
            Err(_) => return None,
        }
    }
}
