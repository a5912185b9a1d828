//! FastCGI 1.0 records: writing what a web server sends, reading what an
//! application answers.
//!
//! # Background
//!
//! Every FastCGI message is a record (FastCGI specification §3.3): an
//! 8-byte header, `content_len` bytes of content and `padding_len` bytes of
//! padding that the receiver skips.
//!
//! ```text
//! version(1) type(1) request_id(2, big-endian) content_len(2) padding_len(1) reserved(1)
//! ```
//!
//! A request is a BEGIN_REQUEST record, then the PARAMS stream (name-value
//! pairs, §3.4) and the STDIN stream, each a run of records ended by one
//! with no content (§3.3, "stream records"). The application answers with
//! STDOUT and STDERR streams and one END_REQUEST record (§5.5) carrying the
//! application's exit status and a protocol status. Management records
//! (GET_VALUES and its GET_VALUES_RESULT, UNKNOWN_TYPE; §4) have request
//! id 0.
//!
//! # Writing
//!
//! The writers append to a `BytesMut`. Streams are cut into records of at
//! most 65 535 content bytes and padded to a multiple of 8, as php-fpm and
//! nginx do (the specification recommends 8-byte alignment, §3.3). A body
//! that should not be copied is sent with [`write_header`], the caller's own
//! content, then [`write_padding`].
//!
//! # Reading
//!
//! [`StreamReader`] is the reader for a request's answer: a small state
//! machine that is fed whatever bytes have arrived, hands back STDOUT and
//! STDERR content as ranges of the caller's buffer as soon as any of it is
//! there (a 64 KiB record need not be buffered whole), and keeps the only
//! pieces it cannot hand back, a header or END_REQUEST body split across
//! reads, in 8 bytes of its own:
//!
//! ```text
//!   +--> Header --STDOUT/STDERR--> Content --> Padding --+   (no content:
//!   |      |                                             |    straight to
//!   +------|---------------------------------------------+    Padding)
//!          |
//!          +--END_REQUEST--> EndBody (8 bytes) --> Padding --> Done
//! ```
//!
//! The caller keeps one buffer and passes all of it each time; the reader
//! counts how much of it is consumed, and the caller drops that much from
//! the front when it reads more ([`StreamReader::take_consumed`]).
//!
//! [`parse_record`] reads one whole record at a time, for management
//! records. Both check every header: the version must be 1, the record must
//! be one an application may send, for this request (or id 0 for management
//! records), and END_REQUEST and UNKNOWN_TYPE bodies must be 8 bytes. They
//! never guess: anything else is an error and the connection is not
//! reused.

use std::ops::Range;

use bytes::{BufMut, BytesMut};

/// The protocol version (`FCGI_VERSION_1`).
pub const VERSION: u8 = 1;
/// Bytes in a record header.
pub const HEADER_LEN: usize = 8;
/// Most content bytes in one record.
pub const MAX_CONTENT: usize = u16::MAX as usize;
/// The request id of management records (`FCGI_NULL_REQUEST_ID`).
pub const MANAGEMENT_ID: u16 = 0;
/// `FCGI_RESPONDER`: the only role a web server needs.
pub const ROLE_RESPONDER: u16 = 1;
/// `FCGI_KEEP_CONN`: the application keeps the connection open after the
/// request.
pub const FLAG_KEEP_CONN: u8 = 1;

/// Record types (§8).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordType {
    BeginRequest = 1,
    AbortRequest = 2,
    EndRequest = 3,
    Params = 4,
    Stdin = 5,
    Stdout = 6,
    Stderr = 7,
    Data = 8,
    GetValues = 9,
    GetValuesResult = 10,
    UnknownType = 11,
}

