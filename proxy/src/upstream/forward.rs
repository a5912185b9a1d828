//! Forwarding one request to an upstream and its response back.
//!
//! ```text
//! pick peer ─▶ pooled conn? ──no──▶ connect (connect timeout)
//!    ▲              │ yes                │ refused/timeout: passive fail,
//!    │ retry        ▼                    │ retry if allowed, else 502/504
//!    └──────── send head + body ◀────────┘
//!                   │ stale pooled conn (write fails, or EOF before any
//!                   │ byte): retry on a fresh conn if replayable, else 502
//!                   ▼
//!              read head (response timeout) ── 1xx: relay, read again
//!                   │ malformed: 502, conn closed │ timeout: 504
//!                   ▼
//!              relay body (framing regenerated) ─▶ pool the conn if the
//!                                                   response was clean
//! ```
//!
//! A request is *replayable* when it is idempotent and has no body: only
//! then may it go to a server a second time. A request whose body was read
//! from the client can still be retried when no byte reached a server
//! (connect failures), since the body is read only once a connection exists.

use std::io;
use std::time::Instant;

use bytes::Buf as _;
use ringside_runtime::http::{BodyKind, ChunkedDecoder, Exchange, Method};
use ringside_runtime::net::TcpStream;
use ringside_runtime::task;

use super::balance::hash_key;
use super::io::{Buf, UpSock};
use super::local::{Chosen, Local};
use super::request::{write_request_head, Forward, ReqBody};
use super::response::{
    parse_response, skip_response_header, ConnectionTokens, RespBody, ResponseHead,
};
use super::settings::{Balance, ForwardHeaders, HashKey, HostHeader, ProxyRoute};
use super::shared::PeerAddr;
use super::tunnel::tunnel;

/// A Content-Length body with at least this much left is spliced.
const SPLICE_FROM: u64 = 128 * 1024;

/// The longest upstream response head accepted.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// Why a try failed before the response started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Fail {
    #[error("connect failed: {0}")]
    Connect(io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    #[error("timed out")]
    Timeout,
    /// A pooled connection turned out closed before any response byte.
    #[error("pooled connection was closed")]
    Stale,
    /// Closed before a complete head, or sent a malformed one.
    #[error("invalid response: {0}")]
    Invalid(String),
    /// The client failed while its body was being forwarded.
    #[error("client: {0}")]
    Client(io::Error),
}

impl Fail {
    fn status(&self) -> u16 {
        match self {
            Fail::ConnectTimeout | Fail::Timeout => 504,
            _ => 502,
        }
    }
}

