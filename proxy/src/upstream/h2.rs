//! The HTTP/2 codec to upstreams: a try is a stream on one of the core's
//! few connections to the server (`local::h2`), not a connection of its
//! own. The head is the one HTTP/1.1 would send (the same header policy,
//! `H1::write_head`), laid out as HTTP/2 fields; the body streams within
//! the server's windows; the response's head, body and trailers are
//! relayed as they come. Over HTTP/2 to the client the request body and
//! the response flow at once (gRPC's bidirectional calls); over HTTP/1
//! the request goes whole first, as for an HTTP/1.1 upstream.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use ringside_http::h2::client::{ClientConn, ClientStream, FieldList, Lost, Response, StreamError};
use ringside_http::h2::hpack::Encoder;
use ringside_http::{Body, BodyKind, Error, Exchange, Kind, Method};
use ringside_runtime::task::{self, Either};

use super::codec::{Codec, Tried};
use super::h1::H1;
use super::headers::{skip_response_header, ReqBody};
use super::io::{Buf, UpSock};
use super::local::{Chosen, Local};
use super::too_early;

/// Tries on other connections of the same server when one refuses the
/// stream unprocessed (a GOAWAY raced it), before the request fails.
/// Each try is safe (the server processed nothing of it), and a server
/// that ends its connections every N streams while more than N are in
/// flight can refuse the same stream several times in a row: at 3 tries
/// one request failed in about 17 runs of a test that sends 6,000 to an
/// origin saying GOAWAY every 50 streams with 100 in flight. The bound
/// only stops a server that refuses everything.
const REFUSED_TRIES: u32 = 8;

/// HTTP/2 to the upstream of a route: the HTTP/1 codec's route and header
/// policy, another wire.
pub struct H2<'a> {
    pub h1: H1<'a>,
    /// The request is gRPC: `te: trailers` goes upstream.
    pub grpc: bool,
    /// gRPC's own deadline (`grpc-timeout`), capping the upstream's.
    pub deadline: Option<Instant>,
    /// The Via value added to responses that come over HTTP/2 (`2 NAME`);
    /// one that comes over HTTP/1.1 takes `h1`'s.
    pub via: Option<&'a [u8]>,
}

impl Codec for H2<'_> {
    fn replayable(&self, ex: &Exchange<'_>) -> bool {
        self.h1.replayable(ex)
    }

    fn admit(&self, ex: &Exchange<'_>) -> Result<(), Error> {
        self.h1.admit(ex)
    }

    /// A server of an `auto` upstream that chose HTTP/1.1: a connection
    /// of its own, as the HTTP/1 codec takes.
    async fn exchange(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        sock: UpSock,
        reused: bool,
        may_retry: bool,
    ) -> Result<Tried, Error> {
        self.h1
            .exchange(ex, up, chosen, sock, reused, may_retry)
            .await
    }

    fn multiplexed(&self, up: &RefCell<Local>, chosen: &Chosen) -> bool {
        !up.borrow().http1(chosen)
    }

    async fn exchange_shared(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        may_retry: bool,
    ) -> Result<Tried, Error> {
        match self.over_h2(ex, up, chosen, may_retry).await {
            // `auto`, and the server chose HTTP/1.1 while this try waited
            // for the connection: nothing was sent, and the try goes over
            // HTTP/1.1 as the server's later ones do.
            Err(e) if e.kind() == Kind::ConnectFailed && up.borrow().http1(chosen) => {
                self.over_http1(ex, up, chosen, may_retry).await
            }
            r => r,
        }
    }
}

