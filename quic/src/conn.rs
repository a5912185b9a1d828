//! One QUIC connection on its worker: the quinn-proto state, a driver task
//! that runs its timers and sends what it has, and [`Conn`], the handle
//! the protocol above (HTTP/3) reads and writes streams through.
//!
//! Everything is on one thread: the state sits in a `RefCell`, a stream's
//! task that reads or writes leaves its waker by stream, and any change
//! that may have something to send kicks the driver, which runs once the
//! tasks of this turn have, so a turn's writes leave in one batch.

use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    Connection, ConnectionError, ConnectionHandle, Dir, Event, ReadError, StreamEvent, StreamId,
    VarInt, WriteError,
};

use crate::endpoint::Shared;

/// Why a stream's read or write failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// The peer reset the stream (its read side) with this code.
    Reset(u64),
    /// The peer asked us to stop sending with this code.
    Stopped(u64),
    /// The stream is closed here already.
    Closed,
    /// The connection is gone.
    Lost,
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Reset(c) => write!(f, "stream reset by the peer (code {c:#x})"),
            StreamError::Stopped(c) => write!(f, "stream stopped by the peer (code {c:#x})"),
            StreamError::Closed => f.write_str("stream closed"),
            StreamError::Lost => f.write_str("connection lost"),
        }
    }
}

impl std::error::Error for StreamError {}

#[derive(Default)]
struct Wakers {
    read: FxHashMap<StreamId, Waker>,
    write: FxHashMap<StreamId, Waker>,
    stopped: FxHashMap<StreamId, Waker>,
    accept: [Option<Waker>; 2],
    /// Waiting to open a stream of ours in one direction.
    open: [Option<Waker>; 2],
    /// Waiting for the handshake to finish.
    connected: Vec<Waker>,
    closed: Vec<Waker>,
}

impl Wakers {
    fn wake_all(&mut self) {
        self.read.drain().for_each(|(_, k)| k.wake());
        self.write.drain().for_each(|(_, k)| k.wake());
        self.stopped.drain().for_each(|(_, k)| k.wake());
        self.accept
            .iter_mut()
            .filter_map(Option::take)
            .for_each(Waker::wake);
        self.open
            .iter_mut()
            .filter_map(Option::take)
            .for_each(Waker::wake);
        self.connected.drain(..).for_each(Waker::wake);
        self.closed.drain(..).for_each(Waker::wake);
    }
}

pub(crate) struct Inner {
    pub(crate) q: RefCell<Connection>,
    pub(crate) handle: ConnectionHandle,
    ep: Rc<Shared>,
    driver: RefCell<Option<Waker>>,
    /// A turn is due: the driver's wake-up is deferred until the tasks
    /// ready now have run (`kick`).
    due: Cell<bool>,
    wakers: RefCell<Wakers>,
    pub(crate) connected: Cell<bool>,
    lost: RefCell<Option<ConnectionError>>,
}

/// The most GSO batches one connection sends in a turn before it lets the
/// others on its worker run.
const BATCHES_PER_TURN: usize = 16;

impl Inner {
    pub(crate) fn new(q: Connection, handle: ConnectionHandle, ep: Rc<Shared>) -> Rc<Inner> {
        Rc::new(Inner {
            q: RefCell::new(q),
            handle,
            ep,
            driver: RefCell::new(None),
            due: Cell::new(false),
            wakers: RefCell::new(Wakers::default()),
            connected: Cell::new(false),
            lost: RefCell::new(None),
        })
    }

    /// Something may be due to send, or an event to hand on. The turn
    /// waits until the tasks ready now have run (the streams a datagram
    /// woke, each writing its response), so that it sends them together:
    /// woken at each write, half the turns sent nothing and packets went
    /// out a third full (HTTP/3 26 B, -c 100 --streams 10).
    pub(crate) fn kick(&self) {
        if self.due.replace(true) {
            return;
        }
        match self.driver.borrow().as_ref() {
            Some(w) => ringside_runtime::task::wake_after_ready(w),
            None => self.due.set(false),
        }
    }

