//! HTTP/2 to a server (RFC 9113, the client's side), on the same frames
//! and HPACK as the server's side: one connection carries many requests
//! at once, each a [`ClientStream`] owned by the task of the request it
//! carries, all on one core.
//!
//! ```text
//! request task ─ open ─▶ HEADERS into the output ─┐
//!      │ send_data (within the server's windows)  ├─▶ connection task: one send per turn
//!      ▼                                          │
//!   response ◀─ head, DATA, trailers ◀─ frames read and acted on (recv)
//! ```
//!
//! Streams may be opened before the connection is made: their frames
//! wait in the output behind the preface until the socket is given
//! ([`ClientConn::attach`]); a connect that fails fails them as never
//! sent. What a stream has received waits in its state until its task
//! takes it, and the window is given back only as it is taken, so a slow
//! client holds the server back instead of filling memory.

mod fields;
mod opens;
mod recv;
mod state;
mod stream;
mod task;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

pub use fields::FieldList;
pub use state::Lost;
pub use stream::{ClientStream, Response, StreamError};

use self::state::CState;

/// What our side of a connection allows.
#[derive(Clone, Copy, Debug)]
pub struct ClientSettings {
    /// What one stream may receive ahead of its reader.
    pub stream_window: u32,
    /// What the connection may receive ahead of its streams' readers.
    pub conn_window: u32,
    /// The largest response head (or trailer section) taken, decoded.
    pub max_head: usize,
}

/// One HTTP/2 connection to a server, shared by its streams' tasks and
/// its own task on this core.
pub struct ClientConn {
    st: RefCell<CState>,
}

impl ClientConn {
    /// A connection whose socket comes later; streams may open at once.
    pub fn new(settings: ClientSettings) -> Rc<ClientConn> {
        Rc::new(ClientConn {
            st: RefCell::new(CState::new(settings)),
        })
    }

    /// Starts the connection's task on `sock`, sending what waits.
    pub fn attach(self: &Rc<Self>, sock: ringside_runtime::net::TcpStream) {
        ringside_runtime::task::spawn(task::run(self.clone(), sock));
    }

    /// The connect failed: every stream fails as never sent.
    pub fn connect_failed(&self, timed_out: bool) {
        let why = if timed_out {
            Lost::ConnectTimeout
        } else {
            Lost::Connect
        };
        self.st.borrow_mut().fail(why);
    }

    /// The server chose HTTP/1.1 by ALPN: the streams fail as never sent,
    /// to go again over HTTP/1.1.
    pub fn chose_http1(&self) {
        self.st.borrow_mut().fail(Lost::Http1);
    }

    /// Whether a new stream may still go on this connection: not failed,
    /// no GOAWAY, not retired.
    pub fn usable(&self) -> bool {
        self.st.borrow().usable()
    }

    /// Streams open now, and how many the server allows at once.
    pub fn load(&self) -> (usize, usize) {
        let st = self.st.borrow();
        (
            st.streams.len() + st.waiting_open,
            st.peer_max_streams as usize,
        )
    }

    /// No stream opens on it any more; it closes when its last one ends.
    pub fn retire(&self) {
        self.st.borrow_mut().retire();
    }

    /// Since when it has had no stream (`None` while it has one).
    pub fn idle_since(&self) -> Option<Instant> {
        self.st.borrow().idle_since
    }

    /// The keep-alive check, run now and then (the pool's reaper): a
    /// connection quiet for `interval` is PINGed; one whose PING went
    /// unanswered that long, or whose send has waited past `send`, is
    /// dead. False once it is.
    pub fn check(
        &self,
        now: Instant,
        interval: std::time::Duration,
        send: std::time::Duration,
    ) -> bool {
        self.st.borrow_mut().check(now, interval, send)
    }

    /// Waits until the connection is made (or has failed, and why).
    pub async fn connected(&self) -> Result<(), Lost> {
        std::future::poll_fn(|cx| {
            let mut st = self.st.borrow_mut();
            if let Some(l) = st.failed {
                return std::task::Poll::Ready(Err(l));
            }
            if st.connected {
                return std::task::Poll::Ready(Ok(()));
            }
            st.waiters.push(cx.waker().clone());
            std::task::Poll::Pending
        })
        .await
    }
}
