//! One HTTP/2 connection's state, shared by its connection task (which
//! reads frames into it, [`super::recv`]) and its stream tasks (which
//! write their responses through it, [`super::wire`]): the streams and
//! their windows, the HPACK contexts, the flood budget, and the bytes
//! waiting to be sent.
//!
//! Everything runs on the connection's core, so the state is a `RefCell`
//! borrowed for short, synchronous steps; a task that must wait (for
//! window, for room in the output, for request body) leaves its waker on
//! the stream and is woken by the frame that changes it.

use std::task::Waker;

use bytes::BytesMut;
use slab::Slab;

use super::frame::{self, Reason, DEFAULT_WINDOW, MAX_WINDOW};
use super::hpack::{Decoder, Encoder};
use super::stats;

/// WINDOW_UPDATE frames a DATA frame sent lets the client send free of
/// the flood budget (Envoy's `max_inbound_window_update_frames_per_data_
/// frame_sent` is 10). One for the stream and one for the connection is
/// what a client acknowledging every frame sends; a client that credits
/// in smaller steps than the frames it got may send more.
const UPDATES_PER_DATA: u32 = 4;
/// The most such frames saved up, so that a long download does not bank
/// a flood for later.
const UPDATES_HELD: u32 = 4096;

/// Above this many unsent bytes, streams wait before writing more.
pub(crate) const WRITE_HIGH: usize = 64 * 1024;
/// Streams closed lately: a request on one is STREAM_CLOSED, where one on
/// an id never used is PROTOCOL_ERROR (§5.1.1).
const CLOSED_MEMORY: usize = 16;

/// The most request body a stream answered early reads and throws away
/// before it is reset instead (see [`State::discard`]).
pub(crate) const DISCARD_MAX: u32 = 1 << 20;

pub(crate) struct Stream {
    pub id: u32,
    /// What we may still send (the client's window for it).
    pub send_window: i64,
    /// What the client may still send before we give credit.
    pub recv_window: i64,
    /// Request body taken by the handler since the last WINDOW_UPDATE.
    pub recv_unacked: u32,
    /// Request body received, not yet taken by the handler.
    pub body: BytesMut,
    /// The client ended its side (END_STREAM).
    pub remote_ended: bool,
    /// We ended ours (END_STREAM sent).
    pub local_ended: bool,
    /// The stream was reset, by the client or by us: the task stops.
    pub reset: Option<Reason>,
    pub content_length: Option<u64>,
    pub received: u64,
    /// The stream's task, waiting for body, window or room.
    pub waker: Option<Waker>,
    /// The request's trailer section, once it came (§8.1).
    pub trailers: Option<Box<crate::h2::client::FieldList>>,
    /// Answered whole before its request body ended: the bytes of body
    /// still taken and thrown away (see [`State::discard`]).
    pub discarding: Option<u32>,
}

