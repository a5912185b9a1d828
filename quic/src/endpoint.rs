//! A worker's QUIC endpoint: its UDP socket read in a loop, each datagram
//! handed to quinn-proto's endpoint, new clients admitted (or sent to
//! prove their address with Retry when the core is busy with handshakes),
//! and each connection's driver kicked with what arrived for it.

use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, EndpointConfig, Incoming, MtuDiscoveryConfig,
    ServerConfig, TransportConfig, VarInt,
};
use ringside_runtime::config::Http3;
use ringside_runtime::udp::UdpSocket;

use crate::cid::{dcid_first_byte, WorkerCids};
use crate::conn::{drive, Conn, Inner};
use crate::stats;

/// Where the endpoint sits and what it allows.
#[derive(Clone)]
pub struct Setup {
    pub worker: usize,
    pub workers: usize,
    /// Where a datagram of another worker's connection is handed.
    pub handoff: Arc<ringside_runtime::udp::Handoff>,
    pub limits: Http3,
    /// A connection with nothing happening on it is closed after this.
    pub idle_timeout: Duration,
}

/// What a worker's connections share.
pub(crate) struct Shared {
    pub(crate) quinn: RefCell<quinn_proto::Endpoint>,
    sock: UdpSocket,
    pub(crate) local: SocketAddr,
    conns: RefCell<FxHashMap<ConnectionHandle, Rc<Inner>>>,
    tx: RefCell<Vec<u8>>,
    /// Sends through the ring, where the worker runs io_uring.
    sender: RefCell<Option<ringside_runtime::udp::DatagramSender>>,
    /// Datagrams a `sendmsg` may carry: more than one while GSO works.
    segments: Cell<usize>,
    /// Connections whose handshake has not finished.
    handshaking: Cell<u32>,
}

/// GSO trains at most this many datagrams (the kernel allows 64).
const GSO_SEGMENTS: usize = 16;
/// A train's bytes at most: one IPv4 UDP datagram's payload limit, which
/// the kernel holds a GSO send to (EMSGSIZE past it).
const GSO_BYTES: usize = 65_507;
/// Trains in flight through the ring at once (each buffer up to
/// `GSO_SEGMENTS` datagrams or `GSO_BYTES`, so at most 4 MiB a worker
/// once all were used, 1.5 MiB where paths carry 1,500 bytes);
/// past it, trains go by `sendmsg`.
const SEND_SLOTS: usize = 64;
/// Datagrams read by `recvmsg` in one go before the connections they
/// woke get a turn.
const READS_PER_TURN: usize = 64;
/// Datagrams taken from the receive ring before the streams they woke and
/// then their connection's turn run: one, so that both find the datagram
/// and the connection's state still in the cache. The loop waits for the
/// turn (`yield_after_ready`: the turn is deferred until the woken streams
/// have answered, so their sends still leave together). Server CPU per
/// HTTP/3 request at -c100 with 10 streams, two builds serving at once
/// (bench/scripts/ab_concurrent.py): up to 64 datagrams a batch, as
/// `recvmsg` reads take, cost 3-4% more than one at 11 KiB; waiting only
/// for the streams (`yield_now`), with every connection's turn after all
/// the datagrams, 1-4% more at 11 KiB and 16% more at 26 B than waiting
/// for the turn as well. Measured alone, with the servers taken in turn,
/// both changes together cost 0.93 of the old at 11 KiB (5 rounds) and
/// 0.97 at 26 B (9 rounds, within the noise).
/// It costs where the streams wait on an upstream: proxied 26 B, both
/// builds at once, one datagram a turn cost 1.20x what 64 a turn did
/// (`RINGSIDE_QUIC_RING_READS=64`, 7 rounds) and 1.17x what 8 did, while
/// static 11 KiB cost 0.79x and 0.89x, and 26 B 0.85x (with 16 KiB
/// datagrams). One a turn stays, for the static rows; a turn that suits
/// streams waiting on an upstream is still to be found.
const RING_READS_PER_TURN: usize = 1;

