//! One request and its response, as a handler sees them.
//!
//! The head is parsed already; the body is read on demand as a stream
//! ([`Exchange::read_body`]); the response is either buffered whole
//! ([`Exchange::send`]), sent from a file without a copy
//! ([`Exchange::send_file`]) or streamed chunked ([`Exchange::start_chunked`]).
//! Framing headers, Date, Server and Connection are the exchange's to write,
//! never the handler's, so a handler cannot frame a response wrongly.

use std::io;
use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};

use super::chunked::{write_chunk_header, LAST_CHUNK};
use super::link::Link;
use super::meter::Meter;
use super::response::{bodyless, put_u64, write_header, write_server_headers, write_status_line};
use super::{BodyKind, ChunkedDecoder, Method, ParsedHead, Version};

/// Above this many buffered response bytes, a streaming response is flushed.
const FLUSH_AT: usize = 64 * 1024;
/// An unread request body up to this size is read and dropped to keep the
/// connection; a larger one closes it instead.
pub(crate) const DISCARD_MAX: u64 = 64 * 1024;

pub(crate) enum BodyState {
    Done,
    Length(u64),
    Chunked(Box<ChunkedDecoder>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    None,
    Done,
    Chunked,
    CloseDelimited,
    /// A Content-Length body with this many bytes still to write.
    Sized(u64),
    /// 101 sent: the socket belongs to a tunnel now.
    Upgraded,
}

/// How the body of a [`Exchange::start_from`] response is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Exactly this many bytes (for HEAD, the length a GET would have).
    Sized(u64),
    /// Length unknown: chunked, or close-delimited for HTTP/1.0.
    Stream,
}

pub struct Exchange<'a> {
    pub(crate) link: &'a mut Link,
    pub(crate) head: &'a ParsedHead,
    pub(crate) head_bytes: &'a [u8],
    pub(crate) rbuf: &'a mut BytesMut,
    pub(crate) wbuf: &'a mut BytesMut,
    pub(crate) body: BodyState,
    pub(crate) keep_alive: bool,
    /// The status to answer with when the body could not be read.
    pub(crate) body_error: Option<u16>,
    sent_continue: bool,
    out: Out,
    /// A 1xx/204/304 answered a streamed or sized start: body writes are
    /// dropped, as for HEAD.
    drop_body: bool,
    /// The final status sent, 0 before one; for logs and metrics.
    status: u16,
    /// Body bytes of the response handed to the connection.
    body_bytes: u64,
    /// The handler's own note about this request, for `Handler::done`.
    tag: u32,
    /// The pace of the request body (see `super::meter`).
    receiving: Meter,
    /// A whole header line every response head of this request carries
    /// (see [`Exchange::add_header_line`]). A thin pointer: the exchange
    /// is part of every connection's future, idle ones included.
    added: Option<std::rc::Rc<Vec<u8>>>,
}