/// Proxies `ex` by `route` to the upstream in `up`.
pub async fn forward(
    ex: &mut Exchange<'_>,
    route: &ProxyRoute,
    up: &std::cell::RefCell<Local>,
    headers: &ForwardHeaders,
    via: Option<&[u8]>,
) -> io::Result<()> {
    let (retry, balance) = {
        let l = up.borrow();
        (l.shared.cfg.retry, l.shared.cfg.balance.clone())
    };
    let key = balance_key(ex, &balance);
    let replayable = ex.body_kind() == BodyKind::Empty && idempotent(ex.method());
    let mut tried: Vec<PeerAddr> = Vec::new();
    let mut tries_left = retry.count;
    let mut fresh_only = false;
    let mut last_status = None;
    loop {
        let chosen = up.borrow_mut().pick(&tried, key);
        let Some(chosen) = chosen else {
            // With every server tried, the last failure decides 502 or 504.
            return fail_response(ex, last_status.unwrap_or(502), "no live upstream server");
        };
        let pooled = up.borrow_mut().checkout(&chosen, !fresh_only, !replayable);
        let reused = pooled.is_some();
        let result = match pooled {
            Some(s) => Ok(s),
            None => connect(&chosen, up).await,
        };
        let sock = match result {
            Ok(s) => UpSock::new(s),
            Err(f) => {
                // A stale pooled connection is no fault of the server's.
                let server_failed = !matches!(f, Fail::Stale);
                up.borrow_mut().done(&chosen, None, server_failed);
                tracing::debug!(server = %chosen.addr, error = %f, "upstream connect failed");
                last_status = Some(f.status());
                if retry.on.connect && tries_left > 0 {
                    tries_left -= 1;
                    tried.push(chosen.addr.clone());
                    fresh_only = false;
                    continue;
                }
                return fail_response(ex, f.status(), "upstream unreachable");
            }
        };
        let may_retry = replayable && tries_left > 0;
        match one_try(
            ex, route, up, headers, via, &chosen, sock, reused, may_retry,
        )
        .await
        {
            Ok(Tried::Done(keep)) => {
                up.borrow_mut().done(&chosen, keep, false);
                return Ok(());
            }
            Ok(Tried::RetryStatus(status)) => {
                up.borrow_mut().done(&chosen, None, false);
                tracing::debug!(server = %chosen.addr, status, "retrying on another server");
                tries_left -= 1;
                tried.push(chosen.addr.clone());
                fresh_only = false;
            }
            Err(Fail::Stale) if replayable && !fresh_only => {
                up.borrow_mut().done(&chosen, None, false);
                fresh_only = true;
            }
            Err(Fail::Client(e)) => {
                up.borrow_mut().done(&chosen, None, false);
                return Err(e);
            }
            Err(f) => {
                // A stale pooled connection is no fault of the server's.
                let server_failed = !matches!(f, Fail::Stale);
                up.borrow_mut().done(&chosen, None, server_failed);
                tracing::debug!(server = %chosen.addr, error = %f, "upstream try failed");
                let retry_ok = match &f {
                    Fail::Timeout => retry.on.timeout,
                    Fail::Invalid(_) | Fail::Stale => retry.on.invalid_response,
                    _ => false,
                };
                last_status = Some(f.status());
                if retry_ok && replayable && tries_left > 0 && !ex.responded() {
                    tries_left -= 1;
                    tried.push(chosen.addr.clone());
                    fresh_only = false;
                    continue;
                }
                if ex.responded() {
                    return Err(io::Error::other(format!(
                        "upstream failed mid-response: {f:?}"
                    )));
                }
                return fail_response(ex, f.status(), "upstream failed");
            }
        }
    }
}

enum Tried {
    /// Answered; the connection to pool, if it stays usable.
    Done(Option<TcpStream>),
    /// A 502/503/504 to retry elsewhere; nothing was sent to the client.
    RetryStatus(u16),
}

/// Opens a connection to `chosen`, with the TLS handshake where the
/// upstream speaks TLS, all within the connect timeout.
pub(crate) async fn connect(
    chosen: &Chosen,
    up: &std::cell::RefCell<Local>,
) -> Result<TcpStream, Fail> {
    let addr = &chosen.addr;
    let (limit, tls) = {
        let l = up.borrow();
        let tls = crate::upstream::shared::tls_for(&l.shared, &chosen.authority);
        (l.shared.cfg.timeouts.connect, tls)
    };
    let connecting = async {
        let mut s = match addr {
            PeerAddr::Inet(a) => TcpStream::connect(*a).await?,
            PeerAddr::Unix(p) => TcpStream::connect_unix(p)?,
        };
        if let Some((cfg, name)) = tls {
            s.start_tls_client(cfg, name)?;
            s.handshake().await?;
        }
        Ok::<_, io::Error>(s)
    };
    match task::timeout(limit, Box::pin(connecting)).await {
        Ok(Ok(s)) => {
            up.borrow().count_opened(addr);
            Ok(s)
        }
        Ok(Err(e)) => Err(Fail::Connect(e)),
        Err(_) => Err(Fail::ConnectTimeout),
    }
}