impl Shared {
    /// Sends what `q` has due, at most `batches` sends; whether more is due.
    /// On io_uring each train is built in a send buffer of the ring and
    /// goes with the loop's next `io_uring_enter`; with every such buffer
    /// in flight (or elsewhere), by `sendmsg` from the one reused buffer.
    pub(crate) fn transmit(&self, q: &mut Connection, now: Instant, batches: usize) -> bool {
        let mut sender = self.sender.borrow_mut();
        let mut tx = self.tx.borrow_mut();
        for _ in 0..batches {
            if let Some((s, (i, err))) = sender.as_mut().and_then(|s| s.free().map(|f| (s, f))) {
                if let Some(e) = err {
                    self.send_failed(e);
                }
                let Some(t) = q.poll_transmit(now, self.train(q), s.buf(i)) else {
                    return false;
                };
                if s.submit(i, t.destination, t.segment_size) {
                    self.sent(t.size, t.segment_size);
                    stats::add(|c| &c.ring_sends, 1);
                } else {
                    self.send(&s.buf(i)[..t.size], t.destination, t.segment_size);
                }
                continue;
            }
            tx.clear();
            let Some(t) = q.poll_transmit(now, self.train(q), &mut tx) else {
                return false;
            };
            self.send(&tx[..t.size], t.destination, t.segment_size);
        }
        true
    }

    /// Datagrams one send may carry for `q`: a GSO train is one UDP send,
    /// at most 65,507 bytes in all, so datagrams of a large path MTU go
    /// fewer a train (three of 16 KiB, or one pinned to 64 KiB).
    fn train(&self, q: &Connection) -> usize {
        let per = (GSO_BYTES / usize::from(q.current_mtu())).max(1);
        self.segments.get().min(per)
    }

    fn sent(&self, len: usize, segment: Option<usize>) {
        stats::add(|c| &c.send_calls, 1);
        stats::add(
            |c| &c.datagrams_out,
            segment.map_or(1, |s| len.div_ceil(s)) as u64,
        );
    }

    /// A send through the ring failed (found when its buffer is next used).
    fn send_failed(&self, e: std::io::Error) {
        // The kernel or the device has no GSO after all: one datagram a
        // send from now on (what that train carried, QUIC resends).
        if e.raw_os_error() == Some(libc::EIO) && self.segments.get() > 1 {
            tracing::info!("UDP GSO refused by the kernel; sending one datagram a call");
            self.segments.set(1);
        } else {
            tracing::trace!(error = %e, "UDP send failed");
        }
        stats::add(|c| &c.send_errors, 1);
    }

    fn send(&self, data: &[u8], to: SocketAddr, segment: Option<usize>) {
        let fd = self.sock.as_raw_fd();
        match crate::udp::send(fd, to, data, segment) {
            Ok(()) => self.sent(data.len(), segment),
            // The kernel or the device has no GSO after all: one datagram
            // a send from now on, and this train sent that way.
            Err(e) if segment.is_some() && e.raw_os_error() == Some(libc::EIO) => {
                tracing::info!("UDP GSO refused by the kernel; sending one datagram a call");
                self.segments.set(1);
                let s = segment.unwrap_or(data.len());
                for piece in data.chunks(s) {
                    self.send(piece, to, None);
                }
            }
            // A full send buffer (or an unreachable peer) loses the
            // datagram as the network would: QUIC's recovery resends it.
            Err(e) => {
                tracing::trace!(error = %e, "UDP send failed");
                stats::add(|c| &c.send_errors, 1);
            }
        }
    }

    pub(crate) fn forget(&self, h: ConnectionHandle) {
        if let Some(c) = self.conns.borrow_mut().remove(&h) {
            if !c.connected.get() {
                self.handshake_done();
            }
        }
    }

    pub(crate) fn handshake_done(&self) {
        self.handshaking
            .set(self.handshaking.get().saturating_sub(1));
    }
}

/// The QUIC side of a listener's rustls settings: ALPN `h3`, early data
/// only where `early_data` asks for it ([`crate::early`]), and our limits.
fn server_config(
    tls: &Arc<rustls::ServerConfig>,
    setup: &Setup,
    mtu_bound: u16,
) -> Result<Arc<ServerConfig>, String> {
    let mut t = (**tls).clone();
    t.alpn_protocols = vec![b"h3".to_vec()];
    t.max_early_data_size = 0;
    if setup.limits.early_data {
        crate::early::accept(&mut t);
    }
    let crypto = QuicServerConfig::try_from(Arc::new(t)).map_err(|e| e.to_string())?;
    let mut sc = ServerConfig::new(Arc::new(crypto), crate::keys::token_key());
    let l = &setup.limits;
    let mut tr = TransportConfig::default();
    // quinn's send fairness stays on: a packet a stream in turn. Sending
    // each response whole before the next (RFC 9218's non-incremental
    // order) made an 11 KiB response cost 1.20-1.44x the CPU (-c100, 10
    // streams, bench/scripts/ab_concurrent.py): responses ended one at a
    // time, so the client sent its next requests one at a time, and the
    // server took 0.73 datagrams in a request instead of 0.25.
    tr.max_concurrent_bidi_streams(VarInt::from_u32(l.max_concurrent_streams))
        // The client's control and QPACK streams, and room for one more.
        .max_concurrent_uni_streams(VarInt::from_u32(4))
        .stream_receive_window(VarInt::from_u32(l.stream_window))
        .receive_window(VarInt::from_u32(l.connection_window))
        .send_window(u64::from(l.send_window))
        .max_idle_timeout(Some(
            VarInt::from_u64(setup.idle_timeout.as_millis() as u64)
                .unwrap_or(VarInt::MAX)
                .into(),
        ))
        .datagram_receive_buffer_size(None);
    let mut mtud = MtuDiscoveryConfig::default();
    mtud.upper_bound(mtu_bound);
    tr.mtu_discovery_config(Some(mtud));
    sc.transport_config(Arc::new(tr));
    sc.max_incoming(l.max_handshakes as usize);
    Ok(Arc::new(sc))
}

