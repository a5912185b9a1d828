//! The FastCGI codec: one request to a FastCGI server and its response
//! back, run by the one forward loop (`crate::upstream::forward`) with the
//! capacity slots as its pool policy (`super::capacity`).
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
use ringside_http::{Body, BodyKind, Error, Exchange, Kind, Side};

use super::cgi_head::{is_hop_by_hop, parse_cgi_head, CgiHead};
use super::params::{encode_params, CgiRequest};
use super::record::{self, RecordType, Step, StreamReader};
use crate::upstream::codec::{Codec, Tried};
use crate::upstream::io::{Buf, Pooled, UpSock};
use crate::upstream::local::{Chosen, Local};
use crate::upstream::settings::{FastCgiRoute, UpstreamTimeouts};

crate::poolable!(CgiHead, CgiHead::empty());

/// The one request id used per connection (no multiplexing).
const REQUEST_ID: u16 = 1;
/// The longest CGI head accepted from a script.
const MAX_CGI_HEAD: usize = 64 * 1024;
/// A response without a length, to a client that would lose its kept
/// connection over it (HTTP/1.0), is held back up to this much to learn
/// its length; a longer one goes out as it comes, and ends at the close.
const MAX_HELD: usize = 64 * 1024;

/// One script run over FastCGI: the route's docroot, the script (already
/// known to exist) and its PATH_INFO.
pub struct FastCgi<'a> {
    pub route: &'a FastCgiRoute,
    pub script_name: &'a str,
    pub path_info: &'a str,
    /// REQUEST_URI as the client spelled it (`forward_path = "raw"`)
    /// rather than the normalized path the script was found by.
    pub raw_uri: bool,
}

impl Codec for FastCgi<'_> {
    /// Any request without a body: a script runs again as if asked again.
    fn replayable(&self, ex: &Exchange<'_>) -> bool {
        ex.body_kind() == BodyKind::Empty
    }

    async fn exchange(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        _chosen: &Chosen,
        sock: UpSock,
        reused: bool,
        _may_retry: bool,
    ) -> Result<Tried, Error> {
        let r = self.run(ex, up, sock, reused).await;
        if let Err(e) = &r {
            if e.side() == Side::Upstream && e.kind() != Kind::Stale {
                tracing::warn!(script = self.script_name, status = e.status(), error = %e, "FastCGI request failed");
            }
        }
        r.map(Tried::Done)
    }
}

fn failed(kind: Kind, why: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(kind, why)
}

