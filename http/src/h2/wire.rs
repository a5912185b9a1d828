//! One HTTP/2 stream as the neutral [`Exchange`](crate::Exchange) writes
//! to it: the request body taken from the DATA the connection task
//! gathered (its credit given back as it is taken), and the response
//! HPACK-encoded and framed straight into the connection's output, within
//! the client's windows.
//!
//! What each body path costs: a buffered response (`Exchange::send`) is
//! copied once, into its DATA frame in the output. A file body is read
//! from the page cache straight into the output behind its frames'
//! headers, up to 512 KiB a `preadv` (one copy; see `file` for why not
//! splice), and a proxied body is read from the upstream socket and
//! copied into frames.

use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::task::Poll;

use bytes::{Bytes, BytesMut};
use ringside_runtime::link::Link;
use ringside_runtime::net::TcpStream;

use super::frame::{self, Reason};
use super::state::{State, WRITE_HIGH};
use super::Conn;
use crate::error::{Error, Kind};
use crate::message::{Framing, HeaderLine};

/// The most a proxied body is read ahead of the client's window.
const PIECE: usize = 64 * 1024;
/// The output a file body fills up to: its reads and sends are batched
/// this large (see `file` for why). Measured, 1 MiB over one connection
/// (h2load -c1 -m1, alternating, medians of 3): 64 KiB batches 2,174
/// req/s at 413 µs of CPU, 256 KiB 2,104 at 423, 512 KiB 3,122 at 267,
/// 1 MiB 2,714 at 282; HTTP/1.1's sendfile 3,196 at 159.
const FILE_HIGH: usize = 512 * 1024;
/// Streams on a core that may batch at once: each may hold about twice
/// `FILE_HIGH` (the send under way and the next batch), so this bounds
/// the core's memory for them; streams beyond it batch `WRITE_HIGH`.
const BATCHING_MAX: usize = 8;

thread_local! {
    static BATCHING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One of the core's `BATCHING_MAX` places for a large file batch, held
/// while a file body is written.
struct Batching;

impl Batching {
    fn enter() -> Option<Batching> {
        BATCHING.with(|b| {
            (b.get() < BATCHING_MAX).then(|| {
                b.set(b.get() + 1);
                Batching
            })
        })
    }
}

impl Drop for Batching {
    fn drop(&mut self) {
        BATCHING.with(|b| b.set(b.get() - 1));
    }
}

pub(crate) struct Wire<'a> {
    pub link: &'a Link,
    conn: &'a Rc<Conn>,
    /// A task of its own finishes the stream: dropping this leaves it be.
    handed_off: bool,
    key: usize,
    id: u32,
    is_head: bool,
    /// A head was sent (interim ones aside).
    responded: bool,
    /// Body bytes still to come of a sized response.
    left: Option<u64>,
    /// Request body bytes taken so far, against `max_body`.
    received: u64,
    expect_continue: bool,
    sent_continue: bool,
}

fn gone() -> Error {
    Error::client_gone("sending the response", io::ErrorKind::BrokenPipe.into())
}

impl<'a> Wire<'a> {
    pub(crate) fn new(
        conn: &'a Rc<Conn>,
        key: usize,
        id: u32,
        is_head: bool,
        expect: bool,
    ) -> Self {
        Wire {
            link: &conn.link,
            conn,
            handed_off: false,
            key,
            id,
            is_head,
            responded: false,
            left: None,
            received: 0,
            expect_continue: expect,
            sent_continue: false,
        }
    }

    /// A handle on a tunnelled stream's output, with no say over its end.
    pub(crate) fn tunnel_end(conn: &'a Rc<Conn>, key: usize, id: u32) -> Self {
        let mut w = Wire::new(conn, key, id, false, false);
        w.handed_off = true;
        w.responded = true;
        w
    }

