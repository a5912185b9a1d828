//! HTTP/3 framing (RFC 9114 §7), as far as a load generator needs it:
//! what the client sends is built once per URL (the control stream's
//! preface, each request's HEADERS and DATA), and what the server sends is
//! read as it arrives, in whatever pieces QUIC delivers it, without
//! buffering DATA: only a HEADERS (or GOAWAY) payload is gathered, so that
//! QPACK sees it whole.

use super::qpack;

/// Frame types (RFC 9114 §7.2).
pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const SETTINGS: u64 = 0x4;
pub const GOAWAY: u64 = 0x7;

/// Unidirectional stream types (§6.2, RFC 9204 §4.2).
pub const CONTROL_STREAM: u64 = 0x0;

/// Settings (RFC 9204 §5).
const QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
const QPACK_BLOCKED_STREAMS: u64 = 0x7;

/// Error codes (§8.1).
pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;

/// The most a HEADERS payload may take: far above any real response head,
/// low enough that a broken peer cannot make us gather without end.
pub const MAX_FIELD_SECTION: u64 = 1 << 20;

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16).
pub fn put_varint(w: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        w.push(v as u8);
    } else if v < 1 << 14 {
        w.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        w.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        assert!(v < 1 << 62, "varint out of range");
        w.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a variable-length integer at the start of `b`: (value, length),
/// or None when `b` holds only part of it.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    if b.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &x in &b[1..len] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

fn frame(w: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    put_varint(w, kind);
    put_varint(w, payload.len() as u64);
    w.extend_from_slice(payload);
}

/// The client's control stream, whole: its type and our SETTINGS, with a
/// QPACK dynamic table of zero, so that no response may refer to one (and
/// no QPACK encoder or decoder stream is needed, RFC 9204 §4.2).
pub fn control_stream() -> Vec<u8> {
    let mut settings = Vec::new();
    for (id, v) in [(QPACK_MAX_TABLE_CAPACITY, 0), (QPACK_BLOCKED_STREAMS, 0)] {
        put_varint(&mut settings, id);
        put_varint(&mut settings, v);
    }
    let mut w = Vec::new();
    put_varint(&mut w, CONTROL_STREAM);
    frame(&mut w, SETTINGS, &settings);
    w
}

/// A request's bytes on its stream: HEADERS with the QPACK `section`,
/// then the body in one DATA frame if there is one.
pub fn request(section: &[u8], body: &[u8]) -> Vec<u8> {
    let mut w = Vec::with_capacity(section.len() + body.len() + 16);
    frame(&mut w, HEADERS, section);
    if !body.is_empty() {
        frame(&mut w, DATA, body);
    }
    w
}

/// Why the server's bytes cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A frame not allowed on this stream (§7.2: H3_FRAME_UNEXPECTED).
    Unexpected(u64),
    /// A HEADERS (or GOAWAY) payload over [`MAX_FIELD_SECTION`], or a
    /// GOAWAY that is not one integer.
    Malformed,
    /// The field section does not decode.
    Qpack(qpack::QpackError),
}

/// What a stream's frames amount to, piece by piece.
pub enum Piece<'a> {
    /// A whole gathered payload: HEADERS on a request stream, GOAWAY on
    /// the control stream.
    Frame(u64, &'a [u8]),
    /// So many bytes of DATA payload.
    Data(usize),
}

/// Which stream the reader is for: what it gathers, counts or refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A response on a request stream: HEADERS gathered, DATA counted.
    Response,
    /// The server's control stream: GOAWAY gathered, SETTINGS skipped.
    Control,
}

#[derive(Clone, Copy, Debug)]
enum State {
    /// Between frames: the head's bytes so far are in `head`.
    Head,
    /// Inside a payload, `left` bytes to go.
    Gather(u64, u64),
    Count(u64),
    Skip(u64),
}

/// Reads one stream's frames from the pieces QUIC hands over.
#[derive(Debug)]
pub struct FrameReader {
    role: Role,
    state: State,
    head: [u8; 16],
    have: usize,
    block: Vec<u8>,
}

impl FrameReader {
    pub fn new(role: Role) -> FrameReader {
        FrameReader {
            role,
            state: State::Head,
            head: [0; 16],
            have: 0,
            block: Vec::new(),
        }
    }

    /// Whether the stream may end here (no frame begun and unfinished).
    pub fn between_frames(&self) -> bool {
        matches!(self.state, State::Head) && self.have == 0
    }