#[allow(clippy::too_many_arguments)]
async fn one_try(
    ex: &mut Exchange<'_>,
    route: &ProxyRoute,
    up: &std::cell::RefCell<Local>,
    fwd: &ForwardHeaders,
    via: Option<&[u8]>,
    chosen: &Chosen,
    mut sock: UpSock,
    reused: bool,
    may_retry: bool,
) -> Result<Tried, Fail> {
    let (timeouts, retry) = {
        let l = up.borrow();
        (l.shared.cfg.timeouts, l.shared.cfg.retry)
    };
    let body = match ex.body_kind() {
        BodyKind::Empty | BodyKind::Length(0) => ReqBody::None,
        BodyKind::Length(n) => ReqBody::Length(n),
        BodyKind::Chunked => ReqBody::Chunked,
    };
    let wants_upgrade = upgrade_request(ex).is_some();
    let mut out = Buf::take();
    {
        let upgrade = upgrade_request(ex);
        let client_ip = ex
            .peer()
            .map(|a| a.ip())
            .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into());
        let host: &[u8] = match &route.host {
            HostHeader::Pass => ex.host().unwrap_or(chosen.authority.as_bytes()),
            HostHeader::Upstream => chosen.authority.as_bytes(),
            HostHeader::Set(h) => h.as_bytes(),
        };
        let f = Forward {
            method: ex.method_bytes(),
            path: ex.path(),
            query: ex.query(),
            prefix: route.prefix.as_bytes(),
            replace_prefix: route.replace_prefix.as_deref().map(str::as_bytes),
            host,
            client_host: ex.host(),
            client_ip,
            proto: if ex.is_tls() { "https" } else { "http" },
            body,
            upgrade,
            settings: fwd,
        };
        write_request_head(&mut out, &f, ex.headers());
    }
    // The head and the body go out before the response is read: the body
    // streams from the client with backpressure, in bounded pieces.
    let sent = send_request(ex, &mut sock, &mut out, body, timeouts.send).await;
    match sent {
        Ok(()) => {}
        Err(Fail::Client(e)) => return Err(Fail::Client(e)),
        Err(Fail::Timeout) => return Err(Fail::Timeout),
        Err(_) if reused => return Err(Fail::Stale),
        Err(f) => return Err(f),
    }
    drop(out);

    let was_head = ex.method() == Method::Head;
    let mut inb = Buf::take();
    let mut head = Box::new(ResponseHead::empty());
    let deadline = Instant::now() + timeouts.response_head;
    let mut received = false;
    loop {
        match parse_response(&inb, was_head, MAX_RESPONSE_HEAD, &mut head) {
            Ok(true) => {
                if head.is_interim() {
                    let tokens = ConnectionTokens::from_head(&head, &inb);
                    let hs = head
                        .headers(&inb)
                        .filter(|(n, _)| !skip_response_header(n, &tokens, false))
                        .map(|(n, v)| (n.as_bytes(), v));
                    ex.send_interim(head.status, hs)
                        .await
                        .map_err(Fail::Client)?;
                    inb.advance(head.head_len);
                    continue;
                }
                break;
            }
            Ok(false) => {}
            Err(e) => return Err(Fail::Invalid(e.to_string())),
        }
        match sock.read_some(&mut inb, deadline).await {
            Ok(0) if !received && reused => return Err(Fail::Stale),
            Ok(0) => {
                return Err(Fail::Invalid(
                    "closed before a complete response head".into(),
                ))
            }
            Ok(_) => received = true,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(Fail::Timeout),
            Err(_) if !received && reused => return Err(Fail::Stale),
            Err(e) => return Err(Fail::Invalid(e.to_string())),
        }
    }

    let status = head.status;
    let retry_status = match status {
        502 => retry.on.http_502,
        503 => retry.on.http_503,
        504 => retry.on.http_504,
        _ => false,
    };
    if retry_status && may_retry && !ex.responded() {
        return Ok(Tried::RetryStatus(status));
    }

    if status == 101 {
        if !wants_upgrade {
            return Err(Fail::Invalid(
                "101 to a request that did not ask to upgrade".into(),
            ));
        }
        return Box::pin(relay_upgrade(ex, sock, inb, head)).await;
    }

    let tokens = ConnectionTokens::from_head(&head, &inb);
    let framing = match head.body {
        RespBody::Length(n) => ringside_runtime::http::Body::Sized(n),
        RespBody::None => match head.declared_length {
            Some(n) if was_head => ringside_runtime::http::Body::Sized(n),
            _ if was_head && head.header(&inb, "transfer-encoding").is_some() => {
                ringside_runtime::http::Body::Stream
            }
            _ => ringside_runtime::http::Body::Sized(0),
        },
        RespBody::Chunked | RespBody::UntilClose => ringside_runtime::http::Body::Stream,
    };
    {
        let hs = head
            .headers(&inb)
            .filter(|(n, _)| !skip_response_header(n, &tokens, false))
            .map(|(n, v)| (n.as_bytes(), v))
            .chain(via.map(|v| (&b"Via"[..], v)));
        ex.start_from(status, hs, framing).map_err(Fail::Client)?;
    }
    inb.advance(head.head_len);
    let reusable = head.reusable;
    let body_kind = head.body;
    drop(head);

    // From here the client has a response: failures close its connection.
    let clean = match body_kind {
        RespBody::None => inb.is_empty(),
        RespBody::Length(n) => relay_sized(ex, &mut sock, &mut inb, n, timeouts.body_idle).await?,
        RespBody::Chunked => relay_chunked(ex, &mut sock, &mut inb, timeouts.body_idle).await?,
        RespBody::UntilClose => {
            relay_until_close(ex, &mut sock, &mut inb, timeouts.body_idle).await?;
            false
        }
    };
    let keep = (clean && reusable && !sock.expired()).then(|| sock.into_stream());
    Ok(Tried::Done(keep))
}