impl RecordType {
    /// The type with this number, if it is one of the specification's.
    pub fn from_u8(b: u8) -> Option<Self> {
        use RecordType::*;
        Some(match b {
            1 => BeginRequest,
            2 => AbortRequest,
            3 => EndRequest,
            4 => Params,
            5 => Stdin,
            6 => Stdout,
            7 => Stderr,
            8 => Data,
            9 => GetValues,
            10 => GetValuesResult,
            11 => UnknownType,
            _ => return None,
        })
    }
}

/// The protocol status of an END_REQUEST record (§5.5).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolStatus {
    /// The request ended normally.
    RequestComplete = 0,
    /// The application does not multiplex and got a second request on one
    /// connection.
    CantMpxConn = 1,
    /// The application is out of some resource (e.g. database connections).
    Overloaded = 2,
    /// The application does not play the role asked for.
    UnknownRole = 3,
}

/// [`ProtocolStatus::RequestComplete`] as sent in [`Step::End`] and
/// [`Parsed::EndRequest`].
pub const PROTOCOL_REQUEST_COMPLETE: u8 = ProtocolStatus::RequestComplete as u8;

impl ProtocolStatus {
    /// The status with this number, if it is one of the specification's.
    pub fn from_u8(b: u8) -> Option<Self> {
        use ProtocolStatus::*;
        Some(match b {
            0 => RequestComplete,
            1 => CantMpxConn,
            2 => Overloaded,
            3 => UnknownRole,
            _ => return None,
        })
    }
}

/// Why bytes from an application were refused. After any of these the
/// connection is out of step and must be closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("FastCGI record of version {0}, not 1")]
    BadVersion(u8),
    #[error("FastCGI record of type {0}, which an application does not send here")]
    UnexpectedType(u8),
    #[error("FastCGI END_REQUEST record whose body is not 8 bytes")]
    BadEndRequest,
    #[error("FastCGI UNKNOWN_TYPE record whose body is not 8 bytes")]
    BadUnknownType,
    #[error("FastCGI record for request id {0}, not this request")]
    WrongRequestId(u16),
    #[error("FastCGI name-value pair that runs past its record")]
    BadNameValue,
}

/// Padding that brings `content_len` to a multiple of 8.
fn padding_for(content_len: usize) -> u8 {
    ((8 - content_len % 8) % 8) as u8
}

fn put_header(out: &mut BytesMut, kind: u8, request_id: u16, content_len: u16, padding: u8) {
    let [id1, id0] = request_id.to_be_bytes();
    let [len1, len0] = content_len.to_be_bytes();
    out.put_slice(&[VERSION, kind, id1, id0, len1, len0, padding, 0]);
}

/// Writes the header of one record whose content the caller appends itself
/// (a body sent without an extra copy), and returns the padding the caller
/// must append after the content ([`write_padding`]).
pub fn write_header(out: &mut BytesMut, kind: RecordType, request_id: u16, content_len: u16) -> u8 {
    let padding = padding_for(content_len as usize);
    put_header(out, kind as u8, request_id, content_len, padding);
    padding
}

/// Appends `padding` zero bytes (what [`write_header`] returned).
pub fn write_padding(out: &mut BytesMut, padding: u8) {
    out.put_bytes(0, padding as usize);
}

/// Writes BEGIN_REQUEST (§5.1). With `keep_conn` the application leaves the
/// connection open after END_REQUEST.
pub fn write_begin_request(out: &mut BytesMut, request_id: u16, role: u16, keep_conn: bool) {
    put_header(out, RecordType::BeginRequest as u8, request_id, 8, 0);
    let [r1, r0] = role.to_be_bytes();
    let flags = if keep_conn { FLAG_KEEP_CONN } else { 0 };
    out.put_slice(&[r1, r0, flags, 0, 0, 0, 0, 0]);
}

/// Writes END_REQUEST (§5.5): what an application sends; for the mock
/// applications of unit tests.
#[cfg(test)]
pub fn write_end_request(
    out: &mut BytesMut,
    request_id: u16,
    app_status: u32,
    protocol_status: ProtocolStatus,
) {
    put_header(out, RecordType::EndRequest as u8, request_id, 8, 0);
    out.put_u32(app_status);
    out.put_slice(&[protocol_status as u8, 0, 0, 0]);
}