    /// What becomes of a frame of `kind` on this reader's stream.
    fn state_for(&self, kind: u64, len: u64) -> Result<State, FrameError> {
        // Reserved HTTP/2 types (§7.2.8) and ones never sent by a server on
        // these streams are errors; unknown types are skipped (§9).
        match (self.role, kind) {
            (_, 0x2 | 0x6 | 0x8 | 0x9) => Err(FrameError::Unexpected(kind)),
            (Role::Response, HEADERS) if len > MAX_FIELD_SECTION => Err(FrameError::Malformed),
            (Role::Response, HEADERS) => Ok(State::Gather(kind, len)),
            (Role::Response, DATA) => Ok(State::Count(len)),
            (Role::Response, 0x3 | SETTINGS | 0x5 | GOAWAY | 0xd) => {
                Err(FrameError::Unexpected(kind))
            }
            (Role::Control, DATA | HEADERS | 0x5) => Err(FrameError::Unexpected(kind)),
            (Role::Control, GOAWAY) if len > 8 => Err(FrameError::Malformed),
            (Role::Control, GOAWAY) => Ok(State::Gather(kind, len)),
            _ => Ok(State::Skip(len)),
        }
    }

    /// Reads `data`, the stream's next bytes, handing each gathered frame
    /// and each run of DATA to `on`.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        on: &mut dyn FnMut(Piece) -> Result<(), FrameError>,
    ) -> Result<(), FrameError> {
        while !data.is_empty() || matches!(self.state, State::Gather(_, 0)) {
            match self.state {
                State::Head => {
                    // A head is two varints: take bytes until both are whole.
                    self.head[self.have] = data[0];
                    self.have += 1;
                    data = &data[1..];
                    let Some((kind, n)) = varint(&self.head[..self.have]) else {
                        continue;
                    };
                    let Some((len, m)) = varint(&self.head[n..self.have]) else {
                        continue;
                    };
                    debug_assert_eq!(n + m, self.have);
                    self.have = 0;
                    self.state = match self.state_for(kind, len)? {
                        State::Count(0) | State::Skip(0) => State::Head,
                        s => s,
                    };
                    self.block.clear();
                }
                State::Gather(kind, left) => {
                    let take = (left as usize).min(data.len());
                    if left as usize == take && self.block.is_empty() {
                        // The whole payload is in this piece: no copy.
                        self.state = State::Head;
                        on(Piece::Frame(kind, &data[..take]))?;
                    } else {
                        self.block.extend_from_slice(&data[..take]);
                        let left = left - take as u64;
                        self.state = State::Gather(kind, left);
                        if left == 0 {
                            self.state = State::Head;
                            on(Piece::Frame(kind, &self.block))?;
                        }
                    }
                    data = &data[take..];
                }
                State::Count(left) => {
                    let take = (left as usize).min(data.len());
                    self.state = if left as usize == take {
                        State::Head
                    } else {
                        State::Count(left - take as u64)
                    };
                    if take > 0 {
                        on(Piece::Data(take))?;
                    }
                    data = &data[take..];
                }
                State::Skip(left) => {
                    let take = (left as usize).min(data.len());
                    self.state = if left as usize == take {
                        State::Head
                    } else {
                        State::Skip(left - take as u64)
                    };
                    data = &data[take..];
                }
            }
        }
        Ok(())
    }
}

/// One of the server's unidirectional streams: its type, then, for the
/// control stream, its frames; QPACK's streams (unused: our table is
/// empty) and any other type are read and dropped (§6.2: unknown types
/// are ignored).
#[derive(Debug)]
pub struct UniReader {
    head: Vec<u8>,
    control: Option<FrameReader>,
    known: bool,
}

impl Default for UniReader {
    fn default() -> Self {
        UniReader {
            head: Vec::with_capacity(8),
            control: None,
            known: false,
        }
    }
}

