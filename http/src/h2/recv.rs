//! The frames a client sends, read in order out of each `recv` and acted
//! on at once (RFC 9113 §5 and §6): streams opened, bodies and windows
//! moved, settings applied, PINGs answered, and each error answered as
//! the RFC names it, a stream error (RST_STREAM) where the stream alone is
//! at fault and a connection error (GOAWAY) where the connection's state
//! can no longer be trusted.
//!
//! Nothing is copied on the way for the common case: a header block in one
//! frame is decoded from the read buffer, and only a block split over
//! CONTINUATION frames, or a request body, is kept.

use bytes::BytesMut;

use super::frame::{self as f, Head, Reason, Settings, MAX_WINDOW};
use super::request::{trailer_malformed, Builder, Refusal};
use super::state::State;
use super::stats;
use super::stream::{acquire, release, Slot};

/// A header block split over CONTINUATION frames, gathered.
pub(crate) struct Block {
    id: u32,
    end_stream: bool,
    /// Stream error to answer once the block is decoded (a self-dependency).
    error: Option<Reason>,
    bytes: BytesMut,
}

/// A stream the connection task starts, or a refusal it logs.
pub(crate) struct Opened {
    pub id: u32,
    pub key: usize,
    pub slot: Box<Slot>,
    /// `Err` when the head is answered with its status, not served.
    pub laid: Result<(), crate::Error>,
}

/// What one pass over the input found for the connection task to do.
#[derive(Default)]
pub(crate) struct Found {
    pub opened: Vec<Opened>,
    /// Malformed requests reset: logged as the 400 HTTP/1 would give.
    pub malformed: u32,
}

pub(crate) struct Reader {
    /// The client's SETTINGS, which must come first, were read.
    settings_seen: bool,
    block: Option<Block>,
}

impl Reader {
    pub(crate) fn new() -> Reader {
        Reader {
            settings_seen: false,
            block: None,
        }
    }

    /// Acts on every whole frame at the start of `buf`; returns how many
    /// bytes were used. Stops at a connection error.
    pub(crate) fn frames(
        &mut self,
        st: &mut State,
        buf: &[u8],
        limits: &crate::Limits,
        found: &mut Found,
    ) -> usize {
        let mut at = 0;
        while st.failed.is_none() && buf.len() - at >= f::HEADER_LEN {
            let head = Head::parse(&buf[at..]);
            if head.len > f::MIN_FRAME_SIZE {
                st.fail(Reason::FRAME_SIZE_ERROR);
                break;
            }
            let end = at + f::HEADER_LEN + head.len as usize;
            if buf.len() < end {
                break;
            }
            let payload = &buf[at + f::HEADER_LEN..end];
            at = end;
            if !self.settings_seen {
                if head.kind != f::SETTINGS || head.has(f::ACK) {
                    st.fail(Reason::PROTOCOL_ERROR);
                    break;
                }
                self.settings_seen = true;
            }
            if let Err(r) = self.frame(st, head, payload, limits, found) {
                st.fail(r);
            }
        }
        at
    }

