//! One client connection's loop: take requests, send them, read and count
//! the responses, reconnect when needed.
//!
//! Per request the hot path makes one `send` (the prebuilt request bytes,
//! copied into a reused buffer; with `--pipeline N`, N requests in one
//! `send`) and as many `recv`s as the response needs, usually one, into a
//! reused 64 KiB buffer; responses are parsed in place (see
//! [`crate::response`]) and only counted. Nothing is allocated per request.
//! On io_uring each of these is one submission entry, and the core's
//! runtime submits the entries of all its connections with one
//! `io_uring_enter` per loop turn.
//!
//! Over https the same loop runs on a `Stream::Tls` (see [`crate::tls`]):
//! the request is encrypted into the connection's own record buffer and
//! sent with one `send`, and the records of each `recv` are decrypted and
//! their plaintext copied once, into the response buffer. The connect time
//! then includes the handshake, as in ab.
//!
//! # Outcomes
//! Every request taken ends as a complete response or as one failure (see
//! [`crate::stats`]). When a connection breaks with requests outstanding:
//! - if it had already carried a response, and it closed (EOF, reset, a
//!   failed send) before any byte of the next one, the server closed it
//!   between responses: the outstanding requests never reached it, and are
//!   sent again on a new connection, not counted (ab does the same);
//! - otherwise the first outstanding request fails (Connect, Receive or
//!   Exception), and the rest, which the server cannot have answered, are
//!   sent again.
//!
//! Either way each break either retires a request or follows a response,
//! so the loop always progresses.
//!
//! # siege's assets
//! Under `--siege` a page's first response with a status below 300 is
//! kept (the only per-request allocation, once per URL) and read for its
//! assets ([`crate::assets`]); after each fetch of that page, its assets
//! are queued on this connection as tickets of their own (`part` > 0),
//! each a transaction, as siege fetches them after the page.
//!
//! # Times (ab's Connection Times)
//! For a request on a new connection: *connect* is connect(2)'s time,
//! *waiting* from the end of the send to the response's first bytes,
//! *total* from before the connect to the response's end, and *processing*
//! is total less connect. A request on a kept-alive connection has a
//! connect time of 0 and starts at its send.

use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;

use crate::cores::{Core, UNSET};
use crate::rate::Ticket;
use crate::response::{Done, ResponseParser, MAX_HEAD};
use crate::tls::{HandshakeError, TlsStream};
use crate::urls::Target;

/// Receive buffer per connection; at least a maximal response head.
const RECV_BUF: usize = MAX_HEAD;

/// The runtime's timer wheel ticks every millisecond; an open-loop request
/// is sent at the tick before it is due rather than the tick after.
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// Why a connection broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Break {
    Connect,
    Timeout,
    Reset,
    Eof,
    Parse,
    Write,
}

