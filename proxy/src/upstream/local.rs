//! One core's view of an upstream: its peers with their idle pools, pool
//! policies, in-flight counts and passive health, and its balancer. Lives
//! in a `RefCell` owned by the core; borrowed only between awaits, never
//! across one.

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Instant;

use ringside_http::Error;
use ringside_runtime::net::TcpStream;

use super::addr::PeerAddr;
use super::balance::Balancer;
use super::failure::{Gate, Gates, Reason};
use super::policy::{Grant, Policy};
use super::pool::Pool;
use super::settings::UpstreamProtocol;
use super::shared::{PeerSpec, Shared};
use crate::fastcgi::capacity::{self, Slots};
use crate::fastcgi::learn::Capacity;
use crate::metrics::{CoreStats, ServerStats};

mod h2;
mod slots;

pub struct Peer {
    pub spec: PeerSpec,
    pub pool: Pool,
    policy: Policy,
    fails: u32,
    first_fail: Instant,
    down_until: Option<Instant>,
    stats: Arc<ServerStats>,
    /// This core's error-log gates for the server's failures.
    gates: Gates,
    /// HTTP/2 connections to the server, each carrying many requests.
    pub h2: Vec<Rc<ringside_http::h2::client::ClientConn>>,
    /// `protocol = "auto"`: the server chose HTTP/1.1 by ALPN, so its
    /// requests go over HTTP/1.1 connections from `pool`.
    pub http1: bool,
    /// The most tries in flight to the server at once on this core, since
    /// the reaper's last sweep and in the sweep before.
    peak: [u32; 2],
}

impl Drop for Peer {
    /// A peer goes (a reload replaced its upstream, or DNS no longer lists
    /// it) with its idle connections: the server's shared count lets them
    /// go too.
    fn drop(&mut self) {
        self.h2.iter().for_each(|c| c.retire());
        if let Policy::Slots(slots) = &mut self.policy {
            (0..self.pool.len()).for_each(|_| slots.closed());
        }
    }
}

impl Peer {
    /// A connection free again after a request, fit for reuse. FastCGI:
    /// closed when another core asked for one (its queue is starved and
    /// this core has connections), else to the first waiter. Else to the
    /// pool, and closed beyond `max`.
    fn give_back(&mut self, s: TcpStream, max: usize) {
        match &mut self.policy {
            Policy::Lifo => drop(self.pool.put(s, max)),
            Policy::Slots(slots) if slots.take_release() => {
                drop(s);
                slots.closed();
            }
            Policy::Slots(slots) => {
                if let Some(s) = slots.hand_over(s) {
                    if let Some(extra) = self.pool.put(s, max) {
                        drop(extra);
                        slots.closed();
                    }
                }
            }
        }
    }

    /// Closes idle connections another core or process asked for.
    fn close_asked(&mut self) {
        if let Policy::Slots(slots) = &mut self.policy {
            while !self.pool.is_empty() && slots.take_release() {
                if let Some(s) = self.pool.take_oldest() {
                    drop(s);
                    slots.closed();
                }
            }
        }
    }

    fn idle_changed(&mut self) {
        self.stats.idle.set(self.pool.len() as u64);
        if let Policy::Slots(s) = &mut self.policy {
            s.set_idle(self.pool.len());
        }
    }
}

pub struct Local {
    pub shared: Arc<Shared>,
    generation: u64,
    pub peers: Vec<Peer>,
    in_flight: Vec<u32>,
    balancer: Balancer,
    seed: u64,
    /// This core's index and the number of cores, for capacity shares.
    core: (usize, usize),
    metrics: Arc<CoreStats>,
    /// The `Rc` this lives in, for the tasks it starts (FastCGI openers).
    me: Weak<RefCell<Local>>,
    /// Run when this core's bell rings (FastCGI: another core's ask).
    on_ring: Option<Rc<ringside_runtime::doorbell::Listener>>,
    /// The error-log gate for requests that found no server to try.
    no_server: Gate,
    /// A look at the FastCGI queues is due shortly (see `recheck_soon`).
    rechecking: bool,
}

/// A peer chosen for one try: its index in this generation and its address,
/// which outlives a change of generation.
#[derive(Clone, Debug)]
pub struct Chosen {
    pub index: usize,
    pub generation: u64,
    pub addr: PeerAddr,
    pub authority: Arc<str>,
}

