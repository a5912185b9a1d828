//! The HTTP/1.1 codec to upstreams: one try sends the request head (by the
//! header policy, `headers`) and streams the body, reads the response head
//! (interim responses relayed on), and relays the body with its framing
//! regenerated: spliced socket to socket where it can, chunked or sized
//! otherwise. A `101` to an upgrade the route allows becomes a tunnel.

use std::cell::RefCell;
use std::io;
use std::time::Duration;

use bytes::Buf as _;
use ringside_http::h1::chunked::{write_chunk_header, LAST_CHUNK};
use ringside_http::h1::response::{parse_response, RespBody, ResponseHead};
use ringside_http::h1::ChunkedDecoder;
use ringside_http::{Body, BodyKind, Error, Exchange, Kind, Method};

use super::codec::{Codec, Tried};
use super::headers::{
    skip_response_header, upgrade_agreed, upgrade_protocols, write_request_head_from, Forward,
    ReqBody,
};
use super::io::{Buf, Pooled, UpSock};
use super::local::{Chosen, Local};
use super::settings::{ForwardHeaders, ForwardPath, HostHeader, ProxyRoute};
use super::too_early;
use super::tunnel::tunnel;

crate::poolable!(ResponseHead, ResponseHead::empty());

/// A Content-Length body with at least this much left is spliced.
const SPLICE_FROM: u64 = 128 * 1024;

/// Upgrade protocols of one request passed on at most.
const MAX_OFFERED: usize = 4;

/// The longest upstream response head accepted.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// HTTP/1.1 to the upstream of `route`.
pub struct H1<'a> {
    pub route: &'a ProxyRoute,
    pub headers: &'a ForwardHeaders,
    /// The Via value added to responses.
    pub via: Option<&'a [u8]>,
}

impl Codec for H1<'_> {
    fn replayable(&self, ex: &Exchange<'_>) -> bool {
        ex.body_kind() == BodyKind::Empty && ex.method().idempotent()
    }

    /// A prefix to replace must be in the path sent on as the route saw it:
    /// with encoded slashes passed on, or the client's bytes sent, the route
    /// may have matched a spelling it cannot find there (`/api%2Fx` for
    /// `/api/`), and sending the path unrewritten would reach another
    /// resource than the route names.
    fn admit(&self, ex: &Exchange<'_>) -> Result<(), Error> {
        let route = self.route;
        if route.replace_prefix.is_some()
            && !ringside_http::path::prefix_matches(self.path(ex), route.prefix.as_bytes())
        {
            return Err(Error::new(
                Kind::BadRequest,
                "the route's prefix is spelled otherwise in the path sent on",
            ));
        }
        Ok(())
    }

    async fn exchange(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        sock: UpSock,
        reused: bool,
        may_retry: bool,
    ) -> Result<Tried, Error> {
        self.one_try(ex, up, chosen, sock, reused, may_retry).await
    }
}

fn invalid(why: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(Kind::InvalidResponse, why)
}

/// The server closed before the response was whole: an EOF as the cause
/// makes it a `reset`, not a `bad_response` (`super::failure`).
fn closed(why: &'static str) -> Error {
    invalid(why).because(io::Error::from(io::ErrorKind::UnexpectedEof))
}

fn timed_out(what: &'static str) -> Error {
    Error::new(Kind::UpstreamTimeout, what)
}