impl<'a> Exchange<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        link: &'a mut Link,
        head: &'a ParsedHead,
        head_bytes: &'a [u8],
        rbuf: &'a mut BytesMut,
        wbuf: &'a mut BytesMut,
        max_body: u64,
    ) -> Self {
        let body = match head.body {
            BodyKind::Empty | BodyKind::Length(0) => BodyState::Done,
            BodyKind::Length(n) => BodyState::Length(n),
            BodyKind::Chunked => BodyState::Chunked(Box::new(ChunkedDecoder::new(max_body))),
        };
        Exchange {
            link,
            head,
            head_bytes,
            rbuf,
            wbuf,
            body,
            keep_alive: head.keep_alive && !crate::shutdown::draining(),
            body_error: None,
            sent_continue: false,
            out: Out::None,
            drop_body: false,
            status: 0,
            body_bytes: 0,
            tag: 0,
            receiving: Meter::default(),
            added: None,
        }
    }

    /// Notes a number for [`crate::http::Handler::done`] to read back (which
    /// route took the request, say), so it need not be worked out twice.
    #[inline]
    pub fn set_tag(&mut self, tag: u32) {
        self.tag = tag;
    }

    #[inline]
    pub fn tag(&self) -> u32 {
        self.tag
    }

    /// The final status of the response, 0 while none was started.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Body bytes of the response so far (without head or chunk framing).
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Length of the request head as received.
    pub fn head_len(&self) -> usize {
        self.head_bytes.len()
    }

    /// Answers for a handler that failed before responding; the connection
    /// closes after it.
    pub(crate) fn send_error(&mut self, status: u16) {
        self.body_bytes = super::response::write_error(self.wbuf, status);
        self.status = status;
    }

    pub fn method(&self) -> Method {
        self.head.method
    }
    pub fn method_bytes(&self) -> &[u8] {
        self.head.method_span.get(self.head_bytes)
    }
    pub fn is_head(&self) -> bool {
        self.head.method == Method::Head
    }
    pub fn version(&self) -> Version {
        self.head.version
    }
    /// The request-target as sent.
    pub fn target(&self) -> &[u8] {
        self.head.target.get(self.head_bytes)
    }
    /// The path of the target, up to `?`; for an absolute-form target
    /// (`http://host/p`) the part from the first `/` after the authority.
    pub fn path(&self) -> &[u8] {
        let mut t = self.target();
        if t.first() != Some(&b'/') {
            let after_scheme = t.windows(3).position(|w| w == b"://").map_or(0, |i| i + 3);
            t = t[after_scheme..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(b"/", |i| &t[after_scheme + i..]);
        }
        t.iter().position(|&b| b == b'?').map_or(t, |i| &t[..i])
    }
    pub fn query(&self) -> Option<&[u8]> {
        let t = self.target();
        t.iter().position(|&b| b == b'?').map(|i| &t[i + 1..])
    }
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.header(self.head_bytes, name)
    }
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone + '_ {
        self.head.headers(self.head_bytes)
    }
    pub fn host(&self) -> Option<&[u8]> {
        self.head.host.map(|s| s.get(self.head_bytes))
    }
    /// The client's address (cached by the engine after the first call).
    pub fn peer(&self) -> io::Result<SocketAddr> {
        self.link.stream.peer_addr()
    }
    /// The address the client connected to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.link.stream.local_addr()
    }

    /// Adds `line`, a whole `Name: value\r\n` header line, to whatever
    /// response this request gets, from whichever handler writes it (HSTS
    /// on every https response of a virtual host).
    pub fn add_header_line(&mut self, line: std::rc::Rc<Vec<u8>>) {
        self.added = Some(line);
    }

    /// Whether the client connection speaks TLS.
    #[inline]
    pub fn is_tls(&self) -> bool {
        self.link.stream.is_tls()
    }

    /// Whether a body can go from `from` to this client without a copy
    /// ([`Exchange::write_from_socket`]).
    pub fn can_splice_from(&self, from: &crate::net::TcpStream) -> bool {
        crate::splice::supported_between(from, &self.link.stream)
    }
    /// Whether a streamed (chunked or close-delimited) body is under way.
    pub fn streaming(&self) -> bool {
        matches!(self.out, Out::Chunked | Out::CloseDelimited)
    }
    pub fn body_kind(&self) -> BodyKind {
        self.head.body
    }
    /// Closes the connection after this response.
    pub fn set_close(&mut self) {
        self.keep_alive = false;
    }
    pub fn responded(&self) -> bool {
        self.out != Out::None
    }
    pub(crate) fn body_done(&self) -> bool {
        matches!(self.body, BodyState::Done)
    }

    /// The next piece of the request body, `None` at its end. Sends
    /// `100 Continue` first when the client asked for it. An error here has
    /// already decided the status to answer (413, 400 or 408).
    pub async fn read_body(&mut self) -> io::Result<Option<Bytes>> {
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
                            Err(e) => {
                                return Err(self.fail_body(e.status(), io::ErrorKind::InvalidData))
                            }
                        };
                        if d.done {
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
            self.fill_body().await?;
        }
    }

    fn fail_body(&mut self, status: u16, kind: io::ErrorKind) -> io::Error {
        self.body_error = Some(status);
        self.keep_alive = false;
        self.body = BodyState::Done;
        io::Error::new(kind, format!("request body: answered {status}"))
    }

    async fn fill_body(&mut self) -> io::Result<()> {
        if self.head.expect_continue && !self.sent_continue && self.out == Out::None {
            self.sent_continue = true;
            self.wbuf.put_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            self.flush().await?;
        }
        let t = &self.link.cfg.timeouts;
        let start = std::time::Instant::now();
        let deadline = start + self.receiving.allowance(t.body_read, t.min_rate, 0);
        let mut waited = std::time::Duration::ZERO;
        loop {
            match self.link.stream.try_read(self.rbuf) {
                Ok(0) if self.link.expired() => {
                    return Err(self.fail_body(408, io::ErrorKind::TimedOut))
                }
                Ok(0) => return Err(self.fail_body(400, io::ErrorKind::UnexpectedEof)),
                Ok(n) => {
                    self.receiving.record(waited, n as u64);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.link.readable_until(deadline).await?;
                    waited = start.elapsed();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
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
                *n <= DISCARD_MAX && (!self.head.expect_continue || self.sent_continue)
            }
            BodyState::Chunked(_) => false,
        };
        if !unread_ok || crate::shutdown::draining() {
            self.keep_alive = false;
        }
    }

    fn write_head(&mut self, status: u16, headers: &[(&str, &[u8])], framing: Framing) {
        let iter = headers.iter().map(|(n, v)| (n.as_bytes(), *v));
        self.write_head_from(status, iter, framing)
    }

    fn write_head_from<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        framing: Framing,
    ) {
        self.decide_keep_alive();
        self.status = status;
        let w = &mut *self.wbuf;
        write_status_line(w, Version::Http11, status);
        write_server_headers(w);
        for (name, value) in headers {
            write_header(w, name, value);
        }
        if let Some(line) = &self.added {
            w.put_slice(line.as_slice());
        }
        match framing {
            Framing::Length(n) => {
                w.put_slice(b"Content-Length: ");
                put_u64(w, n);
                w.put_slice(b"\r\n");
            }
            Framing::Chunked => w.put_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::None => {}
        }
        if !self.keep_alive {
            w.put_slice(b"Connection: close\r\n");
        } else if self.head.version == Version::Http10 {
            w.put_slice(b"Connection: keep-alive\r\n");
        }
        w.put_slice(b"\r\n");
    }

    fn check_first(&self) -> io::Result<()> {
        if self.out != Out::None {
            return Err(io::Error::other("response already started"));
        }
        Ok(())
    }

    /// Starts a response whose headers come from elsewhere (a proxied
    /// response). They must not include framing, Connection, Date or
    /// Server: those stay the exchange's to write. A [`Body::Stream`] is
    /// chunked for HTTP/1.1 clients and close-delimited for HTTP/1.0 ones.
    pub fn start_from<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        body: Body,
    ) -> io::Result<()> {
        self.check_first()?;
        if no_content(status) {
            self.drop_body = true;
            self.write_head_from(status, headers, Framing::None);
            self.out = Out::Done;
            return Ok(());
        }
        match body {
            Body::Sized(len) => {
                self.write_head_from(status, headers, Framing::Length(len));
                self.out = if self.is_head() || len == 0 {
                    Out::Done
                } else {
                    Out::Sized(len)
                };
            }
            Body::Stream if self.head.version == Version::Http10 => {
                self.keep_alive = false;
                self.write_head_from(status, headers, Framing::None);
                self.out = if self.is_head() {
                    Out::Done
                } else {
                    Out::CloseDelimited
                };
            }
            Body::Stream => {
                self.write_head_from(status, headers, Framing::Chunked);
                self.out = if self.is_head() {
                    Out::Done
                } else {
                    Out::Chunked
                };
            }
        }
        Ok(())
    }

    /// Sends an interim (1xx) response now, before the final one; HTTP/1.0
    /// clients get none (RFC 9110 §15.2). A relayed `100 Continue` counts as
    /// the one the client waited for.
    pub async fn send_interim<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> io::Result<()> {
        if !(100..200).contains(&status) || status == 101 {
            return Err(io::Error::other("not an interim status"));
        }
        self.check_first()?;
        if self.head.version == Version::Http10 {
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

    /// Answers `101 Switching Protocols` with `headers` (which carry
    /// Connection and Upgrade) and hands over the client's socket, with
    /// the bytes it already sent past the head. The connection closes when
    /// the handler returns.
    pub async fn upgrade<'h>(
        &mut self,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> io::Result<(&crate::net::TcpStream, &mut BytesMut)> {
        self.check_first()?;
        let w = &mut *self.wbuf;
        self.status = 101;
        write_status_line(w, Version::Http11, 101);
        write_server_headers(w);
        for (name, value) in headers {
            write_header(w, name, value);
        }
        w.put_slice(b"\r\n");
        self.out = Out::Upgraded;
        self.keep_alive = false;
        self.flush().await?;
        // The connection is no longer HTTP: no request deadline applies.
        self.link.guard.disarm();
        Ok((&self.link.stream, &mut *self.rbuf))
    }

    pub(crate) fn upgraded(&self) -> bool {
        self.out == Out::Upgraded
    }

    /// Whether the client waits for `100 Continue` before sending its body.
    pub fn expects_continue(&self) -> bool {
        self.head.expect_continue && !self.sent_continue
    }

    /// Answers `status` with a short plain-text page (`502 Bad Gateway`),
    /// the connection kept as for any other response. No allocation.
    pub fn send_status(&mut self, status: u16) -> io::Result<()> {
        let reason = super::response::reason(status);
        let mut body = [0u8; 64];
        let mut n = 0;
        for part in [itoa3(status).as_slice(), b" ", reason.as_bytes(), b"\n"] {
            let take = part.len().min(body.len() - n);
            body[n..n + take].copy_from_slice(&part[..take]);
            n += take;
        }
        self.send(
            status,
            &[("Content-Type", b"text/plain; charset=utf-8")],
            &body[..n],
        )
    }

    /// Buffers a whole response; the connection writes it (with any pipelined
    /// neighbours) when the handler returns.
    pub fn send(&mut self, status: u16, headers: &[(&str, &[u8])], body: &[u8]) -> io::Result<()> {
        self.check_first()?;
        let no_body = bodyless(status, self.is_head());
        let framing = if no_content(status) {
            Framing::None
        } else {
            Framing::Length(body.len() as u64)
        };
        self.write_head(status, headers, framing);
        if !no_body {
            self.wbuf.put_slice(body);
            self.body_bytes += body.len() as u64;
        }
        self.out = Out::Done;
        Ok(())
    }

    /// Sends `len` bytes of `file` from `offset` as the body, without copying
    /// them through user space (see [`crate::net::TcpStream::send_file`]).
    pub async fn send_file(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        self.start_sized(status, headers, len)?;
        self.write_file(file, offset, len).await
    }

    /// Starts a body of exactly `len` bytes, to be written in pieces with
    /// [`Exchange::write_body`] and [`Exchange::write_file`]. A body left
    /// short closes the connection, so it never passes for complete.
    pub fn start_sized(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        len: u64,
    ) -> io::Result<()> {
        self.check_first()?;
        if no_content(status) {
            self.drop_body = true;
            return self.send(status, headers, b"");
        }
        self.write_head(status, headers, Framing::Length(len));
        self.out = if self.is_head() || len == 0 {
            Out::Done
        } else {
            Out::Sized(len)
        };
        Ok(())
    }

    fn take_sized(&mut self, n: u64) -> io::Result<bool> {
        match self.out {
            Out::Done if self.is_head() || self.drop_body => Ok(false),
            Out::Sized(left) if n <= left => {
                self.body_bytes += n;
                self.out = if n == left {
                    Out::Done
                } else {
                    Out::Sized(left - n)
                };
                Ok(true)
            }
            Out::Sized(_) => Err(io::Error::other("body longer than its Content-Length")),
            _ => Err(io::Error::other("write_body without start_sized")),
        }
    }

    /// Appends bytes to a sized body.
    pub async fn write_body(&mut self, data: &[u8]) -> io::Result<()> {
        if !self.take_sized(data.len() as u64)? {
            return Ok(());
        }
        self.wbuf.put_slice(data);
        if self.wbuf.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }

    /// Appends a file range to a sized body, without a copy.
    pub async fn write_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        if len == 0 || !self.take_sized(len)? {
            return Ok(());
        }
        self.link.flush_before_file(self.wbuf).await?;
        self.link.send_file(file, offset, len).await
    }

    /// Appends `len` bytes read from `from` to a sized body, spliced from
    /// socket to socket where the engine can ([`Exchange::can_splice_from`];
    /// check first, as a refusal here has used up the length).
    pub async fn write_from_socket(
        &mut self,
        from: &crate::net::TcpStream,
        len: u64,
        on_progress: &dyn Fn(),
    ) -> io::Result<()> {
        if len == 0 || !self.take_sized(len)? {
            return Ok(());
        }
        self.flush().await?;
        self.link.splice_from(from, len, on_progress).await
    }

    /// Starts a streamed body: chunked for HTTP/1.1, delimited by closing the
    /// connection for HTTP/1.0 (which has no chunked coding).
    pub fn start_chunked(&mut self, status: u16, headers: &[(&str, &[u8])]) -> io::Result<()> {
        self.check_first()?;
        if no_content(status) {
            // Framed by its status alone; later chunks are dropped.
            self.drop_body = true;
            return self.send(status, headers, b"");
        }
        if self.head.version == Version::Http10 {
            self.keep_alive = false;
            self.write_head(status, headers, Framing::None);
            self.out = Out::CloseDelimited;
        } else {
            self.write_head(status, headers, Framing::Chunked);
            self.out = Out::Chunked;
        }
        Ok(())
    }

    pub async fn write_chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() || self.is_head() || self.drop_body {
            return Ok(());
        }
        self.body_bytes += data.len() as u64;
        match self.out {
            Out::Chunked => {
                let mut hdr = [0u8; 18];
                self.wbuf
                    .put_slice(write_chunk_header(data.len(), &mut hdr));
                self.wbuf.put_slice(data);
                self.wbuf.put_slice(b"\r\n");
            }
            Out::CloseDelimited => self.wbuf.put_slice(data),
            _ => return Err(io::Error::other("write_chunk without start_chunked")),
        }
        if self.wbuf.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }

    /// Ends a streamed body.
    pub fn finish_chunked(&mut self) -> io::Result<()> {
        match self.out {
            Out::Chunked => {
                if !self.is_head() {
                    self.wbuf.put_slice(LAST_CHUNK);
                }
            }
            Out::CloseDelimited => {}
            Out::Done if self.drop_body => {}
            _ => return Err(io::Error::other("finish_chunked without start_chunked")),
        }
        self.out = Out::Done;
        Ok(())
    }

    /// True when a streamed or sized body was started and not finished: the
    /// connection must then close without a clean end.
    pub(crate) fn unfinished_stream(&self) -> bool {
        matches!(self.out, Out::Chunked | Out::CloseDelimited | Out::Sized(_))
    }

    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        self.link.flush(self.wbuf).await
    }
}

/// A status code's three digits.
fn itoa3(status: u16) -> [u8; 3] {
    let s = status.min(999);
    [
        b'0' + (s / 100) as u8,
        b'0' + (s / 10 % 10) as u8,
        b'0' + (s % 10) as u8,
    ]
}

/// 1xx, 204 and 304 responses never carry a body or framing headers
/// (RFC 9110 §6.4.1, RFC 9112 §6.3).
fn no_content(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

enum Framing {
    Length(u64),
    Chunked,
    None,
}
