//! One request to a FastCGI server and its response back.
//!
//! ```text
//! script? ─no─▶ static files      missing ─▶ 404 (the backend never asked)
//!    │ yes
//!    ▼
//! connection: pooled, or a free slot of this core's share, or wait in the
//!    │        core's queue (full or timed out: 503)
//!    ▼
//! BEGIN_REQUEST (KEEP_CONN) + PARAMS + STDIN (streamed from the client)
//!    ▼
//! STDOUT: the CGI head (Status, Location, headers), then the body streams
//! STDERR: logged with the script name
//! END_REQUEST: done; overloaded or can't-multiplex before a response: 503
//!    ▼
//! connection back to the first waiter, or to the pool, if the exchange
//! ended cleanly; else closed and its slot freed
//! ```

use std::cell::RefCell;
use std::io;
use std::time::Instant;

use bytes::{Buf as _, BytesMut};
use ringside_runtime::http::{Body, BodyKind, Exchange};
use ringside_runtime::net::TcpStream;

use super::capacity::{Grant, Waited};
use super::cgi_head::{is_hop_by_hop, parse_cgi_head, CgiHead};
use super::params::{encode_params, CgiRequest};
use super::record::{self, RecordType, Step, StreamReader};
use crate::upstream::forward::{connect, Fail};
use crate::upstream::io::{Buf, UpSock};
use crate::upstream::local::{Chosen, Local};
use crate::upstream::settings::FastCgiRoute;
use crate::upstream::shared::PeerAddr;

/// The one request id used per connection (no multiplexing).
const REQUEST_ID: u16 = 1;
/// The longest CGI head accepted from a script.
const MAX_CGI_HEAD: usize = 64 * 1024;

/// Why a FastCGI exchange failed before the response started.
enum Failed {
    /// Answer this status (502, 503 or 504).
    Status(u16, String),
    /// A pooled connection was found closed before anything came back.
    Stale,
    /// The client went away or broke its body.
    Client(io::Error),
}

/// Runs `script_name` (already known to exist) for `ex`.
#[allow(clippy::too_many_arguments)]
pub async fn forward(
    ex: &mut Exchange<'_>,
    route: &FastCgiRoute,
    up: &RefCell<Local>,
    script_name: &str,
    path_info: &str,
) -> io::Result<()> {
    let replayable = ex.body_kind() == BodyKind::Empty;
    let mut fresh_only = false;
    let mut tried: Vec<PeerAddr> = Vec::new();
    loop {
        let chosen = up.borrow_mut().pick(&tried, None);
        let Some(chosen) = chosen else {
            return answer(ex, 502, "no live FastCGI server");
        };
        let got = acquire(up, &chosen, fresh_only, !replayable).await;
        let (stream, reused) = match got {
            Ok(x) => x,
            Err(Failed::Status(s, why)) => {
                if s == 502 && up.borrow().shared.cfg.retry.on.connect {
                    tried.push(chosen.addr.clone());
                    if tried.len() <= up.borrow().shared.cfg.retry.count as usize {
                        continue;
                    }
                }
                return answer(ex, s, &why);
            }
            Err(_) => return answer(ex, 502, "FastCGI connect failed"),
        };
        let sock = UpSock::new(stream);
        match exchange(ex, route, up, sock, script_name, path_info, reused).await {
            Ok(keep) => {
                up.borrow_mut().fcgi_release(&chosen, keep, false);
                return Ok(());
            }
            Err(Failed::Stale) if replayable && !fresh_only && !ex.responded() => {
                up.borrow_mut().fcgi_release(&chosen, None, false);
                fresh_only = true;
            }
            Err(Failed::Client(e)) => {
                up.borrow_mut().fcgi_release(&chosen, None, false);
                return Err(e);
            }
            Err(Failed::Stale) => {
                up.borrow_mut().fcgi_release(&chosen, None, false);
                return finish_failed(ex, 502, "FastCGI connection closed");
            }
            Err(Failed::Status(s, why)) => {
                up.borrow_mut().fcgi_release(&chosen, None, s != 503);
                tracing::warn!(
                    script = script_name,
                    status = s,
                    why,
                    "FastCGI request failed"
                );
                return finish_failed(ex, s, &why);
            }
        }
    }
}

fn finish_failed(ex: &mut Exchange<'_>, status: u16, why: &str) -> io::Result<()> {
    if ex.responded() {
        // Mid-body: the client connection closes without a clean end.
        return Err(io::Error::other(format!(
            "FastCGI failed mid-response: {why}"
        )));
    }
    answer(ex, status, why)
}

