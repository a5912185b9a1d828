//! One HTTP/3 stream's bytes through quinn-proto: a request written as
//! far as flow control lets it, a response read into what the bench
//! counts, the server's unidirectional streams read for a GOAWAY. Kept
//! apart from [`crate::h3conn`], which decides what each outcome means
//! for the run's accounting.

use std::time::Instant;

use quinn_proto::{Connection, ReadError, StreamId, WriteError};

use super::frames::{self, FrameError, FrameReader, Piece, UniReader};
use crate::rate::Ticket;

/// A request in flight.
pub struct Slot {
    pub id: StreamId,
    pub ticket: Ticket,
    pub start: Instant,
    pub connected: Option<Instant>,
    pub written: Instant,
    pub got: Got,
    /// Request bytes written so far, and whether the send side is finished.
    pub sent: usize,
    pub finished: bool,
    pub reader: FrameReader,
}

/// What a response has brought so far.
#[derive(Default)]
pub struct Got {
    pub first_byte: Option<Instant>,
    pub status: u16,
    /// The final (non-1xx) HEADERS arrived.
    pub head: bool,
    pub body: u64,
    /// HEADERS payload bytes not yet counted into the core's stats.
    pub header_bytes: u64,
    /// The Server field, when it was asked for.
    pub server: Option<String>,
}

/// Takes one piece of a response into `got`.
fn take(got: &mut Got, p: Piece, now: Instant, want_server: bool) -> Result<(), FrameError> {
    got.first_byte.get_or_insert(now);
    match p {
        Piece::Frame(_, section) => {
            got.header_bytes += section.len() as u64;
            let want = want_server && got.server.is_none();
            let (status, server) =
                super::qpack::status_and_server(section, want).map_err(FrameError::Qpack)?;
            if server.is_some() {
                got.server = server;
            }
            if !got.head {
                // An interim 1xx is skipped; a head without a status is
                // malformed (RFC 9114 §4.3.2); trailers keep the status.
                if status < 100 {
                    return Err(FrameError::Malformed);
                }
                if status >= 200 {
                    got.status = status;
                    got.head = true;
                }
            }
        }
        // DATA before the head is malformed (§4.1).
        Piece::Data(_) if !got.head => return Err(FrameError::Unexpected(frames::DATA)),
        Piece::Data(n) => got.body += n as u64,
    }
    Ok(())
}

/// What one read of a response stream came to.
#[derive(Default)]
pub struct Read {
    /// Bytes arrived.
    pub any: bool,
    /// The server finished the stream.
    pub fin: bool,
    /// The server reset it, with this code.
    pub reset: Option<u64>,
    /// Its bytes are not a response.
    pub error: Option<FrameError>,
}

/// Reads what stream `slot.id` has into `slot`.
pub fn read(conn: &mut Connection, slot: &mut Slot, now: Instant, want_server: bool) -> Read {
    let mut r = Read::default();
    let Slot {
        id, reader, got, ..
    } = slot;
    let mut stream = conn.recv_stream(*id);
    let Ok(mut chunks) = stream.read(true) else {
        return r;
    };
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(c)) => {
                r.any = true;
                if let Err(e) = reader.feed(&c.bytes, &mut |p| take(got, p, now, want_server)) {
                    r.error = Some(e);
                    break;
                }
            }
            Ok(None) => {
                r.fin = true;
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(code)) => {
                r.reset = Some(code.into_inner());
                break;
            }
        }
    }
    // Whether flow control wants a frame sent: the next transmit sends it.
    let _ = chunks.finalize();
    r
}

/// Reads one of the server's unidirectional streams: the GOAWAY id, if
/// one came; an error is the connection's (§6.2.1, §7.2).
pub fn read_uni(
    conn: &mut Connection,
    id: StreamId,
    reader: &mut UniReader,
) -> Result<Option<u64>, FrameError> {
    let mut goaway = None;
    let mut stream = conn.recv_stream(id);
    let Ok(mut chunks) = stream.read(true) else {
        return Ok(None);
    };
    let mut res = Ok(());
    while let Ok(Some(c)) = chunks.next(usize::MAX) {
        res = reader.feed(&c.bytes, &mut |g| goaway = Some(g));
        if res.is_err() {
            break;
        }
    }
    let _ = chunks.finalize();
    res.map(|()| goaway)
}

/// Writes `bytes[*sent..]` on stream `id`, as far as flow control allows,
/// and with `finish`, ends the stream once all is written; returns whether
/// it did (the send side is then done).
pub fn write(
    conn: &mut Connection,
    id: StreamId,
    bytes: &[u8],
    sent: &mut usize,
    finish: bool,
) -> bool {
    let mut stream = conn.send_stream(id);
    while *sent < bytes.len() {
        match stream.write(&bytes[*sent..]) {
            Ok(n) => *sent += n,
            Err(WriteError::Blocked) => return false,
            // The server stopped it (it answers without the rest) or it
            // is gone: nothing more to send.
            Err(_) => {
                *sent = bytes.len();
                break;
            }
        }
    }
    if finish {
        let _ = stream.finish();
    }
    finish
}