impl H2<'_> {
    /// A try that began as a stream going over an HTTP/1.1 connection:
    /// `acquire` counts it in flight again and settles its own failures,
    /// so the loop's count is given back first (and taken again when
    /// acquire failed) for the loop's release to balance.
    async fn over_http1(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        may_retry: bool,
    ) -> Result<Tried, Error> {
        up.borrow_mut().abandon(chosen);
        let check = !self.h1.replayable(ex);
        let (sock, reused) = match super::acquire::acquire(up, chosen, false, check).await {
            Ok(got) => got,
            Err(e) => {
                up.borrow_mut().begin(chosen);
                return Err(e);
            }
        };
        self.exchange(ex, up, chosen, UpSock::new(sock), reused, may_retry)
            .await
    }

    async fn over_h2(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        may_retry: bool,
    ) -> Result<Tried, Error> {
        let (timeouts, retry, tls) = {
            let l = up.borrow();
            (
                l.shared.cfg.timeouts,
                l.shared.cfg.retry,
                l.shared.tls.is_some(),
            )
        };
        let body = match ex.body_kind() {
            BodyKind::Empty | BodyKind::Length(0) => None,
            BodyKind::Length(n) => Some(Some(n)),
            BodyKind::Stream => Some(None),
        };
        let mut text = Buf::take();
        self.h1
            .write_head(ex, chosen, ReqBody::None, false, &mut text);
        // Asked for, trailers go upstream in `te` and the body is
        // streamed so that they can follow it; otherwise a sized body
        // keeps its length (trailers after it are not relayed).
        let wants_trailers = self.grpc || ex.asks_trailers();
        let scheme: &[u8] = if tls { b"https" } else { b"http" };
        let cap = |d: Instant| self.deadline.map_or(d, |g| g.min(d));
        let mut relay = Relay {
            phase: Phase::Head,
            head_deadline: cap(Instant::now() + timeouts.response_head),
            idle: timeouts.body_idle,
            cap: self.deadline,
            via: self.via,
            wants_trailers,
            retry_status: may_retry,
            replayable: self.h1.replayable(ex),
            retry,
            timer: std::cell::Cell::new(None),
        };
        // A stream the server never processed (REFUSED_STREAM, or past
        // its GOAWAY's last stream) goes again on another connection, as
        // long as the client has had nothing of the response and the
        // request body taken from it so far is kept (up to `REPLAY`).
        let mut sent = Sent::new(body.is_some());
        let mut refused = 0;
        loop {
            let conn = up.borrow_mut().h2_conn(chosen);
            let Some(conn) = conn else {
                return Err(Error::new(Kind::NoServer, "the server left the upstream"));
            };
            let head = |enc: &mut Encoder, out: &mut BytesMut| {
                encode_head(&text[..], scheme, body, wants_trailers, enc, out)
            };
            let opened = match conn.open(head, body.is_none()).await {
                Ok(s) => Opened { stream: s, conn },
                Err(StreamError::Refused) if refused < REFUSED_TRIES => {
                    refused += 1;
                    continue;
                }
                Err(e) => return Err(stream_error(e, false)),
            };
            let r = attempt(ex, &opened, &mut relay, &mut sent, |relay| {
                relay.head_deadline = cap(Instant::now() + timeouts.response_head);
            })
            .await;
            match r {
                Err(_)
                    if opened.stream.refused()
                        && sent.whole
                        && !ex.responded()
                        && refused < REFUSED_TRIES =>
                {
                    refused += 1;
                    relay.phase = Phase::Head;
                }
                r => return r,
            }
        }
    }
}

/// The request body sent on a stream, kept while it is small enough to
/// send again should the server refuse the stream unprocessed.
struct Sent {
    kept: BytesMut,
    /// Every piece so far is in `kept`.
    whole: bool,
    /// The client's body has ended (all of it was read).
    ended: bool,
    /// The trailer section it ended with, sent as the request's end.
    /// (Boxed: this struct lives in the forward loop's future, whose
    /// size every connection's task takes.)
    trailers: Option<Box<FieldList>>,
}

/// The most request body kept for a stream that may have to go again.
const REPLAY: usize = 64 * 1024;

impl Sent {
    fn new(body: bool) -> Sent {
        Sent {
            kept: BytesMut::new(),
            whole: true,
            ended: !body,
            trailers: None,
        }
    }

    fn keep(&mut self, piece: &[u8]) {
        if self.whole && self.kept.len() + piece.len() <= REPLAY {
            self.kept.extend_from_slice(piece);
        } else {
            self.whole = false;
            self.kept = BytesMut::new();
        }
    }
}

