//! One HTTP/2 connection (`--h2` over TLS, `--h2c` by prior knowledge),
//! keeping `--streams N` requests in flight, in the connection's task.
//!
//! A turn: every free stream slot takes a request, and the HEADERS (and
//! DATA, for a body) of all of them go out in one send, together with any
//! acks and window updates owed; then one read, as big as the buffer, whose
//! frames are parsed in place. Each request's header block was
//! HPACK-encoded once per URL ([`crate::request::build_h2`]), so a request
//! costs a 9-byte frame head and a copy: with one URL the connection's
//! first request indexes its fields in the server's table and the later
//! ones are a few bytes of indices, as h2load's are (unless the server's
//! SETTINGS make that table too small: then a size update, and literals
//! from there on). Responses are decoded with the
//! server's own HPACK decoder (its dynamic table must track the server's),
//! keeping only `:status` (and `server`, once, for the report).
//!
//! Flow control never throttles the bench: the client's stream window is
//! 2^31-1 from its SETTINGS and the connection window is raised to the
//! same at once; both are topped up after each 1 GiB received.
//!
//! Accounting is HTTP/1's (see [`crate::conn`]): a stream that ends is a
//! complete response; RST_STREAM is a Receive failure (REFUSED_STREAM
//! aside: the server did not process it, so it is sent again); after
//! GOAWAY, the streams above its last id are sent again on a new
//! connection, as are those on a connection that closes before any byte of
//! them. Times per stream: the connection's first streams carry its
//! connect (and handshake) time; the others start at their send.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use crate::args::H2;
use crate::conn::{broke, connect, Break, Times};
use crate::cores::Core;
use crate::hpack::Decoder;
use crate::rate::Ticket;
use crate::request::put_int;
use crate::response::Done;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

const REFUSED_STREAM: u32 = 0x7;

/// The largest frame a peer may send us (we do not raise it).
const MAX_FRAME: usize = 16_384;
/// What our windows are kept at.
const WINDOW: u32 = (1 << 31) - 1;
/// Received bytes after which a window is topped up.
const TOP_UP: u64 = 1 << 30;
/// Receive buffer: many frames per read.
const RECV_BUF: usize = 256 * 1024;

/// A request in flight.
struct Slot {
    id: u32,
    ticket: Ticket,
    /// When it started: before the connect for the connection's first
    /// streams, else when its HEADERS were queued.
    start: Instant,
    /// For the first streams of a connection: when the connect ended.
    connected: Option<Instant>,
    written: Instant,
    first_byte: Option<Instant>,
    status: u16,
    /// The final (non-1xx) head arrived.
    head: bool,
    body: u64,
    /// DATA bytes since this stream's window was last topped up.
    unacked: u64,
}

/// Our preface: the magic, SETTINGS (no push, the largest stream window),
/// and the connection window raised to the same.
fn preface(w: &mut Vec<u8>) {
    w.extend_from_slice(PREFACE);
    frame_head(w, 12, SETTINGS, 0, 0);
    w.extend_from_slice(&[0, 2, 0, 0, 0, 0]); // ENABLE_PUSH 0
    w.extend_from_slice(&[0, 4]); // INITIAL_WINDOW_SIZE
    w.extend_from_slice(&WINDOW.to_be_bytes());
    window_update(w, 0, u64::from(WINDOW) - 65_535);
}

fn frame_head(w: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    w.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    w.extend_from_slice(&stream.to_be_bytes());
}