impl Stream {
    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// How the connection's settings and limits were configured.
#[derive(Clone, Copy)]
pub(crate) struct Local {
    pub max_streams: u32,
    pub stream_window: u32,
    pub connection_window: u32,
    pub max_head: usize,
    pub flood_budget: u32,
}

pub(crate) struct State {
    pub local: Local,
    pub streams: Slab<Stream>,
    /// (stream id, slab key) of every stream in `streams`.
    pub index: Vec<(u32, usize)>,
    /// The stream storage the last burst grew to, let go when it ended:
    /// the next burst's is made this large at once, not grown again step
    /// by step (callgrind, h2load -c100 -m10: the regrowth cost about 400
    /// instructions a request).
    burst: usize,
    pub last_peer_id: u32,
    /// Ids we reset lately, newest last.
    /// Streams we reset lately: frames the client sent before it saw the
    /// reset are ignored on these (RFC 9113 §5.4.2), not taken as errors.
    reset_lately: super::recent::Recent,
    closed_lately: [u32; CLOSED_MEMORY],
    closed_at: usize,
    pub conn_send: i64,
    pub conn_recv: i64,
    pub conn_unacked: u32,
    pub peer_initial_window: i64,
    pub peer_max_frame: usize,
    pub decoder: Decoder,
    pub encoder: Encoder,
    /// Frames that serve nothing cost a unit each; served responses give
    /// one back.
    spent: u32,
    /// WINDOW_UPDATE frames the client may still send before they count
    /// against the flood budget: [`UPDATES_PER_DATA`] for each DATA frame
    /// sent (see [`State::data_sent`]).
    updates_allowed: u32,
    /// A connection error found: its GOAWAY is written, nothing more read.
    pub failed: Option<Reason>,
    /// GOAWAY sent for a drain: streams above this id are not served.
    pub goaway_last: Option<u32>,
    /// The client sent GOAWAY.
    pub peer_goaway: bool,
    /// The client acknowledged the PING sent with a handover's first
    /// GOAWAY (see `super::goaway_notice`): it has read that GOAWAY.
    pub notice_acked: bool,
    /// Bytes to send, pushed by the connection task at the end of its turn.
    pub out: BytesMut,
    /// The connection task, to be woken when `out` has bytes.
    pub task: Option<Waker>,
    task_woken: bool,
    /// Streams waiting for `out` to drain below [`WRITE_HIGH`].
    pub room_waiters: Vec<Waker>,
    /// RST_STREAM frames received (for the logs).
    pub resets_received: u64,
    /// The connection task ended: nothing more is written.
    closed: bool,
}

impl State {
    pub(crate) fn new(local: Local) -> State {
        State {
            local,
            streams: Slab::new(),
            index: Vec::new(),
            burst: 0,
            last_peer_id: 0,
            reset_lately: Default::default(),
            closed_lately: [0; CLOSED_MEMORY],
            closed_at: 0,
            conn_send: DEFAULT_WINDOW,
            conn_recv: i64::from(local.connection_window.max(DEFAULT_WINDOW as u32)),
            conn_unacked: 0,
            peer_initial_window: DEFAULT_WINDOW,
            peer_max_frame: frame::MIN_FRAME_SIZE as usize,
            decoder: Decoder::new(4096),
            encoder: Encoder::new(),
            spent: 0,
            updates_allowed: 0,
            failed: None,
            goaway_last: None,
            peer_goaway: false,
            notice_acked: false,
            out: BytesMut::new(),
            task: None,
            task_woken: false,
            room_waiters: Vec::new(),
            resets_received: 0,
            closed: false,
        }
    }

    /// The server's preface: SETTINGS, and the connection window opened
    /// to its configured size.
    pub(crate) fn preface(&mut self) {
        use frame::setting::*;
        let l = self.local;
        frame::put_settings(
            &mut self.out,
            &[
                (MAX_CONCURRENT_STREAMS, l.max_streams),
                (INITIAL_WINDOW_SIZE, l.stream_window),
                (MAX_HEADER_LIST_SIZE, l.max_head as u32),
                (ENABLE_PUSH, 0),
                // Extended CONNECT (RFC 8441): WebSocket over a stream.
                (ENABLE_CONNECT_PROTOCOL, 1),
            ],
        );
        let extra = i64::from(l.connection_window) - DEFAULT_WINDOW;
        if extra > 0 {
            frame::put_window_update(&mut self.out, 0, extra as u32);
        }
    }

    pub(crate) fn key(&self, id: u32) -> Option<usize> {
        self.index.iter().find(|(i, _)| *i == id).map(|&(_, k)| k)
    }

    /// The stream `key` if it is still stream `id`.
    pub(crate) fn stream(&mut self, key: usize, id: u32) -> Option<&mut Stream> {
        self.streams.get_mut(key).filter(|s| s.id == id)
    }