    fn frame(
        &mut self,
        st: &mut State,
        h: Head,
        p: &[u8],
        limits: &crate::Limits,
        found: &mut Found,
    ) -> Result<(), Reason> {
        if let Some(b) = self.block.as_mut() {
            if h.kind != f::CONTINUATION || h.stream != b.id {
                return Err(Reason::PROTOCOL_ERROR);
            }
            if b.bytes.len() + p.len() > 2 * limits.max_head + f::MIN_FRAME_SIZE as usize {
                // A header block that never ends (CONTINUATION flood).
                return Err(Reason::ENHANCE_YOUR_CALM);
            }
            b.bytes.extend_from_slice(p);
            if h.has(f::END_HEADERS) {
                let b = self.block.take().expect("a block");
                block(st, b.id, b.end_stream, b.error, &b.bytes, limits, found)?;
            }
            return Ok(());
        }
        match h.kind {
            f::DATA => data(st, h, p),
            f::HEADERS => {
                if h.stream == 0 {
                    return Err(Reason::PROTOCOL_ERROR);
                }
                let range = f::unpad(&h, p)?;
                let mut frag = &p[range];
                let mut error = None;
                if h.has(f::PRIORITY_FLAG) {
                    if frag.len() < 5 {
                        return Err(Reason::FRAME_SIZE_ERROR);
                    }
                    let dep =
                        u32::from_be_bytes([frag[0], frag[1], frag[2], frag[3]]) & 0x7fff_ffff;
                    if dep == h.stream {
                        error = Some(Reason::PROTOCOL_ERROR);
                    }
                    frag = &frag[5..];
                }
                let end_stream = h.has(f::END_STREAM);
                if h.has(f::END_HEADERS) {
                    return block(st, h.stream, end_stream, error, frag, limits, found);
                }
                let mut bytes = BytesMut::with_capacity(frag.len() * 2);
                bytes.extend_from_slice(frag);
                self.block = Some(Block {
                    id: h.stream,
                    end_stream,
                    error,
                    bytes,
                });
                Ok(())
            }
            f::PRIORITY => {
                if h.stream == 0 {
                    return Err(Reason::PROTOCOL_ERROR);
                }
                if p.len() != 5 {
                    st.reset(h.stream, Reason::FRAME_SIZE_ERROR);
                } else if u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff == h.stream {
                    st.reset(h.stream, Reason::PROTOCOL_ERROR);
                }
                st.waste();
                Ok(())
            }
            f::RST_STREAM => {
                if h.stream == 0 {
                    return Err(Reason::PROTOCOL_ERROR);
                }
                if p.len() != 4 {
                    return Err(Reason::FRAME_SIZE_ERROR);
                }
                if h.stream > st.last_peer_id {
                    return Err(Reason::PROTOCOL_ERROR);
                }
                stats::add(|s| &s.resets_received, 1);
                st.resets_received += 1;
                let code = Reason(u32::from_be_bytes([p[0], p[1], p[2], p[3]]));
                if let Some(key) = st.key(h.stream) {
                    if let Some(s) = st.streams.get_mut(key) {
                        s.reset = Some(code);
                    }
                    st.remove(key);
                }
                st.waste();
                Ok(())
            }
            f::SETTINGS => settings(st, h, p),
            f::PUSH_PROMISE => Err(Reason::PROTOCOL_ERROR),
            f::PING => {
                if h.stream != 0 {
                    return Err(Reason::PROTOCOL_ERROR);
                }
                if p.len() != 8 {
                    return Err(Reason::FRAME_SIZE_ERROR);
                }
                if !h.has(f::ACK) {
                    let payload: &[u8; 8] = p.try_into().expect("8 bytes");
                    f::put_ping(&mut st.out, true, payload);
                    st.waste();
                } else if p == super::NOTICE_PING {
                    st.notice_acked = true;
                }
                Ok(())
            }
            f::GOAWAY => {
                if h.stream != 0 {
                    return Err(Reason::PROTOCOL_ERROR);
                }
                if p.len() < 8 {
                    return Err(Reason::FRAME_SIZE_ERROR);
                }
                stats::add(|s| &s.goaways_received, 1);
                st.peer_goaway = true;
                Ok(())
            }
            f::WINDOW_UPDATE => window_update(st, h, p),
            f::CONTINUATION => Err(Reason::PROTOCOL_ERROR),
            // Unknown frame types are ignored (§4.1, §5.5).
            _ => Ok(()),
        }
    }
}

fn settings(st: &mut State, h: Head, p: &[u8]) -> Result<(), Reason> {
    if h.stream != 0 {
        return Err(Reason::PROTOCOL_ERROR);
    }
    if h.has(f::ACK) {
        return if p.is_empty() {
            Ok(())
        } else {
            Err(Reason::FRAME_SIZE_ERROR)
        };
    }
    let s = Settings::parse(p)?;
    if let Some(n) = s.header_table_size {
        st.encoder.set_max_table_size(n as usize);
    }
    if let Some(n) = s.initial_window_size {
        let delta = i64::from(n) - st.peer_initial_window;
        st.peer_initial_window = i64::from(n);
        st.shift_windows(delta)?;
    }
    if let Some(n) = s.max_frame_size {
        st.peer_max_frame = n as usize;
    }
    f::put_settings_ack(&mut st.out);
    st.waste();
    Ok(())
}

fn window_update(st: &mut State, h: Head, p: &[u8]) -> Result<(), Reason> {
    if p.len() != 4 {
        return Err(Reason::FRAME_SIZE_ERROR);
    }
    let inc = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
    // Updates beyond what the DATA sent explains served nothing.
    st.window_update_came();
    if h.stream == 0 {
        if inc == 0 {
            return Err(Reason::PROTOCOL_ERROR);
        }
        st.conn_send += inc;
        if st.conn_send > MAX_WINDOW {
            return Err(Reason::FLOW_CONTROL_ERROR);
        }
        st.wake_senders();
        return Ok(());
    }
    let Some(key) = st.key(h.stream) else {
        if h.stream > st.last_peer_id {
            return Err(Reason::PROTOCOL_ERROR);
        }
        return Ok(());
    };
    if inc == 0 {
        st.reset(h.stream, Reason::PROTOCOL_ERROR);
        return Ok(());
    }
    let s = &mut st.streams[key];
    s.send_window += inc;
    if s.send_window > MAX_WINDOW {
        st.reset(h.stream, Reason::FLOW_CONTROL_ERROR);
        return Ok(());
    }
    if let Some(w) = s.waker.take() {
        w.wake();
    }
    Ok(())
}

