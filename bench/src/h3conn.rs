//! HTTP/3 connections (`--h3`): each core's share of them, every one
//! keeping `--streams N` requests in flight, driven by one loop on the
//! core's thread.
//!
//! Why a loop of its own, not the core's monoio runtime: quinn-proto is
//! sans-I/O and wants its owner to feed it datagrams, call it back at the
//! instant it names and drain what it has to send, for all connections at
//! once; that is a poll(2) over the core's UDP sockets with the earliest of
//! their timers as the timeout, which is all a core does under `--h3`.
//! On monoio each connection would need a task, a timer re-armed at every
//! turn and a send path that monoio's UDP API lacks (sendmsg with GSO's
//! control message). Nothing else runs on the core meanwhile, so the
//! thread may block in poll(2). The datagrams are [`crate::h3::quic`]'s,
//! a stream's bytes [`crate::h3::stream`]'s; here is what they mean for
//! the run.
//!
//! Accounting is HTTP/2's (see [`crate::h2conn`]): a stream the server
//! finishes after a final HEADERS is a complete response; a stream the
//! server resets is a Receive failure (H3_REQUEST_REJECTED aside: the
//! server did not process it, so it is sent again), and counted in
//! `h2_resets`; after a GOAWAY the streams at or above its id are sent
//! again on a new connection; a connection lost (or silent for `-s`)
//! fails its first stream in flight, and sends the others again. "Total
//! transferred" is every UDP payload byte received, QUIC's and TLS's
//! included, as TCP's is every byte read. Times per stream: the
//! connection's first streams carry its handshake; the others start when
//! they are opened.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{
    ClientConfig, Connection, ConnectionError, Dir, EndpointConfig, Event, StreamEvent, StreamId,
    TransportErrorCode, VarInt,
};

use crate::conn::{broke, Break, Times};
use crate::cores::Core;
use crate::h3::frames::{self, FrameReader, Role, UniReader};
use crate::h3::quic::{Io, Wire};
use crate::h3::stream::{self, Got, Slot};
use crate::rate::Ticket;
use crate::response::Done;
use crate::stats::Stats;

/// Why a connection is given up.
enum End {
    /// The handshake did not complete: the errno, if there is one.
    Connect(Option<i32>),
    /// A break of HTTP/1's kinds.
    Broke(Break),
    /// After a GOAWAY, or the requests turned to another address.
    Drained,
    /// No request left.
    Done,
}

/// One HTTP/3 connection: QUIC's, and what HTTP/3 keeps of it.
struct Quic {
    wire: Wire,
    conn: Connection,
    addr: SocketAddr,
    target: usize,
    t_start: Instant,
    t_conn: Option<Instant>,
    /// The request the connection was made for, until it is connected.
    first: Option<Ticket>,
    slots: Vec<Slot>,
    uni: Vec<(StreamId, UniReader)>,
    /// Our control stream, and how much of it is written.
    control: Option<(StreamId, usize)>,
    goaway: Option<u64>,
    moved: bool,
    fresh: bool,
    answered: u64,
    /// The last stream progress: `-s` counts from here.
    progress: Instant,
    end: Option<End>,
}

/// A connection's place: it reconnects as needed until no request is left.
#[derive(Default)]
struct Link {
    again: VecDeque<Ticket>,
    quic: Option<Box<Quic>>,
    done: bool,
}

/// A core's HTTP/3 machinery.
struct Driver<'a> {
    core: &'a Core,
    client: ClientConfig,
    endpoint: Arc<EndpointConfig>,
    control: Vec<u8>,
    io: Io,
    server: Option<String>,
}

