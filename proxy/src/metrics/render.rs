//! `/metrics` in the Prometheus text format (version 0.0.4): each family
//! once, with its HELP and TYPE, its samples summed over the cores.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::text::{esc, family};
use super::{Registry, RouteLabel, LATENCY_BOUNDS_US};
use crate::upstream::failure::Reason;

#[derive(Default)]
struct RouteSum {
    by_class: [u64; 5],
    body: u64,
    head: u64,
    latency: [u64; LATENCY_BOUNDS_US.len() + 1],
    sum_us: u64,
    limited: u64,
}

#[derive(Default)]
struct ServerSum {
    active: u64,
    idle: u64,
    opened: u64,
    reused: u64,
    failures: [u64; Reason::ALL.len()],
    down_cores: u64,
    /// HTTP/2 connections to the server, by worker.
    h2_conns: Vec<(usize, u64)>,
}

pub fn render(reg: &Registry) -> String {
    let mut out = String::with_capacity(8 << 10);
    let cores = reg.cores();

    // An info metric ends in `_info` (OpenMetrics), so a query can join
    // its labels onto any other series.
    family(
        &mut out,
        "ringside_build_info",
        "gauge",
        "Version and I/O backend; always 1.",
    );
    let backend = reg.backend.get().map_or("", String::as_str);
    let _ = writeln!(
        out,
        "ringside_build_info{{version=\"{}\",backend=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        esc(backend)
    );
    family(
        &mut out,
        "ringside_uptime_seconds",
        "gauge",
        "Seconds since the process started.",
    );
    let _ = writeln!(
        out,
        "ringside_uptime_seconds {:.3}",
        reg.started.elapsed().as_secs_f64()
    );
    super::process::render(&mut out);
    crate::acme::metrics::render(&mut out);
    family(
        &mut out,
        "ringside_reloads_total",
        "counter",
        "Configuration reloads, by result.",
    );
    let _ = writeln!(
        out,
        "ringside_reloads_total{{result=\"ok\"}} {}",
        reg.reloads_ok.load(Relaxed)
    );
    let _ = writeln!(
        out,
        "ringside_reloads_total{{result=\"failed\"}} {}",
        reg.reloads_failed.load(Relaxed)
    );

    family(
        &mut out,
        "ringside_open_connections",
        "gauge",
        "Client connections open now, per worker.",
    );
    for c in &cores {
        let _ = writeln!(
            out,
            "ringside_open_connections{{worker=\"{}\"}} {}",
            c.worker,
            c.conns.open()
        );
    }
    family(
        &mut out,
        "ringside_accepted_connections_total",
        "counter",
        "Client connections accepted, per worker.",
    );
    for c in &cores {
        let _ = writeln!(
            out,
            "ringside_accepted_connections_total{{worker=\"{}\"}} {}",
            c.worker,
            c.conns.accepted()
        );
    }
    family(
        &mut out,
        "ringside_connection_limit_reached_total",
        "counter",
        "Times a worker stopped accepting at [limits] max_connections.",
    );
    for c in &cores {
        let _ = writeln!(
            out,
            "ringside_connection_limit_reached_total{{worker=\"{}\"}} {}",
            c.worker,
            c.conns.limit_reached()
        );
    }
    family(
        &mut out,
        "ringside_tls_handshakes_total",
        "counter",
        "Client TLS handshakes by outcome: full, resumed (ticket or session id), failed.",
    );
    for c in &cores {
        let (full, resumed, failed) = c.conns.tls_handshakes();
        for (kind, n) in [("full", full), ("resumed", resumed), ("failed", failed)] {
            let _ = writeln!(
                out,
                "ringside_tls_handshakes_total{{worker=\"{}\",kind=\"{kind}\"}} {n}",
                c.worker
            );
        }
    }
    family(
        &mut out,
        "ringside_tls_record_path",
        "gauge",
        "Where TLS records are encrypted: always \"userspace\" (rustls); this build has no kTLS path.",
    );
    let _ = writeln!(out, "ringside_tls_record_path{{path=\"userspace\"}} 1");
    render_http2(&cores, &mut out);
    super::quic::render(&cores, &mut out);
    render_compression(&cores, &mut out);
    render_caches(&cores, &mut out);
    render_client_limit(&cores, &mut out);

    let mut routes: BTreeMap<RouteLabel, RouteSum> = BTreeMap::new();
    for c in &cores {
        for (label, s) in c.routes.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let sum = routes.entry(label.clone()).or_default();
            for (a, b) in sum.by_class.iter_mut().zip(&s.by_class) {
                *a += b.get();
            }
            sum.body += s.body_bytes.get();
            sum.head += s.head_bytes.get();
            for (a, b) in sum.latency.iter_mut().zip(&s.latency) {
                *a += b.get();
            }
            sum.sum_us += s.latency_sum_us.get();
            sum.limited += s.limited.get();
        }
    }
    let labels = |l: &RouteLabel| format!("route=\"{}\",host=\"{}\"", esc(&l.route), esc(&l.host));
    family(
        &mut out,
        "ringside_requests_total",
        "counter",
        "Requests answered, by route and status class.",
    );
    for (l, s) in &routes {
        for (i, n) in s.by_class.iter().enumerate() {
            let _ = writeln!(
                out,
                "ringside_requests_total{{{},class=\"{}xx\"}} {n}",
                labels(l),
                i + 1
            );
        }
    }
    family(
        &mut out,
        "ringside_rate_limited_total",
        "counter",
        "Requests refused by the route's [[rate_limit]], by route.",
    );
    for (l, s) in &routes {
        let _ = writeln!(
            out,
            "ringside_rate_limited_total{{{}}} {}",
            labels(l),
            s.limited
        );
    }
    family(
        &mut out,
        "ringside_response_body_bytes_total",
        "counter",
        "Response body bytes sent, by route.",
    );
    for (l, s) in &routes {
        let _ = writeln!(
            out,
            "ringside_response_body_bytes_total{{{}}} {}",
            labels(l),
            s.body
        );
    }
    family(
        &mut out,
        "ringside_request_head_bytes_total",
        "counter",
        "Request head bytes received, by route.",
    );
    for (l, s) in &routes {
        let _ = writeln!(
            out,
            "ringside_request_head_bytes_total{{{}}} {}",
            labels(l),
            s.head
        );
    }
    family(
        &mut out,
        "ringside_request_duration_seconds",
        "histogram",
        "Time from a complete request head to the response handed to the socket, by route.",
    );
    for (l, s) in &routes {
        let mut cumulative = 0;
        for (i, n) in s.latency.iter().enumerate() {
            cumulative += n;
            let le = match LATENCY_BOUNDS_US.get(i) {
                Some(us) => format!("{}", *us as f64 / 1e6),
                None => "+Inf".to_owned(),
            };
            let _ = writeln!(
                out,
                "ringside_request_duration_seconds_bucket{{{},le=\"{le}\"}} {cumulative}",
                labels(l)
            );
        }
        let _ = writeln!(
            out,
            "ringside_request_duration_seconds_sum{{{}}} {}",
            labels(l),
            s.sum_us as f64 / 1e6
        );
        let _ = writeln!(
            out,
            "ringside_request_duration_seconds_count{{{}}} {cumulative}",
            labels(l)
        );
    }

    render_upstreams(reg, &cores, &mut out);
    super::pools::render(reg, &cores, &mut out);
    out
}

