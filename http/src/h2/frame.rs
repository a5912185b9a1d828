//! HTTP/2 frames (RFC 9113 §4 and §6): the 9-byte header, the error
//! codes, SETTINGS, and writers that put each frame the server sends
//! straight into the connection's output buffer (no frame values are
//! built and then serialized).

use bytes::{BufMut, BytesMut};

pub const HEADER_LEN: usize = 9;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// The smallest SETTINGS_MAX_FRAME_SIZE, which is also its initial value.
pub const MIN_FRAME_SIZE: u32 = 16_384;
pub const MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
pub const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The initial window of every stream and of the connection (§6.9.2).
pub const DEFAULT_WINDOW: i64 = 65_535;

/// An error code (RFC 9113 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason(pub u32);

impl Reason {
    pub const NO_ERROR: Reason = Reason(0x0);
    pub const PROTOCOL_ERROR: Reason = Reason(0x1);
    pub const INTERNAL_ERROR: Reason = Reason(0x2);
    pub const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    pub const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    pub const STREAM_CLOSED: Reason = Reason(0x5);
    pub const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    pub const REFUSED_STREAM: Reason = Reason(0x7);
    pub const CANCEL: Reason = Reason(0x8);
    pub const COMPRESSION_ERROR: Reason = Reason(0x9);
    pub const CONNECT_ERROR: Reason = Reason(0xa);
    pub const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    pub const INADEQUATE_SECURITY: Reason = Reason(0xc);
    pub const HTTP_1_1_REQUIRED: Reason = Reason(0xd);

    pub fn name(self) -> &'static str {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(self.0 as usize).copied().unwrap_or("UNKNOWN")
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    /// The reserved bit is ignored on receipt (§4.1).
    pub stream: u32,
}

impl Head {
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

pub fn head_bytes(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; HEADER_LEN] {
    debug_assert!(len <= MAX_FRAME_SIZE as usize);
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

pub fn put_head(dst: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    dst.put_slice(&head_bytes(len, kind, flags, stream));
}

/// SETTINGS identifiers (§6.5.2, RFC 8441 §3).
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    pub const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
}

/// The values a peer's SETTINGS frame carries (unknown ones are ignored).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub header_table_size: Option<u32>,
    pub max_concurrent_streams: Option<u32>,
    pub initial_window_size: Option<u32>,
    pub max_frame_size: Option<u32>,
    pub max_header_list_size: Option<u32>,
    pub enable_connect_protocol: Option<bool>,
}

impl Settings {
    /// Reads a SETTINGS payload, refusing the values §6.5.2 forbids with
    /// the connection error it names.
    pub fn parse(payload: &[u8]) -> Result<Settings, Reason> {
        if !payload.len().is_multiple_of(6) {
            return Err(Reason::FRAME_SIZE_ERROR);
        }
        let mut s = Settings::default();
        for e in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([e[0], e[1]]);
            let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
            match id {
                setting::HEADER_TABLE_SIZE => s.header_table_size = Some(v),
                setting::ENABLE_PUSH if v > 1 => return Err(Reason::PROTOCOL_ERROR),
                setting::MAX_CONCURRENT_STREAMS => s.max_concurrent_streams = Some(v),
                setting::INITIAL_WINDOW_SIZE if i64::from(v) > MAX_WINDOW => {
                    return Err(Reason::FLOW_CONTROL_ERROR)
                }
                setting::INITIAL_WINDOW_SIZE => s.initial_window_size = Some(v),
                setting::MAX_FRAME_SIZE if !(MIN_FRAME_SIZE..=MAX_FRAME_SIZE).contains(&v) => {
                    return Err(Reason::PROTOCOL_ERROR)
                }
                setting::MAX_FRAME_SIZE => s.max_frame_size = Some(v),
                setting::MAX_HEADER_LIST_SIZE => s.max_header_list_size = Some(v),
                setting::ENABLE_CONNECT_PROTOCOL if v > 1 => return Err(Reason::PROTOCOL_ERROR),
                setting::ENABLE_CONNECT_PROTOCOL => s.enable_connect_protocol = Some(v == 1),
                _ => {}
            }
        }
        Ok(s)
    }
}

pub fn put_settings(dst: &mut BytesMut, entries: &[(u16, u32)]) {
    put_head(dst, entries.len() * 6, SETTINGS, 0, 0);
    for &(id, v) in entries {
        dst.put_u16(id);
        dst.put_u32(v);
    }
}

pub fn put_settings_ack(dst: &mut BytesMut) {
    put_head(dst, 0, SETTINGS, ACK, 0);
}

pub fn put_ping(dst: &mut BytesMut, ack: bool, payload: &[u8; 8]) {
    put_head(dst, 8, PING, if ack { ACK } else { 0 }, 0);
    dst.put_slice(payload);
}

pub fn put_goaway(dst: &mut BytesMut, last: u32, reason: Reason, debug: &[u8]) {
    put_head(dst, 8 + debug.len(), GOAWAY, 0, 0);
    dst.put_u32(last);
    dst.put_u32(reason.0);
    dst.put_slice(debug);
}

pub fn put_rst(dst: &mut BytesMut, stream: u32, reason: Reason) {
    put_head(dst, 4, RST_STREAM, 0, stream);
    dst.put_u32(reason.0);
}

pub fn put_window_update(dst: &mut BytesMut, stream: u32, increment: u32) {
    put_head(dst, 4, WINDOW_UPDATE, 0, stream);
    dst.put_u32(increment);
}