/// QUIC server settings made for each path MTU bound.
type ByBound = Vec<(u16, Arc<ServerConfig>)>;

/// What the endpoint's loop and the hand-over listener share.
struct Ctx<F> {
    shared: Rc<Shared>,
    setup: Setup,
    tls: Box<dyn Fn() -> Option<Arc<rustls::ServerConfig>>>,
    /// The listener's TLS settings last seen, and the QUIC sides made of
    /// them, one for each path MTU bound met since.
    cached: RefCell<Option<(Arc<rustls::ServerConfig>, ByBound)>>,
    routes: RefCell<crate::mtu::Routes>,
    serve: F,
}

impl<F> Ctx<F> {
    /// The QUIC server settings for a new handshake: the listener's TLS
    /// now, path MTU discovery up to `mtu_bound` ([`crate::mtu`]).
    fn config(&self, mtu_bound: u16) -> Option<Arc<ServerConfig>> {
        let now = (self.tls)()?;
        let mut cached = self.cached.borrow_mut();
        match cached.as_mut() {
            Some((t, made)) if Arc::ptr_eq(t, &now) => {
                if let Some((_, q)) = made.iter().find(|(b, _)| *b == mtu_bound) {
                    return Some(q.clone());
                }
            }
            _ => *cached = Some((now.clone(), Vec::new())),
        }
        match server_config(&now, &self.setup, mtu_bound) {
            Ok(q) => {
                // Few bounds are met (one for each interface MTU, and a
                // path's own where the kernel has learnt one); past these,
                // each handshake builds its own.
                if let Some((_, made)) = cached.as_mut().filter(|(_, m)| m.len() < 8) {
                    made.push((mtu_bound, q.clone()));
                }
                Some(q)
            }
            Err(e) => {
                tracing::error!(error = %e, "TLS settings unusable for QUIC");
                None
            }
        }
    }
}