impl H1<'_> {
    /// The request head as sent upstream in HTTP/1.1, by the header policy
    /// (`headers`): `upgrade` passes on the upgrade the route allows.
    pub(super) fn write_head(
        &self,
        ex: &Exchange<'_>,
        chosen: &Chosen,
        body: ReqBody,
        upgrade: bool,
        out: &mut bytes::BytesMut,
    ) {
        let route = self.route;
        let mut offered = [&b""[..]; MAX_OFFERED];
        let upgrade = if upgrade {
            upgrade_protocols(ex.headers(), &route.upgrade, &mut offered)
        } else {
            0
        };
        // The hop that handed the request over, as each proxy in a chain
        // appends its own peer (nginx's $proxy_add_x_forwarded_for).
        let client_ip = ex
            .hop_peer()
            .map(|a| a.ip())
            .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into());
        let host: &[u8] = match &route.host {
            HostHeader::Pass => ex.host().unwrap_or(chosen.authority.as_bytes()),
            HostHeader::Upstream => chosen.authority.as_bytes(),
            HostHeader::Set(h) => h.as_bytes(),
        };
        let f = Forward {
            method: ex.method_bytes(),
            path: self.path(ex),
            query: ex.query(),
            prefix: route.prefix.as_bytes(),
            replace_prefix: route.replace_prefix.as_deref().map(str::as_bytes),
            host,
            client_host: ex.host(),
            client_ip,
            client_unix: ex.is_unix(),
            proto: if ex.is_tls() { "https" } else { "http" },
            body,
            upgrade: &offered[..upgrade],
            early_data: ex.early_data(),
            settings: self.headers,
        };
        let received = ex.version().via_protocol();
        write_request_head_from(out, &f, received, ex.upstream_headers());
        super::client_cert::add_fields(ex, out);
    }

    /// The path sent upstream, before the route's prefix is replaced.
    fn path<'e>(&self, ex: &'e Exchange<'_>) -> &'e [u8] {
        match self.route.forward_path {
            ForwardPath::Normalized => ex.path(),
            // A rewritten path has no client spelling: the rewrite's.
            ForwardPath::Raw if ex.rewrites() > 0 => ex.path(),
            ForwardPath::Raw => ex.raw_path(),
        }
    }

    async fn one_try(
        &self,
        ex: &mut Exchange<'_>,
        up: &RefCell<Local>,
        chosen: &Chosen,
        mut sock: UpSock,
        reused: bool,
        may_retry: bool,
    ) -> Result<Tried, Error> {
        let (timeouts, retry, send_proxy) = {
            let l = up.borrow();
            (
                l.shared.cfg.timeouts,
                l.shared.cfg.retry,
                l.shared.cfg.send_proxy(),
            )
        };
        let body = match ex.body_kind() {
            BodyKind::Empty | BodyKind::Length(0) => ReqBody::None,
            BodyKind::Length(n) => ReqBody::Length(n),
            BodyKind::Stream => ReqBody::Chunked,
        };
        let mut out = Buf::take();
        // The addresses only where a header wants them: each is a system
        // call (it was one per proxied request, PROXY protocol or not).
        let addrs = send_proxy.and_then(|v| Some((v, ex.peer().ok()?, ex.local_addr().ok()?)));
        if let Some((v, client, to)) = addrs {
            // First on the connection: it opened for this request alone.
            let mut h = Vec::with_capacity(64);
            let v2 = v == crate::upstream::settings::ProxyVersion::V2;
            ringside_http::proxy_protocol::write_header(&mut h, v2, client, to);
            out.extend_from_slice(&h);
        }
        self.write_head(ex, chosen, body, true, &mut out);
        // The head and the body go out before the response is read: the body
        // streams from the client with backpressure, in bounded pieces.
        match send_request(ex, &mut sock, &mut out, body, timeouts.send).await {
            Ok(()) => {}
            Err(e) if e.side() == ringside_http::Side::Client => return Err(e),
            Err(e) if e.kind() == Kind::UpstreamTimeout => return Err(e),
            Err(e) if reused => {
                return Err(Error::new(Kind::Stale, "pooled connection was closed").because(e))
            }
            Err(e) => return Err(e),
        }
        drop(out);

        let was_head = ex.method() == Method::Head;
        let mut inb = Buf::take();
        let mut head = Pooled::<ResponseHead>::take();
        let deadline = ringside_runtime::clock::now() + timeouts.response_head;
        let mut received = false;
        let stale = || Error::new(Kind::Stale, "pooled connection was closed");
        loop {
            match parse_response(&inb, was_head, MAX_RESPONSE_HEAD, &mut head) {
                Ok(true) => {
                    if head.is_interim() {
                        let tokens = head.connection_tokens(&inb);
                        let hs = head
                            .fields
                            .iter(&inb)
                            .filter(|(n, _)| !skip_response_header(n, &tokens, false));
                        ex.send_interim(head.status, hs).await?;
                        inb.advance(head.head_len);
                        continue;
                    }
                    break;
                }
                Ok(false) => {}
                Err(e) => return Err(e.into()),
            }
            match sock.read_some(&mut inb, deadline).await {
                Ok(0) if !received && reused => return Err(stale()),
                Ok(0) => return Err(closed("closed before a complete response head")),
                Ok(_) => received = true,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return Err(timed_out("no response head in time"))
                }
                Err(_) if !received && reused => return Err(stale()),
                Err(e) => return Err(invalid("reading the response head").because(e)),
            }
        }

        let status = head.status;
        if retry.on.status(status) && may_retry && !ex.responded() {
            return Ok(Tried::RetryStatus(status));
        }
        if too_early::again_after_handshake(ex, status, || self.replayable(ex)) {
            return Ok(Tried::TooEarly);
        }

        if status == 101 {
            // A tunnel opens only for a switch the client asked for and the
            // route allows, to a protocol it was offered.
            let mut offered = [&b""[..]; MAX_OFFERED];
            let n = upgrade_protocols(ex.headers(), &self.route.upgrade, &mut offered);
            let agreed = head
                .fields
                .get(&inb, "upgrade")
                .is_some_and(|v| upgrade_agreed(v, &offered[..n]));
            if !agreed {
                return Err(invalid(
                    "101 to a request that did not ask for that upgrade",
                ));
            }
            return Box::pin(relay_upgrade(ex, sock, inb, head)).await;
        }

        let tokens = head.connection_tokens(&inb);
        let framing = match head.body {
            RespBody::Length(n) => Body::Sized(n),
            RespBody::None => match head.declared_length {
                Some(n) if was_head => Body::Sized(n),
                _ if was_head && head.fields.get(&inb, "transfer-encoding").is_some() => {
                    Body::Stream
                }
                _ => Body::Sized(0),
            },
            RespBody::Chunked | RespBody::UntilClose => Body::Stream,
        };
        {
            if ex.capturing() {
                ex.capture_date(head.fields.get(&inb, "date"));
            }
            let hs = head
                .fields
                .iter(&inb)
                .filter(|(n, _)| !skip_response_header(n, &tokens, false))
                .chain(self.via.map(|v| (&b"Via"[..], v)));
            ex.start_from(status, hs, framing)?;
        }
        inb.advance(head.head_len);
        let reusable = head.reusable;
        let body_kind = head.body;
        drop(head);

        // From here the client has a response: failures close its connection.
        let idle = timeouts.body_idle;
        let clean = match body_kind {
            RespBody::None => inb.is_empty(),
            RespBody::Length(n) => relay_sized(ex, &mut sock, &mut inb, n, idle).await?,
            RespBody::Chunked => relay_chunked(ex, &mut sock, &mut inb, idle).await?,
            RespBody::UntilClose => {
                relay_until_close(ex, &mut sock, &mut inb, idle).await?;
                false
            }
        };
        // A connection that began with a client's PROXY header is that
        // client's alone: never pooled.
        let keep = (clean && reusable && !sock.expired() && send_proxy.is_none())
            .then(|| sock.into_stream());
        Ok(Tried::Done(keep))
    }
}

