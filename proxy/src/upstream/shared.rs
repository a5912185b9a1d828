//! What the cores share about an upstream: its resolved addresses and their
//! active-health state, kept by one monitor thread for the whole process.
//!
//! The monitor re-resolves DNS names every `resolve_every` and probes each
//! address every `health_interval`, so probe traffic is one probe per
//! address per interval however many cores run. A change is published by
//! bumping `generation`; a core reads that one atomic per request and takes
//! the lock only when it moved, off the hot path.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use ringside_http::h1::encode::{write_header, write_request_line};
use ringside_http::h1::response::{parse_response, ResponseHead};
use ringside_runtime::tls::rustls;

use super::addr::PeerAddr;
use super::settings::{ActiveHealth, HttpVersion, ProxyVersion, ServerSpec, UpstreamConfig};
use crate::config::error::io_reason;

/// One address to send requests to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSpec {
    pub addr: PeerAddr,
    pub weight: u32,
    /// `host:port` as configured, for `proxy_host = "upstream"`.
    pub authority: Arc<str>,
    /// False while active health checks find it down.
    pub healthy: bool,
}

pub struct Shared {
    pub cfg: UpstreamConfig,
    /// With `tls = true`: how connections to the servers speak TLS.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// A digest of the trusted roots' file as read for `tls`: a reload
    /// compares contents, not the path, so a replaced bundle is taken.
    roots: Option<u64>,
    generation: AtomicU64,
    peers: Mutex<Vec<PeerSpec>>,
}

impl Shared {
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current peers and the generation they belong to.
    pub fn snapshot(&self) -> (u64, Vec<PeerSpec>) {
        let peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        (self.generation(), peers.clone())
    }

    fn publish(&self, update: impl FnOnce(&mut Vec<PeerSpec>) -> bool) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if update(&mut peers) {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }
}

/// Resolves every upstream's servers now and starts a monitor thread for
/// those that need watching. A name that does not resolve is not fatal (as
/// HAProxy's `init-addr none`): in Kubernetes a headless Service with no
/// ready pod answers NXDOMAIN, and the edge must come up while the app is
/// down. Its server starts with no address, a warning says so, and the
/// monitor tries again every `resolve_every`. An upstream of `old` (the
/// config a reload replaces) whose settings did not change is kept as it
/// is, with its health state.
pub fn start(cfgs: &[UpstreamConfig], old: &[Arc<Shared>]) -> Result<Vec<Arc<Shared>>, String> {
    let mut all = Vec::with_capacity(cfgs.len());
    let mut fresh = Vec::new();
    for cfg in cfgs {
        let roots = roots_digest(cfg);
        let same = old.iter().find(|s| s.cfg == *cfg);
        if let Some(kept) = same.filter(|s| s.roots == roots) {
            all.push(kept.clone());
            continue;
        }
        // Same settings but a CA bundle with other contents: a new TLS
        // config, and the addresses and their health as they were.
        let (peers, failed) = match same {
            Some(kept) => {
                tracing::info!(upstream = %cfg.name, "the upstream's CA bundle changed; trusting the new one");
                (kept.snapshot().1, Vec::new())
            }
            // Changed settings: resolved afresh, but a name that fails
            // this moment keeps the addresses the old upstream had for it.
            None => {
                let before = old
                    .iter()
                    .find(|s| s.cfg.name == cfg.name)
                    .map(|s| s.snapshot().1)
                    .unwrap_or_default();
                resolve(cfg, &before)
            }
        };
        for (server, error) in failed {
            tracing::warn!(
                upstream = %cfg.name,
                %server,
                %error,
                retry_every = ?cfg.resolve_every,
                "upstream server name does not resolve; it is down until it does"
            );
        }
        let version = cfg.http().map(|h| h.version).unwrap_or_default();
        let tls = cfg
            .tls()
            .map(|t| crate::tls::client_config(t, version))
            .transpose()
            .map_err(|e| format!("upstream {}: {e}", cfg.name))?;
        let s = Arc::new(Shared {
            cfg: cfg.clone(),
            tls,
            roots,
            generation: AtomicU64::new(1),
            peers: Mutex::new(peers),
        });
        fresh.push(s.clone());
        all.push(s);
    }
    let watched: Vec<Weak<Shared>> = fresh
        .iter()
        .filter(|s| s.cfg.active().is_some() || has_names(&s.cfg))
        .map(Arc::downgrade)
        .collect();
    if !watched.is_empty() {
        std::thread::Builder::new()
            .name("ringside-monitor".into())
            .spawn(move || monitor(watched))
            .map_err(|e| format!("cannot start the upstream monitor: {e}"))?;
    }
    Ok(all)
}

