//! One HTTP/3 request stream as the neutral [`Exchange`](crate::Exchange)
//! writes to it: the request body taken from the stream's DATA frames, the
//! response QPACK-encoded and framed into QUIC's send buffer. QUIC owns
//! flow control and retransmission, so a write here is a copy into the
//! stream (quinn-proto keeps it until acknowledged); what the stream does
//! not take now waits for its credit.

use std::io;
use std::rc::Rc;

use bytes::{Buf, Bytes, BytesMut};
use ringside_quic::{StreamError, StreamId};
use ringside_runtime::net::TcpStream;

use super::conn::H3Conn;
use super::frame::{self, FrameKind, FrameParser, Item, StreamRole};
use super::qpack::Encoder;
use super::{varint, ErrorCode};
use crate::error::{Error, Kind};
use crate::h2::client::FieldList;
use crate::h2::wire::{lowercase, valid_value};
use crate::message::{Framing, HeaderLine};

thread_local! {
    /// A response head's field section as it is encoded, reused.
    static SECTION: std::cell::RefCell<BytesMut> = std::cell::RefCell::new(BytesMut::with_capacity(512));
}

/// Response fields never kept in the encoded-field cache.
const CREDENTIALS: [&[u8]; 3] = [b"set-cookie", b"authorization", b"proxy-authorization"];

/// The most read from an upstream for one DATA frame (a file goes in
/// larger pieces: `file_pieces::PIECE`).
const PIECE: usize = 64 * 1024;

/// Reads `n` bytes of `file` at `offset` onto the end of `out` (which has
/// the room), straight into its spare capacity: zeroing it first cost 3%
/// of a long download's CPU.
fn read_exact_at(file: &std::fs::File, out: &mut Vec<u8>, n: usize, offset: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut done = 0;
    while done < n {
        let spare = out.spare_capacity_mut();
        // SAFETY: pread writes at most n - done bytes into the spare room,
        // which reserve made at least n long.
        let r = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                n - done,
                (offset + done as u64) as libc::off_t,
            )
        };
        match r {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            r if r < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            r => {
                // SAFETY: the kernel initialised r more bytes.
                unsafe { out.set_len(out.len() + r as usize) };
                done += r as usize;
            }
        }
    }
    Ok(())
}

/// What is left to read of a request: its frames not yet taken.
/// Request buffers kept per core for the next streams (`Incoming`).
const SPARE_PENDING: usize = 64;
/// A buffer grown past this (a body read in large pieces) is not kept.
const KEEP_PENDING: usize = 16 * 1024;

thread_local! {
    static PENDING: std::cell::RefCell<Vec<BytesMut>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(crate) struct Incoming {
    pub pending: BytesMut,
    pub parser: FrameParser,
    /// The stream's end came (the bytes may still be in `pending`).
    pub fin: bool,
    /// The body was read to its end.
    pub done: bool,
    pub declared: Option<u64>,
    pub received: u64,
    pub trailers: Option<FieldList>,
}

impl Incoming {
    /// A stream's reading state, its buffer one a finished stream left
    /// (growing a new one for each request's HEADERS, and freeing it, was
    /// about 250 instructions a request, callgrind).
    pub(crate) fn new(parser: FrameParser) -> Incoming {
        let pending = PENDING
            .with(|p| p.borrow_mut().pop())
            .unwrap_or_else(|| BytesMut::with_capacity(1024));
        Incoming {
            pending,
            parser,
            fin: false,
            done: false,
            declared: None,
            received: 0,
            trailers: None,
        }
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        // What is left of a buffer a body was cut from may be small: the
        // pieces handed on share the rest. Such a one is not kept.
        if pending.capacity() < 512 || pending.capacity() > KEEP_PENDING {
            return;
        }
        pending.clear();
        let _ = PENDING.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < SPARE_PENDING {
                p.push(pending);
            }
        });
    }
}

pub(crate) struct Wire<'a> {
    pub(crate) conn: &'a Rc<H3Conn>,
    pub(crate) id: StreamId,
    is_head: bool,
    responded: bool,
    /// Our side ended: finished, reset, or handed to a task to finish.
    ended: bool,
    left: Option<u64>,
    /// Frames not yet given to the stream.
    out: BytesMut,
    rx: Incoming,
    expect_continue: bool,
    sent_continue: bool,
    /// The request came in 0-RTT and is served before the handshake ended.
    pub(crate) early_data: bool,
    /// The body comes as shared bytes after the head (`body_to_come`).
    shared_body: bool,
}