impl Local {
    /// This core's view of `shared`. Call on the worker's thread: a FastCGI
    /// upstream starts tasks there and answers the core's bell.
    pub fn new(
        shared: Arc<Shared>,
        seed: u64,
        core: usize,
        cores: usize,
        metrics: Arc<CoreStats>,
    ) -> Rc<RefCell<Local>> {
        let l = Rc::new_cyclic(|me| {
            RefCell::new(Local::build(shared, seed, core, cores, metrics, me.clone()))
        });
        if l.borrow().shared.cfg.fastcgi().is_some() {
            let me = Rc::downgrade(&l);
            let f: Rc<ringside_runtime::doorbell::Listener> = Rc::new(move || {
                if let Some(l) = me.upgrade() {
                    l.borrow_mut().bell_rang();
                }
            });
            ringside_runtime::doorbell::listen(&f);
            l.borrow_mut().on_ring = Some(f);
        }
        l
    }

    fn build(
        shared: Arc<Shared>,
        seed: u64,
        core: usize,
        cores: usize,
        metrics: Arc<CoreStats>,
        me: Weak<RefCell<Local>>,
    ) -> Local {
        let (generation, specs) = shared.snapshot();
        let weights: Vec<u32> = specs.iter().map(|p| p.weight).collect();
        let mut l = Local {
            me,
            on_ring: None,
            no_server: Gate::default(),
            rechecking: false,
            balancer: Balancer::new(&shared.cfg.balance, &weights, seed),
            in_flight: vec![0; specs.len()],
            peers: Vec::with_capacity(specs.len()),
            shared,
            generation,
            seed,
            core: (core, cores),
            metrics,
        };
        for spec in specs {
            let p = l.peer(spec);
            l.peers.push(p);
        }
        l
    }

    fn peer(&self, spec: PeerSpec) -> Peer {
        let cfg = &self.shared.cfg;
        let policy = match &cfg.protocol {
            UpstreamProtocol::Http(_) => Policy::Lifo,
            UpstreamProtocol::FastCgi(f) => {
                let cap = Capacity::of(&spec.addr, self.core.1);
                match ringside_runtime::doorbell::here() {
                    Ok(bell) => cap.set_bell(self.core.0, bell),
                    Err(e) => {
                        tracing::warn!(error = %e, "no bell for this core: other cores cannot ask it to free FastCGI connections")
                    }
                }
                Policy::Slots(Slots::new(cap, self.core.0, f))
            }
        };
        let stats = self.metrics.server(&cfg.name, &spec.addr.to_string());
        // A peer made again (after a reload or a DNS change) starts with
        // no connections of this core's.
        stats.active.set(0);
        stats.idle.set(0);
        stats.down.set(0);
        Peer {
            spec,
            pool: Pool::default(),
            peak: [0; 2],
            policy,
            fails: 0,
            first_fail: Instant::now(),
            down_until: None,
            stats,
            gates: Gates::default(),
            h2: Vec::new(),
            http1: false,
        }
    }

    /// Takes the monitor's latest addresses and health, keeping the pools
    /// and passive state of addresses that stay.
    fn refresh(&mut self) {
        if self.shared.generation() == self.generation {
            return;
        }
        let (generation, specs) = self.shared.snapshot();
        let mut old: Vec<(Peer, u32)> =
            self.peers.drain(..).zip(self.in_flight.drain(..)).collect();
        for spec in specs {
            match old.iter().position(|(p, _)| p.spec.addr == spec.addr) {
                Some(i) => {
                    let (mut p, n) = old.swap_remove(i);
                    p.spec = spec;
                    self.peers.push(p);
                    self.in_flight.push(n);
                }
                None => {
                    let p = self.peer(spec);
                    self.peers.push(p);
                    self.in_flight.push(0);
                }
            }
        }
        let weights: Vec<u32> = self.peers.iter().map(|p| p.spec.weight).collect();
        self.balancer = Balancer::new(&self.shared.cfg.balance, &weights, self.seed);
        self.generation = generation;
    }

    /// Chooses a peer that is healthy, not in passive cooldown and not in
    /// `tried`; `None` when there is none left.
    pub fn pick(&mut self, tried: &[PeerAddr], key: Option<u64>) -> Option<Chosen> {
        self.refresh();
        let now = Instant::now();
        let peers = &self.peers;
        let usable = |i: usize| {
            let p = &peers[i];
            p.spec.healthy && p.down_until.is_none_or(|t| now >= t) && !tried.contains(&p.spec.addr)
        };
        let index = self.balancer.pick(&usable, &self.in_flight, key)?;
        let p = &self.peers[index];
        Some(Chosen {
            index,
            generation: self.generation,
            addr: p.spec.addr.clone(),
            authority: p.spec.authority.clone(),
        })
    }