/// Serves a worker's UDP socket until the worker stops: `tls` gives the
/// listener's TLS settings now (a reload changes them: new handshakes take
/// the new ones), and `serve` runs in a task of its own for each
/// connection once accepted.
pub async fn serve<F, Fut>(
    socket: std::net::UdpSocket,
    setup: Setup,
    tls: impl Fn() -> Option<Arc<rustls::ServerConfig>> + 'static,
    serve: F,
) where
    F: Fn(Conn) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let local = match socket.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "HTTP/3 socket has no address");
            return;
        }
    };
    let sock = match UdpSocket::from_std(socket) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "HTTP/3 not served");
            return;
        }
    };
    // The datagram ring gives each datagram a buffer of its own, so GRO
    // (which would hand it several at once) is on only without the ring.
    let mut ring = sock.ring();
    let sender = match sock.sender(SEND_SLOTS, GSO_SEGMENTS * 1500) {
        Ok(s) => Some(s),
        Err(why) => {
            tracing::debug!(%why, "HTTP/3 sends by sendmsg");
            None
        }
    };
    let gro = crate::udp::setup(sock.as_raw_fd(), local.is_ipv6(), ring.is_err());
    let mut ep_cfg = EndpointConfig::new(crate::keys::reset_key());
    let (worker, workers) = (setup.worker, setup.workers);
    ep_cfg.cid_generator(move || Box::new(WorkerCids { worker, workers }));
    let ctx = Ctx {
        shared: Rc::new(Shared {
            // Replaced below, once the TLS settings are known good.
            quinn: RefCell::new(quinn_proto::Endpoint::new(
                Arc::new(EndpointConfig::default()),
                None,
                false,
                None,
            )),
            sock,
            local,
            conns: RefCell::new(FxHashMap::default()),
            tx: RefCell::new(Vec::with_capacity(GSO_SEGMENTS * 1500)),
            sender: RefCell::new(sender),
            // RINGSIDE_QUIC_GSO=off: one datagram a send, to measure what
            // GSO saves.
            segments: Cell::new(
                if cfg!(any(target_os = "linux", target_os = "android"))
                    && !std::env::var("RINGSIDE_QUIC_GSO").is_ok_and(|v| v == "off")
                {
                    GSO_SEGMENTS
                } else {
                    1
                },
            ),
            handshaking: Cell::new(0),
        }),
        setup,
        tls: Box::new(tls),
        cached: RefCell::new(None),
        routes: RefCell::new(crate::mtu::Routes::new()),
        serve,
    };
    let Some(first) = ctx.config(crate::mtu::INTERNET) else {
        tracing::error!(%local, "HTTP/3 not served: the listener has no usable TLS");
        return;
    };
    *ctx.shared.quinn.borrow_mut() =
        quinn_proto::Endpoint::new(Arc::new(ep_cfg), Some(first), true, None);
    let ctx = Rc::new(ctx);
    // Datagrams other workers hand over are answered when the bell rings.
    let handed: Rc<ringside_runtime::doorbell::Listener> = {
        let ctx = ctx.clone();
        Rc::new(move || {
            for (d, from) in ctx.setup.handoff.take(worker) {
                datagram(&ctx, BytesMut::from(&d[..]), from);
            }
        })
    };
    if workers > 1 {
        match ctx.setup.handoff.register(worker) {
            Ok(()) => ringside_runtime::doorbell::listen(&handed),
            Err(e) => tracing::warn!(error = %e, "no hand-over of QUIC packets to this worker"),
        }
    }
    match &ring {
        Ok(_) => {
            tracing::debug!(%local, worker, "HTTP/3 endpoint serving; receives by multishot RECVMSG")
        }
        Err(why) => {
            tracing::debug!(%local, worker, gro, %why, "HTTP/3 endpoint serving; receives by recvmsg")
        }
    }
    let mut plain = Plain::new(&ctx);
    // RINGSIDE_QUIC_RING_READS=N: N datagrams from the ring a turn, then
    // the turn given up as any task's (the order before the one-datagram
    // turn), to measure what that order is worth.
    let per_turn = std::env::var("RINGSIDE_QUIC_RING_READS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 1);
    loop {
        let Ok(r) = &ring else {
            if plain.read(&ctx).await {
                ringside_runtime::task::yield_now().await;
            } else if let Err(e) = ctx.shared.sock.readable().await {
                tracing::error!(error = %e, "HTTP/3 socket failed");
                return;
            }
            continue;
        };
        let max = per_turn.unwrap_or(RING_READS_PER_TURN);
        let took = r.take(max, |d, from| {
            stats::add(|c| &c.datagrams_in, 1);
            datagram(&ctx, BytesMut::from(d), from);
        });
        match took {
            Ok(n) if n == max && per_turn.is_some() => ringside_runtime::task::yield_now().await,
            Ok(n) if n == max => ringside_runtime::task::yield_after_ready().await,
            Ok(_) => {
                // The ring ran dry under the receive: what waits in the
                // socket is read the plain way before the ring is armed
                // again, the turn given up between batches.
                if !r.ready().await {
                    while plain.read(&ctx).await {
                        ringside_runtime::task::yield_now().await;
                    }
                }
            }
            // A kernel with buffer rings but no multishot RECVMSG (before
            // 6.0): read the plain way from now on.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
                tracing::warn!(error = %e, "multishot RECVMSG refused; HTTP/3 reads by recvmsg");
                ring = Err(e);
            }
            // An ICMP error queued on the socket, and the like.
            Err(e) => tracing::trace!(error = %e, "UDP receive failed"),
        }
    }
}

/// Reading the socket with `recvmsg` (GRO where on): where there is no
/// datagram ring, and where the ring ran dry.
struct Plain {
    /// One read buffer, reused: each datagram is copied out of it at its
    /// own size, because quinn-proto keeps a datagram's buffer for as long
    /// as any stream data in it is unread. Measured against a fresh 64 KiB
    /// buffer per read (26-byte file, -c100 with 10 streams each): that
    /// spent 15% of the server's CPU in malloc and first-touch page faults.
    rx: Vec<std::mem::MaybeUninit<u8>>,
    fd: std::os::fd::RawFd,
}

impl Plain {
    fn new<F>(ctx: &Ctx<F>) -> Plain {
        Plain {
            rx: Vec::new(),
            fd: ctx.shared.sock.as_raw_fd(),
        }
    }

