//! What a client connection's task and its streams share: the streams,
//! the windows both ways, the server's settings, HPACK both ways and the
//! output, with the wakers of whoever waits on them.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::task::Waker;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use super::fields::FieldList;
use super::opens::Opens;
use super::ClientSettings;
use crate::h2::frame::{self, setting, Reason, DEFAULT_WINDOW, MIN_FRAME_SIZE};
use crate::h2::hpack::{Decoder, Encoder};

/// Output held before a stream's writer waits for the socket to take it.
pub(super) const WRITE_HIGH: usize = 256 * 1024;

/// Streams assumed allowed until the server's SETTINGS say (RFC 9113
/// §6.5.2 recommends no fewer than 100).
const ASSUMED_STREAMS: u32 = 100;

/// Why a connection was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The connection could not be made: nothing was sent.
    Connect,
    ConnectTimeout,
    /// Reading or writing failed, or the server closed.
    Io(std::io::ErrorKind),
    /// The server broke the protocol; we sent GOAWAY with this.
    Protocol(Reason),
    /// The server's GOAWAY with an error.
    GoAway(Reason),
    /// A PING went unanswered, or a send waited past its timeout.
    Unresponsive,
    /// Closed on our side (retired, idle, reloaded).
    Closed,
    /// The server chose HTTP/1.1 by ALPN: nothing was sent.
    Http1,
}

/// Stream ids hashed by one multiply: the map is the connection's own and
/// its keys the ids we chose, so SipHash's defence against chosen keys
/// buys nothing, and it cost more than a request's HPACK.
#[derive(Default)]
pub(super) struct IdHash(u64);

impl Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    fn write_u32(&mut self, id: u32) {
        let h = (self.0 ^ u64::from(id)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
}

pub(super) struct CStream {
    /// The next head received and not yet taken, and those after it
    /// (interim ones come before the final one; a queue only when the
    /// server sends them faster than they are taken).
    pub head: Option<(u16, FieldList)>,
    pub more_heads: VecDeque<(u16, FieldList)>,
    pub final_head: bool,
    pub data: BytesMut,
    pub trailers: Option<FieldList>,
    pub remote_ended: bool,
    pub local_ended: bool,
    /// The server reset it, or it broke the protocol (`Reason` sent).
    pub reset: Option<Reason>,
    /// A malformed response: what was wrong.
    pub malformed: Option<&'static str>,
    /// The server's credit for what we send.
    pub send_window: i64,
    /// What may still be received.
    pub recv_window: i64,
    /// Taken by the reader and not yet credited back.
    pub recv_taken: u32,
    pub waker: Option<Waker>,
}

impl CStream {
    fn new(send_window: i64, recv_window: i64) -> CStream {
        CStream {
            head: None,
            more_heads: VecDeque::new(),
            final_head: false,
            data: BytesMut::new(),
            trailers: None,
            remote_ended: false,
            local_ended: false,
            reset: None,
            malformed: None,
            send_window,
            recv_window,
            recv_taken: 0,
            waker: None,
        }
    }

    pub fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    pub fn push_head(&mut self, head: (u16, FieldList)) {
        if self.head.is_none() {
            self.head = Some(head);
        } else {
            self.more_heads.push_back(head);
        }
    }