    fn find(&self, c: &Chosen) -> Option<usize> {
        if c.generation == self.generation {
            Some(c.index)
        } else {
            self.peers.iter().position(|p| p.spec.addr == c.addr)
        }
    }

    /// Counts a try to `c` in flight; its peer's index, `None` when the
    /// server left the upstream since it was picked.
    fn enter(&mut self, c: &Chosen) -> Option<usize> {
        let i = self.find(c)?;
        self.in_flight[i] += 1;
        let p = &mut self.peers[i];
        p.peak[0] = p.peak[0].max(self.in_flight[i]);
        p.stats.active.add(1);
        Some(i)
    }

    /// What the chosen peer's policy grants a try: a pooled connection
    /// (if `pooled` allows one and one is idle and sound; `check` peeks it
    /// first), a new one, a place in the queue, or a refusal. Counts the
    /// request as in flight unless refused; end it with [`Local::release`]
    /// or [`Local::abandon`].
    pub fn take(&mut self, c: &Chosen, pooled: bool, check: bool) -> Grant {
        let Some(i) = self.enter(c) else {
            return Grant::Gone;
        };
        let idle = self.shared.cfg.pool.idle_timeout;
        let p = &mut self.peers[i];
        if pooled {
            let (s, dropped) = p.pool.take(idle, check);
            if let Policy::Slots(slots) = &mut p.policy {
                (0..dropped).for_each(|_| slots.closed());
            }
            p.idle_changed();
            if let Some(s) = s {
                p.stats.reused.add(1);
                return Grant::Pooled(s);
            }
        }
        let grant = match &mut p.policy {
            Policy::Lifo => return Grant::Open,
            Policy::Slots(slots) => slots.acquire(),
        };
        match grant {
            capacity::Grant::Wait(w) => {
                self.feed(i);
                Grant::Wait(w)
            }
            capacity::Grant::Full => {
                self.in_flight[i] -= 1;
                p.stats.active.sub(1);
                Grant::Full
            }
        }
    }

    /// Ends a try: a connection fit for reuse goes to the first waiter or
    /// the pool; `None` (closed, or never opened) frees what it held.
    /// `failure`: what the try failed with, if it did.
    pub fn release(&mut self, c: &Chosen, keep: Option<TcpStream>, failure: Option<&Error>) {
        let Some(i) = self.find(c) else { return };
        self.in_flight[i] = self.in_flight[i].saturating_sub(1);
        let max = self.keep_idle(i);
        let p = &mut self.peers[i];
        p.stats.active.sub(1);
        let mut freed = false;
        match (keep, &mut p.policy) {
            (Some(s), _) => p.give_back(s, max),
            (None, Policy::Lifo) => {}
            (None, Policy::Slots(slots)) => {
                slots.closed();
                freed = true;
            }
        }
        p.idle_changed();
        if let Some(e) = failure {
            self.fail(i, e);
        }
        if freed {
            self.feed(i);
        }
    }

    /// The most idle connections a peer's pool keeps: none while draining,
    /// so that each connection goes as its request ends (after the
    /// requests still waiting for one) and a process taking over gets the
    /// servers' capacity.
    fn pool_max(&self) -> usize {
        if ringside_runtime::shutdown::draining() {
            0
        } else {
            self.shared.cfg.pool.max_idle
        }
    }

    /// The most idle connections peer `i`'s pool keeps now: `max_idle`,
    /// or as many as it takes to serve the most requests in flight to it
    /// lately (since the reaper's sweep before last) where that is more.
    /// Responses end in batches and the next requests come a turn later:
    /// with 5,000 HTTP/2 streams proxied to an HTTP/1.1 server, a batch
    /// left more than `max_idle` (1,024) idle for a moment, the surplus
    /// closed, and the next batch opened them again (15,132 connections
    /// opened for 90,000 requests, 0.38 system calls a request against
    /// 0.15 at 1,000 streams). Once fewer requests are in flight, the
    /// surplus over `max_idle` closes within two sweeps ([`Local::reap`]).
    fn keep_idle(&self, i: usize) -> usize {
        match self.pool_max() {
            0 => 0,
            max => {
                let peak = self.peers[i].peak.into_iter().max().unwrap_or(0);
                max.max(peak.saturating_sub(self.in_flight[i]) as usize)
            }
        }
    }

