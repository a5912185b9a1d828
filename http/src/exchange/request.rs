//! The request side of the exchange: what the client asked (method,
//! target, the path routed on and a rewrite's in its place, fields), who
//! asked (the connecting peer and the address a trusted balancer gave),
//! and the fields sent on upstream.

use std::net::SocketAddr;
use std::rc::Rc;

use super::{Exchange, Out, Wire};
use crate::capture::{self as caught, Capture};
use crate::fields::SiteFields;
use crate::head::{BodyKind, Method, Version};
use crate::rewritten::RewriteError;

impl<'a> Exchange<'a> {
    pub fn method(&self) -> Method {
        self.head.method
    }
    pub fn method_bytes(&self) -> &[u8] {
        self.head.method_span.get(self.head_bytes)
    }
    pub fn is_head(&self) -> bool {
        self.head.method == Method::Head
    }
    pub fn version(&self) -> Version {
        self.head.version
    }
    /// The request-target as sent.
    pub fn target(&self) -> &[u8] {
        self.head.target.get(self.head_bytes)
    }
    /// The normalized path (see [`crate::path`]): unreserved characters
    /// decoded, dot segments resolved, slashes merged. Every routing and
    /// access decision is made on it, and it is what goes upstream.
    pub fn path(&self) -> &[u8] {
        if let Some(r) = &self.rewritten {
            return r.path();
        }
        self.paths.path(self.head_bytes)
    }
    /// The path routes match: [`Exchange::path`], except that with encoded
    /// slashes passed on, they are decoded here.
    pub fn route_path(&self) -> &[u8] {
        if let Some(r) = &self.rewritten {
            return r.route();
        }
        self.paths.route(self.head_bytes)
    }
    /// The path as the client spelled it, for a backend that needs its
    /// bytes (`forward_path = "raw"`).
    pub fn raw_path(&self) -> &[u8] {
        self.paths.raw(self.head_bytes)
    }
    pub fn query(&self) -> Option<&[u8]> {
        if let Some(r) = &self.rewritten {
            return r.query();
        }
        self.head.query(self.head_bytes)
    }
    /// Puts `path` (normalized here as a client's is) and `query` in place
    /// of the request's for [`Exchange::path`], [`Exchange::route_path`]
    /// and [`Exchange::query`]; the target, the raw path and the client's
    /// path and query stay as sent. On error nothing changes.
    pub fn rewrite(
        &mut self,
        path: &[u8],
        query: Option<&[u8]>,
        slash: crate::EncodedSlash,
        params: crate::PathParameters,
    ) -> Result<(), RewriteError> {
        self.rewritten
            .get_or_insert_with(Default::default)
            .set(path, query, slash, params)
    }
    /// How many times the request was rewritten (0: never).
    pub fn rewrites(&self) -> u8 {
        self.rewritten.as_ref().map_or(0, |r| r.passes())
    }
    /// The normalized path the client sent, whatever a rewrite made of it.
    pub fn client_path(&self) -> &[u8] {
        self.paths.path(self.head_bytes)
    }
    /// The query the client sent, whatever a rewrite made of it.
    pub fn client_query(&self) -> Option<&[u8]> {
        self.head.query(self.head_bytes)
    }
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.header(self.head_bytes, name)
    }
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone + '_ {
        self.head.headers(self.head_bytes)
    }
    /// The client's fields as they go upstream: as [`Exchange::headers`],
    /// but while a cache captures the response, its conditions and ranges
    /// left out and the cache's validators added.
    pub fn upstream_headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + Clone + '_ {
        let rules = self.fields.as_deref().map(|f| &f.request);
        if self.capture.is_none() && rules.is_none() {
            // The common case, and the head writer walks these several
            // times: no adapters to step through (each layer cost a
            // proxied request some 300 instructions).
            return Shaped::Plain(self.headers());
        }
        let (strip, added) = match &self.capture {
            Some(c) => (c.strip_conditions, &c.validators[..]),
            None => (false, &[][..]),
        };
        Shaped::Changed(
            self.headers()
                .filter(move |(n, _)| {
                    !(strip && caught::is_condition(n)) && rules.is_none_or(|r| r.keeps(0, n))
                })
                .chain(added.iter().map(|(n, v)| (*n, &v[..])))
                .chain(rules.into_iter().flat_map(|r| r.lines(0))),
        )
    }
    /// The fields the configuration sets, adds and removes on this
    /// request's response and on what it sends upstream (see
    /// [`crate::fields`]).
    pub fn set_fields(&mut self, fields: Option<Rc<SiteFields>>) {
        self.fields = fields;
    }
    /// Starts catching a copy of the response (see [`crate::capture`]);
    /// a body is then never spliced past it.
    pub fn capture(&mut self, c: Box<Capture>) {
        self.capture = Some(c);
    }
    /// Whether a response is being caught.
    pub fn capturing(&self) -> bool {
        self.capture.is_some()
    }
    /// The upstream's Date, for a capture (the protocol writes its own).
    pub fn capture_date(&mut self, date: Option<&[u8]>) {
        if let (Some(c), Some(d)) = (&mut self.capture, date) {
            c.date = Some(d.into());
        }
    }
    /// What was caught, taken back.
    pub fn take_capture(&mut self) -> Option<Box<Capture>> {
        self.capture.take()
    }
    /// Whether the upstream's response was kept from the client for the
    /// cache to answer in its place (see [`Capture::holds`]).
    pub fn held(&self) -> bool {
        self.capture
            .as_ref()
            .is_some_and(|c| c.status != 0 && c.holds(c.status))
    }
    /// Whether the response was written whole: started, and its body
    /// ended as its framing says.
    pub fn complete(&self) -> bool {
        self.status != 0 && self.out == Out::Done
    }
    pub fn host(&self) -> Option<&[u8]> {
        self.head.host.map(|s| s.get(self.head_bytes))
    }
    /// The client's address.
    pub fn peer(&self) -> std::io::Result<SocketAddr> {
        if let Some(a) = self.real_peer {
            return Ok(a);
        }
        match &self.wire {
            Wire::H3(w) => Ok(w.conn.quic.remote_address()),
            Wire::H1(w) => w.link.client_addr(),
            Wire::H2(w) => w.link.client_addr(),
        }
    }
    /// The connection's peer (as a PROXY protocol header gave it, where
    /// one did): the hop forwarding headers name, whatever
    /// [`Exchange::set_peer`] said.
    pub fn hop_peer(&self) -> std::io::Result<SocketAddr> {
        match &self.wire {
            Wire::H3(w) => Ok(w.conn.quic.remote_address()),
            Wire::H1(w) => w.link.client_addr(),
            Wire::H2(w) => w.link.client_addr(),
        }
    }
    /// Whether the client came on a unix-socket listener (it has no
    /// address: [`Exchange::peer`] is an error).
    pub fn is_unix(&self) -> bool {
        match &self.wire {
            Wire::H3(_) => false,
            Wire::H1(w) => w.link.is_unix(),
            Wire::H2(w) => w.link.is_unix(),
        }
    }
    /// Sets the client's address [`Exchange::peer`] gives from now on (a
    /// trusted balancer's report of it).
    pub fn set_peer(&mut self, addr: SocketAddr) {
        self.real_peer = Some(addr);
    }
    /// The address the client connected to.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        match &self.wire {
            Wire::H3(w) => Ok(w.conn.quic.local_address()),
            Wire::H1(w) => w.link.local_addr(),
            Wire::H2(w) => w.link.local_addr(),
        }
    }
    /// Whether the client connection speaks TLS.
    #[inline]
    pub fn is_tls(&self) -> bool {
        match &self.wire {
            Wire::H3(_) => true,
            Wire::H1(w) => w.link.stream.is_tls(),
            Wire::H2(w) => w.link.stream.is_tls(),
        }
    }
    /// Whether the request came in TLS early data (0-RTT) and is served
    /// before the handshake ended, so may be a replay (RFC 8470): only
    /// HTTP/3 serves such, and only safe methods.
    #[inline]
    pub fn early_data(&self) -> bool {
        match &self.wire {
            Wire::H3(w) => w.early_data,
            _ => false,
        }
    }
    /// Waits until the client's handshake ended, for a request served from
    /// early data, which from then on counts as not early: a try again
    /// after an upstream's 425 Too Early (RFC 8470 §5.2). Whether the
    /// connection is still there; at once for any other request.
    pub async fn handshake_done(&mut self) -> bool {
        match &mut self.wire {
            Wire::H3(w) if w.early_data => w.handshake_done().await,
            _ => true,
        }
    }
    /// The client certificate chain the connection's TLS handshake
    /// verified (leaf first), where the listener asks for one and the
    /// client sent one; the same for every request on the connection.
    pub fn client_certificates(
        &self,
    ) -> Option<
        std::cell::Ref<'_, [ringside_runtime::tls::rustls::pki_types::CertificateDer<'static>]>,
    > {
        match &self.wire {
            Wire::H3(w) => {
                let certs = w.conn.certs.borrow();
                (!certs.is_empty()).then(|| std::cell::Ref::map(certs, |c| c.as_slice()))
            }
            Wire::H1(w) => w.link.stream.tls_peer_certificates(),
            Wire::H2(w) => w.link.stream.tls_peer_certificates(),
        }
    }
    pub fn body_kind(&self) -> BodyKind {
        self.head.body
    }
}

/// The client's fields as they are, or as a cache or the config changed
/// them (see [`Exchange::upstream_headers`]).
#[derive(Clone)]
enum Shaped<A, B> {
    Plain(A),
    Changed(B),
}

impl<'h, A, B> Iterator for Shaped<A, B>
where
    A: Iterator<Item = (&'h [u8], &'h [u8])>,
    B: Iterator<Item = (&'h [u8], &'h [u8])>,
{
    type Item = (&'h [u8], &'h [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Shaped::Plain(a) => a.next(),
            Shaped::Changed(b) => b.next(),
        }
    }
}