    pub fn pop_head(&mut self) -> Option<(u16, FieldList)> {
        let h = self.head.take();
        self.head = self.more_heads.pop_front();
        h
    }
}

/// A header block under way: HEADERS without END_HEADERS, then
/// CONTINUATION frames.
pub(super) struct Partial {
    pub stream: u32,
    pub end_stream: bool,
    pub block: Vec<u8>,
}

pub(super) struct CState {
    pub local: ClientSettings,
    pub streams: HashMap<u32, CStream, BuildHasherDefault<IdHash>>,
    /// Opens waiting for the server to allow another stream.
    pub waiting_open: usize,
    pub opens: Opens,
    pub next_id: u32,
    pub peer_max_streams: u32,
    pub peer_initial_window: i64,
    pub peer_max_frame: usize,
    pub conn_send: i64,
    pub conn_recv: i64,
    /// Received bytes taken (or dropped) and not yet credited back.
    pub conn_taken: u32,
    pub enc: Encoder,
    pub dec: Decoder,
    pub partial: Option<Partial>,
    pub out: BytesMut,
    pub task: Option<Waker>,
    /// Tasks waiting for room in the output or a window, or for the
    /// connection to be made.
    pub waiters: Vec<Waker>,
    /// The server's GOAWAY: the last stream it may process.
    pub goaway: Option<u32>,
    pub retired: bool,
    /// The socket was made and the task runs.
    pub connected: bool,
    pub failed: Option<Lost>,
    pub idle_since: Option<Instant>,
    /// The last time a frame came in.
    pub heard: Instant,
    /// A PING of ours waiting for its ACK, sent then.
    pub ping_sent: Option<Instant>,
    /// A send waiting on the socket since then.
    pub writing_since: Option<Instant>,
}

impl CState {
    pub fn new(local: ClientSettings) -> CState {
        let mut out = BytesMut::with_capacity(1024);
        out.extend_from_slice(crate::h2::PREFACE);
        frame::put_settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, local.stream_window),
            ],
        );
        let extra = i64::from(local.conn_window) - DEFAULT_WINDOW;
        if extra > 0 {
            frame::put_window_update(&mut out, 0, extra as u32);
        }
        let now = Instant::now();
        CState {
            local,
            streams: HashMap::default(),
            waiting_open: 0,
            opens: Opens::default(),
            next_id: 1,
            peer_max_streams: ASSUMED_STREAMS,
            peer_initial_window: DEFAULT_WINDOW,
            peer_max_frame: MIN_FRAME_SIZE as usize,
            conn_send: DEFAULT_WINDOW,
            conn_recv: i64::from(local.conn_window).max(DEFAULT_WINDOW),
            conn_taken: 0,
            enc: Encoder::new(),
            dec: Decoder::new(4096),
            partial: None,
            out,
            task: None,
            waiters: Vec::new(),
            goaway: None,
            retired: false,
            connected: false,
            failed: None,
            idle_since: Some(now),
            heard: now,
            ping_sent: None,
            writing_since: None,
        }
    }

    pub fn usable(&self) -> bool {
        self.failed.is_none()
            && self.goaway.is_none()
            && !self.retired
            && self.next_id < (1 << 31) - 2
    }

    /// Whether a new stream may open now.
    pub fn has_slot(&self) -> bool {
        (self.streams.len() as u32) < self.peer_max_streams
    }

    /// A new stream's id and state.
    pub fn open(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let s = CStream::new(
            self.peer_initial_window,
            i64::from(self.local.stream_window),
        );
        self.streams.insert(id, s);
        self.idle_since = None;
        id
    }

    /// A stream's handle went: its unread bytes credited back, and a
    /// stream not ended both ways is cancelled.
    pub fn close_stream(&mut self, id: u32) {
        let Some(s) = self.streams.remove(&id) else {
            return;
        };
        self.taken(s.data.len());
        if s.reset.is_none() && !(s.local_ended && s.remote_ended) && self.failed.is_none() {
            frame::put_rst(&mut self.out, id, Reason::CANCEL);
            self.wake_task();
        }
        if self.streams.is_empty() {
            self.idle_since = Some(Instant::now());
            self.wake_task();
        }
        self.wake_waiters();
        self.wake_opens();
    }

    /// `n` received bytes left the connection's window for good (read,
    /// or dropped): credited back once half the window is.
    pub fn taken(&mut self, n: usize) {
        self.conn_taken += n as u32;
        if self.conn_taken >= self.local.conn_window / 2 && self.failed.is_none() {
            frame::put_window_update(&mut self.out, 0, self.conn_taken);
            self.conn_recv += i64::from(self.conn_taken);
            self.conn_taken = 0;
            self.wake_task();
        }
    }

    /// A stream's reader took `n` bytes.
    pub fn stream_taken(&mut self, id: u32, n: usize) {
        self.taken(n);
        let half = self.local.stream_window / 2;
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        s.recv_taken += n as u32;
        if s.recv_taken >= half && !s.remote_ended && s.reset.is_none() {
            let inc = std::mem::take(&mut s.recv_taken);
            s.recv_window += i64::from(inc);
            frame::put_window_update(&mut self.out, id, inc);
            self.wake_task();
        }
    }

    pub fn wake_task(&mut self) {
        if let Some(w) = self.task.take() {
            w.wake();
        }
    }

    pub fn wake_waiters(&mut self) {
        for w in self.waiters.drain(..) {
            w.wake();
        }
    }

    /// Opens waiting for a stream, one per slot free now.
    pub fn wake_opens(&mut self) {
        let free = (self.peer_max_streams as usize).saturating_sub(self.streams.len());
        self.opens.wake(free);
    }

    pub fn wake_all(&mut self) {
        for s in self.streams.values_mut() {
            s.wake();
        }
        self.wake_waiters();
        self.opens.wake_all();
        self.wake_task();
    }

    pub fn retire(&mut self) {
        self.retired = true;
        self.opens.wake_all();
        self.wake_task();
    }

    /// The connection is dead: every stream learns it.
    pub fn fail(&mut self, why: Lost) {
        if self.failed.is_none() {
            self.failed = Some(why);
        }
        self.wake_all();
    }

    /// A connection error of the server's: GOAWAY, then dead.
    pub fn protocol_error(&mut self, reason: Reason) {
        if self.failed.is_some() {
            return;
        }
        let last = self.streams.keys().copied().max().unwrap_or(0);
        frame::put_goaway(&mut self.out, last, reason, b"");
        self.fail(Lost::Protocol(reason));
    }

    pub fn check(&mut self, now: Instant, interval: Duration, send: Duration) -> bool {
        if self.failed.is_some() {
            return false;
        }
        let stuck = self
            .writing_since
            .is_some_and(|t| now.duration_since(t) >= send);
        let unanswered = self
            .ping_sent
            .is_some_and(|t| now.duration_since(t) >= interval);
        if stuck || unanswered {
            self.fail(Lost::Unresponsive);
            return false;
        }
        if self.ping_sent.is_none() && now.duration_since(self.heard) >= interval {
            frame::put_ping(&mut self.out, false, b"ringside");
            self.ping_sent = Some(now);
            self.wake_task();
        }
        true
    }
}