    pub(crate) fn open_stream(&mut self, id: u32, end: bool, content_length: Option<u64>) -> usize {
        if self.streams.capacity() == 0 {
            self.streams.reserve(self.burst);
            self.index.reserve(self.burst);
        }
        let key = self.streams.insert(Stream {
            id,
            send_window: self.peer_initial_window,
            recv_window: i64::from(self.local.stream_window),
            recv_unacked: 0,
            body: BytesMut::new(),
            remote_ended: end,
            local_ended: false,
            reset: None,
            content_length,
            received: 0,
            waker: None,
            trailers: None,
            discarding: None,
        });
        self.index.push((id, key));
        key
    }

    /// Forgets a stream; its task, if it waits, is woken to find it gone.
    /// A stream answered whole while its request body still comes (an
    /// early 403, 404 or 413): the rest of the body, up to
    /// [`DISCARD_MAX`], is read and thrown away with its windows credited,
    /// so that the client finishes sending and takes the answer, where a
    /// RST_STREAM(NO_ERROR), which RFC 9113 §8.1 allows, makes clients
    /// such as curl 7.88 report the whole exchange failed. A body known to
    /// be longer is cut off at once, as before.
    pub(crate) fn discard(&mut self, key: usize) {
        let Some(s) = self.streams.get_mut(key) else {
            return;
        };
        let (id, taken) = (s.id, s.body.len() as u32);
        let left = s.content_length.map(|cl| cl.saturating_sub(s.received));
        if left.is_some_and(|l| l > u64::from(DISCARD_MAX)) || self.closed {
            self.reset(id, Reason::NO_ERROR);
            return;
        }
        s.body.clear();
        s.discarding = Some(DISCARD_MAX);
        self.credit_stream(key, taken);
    }

    pub(crate) fn remove(&mut self, key: usize) {
        if let Some(mut s) = self.streams.try_remove(key) {
            s.wake();
            self.closed_lately[self.closed_at % CLOSED_MEMORY] = s.id;
            self.closed_at += 1;
            if let Some(at) = self.index.iter().position(|&(_, k)| k == key) {
                self.index.swap_remove(at);
            }
            // Body the handler never took is credit the connection owes.
            self.credit_conn(s.body.len() as u32);
            if self.streams.is_empty() {
                // An idle connection keeps no stream storage.
                self.burst = self.streams.capacity();
                self.streams = Slab::new();
                self.index = Vec::new();
            }
        }
    }

    pub(crate) fn was_closed_lately(&self, id: u32) -> bool {
        self.closed_lately.contains(&id)
    }

    pub(crate) fn was_reset_lately(&self, id: u32) -> bool {
        self.reset_lately.contains(id)
    }

    /// Resets a stream (a stream error, or a response that cannot finish).
    pub(crate) fn reset(&mut self, id: u32, reason: Reason) {
        if self.closed {
            if let Some(key) = self.key(id) {
                self.remove(key);
            }
            return;
        }
        frame::put_rst(&mut self.out, id, reason);
        stats::add(|s| &s.resets_sent, 1);
        self.reset_lately.mark(id, self.last_peer_id);
        if let Some(key) = self.key(id) {
            if let Some(s) = self.streams.get_mut(key) {
                s.reset = Some(reason);
                s.local_ended = true;
                s.wake();
            }
            // Whatever the client still sends on it is ignored as reset.
            self.remove(key);
        }
        self.wake_task();
    }

    /// A connection error: GOAWAY naming it, and nothing more is read.
    pub(crate) fn fail(&mut self, reason: Reason) {
        if self.failed.is_some() {
            return;
        }
        self.failed = Some(reason);
        frame::put_goaway(&mut self.out, self.last_peer_id, reason, b"");
        stats::add(|s| &s.goaways_sent, 1);
        for (_, s) in self.streams.iter_mut() {
            s.reset = Some(reason);
            s.wake();
        }
        self.wake_task();
    }

    /// `frames` DATA frames went out: the client may answer them with
    /// window updates.
    pub(crate) fn data_sent(&mut self, frames: usize) {
        let more = (frames as u32).saturating_mul(UPDATES_PER_DATA);
        self.updates_allowed = self.updates_allowed.saturating_add(more).min(UPDATES_HELD);
    }

