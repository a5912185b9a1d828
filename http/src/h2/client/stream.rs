//! One request on a client connection, as the task that sends it sees it:
//! open with a head, send the body within the server's windows, then
//! take the response head, its body piece by piece and its trailers.
//! Dropping the handle cancels a stream not yet ended both ways.

use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use bytes::Bytes;

use super::fields::FieldList;
use super::opens::OpenWait;
use super::state::{CState, Lost, WRITE_HIGH};
use super::ClientConn;
use crate::h2::frame::{self, Reason};

/// Why a stream did not carry its exchange to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// The server never processed it (REFUSED_STREAM, or above the last
    /// stream of its GOAWAY): it may go again, anywhere.
    Refused,
    /// The server reset it.
    Reset(Reason),
    /// What the server sent on it was malformed; we reset it.
    Malformed(&'static str),
    /// The connection failed under it.
    Lost(Lost),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Refused => f.write_str("the server refused the stream"),
            StreamError::Reset(r) => write!(f, "the server reset the stream ({r})"),
            StreamError::Malformed(why) => write!(f, "malformed response: {why}"),
            StreamError::Lost(l) => write!(f, "the connection failed: {l:?}"),
        }
    }
}

/// A response head.
pub struct Response {
    pub status: u16,
    pub fields: FieldList,
}

pub struct ClientStream {
    conn: Rc<ClientConn>,
    id: u32,
}

impl ClientConn {
    /// Opens a stream with a request head: `head` encodes its fields
    /// (pseudo-fields first) with the connection's HPACK encoder. Waits
    /// while the server allows no more streams. `end`: no body follows.
    pub async fn open(
        self: &Rc<Self>,
        head: impl FnOnce(&mut crate::h2::hpack::Encoder, &mut bytes::BytesMut),
        end: bool,
    ) -> Result<ClientStream, StreamError> {
        let mut wait = Waiting {
            conn: self,
            w: Rc::default(),
            counted: None,
        };
        let ready = poll_fn(|cx| {
            let mut st = self.st.borrow_mut();
            let again = st.opens.polled(&wait.w);
            match st.failed {
                // Never made: the failure is the connect's.
                Some(l @ (Lost::Connect | Lost::ConnectTimeout | Lost::Http1)) => {
                    return Poll::Ready(Err(lost(l)))
                }
                // Lost while this waited for a stream: nothing of it was
                // sent, so it may go on another connection.
                Some(_) => return Poll::Ready(Err(StreamError::Refused)),
                None => {}
            }
            if !st.usable() {
                return Poll::Ready(Err(StreamError::Refused));
            }
            if st.has_slot() {
                return Poll::Ready(Ok(()));
            }
            if wait.counted.is_none() {
                // A stream's end on this connection ends the wait, not a
                // completion of this request's own: the core's coalesced
                // wait leaves it out.
                wait.counted = Some(ringside_runtime::coalesce::Queued::new());
                st.waiting_open += 1;
            }
            // Woken and beaten to the slot: first in line again.
            st.opens.wait(&wait.w, cx.waker(), again);
            Poll::Pending
        })
        .await;
        drop(wait);
        let mut st = self.st.borrow_mut();
        ready?;
        let id = st.open();
        let start = st.out.len();
        st.out.extend_from_slice(&[0; frame::HEADER_LEN]);
        let st = &mut *st;
        st.enc.begin_block(&mut st.out);
        head(&mut st.enc, &mut st.out);
        frame::frame_block(&mut st.out, start, id, end, st.peer_max_frame);
        if end {
            if let Some(s) = st.streams.get_mut(&id) {
                s.local_ended = true;
            }
        }
        st.wake_task();
        Ok(ClientStream {
            conn: self.clone(),
            id,
        })
    }
}