    /// Reads until the socket would block; true if it stopped short of
    /// that to give the connections it woke a turn.
    async fn read<F, Fut>(&mut self, ctx: &Ctx<F>) -> bool
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = ()> + 'static,
    {
        if self.rx.is_empty() {
            self.rx
                .resize(crate::udp::MAX_READ, std::mem::MaybeUninit::uninit());
        }
        let mut read = 0;
        while read < READS_PER_TURN {
            let (n, from, stride) = match crate::udp::recv(self.fd, &mut self.rx) {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // An ICMP error queued on the socket, and the like.
                    tracing::trace!(error = %e, "UDP receive failed");
                    continue;
                }
            };
            read += 1;
            stats::add(|c| &c.recv_calls, 1);
            // SAFETY: the kernel wrote n bytes at the start of rx.
            let got = unsafe { std::slice::from_raw_parts(self.rx.as_ptr().cast::<u8>(), n) };
            for one in got.chunks(stride) {
                stats::add(|c| &c.datagrams_in, 1);
                datagram(ctx, BytesMut::from(one), from);
            }
        }
        true
    }
}

fn datagram<F, Fut>(ctx: &Ctx<F>, data: BytesMut, from: SocketAddr)
where
    F: Fn(Conn) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let (shared, setup) = (&ctx.shared, &ctx.setup);
    // A connection of another worker's (no steering program, or the group
    // rebuilt): handed to its owner, never answered here, where a stateless
    // reset would end it.
    if setup.workers > 1 {
        if let Some((b, false)) = dcid_first_byte(&data) {
            let owner = b as usize % setup.workers;
            if owner != setup.worker {
                stats::add(|c| &c.misdelivered, 1);
                if setup.handoff.send(owner, &data, from) {
                    stats::add(|c| &c.handed_over, 1);
                }
                return;
            }
        }
    }
    let now = Instant::now();
    let mut resp = Vec::new();
    let ev = shared
        .quinn
        .borrow_mut()
        .handle(now, from, None, None, data, &mut resp);
    match ev {
        None => {}
        Some(DatagramEvent::ConnectionEvent(h, ev)) => {
            let c = shared.conns.borrow().get(&h).cloned();
            if let Some(c) = c {
                c.q.borrow_mut().handle_event(ev);
                c.hand_on();
                c.kick();
            }
        }
        Some(DatagramEvent::Response(t)) => {
            shared.send(&resp[..t.size], t.destination, t.segment_size);
        }
        Some(DatagramEvent::NewConnection(incoming)) => admit(ctx, incoming, now),
    }
}

fn admit<F, Fut>(ctx: &Ctx<F>, incoming: Incoming, now: Instant)
where
    F: Fn(Conn) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let shared = &ctx.shared;
    let mut buf = Vec::new();
    let l = &ctx.setup.limits;
    let busy = shared.handshaking.get() >= l.retry_above;
    if (l.always_retry || busy) && !incoming.remote_address_validated() && incoming.may_retry() {
        let t = shared.quinn.borrow_mut().retry(incoming, &mut buf);
        if let Ok(t) = t {
            stats::add(|c| &c.retries_sent, 1);
            shared.send(&buf[..t.size], t.destination, t.segment_size);
        }
        return;
    }
    let bound = ctx.routes.borrow_mut().bound(incoming.remote_address());
    let cfg = ctx
        .config(bound)
        .filter(|_| shared.handshaking.get() < l.max_handshakes);
    let Some(cfg) = cfg else {
        stats::add(|c| &c.refused, 1);
        let t = shared.quinn.borrow_mut().refuse(incoming, &mut buf);
        shared.send(&buf[..t.size], t.destination, t.segment_size);
        return;
    };
    let accepted = shared
        .quinn
        .borrow_mut()
        .accept(incoming, now, &mut buf, Some(cfg));
    match accepted {
        Ok((h, q)) => {
            stats::add(|c| &c.connections, 1);
            shared.handshaking.set(shared.handshaking.get() + 1);
            let inner = Inner::new(q, h, shared.clone());
            shared.conns.borrow_mut().insert(h, inner.clone());
            let conn = Conn(inner.clone());
            ringside_runtime::task::spawn(drive(inner));
            ringside_runtime::task::spawn((ctx.serve)(conn));
        }
        Err(e) => {
            tracing::debug!(cause = %e.cause, "QUIC connection not accepted");
            if let Some(t) = e.response {
                shared.send(&buf[..t.size], t.destination, t.segment_size);
            }
        }
    }
}