    /// Answers an extended CONNECT (RFC 8441) with 200 and hands over the
    /// stream as a tunnel. The fields of the upstream's 101 that name the
    /// switch on HTTP/1.1 are left out: the stream's 200 is the switch.
    pub(crate) fn upgrade<'h>(
        &mut self,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) -> super::tunnel::Tunnel {
        let kept = headers.filter(|(n, _)| !n.eq_ignore_ascii_case(b"sec-websocket-accept"));
        self.write_head(200, kept, None, Framing::Stream, None);
        super::tunnel::Tunnel::new(self.conn.clone(), self.key, self.id)
    }

    /// Frames what the windows allow of `data` once there is credit;
    /// returns how much.
    pub(crate) async fn send_some(&self, data: &[u8]) -> Result<usize, Error> {
        if data.is_empty() {
            return Ok(0);
        }
        self.credit::<WRITE_HIGH>().await?;
        self.with(|st| self.put_data(st, data, false))
            .ok_or_else(gone)
    }

    pub fn expects_continue(&self) -> bool {
        self.expect_continue && !self.sent_continue
    }

    /// Runs `f` on the state if this stream is still open there.
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        let mut st = self.conn.st.borrow_mut();
        st.stream(self.key, self.id)?;
        st.out_ready();
        Some(f(&mut st))
    }

    /// The next piece of the request body, `None` at its end.
    pub async fn read_body(&mut self, responded: bool) -> Result<Option<Bytes>, Error> {
        if self.expects_continue() && !responded {
            self.sent_continue = true;
            self.interim_head(100, std::iter::empty());
        }
        let t = self.link.cfg.timeouts.body_read;
        let next = poll_fn(|cx| {
            let mut st = self.conn.st.borrow_mut();
            let Some(s) = st.stream(self.key, self.id) else {
                return Poll::Ready(Err(Error::client_gone(
                    "reading the body",
                    io::ErrorKind::ConnectionReset.into(),
                )));
            };
            if !s.body.is_empty() {
                let piece = s.body.split().freeze();
                let n = piece.len() as u32;
                st.out_ready();
                st.credit_stream(self.key, n);
                return Poll::Ready(Ok(Some(piece)));
            }
            if s.remote_ended || s.reset.is_some() {
                return Poll::Ready(Ok(None));
            }
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        });
        let piece = match ringside_runtime::task::timeout(t, next).await {
            Err(_) => return Err(Error::new(Kind::ClientTimeout, "request body too slow")),
            Ok(r) => r?,
        };
        if let Some(p) = &piece {
            self.received += p.len() as u64;
            if self.received > self.link.cfg.limits.max_body {
                return Err(Error::new(Kind::BodyTooLarge, "request body over max_body"));
            }
        }
        Ok(piece)
    }

    /// The request's trailers, once its body ended with them.
    pub fn take_trailers(&mut self) -> Option<crate::h2::client::FieldList> {
        self.with(|st| st.stream(self.key, self.id).and_then(|s| s.trailers.take()))
            .flatten()
            .map(|b| *b)
    }

    /// HPACK-encodes a head into the output: `end` ends the stream.
    fn encode_head<'h>(
        &self,
        st: &mut State,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        extra: &[(&[u8], &[u8])],
        end: bool,
    ) {
        // Room for the HEADERS frame's header, written when the block's
        // length is known.
        let start = st.out.len();
        st.out.extend_from_slice(&[0; frame::HEADER_LEN]);
        let State { encoder, out, .. } = st;
        encoder.begin_block(out);
        encoder.status(status, out);
        let mut lower = [0u8; 64];
        let mut put = |name: &[u8], value: &[u8]| {
            let Some(name) = lowercase(name, &mut lower) else {
                return;
            };
            if !crate::hop::is_hop_by_hop(name) && valid_value(value) {
                encoder.field(name, value, out);
            }
        };
        for (name, value) in headers {
            put(name, value);
        }
        for (name, value) in extra {
            put(name, value);
        }
        let max = st.peer_max_frame;
        frame::frame_block(&mut st.out, start, self.id, end, max);
        st.wake_task();
    }

    fn interim_head<'h>(&self, status: u16, headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) {
        self.with(|st| self.encode_head(st, status, headers, &[], false));
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
        let ends = match framing {
            Framing::Length(n) => {
                self.left = Some(n);
                n == 0 || self.is_head
            }
            Framing::Stream => self.is_head,
            Framing::None => true,
        };
        crate::fields::with_framed_head_fields(added, given, framing, |extra| {
            self.with(|st| {
                self.encode_head(st, status, headers, extra, ends);
                if ends {
                    self.ended(st);
                }
            });
        });
    }

    /// This side of the stream ended: one flood unit back.
    fn ended(&self, st: &mut State) {
        if let Some(s) = st.stream(self.key, self.id) {
            s.local_ended = true;
        }
        st.served();
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
        self.with(|st| self.encode_head(st, status, headers, &[], false))
            .ok_or_else(gone)
    }

    /// The body of a response buffered whole: framed into the output as
    /// far as the windows allow now; the rest waits for credit.
    pub fn buffer_body(&mut self, body: &[u8]) {
        let sent = self
            .with(|st| self.put_data(st, body, true))
            .unwrap_or(body.len());
        if sent < body.len() {
            // Rare (a window smaller than a small page): finish it in a
            // task of the connection's own.
            let rest = Bytes::copy_from_slice(&body[sent..]);
            let conn = self.conn.clone();
            self.handed_off = true;
            let (key, id) = (self.key, self.id);
            ringside_runtime::task::spawn(async move {
                let mut w = Wire::new(&conn, key, id, false, false);
                w.responded = true;
                let _ = w.send_data(&rest, true).await;
            });
        }
    }

    /// Frames as much of `data` as the windows allow into the output now;
    /// returns how much. `end` ends the stream with the last of it.
    fn put_data(&self, st: &mut State, data: &[u8], end: bool) -> usize {
        let max = st.peer_max_frame;
        let conn_send = st.conn_send;
        let Some(s) = st.stream(self.key, self.id) else {
            return data.len();
        };
        if data.is_empty() {
            if end {
                frame::put_data(&mut st.out, self.id, &[], true);
                self.ended(st);
                st.wake_task();
            }
            return 0;
        }
        let n = data.len().min(s.send_window.min(conn_send).max(0) as usize);
        s.send_window -= n as i64;
        let mut at = 0;
        while at < n {
            let piece = (n - at).min(max);
            at += piece;
            let last = end && at == data.len();
            frame::put_data(&mut st.out, self.id, &data[at - piece..at], last);
        }
        st.conn_send -= n as i64;
        st.data_sent(n.div_ceil(max));
        if end && n == data.len() {
            self.ended(st);
        }
        st.wake_task();
        n
    }

    /// Waits until the stream may send (window and room in the output),
    /// or fails: the stream reset, the connection gone, or the send
    /// timeout passed (a client that never opens its window loses the
    /// stream as a slow reader loses an HTTP/1.1 connection).
    // `HIGH` is a constant, not an argument: every write future of the
    // exchange holds this one, and every connection's task their largest.
    async fn credit<const HIGH: usize>(&self) -> Result<usize, Error> {
        // Most calls find credit at once: no timer is set for those.
        let poll = |cx: &mut std::task::Context<'_>| {
            let mut st = self.conn.st.borrow_mut();
            let conn_send = st.conn_send;
            let full = st.out.len() >= HIGH;
            let Some(s) = st.stream(self.key, self.id) else {
                return Poll::Ready(Err(gone()));
            };
            if s.reset.is_some() {
                return Poll::Ready(Err(gone()));
            }
            let window = s.send_window.min(conn_send);
            if window > 0 && !full {
                return Poll::Ready(Ok(window as usize));
            }
            if full {
                st.room_waiters.push(cx.waker().clone());
            } else {
                s.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        };
        let now = poll_fn(|cx| {
            Poll::Ready(match poll(cx) {
                Poll::Ready(r) => Some(r),
                Poll::Pending => None,
            })
        })
        .await;
        if let Some(r) = now {
            return r;
        }
        let t = self.link.cfg.timeouts.send;
        match ringside_runtime::task::timeout(t, poll_fn(poll)).await {
            Ok(r) => r,
            Err(_) => {
                self.with(|st| st.reset(self.id, Reason::CANCEL));
                Err(Error::client_gone(
                    "sending the response",
                    io::ErrorKind::TimedOut.into(),
                ))
            }
        }
    }

    async fn send_data(&mut self, mut data: &[u8], end: bool) -> Result<(), Error> {
        loop {
            self.credit::<WRITE_HIGH>().await?;
            let n = self
                .with(|st| self.put_data(st, data, end))
                .ok_or_else(gone)?;
            data = &data[n..];
            if data.is_empty() {
                return Ok(());
            }
        }
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

    pub async fn write_sized(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.is_head {
            return Ok(());
        }
        let end = self.last(data.len() as u64);
        self.send_data(data, end).await
    }

    pub async fn write_stream(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.is_head || data.is_empty() {
            return Ok(());
        }
        self.send_data(data, false).await
    }

    pub fn finish_stream(&mut self) {
        if self.is_head {
            return;
        }
        self.with(|st| self.put_data(st, &[], true));
    }

    /// Waits until the client resets the stream or the connection ends.
    pub async fn closed(&self) {
        poll_fn(|cx| {
            let mut st = self.conn.st.borrow_mut();
            match st.stream(self.key, self.id) {
                Some(s) if s.reset.is_none() => {
                    s.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
                _ => Poll::Ready(()),
            }
        })
        .await
    }

    /// Ends the stream with a trailer section (a HEADERS frame carrying
    /// END_STREAM), as gRPC's status travels.
    pub fn finish_with_trailers<'h>(
        &mut self,
        trailers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
    ) {
        if self.is_head {
            return;
        }
        self.with(|st| {
            let start = st.out.len();
            st.out.extend_from_slice(&[0; frame::HEADER_LEN]);
            let State { encoder, out, .. } = st;
            encoder.begin_block(out);
            let mut lower = [0u8; 64];
            for (name, value) in trailers {
                let Some(name) = lowercase(name, &mut lower) else {
                    continue;
                };
                if !crate::hop::is_hop_by_hop(name) && valid_value(value) && name[0] != b':' {
                    encoder.field(name, value, out);
                }
            }
            let max = st.peer_max_frame;
            frame::frame_block(&mut st.out, start, self.id, true, max);
            self.ended(st);
            st.wake_task();
        });
    }

    /// A file's bytes, read straight into the output behind each frame's
    /// header, a batch of frames a read (see `file`).
    pub async fn write_file(
        &mut self,
        file: &std::fs::File,
        mut offset: u64,
        mut len: u64,
    ) -> Result<(), Error> {
        let batch = Batching::enter();
        let high = if batch.is_some() {
            FILE_HIGH
        } else {
            WRITE_HIGH
        };
        while len > 0 {
            let window = if batch.is_some() {
                self.credit::<FILE_HIGH>().await?
            } else {
                self.credit::<WRITE_HIGH>().await?
            };
            let r = self.with(|st| {
                let max = st.peer_max_frame;
                let room = high.saturating_sub(st.out.len()).max(max);
                let n = (len as usize).min(window).min(room);
                let end = self.left == Some(n as u64);
                let got =
                    match super::file::read_frames(&mut st.out, file, offset, n, max, self.id, end)
                    {
                        Ok(0) => return Err(Error::internal("file shorter than its length")),
                        Ok(got) => got,
                        Err(e) => return Err(Error::internal("reading a file").because(e)),
                    };
                if let Some(s) = st.stream(self.key, self.id) {
                    s.send_window -= got as i64;
                }
                st.conn_send -= got as i64;
                st.data_sent(got.div_ceil(max));
                if end && got == n {
                    self.ended(st);
                }
                st.wake_task();
                Ok(got)
            });
            let got = r.ok_or_else(gone)??;
            offset += got as u64;
            len -= got as u64;
            self.last(got as u64);
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
            self.send_data(&buf, end)
                .await
                .map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e.to_string()))?;
        }
        Ok(())
    }

    /// A refused request: its status and a short page, then the stream
    /// ends (the connection goes on). Returns the body's length.
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
        // A stream whose end was sent (a tunnel closed) is left to the
        // drop, which ends it as it should.
        let local = self
            .conn
            .st
            .borrow_mut()
            .stream(self.key, self.id)
            .map(|s| s.local_ended);
        if local == Some(true) {
            return;
        }
        self.with(|st| st.reset(self.id, Reason::INTERNAL_ERROR));
    }
}