pub fn put_data(dst: &mut BytesMut, stream: u32, data: &[u8], end: bool) {
    put_head(
        dst,
        data.len(),
        DATA,
        if end { END_STREAM } else { 0 },
        stream,
    );
    dst.put_slice(data);
}

/// Frames a header block encoded at `dst[start + HEADER_LEN..]`, behind
/// the room left for its frame header at `start`: in place when it fits
/// one frame of `max` bytes (the peer's max frame size), else with
/// CONTINUATION frames after the first.
pub fn frame_block(dst: &mut BytesMut, start: usize, stream: u32, end_stream: bool, max: usize) {
    let len = dst.len() - start - HEADER_LEN;
    let flags = if end_stream { END_STREAM } else { 0 };
    let max = max.max(1);
    if len <= max {
        let head = head_bytes(len, HEADERS, flags | END_HEADERS, stream);
        dst[start..start + HEADER_LEN].copy_from_slice(&head);
        return;
    }
    let rest = dst[start + HEADER_LEN + max..].to_vec();
    dst.truncate(start + HEADER_LEN + max);
    dst[start..start + HEADER_LEN].copy_from_slice(&head_bytes(max, HEADERS, flags, stream));
    let mut pieces = rest.chunks(max).peekable();
    while let Some(piece) = pieces.next() {
        let last = if pieces.peek().is_none() {
            END_HEADERS
        } else {
            0
        };
        put_head(dst, piece.len(), CONTINUATION, last, stream);
        dst.put_slice(piece);
    }
}

/// The payload of a DATA or HEADERS frame without its padding (§6.1,
/// §6.2), or PROTOCOL_ERROR when the padding is as long as the frame.
pub fn unpad(head: &Head, payload: &[u8]) -> Result<std::ops::Range<usize>, Reason> {
    if !head.has(PADDED) {
        return Ok(0..payload.len());
    }
    let Some(&pad) = payload.first() else {
        return Err(Reason::FRAME_SIZE_ERROR);
    };
    if pad as usize >= payload.len() {
        return Err(Reason::PROTOCOL_ERROR);
    }
    Ok(1..payload.len() - pad as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_reads_back_as_written_and_ignores_the_reserved_bit() {
        let mut b = BytesMut::new();
        put_head(&mut b, 0x12345, HEADERS, END_HEADERS, 7);
        let h = Head::parse(&b);
        assert_eq!(
            (h.len, h.kind, h.flags, h.stream),
            (0x12345, HEADERS, END_HEADERS, 7)
        );
        b[5] |= 0x80;
        assert_eq!(Head::parse(&b).stream, 7);
    }

    #[test]
    fn settings_refuse_what_rfc_9113_forbids() {
        let entry = |id: u16, v: u32| {
            let mut e = id.to_be_bytes().to_vec();
            e.extend_from_slice(&v.to_be_bytes());
            e
        };
        assert_eq!(Settings::parse(&[0; 5]), Err(Reason::FRAME_SIZE_ERROR));
        assert_eq!(Settings::parse(&entry(2, 2)), Err(Reason::PROTOCOL_ERROR));
        assert_eq!(
            Settings::parse(&entry(4, 1 << 31)),
            Err(Reason::FLOW_CONTROL_ERROR)
        );
        assert_eq!(
            Settings::parse(&entry(5, 16_383)),
            Err(Reason::PROTOCOL_ERROR)
        );
        assert_eq!(
            Settings::parse(&entry(5, 1 << 24)),
            Err(Reason::PROTOCOL_ERROR)
        );
        let ok = Settings::parse(&[entry(4, 0), entry(0x99, 5), entry(8, 1)].concat()).unwrap();
        assert_eq!(ok.initial_window_size, Some(0));
        assert_eq!(ok.enable_connect_protocol, Some(true));
    }

    #[test]
    fn a_long_block_is_split_into_continuations() {
        let mut b = BytesMut::new();
        b.put_slice(b"xx");
        b.put_slice(&[0u8; HEADER_LEN]);
        b.put_slice(&[7u8; 25]);
        frame_block(&mut b, 2, 3, true, 10);
        assert_eq!(&b[..2], b"xx");
        let first = Head::parse(&b[2..]);
        assert_eq!(
            (first.kind, first.flags, first.len),
            (HEADERS, END_STREAM, 10)
        );
        let second = Head::parse(&b[2 + 19..]);
        assert_eq!((second.kind, second.flags), (CONTINUATION, 0));
        let third = Head::parse(&b[2 + 38..]);
        assert_eq!(
            (third.kind, third.flags, third.len),
            (CONTINUATION, END_HEADERS, 5)
        );
        assert_eq!(b.len(), 2 + 27 + 25);
    }

    #[test]
    fn padding_is_stripped_or_refused() {
        let h = Head {
            len: 0,
            kind: DATA,
            flags: PADDED,
            stream: 1,
        };
        assert_eq!(unpad(&h, &[2, b'a', b'b', 0, 0]), Ok(1..3));
        assert_eq!(unpad(&h, &[4, b'a', 0, 0, 0]), Ok(1..1));
        assert_eq!(unpad(&h, &[5, b'a', 0, 0, 0]), Err(Reason::PROTOCOL_ERROR));
        assert_eq!(unpad(&h, &[0]), Ok(1..1));
    }
}
