//! Listening sockets carried across a binary upgrade: the old process keeps
//! a copy of each ([`Bound::handover`]) to hand over, and the new one
//! builds its workers from what it was handed ([`adopt`]) instead of
//! binding. The sockets stay open throughout, held by one process or both,
//! so no queued connection or handshake in flight is reset.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use super::{placement, Bound, StartError};
use crate::backend;
use crate::config::{RuntimeConfig, ServerConfig};
use crate::net::bind_reuseport;

/// Per `[server] listen` address, in config order: every socket a previous
/// process held on it, one per worker it ran.
pub type Inherited = Vec<Vec<std::net::TcpListener>>;

/// How long, in a handover drain, an idle keep-alive connection waits for
/// its next request before it is closed (at most its keep-alive timeout):
/// a busy client sends within milliseconds and is answered with
/// `Connection: close`, and a client starved of CPU for a while still
/// finds its connection open; one quiet this long is closed as on
/// SIGTERM.
const HANDOVER_IDLE_LINGER: Duration = Duration::from_secs(5);

pub(super) fn idle_linger(keepalive_idle: Duration) -> Duration {
    if crate::shutdown::handing_over() {
        HANDOVER_IDLE_LINGER.min(keepalive_idle)
    } else {
        Duration::ZERO
    }
}

impl Bound {
    /// A copy of every listening socket, per address in config order, for
    /// a new process to take over.
    pub fn handover(&self) -> io::Result<Vec<Vec<OwnedFd>>> {
        let mut out: Vec<Vec<OwnedFd>> = (0..self.local_addrs.len()).map(|_| Vec::new()).collect();
        for (w, own) in self.per_worker.iter().enumerate() {
            for (i, l) in own.iter().enumerate() {
                out[i].push(l.try_clone()?.into());
            }
            for (i, l) in self.extra.get(w).into_iter().flatten() {
                out[*i].push(l.try_clone()?.into());
            }
        }
        Ok(out)
    }
}

/// As [`super::bind`], with the sockets of `inherited` instead of new ones:
/// socket `j` of an address goes to worker `j % n`. A worker beyond those
/// sockets binds its own with `SO_REUSEPORT`; with fewer workers than
/// sockets, a worker accepts on several, so that no socket (and no
/// connection queued on it) is closed.
pub fn adopt(
    rt: &RuntimeConfig,
    srv: &ServerConfig,
    inherited: Inherited,
) -> Result<Bound, StartError> {
    let backend = backend::resolve(rt.backend)?;
    if backend == backend::Backend::Glommio && srv.tls.iter().any(Option::is_some) {
        return Err(StartError::TlsOnGlommio);
    }
    if inherited.len() != srv.listen.len() || inherited.iter().any(Vec::is_empty) {
        return Err(StartError::Io(io::Error::other(format!(
            "handed {} listen addresses, the config has {}",
            inherited.len(),
            srv.listen.len()
        ))));
    }
    let (n, pins) = placement(rt)?;
    let mut per_worker: Vec<Vec<std::net::TcpListener>> = (0..n).map(|_| Vec::new()).collect();
    let mut extra: Vec<Vec<(usize, std::net::TcpListener)>> = (0..n).map(|_| Vec::new()).collect();
    let mut local_addrs = Vec::new();
    let mut shared = 0;
    for (i, socks) in inherited.into_iter().enumerate() {
        let actual = socks[0].local_addr()?;
        local_addrs.push(actual);
        let had = socks.len();
        for (j, l) in socks.into_iter().enumerate() {
            if j < n {
                per_worker[j].push(l);
            } else {
                extra[j % n].push((i, l));
                shared += 1;
            }
        }
        for w in per_worker.iter_mut().skip(had) {
            w.push(
                bind_reuseport(actual, srv.backlog).map_err(|cause| StartError::Bind {
                    addr: actual,
                    cause,
                })?,
            );
        }
    }
    // Closing a socket of a reuseport group resets what is queued on it
    // unless net.ipv4.tcp_migrate_req moves that to another (Linux 5.14);
    // no handed-over socket is ever closed here, so neither is needed.
    tracing::info!(
        workers = n,
        accepting_on_several = shared,
        tcp_migrate_req = ?migrate_req(),
        "listeners taken over from the previous process; none is closed (a worker accepts on several where there are fewer workers than sockets)"
    );
    // UDP is not handed over, and with several workers not bound either:
    // this process's sockets would join the old one's reuseport group, and
    // the BPF program steers by a socket's place in the group, which the
    // old sockets hold until that process exits and which closing them
    // then reshuffles; every packet after the handshake would reach
    // another worker. HTTP/3 (and its Alt-Svc) waits for a restart. One
    // worker steers nothing and keeps it.
    let udp = if n == 1 {
        super::bind_udp(srv, &local_addrs, n)?
    } else {
        if srv.http3.iter().any(|&on| on) {
            crate::udp::set_unserved();
            tracing::warn!(workers = n, "HTTP/3 is not served after a binary upgrade with several workers, until the next restart (QUIC packets cannot be steered to their worker while the old process holds the port)");
        }
        (0..n).map(|_| Vec::new()).collect()
    };
    Ok(Bound {
        backend,
        n,
        pins,
        per_worker,
        extra,
        local_addrs,
        udp,
        srv: srv.clone(),
        ring_entries: rt.ring_entries,
        coalesce_wait: rt.coalesce_wait,
    })
}