fn gone(e: StreamError) -> Error {
    Error::client_gone(
        "sending the response",
        io::Error::new(io::ErrorKind::BrokenPipe, e),
    )
}

impl<'a> Wire<'a> {
    /// Waits for the connection's handshake to end; from then on the
    /// request is not early. Whether the connection is still there.
    pub(crate) async fn handshake_done(&mut self) -> bool {
        self.conn.quic.connected().await;
        self.early_data = false;
        !self.conn.quic.is_closed()
    }

    pub(crate) fn new(
        conn: &'a Rc<H3Conn>,
        id: StreamId,
        rx: Incoming,
        is_head: bool,
        expect: bool,
    ) -> Self {
        Wire {
            conn,
            id,
            is_head,
            responded: false,
            ended: false,
            left: None,
            out: BytesMut::new(),
            rx,
            expect_continue: expect,
            sent_continue: false,
            early_data: false,
            shared_body: false,
        }
    }

    pub fn expects_continue(&self) -> bool {
        self.expect_continue && !self.sent_continue
    }

    /// The next piece of the request body, `None` at its end.
    pub async fn read_body(&mut self, responded: bool) -> Result<Option<Bytes>, Error> {
        if self.expects_continue() && !responded {
            self.sent_continue = true;
            self.encode_head(100, std::iter::empty(), &[], 0);
            self.push_now(false);
        }
        let t = self.conn.cfg.timeouts.body_read;
        match ringside_runtime::task::timeout(t, self.next_piece()).await {
            Err(_) => Err(Error::new(Kind::ClientTimeout, "request body too slow")),
            Ok(r) => r,
        }
    }

    async fn next_piece(&mut self) -> Result<Option<Bytes>, Error> {
        let quic = &self.conn.quic;
        let rx = &mut self.rx;
        loop {
            if rx.done {
                return Ok(None);
            }
            let step = match rx.parser.next(&rx.pending) {
                Ok(s) => s,
                Err(code) => return Err(self.conn.fail(code, "a request stream's frames")),
            };
            match step.item {
                Item::NeedMore if rx.fin => {
                    rx.done = true;
                    if rx.parser.finish(&rx.pending).is_err() {
                        return Err(self
                            .conn
                            .fail(ErrorCode::FrameError, "a frame cut by the stream's end"));
                    }
                    if rx.declared.is_some_and(|d| d != rx.received) {
                        quic.reset(self.id, ErrorCode::MessageError.code());
                        return Err(Error::new(
                            Kind::BadRequest,
                            "content-length against the DATA sent",
                        ));
                    }
                    return Ok(None);
                }
                Item::NeedMore => match quic.read_into(self.id, &mut rx.pending, PIECE).await {
                    Ok(fin) => rx.fin = fin,
                    Err(e) => {
                        return Err(Error::client_gone(
                            "reading the body",
                            io::Error::new(io::ErrorKind::ConnectionReset, e),
                        ))
                    }
                },
                Item::DataHeader { .. } | Item::Skipped => rx.pending.advance(step.consumed),
                Item::Data(r) if rx.trailers.is_some() => {
                    let _ = r;
                    return Err(self
                        .conn
                        .fail(ErrorCode::FrameUnexpected, "DATA after trailers"));
                }
                Item::Data(r) => {
                    let piece = rx.pending.split_to(step.consumed).freeze().slice(r);
                    rx.received += piece.len() as u64;
                    if rx.declared.is_some_and(|d| rx.received > d) {
                        quic.reset(self.id, ErrorCode::MessageError.code());
                        return Err(Error::new(Kind::BadRequest, "DATA past content-length"));
                    }
                    if rx.received > self.conn.cfg.limits.max_body {
                        return Err(Error::new(Kind::BodyTooLarge, "request body over max_body"));
                    }
                    return Ok(Some(piece));
                }
                Item::Frame {
                    kind: FrameKind::Headers,
                    payload,
                } if rx.trailers.is_none() => {
                    let mut list = FieldList::default();
                    let mut decoder = super::qpack::Decoder::new(self.conn.max_section());
                    let r = decoder.decode(&rx.pending[payload], &mut |n: &[u8], v: &[u8], _| {
                        list.push(n, v)
                    });
                    rx.pending.advance(step.consumed);
                    if let Err(e) = r {
                        return Err(self.conn.fail(e.code(), "a trailer section"));
                    }
                    rx.trailers = Some(list);
                }
                Item::Frame { kind, .. } => {
                    if !kind.allowed_on(StreamRole::Request) || kind == FrameKind::Headers {
                        return Err(self.conn.fail(
                            ErrorCode::FrameUnexpected,
                            "a frame a request stream may not carry",
                        ));
                    }
                    rx.pending.advance(step.consumed);
                }
            }
        }
    }