/// An open's place in line: on its end (opened, failed, or dropped
/// while waiting) it leaves the count, and a wake it had and did not use
/// goes to the next in line.
struct Waiting<'a> {
    conn: &'a ClientConn,
    w: Rc<OpenWait>,
    /// In the connection's count of waiting opens, and queued on the core.
    counted: Option<ringside_runtime::coalesce::Queued>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Ok(mut st) = self.conn.st.try_borrow_mut() else {
            return;
        };
        if self.counted.is_some() {
            st.waiting_open -= 1;
        }
        if st.opens.polled(&self.w) {
            st.wake_opens();
        }
    }
}

fn lost(l: Lost) -> StreamError {
    StreamError::Lost(l)
}

impl ClientStream {
    /// Sends `data` (all of it, in DATA frames within the windows and the
    /// output's bound); `end` ends the request. Cancel-safe: `data` is
    /// advanced past what was framed, so a caller that stops waiting (to
    /// relay the response meanwhile) sends the rest later.
    pub async fn send_data(&self, data: &mut &[u8], end: bool) -> Result<(), StreamError> {
        if data.is_empty() && !end {
            return Ok(());
        }
        loop {
            let room = poll_fn(|cx| {
                let mut st = self.conn.st.borrow_mut();
                if self.answered(&st) {
                    // RFC 9113 §8.1: a whole response, then RST_STREAM
                    // NO_ERROR: the rest of the request is not wanted.
                    return Poll::Ready(Ok(None));
                }
                if let Some(e) = self.broken(&st) {
                    return Poll::Ready(Err(e));
                }
                let s = &st.streams[&self.id];
                let window = s.send_window.min(st.conn_send);
                if data.is_empty() || (window > 0 && st.out.len() < WRITE_HIGH) {
                    return Poll::Ready(Ok(Some(window.max(0) as usize)));
                }
                st.waiters.push(cx.waker().clone());
                if let Some(s) = st.streams.get_mut(&self.id) {
                    s.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            })
            .await?;
            let Some(room) = room else {
                *data = &[];
                return Ok(());
            };
            let mut st = self.conn.st.borrow_mut();
            let n = data.len().min(room);
            let max = st.peer_max_frame;
            let last = n == data.len();
            let mut at = 0;
            loop {
                let piece = (n - at).min(max);
                frame::put_data(
                    &mut st.out,
                    self.id,
                    &data[at..at + piece],
                    end && last && at + piece == n,
                );
                at += piece;
                if at >= n {
                    break;
                }
            }
            st.conn_send -= n as i64;
            let s = st.streams.get_mut(&self.id).expect("checked above");
            s.send_window -= n as i64;
            if end && last {
                s.local_ended = true;
            }
            st.wake_task();
            *data = &data[n..];
            if last {
                return Ok(());
            }
        }
    }

    /// Ends the request with a trailer section: a HEADERS frame with
    /// END_STREAM (§8.1). Names must be lower case; header blocks are not
    /// flow-controlled, so this never waits.
    pub fn send_trailers(&self, fields: &FieldList) -> Result<(), StreamError> {
        let mut st = self.conn.st.borrow_mut();
        if self.answered(&st) {
            return Ok(());
        }
        if let Some(e) = self.broken(&st) {
            return Err(e);
        }
        let start = st.out.len();
        st.out.extend_from_slice(&[0; frame::HEADER_LEN]);
        let st = &mut *st;
        st.enc.begin_block(&mut st.out);
        for (n, v) in fields.iter() {
            st.enc.field(n, v, &mut st.out);
        }
        frame::frame_block(&mut st.out, start, self.id, true, st.peer_max_frame);
        if let Some(s) = st.streams.get_mut(&self.id) {
            s.local_ended = true;
        }
        st.wake_task();
        Ok(())
    }

    /// Whether the server answered whole and then said it wants no more
    /// of the request (RST_STREAM NO_ERROR).
    fn answered(&self, st: &CState) -> bool {
        st.streams
            .get(&self.id)
            .is_some_and(|s| s.remote_ended && s.reset == Some(Reason::NO_ERROR))
    }

    /// Why the stream cannot go on, if it cannot.
    fn broken(&self, st: &CState) -> Option<StreamError> {
        let Some(s) = st.streams.get(&self.id) else {
            return Some(StreamError::Lost(Lost::Closed));
        };
        if s.remote_ended && s.reset == Some(Reason::NO_ERROR) {
            return None;
        }
        match s.reset {
            Some(_) if s.malformed.is_some() => s.malformed.map(StreamError::Malformed),
            Some(Reason::REFUSED_STREAM) => Some(StreamError::Refused),
            Some(r) => Some(StreamError::Reset(r)),
            None => st.failed.map(lost),
        }
    }

    /// The next response head: interim ones (1xx) first, then the final.
    pub async fn head(&self) -> Result<Response, StreamError> {
        self.wait(|st, id| {
            let s = st.streams.get_mut(&id)?;
            if let Some((status, fields)) = s.pop_head() {
                return Some(Ok(Response { status, fields }));
            }
            (s.remote_ended && s.reset.is_none()).then_some(Err(StreamError::Malformed(
                "the stream ended without a response",
            )))
        })
        .await
    }

    /// The next piece of the response body, `None` at its end (the
    /// trailers, if any, are then [`ClientStream::trailers`]).
    pub async fn data(&self) -> Result<Option<Bytes>, StreamError> {
        self.wait(|st, id| {
            let s = st.streams.get_mut(&id)?;
            if !s.data.is_empty() {
                let piece = s.data.split().freeze();
                st.stream_taken(id, piece.len());
                return Some(Ok(Some(piece)));
            }
            (s.remote_ended && matches!(s.reset, None | Some(Reason::NO_ERROR))).then_some(Ok(None))
        })
        .await
    }

    /// Waits until `take` finds what it wants in the stream's state, or
    /// the stream cannot go on; woken by the frames that change it.
    async fn wait<T>(
        &self,
        mut take: impl FnMut(&mut CState, u32) -> Option<Result<T, StreamError>>,
    ) -> Result<T, StreamError> {
        poll_fn(|cx| {
            let mut st = self.conn.st.borrow_mut();
            if let Some(r) = take(&mut st, self.id) {
                return Poll::Ready(r);
            }
            if let Some(e) = self.broken(&st) {
                return Poll::Ready(Err(e));
            }
            if let Some(s) = st.streams.get_mut(&self.id) {
                s.waker = Some(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Whether body bytes are here to take without waiting.
    pub fn has_data(&self) -> bool {
        let st = self.conn.st.borrow();
        st.streams
            .get(&self.id)
            .is_some_and(|s| !s.data.is_empty() || s.remote_ended)
    }

    /// Whether the server refused the stream unprocessed (REFUSED_STREAM,
    /// or past its GOAWAY's last stream) before any response head.
    pub fn refused(&self) -> bool {
        let st = self.conn.st.borrow();
        st.streams.get(&self.id).is_some_and(|s| {
            s.reset == Some(Reason::REFUSED_STREAM) && !s.final_head && s.head.is_none()
        })
    }

    /// Whether the response ended with its head: no body, no trailers (a
    /// gRPC "trailers-only" answer).
    pub fn ended_with_head(&self) -> bool {
        let st = self.conn.st.borrow();
        st.streams.get(&self.id).is_some_and(|s| {
            s.remote_ended && s.head.is_none() && s.data.is_empty() && s.trailers.is_none()
        })
    }

    /// The trailer section the response ended with, if it had one.
    pub fn trailers(&self) -> Option<FieldList> {
        let mut st = self.conn.st.borrow_mut();
        st.streams.get_mut(&self.id)?.trailers.take()
    }
}

impl Drop for ClientStream {
    fn drop(&mut self) {
        self.conn.st.borrow_mut().close_stream(self.id);
    }
}