/// One stream's try: what was kept of the body first, then the rest of
/// it and the response. `sent_all`: called once the request is whole when
/// it went before the response was read.
async fn attempt(
    ex: &mut Exchange<'_>,
    opened: &Opened,
    relay: &mut Relay<'_>,
    sent: &mut Sent,
    sent_all: impl FnOnce(&mut Relay<'_>),
) -> Result<Tried, Error> {
    let stream = &opened.stream;
    if !sent.ended || !sent.kept.is_empty() {
        // Nothing of the body is taken from the client for a connection
        // that never comes.
        opened.connected().await?;
        let mut again = &sent.kept[..];
        if !again.is_empty() {
            stream
                .send_data(&mut again, false)
                .await
                .map_err(|e| stream_error(e, false))?;
        }
        if sent.ended {
            end_request(stream, sent).await?;
        } else if ex.duplex() {
            if let Some(t) = duplex(ex, stream, relay, sent).await? {
                return Ok(t);
            }
        } else {
            send_body(ex, stream, sent).await?;
            sent_all(relay);
        }
    }
    while relay.phase != Phase::Done {
        // A client that resets its stream while the server is quiet (a
        // long gRPC stream) ends the upstream's stream at once, not at the
        // server's next message.
        let ev = match task::select(relay.next(stream), ex.client_gone()).await {
            Either::Left(ev) => ev?,
            Either::Right(()) => {
                return Err(Error::client_gone(
                    "waiting for the upstream",
                    std::io::ErrorKind::ConnectionReset.into(),
                ))
            }
        };
        if let Some(t) = relay.step(ex, stream, ev).await? {
            return Ok(t);
        }
    }
    Ok(Tried::Done(None))
}

/// A stream and the connection it is on.
struct Opened {
    stream: ClientStream,
    conn: Rc<ClientConn>,
}

impl Opened {
    /// Waits until the connection is made, so that no byte of the body is
    /// taken from the client for a connection that never comes.
    async fn connected(&self) -> Result<(), Error> {
        self.conn
            .connected()
            .await
            .map_err(|l| stream_error(StreamError::Lost(l), false))
    }
}

/// The HTTP/1.1 head the header policy wrote, as HTTP/2 fields: the
/// request line and Host become pseudo-fields, names go lower case.
fn encode_head(
    text: &[u8],
    scheme: &[u8],
    body: Option<Option<u64>>,
    trailers: bool,
    enc: &mut Encoder,
    out: &mut BytesMut,
) {
    let mut lines = Lines(text);
    let line = lines.next().unwrap_or_default();
    let mut parts = line.splitn(3, |&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or(b"/");
    // `write_request_head` writes Host first, after the request line.
    let host = lines
        .next()
        .and_then(split)
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"host"))
        .map_or(&b""[..], |(_, v)| v);
    enc.field(b":method", method, out);
    enc.field(b":scheme", scheme, out);
    enc.literal(b":path", target, out);
    enc.field(b":authority", host, out);
    let mut lower = [0u8; 128];
    for (name, value) in lines.filter_map(split) {
        let Some(l) = lower.get_mut(..name.len()) else {
            continue;
        };
        l.copy_from_slice(name);
        l.make_ascii_lowercase();
        enc.field(l, value, out);
    }
    if let Some(Some(n)) = body {
        let mut d = [0u8; 20];
        enc.field(
            b"content-length",
            ringside_http::grammar::decimal(n, &mut d),
            out,
        );
    }
    if trailers {
        enc.field(b"te", b"trailers", out);
    }
}

/// A header line's name and value.
fn split(l: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = memchr::memchr(b':', l)?;
    Some((&l[..colon], l[colon + 1..].trim_ascii()))
}

/// The lines of a head, without their CR LF. (`memchr`: every proxied
/// request's head is read here once more, and a byte-at-a-time split of
/// it cost more than the HPACK encoding of its fields.)
struct Lines<'a>(&'a [u8]);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.0.is_empty() {
            return None;
        }
        let (line, rest) = match memchr::memchr(b'\n', self.0) {
            Some(i) => (&self.0[..i], &self.0[i + 1..]),
            None => (self.0, &b""[..]),
        };
        self.0 = rest;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}

/// Sends the rest of the request body before the response is read.
async fn send_body(
    ex: &mut Exchange<'_>,
    stream: &ClientStream,
    sent: &mut Sent,
) -> Result<(), Error> {
    loop {
        let Some(data) = ex.read_body().await? else {
            sent.ended = true;
            sent.trailers = ex.take_request_trailers().map(Box::new);
            return end_request(stream, sent).await;
        };
        sent.keep(&data);
        stream
            .send_data(&mut &data[..], false)
            .await
            .map_err(|e| stream_error(e, false))?;
    }
}