async fn send_request(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    out: &mut Buf,
    body: ReqBody,
    timeout: std::time::Duration,
) -> Result<(), Fail> {
    let io_fail = |e: io::Error| {
        if e.kind() == io::ErrorKind::TimedOut {
            Fail::Timeout
        } else {
            Fail::Invalid(e.to_string())
        }
    };
    if body == ReqBody::None {
        return sock.send_all(out, timeout).await.map_err(io_fail);
    }
    loop {
        let piece = match ex.read_body().await {
            Ok(p) => p,
            Err(e) => return Err(Fail::Client(e)),
        };
        match (&piece, body) {
            (Some(p), ReqBody::Chunked) => {
                let mut hdr = [0u8; 18];
                out.extend_from_slice(ringside_runtime::http::chunked::write_chunk_header(
                    p.len(),
                    &mut hdr,
                ));
                out.extend_from_slice(p);
                out.extend_from_slice(b"\r\n");
            }
            (Some(p), _) => out.extend_from_slice(p),
            (None, ReqBody::Chunked) => out.extend_from_slice(b"0\r\n\r\n"),
            (None, _) => {}
        }
        // Each piece goes on as it came: the head with the first, so the
        // upstream sees the request start even if the client stalls.
        sock.send_all(out, timeout).await.map_err(io_fail)?;
        if piece.is_none() {
            return Ok(());
        }
    }
}

/// Relays a Content-Length body; true when it ended cleanly with nothing
/// after it.
async fn relay_sized(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    inb: &mut Buf,
    mut left: u64,
    idle: std::time::Duration,
) -> Result<bool, Fail> {
    loop {
        if !inb.is_empty() {
            let take = (inb.len() as u64).min(left) as usize;
            ex.write_body(&inb[..take]).await.map_err(Fail::Client)?;
            inb.advance(take);
            left -= take as u64;
        }
        if left == 0 {
            return Ok(inb.is_empty());
        }
        if left >= SPLICE_FROM && ex.can_splice_from(&sock.stream) {
            // The rest goes socket to socket without a copy.
            sock.arm_read(idle);
            let r = ex
                .write_from_socket(&sock.stream, left, &|| sock.arm_read(idle))
                .await;
            sock.disarm();
            return match r {
                Ok(()) => Ok(!sock.has_pending()),
                Err(_) if sock.expired() => Err(Fail::Timeout),
                // The upstream ended the body short: its failure.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    Err(Fail::Invalid(e.to_string()))
                }
                // Otherwise the client went away or stalled (a reset, a
                // send timeout): not the server's fault, so never counted
                // against it (it would mark healthy servers down).
                Err(e) => Err(Fail::Client(e)),
            };
        }
        inb.clear();
        read_body_piece(sock, inb, idle).await?;
    }
}