/// A connection to `chosen`: pooled, newly opened within this core's
/// share, or handed over after waiting in the queue.
async fn acquire(
    up: &RefCell<Local>,
    chosen: &Chosen,
    fresh_only: bool,
    check: bool,
) -> Result<(TcpStream, bool), Failed> {
    let (grant, timeout) = {
        let mut l = up.borrow_mut();
        let timeout = l.shared.cfg.fastcgi.queue_timeout;
        match l.fcgi_take(chosen, !fresh_only, check) {
            Ok(s) => return Ok((s, true)),
            Err(g) => (g, timeout),
        }
    };
    let waiter = match grant {
        Grant::Open => return open(up, chosen).await.map(|s| (s, false)),
        Grant::Full => {
            return Err(Failed::Status(503, "FastCGI queue full".into()));
        }
        Grant::Wait(w) => w,
    };
    let deadline = Instant::now() + timeout;
    let borrowing = up.borrow().fcgi_borrowing(chosen);
    let recheck = || up.borrow_mut().fcgi_poll(chosen);
    let waited = waiter
        .wait(deadline, borrowing.then_some(&recheck as &dyn Fn()))
        .await;
    match waited {
        Waited::Conn(s) => Ok((s, true)),
        Waited::Open => open(up, chosen).await.map(|s| (s, false)),
        Waited::TimedOut => {
            // Whatever was handed over meanwhile goes on to the next waiter.
            let leftover = waiter.leftover();
            let slot = waiter.got_slot();
            drop(waiter);
            let mut l = up.borrow_mut();
            if let Some(s) = leftover {
                l.fcgi_release(chosen, Some(s), false);
            } else if slot {
                l.fcgi_release(chosen, None, false);
            } else {
                l.fcgi_abandon(chosen);
            }
            Err(Failed::Status(
                503,
                "no FastCGI connection free within queue_timeout".into(),
            ))
        }
    }
}

async fn open(up: &RefCell<Local>, chosen: &Chosen) -> Result<TcpStream, Failed> {
    match connect(chosen, up).await {
        Ok(s) => Ok(s),
        Err(f) => {
            up.borrow_mut().fcgi_release(chosen, None, true);
            let status = if matches!(f, Fail::ConnectTimeout) {
                504
            } else {
                502
            };
            Err(Failed::Status(status, f.to_string()))
        }
    }
}

/// Sends the request and relays the response; the connection back when it
/// stays usable.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    ex: &mut Exchange<'_>,
    route: &FastCgiRoute,
    up: &RefCell<Local>,
    mut sock: UpSock,
    script_name: &str,
    path_info: &str,
    reused: bool,
) -> Result<Option<TcpStream>, Failed> {
    let (timeouts, keep_conn) = {
        let l = up.borrow();
        (l.shared.cfg.timeouts, l.shared.cfg.fastcgi.keep_conn)
    };
    let mut out = Buf::take();
    record::write_begin_request(&mut out, REQUEST_ID, record::ROLE_RESPONDER, keep_conn);
    {
        let mut params = Buf::take();
        let peer = ex.peer().ok();
        let local = sock_local(ex);
        let filename = format!("{}{script_name}", route.root.display());
        let content_length = match ex.body_kind() {
            BodyKind::Length(n) => Some(n),
            BodyKind::Empty => None,
            // Chunked bodies reach PHP as a stream without a length.
            BodyKind::Chunked => None,
        };
        let host = ex.host().unwrap_or(b"");
        let server_name = host.split(|&b| b == b':').next().unwrap_or(b"");
        let req = CgiRequest {
            method: ex.method_bytes(),
            request_uri: ex.target(),
            query: ex.query().unwrap_or(b""),
            script_name: script_name.as_bytes(),
            script_filename: filename.as_bytes(),
            path_info: path_info.as_bytes(),
            document_root: route.root.as_os_str().as_encoded_bytes(),
            server_name,
            server_port: local.map_or(80, |a| a.port()),
            server_protocol: match ex.version() {
                ringside_runtime::http::Version::Http10 => b"HTTP/1.0",
                _ => b"HTTP/1.1",
            },
            server_addr: local.map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip()),
            remote_addr: peer.map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.ip()),
            remote_port: peer.map_or(0, |a| a.port()),
            https: ex.is_tls(),
            content_type: ex.header("content-type"),
            content_length,
            server_software: b"ringside",
        };
        encode_params(&mut params, &req, ex.headers());
        record::write_stream(&mut out, RecordType::Params, REQUEST_ID, &params);
        record::write_stream(&mut out, RecordType::Params, REQUEST_ID, b"");
    }
    let sent = send_stdin(ex, &mut sock, &mut out, timeouts.send).await;
    match sent {
        Ok(()) => {}
        Err(Failed::Client(e)) => return Err(Failed::Client(e)),
        Err(_) if reused => return Err(Failed::Stale),
        Err(f) => return Err(f),
    }
    drop(out);
    let ended_clean = relay_stdout(ex, &mut sock, script_name, reused, timeouts).await?;
    let clean = ended_clean && !sock.has_pending() && !sock.expired();
    Ok((clean && keep_conn).then(|| sock.into_stream()))
}

fn sock_local(ex: &Exchange<'_>) -> Option<std::net::SocketAddr> {
    ex.local_addr().ok()
}

