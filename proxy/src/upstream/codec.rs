//! What a protocol to upstreams implements for the one forward loop
//! (`forward::forward`): how one try sends the request on a connection and
//! relays the response. HTTP/1 (`h1`) and FastCGI (`crate::fastcgi::codec`)
//! are the two today; the loop, the pool policy and the retry rules are
//! shared.

use std::cell::RefCell;

use ringside_http::{Error, Exchange};
use ringside_runtime::net::TcpStream;

use super::io::UpSock;
use super::local::{Chosen, Local};

/// How a try that did not fail ended.
pub enum Tried {
    /// Answered; the connection to pool, if it stays usable.
    Done(Option<TcpStream>),
    /// A 502/503/504 that the retry policy sends to another server; nothing
    /// was sent to the client.
    RetryStatus(u16),
    /// A 425 Too Early to a request from early data, to send again once
    /// the client's handshake ends (`super::too_early`); nothing was sent
    /// to the client.
    TooEarly,
}

#[allow(async_fn_in_trait)] // workers are single-threaded: no Send bound wanted
pub trait Codec {
    /// Whether the request may reach a server a second time once it may
    /// have reached one: only then is a try retried after its request was
    /// sent (a stale pooled connection, a timeout, a bad response).
    fn replayable(&self, ex: &Exchange<'_>) -> bool;

    /// Refuses a request this codec cannot send on, before any server is
    /// picked.
    fn admit(&self, _ex: &Exchange<'_>) -> Result<(), Error> {
        Ok(())
    }

    /// One try on `sock`, to `chosen`. `reused`: the connection came from
    /// the pool, so a close before any answer is [`Kind::Stale`]
    /// (`ringside_http::Kind`). `may_retry`: a status the retry policy
    /// retries may come back as [`Tried::RetryStatus`] instead of being
    /// relayed. An error of the client's side ends the forwarding; the
    /// loop decides what to do with the others.
    async fn exchange(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        sock: UpSock,
        reused: bool,
        may_retry: bool,
    ) -> Result<Tried, Error>;

    /// Whether a try to `chosen` takes no connection of its own but a
    /// stream on a shared one (HTTP/2): the loop then calls
    /// [`Codec::exchange_shared`].
    fn multiplexed(&self, _up: &RefCell<Local>, _chosen: &Chosen) -> bool {
        false
    }

    /// One try to `chosen` on a stream of a connection the codec shares
    /// (see [`Codec::multiplexed`]).
    async fn exchange_shared(
        &self,
        _ex: &mut Exchange<'_>,
        _up: &RefCell<Local>,
        _chosen: &Chosen,
        _may_retry: bool,
    ) -> Result<Tried, Error> {
        Err(Error::internal("this codec takes a connection per try"))
    }
}