impl UniReader {
    /// Reads the stream's next bytes; a GOAWAY's stream id goes to `goaway`.
    pub fn feed(&mut self, mut data: &[u8], goaway: &mut dyn FnMut(u64)) -> Result<(), FrameError> {
        if !self.known {
            while !data.is_empty() && !self.known {
                self.head.push(data[0]);
                data = &data[1..];
                if let Some((kind, _)) = varint(&self.head) {
                    self.known = true;
                    if kind == CONTROL_STREAM {
                        self.control = Some(FrameReader::new(Role::Control));
                    }
                }
            }
        }
        let Some(r) = self.control.as_mut() else {
            return Ok(());
        };
        r.feed(data, &mut |p| {
            if let Piece::Frame(GOAWAY, payload) = p {
                match varint(payload) {
                    Some((id, n)) if n == payload.len() => goaway(id),
                    _ => return Err(FrameError::Malformed),
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        for v in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut w = Vec::new();
            put_varint(&mut w, v);
            assert_eq!(varint(&w), Some((v, w.len())), "{v}");
            if w.len() > 1 {
                assert_eq!(varint(&w[..w.len() - 1]), None, "{v}");
            }
        }
        // RFC 9000 §A.1's examples.
        assert_eq!(varint(&[0x25]), Some((37, 1)));
        assert_eq!(varint(&[0x7b, 0xbd]), Some((15_293, 2)));
        assert_eq!(varint(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
    }

    #[test]
    fn control_stream_says_no_dynamic_table() {
        // type 0, SETTINGS (4) of 4 bytes: capacity 0, blocked streams 0.
        assert_eq!(control_stream(), [0x00, 0x04, 0x04, 0x01, 0x00, 0x07, 0x00]);
    }

    /// Reads `bytes` split at every place: the same pieces whole.
    fn read_split(bytes: &[u8]) -> Vec<(String, usize)> {
        let mut want: Option<Vec<(String, usize)>> = None;
        for cut in 0..=bytes.len() {
            let mut r = FrameReader::new(Role::Response);
            let mut got = Vec::new();
            for part in [&bytes[..cut], &bytes[cut..]] {
                r.feed(part, &mut |p| {
                    match p {
                        Piece::Frame(k, b) => got.push((format!("frame {k}"), b.len())),
                        Piece::Data(n) => got.push(("data".into(), n)),
                    }
                    Ok(())
                })
                .unwrap();
            }
            assert!(r.between_frames());
            // Data runs may be split; add them up.
            let mut merged: Vec<(String, usize)> = Vec::new();
            for (k, n) in got {
                match merged.last_mut() {
                    Some((lk, ln)) if *lk == "data" && k == "data" => *ln += n,
                    _ => merged.push((k, n)),
                }
            }
            match &want {
                None => want = Some(merged),
                Some(w) => assert_eq!(&merged, w, "cut at {cut}"),
            }
        }
        want.unwrap()
    }

    #[test]
    fn response_frames_in_any_pieces() {
        let mut b = Vec::new();
        frame(&mut b, HEADERS, &[0, 0, 0xd9]); // :status 200
        frame(&mut b, 0x21, b"reserved"); // unknown: skipped
        frame(&mut b, DATA, &[b'x'; 300]);
        frame(&mut b, DATA, b"");
        frame(&mut b, HEADERS, &[0, 0]); // trailers
        assert_eq!(
            read_split(&b),
            [
                ("frame 1".to_string(), 3),
                ("data".to_string(), 300),
                ("frame 1".to_string(), 2)
            ]
        );
    }

    #[test]
    fn frames_a_response_may_not_carry() {
        for kind in [SETTINGS, GOAWAY, 0x5, 0x2] {
            let mut b = Vec::new();
            frame(&mut b, kind, &[0]);
            let mut r = FrameReader::new(Role::Response);
            assert_eq!(
                r.feed(&b, &mut |_| Ok(())),
                Err(FrameError::Unexpected(kind))
            );
        }
        let mut r = FrameReader::new(Role::Response);
        let mut head = Vec::new();
        put_varint(&mut head, HEADERS);
        put_varint(&mut head, MAX_FIELD_SECTION + 1);
        assert_eq!(r.feed(&head, &mut |_| Ok(())), Err(FrameError::Malformed));
        let mut r = FrameReader::new(Role::Response);
        r.feed(&[0x01, 0x05, 0, 0], &mut |_| Ok(())).unwrap();
        assert!(!r.between_frames(), "inside a HEADERS frame");
    }

    #[test]
    fn control_stream_yields_goaway() {
        let mut b = Vec::new();
        put_varint(&mut b, CONTROL_STREAM);
        frame(&mut b, SETTINGS, &[0x01, 0x00, 0x06, 0x44, 0x00]);
        let mut id = Vec::new();
        put_varint(&mut id, 400);
        frame(&mut b, GOAWAY, &id);
        for cut in 0..=b.len() {
            let mut u = UniReader::default();
            let mut got = Vec::new();
            u.feed(&b[..cut], &mut |g| got.push(g)).unwrap();
            u.feed(&b[cut..], &mut |g| got.push(g)).unwrap();
            assert_eq!(got, [400], "cut at {cut}");
        }
        // QPACK's encoder stream (type 2): read and dropped.
        let mut u = UniReader::default();
        u.feed(&[0x02, 0x3f, 0xe1, 0x1f], &mut |_| panic!())
            .unwrap();
        let mut u = UniReader::default();
        assert!(u.feed(&[0x00, 0x01, 0x00], &mut |_| {}).is_err());
    }
}