impl FastCgi<'_> {
    /// Sends the request and relays the response; the connection back when
    /// it stays usable.
    async fn run(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        mut sock: UpSock,
        reused: bool,
    ) -> Result<Option<ringside_runtime::net::TcpStream>, Error> {
        let (timeouts, keep_conn) = {
            let l = up.borrow();
            let keep = l.shared.cfg.fastcgi().is_some_and(|f| f.keep_conn);
            (l.shared.cfg.timeouts, keep)
        };
        let mut out = Buf::take();
        record::write_begin_request(&mut out, REQUEST_ID, record::ROLE_RESPONDER, keep_conn);
        self.write_params(ex, &mut out);
        match send_stdin(ex, &mut sock, &mut out, timeouts.send).await {
            Ok(()) => {}
            Err(e) if e.side() == Side::Client => return Err(e),
            Err(e) if reused => {
                return Err(Error::new(Kind::Stale, "FastCGI connection closed").because(e))
            }
            Err(e) => return Err(e),
        }
        drop(out);
        let ended_clean = relay_stdout(ex, &mut sock, self.script_name, reused, timeouts).await?;
        // No peek for an EOF here: it cost a failed recv(2) a request (one
        // in two of the worker's system calls behind php-fpm), and a
        // connection closed after END_REQUEST (a child retired by
        // pm.max_requests) is caught where it is next used: a request
        // with a body checks before it takes one, one without is retried
        // on a fresh connection (`Kind::Stale`), and the reaper checks the
        // idle ones each second.
        let clean = ended_clean && !sock.expired();
        Ok((clean && keep_conn).then(|| sock.into_stream()))
    }

    /// The PARAMS stream: CGI/1.1's variables and the request's headers.
    fn write_params(&self, ex: &Exchange<'_>, out: &mut BytesMut) {
        let route = self.route;
        let mut params = Buf::take();
        let peer = ex.peer().ok();
        let local = ex.local_addr().ok();
        let filename = format!("{}{}", route.root.display(), self.script_name);
        let content_length = match ex.body_kind() {
            BodyKind::Length(n) => Some(n),
            // A streamed body reaches PHP without a length.
            BodyKind::Empty | BodyKind::Stream => None,
        };
        let host = ex.host().unwrap_or(b"");
        let server_name = host.split(|&b| b == b':').next().unwrap_or(b"");
        // The path the client asked for, normalized (a rewrite's path is
        // SCRIPT_NAME's and QUERY_STRING's, as under nginx and Apache);
        // the target itself where that is the same.
        let mut uri = Vec::new();
        let target = ex.target();
        let request_uri =
            if self.raw_uri || (target.starts_with(b"/") && ex.client_path() == ex.raw_path()) {
                target
            } else {
                uri.extend_from_slice(ex.client_path());
                if let Some(q) = ex.client_query() {
                    uri.push(b'?');
                    uri.extend_from_slice(q);
                }
                &uri
            };
        let req = CgiRequest {
            method: ex.method_bytes(),
            request_uri,
            query: ex.query().unwrap_or(b""),
            script_name: self.script_name.as_bytes(),
            script_filename: filename.as_bytes(),
            path_info: self.path_info.as_bytes(),
            document_root: route.root.as_os_str().as_encoded_bytes(),
            server_name,
            server_port: local.map_or(80, |a| a.port()),
            server_protocol: ex.version().as_str().as_bytes(),
            server_addr: local.map_or(std::net::Ipv4Addr::LOCALHOST.into(), |a| a.ip()),
            remote_addr: peer.map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.ip()),
            remote_unix: peer.is_none() && ex.is_unix(),
            remote_port: peer.map_or(0, |a| a.port()),
            https: ex.is_tls(),
            content_type: ex.header("content-type"),
            content_length,
            server_software: b"ringside",
            early_data: ex.early_data(),
        };
        encode_params(&mut params, &req, ex.upstream_headers());
        crate::upstream::client_cert::add_fastcgi_params(ex, &mut params);
        record::write_stream(out, RecordType::Params, REQUEST_ID, &params);
        record::write_stream(out, RecordType::Params, REQUEST_ID, b"");
    }
}