    /// Whether requests wait in `c`'s queue on this core.
    pub fn has_waiters(&self, c: &Chosen) -> bool {
        self.find(c).is_some_and(|i| match &self.peers[i].policy {
            Policy::Slots(s) => s.has_waiters(),
            Policy::Lifo => false,
        })
    }

    /// A try that gave up waiting, holding nothing.
    pub fn abandon(&mut self, c: &Chosen) {
        if let Some(i) = self.find(c) {
            self.in_flight[i] = self.in_flight[i].saturating_sub(1);
            self.peers[i].stats.active.sub(1);
        }
    }

    /// A try to peer `i` failed with `e`: counted and logged by its reason
    /// (rate-limited), and held against the peer's health if it was the
    /// server's fault.
    fn fail(&mut self, i: usize, e: &Error) {
        // A pooled connection the server had closed is no fault of its:
        // retried where the request allows, else the access log says so.
        if e.kind() == ringside_http::Kind::Stale {
            return;
        }
        let Some(reason) = Reason::of(e) else { return };
        let p = &mut self.peers[i];
        p.stats.failures[reason.index()].add(1);
        p.gates
            .warn(reason, e, &self.shared.cfg.name, Some(&p.spec.addr));
        if !e.kind().server_failed() {
            return;
        }
        let Some(ph) = self.shared.cfg.passive else {
            return;
        };
        // As nginx does: a lone server is never marked down, since that
        // only turns one fault into a cooldown of 502s with nowhere else
        // to go.
        if self.peers.len() < 2 {
            return;
        }
        let now = Instant::now();
        let p = &mut self.peers[i];
        if p.fails == 0 || now.duration_since(p.first_fail) > ph.window {
            p.fails = 0;
            p.first_fail = now;
        }
        p.fails += 1;
        if p.fails >= ph.max_fails {
            p.fails = 0;
            p.down_until = Some(now + ph.cooldown);
            p.stats.down.set(1);
            tracing::warn!(upstream = %self.shared.cfg.name, server = %p.spec.addr, cooldown = ?ph.cooldown, "server marked down after failures");
        }
    }

    /// A try to `c` failed with `e` without a connection to release (its
    /// queue was full, say): counted and logged like any failure.
    pub fn note_failure(&mut self, c: &Chosen, e: &Error) {
        if let Some(i) = self.find(c) {
            self.fail(i, e);
        }
    }

    /// No server was left to try: logged (rate-limited) for the upstream.
    pub fn note_no_server(&mut self, e: &Error) {
        self.no_server
            .warn(Reason::NoServer, e, &self.shared.cfg.name, None);
    }

    /// Closes idle connections past their timeout or closed by the server,
    /// and the oldest beyond what the pool keeps now.
    pub fn reap(&mut self, now: Instant) {
        let idle = self.shared.cfg.pool.idle_timeout;
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            p.peak = [self.in_flight[i], p.peak[0]];
            let keep = self.keep_idle(i);
            let p = &mut self.peers[i];
            if p.down_until.is_some_and(|t| now >= t) {
                p.stats.down.set(0);
            }
            let closed = p.pool.reap(idle, now) + p.pool.trim(keep);
            p.close_asked();
            p.idle_changed();
            h2::reap(&mut p.h2, now, &self.shared.cfg);
            p.stats.h2_conns.set(p.h2.len() as u64);
            if let Policy::Slots(slots) = &mut p.policy {
                (0..closed).for_each(|_| slots.closed());
            }
        }
        for i in 0..self.peers.len() {
            self.feed(i);
        }
    }

    /// At the drain: closes every idle connection, so that a process
    /// taking over gets the servers' capacity at once.
    pub fn drain_idle(&mut self) {
        for p in &mut self.peers {
            let closed = p.pool.reap(std::time::Duration::ZERO, Instant::now());
            p.idle_changed();
            p.h2.drain(..).for_each(|c| c.retire());
            p.stats.h2_conns.set(0);
            if let Policy::Slots(slots) = &mut p.policy {
                (0..closed).for_each(|_| slots.closed());
            }
        }
    }
}

impl Local {
    /// Counts a connection lent again: one handed to a waiting request.
    pub fn count_reused(&self, c: &Chosen) {
        if let Some(i) = self.find(c) {
            self.peers[i].stats.reused.add(1);
        }
    }

    /// Counts a new connection to `addr`.
    pub fn count_opened(&self, addr: &PeerAddr) {
        if let Some(p) = self.peers.iter().find(|p| p.spec.addr == *addr) {
            p.stats.opened.add(1);
        }
    }
}