/// Runs this core's `conns` HTTP/3 connections until its requests are used
/// up; returns what it counted.
pub fn run(core: Rc<Core>, conns: usize) -> Stats {
    let client = core
        .tls
        .clone()
        .ok_or_else(|| "--h3 needs https:// URLs".to_string())
        .and_then(|tls| crate::h3::client_config(tls, core.cfg.timeout));
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            let _ = core.shared.tls_error.set(e);
            return core.stats.take();
        }
    };
    let mut d = Driver {
        core: &core,
        client,
        endpoint: Arc::new(crate::h3::endpoint_config()),
        control: frames::control_stream(),
        io: Io::default(),
        server: None,
    };
    let mut links: Vec<Link> = (0..conns).map(|_| Link::default()).collect();
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(conns);
    let timeout = core.cfg.timeout;
    loop {
        for l in links.iter_mut() {
            while l.quic.is_none() && !l.done {
                d.start(l);
            }
        }
        if links.iter().all(|l| l.done) {
            break;
        }
        fds.clear();
        let now = Instant::now();
        let mut wake: Option<Instant> = None;
        for q in links.iter_mut().filter_map(|l| l.quic.as_mut()) {
            fds.push(q.wire.pollfd());
            let own = if q.t_conn.is_none() {
                Some(q.t_start + timeout)
            } else {
                (!q.slots.is_empty()).then(|| q.progress + timeout)
            };
            for t in [q.conn.poll_timeout(), own].into_iter().flatten() {
                wake = Some(wake.map_or(t, |w| w.min(t)));
            }
        }
        let ms = wake.map_or(1000, |t| {
            t.saturating_duration_since(now)
                .as_micros()
                .div_ceil(1000)
                .min(1000) as libc::c_int
        });
        // SAFETY: `fds` is a live array of pollfd, its length given.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        let now = Instant::now();
        for l in links.iter_mut().filter(|l| l.quic.is_some()) {
            d.drive(l, now);
        }
    }
    drop(d);
    core.stats.take()
}

