//! One HTTP/1 exchange on the wire: the request body as it arrives
//! (Content-Length or chunked, with `100 Continue` sent on first read), and
//! the response as bytes in the connection's write buffer (status line,
//! framing, Connection, chunked or close-delimited bodies). The neutral
//! [`Exchange`](crate::Exchange) decides what is sent; this decides how.

use std::io;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use ringside_runtime::link::{Link, Meter};
use ringside_runtime::net::TcpStream;

use super::chunked::{write_chunk_header, ChunkedDecoder, LAST_CHUNK};
use super::encode::{put_u64, write_error, write_header, write_server_headers, write_status_line};
use crate::error::{Error, Kind};
use crate::head::{BodyKind, RequestHead, Version};
use crate::message::{Framing, HeaderLine};

/// Above this many buffered response bytes, a response is flushed.
pub(crate) const FLUSH_AT: usize = 64 * 1024;
/// An unread request body up to this size is read and dropped to keep the
/// connection; a larger one closes it instead.
pub(crate) const DISCARD_MAX: u64 = 64 * 1024;

pub(crate) enum BodyState {
    Done,
    Length(u64),
    Chunked(Box<ChunkedDecoder>),
}

pub(crate) struct Wire<'a> {
    pub link: &'a mut Link,
    pub rbuf: &'a mut BytesMut,
    pub wbuf: &'a mut BytesMut,
    pub body: BodyState,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// Whether the client meant to keep it open (its head said so).
    pub client_keep_alive: bool,
    /// The request came as HTTP/1.0.
    http10: bool,
    /// The client waits for `100 Continue`.
    expect_continue: bool,
    sent_continue: bool,
    /// A streamed body goes out chunked (else close-delimited, HTTP/1.0).
    chunked: bool,
    /// The pace of the request body (see `ringside_runtime::link::Meter`).
    receiving: Meter,
    /// The chunked request body's trailer section, once it ended (boxed:
    /// this struct is part of every connection task's size).
    trailers: Option<Box<crate::h2::client::FieldList>>,
}

impl<'a> Wire<'a> {
    /// Whether a body without a length can go out chunked.
    pub fn chunks(&self) -> bool {
        !self.http10
    }

    pub fn new(
        link: &'a mut Link,
        head: &'a RequestHead,
        rbuf: &'a mut BytesMut,
        wbuf: &'a mut BytesMut,
    ) -> Self {
        let body = match head.body {
            BodyKind::Empty | BodyKind::Length(0) => BodyState::Done,
            BodyKind::Length(n) => BodyState::Length(n),
            BodyKind::Stream => {
                let mut dec = ChunkedDecoder::new(link.cfg.limits.max_body);
                dec.keep_trailers();
                BodyState::Chunked(Box::new(dec))
            }
        };
        let keep_alive = head.keep_alive && !link.draining();
        Wire {
            link,
            rbuf,
            wbuf,
            body,
            keep_alive,
            client_keep_alive: head.keep_alive,
            http10: head.version == Version::Http10,
            expect_continue: head.expect_continue,
            sent_continue: false,
            chunked: false,
            receiving: Meter::default(),
            trailers: None,
        }
    }

    /// The request's chunked trailers (names in lower case), once its body
    /// ended with some.
    pub fn take_trailers(&mut self) -> Option<crate::h2::client::FieldList> {
        self.trailers.take().map(|b| *b)
    }

    pub fn body_done(&self) -> bool {
        matches!(self.body, BodyState::Done)
    }

    pub fn expects_continue(&self) -> bool {
        self.expect_continue && !self.sent_continue
    }