/// Ends the request: with the client's trailers (a HEADERS frame with
/// END_STREAM) where it sent some, else an empty DATA frame that ends it.
async fn end_request(stream: &ClientStream, sent: &Sent) -> Result<(), Error> {
    match &sent.trailers {
        Some(t) => stream.send_trailers(t),
        None => stream.send_data(&mut &[][..], true).await,
    }
    .map_err(|e| stream_error(e, false))
}

/// The request body and the response at once: whichever comes first is
/// acted on. Every wait here is cancel-safe (what arrives stays where it
/// is; a send resumes where it stopped), so a server that answers before
/// it reads the body, or stops opening the window, is relayed meanwhile.
async fn duplex(
    ex: &mut Exchange<'_>,
    stream: &ClientStream,
    relay: &mut Relay<'_>,
    sent: &mut Sent,
) -> Result<Option<Tried>, Error> {
    let mut pending: Option<Bytes> = None;
    let mut at = 0;
    loop {
        if relay.phase == Phase::Done {
            return Ok(None);
        }
        let got = match &pending {
            None => match task::select(ex.read_body(), relay.next(stream)).await {
                Either::Left(piece) => {
                    let piece = piece?;
                    sent.ended = piece.is_none();
                    if sent.ended {
                        sent.trailers = ex.take_request_trailers().map(Box::new);
                    }
                    let piece = piece.unwrap_or_default();
                    sent.keep(&piece);
                    pending = Some(piece);
                    at = 0;
                    continue;
                }
                Either::Right(ev) => ev,
            },
            Some(piece) => {
                let mut rest = &piece[at..];
                let end = sent.ended && sent.trailers.is_none();
                let r = task::select(stream.send_data(&mut rest, end), relay.next(stream)).await;
                at = piece.len() - rest.len();
                match r {
                    Either::Left(r) => {
                        r.map_err(|e| stream_error(e, ex.responded()))?;
                        pending = None;
                        if sent.ended {
                            if let Some(t) = &sent.trailers {
                                stream
                                    .send_trailers(t)
                                    .map_err(|e| stream_error(e, ex.responded()))?;
                            }
                            return Ok(None);
                        }
                        continue;
                    }
                    Either::Right(ev) => ev,
                }
            }
        };
        if let Some(t) = relay.step(ex, stream, got?).await? {
            return Ok(Some(t));
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Body,
    Done,
}

enum Event {
    Head(Response),
    Data(Bytes),
    End,
}

/// Where the response's relay stands.
struct Relay<'a> {
    phase: Phase,
    head_deadline: Instant,
    idle: Duration,
    cap: Option<Instant>,
    via: Option<&'a [u8]>,
    wants_trailers: bool,
    retry_status: bool,
    /// The request may reach a server twice (`super::too_early`).
    replayable: bool,
    retry: super::settings::RetryPolicy,
    /// The deadline's timer, kept across the waits of this exchange.
    timer: std::cell::Cell<Option<task::Sleep>>,
}

impl Relay<'_> {
    /// The next thing the server sent, within its deadline.
    async fn next(&self, stream: &ClientStream) -> Result<Event, Error> {
        if self.phase == Phase::Body && stream.has_data() {
            return Ok(
                match stream.data().await.map_err(|e| stream_error(e, true))? {
                    Some(b) => Event::Data(b),
                    None => Event::End,
                },
            );
        }
        let deadline = match self.phase {
            Phase::Head => self.head_deadline,
            _ => {
                let d = Instant::now() + self.idle;
                self.cap.map_or(d, |g| g.min(d))
            }
        };
        let responded = self.phase != Phase::Head;
        let wait = async {
            match self.phase {
                Phase::Head => stream.head().await.map(Event::Head),
                _ => stream
                    .data()
                    .await
                    .map(|d| d.map_or(Event::End, Event::Data)),
            }
        };
        match task::timeout_at_with(&self.timer, deadline, wait).await {
            Ok(r) => r.map_err(|e| stream_error(e, responded)),
            Err(_) if self.phase == Phase::Head => Err(Error::new(
                Kind::UpstreamTimeout,
                "no response head in time",
            )),
            Err(_) => Err(Error::new(Kind::UpstreamTimeout, "response body stalled")),
        }
    }

    /// Relays one thing the server sent; `Some` ends the try early.
    async fn step(
        &mut self,
        ex: &mut Exchange<'_>,
        stream: &ClientStream,
        ev: Event,
    ) -> Result<Option<Tried>, Error> {
        match ev {
            Event::Head(r) if (100..200).contains(&r.status) => {
                if r.status == 101 {
                    return Err(invalid("101 over HTTP/2"));
                }
                let hs = r.fields.iter().filter(|(n, _)| relayed(n));
                ex.send_interim(r.status, hs).await?;
            }
            Event::Head(r) => {
                let status = r.status;
                if self.retry.on.status(status) && self.retry_status && !ex.responded() {
                    return Ok(Some(Tried::RetryStatus(status)));
                }
                if too_early::again_after_handshake(ex, status, || self.replayable) {
                    return Ok(Some(Tried::TooEarly));
                }
                let length = r
                    .fields
                    .get("content-length")
                    .and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok());
                let framing = match length {
                    // A HEAD's answer ends with its head but keeps the
                    // length a GET would have.
                    _ if stream.ended_with_head() && ex.method() != Method::Head => Body::Sized(0),
                    Some(n) if !self.wants_trailers || ex.method() == Method::Head => {
                        Body::Sized(n)
                    }
                    _ => Body::Stream,
                };
                if ex.capturing() {
                    ex.capture_date(r.fields.get("date"));
                }
                let hs = r
                    .fields
                    .iter()
                    .filter(|(n, _)| relayed(n))
                    .chain(self.via.map(|v| (&b"Via"[..], v)));
                ex.start_from(status, hs, framing)?;
                self.phase = Phase::Body;
            }
            Event::Data(b) => {
                ex.write_body(&b).await?;
                if !stream.has_data() {
                    ex.flush().await?;
                }
            }
            Event::End => {
                self.phase = Phase::Done;
                match stream.trailers() {
                    Some(t) => ex.finish_with_trailers(t.iter()).await?,
                    None if ex.streaming() => ex.finish().await?,
                    None => ex
                        .finish()
                        .await
                        .map_err(|_| invalid("the body ended short of its content-length"))?,
                }
            }
        }
        Ok(None)
    }
}