struct Open {
    stream: Stream,
    addr: std::net::SocketAddr,
    /// Responses this connection has carried.
    served: u64,
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Runs one connection until the core's requests are used up.
pub async fn run(core: Rc<Core>) {
    let depth = core.cfg.pipeline;
    let timeout = core.cfg.timeout;
    let mut rbuf: Vec<u8> = Vec::with_capacity(RECV_BUF);
    let mut wbuf: Vec<u8> = Vec::with_capacity(core.max_request * depth);
    let mut batch: Vec<Ticket> = Vec::with_capacity(depth);
    let mut again: VecDeque<Ticket> = VecDeque::with_capacity(depth);
    let mut parser = ResponseParser::new();
    parser.http10_request = core.cfg.http10;
    let mut conn: Option<Open> = None;
    let mut now = Instant::now();
    loop {
        // The batch: requests to send again first, then new ones, all to
        // one address (a pipeline shares a connection).
        batch.clear();
        let Some(first) = again.pop_front().or_else(|| core.tickets.take(now)) else {
            break;
        };
        let addr = core.target(first).addr;
        batch.push(first);
        while batch.len() < depth {
            let Some(t) = again.pop_front().or_else(|| core.tickets.take(now)) else {
                break;
            };
            if core.target(t).addr != addr {
                again.push_front(t);
                break;
            }
            batch.push(t);
        }

        // Open loop: wait until the first request is due, less the timer's
        // granularity (see `crate::rate`: latency is then counted from the
        // actual send, never less than the service time).
        if let Some(due) = first.intended {
            if let Some(wake) = due.checked_sub(TIMER_SLACK).filter(|w| *w > now) {
                monoio::time::sleep_until(wake.into()).await;
            }
        }
        let t_start = Instant::now();

        let reuse = conn.as_ref().is_some_and(|c| c.addr == addr);
        let mut t_conn = t_start;
        if !reuse {
            conn = None;
            let connected =
                monoio::time::timeout(timeout, connect(&core, core.target(first))).await;
            let connected =
                connected.unwrap_or_else(|_| Err(io::Error::from_raw_os_error(libc::ETIMEDOUT)));
            match connected {
                Ok(stream) => {
                    conn = Some(Open {
                        stream,
                        addr,
                        served: 0,
                    });
                    parser.reset();
                    rbuf.clear();
                    t_conn = Instant::now();
                }
                Err(e) => {
                    now = Instant::now();
                    core.stats.borrow_mut().connect_errno = e.raw_os_error();
                    broke(&core, Break::Connect, &batch, false, &mut again);
                    continue;
                }
            }
        }
        let open = conn.as_mut().expect("connected above");
        if parser.want_server != core.wants_server() {
            parser.want_server = core.wants_server();
        }

        // One send for the batch.
        wbuf.clear();
        for t in &batch {
            wbuf.extend_from_slice(&core.target(*t).request);
        }
        let written = monoio::time::timeout(timeout, open.stream.write_all(wbuf)).await;
        let write_ok = match written {
            Ok((res, buf)) => {
                wbuf = buf;
                res.is_ok()
            }
            Err(_) => {
                wbuf = Vec::with_capacity(core.max_request * depth);
                false
            }
        };
        if !write_ok {
            now = Instant::now();
            let started = open.served > 0;
            broke(&core, Break::Write, &batch, started, &mut again);
            conn = None;
            continue;
        }
        let t_written = Instant::now();

        // Read until every response of the batch is in.
        let mut answered = 0;
        let mut pos = 0;
        let mut t_read = t_written;
        let mut t_first: Option<Instant> = None;
        let mut close_after = false;
        let mut failure: Option<Break> = None;
        'read: loop {
            while answered < batch.len() {
                let t = batch[answered];
                let head = core.target(t).head;
                if core.cfg.siege_parser
                    && t.part == 0
                    && parser.in_head()
                    && parser.capture.is_none()
                    && core.shared.assets[core.target_of(t)].get().is_none()
                {
                    parser.capture = Some(Vec::new());
                }
                match parser.parse(&rbuf[pos..], head) {
                    Ok((n, Some(done))) => {
                        pos += n;
                        let first_byte = t_first.take().unwrap_or(t_read);
                        let connect = if reuse || answered > 0 {
                            None
                        } else {
                            Some(t_conn)
                        };
                        let times = Times {
                            start: t_start,
                            connected: connect,
                            written: t_written,
                            first_byte,
                            done: t_read,
                        };
                        core.record_h1(&t, done, &times, &mut parser, &mut again);
                        answered += 1;
                        open.served += 1;
                        if !(done.keep_alive && core.cfg.keepalive) {
                            close_after = true;
                            break 'read;
                        }
                    }
                    Ok((n, None)) => {
                        pos += n;
                        if parser.started() && t_first.is_none() {
                            t_first = Some(t_read);
                        }
                        break;
                    }
                    Err(_) => {
                        failure = Some(Break::Parse);
                        break 'read;
                    }
                }
            }
            if answered == batch.len() {
                break;
            }
            // Keep only what is not consumed; make room for the next read.
            if pos == rbuf.len() {
                rbuf.clear();
                pos = 0;
            } else if rbuf.capacity() - rbuf.len() < RECV_BUF / 4 {
                rbuf.drain(..pos);
                pos = 0;
            }
            let read = monoio::time::timeout(timeout, open.stream.read(rbuf)).await;
            let res = match read {
                Ok((res, buf)) => {
                    rbuf = buf;
                    res
                }
                Err(_) => {
                    rbuf = Vec::with_capacity(RECV_BUF);
                    failure = Some(Break::Timeout);
                    break;
                }
            };
            t_read = Instant::now();
            match res {
                Ok(0) => {
                    if let Some(done) = parser.eof() {
                        let t = batch[answered];
                        let times = Times {
                            start: t_start,
                            connected: if reuse || answered > 0 {
                                None
                            } else {
                                Some(t_conn)
                            },
                            written: t_written,
                            first_byte: t_first.take().unwrap_or(t_read),
                            done: t_read,
                        };
                        core.record_h1(&t, done, &times, &mut parser, &mut again);
                        answered += 1;
                        open.served += 1;
                        close_after = true;
                    } else {
                        failure = Some(Break::Eof);
                    }
                    break;
                }
                Ok(n) => core.stats.borrow_mut().counts.bytes_read += n as u64,
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    failure = Some(Break::Reset);
                    break;
                }
                Err(_) => {
                    failure = Some(Break::Reset);
                    break;
                }
            }
        }
        now = t_read;
        if let Some(kind) = failure {
            let carried = open.served > 0;
            let started = parser.started();
            broke(
                &core,
                kind,
                &batch[answered..],
                carried && !started,
                &mut again,
            );
            parser.reset();
            rbuf.clear();
            conn = None;
        } else if close_after {
            // The server closes, or we asked it to: send any rest again.
            if answered < batch.len() {
                core.stats.borrow_mut().counts.reconnects += 1;
                for t in batch[answered..].iter().rev() {
                    again.push_front(*t);
                }
            }
            rbuf.clear();
            parser.reset();
            conn = None;
        } else if pos == rbuf.len() {
            rbuf.clear();
        } else {
            rbuf.drain(..pos);
        }
    }
}