    /// The next piece of the request body, `None` at its end. Sends
    /// `100 Continue` first when the client asked for it and nothing was
    /// answered yet.
    pub async fn read_body(&mut self, responded: bool) -> Result<Option<Bytes>, Error> {
        loop {
            match &mut self.body {
                BodyState::Done => return Ok(None),
                BodyState::Length(rem) => {
                    if !self.rbuf.is_empty() {
                        let n = (*rem).min(self.rbuf.len() as u64) as usize;
                        *rem -= n as u64;
                        if *rem == 0 {
                            self.body = BodyState::Done;
                        }
                        return Ok(Some(self.rbuf.split_to(n).freeze()));
                    }
                }
                BodyState::Chunked(dec) => {
                    if !self.rbuf.is_empty() {
                        let d = match dec.decode(self.rbuf) {
                            Ok(d) => d,
                            Err(e) => return Err(self.fail_body(e.into())),
                        };
                        if d.done {
                            let mut list = crate::h2::client::FieldList::default();
                            for (n, v) in dec.trailers() {
                                list.push(&n.to_ascii_lowercase(), v);
                            }
                            self.trailers = (!list.is_empty()).then(|| Box::new(list));
                            self.body = BodyState::Done;
                        }
                        if d.consumed > 0 {
                            let part = self.rbuf.split_to(d.consumed).freeze();
                            if !d.data.is_empty() {
                                return Ok(Some(part.slice(d.data)));
                            }
                            continue;
                        }
                        if d.done {
                            return Ok(None);
                        }
                    }
                }
            }
            self.fill_body(responded).await?;
        }
    }

    /// A body that cannot be read on leaves the connection unusable.
    fn fail_body(&mut self, e: Error) -> Error {
        self.keep_alive = false;
        self.body = BodyState::Done;
        e
    }

    async fn fill_body(&mut self, responded: bool) -> Result<(), Error> {
        if self.expect_continue && !self.sent_continue && !responded {
            self.sent_continue = true;
            self.wbuf.put_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            self.flush().await?;
        }
        let t = &self.link.cfg.timeouts;
        let start = Instant::now();
        let deadline = start + self.receiving.allowance(t.body_read, t.min_rate, 0);
        let mut waited = std::time::Duration::ZERO;
        loop {
            match self.link.stream.try_read(self.rbuf) {
                Ok(0) if self.link.expired() => {
                    let e = Error::new(Kind::ClientTimeout, "request body too slow");
                    return Err(self.fail_body(e));
                }
                Ok(0) => {
                    let e = Error::new(Kind::BadRequest, "request body ended early");
                    return Err(self.fail_body(e));
                }
                Ok(n) => {
                    self.receiving.record(waited, n as u64);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = self.link.readable_until(deadline).await {
                        return Err(self.fail_body(Error::client_gone("reading the body", e)));
                    }
                    waited = start.elapsed();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail_body(Error::client_gone("reading the body", e))),
            }
        }
    }

    /// Whether the connection can stay open after a response written now:
    /// an unread body must be small enough to drop, and a client that waits
    /// for `100 Continue` must not be left guessing.
    fn decide_keep_alive(&mut self) {
        let unread_ok = match &self.body {
            BodyState::Done => true,
            BodyState::Length(n) => {
                *n <= DISCARD_MAX && (!self.expect_continue || self.sent_continue)
            }
            BodyState::Chunked(_) => false,
        };
        if !unread_ok || self.link.draining() {
            self.keep_alive = false;
        }
    }