/// Writes `data` as records of a stream (PARAMS, STDIN, DATA; or STDOUT and
/// STDERR for a mock application): at most 65 535 content bytes each, each
/// padded to a multiple of 8. An empty `data` writes the empty record that
/// ends the stream; a non-empty one does not end it.
pub fn write_stream(out: &mut BytesMut, kind: RecordType, request_id: u16, data: &[u8]) {
    if data.is_empty() {
        write_header(out, kind, request_id, 0);
        return;
    }
    let records = data.len().div_ceil(MAX_CONTENT);
    out.reserve(data.len() + records * (HEADER_LEN + 7));
    for chunk in data.chunks(MAX_CONTENT) {
        let padding = write_header(out, kind, request_id, chunk.len() as u16);
        out.put_slice(chunk);
        write_padding(out, padding);
    }
}

/// Bytes the length of a name or value takes in a name-value pair.
fn nv_len_size(len: usize) -> usize {
    if len < 128 {
        1
    } else {
        4
    }
}

fn put_nv_len(out: &mut BytesMut, len: usize) {
    if len < 128 {
        out.put_u8(len as u8);
    } else {
        assert!(len <= 0x7fff_ffff, "a FastCGI name or value over 2 GiB");
        out.put_u32(len as u32 | 0x8000_0000);
    }
}

/// Writes the two lengths that start a name-value pair (§3.4: one byte
/// below 128, otherwise four with the high bit set); the caller then
/// appends `name_len` bytes of name and `value_len` bytes of value. For
/// values built from several pieces without a copy.
///
/// # Panics
/// If a length is 2^31 or more.
pub fn write_name_value_lengths(out: &mut BytesMut, name_len: usize, value_len: usize) {
    put_nv_len(out, name_len);
    put_nv_len(out, value_len);
}

/// Writes one name-value pair (§3.4).
///
/// # Panics
/// If the name or value is 2 GiB or more.
pub fn write_name_value(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.reserve(8 + name.len() + value.len());
    write_name_value_lengths(out, name.len(), value.len());
    out.put_slice(name);
    out.put_slice(value);
}

/// Writes one GET_VALUES management record (§4.1) asking for `names`
/// (e.g. `FCGI_MAX_CONNS`, `FCGI_MAX_REQS`, `FCGI_MPXS_CONNS`).
///
/// # Panics
/// If the names do not fit one record (65 535 bytes).
pub fn write_get_values(out: &mut BytesMut, names: &[&str]) {
    let len: usize = names
        .iter()
        .map(|n| nv_len_size(n.len()) + 1 + n.len())
        .sum();
    assert!(len <= MAX_CONTENT, "GET_VALUES names over one record");
    let padding = write_header(out, RecordType::GetValues, MANAGEMENT_ID, len as u16);
    for name in names {
        write_name_value(out, name.as_bytes(), b"");
    }
    write_padding(out, padding);
}

/// A record header as sent; not yet checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub version: u8,
    pub kind: u8,
    pub request_id: u16,
    pub content_len: u16,
    pub padding_len: u8,
}

impl RecordHeader {
    /// Reads a header from its 8 bytes (the reserved byte is ignored).
    pub fn parse(b: &[u8; HEADER_LEN]) -> Self {
        RecordHeader {
            version: b[0],
            kind: b[1],
            request_id: u16::from_be_bytes([b[2], b[3]]),
            content_len: u16::from_be_bytes([b[4], b[5]]),
            padding_len: b[6],
        }
    }

    /// The header at the front of `buf`, if 8 bytes are there.
    pub fn from_prefix(buf: &[u8]) -> Option<Self> {
        buf.first_chunk::<HEADER_LEN>().map(Self::parse)
    }