async fn send_request(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    out: &mut Buf,
    body: ReqBody,
    timeout: Duration,
) -> Result<(), Error> {
    let io_fail = |e: io::Error| {
        if e.kind() == io::ErrorKind::TimedOut {
            timed_out("sending the request timed out")
        } else {
            invalid("sending the request").because(e)
        }
    };
    if body == ReqBody::None {
        return sock.send_all(out, timeout).await.map_err(io_fail);
    }
    loop {
        let piece = ex.read_body().await?;
        match (&piece, body) {
            (Some(p), ReqBody::Chunked) => {
                let mut hdr = [0u8; 18];
                out.extend_from_slice(write_chunk_header(p.len(), &mut hdr));
                out.extend_from_slice(p);
                out.extend_from_slice(b"\r\n");
            }
            (Some(p), _) => out.extend_from_slice(p),
            // The client's trailers stay here: an HTTP/1.1 backend may fold
            // them into its headers after every check of ours (the framing
            // suite's "trailers are never promoted").
            (None, ReqBody::Chunked) => out.extend_from_slice(LAST_CHUNK),
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
    idle: Duration,
) -> Result<bool, Error> {
    loop {
        if !inb.is_empty() {
            let take = (inb.len() as u64).min(left) as usize;
            ex.write_body(&inb[..take]).await?;
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
                Err(_) if sock.expired() => Err(timed_out("response body stalled")),
                // The upstream ended the body short (its failure), or the
                // client went away or stalled: not the server's fault, so
                // never counted against it (it would mark healthy servers
                // down). The error says which.
                Err(e) => Err(e),
            };
        }
        inb.clear();
        ex.flush().await?;
        read_body_piece(sock, inb, idle).await?;
    }
}

async fn relay_chunked(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    inb: &mut Buf,
    idle: Duration,
) -> Result<bool, Error> {
    let mut dec = ChunkedDecoder::new(u64::MAX);
    if ex.takes_trailers() {
        dec.keep_trailers();
    }
    loop {
        while !inb.is_empty() {
            let d = dec
                .decode(inb)
                .map_err(|e| invalid("bad chunked body").because(e))?;
            if !d.data.is_empty() {
                ex.write_body(&inb[d.data.clone()]).await?;
            }
            inb.advance(d.consumed);
            if d.done {
                ex.finish_with_trailers(dec.trailers()).await?;
                return Ok(inb.is_empty());
            }
            if d.consumed == 0 {
                break;
            }
        }
        ex.flush().await?;
        read_body_piece(sock, inb, idle).await?;
    }
}

async fn relay_until_close(
    ex: &mut Exchange<'_>,
    sock: &mut UpSock,
    inb: &mut Buf,
    idle: Duration,
) -> Result<(), Error> {
    loop {
        if !inb.is_empty() {
            ex.write_body(inb).await?;
            inb.clear();
        }
        ex.flush().await?;
        match sock
            .read_some(inb, ringside_runtime::clock::now() + idle)
            .await
        {
            Ok(0) => return ex.finish().await,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(timed_out("response body stalled"))
            }
            Err(e) => return Err(invalid("reading the response body").because(e)),
        }
    }
}