    /// Writes a response head. A [`Framing::Stream`] body is chunked for
    /// HTTP/1.1 clients and delimited by the close for HTTP/1.0 ones.
    pub fn write_head<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        added: Option<&HeaderLine>,
        framing: Framing,
        date: Option<&[u8]>,
    ) {
        self.decide_keep_alive();
        let http10 = self.http10;
        if framing == Framing::Stream && http10 {
            self.keep_alive = false;
        }
        self.chunked = framing == Framing::Stream && !http10;
        let w = &mut *self.wbuf;
        write_status_line(w, Version::Http11, status);
        match date {
            None => write_server_headers(w),
            Some(d) => {
                crate::fields::with_server_line(|l| w.put_slice(l));
                w.put_slice(b"Date: ");
                w.put_slice(d);
                w.put_slice(b"\r\n");
            }
        }
        for (name, value) in headers {
            write_header(w, name, value);
        }
        if let Some(line) = added {
            write_header(w, &line.name, &line.value);
        }
        match framing {
            Framing::Length(n) => {
                w.put_slice(b"Content-Length: ");
                put_u64(w, n);
                w.put_slice(b"\r\n");
            }
            Framing::Stream if self.chunked => w.put_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::Stream | Framing::None => {}
        }
        if !self.keep_alive {
            w.put_slice(b"Connection: close\r\n");
        } else if http10 {
            w.put_slice(b"Connection: keep-alive\r\n");
        }
        w.put_slice(b"\r\n");
    }

    /// An interim (1xx) response, sent now; HTTP/1.0 clients get none
    /// (RFC 9110 §15.2). A relayed `100 Continue` counts as the one the
    /// client waited for.
    pub async fn write_interim<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<(), Error> {
        if self.http10 {
            return Ok(());
        }
        if status == 100 {
            if self.sent_continue {
                return Ok(());
            }
            self.sent_continue = true;
        }
        let w = &mut *self.wbuf;
        write_status_line(w, Version::Http11, status);
        for (name, value) in headers {
            write_header(w, name, value);
        }
        w.put_slice(b"\r\n");
        self.flush().await
    }

    /// Bytes of a body of known length.
    pub async fn write_sized(&mut self, data: &[u8]) -> Result<(), Error> {
        self.wbuf.put_slice(data);
        self.flush_if_full().await
    }

    /// Bytes of a streamed body: a chunk, or raw before a close.
    pub async fn write_stream(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.chunked {
            let mut hdr = [0u8; 18];
            self.wbuf
                .put_slice(write_chunk_header(data.len(), &mut hdr));
            self.wbuf.put_slice(data);
            self.wbuf.put_slice(b"\r\n");
        } else {
            self.wbuf.put_slice(data);
        }
        self.flush_if_full().await
    }

    pub fn finish_stream(&mut self) {
        if self.chunked {
            self.wbuf.put_slice(LAST_CHUNK);
        }
    }

    /// Ends a chunked body with a trailer section; a body framed
    /// otherwise has nowhere to carry one, and its trailers are dropped.
    pub fn finish_with_trailers<'h>(
        &mut self,
        trailers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) {
        if !self.chunked {
            return;
        }
        self.wbuf.put_slice(b"0\r\n");
        for (name, value) in trailers {
            let clean = |b: &[u8]| !b.iter().any(|&c| matches!(c, 0 | b'\r' | b'\n'));
            if !name.is_empty() && clean(name) && clean(value) && name[0] != b':' {
                self.wbuf.put_slice(name);
                self.wbuf.put_slice(b": ");
                self.wbuf.put_slice(value);
                self.wbuf.put_slice(b"\r\n");
            }
        }
        self.wbuf.put_slice(b"\r\n");
    }

    async fn flush_if_full(&mut self) -> Result<(), Error> {
        if self.wbuf.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }

    pub async fn write_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        let r = match self.link.flush_before_file(self.wbuf).await {
            Ok(()) => self.link.send_file(file, offset, len).await,
            Err(e) => Err(e),
        };
        r.map_err(|e| Error::client_gone("sending a file", e))
    }

    /// Whether a body can go from `from` to this client without a copy.
    pub fn can_splice_from(&self, from: &TcpStream) -> bool {
        ringside_runtime::splice::supported_between(from, &self.link.stream)
    }

    /// Moves `len` bytes from `from` to the client. The error is the raw
    /// I/O error: whether it was the source's or the client's fault is
    /// the caller's to tell (see `Exchange::write_from_socket`).
    pub async fn splice_from(
        &mut self,
        from: &TcpStream,
        len: u64,
        on_progress: &dyn Fn(),
    ) -> io::Result<()> {
        self.link.flush(self.wbuf).await?;
        self.link.splice_from(from, len, on_progress).await
    }

    /// Answers `101 Switching Protocols` and gives the socket over.
    pub async fn upgrade<'h>(
        &mut self,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<crate::upgraded::Upgraded<'_>, Error> {
        let w = &mut *self.wbuf;
        write_status_line(w, Version::Http11, 101);
        write_server_headers(w);
        for (name, value) in headers {
            write_header(w, name, value);
        }
        w.put_slice(b"\r\n");
        self.keep_alive = false;
        self.flush().await?;
        // The connection is no longer HTTP: no request deadline applies.
        self.link.disarm();
        Ok(crate::upgraded::Upgraded::h1(&self.link.stream, self.rbuf))
    }

    /// The response to a request this exchange cannot go on with (a
    /// client-side error): the connection closes after it. Returns the
    /// body's length.
    pub fn write_refusal(&mut self, status: u16) -> u64 {
        self.keep_alive = false;
        write_error(self.wbuf, status)
    }

    pub async fn flush(&mut self) -> Result<(), Error> {
        self.link
            .flush(self.wbuf)
            .await
            .map_err(|e| Error::client_gone("sending the response", e))
    }
}