    /// Bytes of the whole record: header, content and padding.
    pub fn record_len(&self) -> usize {
        HEADER_LEN + self.content_len as usize + self.padding_len as usize
    }
}

/// A record an application may send, once its header is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Stdout,
    Stderr,
    EndRequest,
    GetValuesResult,
    UnknownType,
}

/// Checks a header from an application waiting on `request_id`: the
/// version, that the type is one an application sends (management types
/// only when `management`), that stream records and END_REQUEST are for
/// `request_id` (never 0) and management records for id 0, and the fixed
/// body sizes.
fn classify(h: &RecordHeader, request_id: u16, management: bool) -> Result<Kind, RecordError> {
    if h.version != VERSION {
        return Err(RecordError::BadVersion(h.version));
    }
    let kind = match RecordType::from_u8(h.kind) {
        Some(RecordType::Stdout) => Kind::Stdout,
        Some(RecordType::Stderr) => Kind::Stderr,
        Some(RecordType::EndRequest) => Kind::EndRequest,
        Some(RecordType::GetValuesResult) if management => Kind::GetValuesResult,
        Some(RecordType::UnknownType) if management => Kind::UnknownType,
        _ => return Err(RecordError::UnexpectedType(h.kind)),
    };
    let id_ok = match kind {
        Kind::GetValuesResult | Kind::UnknownType => h.request_id == MANAGEMENT_ID,
        _ => h.request_id == request_id && h.request_id != MANAGEMENT_ID,
    };
    if !id_ok {
        return Err(RecordError::WrongRequestId(h.request_id));
    }
    match kind {
        Kind::EndRequest if h.content_len != 8 => Err(RecordError::BadEndRequest),
        Kind::UnknownType if h.content_len != 8 => Err(RecordError::BadUnknownType),
        _ => Ok(kind),
    }
}

/// Reads an END_REQUEST body: (app_status, protocol_status).
fn end_request(body: &[u8; 8]) -> (u32, u8) {
    (
        u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
        body[4],
    )
}

/// One whole record from an application, borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// STDOUT content (empty: the end of the stream).
    Stdout(&'a [u8]),
    /// STDERR content (empty: the end of the stream).
    Stderr(&'a [u8]),
    /// END_REQUEST; `protocol_status` as sent ([`ProtocolStatus::from_u8`]).
    EndRequest {
        app_status: u32,
        protocol_status: u8,
    },
    /// GET_VALUES_RESULT content: name-value pairs ([`name_values`]).
    GetValuesResult(&'a [u8]),
    /// UNKNOWN_TYPE: the application did not know a management record we
    /// sent; carries that record's type.
    Other(u8),
}

/// Parses one complete record from the front of `buf`, from an application
/// answering `request_id` (1 or more; 0 accepts management records only). Returns the record and the bytes it
/// took, padding included; `Ok(None)` when it has not all arrived (a header
/// is checked as soon as its 8 bytes are there). Management records must
/// have request id 0; any other id is [`RecordError::WrongRequestId`].
pub fn parse_record(
    buf: &[u8],
    request_id: u16,
) -> Result<Option<(Parsed<'_>, usize)>, RecordError> {
    let Some(h) = RecordHeader::from_prefix(buf) else {
        return Ok(None);
    };
    let kind = classify(&h, request_id, true)?;
    let total = h.record_len();
    if buf.len() < total {
        return Ok(None);
    }
    let content = &buf[HEADER_LEN..HEADER_LEN + h.content_len as usize];
    let parsed = match kind {
        Kind::Stdout => Parsed::Stdout(content),
        Kind::Stderr => Parsed::Stderr(content),
        Kind::EndRequest => {
            let (app_status, protocol_status) = end_request(content.try_into().expect("8 bytes"));
            Parsed::EndRequest {
                app_status,
                protocol_status,
            }
        }
        Kind::GetValuesResult => Parsed::GetValuesResult(content),
        Kind::UnknownType => Parsed::Other(content[0]),
    };
    Ok(Some((parsed, total)))
}

/// The name-value pairs of a GET_VALUES_RESULT (or PARAMS) content.
pub fn name_values(content: &[u8]) -> NameValues<'_> {
    NameValues { rest: content }
}

/// Iterator over name-value pairs (§3.4); after an error it ends.
#[derive(Clone, Debug)]
pub struct NameValues<'a> {
    rest: &'a [u8],
}