/// `net.ipv4.tcp_migrate_req`: whether the kernel moves the connections
/// queued on a closed reuseport socket to another of its group; `None`
/// where the kernel has no such setting (before 5.14).
pub fn migrate_req() -> Option<bool> {
    let v = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_migrate_req").ok()?;
    Some(v.trim() != "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BackendChoice, Workers};

    fn rt(workers: usize) -> RuntimeConfig {
        RuntimeConfig {
            workers: Workers::Count(workers),
            backend: BackendChoice::Epoll,
            ..RuntimeConfig::default()
        }
    }

    fn sockets(n: usize) -> (ServerConfig, Vec<std::net::TcpListener>) {
        let first = bind_reuseport("127.0.0.1:0".parse().unwrap(), 16).unwrap();
        let addr = first.local_addr().unwrap();
        let mut all = vec![first];
        all.extend((1..n).map(|_| bind_reuseport(addr, 16).unwrap()));
        let srv = ServerConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            ..ServerConfig::default()
        };
        (srv, all)
    }

    #[test]
    fn fewer_workers_accept_on_several_sockets_and_close_none() {
        let (srv, socks) = sockets(3);
        let b = adopt(&rt(1), &srv, vec![socks]).unwrap();
        assert_eq!(b.per_worker[0].len(), 1);
        assert_eq!(b.extra[0].len(), 2);
        assert!(b.extra[0].iter().all(|(i, _)| *i == 0));
        // All three are handed on at the next upgrade.
        assert_eq!(b.handover().unwrap()[0].len(), 3);
    }

    #[test]
    fn more_workers_bind_their_own_on_the_same_port() {
        let (srv, socks) = sockets(1);
        let port = socks[0].local_addr().unwrap().port();
        let b = adopt(&rt(3), &srv, vec![socks]).unwrap();
        assert_eq!(
            b.per_worker.iter().map(Vec::len).collect::<Vec<_>>(),
            [1, 1, 1]
        );
        assert!(b
            .per_worker
            .iter()
            .flatten()
            .all(|l| l.local_addr().unwrap().port() == port));
        assert_eq!(b.handover().unwrap()[0].len(), 3);
        assert_eq!(b.local_addrs()[0].port(), port);
    }

    #[test]
    fn a_different_listen_count_is_refused() {
        let (mut srv, socks) = sockets(1);
        srv.listen.push("127.0.0.1:0".parse().unwrap());
        assert!(adopt(&rt(1), &srv, vec![socks]).is_err());
    }
}