/// A connection's byte stream: plain TCP or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Stream {
    /// Sends all of `buf`, handing it back for the next send.
    pub(crate) async fn write_all(&mut self, buf: Vec<u8>) -> (io::Result<()>, Vec<u8>) {
        match self {
            Stream::Plain(s) => {
                let (res, buf) = s.write_all(buf).await;
                (res.map(|_| ()), buf)
            }
            Stream::Tls(s) => {
                let res = s.write_all(&buf).await;
                (res, buf)
            }
        }
    }

    /// Reads into `buf`'s spare capacity (plaintext); 0 at the end.
    pub(crate) async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        match self {
            Stream::Plain(s) => {
                let (len, cap) = (buf.len(), buf.capacity());
                let (res, slice) = s.read(buf.slice_mut(len..cap)).await;
                (res, slice.into_inner())
            }
            Stream::Tls(s) => s.read(buf).await,
        }
    }

    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => s.alpn(),
        }
    }
}

/// Opens a connection to `target`: TCP, and for https the TLS handshake,
/// counted (and, the first time, described for the report). A failed
/// handshake's reason is kept once, for the user.
///
/// With `-B` or `-b` the TCP connect goes through [`crate::sock`], which
/// sets them before connect(2) (a blocking connect, bounded by `-s`); the
/// caller bounds the rest by `-s`.
pub(crate) async fn connect(core: &Core, t: &Target) -> io::Result<Stream> {
    let c = &core.cfg;
    let tcp = if c.bind.is_some() || c.window.is_some() {
        TcpStream::from_std(crate::sock::connect(t.addr, c.bind, c.window, c.timeout)?)?
    } else {
        TcpStream::connect_addr(t.addr).await?
    };
    // A request is one write: nothing to gain from Nagle, whose delay would
    // be timed (and a TLS handshake's flights are each one write too).
    if core.cfg.keepalive || t.url.tls || core.cfg.h2.is_some() {
        let _ = tcp.set_nodelay(true);
    }
    core.stats.borrow_mut().counts.connections += 1;
    let Some(cfg) = core.tls.as_ref().filter(|_| t.url.tls) else {
        return Ok(Stream::Plain(tcp));
    };
    match TlsStream::connect(tcp, cfg.clone(), &t.url.host).await {
        Ok(s) => {
            let mut st = core.stats.borrow_mut();
            st.counts.tls_handshakes += 1;
            if s.resumed() {
                st.counts.tls_resumed += 1;
            }
            drop(st);
            if core.shared.tls_info.get().is_none() {
                let _ = core.shared.tls_info.set(s.info(&t.url.host));
            }
            Ok(Stream::Tls(Box::new(s)))
        }
        Err(HandshakeError(why)) => {
            let hint = if why.contains("certificate") {
                " (--cacert FILE trusts other roots, --insecure skips verification)"
            } else if why.contains("NoApplicationProtocol") {
                " (the server does not offer HTTP/2 by ALPN)"
            } else {
                ""
            };
            let _ = core.shared.tls_error.set(format!(
                "TLS handshake with {}:{} failed: {why}{hint}",
                t.url.host, t.url.port
            ));
            Err(io::Error::new(io::ErrorKind::InvalidData, why))
        }
    }
}

/// A request's clock readings.
pub struct Times {
    pub start: Instant,
    /// When its connect finished, for the first request on a connection.
    pub connected: Option<Instant>,
    pub written: Instant,
    pub first_byte: Instant,
    pub done: Instant,
}

/// Accounts for the outstanding `rest` of a batch on a broken connection:
/// all sent again when `between` (the server closed between responses),
/// else the first fails by `kind` and the others are sent again.
pub(crate) fn broke(
    core: &Core,
    kind: Break,
    rest: &[Ticket],
    between: bool,
    again: &mut VecDeque<Ticket>,
) {
    let mut st = core.stats.borrow_mut();
    let c = &mut st.counts;
    let resend = if between && matches!(kind, Break::Eof | Break::Reset | Break::Write) {
        c.reconnects += 1;
        rest
    } else {
        match kind {
            Break::Connect => c.failed_connect += 1,
            Break::Timeout => {
                c.failed_receive += 1;
                c.timeouts += 1;
            }
            Break::Reset => {
                c.failed_receive += 1;
                c.resets += 1;
            }
            Break::Eof => c.failed_receive += 1,
            Break::Parse => c.failed_exception += 1,
            Break::Write => {
                c.failed_exception += 1;
                c.write_errors += 1;
            }
        }
        let done = c.complete + c.socket_failures();
        core.shared.progress[core.index]
            .0
            .store(done, Ordering::Relaxed);
        if core.cfg.verbosity >= 2 {
            eprintln!("WARNING: request failed: {kind:?}");
        }
        &rest[1..]
    };
    for t in resend.iter().rev() {
        again.push_front(*t);
    }
}