/// Reads more of a body; EOF here means the upstream cut the body short.
async fn read_body_piece(sock: &mut UpSock, inb: &mut Buf, idle: Duration) -> Result<(), Error> {
    match sock
        .read_some(inb, ringside_runtime::clock::now() + idle)
        .await
    {
        Ok(0) => Err(closed("upstream closed mid-body")),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(timed_out("response body stalled")),
        Err(e) => Err(invalid("reading the response body").because(e)),
    }
}

/// 101 from the upstream: answer the client likewise and relay bytes both
/// ways until either side ends.
async fn relay_upgrade(
    ex: &mut Exchange<'_>,
    sock: UpSock,
    mut inb: Buf,
    head: Pooled<ResponseHead>,
) -> Result<Tried, Error> {
    let tokens = head.connection_tokens(&inb);
    let mut client = {
        let hs = head
            .fields
            .iter(&inb)
            .filter(|(n, _)| !skip_response_header(n, &tokens, true))
            .chain(std::iter::once((&b"Connection"[..], &b"upgrade"[..])));
        ex.upgrade(hs).await?
    };
    inb.advance(head.head_len);
    let mut from_client = client.take_pending();
    let r = tunnel(&client, &mut from_client, &sock.stream, &mut inb).await;
    if let Err(e) = r {
        tracing::debug!(error = %e, "tunnel ended with an error");
    }
    Ok(Tried::Done(None))
}
