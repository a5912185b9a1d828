//! One request and its response, as a handler sees them, whatever protocol
//! carries them.
//!
//! The head is parsed already and its path normalized (see [`crate::path`]);
//! the body is read on demand as a stream ([`Exchange::read_body`]); the
//! response is either buffered whole ([`Exchange::send`]), sent from a file
//! without a copy ([`Exchange::send_file`]), or written in pieces after
//! [`Exchange::start_sized`], [`Exchange::start_stream`] or
//! [`Exchange::start_from`]. Framing, Date, Server and connection handling
//! are the protocol's to write, never the handler's, so a handler cannot
//! frame a response wrongly.
//!
//! The response's progress (nothing yet, a sized body with so many bytes to
//! go, a stream, done, upgraded) is kept here; how each step looks on the
//! wire is the protocol's ([`Wire`]). A second protocol adds a variant there
//! and drives the same handlers unchanged.

use std::net::SocketAddr;
use std::rc::Rc;

use bytes::Bytes;
use ringside_runtime::net::TcpStream;

use crate::capture::{self as caught, Capture};
use crate::compress::{self, encoder::Encoder, Policy};
use crate::error::{Error, Kind};
use crate::error_page::ErrorPages;
use crate::fields::SiteFields;
use crate::head::{Method, RequestHead};
use crate::message::{Body, Framing, HeaderLine};
use crate::path::Normalized;
use crate::rewritten::Rewritten;
use crate::status::{digits, no_content, reason};
use crate::upgraded::Upgraded;

mod pages;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    None,
    Done,
    Stream,
    /// A sized body with this many bytes still to write.
    Sized(u64),
    /// 101 sent: the connection belongs to a tunnel now.
    Upgraded,
}

/// The protocol an exchange runs on.
pub(crate) enum Wire<'a> {
    H1(crate::h1::wire::Wire<'a>),
    H2(crate::h2::wire::Wire<'a>),
    H3(crate::h3::wire::Wire<'a>),
}

macro_rules! wire {
    ($self:ident, $w:ident => $e:expr) => {
        match &mut $self.wire {
            Wire::H1($w) => $e,
            Wire::H2($w) => $e,
            Wire::H3($w) => $e,
        }
    };
    (ref $self:ident, $w:ident => $e:expr) => {
        match &$self.wire {
            Wire::H1($w) => $e,
            Wire::H2($w) => $e,
            Wire::H3($w) => $e,
        }
    };
}

mod request;
mod shared;

pub struct Exchange<'a> {
    pub(crate) wire: Wire<'a>,
    head: &'a RequestHead,
    head_bytes: &'a [u8],
    /// The normalized path (what routing decides on and what goes
    /// upstream) and the path routes are matched on, in the connection's
    /// slot: one pointer, as every connection's future holds an exchange.
    paths: &'a Normalized,
    out: Out,
    /// A 1xx/204/304 answered a streamed or sized start, or the request was
    /// HEAD: body writes are dropped.
    drop_body: bool,
    /// The final status sent, 0 before one; for logs and metrics.
    status: u16,
    /// Body bytes of the response handed to the connection.
    body_bytes: u64,
    /// The handler's own note about this request, for `Handler::done`:
    /// wide enough for a route and what its upstream tries came to.
    tag: u64,
    /// A thin pointer: the exchange is part of every connection's future.
    added: Option<Rc<HeaderLine>>,
    /// The route's compression, for a response started from another
    /// server's head ([`Exchange::start_from`]).
    compress: Option<Rc<Policy>>,
    /// The body's compressor, once a response is being compressed.
    enc: Option<Box<Encoder>>,
    /// A copy of the response for a cache, when one asked.
    capture: Option<Box<Capture>>,
    /// The route's configured fields, where it has any.
    fields: Option<Rc<SiteFields>>,
    /// The path and query a rewrite put in place of the request's.
    rewritten: Option<Box<Rewritten>>,
    /// The client's address as a trusted balancer reported it, where the
    /// handler set one ([`Exchange::set_peer`]).
    real_peer: Option<SocketAddr>,
    /// Pages that stand in for error responses (`crate::error_page`).
    pages: Option<Rc<dyn ErrorPages>>,
}

/// A header pair at a shorter lifetime, to chain with lines made here.
fn shorten<'s, 'l: 's>(p: (&'l [u8], &'l [u8])) -> (&'s [u8], &'s [u8]) {
    p
}

