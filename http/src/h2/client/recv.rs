//! The frames a server sends, acted on as they are read: responses and
//! their bodies to the streams, windows, settings, PINGs and GOAWAY.
//! A stream's error resets it; a connection error ends the connection
//! with GOAWAY (RFC 9113 §5.4).

use super::fields::FieldList;
use super::state::{CState, Lost, Partial};
use crate::h2::frame::{self, Head, Reason, Settings, HEADER_LEN, MAX_WINDOW, MIN_FRAME_SIZE};

/// The largest header block gathered before decoding, beyond which the
/// server is taken to flood.
const MAX_BLOCK: usize = 256 * 1024;

/// Acts on every whole frame in `buf`; says how many bytes were used.
pub(super) fn frames(st: &mut CState, buf: &[u8]) -> usize {
    let mut at = 0;
    while st.failed.is_none() && buf.len() - at >= HEADER_LEN {
        let head = Head::parse(&buf[at..]);
        if head.len > MIN_FRAME_SIZE {
            st.protocol_error(Reason::FRAME_SIZE_ERROR);
            break;
        }
        let end = at + HEADER_LEN + head.len as usize;
        if buf.len() < end {
            break;
        }
        st.heard = std::time::Instant::now();
        frame(st, &head, &buf[at + HEADER_LEN..end]);
        at = end;
    }
    at
}