fn data(st: &mut State, h: Head, p: &[u8]) -> Result<(), Reason> {
    if h.stream == 0 {
        return Err(Reason::PROTOCOL_ERROR);
    }
    let range = f::unpad(&h, p)?;
    let len = p.len() as i64;
    if len > st.conn_recv {
        return Err(Reason::FLOW_CONTROL_ERROR);
    }
    st.conn_recv -= len;
    let Some(key) = st.key(h.stream) else {
        if h.stream > st.last_peer_id {
            return Err(Reason::PROTOCOL_ERROR);
        }
        if st.was_reset_lately(h.stream) {
            st.credit_conn(len as u32);
            return Ok(());
        }
        return Err(Reason::STREAM_CLOSED);
    };
    let s = &mut st.streams[key];
    if s.remote_ended {
        return Err(Reason::STREAM_CLOSED);
    }
    let end = h.has(f::END_STREAM);
    if len > s.recv_window {
        st.credit_conn(len as u32);
        st.reset(h.stream, Reason::FLOW_CONTROL_ERROR);
        return Ok(());
    }
    s.recv_window -= len;
    let body = &p[range];
    if let Some(left) = s.discarding {
        // Answered already: taken and thrown away, within its budget.
        let n = body.len() as u32;
        if n > left {
            st.credit_conn(len as u32);
            st.reset(h.stream, Reason::NO_ERROR);
            return Ok(());
        }
        s.discarding = Some(left - n);
        s.remote_ended = end;
        if body.is_empty() && !end {
            st.waste();
        }
        st.credit_stream(key, len as u32);
        if end {
            st.remove(key);
        }
        return Ok(());
    }
    s.received += body.len() as u64;
    let wrong_length = match s.content_length {
        Some(cl) => s.received > cl || (end && s.received != cl),
        None => false,
    };
    if wrong_length {
        // RFC 9113 §8.1.1: malformed, and the client made us reset it.
        st.credit_conn(len as u32);
        st.reset(h.stream, Reason::PROTOCOL_ERROR);
        st.waste();
        return Ok(());
    }
    s.body.extend_from_slice(body);
    s.remote_ended = end;
    if let Some(w) = s.waker.take() {
        w.wake();
    }
    let padding = (len as usize - body.len()) as u32;
    if padding > 0 {
        st.credit_stream(key, padding);
    }
    if body.is_empty() && !end {
        st.waste();
    }
    Ok(())
}

/// A whole header block on stream `id`: a new request, or trailers.
fn block(
    st: &mut State,
    id: u32,
    end_stream: bool,
    error: Option<Reason>,
    bytes: &[u8],
    limits: &crate::Limits,
    found: &mut Found,
) -> Result<(), Reason> {
    let compression = |_| Reason::COMPRESSION_ERROR;
    if let Some(key) = st.key(id) {
        // Trailers (§8.1): they end the stream and carry no pseudo-fields.
        let mut bad = None;
        let mut fields = crate::h2::client::FieldList::default();
        st.decoder
            .decode(bytes, &mut |n, v| {
                bad = trailer_malformed(n, v);
                fields.push(n, v);
                bad.is_none()
            })
            .map_err(compression)?;
        let s = &mut st.streams[key];
        if s.remote_ended {
            return Err(Reason::STREAM_CLOSED);
        }
        let short = s.content_length.is_some_and(|cl| cl != s.received);
        if bad.is_some() || !end_stream || error.is_some() || short {
            st.reset(id, error.unwrap_or(Reason::PROTOCOL_ERROR));
            st.waste();
            return Ok(());
        }
        s.remote_ended = true;
        if s.discarding.is_some() {
            // Answered already, and nothing waits for its trailers.
            st.remove(key);
            return Ok(());
        }
        if !fields.is_empty() {
            s.trailers = Some(Box::new(fields));
        }
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        return Ok(());
    }
    if id <= st.last_peer_id || id.is_multiple_of(2) {
        st.decoder
            .decode(bytes, &mut |_, _| false)
            .map_err(compression)?;
        if id.is_multiple_of(2) {
            return Err(Reason::PROTOCOL_ERROR);
        }
        if st.was_reset_lately(id) {
            return Ok(());
        }
        if st.was_closed_lately(id) {
            return Err(Reason::STREAM_CLOSED);
        }
        return Err(Reason::PROTOCOL_ERROR);
    }
    st.last_peer_id = id;
    let refused = st.goaway_last.is_some() || st.open_count() >= st.local.max_streams as usize;
    if refused || error.is_some() {
        st.decoder
            .decode(bytes, &mut |_, _| false)
            .map_err(compression)?;
        if st.goaway_last.is_none() {
            st.reset(id, error.unwrap_or(Reason::REFUSED_STREAM));
        }
        return Ok(());
    }
    let mut slot = acquire();
    let Slot { buf, head, .. } = &mut *slot;
    let mut b = Builder::new(head, buf, limits, crate::head::Version::Http2);
    st.decoder
        .decode(bytes, &mut |n, v| b.field(n, v))
        .map_err(compression)?;
    match b.finish(end_stream) {
        Ok(content_length) => {
            let key = st.open_stream(id, end_stream, content_length);
            found.opened.push(Opened {
                id,
                key,
                slot,
                laid: Ok(()),
            });
        }
        Err(Refusal::Answer(e)) => {
            let key = st.open_stream(id, end_stream, None);
            found.opened.push(Opened {
                id,
                key,
                slot,
                laid: Err(e),
            });
        }
        Err(Refusal::Malformed(why)) => {
            tracing::debug!(why, "malformed HTTP/2 request: stream reset");
            release(slot);
            st.reset(id, Reason::PROTOCOL_ERROR);
            st.waste();
            found.malformed += 1;
        }
    }
    Ok(())
}