impl<'a> Exchange<'a> {
    pub(crate) fn new(
        wire: Wire<'a>,
        head: &'a RequestHead,
        head_bytes: &'a [u8],
        paths: &'a Normalized,
    ) -> Self {
        Exchange {
            wire,
            head,
            head_bytes,
            paths,
            out: Out::None,
            drop_body: head.method == Method::Head,
            status: 0,
            body_bytes: 0,
            tag: 0,
            added: None,
            compress: None,
            enc: None,
            capture: None,
            fields: None,
            rewritten: None,
            real_peer: None,
            pages: None,
        }
    }

    /// Notes a number for [`crate::Handler::done`] to read back (which
    /// route took the request, say), so it need not be worked out twice.
    #[inline]
    pub fn set_tag(&mut self, tag: u64) {
        self.tag = tag;
    }

    #[inline]
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// The final status of the response, 0 while none was started.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Body bytes of the response so far (without head or framing).
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Length of the request head as received.
    pub fn head_len(&self) -> usize {
        self.head.head_len
    }

    /// Compresses a response started from another server's head with
    /// this policy, where it allows (see [`crate::compress`]).
    pub fn set_compression(&mut self, policy: Option<Rc<Policy>>) {
        self.compress = policy;
    }
    pub fn compression(&self) -> Option<&Rc<Policy>> {
        self.compress.as_ref()
    }

    /// Adds `line` to whatever response this request gets.
    pub fn add_header(&mut self, line: Rc<HeaderLine>) {
        self.added = Some(line);
    }

    /// Whether a body can go from `from` to this client without a copy
    /// ([`Exchange::write_from_socket`]).
    pub fn can_splice_from(&self, from: &TcpStream) -> bool {
        if self.enc.is_some() || self.capture.is_some() {
            return false;
        }
        // A body being dropped is read, so its connection stays in step.
        if self.drop_body {
            return false;
        }
        match &self.wire {
            Wire::H1(w) => w.can_splice_from(from),
            Wire::H2(_) | Wire::H3(_) => false,
        }
    }
    /// Whether a streamed body is under way.
    pub fn streaming(&self) -> bool {
        self.out == Out::Stream
    }
    /// Whether a body sent without a length would cost the client its
    /// kept connection (HTTP/1.0 has no chunked coding, so such a body
    /// ends at the close): a handler that can learn the length by
    /// buffering a small body should then.
    pub fn unsized_body_closes(&self) -> bool {
        match &self.wire {
            Wire::H1(w) => w.keep_alive && !w.chunks(),
            Wire::H2(_) | Wire::H3(_) => false,
        }
    }
    /// Ends the client's connection after this response (what follows a
    /// CONNECT on it is not a request); an HTTP/2 stream ends alone.
    pub fn set_close(&mut self) {
        if let Wire::H1(w) = &mut self.wire {
            w.keep_alive = false;
        }
    }
    /// Ends an HTTP/2 stream whose response cannot be finished (HTTP/1
    /// closes the connection instead, in its driver).
    pub(crate) fn reset_stream(&mut self) {
        match &mut self.wire {
            Wire::H2(w) => w.reset(),
            Wire::H3(w) => w.reset(),
            Wire::H1(_) => {}
        }
        self.out = Out::Done;
    }
    pub fn responded(&self) -> bool {
        self.out != Out::None
    }
    pub(crate) fn upgraded(&self) -> bool {
        self.out == Out::Upgraded
    }
    /// True when a body was started and not finished: the connection must
    /// then end without a clean end, so it never passes for complete.
    pub(crate) fn unfinished(&self) -> bool {
        matches!(self.out, Out::Stream | Out::Sized(_))
    }
    /// Whether the client waits for `100 Continue` before sending its body.
    pub fn expects_continue(&self) -> bool {
        wire!(ref self, w => w.expects_continue())
    }