fn frame(st: &mut CState, head: &Head, payload: &[u8]) {
    if st.partial.is_some() && head.kind != frame::CONTINUATION {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    match head.kind {
        frame::DATA => data(st, head, payload),
        frame::HEADERS => headers(st, head, payload),
        frame::CONTINUATION => continuation(st, head, payload),
        frame::RST_STREAM => rst(st, head, payload),
        frame::SETTINGS => settings(st, head, payload),
        frame::PING => ping(st, head, payload),
        frame::GOAWAY => goaway(st, head, payload),
        frame::WINDOW_UPDATE => window_update(st, head, payload),
        frame::PUSH_PROMISE => st.protocol_error(Reason::PROTOCOL_ERROR),
        frame::PRIORITY if head.stream == 0 => st.protocol_error(Reason::PROTOCOL_ERROR),
        _ => {}
    }
}

/// A stream id the server names that we never opened.
fn never_opened(st: &CState, id: u32) -> bool {
    id == 0 || id.is_multiple_of(2) || id >= st.next_id
}

fn data(st: &mut CState, head: &Head, payload: &[u8]) {
    let id = head.stream;
    if never_opened(st, id) {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    let len = payload.len() as i64;
    st.conn_recv -= len;
    if st.conn_recv < 0 {
        return st.protocol_error(Reason::FLOW_CONTROL_ERROR);
    }
    let range = match frame::unpad(head, payload) {
        Ok(r) => r,
        Err(r) => return st.protocol_error(r),
    };
    let Some(s) = st.streams.get_mut(&id) else {
        // Cancelled already: its bytes are the connection's to credit.
        st.taken(payload.len());
        return;
    };
    if s.reset.is_some() || s.remote_ended || !s.final_head {
        let broke = !s.final_head && s.reset.is_none() && !s.remote_ended;
        st.taken(payload.len());
        if broke {
            reset(
                st,
                id,
                Reason::PROTOCOL_ERROR,
                "DATA before the response head",
            );
        }
        return;
    }
    s.recv_window -= len;
    if s.recv_window < 0 {
        st.taken(payload.len());
        return reset(
            st,
            id,
            Reason::FLOW_CONTROL_ERROR,
            "DATA past the stream's window",
        );
    }
    s.data.extend_from_slice(&payload[range.clone()]);
    if head.has(frame::END_STREAM) {
        s.remote_ended = true;
    }
    s.wake();
    // Padding is credited at once; the data as it is read.
    let pad = payload.len() - range.len();
    if pad > 0 {
        st.stream_taken(id, pad);
    }
}

/// Resets a stream for a fault in what the server sent on it.
fn reset(st: &mut CState, id: u32, reason: Reason, why: &'static str) {
    frame::put_rst(&mut st.out, id, reason);
    if let Some(s) = st.streams.get_mut(&id) {
        s.reset = Some(reason);
        s.malformed = Some(why);
        s.wake();
    }
    st.wake_task();
}

fn headers(st: &mut CState, head: &Head, payload: &[u8]) {
    let id = head.stream;
    if never_opened(st, id) {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    let range = match frame::unpad(head, payload) {
        Ok(r) => r,
        Err(r) => return st.protocol_error(r),
    };
    let mut block = &payload[range];
    if head.has(frame::PRIORITY_FLAG) {
        if block.len() < 5 {
            return st.protocol_error(Reason::FRAME_SIZE_ERROR);
        }
        block = &block[5..];
    }
    let end_stream = head.has(frame::END_STREAM);
    if !head.has(frame::END_HEADERS) {
        st.partial = Some(Partial {
            stream: id,
            end_stream,
            block: block.to_vec(),
        });
        return;
    }
    section(st, id, block, end_stream);
}

fn continuation(st: &mut CState, head: &Head, payload: &[u8]) {
    let Some(mut p) = st.partial.take() else {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    };
    if p.stream != head.stream || p.block.len() + payload.len() > MAX_BLOCK {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    p.block.extend_from_slice(payload);
    if !head.has(frame::END_HEADERS) {
        st.partial = Some(p);
        return;
    }
    section(st, p.stream, &p.block, p.end_stream);
}

/// A whole header section: a response head (interim or final) or the
/// trailers. Decoded even for a stream we cancelled, so that HPACK stays
/// in step with the server.
fn section(st: &mut CState, id: u32, block: &[u8], end_stream: bool) {
    let trailers = st.streams.get(&id).is_some_and(|s| s.final_head);
    let max = st.local.max_head;
    let mut fields = FieldList::default();
    let mut status: Option<u16> = None;
    let mut bad: Option<&'static str> = None;
    let r = st.dec.decode(block, &mut |name, value| {
        if let Some(pseudo) = name.strip_prefix(b":") {
            if pseudo != b"status" || trailers || status.is_some() || !fields.is_empty() {
                bad = Some("a pseudo-field that is not one :status first");
                return false;
            }
            status = parse_status(value);
            if status.is_none() {
                bad = Some("a malformed :status");
                return false;
            }
            return true;
        }
        if name.iter().any(u8::is_ascii_uppercase) || crate::hop::is_hop_by_hop(name) {
            bad = Some("an upper-case or connection-specific field");
            return false;
        }
        fields.push(name, value);
        if fields.size() > max {
            bad = Some("a response head over the limit");
            return false;
        }
        true
    });
    if r.is_err() {
        return st.protocol_error(Reason::COMPRESSION_ERROR);
    }
    let Some(s) = st.streams.get_mut(&id) else {
        return;
    };
    if s.reset.is_some() || s.remote_ended {
        return;
    }
    if bad.is_none() && !trailers && status.is_none() {
        bad = Some("a response head without :status");
    }
    if bad.is_none() && trailers && !end_stream {
        bad = Some("a trailer section that does not end the stream");
    }
    if let Some(why) = bad {
        return reset(st, id, Reason::PROTOCOL_ERROR, why);
    }
    match status {
        Some(code) if trailers => unreachable!("refused above: {code}"),
        Some(code) => {
            let interim = (100..200).contains(&code);
            if interim && end_stream {
                return reset(
                    st,
                    id,
                    Reason::PROTOCOL_ERROR,
                    "an interim head ending the stream",
                );
            }
            s.final_head = !interim;
            s.push_head((code, fields));
        }
        None => s.trailers = Some(fields),
    }
    if end_stream {
        s.remote_ended = true;
    }
    s.wake();
}

fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b, c] if b.is_ascii_digit() && c.is_ascii_digit() => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

fn rst(st: &mut CState, head: &Head, payload: &[u8]) {
    if never_opened(st, head.stream) {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    let Ok(code) = <[u8; 4]>::try_from(payload) else {
        return st.protocol_error(Reason::FRAME_SIZE_ERROR);
    };
    if let Some(s) = st.streams.get_mut(&head.stream) {
        if s.reset.is_none() {
            s.reset = Some(Reason(u32::from_be_bytes(code)));
        }
        s.wake();
    }
    st.wake_waiters();
}

fn settings(st: &mut CState, head: &Head, payload: &[u8]) {
    if head.stream != 0 {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    if head.has(frame::ACK) {
        return;
    }
    let s = match Settings::parse(payload) {
        Ok(s) => s,
        Err(r) => return st.protocol_error(r),
    };
    if let Some(n) = s.max_concurrent_streams {
        st.peer_max_streams = n;
    }
    if let Some(n) = s.max_frame_size {
        st.peer_max_frame = n as usize;
    }
    if let Some(n) = s.header_table_size {
        st.enc.set_max_table_size(n as usize);
    }
    if let Some(w) = s.initial_window_size {
        let delta = i64::from(w) - st.peer_initial_window;
        st.peer_initial_window = i64::from(w);
        for s in st.streams.values_mut() {
            s.send_window += delta;
            if s.send_window > MAX_WINDOW {
                return st.protocol_error(Reason::FLOW_CONTROL_ERROR);
            }
        }
    }
    frame::put_settings_ack(&mut st.out);
    st.wake_all();
}

fn ping(st: &mut CState, head: &Head, payload: &[u8]) {
    if head.stream != 0 {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    let Ok(data) = <&[u8; 8]>::try_from(payload) else {
        return st.protocol_error(Reason::FRAME_SIZE_ERROR);
    };
    if head.has(frame::ACK) {
        st.ping_sent = None;
    } else {
        frame::put_ping(&mut st.out, true, data);
        st.wake_task();
    }
}

fn goaway(st: &mut CState, head: &Head, payload: &[u8]) {
    if head.stream != 0 || payload.len() < 8 {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
    let code = Reason(u32::from_be_bytes([
        payload[4], payload[5], payload[6], payload[7],
    ]));
    st.goaway = Some(st.goaway.map_or(last, |l| l.min(last)));
    tracing::debug!(last, %code, streams = st.streams.len(), next = st.next_id, "GOAWAY from the server");
    // Streams above `last` were never processed: they may go again.
    for (&id, s) in st.streams.iter_mut() {
        if id > last && s.reset.is_none() {
            s.reset = Some(Reason::REFUSED_STREAM);
            s.wake();
        }
    }
    if code != Reason::NO_ERROR {
        st.fail(Lost::GoAway(code));
    }
    st.wake_all();
}

fn window_update(st: &mut CState, head: &Head, payload: &[u8]) {
    let Ok(b) = <[u8; 4]>::try_from(payload) else {
        return st.protocol_error(Reason::FRAME_SIZE_ERROR);
    };
    let inc = i64::from(u32::from_be_bytes(b) & 0x7fff_ffff);
    if head.stream == 0 {
        if inc == 0 {
            return st.protocol_error(Reason::PROTOCOL_ERROR);
        }
        st.conn_send += inc;
        if st.conn_send > MAX_WINDOW {
            return st.protocol_error(Reason::FLOW_CONTROL_ERROR);
        }
        st.wake_all();
        return;
    }
    if never_opened(st, head.stream) {
        return st.protocol_error(Reason::PROTOCOL_ERROR);
    }
    let id = head.stream;
    let Some(s) = st.streams.get_mut(&id) else {
        return;
    };
    if inc == 0 {
        return reset(st, id, Reason::PROTOCOL_ERROR, "a WINDOW_UPDATE of zero");
    }
    s.send_window += inc;
    if s.send_window > MAX_WINDOW {
        return reset(st, id, Reason::FLOW_CONTROL_ERROR, "a window past 2^31-1");
    }
    s.wake();
}
