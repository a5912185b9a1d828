//! Forwarding one request to an upstream, whatever it speaks: the one loop
//! that picks a server, gets a connection by the upstream's pool policy,
//! hands the try to the protocol's codec, and decides from the error
//! whether another try may follow.
//!
//! ```text
//! pick peer ─▶ acquire (pooled, new, or after waiting) ─ fails: passive fail,
//!    ▲              │                                   retry if nothing was sent
//!    │ retry        ▼
//!    └──────── codec: send request, relay response ─── stale pooled conn:
//!                   │                                  again on a fresh one if replayable
//!                   │ timeout, bad response: retry if the policy says so and
//!                   │ the request is replayable and nothing reached the client
//!                   ▼
//!              release: the connection to the pool (or a waiter) if clean
//! ```
//!
//! A request is *replayable* when the codec says it may reach a server a
//! second time after its connection was found stale (for HTTP: idempotent
//! and without a body; for FastCGI: without a body); a failure after the
//! request may have run is retried only for an idempotent one. A request whose
//! body was never read can still be retried when no byte reached a server
//! (connect failures), since the body is read only once a connection
//! exists. What is answered when every try failed is the last error's
//! status, decided by the error type (502, 503 or 504).
//!
//! A 425 Too Early to a request served from HTTP/3 early data goes round
//! once more after the client's handshake, outside the retry policy
//! (`super::too_early`).

use std::cell::RefCell;

use ringside_http::{Error, Exchange, Kind, Side};

use super::acquire::acquire;
use super::addr::PeerAddr;
use super::balance::hash_key;
use super::codec::{Codec, Tried};
use super::failure::Reason;
use super::io::UpSock;
use super::local::{Chosen, Local};
use super::outcome::Outcome;
use super::settings::{Balance, HashKey};

/// Proxies `ex` to the upstream in `up`, speaking `codec`, and notes in
/// the exchange's tag what the tries came to (`super::outcome`).
pub async fn forward<C: Codec>(
    ex: &mut Exchange<'_>,
    up: &RefCell<Local>,
    codec: &C,
) -> Result<(), Error> {
    let mut outcome = Outcome::default();
    let r = tries(ex, up, codec, &mut outcome).await;
    let route = ex.tag() as u32;
    ex.set_tag(outcome.pack(route));
    r
}