impl Driver<'_> {
    /// Starts a connection with the link's next request in hand, so that a
    /// failed one fails it; or marks the link done when none is left.
    fn start(&mut self, l: &mut Link) {
        let core = self.core;
        let now = Instant::now();
        let Some(first) = l.again.pop_front().or_else(|| core.tickets.take(now)) else {
            l.done = true;
            return;
        };
        let target = core.target_of(first);
        let t = &core.targets[target];
        let c = &core.cfg;
        let opened = Wire::connect(
            now,
            self.endpoint.clone(),
            self.client.clone(),
            (t.addr, &t.url.host),
            c.bind,
            c.window,
        );
        let (wire, conn) = match opened {
            Ok(x) => x,
            Err(e) => {
                core.stats.borrow_mut().connect_errno = e.raw_os_error();
                broke(core, Break::Connect, &[first], false, &mut l.again);
                return;
            }
        };
        let mut q = Box::new(Quic {
            wire,
            conn,
            addr: t.addr,
            target,
            t_start: now,
            t_conn: None,
            first: Some(first),
            slots: Vec::with_capacity(c.streams),
            uni: Vec::new(),
            control: None,
            goaway: None,
            moved: false,
            fresh: true,
            answered: 0,
            progress: now,
            end: None,
        });
        self.transmit(&mut q, now); // the Initial
        l.quic = Some(q);
    }

    /// Everything a connection has to do now: datagrams in, timers,
    /// events, new requests, datagrams out; and its end, if it came.
    fn drive(&mut self, l: &mut Link, now: Instant) {
        let Link { again, quic, done } = l;
        let q = quic.as_mut().expect("a live connection");
        let mut received = 0;
        let r = q
            .wire
            .receive(&mut q.conn, &mut self.io, now, &mut received);
        self.core.stats.borrow_mut().counts.bytes_read += received;
        if let Err(e) = r {
            self.failed(q, e);
        }
        if q.conn.poll_timeout().is_some_and(|t| t <= now) {
            q.conn.handle_timeout(now);
        }
        self.events(q, again, now);
        q.wire.endpoint_events(&mut q.conn);
        if q.end.is_none() && q.t_conn.is_some() {
            self.fill(q, again, now);
        }
        let timeout = self.core.cfg.timeout;
        if q.end.is_none() {
            if q.t_conn.is_none() && now >= q.t_start + timeout {
                q.end = Some(End::Connect(Some(libc::ETIMEDOUT)));
            } else if !q.slots.is_empty() && now >= q.progress + timeout {
                q.end = Some(End::Broke(Break::Timeout));
            }
        }
        self.transmit(q, now);
        let Some(end) = q.end.take() else {
            return;
        };
        let mut q = quic.take().expect("a live connection");
        let core = self.core;
        match end {
            End::Connect(errno) => {
                core.stats.borrow_mut().connect_errno = errno;
                if let Some(first) = q.first.take() {
                    broke(core, Break::Connect, &[first], false, again);
                }
            }
            End::Broke(kind) => {
                // The server closed between responses if no stream in
                // flight had a byte of its answer: those are sent again.
                let failed: Vec<Ticket> = q.slots.iter().map(|s| s.ticket).collect();
                let between =
                    q.answered > 0 && q.slots.first().is_some_and(|s| s.got.first_byte.is_none());
                if !failed.is_empty() {
                    broke(core, kind, &failed, between, again);
                }
            }
            End::Drained => {}
            End::Done => *done = true,
        }
        if !q.conn.is_closed() {
            q.conn.close(
                now,
                VarInt::from_u64(frames::H3_NO_ERROR).unwrap(),
                Bytes::new(),
            );
            self.transmit(&mut q, now);
        }
    }

    /// A send or receive error: the connection is over.
    fn failed(&self, q: &mut Quic, e: std::io::Error) {
        if q.end.is_none() {
            q.end = Some(match q.t_conn {
                None => End::Connect(e.raw_os_error()),
                Some(_) if e.raw_os_error() == Some(libc::ECONNREFUSED) => End::Broke(Break::Reset),
                Some(_) => End::Broke(Break::Write),
            });
        }
    }

    fn transmit(&mut self, q: &mut Quic, now: Instant) {
        if let Err(e) = q.wire.transmit(&mut q.conn, &mut self.io, now) {
            self.failed(q, e);
        }
    }

    fn events(&mut self, q: &mut Quic, again: &mut VecDeque<Ticket>, now: Instant) {
        while let Some(ev) = q.conn.poll() {
            match ev {
                Event::Connected => self.connected(q, again, now),
                Event::ConnectionLost { reason } if q.end.is_none() => {
                    q.end = Some(self.lost(q, &reason));
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = q.conn.streams().accept(Dir::Uni) {
                        q.uni.push((id, UniReader::default()));
                        self.read_uni(q, id, again, now);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    if id.dir() == Dir::Uni {
                        self.read_uni(q, id, again, now);
                    } else {
                        self.read_response(q, id, again, now);
                    }
                }
                Event::Stream(StreamEvent::Writable { id }) => self.write(q, id),
                _ => {}
            }
        }
    }

    fn connected(&mut self, q: &mut Quic, again: &mut VecDeque<Ticket>, now: Instant) {
        let core = self.core;
        let url = &core.targets[q.target].url;
        if crate::h3::alpn(&q.conn).as_deref() != Some(b"h3") {
            let _ = core.shared.tls_error.set(format!(
                "{}:{} did not choose HTTP/3 by ALPN (--h3 needs a server that offers h3)",
                url.host, url.port
            ));
            q.end = Some(End::Connect(None));
            return;
        }
        q.t_conn = Some(now);
        q.progress = now;
        {
            let c = &mut core.stats.borrow_mut().counts;
            c.connections += 1;
            c.tls_handshakes += 1;
        }
        if core.shared.tls_info.get().is_none() {
            let _ = core
                .shared
                .tls_info
                .set(crate::h3::tls_info(&q.conn, &url.host));
        }
        match q.conn.streams().open(Dir::Uni) {
            Some(id) => {
                q.control = Some((id, 0));
                self.write(q, id);
            }
            None => {
                // A server that allows no unidirectional stream cannot
                // hear our SETTINGS (RFC 9114 §6.2.1).
                q.end = Some(End::Broke(Break::Parse));
            }
        }
        if let Some(first) = q.first.take() {
            again.push_front(first);
        }
    }

    /// What a lost connection means for its requests.
    fn lost(&self, q: &Quic, reason: &ConnectionError) -> End {
        let core = self.core;
        if core.cfg.verbosity >= 2 {
            eprintln!("WARNING: QUIC connection lost: {reason}");
        }
        if q.t_conn.is_none() {
            if matches!(reason, ConnectionError::TimedOut) {
                return End::Connect(Some(libc::ETIMEDOUT));
            }
            let url = &core.targets[q.target].url;
            let why = reason.to_string();
            let hint = if why.contains("certificate") || why.contains("Certificate") {
                " (--cacert FILE trusts other roots, --insecure skips verification)"
            } else if why.contains("application protocol") || why.contains("ApplicationProtocol") {
                " (the server does not offer HTTP/3 by ALPN)"
            } else {
                ""
            };
            let _ = core.shared.tls_error.set(format!(
                "QUIC handshake with {}:{} failed: {why}{hint}",
                url.host, url.port
            ));
            return End::Connect(None);
        }
        End::Broke(match reason {
            ConnectionError::TimedOut => Break::Timeout,
            ConnectionError::ApplicationClosed(c)
                if c.error_code.into_inner() == frames::H3_NO_ERROR =>
            {
                Break::Eof
            }
            ConnectionError::ConnectionClosed(c)
                if c.error_code == TransportErrorCode::NO_ERROR =>
            {
                Break::Eof
            }
            ConnectionError::TransportError(_) => Break::Parse,
            _ => Break::Reset,
        })
    }

    /// Opens a stream for each free slot, and writes its request.
    fn fill(&mut self, q: &mut Quic, again: &mut VecDeque<Ticket>, now: Instant) {
        let core = self.core;
        let limit = core.cfg.streams;
        let new_from = q.slots.len();
        while q.slots.len() < limit && q.goaway.is_none() && !q.moved {
            let Some(t) = again.pop_front().or_else(|| core.tickets.take(now)) else {
                break;
            };
            if core.targets[core.target_of(t)].addr != q.addr {
                again.push_front(t);
                q.moved = true;
                break;
            }
            let Some(id) = q.conn.streams().open(Dir::Bi) else {
                again.push_front(t); // the server's stream limit: wait
                break;
            };
            q.slots.push(Slot {
                id,
                ticket: t,
                start: if q.fresh { q.t_start } else { now },
                connected: if q.fresh { q.t_conn } else { None },
                written: now,
                got: Got::default(),
                sent: 0,
                finished: false,
                reader: FrameReader::new(Role::Response),
            });
            self.write(q, id);
        }
        q.fresh = false;
        if q.slots.len() > new_from {
            if new_from == 0 {
                q.progress = now;
            }
            let c = &mut core.stats.borrow_mut().counts;
            c.h2_max_in_flight = c.h2_max_in_flight.max(q.slots.len() as u64);
        }
        if q.slots.is_empty() && q.end.is_none() {
            q.end = Some(if q.goaway.is_some() || q.moved {
                End::Drained
            } else {
                End::Done
            });
        }
    }

    /// Writes what is left of stream `id`'s bytes: a request, or our
    /// control stream.
    fn write(&mut self, q: &mut Quic, id: StreamId) {
        if let Some((_, sent)) = q.control.as_mut().filter(|c| c.0 == id) {
            stream::write(&mut q.conn, id, &self.control, sent, false);
        } else if let Some(s) = q.slots.iter_mut().find(|s| s.id == id && !s.finished) {
            let bytes = &self.core.target(s.ticket).h3;
            s.finished = stream::write(&mut q.conn, id, bytes, &mut s.sent, true);
        }
    }

    /// Reads a response stream: its frames, and its end.
    fn read_response(
        &mut self,
        q: &mut Quic,
        id: StreamId,
        again: &mut VecDeque<Ticket>,
        now: Instant,
    ) {
        let core = self.core;
        let Some(i) = q.slots.iter().position(|s| s.id == id) else {
            return;
        };
        let want_server = self.server.is_none() && core.wants_server();
        let slot = &mut q.slots[i];
        let read = stream::read(&mut q.conn, slot, now, want_server);
        let got = &mut slot.got;
        if got.server.is_some() {
            self.server = got.server.take();
        }
        if got.header_bytes > 0 {
            core.stats.borrow_mut().counts.h2_header_bytes += got.header_bytes;
            got.header_bytes = 0;
        }
        if read.any {
            q.progress = now;
        }
        let (error, reset, fin) = (read.error, read.reset, read.fin);
        if let Some(e) = error {
            // A stream error (RFC 9114 §4.1.2): this response fails, the
            // connection goes on.
            if core.cfg.verbosity >= 2 {
                eprintln!("WARNING: HTTP/3 response unreadable: {e:?}");
            }
            let s = q.slots.remove(i);
            let code = VarInt::from_u64(frames::H3_FRAME_UNEXPECTED).unwrap();
            let _ = q.conn.recv_stream(id).stop(code);
            if !s.finished {
                let _ = q.conn.send_stream(id).reset(code);
            }
            broke(core, Break::Parse, &[s.ticket], false, again);
        } else if let Some(code) = reset {
            let s = q.slots.remove(i);
            core.stats.borrow_mut().counts.h2_resets += 1;
            if code == frames::H3_REQUEST_REJECTED {
                again.push_front(s.ticket);
            } else {
                broke(core, Break::Reset, &[s.ticket], false, again);
            }
        } else if fin {
            let s = q.slots.remove(i);
            if !s.got.head || !s.reader.between_frames() {
                broke(core, Break::Parse, &[s.ticket], false, again);
                return;
            }
            let done = Done {
                status: s.got.status,
                keep_alive: true,
                body_len: s.got.body,
            };
            let times = Times {
                start: s.start,
                connected: s.connected,
                written: s.written,
                first_byte: s.got.first_byte.unwrap_or(now),
                done: now,
            };
            core.record(&s.ticket, done, &times, &mut self.server);
            q.answered += 1;
        }
    }

    /// Reads one of the server's unidirectional streams; a GOAWAY stops
    /// new requests and sends again those it says were not processed.
    fn read_uni(&mut self, q: &mut Quic, id: StreamId, again: &mut VecDeque<Ticket>, now: Instant) {
        let Some(i) = q.uni.iter().position(|(s, _)| *s == id) else {
            return;
        };
        let (goaway, error) = match stream::read_uni(&mut q.conn, id, &mut q.uni[i].1) {
            Ok(g) => (g, false),
            Err(_) => (None, true),
        };
        if error {
            // A connection error (§7.2): close with it, and count it so.
            let code = VarInt::from_u64(frames::H3_FRAME_UNEXPECTED).unwrap();
            q.conn.close(now, code, Bytes::new());
            if q.end.is_none() {
                q.end = Some(End::Broke(Break::Parse));
            }
            return;
        }
        if let Some(last) = goaway {
            self.core.stats.borrow_mut().counts.h2_goaways += 1;
            q.goaway = Some(last);
            // Streams at or above `last` were never processed: ask again.
            let mut i = q.slots.len();
            while i > 0 {
                i -= 1;
                if VarInt::from(q.slots[i].id).into_inner() >= last {
                    again.push_front(q.slots.remove(i).ticket);
                }
            }
            if q.slots.is_empty() && q.end.is_none() {
                q.end = Some(End::Drained);
            }
        }
    }
}