/// Whether a response field goes on to the client: HTTP/2 has no
/// Connection header, so only the fields never relayed are left out.
fn relayed(name: &[u8]) -> bool {
    let none = ringside_http::grammar::ConnectionTokens::from_values(std::iter::empty());
    !skip_response_header(name, &none, false)
}

fn invalid(why: &'static str) -> Error {
    Error::new(Kind::InvalidResponse, why)
}

/// What a stream's failure is to the forward loop. `responded`: the
/// client has the response head already.
fn stream_error(e: StreamError, responded: bool) -> Error {
    let why = e.to_string();
    match e {
        StreamError::Lost(Lost::Connect | Lost::Http1) => Error::new(Kind::ConnectFailed, why),
        StreamError::Lost(Lost::ConnectTimeout) => Error::new(Kind::ConnectTimeout, why),
        StreamError::Refused if !responded => Error::new(Kind::Stale, why),
        _ => invalid("the HTTP/2 stream failed").because(std::io::Error::other(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringside_http::h2::hpack::Decoder;

    fn fields(text: &[u8], body: Option<Option<u64>>, trailers: bool) -> Vec<(String, String)> {
        let (mut enc, mut out) = (Encoder::new(), BytesMut::new());
        encode_head(text, b"https", body, trailers, &mut enc, &mut out);
        let mut got = Vec::new();
        Decoder::new(4096)
            .decode(&out, &mut |n, v| {
                got.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ));
                true
            })
            .unwrap();
        got
    }

    #[test]
    fn the_http1_head_becomes_pseudo_fields_and_lower_case_fields() {
        let text = b"POST /a?b=1 HTTP/1.1\r\nHost: example.com:8443\r\n\
            X-Forwarded-For: 192.0.2.7\r\nAccept:  */*  \r\nbroken line\r\n\r\n";
        let want = [
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/a?b=1"),
            (":authority", "example.com:8443"),
            ("x-forwarded-for", "192.0.2.7"),
            ("accept", "*/*"),
            ("content-length", "5"),
            ("te", "trailers"),
        ];
        let got = fields(text, Some(Some(5)), true);
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_head_without_its_last_line_end_keeps_its_last_field() {
        let got = fields(b"GET / HTTP/1.1\nHost: h\nVia: 1.1 x", None, false);
        assert_eq!(
            got.last().unwrap(),
            &("via".to_string(), "1.1 x".to_string())
        );
        assert_eq!(got.len(), 5);
    }
}