fn render_upstreams(reg: &Registry, cores: &[std::sync::Arc<super::CoreStats>], out: &mut String) {
    // Only the servers of the config now serving: addresses DNS dropped
    // and upstreams a reload removed leave the output.
    let mut servers: Vec<((String, String), bool, ServerSum)> = Vec::new();
    for up in reg.upstreams() {
        let (_, peers) = up.snapshot();
        for p in peers {
            let key = (up.cfg.name.clone(), p.addr.to_string());
            let mut sum = ServerSum::default();
            for c in cores {
                let all = c.servers.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((_, s)) = all.iter().find(|(k, _)| *k == key) {
                    sum.active += s.active.get();
                    sum.idle += s.idle.get();
                    sum.opened += s.opened.get();
                    sum.reused += s.reused.get();
                    for (a, b) in sum.failures.iter_mut().zip(&s.failures) {
                        *a += b.get();
                    }
                    sum.down_cores += s.down.get();
                    sum.h2_conns.push((c.worker, s.h2_conns.get()));
                }
            }
            servers.push((key, p.healthy, sum));
        }
    }
    let lab = |(u, s): &(String, String)| format!("upstream=\"{}\",server=\"{}\"", esc(u), esc(s));
    type Pick = fn(bool, &ServerSum) -> String;
    let families: [(&str, &str, &str, Pick); 7] = [
        (
            "ringside_upstream_server_up",
            "gauge",
            "1 when the server takes requests: healthy by active checks and held down by no core.",
            |h, s| u8::from(h && s.down_cores == 0).to_string(),
        ),
        (
            "ringside_upstream_down_cores",
            "gauge",
            "Cores holding the server down after failures (passive health).",
            |_, s| s.down_cores.to_string(),
        ),
        (
            "ringside_upstream_active_connections",
            "gauge",
            "Requests in flight to the server, all cores.",
            |_, s| s.active.to_string(),
        ),
        (
            "ringside_upstream_idle_connections",
            "gauge",
            "Idle pooled connections to the server, all cores.",
            |_, s| s.idle.to_string(),
        ),
        (
            "ringside_upstream_connections_opened_total",
            "counter",
            "Connections opened to the server.",
            |_, s| s.opened.to_string(),
        ),
        (
            "ringside_upstream_connection_reuses_total",
            "counter",
            "Requests sent on a pooled connection.",
            |_, s| s.reused.to_string(),
        ),
        (
            "ringside_upstream_reuse_ratio",
            "gauge",
            "Reuses over reuses plus new connections, since start.",
            |_, s| {
                let all = s.reused + s.opened;
                if all == 0 {
                    "0".to_owned()
                } else {
                    format!("{}", s.reused as f64 / all as f64)
                }
            },
        ),
    ];
    for (name, kind, help, pick) in families {
        family(out, name, kind, help);
        for (key, healthy, sum) in &servers {
            let _ = writeln!(out, "{name}{{{}}} {}", lab(key), pick(*healthy, sum));
        }
    }
    family(
        out,
        "ringside_upstream_h2_connections",
        "gauge",
        "HTTP/2 connections to the server held by each worker (each carries many of the requests in flight).",
    );
    for (key, _, sum) in &servers {
        for (worker, n) in &sum.h2_conns {
            let _ = writeln!(
                out,
                "ringside_upstream_h2_connections{{{},worker=\"{worker}\"}} {n}",
                lab(key)
            );
        }
    }
    family(
        out,
        "ringside_upstream_failures_total",
        "counter",
        "Tries to the server that failed, by reason (as the access log's upstream_error; no_server, which no server is to blame for, is in the log only).",
    );
    for (key, _, sum) in &servers {
        // Every reason a server's try can fail with, zeros included, so a
        // rate over a reason never starts from a missing series.
        for r in Reason::ALL.into_iter().filter(|&r| r != Reason::NoServer) {
            let _ = writeln!(
                out,
                "ringside_upstream_failures_total{{{},reason=\"{}\"}} {}",
                lab(key),
                r.token(),
                sum.failures[r.index()]
            );
        }
    }
    render_fastcgi(reg, out);
}