async fn relay_chunked(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    inb: &mut Buf,
    idle: std::time::Duration,
) -> Result<bool, Fail> {
    let mut dec = ChunkedDecoder::new(u64::MAX);
    loop {
        while !inb.is_empty() {
            let d = dec
                .decode(inb)
                .map_err(|e| Fail::Invalid(format!("bad chunked body: {e}")))?;
            if !d.data.is_empty() {
                ex.write_chunk(&inb[d.data.clone()])
                    .await
                    .map_err(Fail::Client)?;
            }
            inb.advance(d.consumed);
            if d.done {
                ex.finish_chunked().map_err(Fail::Client)?;
                return Ok(inb.is_empty());
            }
            if d.consumed == 0 {
                break;
            }
        }
        read_body_piece(sock, inb, idle).await?;
    }
}

async fn relay_until_close(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    inb: &mut Buf,
    idle: std::time::Duration,
) -> Result<(), Fail> {
    loop {
        if !inb.is_empty() {
            ex.write_chunk(inb).await.map_err(Fail::Client)?;
            inb.clear();
        }
        match sock.read_some(inb, Instant::now() + idle).await {
            Ok(0) => return ex.finish_chunked().map_err(Fail::Client),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(Fail::Timeout),
            Err(e) => return Err(Fail::Invalid(e.to_string())),
        }
    }
}

/// Reads more of a body; EOF here means the upstream cut the body short.
async fn read_body_piece(
    sock: &mut UpSock,
    inb: &mut Buf,
    idle: std::time::Duration,
) -> Result<(), Fail> {
    match sock.read_some(inb, Instant::now() + idle).await {
        Ok(0) => Err(Fail::Invalid("upstream closed mid-body".into())),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(Fail::Timeout),
        Err(e) => Err(Fail::Invalid(e.to_string())),
    }
}

/// 101 from the upstream: answer the client likewise and relay bytes both
/// ways until either side ends.
async fn relay_upgrade(
    ex: &mut Exchange<'_>,
    sock: UpSock,
    mut inb: Buf,
    head: Box<ResponseHead>,
) -> Result<Tried, Fail> {
    let tokens = ConnectionTokens::from_head(&head, &inb);
    let (client, pending) = {
        let hs = head
            .headers(&inb)
            .filter(|(n, _)| !skip_response_header(n, &tokens, true))
            .map(|(n, v)| (n.as_bytes(), v))
            .chain(std::iter::once((&b"Connection"[..], &b"upgrade"[..])));
        ex.upgrade(hs).await.map_err(Fail::Client)?
    };
    inb.advance(head.head_len);
    let mut from_client = std::mem::take(pending);
    let r = tunnel(client, &mut from_client, &sock.stream, &mut inb).await;
    if let Err(e) = r {
        tracing::debug!(error = %e, "tunnel ended with an error");
    }
    Ok(Tried::Done(None))
}

/// RFC 9110 §9.2.2.
fn idempotent(m: Method) -> bool {
    matches!(
        m,
        Method::Get | Method::Head | Method::Options | Method::Trace | Method::Put | Method::Delete
    )
}

/// The Upgrade value when the client asks to switch protocols: an Upgrade
/// header and `upgrade` among the Connection options (RFC 9110 §7.8).
fn upgrade_request<'a>(ex: &'a Exchange<'_>) -> Option<&'a [u8]> {
    let up = ex.header("upgrade")?;
    let asks = ex
        .headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"connection"))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"upgrade"));
    asks.then_some(up)
}

fn balance_key(ex: &Exchange<'_>, b: &Balance) -> Option<u64> {
    let Balance::Hash(k) = b else { return None };
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

fn fail_response(ex: &mut Exchange<'_>, status: u16, why: &str) -> io::Result<()> {
    tracing::debug!(status, why, "proxy error response");
    ex.send_status(status)
}