/// STDIN records from the client's body, each piece sent as it comes; the
/// empty record ends it.
async fn send_stdin(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    out: &mut BytesMut,
    timeout: std::time::Duration,
) -> Result<(), Failed> {
    let io_fail = |e: io::Error| {
        if e.kind() == io::ErrorKind::TimedOut {
            Failed::Status(504, "timed out sending to FastCGI".into())
        } else {
            Failed::Status(502, format!("sending to FastCGI: {e}"))
        }
    };
    if ex.body_kind() != BodyKind::Empty {
        while let Some(piece) = ex.read_body().await.map_err(Failed::Client)? {
            for part in piece.chunks(0xffff) {
                let pad =
                    record::write_header(out, RecordType::Stdin, REQUEST_ID, part.len() as u16);
                out.extend_from_slice(part);
                out.extend_from_slice(&[0u8; 8][..pad as usize]);
            }
            sock.send_all(out, timeout).await.map_err(io_fail)?;
        }
    }
    record::write_stream(out, RecordType::Stdin, REQUEST_ID, b"");
    sock.send_all(out, timeout).await.map_err(io_fail)
}

/// Reads records until END_REQUEST: the CGI head first, then the body.
async fn relay_stdout(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    script: &str,
    reused: bool,
    timeouts: crate::upstream::settings::UpstreamTimeouts,
) -> Result<bool, Failed> {
    let mut inb = Buf::take();
    let mut head_buf = Buf::take();
    let mut head = Box::new(CgiHead::empty());
    let mut reader = StreamReader::new(REQUEST_ID);
    let mut started = false;
    let mut received = false;
    let mut deadline = Instant::now() + timeouts.response_head;
    loop {
        let step = reader
            .next(&inb)
            .map_err(|e| Failed::Status(502, format!("bad FastCGI record: {e}")))?;
        match step {
            Step::NeedMore => {
                let consumed = reader.take_consumed();
                inb.advance(consumed);
                match sock.read_some(&mut inb, deadline).await {
                    Ok(0) if !received && reused => return Err(Failed::Stale),
                    Ok(0) => {
                        return Err(Failed::Status(
                            502,
                            "FastCGI closed before END_REQUEST".into(),
                        ))
                    }
                    Ok(_) => received = true,
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                        return Err(Failed::Status(504, "FastCGI timed out".into()))
                    }
                    Err(_) if !received && reused => return Err(Failed::Stale),
                    Err(e) => return Err(Failed::Status(502, e.to_string())),
                }
                if started {
                    deadline = Instant::now() + timeouts.body_idle;
                }
            }
            Step::Stderr(r) => {
                let msg = String::from_utf8_lossy(&inb[r]);
                tracing::warn!(script, stderr = %msg.trim_end(), "FastCGI stderr");
            }
            Step::Stdout(r) => {
                if started {
                    write_out(ex, &inb[r]).await?;
                    continue;
                }
                head_buf.extend_from_slice(&inb[r]);
                match parse_cgi_head(&head_buf, MAX_CGI_HEAD, &mut head) {
                    Ok(false) => {}
                    Ok(true) => {
                        start(ex, &head, &head_buf)?;
                        started = true;
                        deadline = Instant::now() + timeouts.body_idle;
                        let rest = head_buf.split_off(head.head_len);
                        if !rest.is_empty() {
                            write_out(ex, &rest).await?;
                        }
                    }
                    Err(e) => {
                        return Err(Failed::Status(
                            502,
                            format!("bad CGI head from {script}: {e}"),
                        ))
                    }
                }
            }
            Step::End {
                protocol_status, ..
            } => {
                inb.advance(reader.take_consumed());
                if !started {
                    if protocol_status != record::PROTOCOL_REQUEST_COMPLETE {
                        let why = record::ProtocolStatus::from_u8(protocol_status);
                        return Err(Failed::Status(
                            503,
                            format!("FastCGI server refused: {why:?}"),
                        ));
                    }
                    if head_buf.is_empty() {
                        return Err(Failed::Status(502, "empty FastCGI response".into()));
                    }
                    return Err(Failed::Status(502, "incomplete CGI head".into()));
                }
                if ex.streaming() {
                    ex.finish_chunked().map_err(Failed::Client)?;
                }
                // Bytes after END_REQUEST make the connection unusable.
                return Ok(inb.is_empty());
            }
        }
    }
}

/// Starts the client's response from the CGI head.
fn start(ex: &mut Exchange<'_>, head: &CgiHead, buf: &[u8]) -> Result<(), Failed> {
    let body = match head.content_length {
        Some(n) => Body::Sized(n),
        None => Body::Stream,
    };
    let hs = head.headers(buf).filter(|(n, _)| !is_hop_by_hop(n));
    ex.start_from(head.status, hs, body).map_err(Failed::Client)
}

async fn write_out(ex: &mut Exchange<'_>, data: &[u8]) -> Result<(), Failed> {
    if ex.streaming() {
        ex.write_chunk(data).await.map_err(Failed::Client)
    } else {
        ex.write_body(data).await.map_err(Failed::Client)
    }
}

fn answer(ex: &mut Exchange<'_>, status: u16, why: &str) -> io::Result<()> {
    tracing::debug!(status, why, "FastCGI error response");
    ex.send_status(status)
}
