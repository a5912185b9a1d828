//! HTTP/3 frames (RFC 9114 §7): a type and a length, both varints, then
//! the payload. [`FrameParser`] reads them off one stream's bytes as they
//! arrive; DATA payloads come out as ranges of the caller's buffer, never
//! copied, and a non-DATA frame only once it is whole, under a bound.

use std::ops::Range;

use bytes::{BufMut, BytesMut};

use crate::h3::error::ErrorCode;
use crate::h3::varint;

pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// The frames HTTP/3 defines (§7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Data,
    Headers,
    CancelPush,
    Settings,
    PushPromise,
    Goaway,
    MaxPushId,
}

/// The kinds of stream frames travel on, for [`FrameKind::allowed_on`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRole {
    /// A request stream (bidirectional), either direction.
    Request,
    /// The control stream (§6.2.1).
    Control,
    /// A push stream (§6.2.2), after its push id.
    Push,
}

impl FrameKind {
    /// What a frame of type `ty` is: `Ok(None)` for a type this crate
    /// does not know, a reserved one among them, which the receiver skips
    /// (§9); HTTP/2's frame types that HTTP/3 dropped are
    /// H3_FRAME_UNEXPECTED (§7.2.8).
    pub fn of(ty: u64) -> Result<Option<FrameKind>, ErrorCode> {
        Ok(Some(match ty {
            DATA => FrameKind::Data,
            HEADERS => FrameKind::Headers,
            CANCEL_PUSH => FrameKind::CancelPush,
            SETTINGS => FrameKind::Settings,
            PUSH_PROMISE => FrameKind::PushPromise,
            GOAWAY => FrameKind::Goaway,
            MAX_PUSH_ID => FrameKind::MaxPushId,
            // PRIORITY, PING, WINDOW_UPDATE, CONTINUATION.
            0x02 | 0x06 | 0x08 | 0x09 => return Err(ErrorCode::FrameUnexpected),
            _ => return Ok(None),
        }))
    }

    pub fn ty(self) -> u64 {
        match self {
            FrameKind::Data => DATA,
            FrameKind::Headers => HEADERS,
            FrameKind::CancelPush => CANCEL_PUSH,
            FrameKind::Settings => SETTINGS,
            FrameKind::PushPromise => PUSH_PROMISE,
            FrameKind::Goaway => GOAWAY,
            FrameKind::MaxPushId => MAX_PUSH_ID,
        }
    }

    /// Whether the frame may travel on such a stream (§7.2, the table of
    /// Appendix A.2); one that may not is H3_FRAME_UNEXPECTED. Which way
    /// the stream goes (PUSH_PROMISE only from a server, MAX_PUSH_ID only
    /// from a client) is the caller's to check.
    pub fn allowed_on(self, role: StreamRole) -> bool {
        match self {
            FrameKind::Data | FrameKind::Headers => role != StreamRole::Control,
            FrameKind::PushPromise => role == StreamRole::Request,
            FrameKind::CancelPush
            | FrameKind::Settings
            | FrameKind::Goaway
            | FrameKind::MaxPushId => role == StreamRole::Control,
        }
    }

    /// The frames whose payload is one varint and nothing else.
    fn one_varint(self) -> bool {
        matches!(
            self,
            FrameKind::CancelPush | FrameKind::Goaway | FrameKind::MaxPushId
        )
    }
}

/// What one call to [`FrameParser::next`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Nothing more until more bytes come (a partial frame header, or a
    /// non-DATA frame not yet whole: keep the unconsumed bytes).
    NeedMore,
    /// A DATA frame begins; its payload follows as [`Item::Data`].
    DataHeader { len: u64 },
    /// Part of a DATA frame's payload, at this range of the input.
    Data(Range<usize>),
    /// A whole frame other than DATA, its payload at this range.
    Frame {
        kind: FrameKind,
        payload: Range<usize>,
    },
    /// Bytes of a frame of an unknown or reserved type, passed over.
    Skipped,
}

/// An [`Item`] and the bytes of the input it used up: the caller drops
/// them and passes what follows next time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub consumed: usize,
    pub item: Item,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    /// In a DATA frame's payload, this much left.
    Data(u64),
    /// In an unknown frame's payload, this much left.
    Skip(u64),
}

/// The HEADERS frame a request stream takes for a field section bound
/// (MAX_FIELD_SECTION_SIZE). An encoder may Huffman-code where that is
/// longer (some always do, and a code runs to 30 bits a byte), and §4.2.2
/// makes the section bound a SHOULD for the sender, answered with 431: so
/// the frame may be up to four times the bound, and the section's own
/// bound is the decoder's (`qpack::DecodeError::TooLarge`), which fails
/// the one stream, not the connection.
pub fn headers_frame_bound(max_section: u64) -> u64 {
    max_section.saturating_mul(4).saturating_add(64)
}

/// Reads the frames of one stream (a request stream, or a control or push
/// stream after its type). Frames other than DATA are handed over whole,
/// so the caller keeps their bytes until then: `max_frame` bounds what it
/// keeps.
#[derive(Debug, Clone)]
pub struct FrameParser {
    state: State,
    max_frame: u64,
}