impl<'a> NameValues<'a> {
    fn take_len(&mut self) -> Option<usize> {
        let first = *self.rest.first()?;
        if first < 0x80 {
            self.rest = &self.rest[1..];
            return Some(first as usize);
        }
        let (b, rest) = self.rest.split_first_chunk::<4>()?;
        self.rest = rest;
        Some((u32::from_be_bytes(*b) & 0x7fff_ffff) as usize)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }

    fn pair(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        let name_len = self.take_len()?;
        let value_len = self.take_len()?;
        Some((self.take(name_len)?, self.take(value_len)?))
    }
}

impl<'a> Iterator for NameValues<'a> {
    type Item = Result<(&'a [u8], &'a [u8]), RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match self.pair() {
            Some(p) => Some(Ok(p)),
            None => {
                self.rest = &[];
                Some(Err(RecordError::BadNameValue))
            }
        }
    }
}

/// What [`StreamReader::next`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `buf[range]` is STDOUT content (never empty).
    Stdout(Range<usize>),
    /// `buf[range]` is STDERR content (never empty).
    Stderr(Range<usize>),
    /// The END_REQUEST record was read, padding included: the answer is
    /// complete. Bytes after it are not the application's to send (a
    /// connection with some is not reused).
    End {
        app_status: u32,
        /// As sent; see [`ProtocolStatus::from_u8`].
        protocol_status: u8,
    },
    /// Everything in `buf` is consumed (a partial header is kept in the
    /// reader): drop [`take_consumed`](StreamReader::take_consumed) bytes,
    /// read more, call again.
    NeedMore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Gathering a record header into `scratch`.
    Header,
    /// Inside STDOUT or STDERR content.
    Content {
        stderr: bool,
        left: u16,
        padding: u8,
    },
    /// Gathering the 8-byte END_REQUEST body into `scratch`.
    EndBody { padding: u8 },
    /// Skipping padding; then the next header, or the end.
    Padding { left: u8, end: Option<(u32, u8)> },
    /// END_REQUEST was read.
    Done {
        app_status: u32,
        protocol_status: u8,
    },
}

/// Reads an application's answer to one request (STDOUT, STDERR,
/// END_REQUEST) from bytes as they arrive, without copying content; see the
/// module docs for the states.
///
/// The caller keeps one input buffer and passes all of it to every call of
/// [`next`](Self::next); the reader remembers how far into it it has read
/// (the consumed bytes) and where it is inside a record. Ranges in a
/// [`Step`] index that buffer. The caller may append to the buffer at any
/// time, and drops consumed bytes from its front by calling
/// [`take_consumed`](Self::take_consumed) and removing that many, typically
/// at [`Step::NeedMore`], before reading more:
///
/// ```text
/// loop {
///     match reader.next(&buf)? {
///         Step::Stdout(r) => send(&buf[r]),
///         Step::Stderr(r) => log(&buf[r]),
///         Step::NeedMore => { buf.advance(reader.take_consumed()); read_more(&mut buf) }
///         Step::End { .. } => { buf.advance(reader.take_consumed()); break }
///     }
/// }
/// ```
///
/// After [`Step::End`] it keeps answering `End` and consumes nothing more;
/// a new request needs a new reader. After an error its state is
/// unspecified.
#[derive(Clone, Debug)]
pub struct StreamReader {
    request_id: u16,
    state: State,
    /// Bytes of the caller's buffer read since the last `take_consumed`.
    consumed: usize,
    scratch: [u8; 8],
    have: u8,
}