/// What each FastCGI server was seen to serve (`fastcgi::learn`).
fn render_fastcgi(reg: &Registry, out: &mut String) {
    let mut rows = Vec::new();
    for up in reg.upstreams() {
        if up.cfg.fastcgi().is_none() {
            continue;
        }
        for p in up.snapshot().1 {
            if let Some(c) = crate::fastcgi::learn::Capacity::find(&p.addr) {
                rows.push(((up.cfg.name.clone(), p.addr.to_string()), c));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    let lab = |(u, s): &(String, String)| format!("upstream=\"{}\",server=\"{}\"", esc(u), esc(s));
    family(
        out,
        "ringside_fastcgi_served_connections",
        "gauge",
        "Connections the FastCGI server answered that are open, all cores.",
    );
    for (key, c) in &rows {
        let _ = writeln!(
            out,
            "ringside_fastcgi_served_connections{{{}}} {}",
            lab(key),
            c.served()
        );
    }
    family(
        out,
        "ringside_fastcgi_capacity",
        "gauge",
        "The connections the FastCGI server was seen to serve at most (learned; absent until it was).",
    );
    for (key, c) in &rows {
        if let Some(n) = c.learned() {
            let _ = writeln!(out, "ringside_fastcgi_capacity{{{}}} {n}", lab(key));
        }
    }
}

/// Connections refused for their client's count, per worker.
fn render_client_limit(cores: &[std::sync::Arc<super::CoreStats>], out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let name = "ringside_client_connections_refused_total";
    family(
        out,
        name,
        "counter",
        "Connections refused at [limits] max_client_connections (their first request answered 429 or 503), per worker.",
    );
    for c in cores {
        let n = c.client_limit.refused.load(Relaxed);
        let _ = writeln!(out, "{name}{{worker=\"{}\"}} {n}", c.worker);
    }
}

/// The response caches, per worker and cache: requests by what the cache
/// did, responses stored, keys passed (not storable), entries purged and
/// evicted, and what the memory tier holds.
fn render_caches(cores: &[std::sync::Arc<super::CoreStats>], out: &mut String) {
    use ringside_cache::core::Stats;
    use std::sync::atomic::Ordering::Relaxed;
    let all: Vec<_> = cores.iter().map(|c| (c.worker, c.caches())).collect();
    if all.iter().all(|(_, cs)| cs.is_empty()) {
        return;
    }
    let name = "ringside_cache_requests_total";
    family(
        out,
        name,
        "counter",
        "Requests on cached routes by what the cache did, per worker and cache.",
    );
    for (w, caches) in &all {
        for (cache, s) in caches {
            let results: [(&str, &std::sync::atomic::AtomicU64); 5] = [
                ("hit", &s.hits),
                ("miss", &s.misses),
                ("stale", &s.stale),
                ("revalidated", &s.revalidated),
                ("collapsed", &s.collapsed),
            ];
            for (result, n) in results {
                let _ = writeln!(
                    out,
                    "{name}{{worker=\"{w}\",cache=\"{cache}\",result=\"{result}\"}} {}",
                    n.load(Relaxed)
                );
            }
        }
    }
    /// A family's name, type and help, and how to read it.
    type Family = (&'static str, &'static str, &'static str, fn(&Stats) -> u64);
    let families: [Family; 5] = [
        ("ringside_cache_stored_total", "counter", "Responses stored, per worker and cache.", |s| s.stored.load(Relaxed)),
        ("ringside_cache_passes_total", "counter", "Responses not storable (their keys fetched uncollapsed for a while), per worker and cache.", |s| s.passes.load(Relaxed)),
        ("ringside_cache_purged_total", "counter", "Entries purged, per worker and cache.", |s| s.purged.load(Relaxed)),
        ("ringside_cache_evictions_total", "counter", "Entries evicted from the memory tier for room, per worker and cache.", |s| s.evictions.load(Relaxed)),
        ("ringside_cache_disk_reads_total", "counter", "Keys brought back from the disk tier into memory, per worker and cache.", |s| s.from_disk.load(Relaxed)),
    ];
    for (name, kind, help, read) in families {
        family(out, name, kind, help);
        for (w, caches) in &all {
            for (cache, s) in caches {
                let _ = writeln!(
                    out,
                    "{name}{{worker=\"{w}\",cache=\"{cache}\"}} {}",
                    read(s)
                );
            }
        }
    }
    type Tiered = (
        &'static str,
        &'static str,
        fn(&Stats) -> u64,
        fn(&Stats) -> u64,
    );
    let tiered: [Tiered; 2] = [
        ("ringside_cache_bytes", "Bytes each tier holds (bodies, heads and bookkeeping; on disk, files rounded to 4 KiB), per worker and cache.", |s| s.bytes.load(Relaxed), |s| s.disk_bytes.load(Relaxed)),
        ("ringside_cache_entries", "Entries each tier holds, per worker and cache.", |s| s.entries.load(Relaxed), |s| s.disk_entries.load(Relaxed)),
    ];
    for (name, help, memory, disk) in tiered {
        family(out, name, "gauge", help);
        for (w, caches) in &all {
            for (cache, s) in caches {
                for (tier, n) in [("memory", memory(s)), ("disk", disk(s))] {
                    let _ = writeln!(
                        out,
                        "{name}{{worker=\"{w}\",cache=\"{cache}\",tier=\"{tier}\"}} {n}"
                    );
                }
            }
        }
    }
}

/// Compression on the fly, per worker: bodies compressed by coding (a
/// cached static file counts once, when it is compressed), and bytes in
/// and out of the compressors.
fn render_compression(cores: &[std::sync::Arc<super::CoreStats>], out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let name = "ringside_compressions_total";
    family(
        out,
        name,
        "counter",
        "Bodies compressed on the fly, by coding, per worker.",
    );
    for c in cores {
        let z = &c.compress;
        for (coding, n) in [("gzip", &z.gzip), ("br", &z.br), ("zstd", &z.zstd)] {
            let _ = writeln!(
                out,
                "{name}{{worker=\"{}\",coding=\"{coding}\"}} {}",
                c.worker,
                n.load(Relaxed)
            );
        }
    }
    let name = "ringside_compression_bytes_total";
    family(
        out,
        name,
        "counter",
        "Bytes into and out of the compressors, per worker.",
    );
    for c in cores {
        let z = &c.compress;
        for (dir, n) in [("in", &z.bytes_in), ("out", &z.bytes_out)] {
            let _ = writeln!(
                out,
                "{name}{{worker=\"{}\",direction=\"{dir}\"}} {}",
                c.worker,
                n.load(Relaxed)
            );
        }
    }
}

/// The HTTP/2 families, per worker: connections and streams served,
/// RST_STREAM and GOAWAY frames by direction.
fn render_http2(cores: &[std::sync::Arc<super::CoreStats>], out: &mut String) {
    use std::sync::atomic::Ordering::Relaxed;
    let per_worker =
        |out: &mut String, name: &str, help: &str, n: &dyn Fn(&super::CoreStats) -> u64| {
            family(out, name, "counter", help);
            for c in cores {
                let _ = writeln!(out, "{name}{{worker=\"{}\"}} {}", c.worker, n(c));
            }
        };
    per_worker(
        out,
        "ringside_http2_connections_total",
        "Client connections that spoke HTTP/2 (h2 by ALPN or h2c), per worker.",
        &|c| c.h2.connections.load(Relaxed),
    );
    per_worker(
        out,
        "ringside_http2_streams_total",
        "HTTP/2 streams accepted (requests), per worker.",
        &|c| c.h2.streams.load(Relaxed),
    );
    let both = |out: &mut String,
                name: &str,
                help: &str,
                sent: &dyn Fn(&super::CoreStats) -> u64,
                received: &dyn Fn(&super::CoreStats) -> u64| {
        family(out, name, "counter", help);
        for c in cores {
            for (dir, n) in [("sent", sent(c)), ("received", received(c))] {
                let _ = writeln!(
                    out,
                    "{name}{{worker=\"{}\",direction=\"{dir}\"}} {n}",
                    c.worker
                );
            }
        }
    };
    both(
        out,
        "ringside_http2_resets_total",
        "RST_STREAM frames, sent and received, per worker.",
        &|c| c.h2.resets_sent.load(Relaxed),
        &|c| c.h2.resets_received.load(Relaxed),
    );
    both(
        out,
        "ringside_http2_goaways_total",
        "GOAWAY frames, sent and received, per worker.",
        &|c| c.h2.goaways_sent.load(Relaxed),
        &|c| c.h2.goaways_received.load(Relaxed),
    );
}