impl FrameParser {
    /// `max_frame`: the longest payload of a frame other than DATA that is
    /// taken; a longer one is H3_EXCESSIVE_LOAD (§10.5: a peer's frame
    /// the endpoint will not hold is a load it refuses), which ends the
    /// whole connection. For request streams give it
    /// [`headers_frame_bound`] of the section bound, not the bound itself.
    pub fn new(max_frame: u64) -> FrameParser {
        FrameParser {
            state: State::Header,
            max_frame,
        }
    }

    /// The next item in `input`, the stream's bytes not yet consumed.
    /// Errors are connection errors of that code (§7.1, §7.2.8).
    pub fn next(&mut self, input: &[u8]) -> Result<Step, ErrorCode> {
        match self.state {
            State::Data(left) => {
                if input.is_empty() {
                    return Ok(need_more());
                }
                let n = take(left, input.len());
                self.state = if n as u64 == left {
                    State::Header
                } else {
                    State::Data(left - n as u64)
                };
                Ok(Step {
                    consumed: n,
                    item: Item::Data(0..n),
                })
            }
            State::Skip(left) => {
                let n = take(left, input.len());
                self.state = if n as u64 == left {
                    State::Header
                } else {
                    State::Skip(left - n as u64)
                };
                Ok(Step {
                    consumed: n,
                    item: if n == 0 {
                        Item::NeedMore
                    } else {
                        Item::Skipped
                    },
                })
            }
            State::Header => self.header(input),
        }
    }

    fn header(&mut self, input: &[u8]) -> Result<Step, ErrorCode> {
        let Some((ty, a)) = varint::decode(input) else {
            return Ok(need_more());
        };
        // HTTP/2's types fail before the length is even here.
        let kind = FrameKind::of(ty)?;
        let Some((len, b)) = varint::decode(&input[a..]) else {
            return Ok(need_more());
        };
        let at = a + b;
        let Some(kind) = kind else {
            let n = take(len, input.len() - at);
            self.state = if n as u64 == len {
                State::Header
            } else {
                State::Skip(len - n as u64)
            };
            return Ok(Step {
                consumed: at + n,
                item: Item::Skipped,
            });
        };
        if kind == FrameKind::Data {
            if len > 0 {
                self.state = State::Data(len);
            }
            return Ok(Step {
                consumed: at,
                item: Item::DataHeader { len },
            });
        }
        // One varint takes 1 to 8 bytes: any other length cannot hold
        // exactly one (§7.1).
        if kind.one_varint() && !(1..=8).contains(&len) {
            return Err(ErrorCode::FrameError);
        }
        if len > self.max_frame {
            return Err(ErrorCode::ExcessiveLoad);
        }
        // Under the bound, so within memory the caller could hold.
        let end = at.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        if input.len() < end {
            return Ok(need_more());
        }
        Ok(Step {
            consumed: end,
            item: Item::Frame {
                kind,
                payload: at..end,
            },
        })
    }

    /// Whether the parser is between frames: where a stream may end.
    pub fn at_boundary(&self) -> bool {
        self.state == State::Header
    }

    /// Checks the stream's end: `rest` is what was left unconsumed. A
    /// frame cut short by the end is H3_FRAME_ERROR (§7.1).
    pub fn finish(&self, rest: &[u8]) -> Result<(), ErrorCode> {
        if self.at_boundary() && rest.is_empty() {
            Ok(())
        } else {
            Err(ErrorCode::FrameError)
        }
    }
}

fn need_more() -> Step {
    Step {
        consumed: 0,
        item: Item::NeedMore,
    }
}

/// The most of `left` bytes that `have` bytes hold.
fn take(left: u64, have: usize) -> usize {
    usize::try_from(left).map_or(have, |l| l.min(have))
}

/// The payload of CANCEL_PUSH, GOAWAY or MAX_PUSH_ID: one varint that
/// fills it exactly, else H3_FRAME_ERROR (§7.1).
pub fn varint_payload(payload: &[u8]) -> Result<u64, ErrorCode> {
    match varint::decode(payload) {
        Some((v, n)) if n == payload.len() => Ok(v),
        _ => Err(ErrorCode::FrameError),
    }
}

/// A PUSH_PROMISE's payload: the push id and the encoded field section
/// (§7.2.5).
pub fn push_promise(payload: &[u8]) -> Result<(u64, &[u8]), ErrorCode> {
    let (id, n) = varint::decode(payload).ok_or(ErrorCode::FrameError)?;
    Ok((id, &payload[n..]))
}

/// Appends a frame header; the payload, `len` bytes, goes after it.
pub fn put_header(dst: &mut BytesMut, ty: u64, len: u64) {
    varint::put(dst, ty);
    varint::put(dst, len);
}

/// Appends a whole frame.
pub fn put_frame(dst: &mut BytesMut, kind: FrameKind, payload: &[u8]) {
    put_header(dst, kind.ty(), payload.len() as u64);
    dst.put_slice(payload);
}

/// Appends CANCEL_PUSH, GOAWAY or MAX_PUSH_ID with its one varint.
pub fn put_varint_frame(dst: &mut BytesMut, kind: FrameKind, v: u64) {
    debug_assert!(kind.one_varint());
    put_header(dst, kind.ty(), varint::len(v) as u64);
    varint::put(dst, v);
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
