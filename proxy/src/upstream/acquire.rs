//! Getting a try its connection to a server: what the upstream's pool
//! policy grants (`super::policy`), a new connection where it grants one,
//! or the wait in the queue where it says so.
//!
//! [`acquire`] settles the core's accounting on every path it fails on, so
//! the caller has only its own retry to decide.

use std::cell::RefCell;
use std::io;

use ringside_http::{Error, Kind};
use ringside_runtime::net::TcpStream;
use ringside_runtime::task;

use super::addr::PeerAddr;
use super::failure::TlsFailed;
use super::local::{Chosen, Local};
use super::policy::Grant;
use crate::fastcgi::capacity::Waited;

/// A connection to `chosen`: pooled (`true`), newly opened, or handed over
/// after waiting. `fresh_only` skips the pool; `check` peeks a pooled
/// connection before lending it.
pub async fn acquire(
    up: &RefCell<Local>,
    chosen: &Chosen,
    fresh_only: bool,
    check: bool,
) -> Result<(TcpStream, bool), Error> {
    let (grant, timeout) = {
        let mut l = up.borrow_mut();
        let timeout = l.shared.cfg.queue_timeout();
        (l.take(chosen, !fresh_only, check), timeout)
    };
    let waiter = match grant {
        Grant::Pooled(s) => return Ok((s, true)),
        Grant::Open => return open(up, chosen).await.map(|s| (s, false)),
        Grant::Full => return Err(Error::new(Kind::Overloaded, "FastCGI queue full")),
        Grant::Gone => return Err(Error::new(Kind::NoServer, "the server left the upstream")),
        Grant::Wait(w) => w,
    };
    let deadline = ringside_runtime::clock::now() + timeout;
    match waiter.wait(deadline).await {
        Waited::Conn(s) => {
            up.borrow().count_reused(chosen);
            Ok((s, true))
        }
        Waited::Failed(e) => {
            drop(waiter);
            up.borrow_mut().abandon(chosen);
            Err(e)
        }
        Waited::TimedOut => {
            // Whatever was handed over meanwhile goes on to the next waiter.
            let leftover = waiter.leftover();
            drop(waiter);
            let mut l = up.borrow_mut();
            match leftover {
                Some(s) => l.release(chosen, Some(s), None),
                None => l.abandon(chosen),
            }
            Err(Error::new(
                Kind::Overloaded,
                "no FastCGI connection free within queue_timeout",
            ))
        }
    }
}

/// Opens a connection under a grant; a failure gives the grant back.
async fn open(up: &RefCell<Local>, chosen: &Chosen) -> Result<TcpStream, Error> {
    connect(chosen, up)
        .await
        .inspect_err(|e| up.borrow_mut().release(chosen, None, Some(e)))
}

/// Opens a connection to `chosen`, with the TLS handshake where the
/// upstream speaks TLS, all within the connect timeout.
pub(crate) async fn connect(chosen: &Chosen, up: &RefCell<Local>) -> Result<TcpStream, Error> {
    let addr = &chosen.addr;
    let (limit, tls) = {
        let l = up.borrow();
        let tls = crate::upstream::shared::tls_for(&l.shared, &chosen.authority);
        (l.shared.cfg.timeouts.connect, tls)
    };
    let connect_failed =
        |e: io::Error| Error::new(Kind::ConnectFailed, format!("connecting to {addr}")).because(e);
    // A handshake failure keeps its stage in its cause, so that it is
    // reported as TLS's and not as the connect's (`super::failure`).
    let tls_failed = |e: io::Error| {
        Error::new(Kind::ConnectFailed, format!("TLS handshake with {addr}")).because(TlsFailed(e))
    };
    let connecting = async {
        let mut s = match addr {
            PeerAddr::Inet(a) => TcpStream::connect(*a).await,
            PeerAddr::Unix(p) => TcpStream::connect_unix(p),
        }
        .map_err(connect_failed)?;
        if let Some((cfg, name)) = tls {
            s.start_tls_client(cfg, name).map_err(tls_failed)?;
            s.handshake().await.map_err(tls_failed)?;
        }
        Ok::<_, Error>(s)
    };
    match task::timeout(limit, Box::pin(connecting)).await {
        Ok(Ok(s)) => {
            up.borrow().count_opened(addr);
            Ok(s)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::new(
            Kind::ConnectTimeout,
            format!("connecting to {addr} timed out"),
        )),
    }
}