impl Drop for Wire<'_> {
    /// The stream's task is done with it: a response left unfinished is
    /// reset, and a request body never read to its end is read on and
    /// thrown away, up to a bound, or cut off with NO_ERROR (RFC 9113
    /// §8.1) past it (`State::discard`).
    fn drop(&mut self) {
        if self.handed_off {
            return;
        }
        let mut st = self.conn.st.borrow_mut();
        let Some(s) = st.stream(self.key, self.id) else {
            return;
        };
        let (local, remote) = (s.local_ended, s.remote_ended);
        if !local {
            st.reset(self.id, Reason::INTERNAL_ERROR);
        } else if !remote {
            st.discard(self.key);
        } else {
            st.remove(self.key);
        }
    }
}

/// `name` in lowercase, as HTTP/2 wants; `None` for one too long to be a
/// field a handler means (it is left out).
pub(crate) fn lowercase<'n>(name: &'n [u8], scratch: &'n mut [u8; 64]) -> Option<&'n [u8]> {
    if !name.iter().any(u8::is_ascii_uppercase) {
        return Some(name);
    }
    let out = scratch.get_mut(..name.len())?;
    for (o, b) in out.iter_mut().zip(name) {
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

pub(crate) fn valid_value(v: &[u8]) -> bool {
    !crate::grammar::has_nul_cr_lf(v)
}

#[cfg(test)]
mod tests {
    use super::{Batching, BATCHING_MAX};

    #[test]
    fn batching_places_are_bounded_and_given_back() {
        let held: Vec<_> = (0..BATCHING_MAX).map(|_| Batching::enter()).collect();
        assert!(held.iter().all(Option::is_some));
        assert!(
            Batching::enter().is_none(),
            "one past the bound batches small"
        );
        drop(held);
        assert!(Batching::enter().is_some());
    }
}
