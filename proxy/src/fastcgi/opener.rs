//! Opening a connection to a FastCGI server for a core's queue, in a task
//! of its own, and finding out whether the server serves it.
//!
//! A connection the server's kernel accepted may still wait in its listen
//! backlog for a child that never comes free (every child holds a kept
//! connection). So before any request is written, the connection asks
//! FCGI_GET_VALUES (§4.1; php-fpm answers FCGI_MPXS_CONNS and keeps the
//! connection): an answer means a child reads it. Until then nothing of a
//! request is on it, so giving it up never runs a script twice, and the
//! requests it was opened for wait in the core's queue, not in the backlog.
//! Each `capacity_probe` without an answer tells the learned capacity
//! (`super::learn`) that no child is free. After `patience` (the queue
//! timeout, at least a second) it is given up, and at the drain as soon as
//! no request waits for it.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ringside_http::{Error, Kind};
use ringside_runtime::net::TcpStream;
use ringside_runtime::{shutdown, task};

use super::capacity::Opening;
use super::record::{self, Parsed};
use crate::upstream::acquire::connect;
use crate::upstream::local::{Chosen, Local};

/// How an opening ended.
pub enum Opened {
    /// The server serves it.
    Served(TcpStream),
    Failed(Error),
    /// Unanswered for as long as the queue waits, or the drain began.
    GaveUp,
    /// Unanswered while more than one a core waited: given up at once,
    /// already off the count.
    Shed,
    /// The server closed it without answering FCGI_GET_VALUES.
    NoAnswer,
}

/// Opens a connection to `chosen` for `up`'s queue and gives the outcome
/// to `Local::opened`.
pub async fn open(up: Rc<RefCell<Local>>, chosen: Chosen, how: Opening) {
    // The core that spawned this holds `up` borrowed, and an engine may
    // poll a new task at once (glommio does).
    task::yield_now().await;
    let opened = run(&up, &chosen, how).await;
    up.borrow_mut().opened(&chosen, opened);
}

async fn run(up: &RefCell<Local>, chosen: &Chosen, how: Opening) -> Opened {
    let s = match connect(chosen, up).await {
        Ok(s) => s,
        Err(e) => return Opened::Failed(e),
    };
    let Opening::Ask { probe, patience } = how else {
        return Opened::Served(s);
    };
    let mut out = BytesMut::with_capacity(32);
    record::write_get_values(&mut out, &["FCGI_MPXS_CONNS"]);
    // A fresh socket's buffer takes these few bytes at once.
    if let Err(e) = s.try_write(&mut out) {
        return Opened::Failed(
            Error::new(Kind::ConnectFailed, "asking FCGI_GET_VALUES").because(e),
        );
    }
    if !out.is_empty() {
        return Opened::Failed(Error::new(
            Kind::ConnectFailed,
            "FCGI_GET_VALUES not sent whole",
        ));
    }
    let started = Instant::now();
    let mut buf = BytesMut::with_capacity(256);
    loop {
        match task::timeout(probe, s.readable()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Opened::Failed(
                    Error::new(Kind::ConnectFailed, "reading FCGI_GET_VALUES_RESULT").because(e),
                )
            }
            Err(_) => {
                let waited = started.elapsed() + probe > patience.max(Duration::from_secs(1));
                // At the drain, one nobody waits for any more is let go.
                let unwanted = shutdown::draining() && !up.borrow().has_waiters(chosen);
                if waited || unwanted {
                    return Opened::GaveUp;
                }
                if up.borrow_mut().stalled(chosen) {
                    return Opened::Shed;
                }
                continue;
            }
        }
        match s.try_read(&mut buf) {
            Ok(0) => return Opened::NoAnswer,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                return Opened::Failed(
                    Error::new(Kind::ConnectFailed, "reading FCGI_GET_VALUES_RESULT").because(e),
                )
            }
        }
        match record::parse_record(&buf, 0) {
            Ok(None) => continue,
            Ok(Some((Parsed::GetValuesResult(_) | Parsed::Other(_), used)))
                if used == buf.len() =>
            {
                return Opened::Served(s)
            }
            _ => {
                return Opened::Failed(Error::new(
                    Kind::InvalidResponse,
                    "FastCGI server answered FCGI_GET_VALUES with something else",
                ))
            }
        }
    }
}