/// The digest of the roots file an upstream with verified TLS reads now
/// (its `tls_ca`, else the system bundle).
fn roots_digest(cfg: &UpstreamConfig) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let t = cfg.tls().filter(|t| t.verify)?;
    let path = t.ca.clone().or_else(crate::tls::certs::system_bundle)?;
    let bytes = crate::privileges::keeper::read(&path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

fn has_names(cfg: &UpstreamConfig) -> bool {
    cfg.servers
        .iter()
        .any(|s| s.host.parse::<IpAddr>().is_err())
}

/// `host:port` of a server, as Host headers and logs write it; a unix
/// socket's is `localhost` (a path is no host, and the server is on this
/// machine).
fn authority(s: &ServerSpec) -> Arc<str> {
    if s.unix.is_some() {
        return "localhost".into();
    }
    if s.host.contains(':') {
        format!("[{}]:{}", s.host, s.port).into()
    } else {
        format!("{}:{}", s.host, s.port).into()
    }
}

/// The addresses of one server: its socket, its IP, or what its name
/// resolves to now.
pub fn server_addrs(s: &ServerSpec) -> Result<Vec<PeerAddr>, String> {
    if let Some(path) = &s.unix {
        return Ok(vec![PeerAddr::Unix(path.as_path().into())]);
    }
    if let Ok(ip) = s.host.parse::<IpAddr>() {
        return Ok(vec![PeerAddr::Inet(SocketAddr::new(ip, s.port))]);
    }
    let addrs: Vec<PeerAddr> = (s.host.as_str(), s.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {}", s.host, io_reason(&e)))?
        .map(PeerAddr::Inet)
        .collect();
    if addrs.is_empty() {
        return Err(format!("{} resolves to no address", s.host));
    }
    Ok(addrs)
}

/// Every address of every server, each with its server's weight; and the
/// servers whose names did not resolve (by authority, with why). Those keep
/// the addresses they had in `old`, so a resolver that fails for a moment
/// takes nothing out of the pool.
fn resolve(cfg: &UpstreamConfig, old: &[PeerSpec]) -> (Vec<PeerSpec>, Vec<(Arc<str>, String)>) {
    let mut out: Vec<PeerSpec> = Vec::new();
    let mut failed = Vec::new();
    for s in &cfg.servers {
        let authority = authority(s);
        let addrs: Vec<PeerAddr> = match server_addrs(s) {
            Ok(a) => a,
            Err(e) => {
                failed.push((authority.clone(), e));
                old.iter()
                    .filter(|p| p.authority == authority)
                    .map(|p| p.addr.clone())
                    .collect()
            }
        };
        for addr in addrs {
            if !out.iter().any(|p| p.addr == addr) {
                out.push(PeerSpec {
                    addr,
                    weight: s.weight,
                    authority: authority.clone(),
                    healthy: true,
                });
            }
        }
    }
    (out, failed)
}

#[derive(Default)]
struct Streak {
    ok: u32,
    bad: u32,
}

/// Watches upstreams until a reload has replaced them all (it holds them
/// weakly, and ends at the first wake-up after the last is gone).
fn monitor(watched: Vec<Weak<Shared>>) {
    let now = Instant::now();
    let mut next_resolve: Vec<Instant> = Vec::with_capacity(watched.len());
    for w in &watched {
        let every = w.upgrade().map_or(Duration::ZERO, |s| s.cfg.resolve_every);
        next_resolve.push(now + every);
    }
    let mut next_probe: Vec<Instant> = vec![now; watched.len()];
    let mut streaks: HashMap<(usize, PeerAddr), Streak> = HashMap::new();
    loop {
        let now = Instant::now();
        let mut wake = now + Duration::from_secs(60);
        let mut alive = false;
        for (i, w) in watched.iter().enumerate() {
            let Some(s) = w.upgrade() else { continue };
            alive = true;
            if has_names(&s.cfg) {
                if now >= next_resolve[i] {
                    next_resolve[i] = now + s.cfg.resolve_every;
                    let (_, current) = s.snapshot();
                    let (fresh, failed) = resolve(&s.cfg, &current);
                    for (server, error) in failed {
                        tracing::warn!(upstream = %s.cfg.name, %server, %error, "re-resolving failed; keeping the server's old addresses");
                    }
                    s.publish(|peers| merge(peers, fresh));
                }
                wake = wake.min(next_resolve[i]);
            }
            if let Some(active) = s.cfg.active() {
                if now >= next_probe[i] {
                    next_probe[i] = now + active.interval;
                    probe_all(i, &s, active, &mut streaks);
                }
                wake = wake.min(next_probe[i]);
            }
        }
        if !alive {
            return;
        }
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
}

/// Takes the fresh address list, keeping the health of addresses that stay.
fn merge(peers: &mut Vec<PeerSpec>, mut fresh: Vec<PeerSpec>) -> bool {
    for p in &mut fresh {
        if let Some(old) = peers.iter().find(|o| o.addr == p.addr) {
            p.healthy = old.healthy;
        }
    }
    if *peers == fresh {
        return false;
    }
    tracing::info!(addresses = ?fresh.iter().map(|p| p.addr.to_string()).collect::<Vec<_>>(), "upstream addresses changed");
    *peers = fresh;
    true
}

fn probe_all(
    i: usize,
    s: &Shared,
    active: &ActiveHealth,
    streaks: &mut HashMap<(usize, PeerAddr), Streak>,
) {
    let (_, peers) = s.snapshot();
    for p in peers {
        let ok = probe(
            &p.addr,
            &p.authority,
            active,
            tls_for(s, &p.authority),
            s.cfg.send_proxy(),
            s.cfg.http().map(|h| h.version).unwrap_or_default(),
        );
        let st = streaks.entry((i, p.addr.clone())).or_default();
        let flip = if ok {
            st.bad = 0;
            st.ok += 1;
            !p.healthy && st.ok >= active.rise
        } else {
            st.ok = 0;
            st.bad += 1;
            p.healthy && st.bad >= active.fall
        };
        if flip {
            tracing::warn!(upstream = %s.cfg.name, server = %p.addr, healthy = ok, "health check changed state");
            s.publish(|peers| {
                peers
                    .iter_mut()
                    .filter(|q| q.addr == p.addr)
                    .for_each(|q| q.healthy = ok);
                true
            });
        }
    }
}

/// The TLS config and server name for a connection to the server at
/// `authority` of a `tls = true` upstream.
pub fn tls_for(
    s: &Shared,
    authority: &str,
) -> Option<(
    Arc<rustls::ClientConfig>,
    rustls::pki_types::ServerName<'static>,
)> {
    let cfg = s.tls.as_ref()?;
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    // The name was checked when the config was loaded.
    let name = crate::tls::server_name(s.cfg.tls()?, host).ok()?;
    Some((cfg.clone(), name))
}

/// One `GET path` on a fresh connection (over TLS when the upstream
/// speaks it); healthy when the status matches.
fn probe(
    addr: &PeerAddr,
    authority: &str,
    active: &ActiveHealth,
    tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    send_proxy: Option<ProxyVersion>,
    version: HttpVersion,
) -> bool {
    let tls_used = tls.is_some();
    let run = || -> std::io::Result<bool> {
        let mut tcp: Box<dyn ReadWrite> = match addr {
            PeerAddr::Inet(a) => {
                let t = TcpStream::connect_timeout(a, active.timeout)?;
                t.set_read_timeout(Some(active.timeout))?;
                t.set_write_timeout(Some(active.timeout))?;
                Box::new(t)
            }
            // A unix socket's connect waits on a full backlog for as long
            // as the send timeout allows: set before it.
            PeerAddr::Unix(p) => {
                use socket2::{Domain, SockAddr, Socket, Type};
                let u = Socket::new(Domain::UNIX, Type::STREAM, None)?;
                u.set_read_timeout(Some(active.timeout))?;
                u.set_write_timeout(Some(active.timeout))?;
                u.connect(&SockAddr::unix(p)?)?;
                Box::new(std::os::unix::net::UnixStream::from(
                    std::os::fd::OwnedFd::from(u),
                ))
            }
        };
        if let Some(v) = send_proxy {
            // A server behind `accept-proxy` wants its header from every
            // connection; a check's names no client.
            let mut h = Vec::new();
            ringside_http::proxy_protocol::write_local(&mut h, v == ProxyVersion::V2);
            std::io::Write::write_all(&mut tcp, &h)?;
        }
        // HTTP/2 where the upstream speaks it: h2c by prior knowledge,
        // or what the server chose by ALPN.
        let mut h2 = version == HttpVersion::H2;
        let mut c: Box<dyn ReadWrite> = match tls {
            Some((cfg, name)) => {
                let mut conn =
                    rustls::ClientConnection::new(cfg, name).map_err(std::io::Error::other)?;
                while conn.is_handshaking() {
                    conn.complete_io(&mut tcp)?;
                }
                h2 = conn.alpn_protocol() == Some(b"h2");
                Box::new(rustls::StreamOwned::new(conn, tcp))
            }
            None => Box::new(tcp),
        };
        if h2 {
            let scheme: &[u8] = if tls_used { b"https" } else { b"http" };
            let got = super::probe_h2::status(&mut *c, scheme, authority, &active.path);
            return Ok(got == Some(active.expect_status));
        }
        let mut req = bytes::BytesMut::with_capacity(256);
        write_request_line(&mut req, b"GET", &[active.path.as_bytes()], None);
        write_header(&mut req, b"Host", authority.as_bytes());
        write_header(&mut req, b"User-Agent", b"ringside-health");
        write_header(&mut req, b"Connection", b"close");
        req.extend_from_slice(b"\r\n");
        c.write_all(&req)?;
        // The same strict parser as forwarded responses: a server that
        // answers garbage is not healthy, whatever its first bytes say.
        let mut buf = Vec::with_capacity(1024);
        let mut head = ResponseHead::empty();
        let mut chunk = [0u8; 1024];
        loop {
            match parse_response(&buf, false, MAX_PROBE_HEAD, &mut head) {
                Ok(true) if head.is_interim() => {
                    buf.drain(..head.head_len);
                    continue;
                }
                Ok(true) => return Ok(head.status == active.expect_status),
                Ok(false) => {}
                Err(_) => return Ok(false),
            }
            let n = c.read(&mut chunk)?;
            if n == 0 {
                return Ok(false);
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    run().unwrap_or(false)
}

/// The longest health-check response head read.
const MAX_PROBE_HEAD: usize = 16 * 1024;

use super::probe_h2::ReadWrite;