impl Core {
    /// Under `--siege`, after a page: learns its assets from the first
    /// body captured, then queues them to be fetched next, as siege does
    /// after each page it gets with a status below 300.
    fn fetch_assets(
        &self,
        t: &Ticket,
        done: Done,
        parser: &mut ResponseParser,
        again: &mut VecDeque<Ticket>,
    ) {
        let page = self.target_of(*t);
        let known = &self.shared.assets[page];
        if let Some(body) = parser.capture.take() {
            if done.status < 300 {
                let p = &self.targets[page];
                let found = if parser.html {
                    crate::assets::assets(&body, &p.url)
                } else {
                    Vec::new()
                };
                let list = found
                    .into_iter()
                    .map(|url| Target {
                        request: crate::request::build(&self.cfg, &url, "GET", None),
                        url,
                        addr: p.addr,
                        head: false,
                        body_len: 0,
                        // siege's parser runs over HTTP/1.x only.
                        h2: Default::default(),
                        body: Vec::new(),
                        h3: Vec::new(),
                    })
                    .collect();
                let _ = known.set(list);
            }
        }
        if done.status >= 300 {
            return;
        }
        let n = known.get().map_or(0, Vec::len) as u32;
        for part in 1..=n {
            again.push_back(Ticket {
                seq: t.seq,
                intended: None,
                part,
            });
        }
    }

    /// An HTTP/1 response: under `--siege` a page's assets are queued
    /// first, then it is counted.
    fn record_h1(
        &self,
        t: &Ticket,
        done: Done,
        times: &Times,
        parser: &mut ResponseParser,
        again: &mut VecDeque<Ticket>,
    ) {
        if self.cfg.siege_parser && t.part == 0 {
            self.fetch_assets(t, done, parser, again);
        }
        self.record(t, done, times, &mut parser.server);
    }

    /// Counts one complete response.
    pub(crate) fn record(
        &self,
        t: &Ticket,
        done: Done,
        times: &Times,
        server: &mut Option<String>,
    ) {
        let target = self.target_of(*t);
        let mut st = self.stats.borrow_mut();
        let c = &mut st.counts;
        c.complete += 1;
        c.count_status(done.status);
        c.body_bytes += done.body_len;
        c.body_sent += self.target(*t).body_len;
        if done.keep_alive && self.cfg.keepalive {
            c.keepalive += 1;
        }
        // Length failures: against the first response for this URL (an
        // asset's length is nobody's document length).
        if t.part == 0 {
            let slot = &self.shared.doc_len[target];
            let first = slot.load(Ordering::Relaxed);
            let first = if first == UNSET {
                match slot.compare_exchange(
                    UNSET,
                    done.body_len,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => done.body_len,
                    Err(v) => v,
                }
            } else {
                first
            };
            if first != done.body_len && !self.cfg.variable_length {
                c.failed_length += 1;
            }
        }
        let progress = c.complete + c.socket_failures();
        let connect = times.connected.map_or(0, |t| micros(t - times.start));
        let total = micros(times.done - times.start);
        st.connect.record(connect);
        let wait = micros(times.first_byte.saturating_duration_since(times.written));
        st.waiting.record(wait);
        if self.cfg.gnuplot.is_some() {
            st.samples.push(crate::stats::Sample {
                start: times.start,
                connect_us: connect,
                total_us: total,
                wait_us: wait,
            });
        }
        st.total.record(total);
        st.processing.record(total.saturating_sub(connect));
        // Open loop: from the intended send time, or from the actual one when
        // that was earlier (the timer's slack), so never below the service time.
        let latency = t.intended.map_or(total, |due| {
            micros(times.done.saturating_duration_since(due.min(times.start)))
        });
        st.latency.record(latency);
        st.last_done = Some(times.done);
        drop(st);
        self.shared.progress[self.index]
            .0
            .store(progress, Ordering::Relaxed);
        if let Some(server) = server.take() {
            let _ = self.shared.server.set(server);
        }
        if self.cfg.verbosity >= 2 {
            eprintln!("LOG: Response code = {}", done.status);
        }
    }
}