impl StreamReader {
    /// A reader for the answer to `request_id` (1 or more).
    pub fn new(request_id: u16) -> Self {
        StreamReader {
            request_id,
            state: State::Header,
            consumed: 0,
            scratch: [0; 8],
            have: 0,
        }
    }

    /// How many bytes at the front of the buffer are read and no longer
    /// needed (ranges already returned included); counting starts again
    /// from 0, so the caller must now drop exactly that many.
    pub fn take_consumed(&mut self) -> usize {
        std::mem::take(&mut self.consumed)
    }

    /// Copies bytes from `buf[*pos..]` into `scratch` until it holds 8;
    /// whether it does.
    fn gather(&mut self, buf: &[u8], pos: &mut usize) -> bool {
        let have = self.have as usize;
        let take = (8 - have).min(buf.len() - *pos);
        self.scratch[have..have + take].copy_from_slice(&buf[*pos..*pos + take]);
        *pos += take;
        self.have += take as u8;
        if self.have < 8 {
            return false;
        }
        self.have = 0;
        true
    }

    /// The next piece of the answer in `buf` (the whole buffer, consumed
    /// bytes still at its front; see the type's docs).
    ///
    /// # Panics
    /// If `buf` is shorter than the bytes consumed and not yet taken.
    pub fn next(&mut self, buf: &[u8]) -> Result<Step, RecordError> {
        assert!(
            self.consumed <= buf.len(),
            "StreamReader: buffer shorter than its consumed bytes"
        );
        let mut pos = self.consumed;
        let step = self.step(buf, &mut pos);
        self.consumed = pos;
        step
    }

    fn step(&mut self, buf: &[u8], pos: &mut usize) -> Result<Step, RecordError> {
        loop {
            match self.state {
                State::Done {
                    app_status,
                    protocol_status,
                } => {
                    return Ok(Step::End {
                        app_status,
                        protocol_status,
                    })
                }
                State::Header => {
                    if !self.gather(buf, pos) {
                        return Ok(Step::NeedMore);
                    }
                    let h = RecordHeader::parse(&self.scratch);
                    let padding = h.padding_len;
                    self.state = match classify(&h, self.request_id, false)? {
                        Kind::EndRequest => State::EndBody { padding },
                        kind if h.content_len == 0 => {
                            debug_assert!(matches!(kind, Kind::Stdout | Kind::Stderr));
                            State::Padding {
                                left: padding,
                                end: None,
                            }
                        }
                        kind => State::Content {
                            stderr: kind == Kind::Stderr,
                            left: h.content_len,
                            padding,
                        },
                    };
                }
                State::Content {
                    stderr,
                    left,
                    padding,
                } => {
                    let take = (left as usize).min(buf.len() - *pos);
                    if take == 0 {
                        return Ok(Step::NeedMore);
                    }
                    let left = left - take as u16;
                    self.state = if left == 0 {
                        State::Padding {
                            left: padding,
                            end: None,
                        }
                    } else {
                        State::Content {
                            stderr,
                            left,
                            padding,
                        }
                    };
                    let range = *pos..*pos + take;
                    *pos += take;
                    return Ok(if stderr {
                        Step::Stderr(range)
                    } else {
                        Step::Stdout(range)
                    });
                }
                State::EndBody { padding } => {
                    if !self.gather(buf, pos) {
                        return Ok(Step::NeedMore);
                    }
                    self.state = State::Padding {
                        left: padding,
                        end: Some(end_request(&self.scratch)),
                    };
                }
                State::Padding { left, end } => {
                    let take = (left as usize).min(buf.len() - *pos);
                    *pos += take;
                    let left = left - take as u8;
                    if left > 0 {
                        self.state = State::Padding { left, end };
                        return Ok(Step::NeedMore);
                    }
                    self.state = match end {
                        Some((app_status, protocol_status)) => State::Done {
                            app_status,
                            protocol_status,
                        },
                        None => State::Header,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