    /// The next piece of the request body, `None` at its end. Asks the
    /// client for it first where it waits to be asked (`100 Continue`).
    /// An error says the status the request is refused with: return it,
    /// and the driver answers it (the connection cannot go on either way).
    pub async fn read_body(&mut self) -> Result<Option<Bytes>, Error> {
        let responded = self.responded();
        wire!(self, w => w.read_body(responded).await)
    }

    /// Refuses the request after the handler failed on the client's side
    /// (its body, say): the status, then the connection ends.
    pub(crate) fn refuse(&mut self, status: u16) {
        if let Some(page) = self.error_page(status, false) {
            self.set_close();
            if self.send_page(page, std::iter::empty(), false).is_ok() {
                return;
            }
        }
        self.body_bytes = wire!(self, w => w.write_refusal(status));
        self.status = status;
        self.out = Out::Done;
    }

    fn check_first(&self) -> Result<(), Error> {
        if self.out != Out::None {
            return Err(Error::internal("response already started"));
        }
        Ok(())
    }

    fn write_head<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        framing: Framing,
    ) {
        self.write_head_dated(status, headers, framing, None);
    }

    /// A head whose Date is `date` where given (a stored response's),
    /// else now.
    fn write_head_dated<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        framing: Framing,
        date: Option<&[u8]>,
    ) {
        self.status = status;
        let mut alt = [0u8; 32];
        match self.alt_svc(&mut alt) {
            None => self.write_head_ruled(status, headers, framing, date),
            Some(v) => {
                let headers = headers
                    .map(|(n, v)| -> (&[u8], &[u8]) { (n, v) })
                    .chain(std::iter::once((&b"alt-svc"[..], v)));
                self.write_head_ruled(status, headers, framing, date)
            }
        }
    }

    /// [`Exchange::write_head_dated`] after `Alt-Svc`: the route's header
    /// rules applied, then the protocol's head.
    fn write_head_ruled<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        framing: Framing,
        date: Option<&[u8]>,
    ) {
        let added = self.added.as_deref();
        let rules = self.fields.as_deref().map(|f| &f.response);
        match rules.filter(|r| !r.is_empty()) {
            None => wire!(self, w => w.write_head(status, headers, added, framing, date)),
            // After whatever the handler and compression wrote (Vary).
            Some(r) => {
                let hs = headers
                    .map(shorten)
                    .filter(move |(n, _)| r.keeps(status, n))
                    .chain(r.lines(status));
                wire!(self, w => w.write_head(status, hs, added, framing, date))
            }
        }
    }

    /// `Alt-Svc` for the first response on a TLS connection to a listener
    /// that serves HTTP/3 too (RFC 9114 §3.1.1): the same port over UDP,
    /// for a day. Once per connection: the client keeps it for that long,
    /// and on every response it cost HTTP/2 over TLS about 5% more
    /// instructions per request (callgrind, h2load -c10 -m10).
    fn alt_svc<'b>(&self, buf: &'b mut [u8; 32]) -> Option<&'b [u8]> {
        let link = match &self.wire {
            Wire::H1(w) => w.link,
            Wire::H2(w) => w.link,
            Wire::H3(_) => return None,
        };
        if link.alt_svc_sent.get() || !link.stream.is_tls() || !link.cfg.http3_on(link.listener()) {
            return None;
        }
        link.alt_svc_sent.set(true);
        // A listener's port stands for the process's life: asked of the
        // socket once per listener on each core, not per response.
        thread_local! {
            static PORTS: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let port = PORTS.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() <= link.listener() {
                p.resize(link.listener() + 1, 0);
            }
            if p[link.listener()] == 0 {
                p[link.listener()] = link.local_addr().map_or(0, |a| a.port());
            }
            p[link.listener()]
        });
        if port == 0 {
            return None;
        }
        let mut at = 0;
        for piece in [
            &b"h3=\":"[..],
            crate::grammar::decimal(u64::from(port), &mut [0; 20]),
            b"\"; ma=86400",
        ] {
            buf[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        Some(&buf[..at])
    }

    /// Starts a response whose headers come from elsewhere (a proxied
    /// response). They must not include framing, Connection, Date or
    /// Server: those stay the protocol's to write. With a compression
    /// policy set, an eligible body is compressed on its way out.
    pub fn start_from<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
        body: Body,
    ) -> Result<(), Error> {
        // A stale response the cache answers with instead goes first.
        if !self.capture.as_ref().is_some_and(|c| c.holds(status)) {
            if let Some(page) = self.error_page(status, true) {
                return self.send_page(page, headers, true);
            }
        }
        let mut marked = None;
        if let Some(c) = &mut self.capture {
            let length = match body {
                Body::Sized(n) => Some(n),
                Body::Stream => None,
            };
            c.head(status, headers.clone(), length);
            if c.holds(status) {
                return Ok(());
            }
            marked = c.cache_status.clone();
        }
        self.check_first()?;
        // The targeted fields a cache obeys (RFC 9213) are not sent on.
        let capturing = self.capture.is_some();
        let headers = headers
            .map(shorten)
            .filter(move |(n, _)| !(capturing && caught::targeted_cache_field(n)))
            .chain(marked.as_deref().map(|v| (&b"Cache-Status"[..], v)));
        if let Some(p) = self.compress.clone() {
            let len = match body {
                Body::Sized(n) => Some(n),
                Body::Stream => None,
            };
            if len != Some(0) && p.eligible(status, headers.clone(), len) {
                return self.start_compressed(&p, status, headers, len);
            }
        }
        self.start_framed(status, headers, body);
        Ok(())
    }

    fn start_framed<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        body: Body,
    ) {
        if no_content(status) {
            self.drop_body = true;
            self.write_head(status, headers, Framing::None);
            self.out = Out::Done;
            return;
        }
        match body {
            Body::Sized(len) => {
                self.write_head(status, headers, Framing::Length(len));
                self.out = if self.is_head() || len == 0 {
                    Out::Done
                } else {
                    Out::Sized(len)
                };
            }
            Body::Stream => {
                self.write_head(status, headers, Framing::Stream);
                self.out = if self.is_head() {
                    Out::Done
                } else {
                    Out::Stream
                };
            }
        }
    }

    /// An eligible response: `Vary: Accept-Encoding` always, and the body
    /// compressed when the client takes a coding, with a variant ETag and
    /// no Accept-Ranges (ranges of it are not served).
    fn start_compressed<'h>(
        &mut self,
        p: &Policy,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone,
        len: Option<u64>,
    ) -> Result<(), Error> {
        let named = |n: &[u8], want: &str| n.eq_ignore_ascii_case(want.as_bytes());
        let vary = compress::vary_with_accept_encoding(
            headers
                .clone()
                .find(|(n, _)| named(n, "vary"))
                .map(|(_, v)| v),
        );
        let replaces_vary = vary.is_some();
        let vary_line = vary.as_deref().map(|v| (&b"Vary"[..], v));
        let coding = p.choose(self.header("accept-encoding"), &compress::STREAMED_ORDER);
        let Some(c) = coding else {
            let hs = headers
                .map(shorten)
                .filter(|(n, _)| !(replaces_vary && named(n, "vary")))
                .chain(vary_line);
            self.start_framed(status, hs, len.map_or(Body::Stream, Body::Sized));
            return Ok(());
        };
        let etag = headers
            .clone()
            .find(|(n, _)| named(n, "etag"))
            .and_then(|(_, v)| compress::variant_etag(v, c));
        let hs = headers
            .map(shorten)
            .filter(|(n, _)| {
                let replaced = replaces_vary && named(n, "vary");
                !(replaced || named(n, "etag") || named(n, "accept-ranges"))
            })
            .chain(etag.as_deref().map(|v| (&b"ETag"[..], v)))
            .chain(vary_line)
            .chain(std::iter::once((
                &b"Content-Encoding"[..],
                c.token().as_bytes(),
            )));
        self.write_head(status, hs, Framing::Stream);
        if self.is_head() {
            self.out = Out::Done;
            return Ok(());
        }
        let enc = Encoder::new(c, &p.levels, len)
            .map_err(|e| Error::internal("compressor").because(e))?;
        self.enc = Some(Box::new(enc));
        self.out = Out::Stream;
        Ok(())
    }

    fn pairs<'h>(
        headers: &'h [(&str, &'h [u8])],
    ) -> impl Iterator<Item = (&'h [u8], &'h [u8])> + Clone {
        headers.iter().map(|(n, v)| (n.as_bytes(), *v))
    }

    /// Sends an interim (1xx) response now, before the final one.
    pub async fn send_interim<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<(), Error> {
        if !crate::status::is_interim(status) {
            return Err(Error::internal("not an interim status"));
        }
        if self.capture.as_ref().is_some_and(|c| c.detached) {
            return Ok(());
        }
        self.check_first()?;
        wire!(self, w => w.write_interim(status, headers).await)
    }

    /// Answers `101 Switching Protocols` with `headers` (which carry
    /// Connection and Upgrade) and hands over the client's side of the
    /// connection, with the bytes it already sent. The exchange ends when
    /// the handler returns.
    pub async fn upgrade<'h>(
        &mut self,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<Upgraded<'_>, Error> {
        self.check_first()?;
        self.out = Out::Upgraded;
        match &mut self.wire {
            Wire::H1(w) => {
                self.status = 101;
                w.upgrade(headers).await
            }
            Wire::H2(w) => {
                // RFC 8441: the stream's 200 is the switch.
                self.status = 200;
                Ok(crate::upgraded::Upgraded::h2(w.upgrade(headers)))
            }
            // No extended CONNECT over HTTP/3 (SETTINGS_ENABLE_CONNECT_PROTOCOL
            // is not sent), so no tunnel to hand the stream to.
            Wire::H3(_) => {
                self.out = Out::None;
                Err(Error::new(
                    crate::error::Kind::NotImplemented,
                    "no upgrade or tunnel over HTTP/3",
                ))
            }
        }
    }

    /// Answers `status` with a short plain-text page (`502 Bad Gateway`),
    /// the connection kept as for any other response. No allocation.
    pub fn send_status(&mut self, status: u16) -> Result<(), Error> {
        let reason = reason(status);
        let mut body = [0u8; 64];
        let mut n = 0;
        for part in [digits(status).as_slice(), b" ", reason.as_bytes(), b"\n"] {
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
    pub fn send(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        body: &[u8],
    ) -> Result<(), Error> {
        self.send_with(status, Self::pairs(headers), body)
    }

    /// [`Exchange::send`] with the headers as name and value bytes (a
    /// stored response's).
    pub fn send_with<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        body: &[u8],
    ) -> Result<(), Error> {
        if let Some(page) = self.error_page(status, false) {
            return self.send_page(page, headers, false);
        }
        self.send_dated(status, headers, None, body)
    }

    /// [`Exchange::send_with`] with the Date of a stored response (a cache
    /// sends the Date its origin gave, RFC 9110 §6.6.1), or now.
    pub fn send_dated<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        date: Option<&[u8]>,
        body: &[u8],
    ) -> Result<(), Error> {
        if let Some(page) = self.error_page(status, true) {
            return self.send_page(page, headers, true);
        }
        self.send_whole(status, headers, date, body)
    }

    /// [`Exchange::send_dated`] past the error pages.
    fn send_whole<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        date: Option<&[u8]>,
        body: &[u8],
    ) -> Result<(), Error> {
        self.check_first()?;
        let framing = if no_content(status) {
            Framing::None
        } else {
            Framing::Length(body.len() as u64)
        };
        self.write_head_dated(status, headers, framing, date);
        self.out = Out::Done;
        if !self.drop_body && !no_content(status) {
            self.body_bytes += body.len() as u64;
            match &mut self.wire {
                Wire::H1(w) => w.wbuf.extend_from_slice(body),
                Wire::H2(w) => w.buffer_body(body),
                Wire::H3(w) => w.buffer_body(body),
            }
        }
        Ok(())
    }

    /// Sends `len` bytes of `file` from `offset` as the body, without copying
    /// them through user space where the engine allows.
    pub async fn send_file(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        self.start_sized(status, headers, len)?;
        self.write_file(file, offset, len).await
    }

    /// Sends `len` bytes of `file` from `offset` as the body, with headers
    /// as name and value bytes and the Date of a stored response (see
    /// [`Exchange::send_dated`]); never compressed.
    pub async fn send_file_dated<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        date: Option<&[u8]>,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        if let Some(page) = self.error_page(status, true) {
            return self.send_page(page, headers, true);
        }
        self.check_first()?;
        self.write_head_dated(status, headers, Framing::Length(len), date);
        self.out = if self.is_head() || len == 0 {
            Out::Done
        } else {
            Out::Sized(len)
        };
        self.write_file(file, offset, len).await
    }

    /// Starts a body of exactly `len` bytes, to be written in pieces with
    /// [`Exchange::write_body`] and [`Exchange::write_file`]. A body left
    /// short ends the connection, so it never passes for complete.
    pub fn start_sized(
        &mut self,
        status: u16,
        headers: &[(&str, &[u8])],
        len: u64,
    ) -> Result<(), Error> {
        self.start_from(status, Self::pairs(headers), Body::Sized(len))
    }

    /// Starts a streamed body, its length known only at its end
    /// ([`Exchange::finish`]).
    pub fn start_stream(&mut self, status: u16, headers: &[(&str, &[u8])]) -> Result<(), Error> {
        self.start_from(status, Self::pairs(headers), Body::Stream)
    }

    /// Counts `n` bytes of a sized body; false when they are dropped.
    fn take_sized(&mut self, n: u64) -> Result<bool, Error> {
        match self.out {
            Out::Done if self.drop_body => Ok(false),
            Out::Sized(left) if n <= left => {
                self.body_bytes += n;
                self.out = if n == left {
                    Out::Done
                } else {
                    Out::Sized(left - n)
                };
                Ok(true)
            }
            Out::Sized(_) => Err(Error::internal("body longer than its declared length")),
            _ => Err(Error::internal("body written without a started response")),
        }
    }

    /// Appends bytes to the body: a sized one (within its length) or a
    /// stream.
    pub async fn write_body(&mut self, data: &[u8]) -> Result<(), Error> {
        if data.is_empty() {
            return Ok(());
        }
        if let Some(c) = &mut self.capture {
            c.body(data);
            if c.holds(c.status) {
                return Ok(());
            }
        }
        if self.enc.is_some() {
            return self.write_compressed(data).await;
        }
        if self.out == Out::Stream {
            self.body_bytes += data.len() as u64;
            return wire!(self, w => w.write_stream(data).await);
        }
        if !self.take_sized(data.len() as u64)? {
            return Ok(());
        }
        wire!(self, w => w.write_sized(data).await)
    }

    /// Compresses a piece of the body and sends what the compressor gives;
    /// the last piece of a sized body ends the stream.
    async fn write_compressed(&mut self, data: &[u8]) -> Result<(), Error> {
        let e = self.enc.as_mut().expect("compressing");
        let left = e.remaining();
        if left.is_some_and(|l| data.len() as u64 > l) {
            return Err(Error::internal("body longer than its declared length"));
        }
        // A sized body's last piece ends the stream.
        let last = left == Some(data.len() as u64);
        let fail = |e: std::io::Error| Error::internal("compressing").because(e);
        e.write(data, !last).map_err(fail)?;
        let mut out = e.take();
        if last {
            let e = self.enc.take().expect("compressing");
            out.extend_from_slice(&e.finish().map_err(fail)?);
        }
        self.body_bytes += out.len() as u64;
        if !out.is_empty() {
            wire!(self, w => w.write_stream(&out).await)?;
        }
        if last {
            wire!(self, w => w.finish_stream());
            self.out = Out::Done;
        }
        Ok(())
    }

    /// Appends a file range to a sized body, without a copy.
    pub async fn write_file(
        &mut self,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        if self.enc.is_some() {
            return self.write_file_compressed(file, offset, len).await;
        }
        if len == 0 || !self.take_sized(len)? {
            return Ok(());
        }
        wire!(self, w => w.write_file(file, offset, len).await)
    }

    /// Appends `len` bytes read from `from` to a sized body, spliced from
    /// socket to socket where the engine can ([`Exchange::can_splice_from`];
    /// check first, as a refusal here has used up the length). An error is
    /// the source's when it ended short ([`Kind::InvalidResponse`]), else
    /// the client's.
    pub async fn write_from_socket(
        &mut self,
        from: &TcpStream,
        len: u64,
        on_progress: &dyn Fn(),
    ) -> Result<(), Error> {
        if len == 0 || !self.take_sized(len)? {
            return Ok(());
        }
        let r = wire!(self, w => w.splice_from(from, len, on_progress).await);
        r.map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::new(Kind::InvalidResponse, "body ended short").because(e)
            }
            _ => Error::client_gone("relaying a body", e),
        })
    }

    /// A file range through the compressor, a piece at a time.
    async fn write_file_compressed(
        &mut self,
        file: &std::fs::File,
        mut offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        const PIECE: usize = 16 * 1024;
        let end = offset + len;
        let mut buf = vec![0u8; PIECE.min(len as usize)];
        while offset < end {
            let want = ((end - offset) as usize).min(PIECE);
            std::os::unix::fs::FileExt::read_exact_at(file, &mut buf[..want], offset)
                .map_err(|e| Error::internal("reading a file to compress").because(e))?;
            self.write_compressed(&buf[..want]).await?;
            offset += want as u64;
            // Compressing a piece takes a fraction of a millisecond, and writes
            // into a socket with room do not wait: without a turn for the
            // other tasks here, a large file would hold the core for its
            // whole length (a soak measured a small file's p99 at 150 ms
            // beside 60 gzipped 256 KiB files a second).
            ringside_runtime::task::yield_now().await;
        }
        Ok(())
    }

    /// Sends what the response holds back now. A handler calls it before
    /// it waits on something slow (an upstream's next piece), so what came
    /// so far reaches the client and a streamed response is not held
    /// until the buffer fills.
    pub async fn flush(&mut self) -> Result<(), Error> {
        match &mut self.wire {
            Wire::H1(w) if !w.wbuf.is_empty() => w.flush().await,
            _ => Ok(()),
        }
    }

    /// Whether the request body can be read while the response is being
    /// written (HTTP/2: a stream's two directions are independent, as
    /// gRPC's bidirectional calls need). Over HTTP/1 a proxy reads the
    /// whole request before the response.
    pub fn duplex(&self) -> bool {
        matches!(self.wire, Wire::H2(_) | Wire::H3(_))
    }

    /// Waits until the client gives up on this exchange: an HTTP/2
    /// stream reset (or its connection gone). Over HTTP/1 it never ends:
    /// a client's close is seen when the response is written.
    pub async fn client_gone(&self) {
        match &self.wire {
            Wire::H2(w) => w.closed().await,
            Wire::H3(w) => w.closed().await,
            Wire::H1(_) => std::future::pending().await,
        }
    }

    /// Whether the client takes trailers: over HTTP/2 always, over
    /// HTTP/1.1 when it said `TE: trailers`.
    pub fn takes_trailers(&self) -> bool {
        matches!(self.wire, Wire::H2(_) | Wire::H3(_)) || self.asks_trailers()
    }

    /// The trailer section the client ended its request body with (HTTP/2
    /// trailers, or HTTP/1.1 chunked trailers), once the body was read to
    /// its end; fields a trailer may not carry are left out. Taken: a
    /// second call has none.
    pub fn take_request_trailers(&mut self) -> Option<crate::h2::client::FieldList> {
        let mut list = wire!(self, w => w.take_trailers())?;
        let passes = |n: &[u8], v: &[u8]| {
            trailer_allowed(n)
                && crate::grammar::is_token(n)
                && !v.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0)
        };
        if list.iter().all(|(n, v)| passes(n, v)) {
            return Some(list);
        }
        let kept = std::mem::take(&mut list);
        for (n, v) in kept.iter().filter(|(n, v)| passes(n, v)) {
            list.push(n, v);
        }
        (!list.is_empty()).then_some(list)
    }

    /// Whether the client said `TE: trailers`.
    pub fn asks_trailers(&self) -> bool {
        self.headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case(b"te"))
            .flat_map(|(_, v)| crate::grammar::list_elements(v))
            .any(|t| t.eq_ignore_ascii_case(b"trailers"))
    }

    /// Ends a streamed body with a trailer section where the protocol can
    /// carry one (HTTP/2; HTTP/1.1's chunked coding), else as
    /// [`Exchange::finish`]. A sized body has no room for trailers over
    /// HTTP/1, and they are dropped there.
    pub async fn finish_with_trailers<'h>(
        &mut self,
        trailers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<(), Error> {
        if self.enc.is_some() || self.drop_body {
            return self.finish().await;
        }
        let trailers = trailers.filter(|(n, _)| trailer_allowed(n));
        match (self.out, &mut self.wire) {
            (Out::Stream, Wire::H1(w)) => w.finish_with_trailers(trailers),
            (Out::Stream, Wire::H2(w)) => w.finish_with_trailers(trailers),
            (Out::Stream, Wire::H3(w)) => w.finish_with_trailers(trailers),
            _ => return self.finish().await,
        }
        self.out = Out::Done;
        Ok(())
    }

    /// Ends the body: a stream gets its end marker (a compressed one its
    /// last bytes first); a sized body must have been written whole.
    pub async fn finish(&mut self) -> Result<(), Error> {
        if self.held() {
            return Ok(());
        }
        if let Some(e) = self.enc.take() {
            let out = e
                .finish()
                .map_err(|e| Error::internal("compressing").because(e))?;
            self.body_bytes += out.len() as u64;
            wire!(self, w => w.write_stream(&out).await)?;
        }
        match self.out {
            Out::Stream => wire!(self, w => w.finish_stream()),
            Out::Done => {}
            _ => return Err(Error::internal("finish without a whole body")),
        }
        self.out = Out::Done;
        Ok(())
    }
}

/// Whether a trailer may carry field `name` (RFC 9110 §6.5.1): not
/// framing, routing, or what the head alone decides.
fn trailer_allowed(name: &[u8]) -> bool {
    let is = |f: &str| name.eq_ignore_ascii_case(f.as_bytes());
    !(crate::hop::is_hop_by_hop(name)
        || is("content-length")
        || is("host")
        || is("trailer")
        || is("content-encoding")
        || is("content-type")
        || is("content-range"))
}