/// STDIN records from the client's body, each piece sent as it comes; the
/// empty record ends it.
async fn send_stdin(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    out: &mut BytesMut,
    timeout: std::time::Duration,
) -> Result<(), Error> {
    let io_fail = |e: io::Error| {
        if e.kind() == io::ErrorKind::TimedOut {
            failed(Kind::UpstreamTimeout, "timed out sending to FastCGI")
        } else {
            failed(Kind::InvalidResponse, "sending to FastCGI").because(e)
        }
    };
    if ex.body_kind() != BodyKind::Empty {
        while let Some(piece) = ex.read_body().await? {
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
    timeouts: UpstreamTimeouts,
) -> Result<bool, Error> {
    let mut inb = Buf::take();
    let mut head_buf = Buf::take();
    let mut head = Pooled::<CgiHead>::take();
    let mut reader = StreamReader::new(REQUEST_ID);
    let mut started = false;
    let mut head_done = false;
    // A body held back to learn its length (see `MAX_HELD`).
    let mut held: Option<BytesMut> = None;
    let mut received = false;
    let mut deadline = Instant::now() + timeouts.response_head;
    let stale = || failed(Kind::Stale, "FastCGI connection closed");
    loop {
        let step = reader
            .next(&inb)
            .map_err(|e| failed(Kind::InvalidResponse, "bad FastCGI record").because(e))?;
        match step {
            Step::NeedMore => {
                let consumed = reader.take_consumed();
                inb.advance(consumed);
                if started {
                    // What the script printed so far goes out before the
                    // wait for more.
                    ex.flush().await?;
                }
                match sock.read_some(&mut inb, deadline).await {
                    Ok(0) if !received && reused => return Err(stale()),
                    Ok(0) => {
                        // An EOF as the cause: a `reset` (`upstream::failure`).
                        return Err(failed(
                            Kind::InvalidResponse,
                            "FastCGI closed before END_REQUEST",
                        )
                        .because(io::Error::from(io::ErrorKind::UnexpectedEof)));
                    }
                    Ok(_) => received = true,
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                        return Err(failed(Kind::UpstreamTimeout, "FastCGI timed out"))
                    }
                    Err(_) if !received && reused => return Err(stale()),
                    Err(e) => {
                        return Err(failed(Kind::InvalidResponse, "reading from FastCGI").because(e))
                    }
                }
                if head_done {
                    deadline = Instant::now() + timeouts.body_idle;
                }
            }
            Step::Stderr(r) => {
                let msg = String::from_utf8_lossy(&inb[r]);
                tracing::warn!(script, stderr = %msg.trim_end(), "FastCGI stderr");
            }
            Step::Stdout(r) => {
                if started {
                    ex.write_body(&inb[r]).await?;
                    continue;
                }
                if let Some(h) = &mut held {
                    h.extend_from_slice(&inb[r]);
                    if h.len() > MAX_HELD {
                        start(ex, &head, &head_buf, None)?;
                        started = true;
                        ex.write_body(h).await?;
                        held = None;
                    }
                    continue;
                }
                head_buf.extend_from_slice(&inb[r]);
                match parse_cgi_head(&head_buf, MAX_CGI_HEAD, &mut head) {
                    Ok(false) => {}
                    Ok(true) => {
                        head_done = true;
                        deadline = Instant::now() + timeouts.body_idle;
                        let rest = head_buf.split_off(head.head_len);
                        if head.content_length.is_none() && ex.unsized_body_closes() {
                            held = Some(rest);
                            continue;
                        }
                        start(ex, &head, &head_buf, None)?;
                        started = true;
                        if !rest.is_empty() {
                            ex.write_body(&rest).await?;
                        }
                    }
                    Err(e) => {
                        return Err(failed(
                            Kind::InvalidResponse,
                            format!("bad CGI head from {script}"),
                        )
                        .because(e))
                    }
                }
            }
            Step::End {
                protocol_status, ..
            } => {
                inb.advance(reader.take_consumed());
                if let Some(h) = held.take() {
                    start(ex, &head, &head_buf, Some(h.len() as u64))?;
                    if !h.is_empty() {
                        ex.write_body(&h).await?;
                    }
                }
                if !head_done {
                    if protocol_status != record::PROTOCOL_REQUEST_COMPLETE {
                        let why = record::ProtocolStatus::from_u8(protocol_status);
                        return Err(failed(
                            Kind::Overloaded,
                            format!("FastCGI server refused: {why:?}"),
                        ));
                    }
                    if head_buf.is_empty() {
                        return Err(failed(Kind::InvalidResponse, "empty FastCGI response"));
                    }
                    return Err(failed(Kind::InvalidResponse, "incomplete CGI head"));
                }
                if ex.streaming() {
                    ex.finish().await?;
                }
                // Bytes after END_REQUEST make the connection unusable.
                return Ok(inb.is_empty());
            }
        }
    }
}

/// Starts the client's response from the CGI head; `len`: the length of
/// a body that was held back whole.
fn start(ex: &mut Exchange<'_>, head: &CgiHead, buf: &[u8], len: Option<u64>) -> Result<(), Error> {
    let body = match head.content_length.or(len) {
        Some(n) => Body::Sized(n),
        None => Body::Stream,
    };
    let hs = head.headers(buf).filter(|(n, _)| !is_hop_by_hop(n));
    ex.start_from(head.status, hs, body)
}