fn window_update(w: &mut Vec<u8>, stream: u32, n: u64) {
    frame_head(w, 4, 0x8, 0, stream);
    w.extend_from_slice(&(n.min(u64::from(WINDOW)) as u32).to_be_bytes());
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Why a connection is given up, beyond HTTP/1's reasons.
enum End {
    /// A break of HTTP/1's kinds, with whether the first stream in flight
    /// had been answered in part (if not, all are sent again).
    Broke(Break),
    /// GOAWAY received and every stream below it done, or the requests
    /// turned to another address: close and reconnect.
    Drained,
}

/// Runs one HTTP/2 connection (reconnecting as needed) until the core's
/// requests are used up.
pub async fn run(core: Rc<Core>) {
    let timeout = core.cfg.timeout;
    let limit = core.cfg.streams;
    let max_out = core
        .targets
        .iter()
        .map(|t| 9 + 8 + t.h2.plain.len() + t.body.len() + 9 * t.body.len().div_ceil(MAX_FRAME))
        .max()
        .unwrap_or(0);
    let mut rbuf: Vec<u8> = Vec::with_capacity(RECV_BUF);
    let mut wbuf: Vec<u8> = Vec::with_capacity(limit * max_out + 4096);
    let mut again: VecDeque<Ticket> = VecDeque::with_capacity(limit);
    let mut slots: Vec<Slot> = Vec::with_capacity(limit);
    let mut failed: Vec<Ticket> = Vec::with_capacity(limit);
    let mut block: Vec<u8> = Vec::new();
    let mut server: Option<String> = None;
    let mut now = Instant::now();
    // Connect with the first request in hand, so a failed connect fails it.
    'conn: while let Some(first) = again.pop_front().or_else(|| core.tickets.take(now)) {
        let target = core.target_of(first);
        let addr = core.targets[target].addr;
        let t_start = Instant::now();
        let mut stream =
            match monoio::time::timeout(timeout, connect(&core, &core.targets[target])).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    now = Instant::now();
                    core.stats.borrow_mut().connect_errno = e.raw_os_error();
                    broke(&core, Break::Connect, &[first], false, &mut again);
                    continue;
                }
                Err(_) => {
                    now = Instant::now();
                    core.stats.borrow_mut().connect_errno = Some(libc::ETIMEDOUT);
                    broke(&core, Break::Connect, &[first], false, &mut again);
                    continue;
                }
            };
        if core.cfg.h2 == Some(H2::Tls) && stream.alpn() != Some(b"h2") {
            let _ = core.shared.tls_error.set(format!(
                "{}:{} did not choose HTTP/2 by ALPN (--h2 needs a server that offers h2)",
                core.targets[target].url.host, core.targets[target].url.port
            ));
            now = Instant::now();
            broke(&core, Break::Connect, &[first], false, &mut again);
            continue;
        }
        let t_conn = Instant::now();
        again.push_front(first);
        let mut decoder = Decoder::new(4096);
        let mut next_id: u32 = 1;
        let mut peer_max = u32::MAX as usize;
        // This connection's HPACK state as the server decodes it: whether
        // the first request's fields are in its table, and, should its
        // SETTINGS make the table too small for them, the size update the
        // next block must start with, after which every block is plain.
        let mut indexed = false;
        let mut plain_only = false;
        let mut size_update: Option<usize> = None;
        let mut goaway: Option<u32> = None;
        let mut moved = false;
        let mut conn_unacked: u64 = 0;
        let mut answered: u64 = 0;
        // HEADERS split over CONTINUATION: the stream and its END_STREAM.
        let mut pending: Option<(u32, bool)> = None;
        rbuf.clear();
        wbuf.clear();
        slots.clear();
        preface(&mut wbuf);
        let mut fresh = true;
        let end: End = 'io: loop {
            // Fill the free slots; all their frames go in one send.
            now = Instant::now();
            let new_from = slots.len();
            while slots.len() < limit.min(peer_max) && goaway.is_none() && !moved {
                if next_id > (1 << 31) - 1 {
                    goaway = Some(next_id - 2); // ids used up: reconnect
                    break;
                }
                let Some(t) = again.pop_front().or_else(|| core.tickets.take(now)) else {
                    break;
                };
                let tg = &core.targets[core.target_of(t)];
                if tg.addr != addr {
                    again.push_front(t);
                    moved = true;
                    break;
                }
                let end = if tg.body.is_empty() { END_STREAM } else { 0 };
                // A dynamic table size update (RFC 7541 §6.3), at most once
                // a connection: no allocation otherwise.
                let mut update = Vec::new();
                if let Some(n) = size_update.take() {
                    put_int(&mut update, 5, 0x20, n);
                }
                let block = if plain_only {
                    &tg.h2.plain
                } else if indexed {
                    &tg.h2.again
                } else {
                    indexed = true;
                    &tg.h2.first
                };
                frame_head(
                    &mut wbuf,
                    update.len() + block.len(),
                    HEADERS,
                    END_HEADERS | end,
                    next_id,
                );
                wbuf.extend_from_slice(&update);
                wbuf.extend_from_slice(block);
                let chunks = tg.body.chunks(MAX_FRAME);
                let n = chunks.len();
                for (i, c) in chunks.enumerate() {
                    let flags = if i + 1 == n { END_STREAM } else { 0 };
                    frame_head(&mut wbuf, c.len(), DATA, flags, next_id);
                    wbuf.extend_from_slice(c);
                }
                slots.push(Slot {
                    id: next_id,
                    ticket: t,
                    start: if fresh { t_start } else { now },
                    connected: fresh.then_some(t_conn),
                    written: now,
                    first_byte: None,
                    status: 0,
                    head: false,
                    body: 0,
                    unacked: 0,
                });
                next_id += 2;
            }
            fresh = false;
            if slots.len() > new_from {
                let c = &mut core.stats.borrow_mut().counts;
                c.h2_max_in_flight = c.h2_max_in_flight.max(slots.len() as u64);
            }
            if slots.is_empty() {
                if goaway.is_some() || moved {
                    break 'io End::Drained;
                }
                // Nothing left to ask: the connection is done.
                break 'conn;
            }
            if !wbuf.is_empty() {
                let (res, buf) = match monoio::time::timeout(timeout, stream.write_all(wbuf)).await
                {
                    Ok(r) => r,
                    Err(_) => (
                        Err(std::io::ErrorKind::TimedOut.into()),
                        Vec::with_capacity(limit * max_out + 4096),
                    ),
                };
                wbuf = buf;
                wbuf.clear();
                if res.is_err() {
                    break 'io End::Broke(Break::Write);
                }
                let t = Instant::now();
                for s in &mut slots[new_from..] {
                    s.written = t;
                }
            }

            // One read, then every whole frame in it (only a partial frame
            // is ever kept, at the front, so there is always room).
            let read = monoio::time::timeout(timeout, stream.read(rbuf)).await;
            let n = match read {
                Ok((res, buf)) => {
                    rbuf = buf;
                    res
                }
                Err(_) => {
                    rbuf = Vec::with_capacity(RECV_BUF);
                    break 'io End::Broke(Break::Timeout);
                }
            };
            let t_read = Instant::now();
            now = t_read;
            match n {
                Ok(0) => break 'io End::Broke(Break::Eof),
                Ok(n) => core.stats.borrow_mut().counts.bytes_read += n as u64,
                Err(_) => break 'io End::Broke(Break::Reset),
            }
            let mut pos = 0;
            while rbuf.len() - pos >= 9 {
                let h = &rbuf[pos..pos + 9];
                let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                let (kind, flags) = (h[3], h[4]);
                let id = u32_at(h, 5) & 0x7fff_ffff;
                if len > MAX_FRAME {
                    break 'io End::Broke(Break::Parse);
                }
                if rbuf.len() - pos < 9 + len {
                    break;
                }
                let p = &rbuf[pos + 9..pos + 9 + len];
                pos += 9 + len;
                if pending.is_some() && kind != CONTINUATION {
                    break 'io End::Broke(Break::Parse);
                }
                let slot = slots.iter().position(|s| s.id == id);
                let mut ended = false;
                match kind {
                    DATA => {
                        conn_unacked += len as u64;
                        if conn_unacked >= TOP_UP {
                            window_update(&mut wbuf, 0, conn_unacked);
                            conn_unacked = 0;
                        }
                        if let Some(i) = slot {
                            let s = &mut slots[i];
                            let pad = if flags & PADDED != 0 {
                                1 + usize::from(*p.first().unwrap_or(&0))
                            } else {
                                0
                            };
                            s.body += len.saturating_sub(pad) as u64;
                            s.first_byte.get_or_insert(t_read);
                            s.unacked += len as u64;
                            if s.unacked >= TOP_UP && flags & END_STREAM == 0 {
                                window_update(&mut wbuf, id, s.unacked);
                                s.unacked = 0;
                            }
                            ended = flags & END_STREAM != 0;
                        }
                    }
                    HEADERS | CONTINUATION => {
                        core.stats.borrow_mut().counts.h2_header_bytes += len as u64;
                        let (frag, end_stream) = if kind == HEADERS {
                            let mut at = 0;
                            let mut pad = 0;
                            if flags & PADDED != 0 {
                                pad = usize::from(*p.first().unwrap_or(&0));
                                at = 1;
                            }
                            if flags & PRIORITY != 0 {
                                at += 5;
                            }
                            if at + pad > p.len() {
                                break 'io End::Broke(Break::Parse);
                            }
                            (&p[at..p.len() - pad], flags & END_STREAM != 0)
                        } else {
                            match pending {
                                Some((pid, es)) if pid == id => (p, es),
                                _ => break 'io End::Broke(Break::Parse),
                            }
                        };
                        if flags & END_HEADERS == 0 {
                            if kind == HEADERS {
                                block.clear();
                            }
                            block.extend_from_slice(frag);
                            pending = Some((id, end_stream));
                            continue;
                        }
                        let whole: &[u8] = if pending.take().is_some() {
                            block.extend_from_slice(frag);
                            &block
                        } else {
                            frag
                        };
                        let mut status = 0u16;
                        let want_server = server.is_none() && core.wants_server();
                        let res = decoder.decode(whole, &mut |n, v| {
                            if n == b":status" {
                                status = std::str::from_utf8(v)
                                    .ok()
                                    .and_then(|v| v.parse().ok())
                                    .unwrap_or(0);
                            } else if want_server && n == b"server" {
                                server = Some(String::from_utf8_lossy(v).into_owned());
                            }
                            true
                        });
                        if res.is_err() {
                            break 'io End::Broke(Break::Parse);
                        }
                        if let Some(i) = slot {
                            let s = &mut slots[i];
                            s.first_byte.get_or_insert(t_read);
                            // An interim 1xx is skipped; trailers keep the status.
                            if !s.head && status >= 200 {
                                s.status = status;
                                s.head = true;
                            }
                            ended = end_stream;
                        }
                    }
                    RST_STREAM if len == 4 => {
                        if let Some(i) = slot {
                            let s = slots.remove(i);
                            core.stats.borrow_mut().counts.h2_resets += 1;
                            if u32_at(p, 0) == REFUSED_STREAM {
                                again.push_front(s.ticket);
                            } else {
                                broke(&core, Break::Reset, &[s.ticket], false, &mut again);
                            }
                        }
                    }
                    SETTINGS if flags & ACK == 0 => {
                        for e in p.chunks_exact(6) {
                            match u16::from_be_bytes([e[0], e[1]]) {
                                0x3 => peer_max = u32_at(e, 2) as usize,
                                // HEADER_TABLE_SIZE below what the first
                                // block indexes: say so, then index nothing.
                                0x1 if !plain_only
                                    && (u32_at(e, 2) as usize) < max_table(&core) =>
                                {
                                    plain_only = true;
                                    size_update = Some(u32_at(e, 2) as usize);
                                }
                                _ => {}
                            }
                        }
                        frame_head(&mut wbuf, 0, SETTINGS, ACK, 0);
                    }
                    PING if flags & ACK == 0 && len == 8 => {
                        frame_head(&mut wbuf, 8, PING, ACK, 0);
                        wbuf.extend_from_slice(p);
                    }
                    GOAWAY if len >= 8 => {
                        let last = u32_at(p, 0) & 0x7fff_ffff;
                        core.stats.borrow_mut().counts.h2_goaways += 1;
                        goaway = Some(last);
                        // Streams above `last` were never processed: ask again.
                        let mut i = slots.len();
                        while i > 0 {
                            i -= 1;
                            if slots[i].id > last {
                                again.push_front(slots.remove(i).ticket);
                            }
                        }
                    }
                    PUSH_PROMISE => break 'io End::Broke(Break::Parse),
                    _ => {} // other frames, and unknown ones, are ignored (§4.1)
                }
                if ended {
                    if let Some(i) = slot {
                        let s = slots.remove(i);
                        let done = Done {
                            status: s.status,
                            keep_alive: true,
                            body_len: s.body,
                        };
                        let times = Times {
                            start: s.start,
                            connected: s.connected,
                            written: s.written,
                            first_byte: s.first_byte.unwrap_or(t_read),
                            done: t_read,
                        };
                        core.record(&s.ticket, done, &times, &mut server);
                        answered += 1;
                    }
                }
            }
            // Keep the partial frame for the next read.
            if pos == rbuf.len() {
                rbuf.clear();
            } else {
                rbuf.drain(..pos);
            }
            if slots.is_empty() && (goaway.is_some() || moved) {
                break 'io End::Drained;
            }
        };
        // The server closed between responses if no stream in flight had
        // a byte of its answer: those are sent again (see crate::conn).
        if let End::Broke(kind) = end {
            failed.clear();
            failed.extend(slots.iter().map(|s| s.ticket));
            let between = answered > 0 && slots.first().is_some_and(|s| s.first_byte.is_none());
            if !failed.is_empty() {
                broke(&core, kind, &failed, between, &mut again);
            }
        }
        slots.clear();
        drop(stream);
    }
}

/// The most any URL's first block puts in the server's HPACK table.
fn max_table(core: &Core) -> usize {
    core.targets.iter().map(|t| t.h2.table).max().unwrap_or(0)
}