    /// Hands on what a datagram brought (new streams, data to read) at
    /// once, so the streams it wakes run before the turn that sends
    /// their answers.
    pub(crate) fn hand_on(&self) {
        let mut q = self.q.borrow_mut();
        while let Some(ev) = q.poll() {
            self.dispatch(ev);
        }
    }

    fn dispatch(&self, ev: Event) {
        let mut w = self.wakers.borrow_mut();
        match ev {
            Event::Connected => {
                self.connected.set(true);
                self.ep.handshake_done();
                w.connected.drain(..).for_each(Waker::wake);
                w.open
                    .iter_mut()
                    .filter_map(Option::take)
                    .for_each(Waker::wake);
            }
            // The client's whole ClientHello was read: its transport
            // parameters, and so our stream limits, are known.
            Event::HandshakeDataReady => {
                w.open
                    .iter_mut()
                    .filter_map(Option::take)
                    .for_each(Waker::wake);
            }
            Event::Stream(StreamEvent::Available { dir }) => {
                if let Some(k) = w.open[dir as usize].take() {
                    k.wake();
                }
            }
            Event::ConnectionLost { reason } => {
                tracing::debug!(%reason, "QUIC connection lost");
                if !self.connected.get() {
                    crate::stats::add(|c| &c.handshakes_failed, 1);
                }
                *self.lost.borrow_mut() = Some(reason);
                w.wake_all();
            }
            Event::Stream(StreamEvent::Opened { dir }) => {
                if let Some(k) = w.accept[dir as usize].take() {
                    k.wake();
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => {
                if let Some(k) = w.read.remove(&id) {
                    k.wake();
                }
            }
            Event::Stream(
                StreamEvent::Writable { id }
                | StreamEvent::Finished { id }
                | StreamEvent::Stopped { id, .. },
            ) => {
                if let Some(k) = w.write.remove(&id) {
                    k.wake();
                }
                // A stop also ends a wait on the stream's other side.
                if let Some(k) = w.read.remove(&id) {
                    k.wake();
                }
                if let Some(k) = w.stopped.remove(&id) {
                    k.wake();
                }
            }
            Event::DatagramReceived | Event::DatagramsUnblocked => {}
        }
    }

    /// One turn: timers, what the endpoint must know, events to the
    /// streams, then the datagrams due (with more due than a turn sends,
    /// the task wakes itself to go on after the others). Whether the
    /// connection is drained.
    fn turn(&self, cx: &mut Context<'_>) -> bool {
        let now = Instant::now();
        let mut q = self.q.borrow_mut();
        if q.poll_timeout().is_some_and(|t| t <= now) {
            q.handle_timeout(now);
        }
        let mut drained = false;
        while let Some(ev) = q.poll_endpoint_events() {
            drained |= ev.is_drained();
            if let Some(back) = self.ep.quinn.borrow_mut().handle_event(self.handle, ev) {
                q.handle_event(back);
            }
        }
        while let Some(ev) = q.poll() {
            self.dispatch(ev);
        }
        let more = self.ep.transmit(&mut q, now, BATCHES_PER_TURN);
        if more {
            cx.waker().wake_by_ref();
        }
        drained
    }
}

/// Runs a connection's timers and sends until it is drained, then takes
/// it out of the endpoint's table.
pub(crate) async fn drive(inner: Rc<Inner>) {
    let far = || Instant::now() + Duration::from_secs(3600);
    let mut sleep = Box::pin(ringside_runtime::task::sleep_until(far()));
    let mut armed: Option<Instant> = None;
    poll_fn(|cx| {
        inner.due.set(false);
        {
            let mut d = inner.driver.borrow_mut();
            if !d.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *d = Some(cx.waker().clone());
            }
        }
        loop {
            if inner.turn(cx) {
                return Poll::Ready(());
            }
            let next = inner.q.borrow_mut().poll_timeout();
            if next != armed {
                armed = next;
                sleep.as_mut().reset(next.unwrap_or_else(far));
            }
            match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => armed = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await;
    let lost = inner.q.borrow().stats().path.lost_packets;
    crate::stats::add(|c| &c.lost_packets, lost);
    inner.ep.forget(inner.handle);
    // Streams still waiting learn the connection is gone.
    if inner.lost.borrow().is_none() {
        *inner.lost.borrow_mut() = Some(ConnectionError::LocallyClosed);
    }
    inner.wakers.borrow_mut().wake_all();
}

/// A connection as the protocol above sees it. Cheap to clone.
#[derive(Clone)]
pub struct Conn(pub(crate) Rc<Inner>);

impl Conn {
    fn lost(&self) -> bool {
        self.0.lost.borrow().is_some()
    }

    /// The next stream the peer opened in `dir`; `None` once the
    /// connection is gone.
    pub fn poll_accept(&self, cx: &mut Context<'_>, dir: Dir) -> Poll<Option<StreamId>> {
        if let Some(id) = self.0.q.borrow_mut().streams().accept(dir) {
            // Accepting raises the peer's stream limit: that goes out.
            self.0.kick();
            return Poll::Ready(Some(id));
        }
        if self.lost() {
            return Poll::Ready(None);
        }
        self.0.wakers.borrow_mut().accept[dir as usize] = Some(cx.waker().clone());
        Poll::Pending
    }

    pub async fn accept(&self, dir: Dir) -> Option<StreamId> {
        poll_fn(|cx| self.poll_accept(cx, dir)).await
    }

    /// Opens a stream of ours in one direction (control streams), once
    /// the peer allows one; `None` once the connection is gone.
    ///
    /// A server learns the client's stream limits from the transport
    /// parameters in its ClientHello, and a connection is accepted at the
    /// first Initial datagram: a ClientHello longer than one datagram (a
    /// post-quantum key share, as Chromium sends) leaves the limit at 0
    /// until the rest arrives.
    pub fn poll_open_uni(&self, cx: &mut Context<'_>) -> Poll<Option<StreamId>> {
        if let Some(id) = self.0.q.borrow_mut().streams().open(Dir::Uni) {
            return Poll::Ready(Some(id));
        }
        if self.lost() {
            return Poll::Ready(None);
        }
        self.0.wakers.borrow_mut().open[Dir::Uni as usize] = Some(cx.waker().clone());
        Poll::Pending
    }

    pub async fn open_uni(&self) -> Option<StreamId> {
        poll_fn(|cx| self.poll_open_uni(cx)).await
    }

    /// The next piece of a stream, at most `max` bytes; `None` at its end.
    pub fn poll_read(
        &self,
        cx: &mut Context<'_>,
        id: StreamId,
        max: usize,
    ) -> Poll<Result<Option<Bytes>, StreamError>> {
        if self.lost() {
            return Poll::Ready(Err(StreamError::Lost));
        }
        let mut q = self.0.q.borrow_mut();
        let mut rs = q.recv_stream(id);
        let mut chunks = match rs.read(true) {
            Ok(c) => c,
            Err(_) => return Poll::Ready(Ok(None)),
        };
        let got = chunks.next(max);
        if chunks.finalize().should_transmit() {
            self.0.kick();
        }
        match got {
            Ok(Some(c)) => Poll::Ready(Ok(Some(c.bytes))),
            Ok(None) => Poll::Ready(Ok(None)),
            Err(ReadError::Reset(code)) => Poll::Ready(Err(StreamError::Reset(code.into_inner()))),
            Err(ReadError::Blocked) => {
                self.0
                    .wakers
                    .borrow_mut()
                    .read
                    .insert(id, cx.waker().clone());
                Poll::Pending
            }
        }
    }

    pub async fn read(&self, id: StreamId, max: usize) -> Result<Option<Bytes>, StreamError> {
        poll_fn(|cx| self.poll_read(cx, id, max)).await
    }

    /// Writes what the stream's flow control and the connection's send
    /// buffer take of `data` now, as the bytes they are (no copy): what it
    /// took is cut from the front of `data`; returns how much.
    pub fn poll_write_bytes(
        &self,
        cx: &mut Context<'_>,
        id: StreamId,
        data: &mut Bytes,
    ) -> Poll<Result<usize, StreamError>> {
        if self.lost() {
            return Poll::Ready(Err(StreamError::Lost));
        }
        let before = data.len();
        let r = self
            .0
            .q
            .borrow_mut()
            .send_stream(id)
            .write_chunks(std::slice::from_mut(data));
        match r {
            Ok(_) => {
                self.0.kick();
                Poll::Ready(Ok(before - data.len()))
            }
            Err(WriteError::Blocked) => {
                self.0
                    .wakers
                    .borrow_mut()
                    .write
                    .insert(id, cx.waker().clone());
                Poll::Pending
            }
            Err(WriteError::Stopped(c)) => Poll::Ready(Err(StreamError::Stopped(c.into_inner()))),
            Err(WriteError::ClosedStream) => Poll::Ready(Err(StreamError::Closed)),
        }
    }

    /// Gives the stream all of `data`, waiting for its credit.
    pub async fn write_all_bytes(&self, id: StreamId, mut data: Bytes) -> Result<(), StreamError> {
        while !data.is_empty() {
            poll_fn(|cx| self.poll_write_bytes(cx, id, &mut data)).await?;
        }
        Ok(())
    }

    /// [`Conn::poll_write_bytes`] without waiting.
    pub fn write_bytes_now(&self, id: StreamId, data: &mut Bytes) -> Result<usize, StreamError> {
        let waker = Waker::noop();
        match self.poll_write_bytes(&mut Context::from_waker(waker), id, data) {
            Poll::Ready(r) => r,
            Poll::Pending => {
                self.0.wakers.borrow_mut().write.remove(&id);
                Ok(0)
            }
        }
    }

    /// Appends what the stream has now to `buf`, at most `max` bytes, in
    /// one read of the stream's state (its data and its end together, where
    /// both came); whether the stream ended. Waits only when there is
    /// neither.
    pub fn poll_read_into(
        &self,
        cx: &mut Context<'_>,
        id: StreamId,
        buf: &mut BytesMut,
        max: usize,
    ) -> Poll<Result<bool, StreamError>> {
        if self.lost() {
            return Poll::Ready(Err(StreamError::Lost));
        }
        let mut q = self.0.q.borrow_mut();
        let mut rs = q.recv_stream(id);
        let mut chunks = match rs.read(true) {
            Ok(c) => c,
            Err(_) => return Poll::Ready(Ok(true)),
        };
        let (mut got, mut fin, mut reset) = (0, false, None);
        while got < max {
            match chunks.next(max - got) {
                Ok(Some(c)) => {
                    got += c.bytes.len();
                    buf.extend_from_slice(&c.bytes);
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    reset = Some(code.into_inner());
                    break;
                }
            }
        }
        if chunks.finalize().should_transmit() {
            self.0.kick();
        }
        if let Some(code) = reset {
            return Poll::Ready(Err(StreamError::Reset(code)));
        }
        if got == 0 && !fin {
            self.0
                .wakers
                .borrow_mut()
                .read
                .insert(id, cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Ok(fin))
    }

    pub async fn read_into(
        &self,
        id: StreamId,
        buf: &mut BytesMut,
        max: usize,
    ) -> Result<bool, StreamError> {
        poll_fn(|cx| self.poll_read_into(cx, id, buf, max)).await
    }

    /// [`Conn::poll_read_into`] without waiting: `None` when nothing came.
    pub fn read_into_now(
        &self,
        id: StreamId,
        buf: &mut BytesMut,
        max: usize,
    ) -> Option<Result<bool, StreamError>> {
        let waker = Waker::noop();
        match self.poll_read_into(&mut Context::from_waker(waker), id, buf, max) {
            Poll::Ready(r) => Some(r),
            Poll::Pending => {
                self.0.wakers.borrow_mut().read.remove(&id);
                None
            }
        }
    }

    /// Waits until the peer stops the stream (STOP_SENDING), or the
    /// connection is gone.
    pub async fn stopped(&self, id: StreamId) {
        poll_fn(|cx| {
            if self.lost() {
                return Poll::Ready(());
            }
            match self.0.q.borrow_mut().send_stream(id).stopped() {
                Ok(None) => {
                    self.0
                        .wakers
                        .borrow_mut()
                        .stopped
                        .insert(id, cx.waker().clone());
                    Poll::Pending
                }
                _ => Poll::Ready(()),
            }
        })
        .await
    }

    /// Ends our side of a stream after what was written.
    pub fn finish(&self, id: StreamId) -> Result<(), StreamError> {
        let r = self.0.q.borrow_mut().send_stream(id).finish();
        self.0.kick();
        r.map_err(|e| match e {
            quinn_proto::FinishError::Stopped(c) => StreamError::Stopped(c.into_inner()),
            quinn_proto::FinishError::ClosedStream => StreamError::Closed,
        })
    }

    /// Abandons our side of a stream with an application error code.
    pub fn reset(&self, id: StreamId, code: u64) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        let _ = self.0.q.borrow_mut().send_stream(id).reset(code);
        self.0.kick();
    }

    /// Asks the peer to stop sending on a stream; what it sent is dropped.
    pub fn stop(&self, id: StreamId, code: u64) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        let _ = self.0.q.borrow_mut().recv_stream(id).stop(code);
        self.0.kick();
    }

    /// Closes the connection with an application error code.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        let now = Instant::now();
        self.0
            .q
            .borrow_mut()
            .close(now, code, Bytes::copy_from_slice(reason));
        self.0.kick();
    }

    /// Waits until the connection is gone.
    pub async fn closed(&self) {
        poll_fn(|cx| {
            if self.lost() {
                return Poll::Ready(());
            }
            self.0.wakers.borrow_mut().closed.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    pub fn is_closed(&self) -> bool {
        self.lost()
    }

    /// The client's address now (it changes with a migration).
    pub fn remote_address(&self) -> SocketAddr {
        self.0.q.borrow().remote_address()
    }

    /// The address the worker's socket is bound to.
    pub fn local_address(&self) -> SocketAddr {
        self.0.ep.local
    }

    /// The client's certificate chain, where it sent one.
    pub fn peer_certificates(&self) -> Option<Vec<rustls::pki_types::CertificateDer<'static>>> {
        let q = self.0.q.borrow();
        let any = q.crypto_session().peer_identity()?;
        any.downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
            .ok()
            .map(|b| *b)
    }

    /// Waits until the handshake finished (the client's certificate, if
    /// any, is known from then), or the connection is gone.
    pub async fn connected(&self) {
        poll_fn(|cx| {
            if self.0.connected.get() || self.lost() {
                return Poll::Ready(());
            }
            self.0
                .wakers
                .borrow_mut()
                .connected
                .push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Whether a handshake finished.
    pub fn is_connected(&self) -> bool {
        self.0.connected.get()
    }

    /// Whether the handshake is still under way: what the client's streams
    /// hold now came in 0-RTT, which an attacker may have replayed. Asked
    /// of quinn-proto's state, which knows the handshake's end before
    /// [`Conn::connected`] hears of it.
    pub fn is_handshaking(&self) -> bool {
        self.0.q.borrow().is_handshaking()
    }

    /// Whether the client's 0-RTT was taken (`[http3] early_data` and a
    /// resumed session): only then can a stream come before the handshake
    /// ends.
    pub fn early_data_accepted(&self) -> bool {
        self.0.q.borrow().has_0rtt()
    }

    /// Packets this connection judged lost so far.
    pub fn lost_packets(&self) -> u64 {
        self.0.q.borrow().stats().path.lost_packets
    }
}