    /// A WINDOW_UPDATE came: free while DATA sent earned it, else waste.
    pub(crate) fn window_update_came(&mut self) {
        match self.updates_allowed.checked_sub(1) {
            Some(left) => self.updates_allowed = left,
            None => self.waste(),
        }
    }

    /// A frame that served nothing; past the budget the connection ends.
    pub(crate) fn waste(&mut self) {
        self.spent += 1;
        if self.spent > self.local.flood_budget {
            self.fail(Reason::ENHANCE_YOUR_CALM);
        }
    }

    /// A response was served whole: one unit back.
    pub(crate) fn served(&mut self) {
        self.spent = self.spent.saturating_sub(1);
    }

    /// `n` bytes of the connection window are free again.
    pub(crate) fn credit_conn(&mut self, n: u32) {
        self.conn_unacked += n;
        if self.conn_unacked >= self.local.connection_window / 2 && self.failed.is_none() {
            frame::put_window_update(&mut self.out, 0, self.conn_unacked);
            self.conn_recv += i64::from(self.conn_unacked);
            self.conn_unacked = 0;
            self.wake_task();
        }
    }

    /// The handler took `n` bytes of stream `key`'s body.
    pub(crate) fn credit_stream(&mut self, key: usize, n: u32) {
        let half = self.local.stream_window / 2;
        if let Some(s) = self.streams.get_mut(key) {
            s.recv_unacked += n;
            if s.recv_unacked >= half && !s.remote_ended {
                frame::put_window_update(&mut self.out, s.id, s.recv_unacked);
                s.recv_window += i64::from(s.recv_unacked);
                s.recv_unacked = 0;
                self.wake_task();
            }
        }
        self.credit_conn(n);
    }

    /// Adds to every stream's send window (the client's initial window
    /// changed by `delta`); past 2^31-1 is FLOW_CONTROL_ERROR (§6.9.2).
    pub(crate) fn shift_windows(&mut self, delta: i64) -> Result<(), Reason> {
        for (_, s) in self.streams.iter_mut() {
            s.send_window += delta;
            if s.send_window > MAX_WINDOW {
                return Err(Reason::FLOW_CONTROL_ERROR);
            }
            s.wake();
        }
        Ok(())
    }

    /// Wakes every stream: the connection window opened.
    pub(crate) fn wake_senders(&mut self) {
        for (_, s) in self.streams.iter_mut() {
            s.wake();
        }
    }

    /// Tells the connection task that `out` has bytes to send.
    pub(crate) fn wake_task(&mut self) {
        if !self.task_woken {
            if let Some(w) = &self.task {
                self.task_woken = true;
                w.wake_by_ref();
            }
        }
    }

    /// The connection task runs now: later writes must wake it again.
    pub(crate) fn task_polled(&mut self, w: &Waker) {
        self.task_woken = false;
        self.out_ready();
        match &self.task {
            Some(t) if t.will_wake(w) => {}
            _ => self.task = Some(w.clone()),
        }
    }

    /// `out` drained below [`WRITE_HIGH`]: streams waiting may write.
    pub(crate) fn wake_room(&mut self) {
        for w in self.room_waiters.drain(..) {
            w.wake();
        }
    }

    /// Gives the output a pooled buffer if it has none (an idle
    /// connection's went back to the pool).
    pub(crate) fn out_ready(&mut self) {
        if self.out.capacity() == 0 {
            self.out = super::io::pooled();
        }
    }

    /// The connection is gone: every stream's task finds its stream reset.
    pub(crate) fn close(&mut self) {
        if self.failed.is_none() {
            self.failed = Some(Reason::CANCEL);
        }
        for (_, s) in self.streams.iter_mut() {
            s.reset.get_or_insert(Reason::CANCEL);
            s.wake();
        }
        self.closed = true;
        self.wake_room();
        super::io::unpool(std::mem::take(&mut self.out));
    }

    pub(crate) fn open_count(&self) -> usize {
        self.streams.len()
    }
}