    /// The request's trailers, once its body ended with them.
    pub fn take_trailers(&mut self) -> Option<FieldList> {
        self.rx.trailers.take()
    }

    /// QPACK-encodes a head as a HEADERS frame into the output, with
    /// `room` more bytes to follow it.
    fn encode_head<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        extra: &[(&[u8], &[u8])],
        room: usize,
    ) {
        let enc = Encoder::new();
        // The section is encoded in the core's scratch, then framed: its
        // length goes before it.
        let mut section = SECTION.with(|s| std::mem::take(&mut *s.borrow_mut()));
        section.clear();
        enc.begin_section(&mut section);
        enc.status(status, &mut section);
        let mut lower = [0u8; 64];
        let mut put = |name: &[u8], value: &[u8]| {
            let mut line = |dst: &mut BytesMut| {
                let Some(name) = lowercase(name, &mut lower) else {
                    return;
                };
                if !crate::hop::is_hop_by_hop(name) && valid_value(value) {
                    enc.field(name, value, false, dst);
                }
            };
            // A credential is never kept encoded (see `field_cache`).
            super::qpack::field_cache::put(name, value, &mut section, |dst| {
                line(dst);
                !CREDENTIALS.iter().any(|c| name.eq_ignore_ascii_case(c))
            });
        };
        for (name, value) in headers {
            put(name, value);
        }
        for (name, value) in extra {
            put(name, value);
        }
        let ty = FrameKind::Headers.ty();
        let need = varint::len(ty) + varint::len(section.len() as u64) + section.len() + room;
        if self.out.capacity() == 0 {
            // Made to measure, a buffer frozen whole becomes `Bytes`
            // without the shared header a spare tail needs; a small one
            // is cut from the connection's room.
            self.out = self.conn.carve(need);
        } else {
            self.out.reserve(need);
        }
        frame::put_frame(&mut self.out, FrameKind::Headers, &section);
        SECTION.with(|s| *s.borrow_mut() = section);
    }

    pub fn write_head<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        added: Option<&HeaderLine>,
        framing: Framing,
        given: Option<&[u8]>,
    ) {
        if self.responded {
            return;
        }
        self.responded = true;
        // Room for the head and a small body at once: the output is built
        // up frame by frame, and growing it twice showed in the profile
        // (6% of a small response's instructions, callgrind).
        let room = match framing {
            Framing::Length(n) if self.shared_body && !self.is_head && n > 0 => {
                varint::len(frame::DATA) + varint::len(n)
            }
            Framing::Length(n) if n <= 16 * 1024 && !self.is_head && n > 0 => {
                varint::len(frame::DATA) + varint::len(n) + n as usize
            }
            _ => 0,
        };
        let ends = match framing {
            Framing::Length(n) => {
                self.left = Some(n);
                n == 0 || self.is_head
            }
            Framing::Stream => self.is_head,
            Framing::None => true,
        };
        crate::fields::with_framed_head_fields(added, given, framing, |extra| {
            self.encode_head(status, headers, extra, room)
        });
        if ends {
            self.push_now(true);
        }
    }

    pub async fn write_interim<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<(), Error> {
        if status == 100 {
            if self.sent_continue {
                return Ok(());
            }
            self.sent_continue = true;
        }
        self.encode_head(status, headers, &[], 0);
        self.flush(false).await
    }

    /// Gives the stream what it takes of the output now; with `end`, the
    /// rest (if any) goes in a task of its own, which ends the stream.
    fn push_now(&mut self, end: bool) {
        self.push_now_with(end, Bytes::new());
    }

    /// [`Wire::push_now`] with `body` after the output, handed over as it
    /// is (a cached file's bytes, never copied).
    fn push_now_with(&mut self, end: bool, body: Bytes) {
        if self.ended {
            self.out.clear();
            return;
        }
        let quic = &self.conn.quic;
        // Handed over as it is: the stream keeps the bytes, not a copy. The
        // buffer whole, not split off: a split shares it, an allocation a
        // response.
        let mut parts = [std::mem::take(&mut self.out).freeze(), body];
        'parts: for part in parts.iter_mut() {
            while !part.is_empty() {
                match quic.write_bytes_now(self.id, part) {
                    Ok(0) => break 'parts,
                    Ok(_) => {}
                    Err(_) => {
                        self.ended = true;
                        return;
                    }
                }
            }
        }
        if !end {
            // What the stream did not take goes first next time.
            for part in &parts {
                self.out.extend_from_slice(part);
            }
            return;
        }
        self.ended = true;
        if parts.iter().all(Bytes::is_empty) {
            let _ = quic.finish(self.id);
            return;
        }
        let (quic, id) = (quic.clone(), self.id);
        // The send timeout holds between writes here as in `flush`: a
        // client that never opens its window (a whole cached body waits
        // here) has the stream reset, not the body kept while the
        // connection lives.
        let t = self.conn.cfg.timeouts.send;
        ringside_runtime::task::spawn(async move {
            for mut rest in parts {
                while !rest.is_empty() {
                    let w = std::future::poll_fn(|cx| quic.poll_write_bytes(cx, id, &mut rest));
                    match ringside_runtime::task::timeout(t, w).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(_)) => return,
                        Err(_) => {
                            quic.reset(id, ErrorCode::InternalError.code());
                            return;
                        }
                    }
                }
            }
            let _ = quic.finish(id);
        });
    }

    /// Writes the output whole, waiting for credit; `end` ends the stream.
    async fn flush(&mut self, end: bool) -> Result<(), Error> {
        let out = self.out.split().freeze();
        self.send(out, end).await
    }

    /// Gives the stream `out` whole, waiting for its credit (within the
    /// send timeout), and ends the stream after it where `end`.
    async fn send(&mut self, out: Bytes, end: bool) -> Result<(), Error> {
        if self.ended {
            return Err(gone(StreamError::Closed));
        }
        let t = self.conn.cfg.timeouts.send;
        let w = self.conn.quic.write_all_bytes(self.id, out);
        let w = ringside_runtime::task::timeout(t, w).await;
        match w {
            Err(_) => {
                self.reset();
                return Err(Error::client_gone(
                    "sending the response",
                    io::ErrorKind::TimedOut.into(),
                ));
            }
            Ok(Err(e)) => {
                self.ended = true;
                return Err(gone(e));
            }
            Ok(Ok(())) => {}
        }
        if end {
            self.ended = true;
            self.conn.quic.finish(self.id).map_err(gone)?;
        }
        Ok(())
    }

    /// Counts body bytes against a sized response: whether they end it.
    fn last(&mut self, n: u64) -> bool {
        match self.left.as_mut() {
            Some(left) => {
                *left = left.saturating_sub(n);
                *left == 0
            }
            None => false,
        }
    }

    fn put_data(&mut self, data: &[u8]) {
        frame::put_header(&mut self.out, frame::DATA, data.len() as u64);
        self.out.extend_from_slice(data);
    }

    /// The next head's body is to come as shared bytes
    /// ([`Wire::buffer_shared`]): no room is made for it beside the head.
    pub fn body_to_come(&mut self) {
        self.shared_body = true;
    }

    /// The body of a response whole, as bytes the stream keeps as they
    /// are: a copy of an 11 KiB file into the response's buffer was most
    /// of the 11% of the server's time in memcpy (perf, 11 KiB over
    /// HTTP/3, -c 100 --streams 10).
    pub fn buffer_shared(&mut self, body: Bytes) {
        if self.is_head || body.is_empty() {
            return;
        }
        frame::put_header(&mut self.out, frame::DATA, body.len() as u64);
        let end = self.last(body.len() as u64);
        self.push_now_with(end, body);
    }

    /// The body of a response buffered whole.
    pub fn buffer_body(&mut self, body: &[u8]) {
        if self.is_head || body.is_empty() {
            return;
        }
        self.put_data(body);
        let end = self.last(body.len() as u64);
        self.push_now(end);
    }

    pub async fn write_sized(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.is_head {
            return Ok(());
        }
        let end = self.last(data.len() as u64);
        self.put_data(data);
        self.flush(end).await
    }

    pub async fn write_stream(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.is_head || data.is_empty() {
            return Ok(());
        }
        self.put_data(data);
        self.flush(false).await
    }

    pub fn finish_stream(&mut self) {
        if self.is_head {
            return;
        }
        self.push_now(true);
    }

    /// Waits until the client stops the stream or the connection ends.
    pub async fn closed(&self) {
        self.conn.quic.stopped(self.id).await
    }

    /// Ends the stream with a trailer section (a HEADERS frame after the
    /// DATA), as gRPC's status travels.
    pub fn finish_with_trailers<'h>(
        &mut self,
        trailers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) {
        if self.is_head {
            return;
        }
        let enc = Encoder::new();
        let mut section = BytesMut::with_capacity(128);
        enc.begin_section(&mut section);
        let mut lower = [0u8; 64];
        for (name, value) in trailers {
            let Some(name) = lowercase(name, &mut lower) else {
                continue;
            };
            if !crate::hop::is_hop_by_hop(name) && valid_value(value) && name[0] != b':' {
                enc.field(name, value, false, &mut section);
            }
        }
        frame::put_frame(&mut self.out, FrameKind::Headers, &section);
        self.push_now(true);
    }

    /// A file's bytes, a piece a DATA frame, read from the page cache
    /// straight into the output behind the frame's header.
    pub async fn write_file(
        &mut self,
        file: &std::fs::File,
        mut offset: u64,
        mut len: u64,
    ) -> Result<(), Error> {
        let mut header = BytesMut::with_capacity(16);
        while len > 0 {
            let n = (len as usize).min(super::file_pieces::PIECE);
            header.clear();
            frame::put_header(&mut header, frame::DATA, n as u64);
            // The first piece carries what waits in `out` (the head) before
            // its frame: one write to the stream, as before the pieces.
            let lead = self.out.len() + header.len();
            // The file's bytes go where the kernel copies them fastest.
            let mut piece = super::file_pieces::take(64 + lead + n);
            let pad = ringside_runtime::fs::read_pad(piece.as_ptr().wrapping_add(lead), offset);
            piece.extend_from_slice(&[0; 64][..pad]);
            piece.extend_from_slice(&self.out);
            self.out.clear();
            piece.extend_from_slice(&header);
            if let Err(e) = read_exact_at(file, &mut piece, n, offset) {
                return Err(match e.kind() {
                    io::ErrorKind::UnexpectedEof => Error::internal("file shorter than its length"),
                    _ => Error::internal("reading a file").because(e),
                });
            }
            offset += n as u64;
            len -= n as u64;
            let end = self.last(n as u64);
            let mut piece = super::file_pieces::freeze(piece);
            piece.advance(pad);
            self.send(piece, end).await?;
        }
        Ok(())
    }

    /// Moves `len` bytes from `from` into the stream, a piece at a time.
    pub async fn splice_from(
        &mut self,
        from: &TcpStream,
        mut len: u64,
        on_progress: &dyn Fn(),
    ) -> io::Result<()> {
        let mut buf = BytesMut::new();
        while len > 0 {
            buf.clear();
            buf.reserve((len as usize).min(PIECE));
            let n = from.read(&mut buf).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.truncate((len as usize).min(buf.len()));
            len -= buf.len() as u64;
            on_progress();
            let end = self.last(buf.len() as u64);
            self.put_data(&buf);
            self.flush(end)
                .await
                .map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e.to_string()))?;
        }
        Ok(())
    }

    /// A refused request: its status and a short page, then the stream
    /// ends. Returns the body's length.
    pub fn write_refusal(&mut self, status: u16) -> u64 {
        let (page, ct) = crate::status::refusal_page(status);
        let len = page.len() as u64;
        self.write_head(
            status,
            std::iter::once(ct),
            None,
            Framing::Length(len),
            None,
        );
        self.buffer_body(&page);
        len
    }

    /// Ends a stream whose response cannot be finished, so that it never
    /// passes for complete.
    pub fn reset(&mut self) {
        if !self.ended {
            self.ended = true;
            self.conn
                .quic
                .reset(self.id, ErrorCode::InternalError.code());
        }
    }
}

impl Drop for Wire<'_> {
    /// A response left unfinished is reset; a request body not read to its
    /// end is refused the rest with H3_NO_ERROR (RFC 9114 §4.1.1: the
    /// response stands complete without it).
    fn drop(&mut self) {
        if !self.ended {
            self.reset();
        }
        if !self.rx.done && !self.rx.fin {
            self.conn.quic.stop(self.id, ErrorCode::NoError.code());
        }
    }
}