async fn tries<C: Codec>(
    ex: &mut Exchange<'_>,
    up: &RefCell<Local>,
    codec: &C,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let (retry, key) = {
        let l = up.borrow();
        (l.shared.cfg.retry, balance_key(ex, &l.shared.cfg.balance))
    };
    codec.admit(ex)?;
    let replayable = codec.replayable(ex);
    let mut tries = Tries {
        tried: Vec::new(),
        left: retry.count,
        fresh_only: false,
        last: None,
    };
    loop {
        let chosen = up.borrow_mut().pick(&tries.tried, key);
        let Some(chosen) = chosen else {
            // With every server tried, the last failure decides 502 or 504;
            // its cause was logged when it happened.
            if let Some(last) = tries.last {
                outcome.ended_there();
                return Err(last);
            }
            let e = Error::new(Kind::NoServer, "no live upstream server");
            up.borrow_mut().note_no_server(&e);
            outcome.failed(Some(Reason::NoServer));
            return Err(e);
        };
        let may_retry = replayable && tries.left > 0;
        let tried = if codec.multiplexed(up, &chosen) {
            if !up.borrow_mut().begin(&chosen) {
                outcome.failed(Some(Reason::NoServer));
                return Err(Error::new(Kind::NoServer, "the server left the upstream"));
            }
            codec.exchange_shared(ex, up, &chosen, may_retry).await
        } else {
            let (sock, reused) = match acquire(up, &chosen, tries.fresh_only, !replayable).await {
                Ok(got) => got,
                Err(e) => {
                    tracing::debug!(server = %chosen.addr, error = %e, "no connection to the upstream");
                    if !e.kind().server_failed() {
                        // What acquire did not release a connection with (a
                        // queue full or waited out) is counted here.
                        up.borrow_mut().note_failure(&chosen, &e);
                    }
                    if e.kind().nothing_sent() && retry.on.connect && tries.left > 0 {
                        outcome.failed(Reason::of(&e));
                        outcome.went_on(None);
                        tries.another(&chosen, Some(e));
                        continue;
                    }
                    outcome.failed(Reason::of(&e));
                    return Err(e);
                }
            };
            let sock = UpSock::new(sock);
            codec
                .exchange(ex, up, &chosen, sock, reused, may_retry)
                .await
        };
        let e = match tried {
            Ok(Tried::Done(keep)) => {
                up.borrow_mut().release(&chosen, keep, None);
                outcome.answered(ex.status());
                return Ok(());
            }
            Ok(Tried::RetryStatus(status)) => {
                up.borrow_mut().release(&chosen, None, None);
                tracing::debug!(server = %chosen.addr, status, "retrying on another server");
                outcome.went_on(Some(status));
                // Should no server be left, the client is answered for what
                // this one said, not for a lack of servers.
                let kind = match status {
                    503 => Kind::Overloaded,
                    504 => Kind::UpstreamTimeout,
                    _ => Kind::InvalidResponse,
                };
                tries.another(&chosen, None);
                tries.last = Some(Error::new(
                    kind,
                    format!("{} answered {status}", chosen.addr),
                ));
                continue;
            }
            Ok(Tried::TooEarly) => {
                // Its body unread, the connection is not kept.
                up.borrow_mut().release(&chosen, None, None);
                tracing::debug!(server = %chosen.addr, "425 Too Early: again once the client's handshake ends");
                outcome.went_on(None);
                if !ex.handshake_done().await {
                    let gone = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
                    return Err(Error::client_gone("finishing the handshake", gone));
                }
                // Not early now, so a second 425 goes to the client; the
                // same server may be picked, and no retry is used up.
                continue;
            }
            Err(e) => e,
        };
        up.borrow_mut().release(&chosen, None, Some(&e));
        if ex.responded() {
            // The server's head reached the client before the try broke.
            outcome.answered(ex.status());
        }
        if e.side() == Side::Client {
            return Err(e);
        }
        if e.kind().nothing_sent() && retry.on.connect && tries.left > 0 && !ex.responded() {
            // A stream on a connection that could not be made: nothing of
            // the request was taken from the client yet.
            outcome.failed(Reason::of(&e));
            outcome.went_on(None);
            tries.another(&chosen, Some(e));
            continue;
        }
        if e.kind() == Kind::Stale && replayable && !tries.fresh_only && !ex.responded() {
            // A pooled connection the server had closed: not its fault,
            // and the same server may answer on a fresh one.
            tries.fresh_only = true;
            continue;
        }
        tracing::debug!(server = %chosen.addr, error = %e, "upstream try failed");
        let retry_ok = match e.kind() {
            Kind::UpstreamTimeout => retry.on.timeout,
            Kind::InvalidResponse | Kind::Stale => retry.on.invalid_response,
            _ => false,
        };
        // The request may have run: only a method that may run twice goes
        // again (a FastCGI request without a body is replayable when its
        // pooled connection was stale, but a POST is not idempotent).
        if retry_ok && replayable && ex.method().idempotent() && tries.left > 0 && !ex.responded() {
            outcome.failed(Reason::of(&e));
            outcome.went_on(None);
            tries.another(&chosen, Some(e));
            continue;
        }
        outcome.failed(Reason::of(&e));
        return Err(e);
    }
}

/// Where a request's tries stand.
struct Tries {
    /// Servers tried already, which the next pick skips.
    tried: Vec<PeerAddr>,
    /// Further tries the retry policy allows.
    left: u32,
    /// The next try skips the pool (a pooled connection was stale).
    fresh_only: bool,
    /// What the last failed try failed with.
    last: Option<Error>,
}

impl Tries {
    /// Moves on to another server after `chosen` (the caller checked that a
    /// try is left), noting why.
    fn another(&mut self, chosen: &Chosen, failure: Option<Error>) {
        self.left -= 1;
        self.tried.push(chosen.addr.clone());
        self.fresh_only = false;
        if failure.is_some() {
            self.last = failure;
        }
    }
}

fn balance_key(ex: &Exchange<'_>, b: &Balance) -> Option<u64> {
    let Balance::Hash(k) = b else { return None };
    request_key(ex, k)
}

/// The hash of what `k` names in the request; `None` when it has none.
pub(crate) fn request_key(ex: &Exchange<'_>, k: &HashKey) -> Option<u64> {
    match k {
        HashKey::ClientIp => ex.peer().ok().map(|a| match a.ip() {
            std::net::IpAddr::V4(ip) => hash_key(&ip.octets()),
            std::net::IpAddr::V6(ip) => hash_key(&ip.octets()),
        }),
        HashKey::Header(name) => ex.header(name).map(hash_key),
        HashKey::Cookie(name) => ex
            .headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case(b"cookie"))
            .flat_map(|(_, v)| v.split(|&b| b == b';'))
            .find_map(|pair| {
                let pair = pair.trim_ascii();
                let eq = pair.iter().position(|&b| b == b'=')?;
                (&pair[..eq] == name.as_bytes()).then(|| hash_key(&pair[eq + 1..]))
            }),
    }
}
