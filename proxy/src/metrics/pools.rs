//! What each worker keeps on purpose between requests, beside its bound:
//! spare splice pipes, files the static cache holds open, idle upstream
//! connections, and the bytes of its request buffers. A leak check (bench/scripts/soak.py) reads these to tell a
//! descriptor kept by design from one lost.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use ringside_runtime::stats::SPARE_PIPES_MAX;

use super::text::{esc, family};
use super::{CoreStats, Registry};

/// A per-worker gauge: name, help, its value on a core, its bound.
type PerWorker = (&'static str, &'static str, fn(&CoreStats) -> u64, u64);

pub(super) fn render(reg: &Registry, cores: &[Arc<CoreStats>], out: &mut String) {
    let per_worker: [PerWorker; 2] = [
        (
            "ringside_spare_pipes",
            "Empty pipes a worker keeps for splicing files (two descriptors each).",
            |c| c.conns.spare_pipes(),
            SPARE_PIPES_MAX as u64,
        ),
        (
            "ringside_file_cache_open_files",
            "Files a worker's static cache holds open (larger than cache_max_file).",
            |c| c.conns.cached_files(),
            reg.file_cache_max_open.load(Relaxed),
        ),
    ];
    for (name, help, now, max) in per_worker {
        family(out, name, "gauge", help);
        for c in cores {
            let _ = writeln!(out, "{name}{{worker=\"{}\"}} {}", c.worker, now(c));
        }
        let limit = format!("{name}_max");
        family(
            out,
            &limit,
            "gauge",
            "The most each worker keeps of the above.",
        );
        let _ = writeln!(out, "{limit} {max}");
    }
    family(
        out,
        "ringside_request_buffer_bytes",
        "gauge",
        "Bytes of the request buffers a worker owns, in use or pooled: the high-water mark of its concurrent requests, each pool bounded by count.",
    );
    for c in cores {
        let _ = writeln!(
            out,
            "ringside_request_buffer_bytes{{worker=\"{}\"}} {}",
            c.worker,
            c.conns.buffer_bytes()
        );
    }
    family(
        out,
        "ringside_upstream_max_idle_connections",
        "gauge",
        "The idle connections to the server the pools keep, all cores (max_idle per core); more only while as many requests were in flight within the last two seconds.",
    );
    for up in reg.upstreams() {
        let max = up.cfg.pool.max_idle * cores.len();
        for p in up.snapshot().1 {
            let _ = writeln!(
                out,
                "ringside_upstream_max_idle_connections{{upstream=\"{}\",server=\"{}\"}} {max}",
                esc(&up.cfg.name),
                esc(&p.addr.to_string())
            );
        }
    }
    let ring: [(&str, &str, &str); 4] = [
        ("ringside_recv_ring_buffers", "gauge", "Buffers in a worker's io_uring receive ring (0: it receives the plain way: another backend, RINGSIDE_URING_RECV=poll, or a kernel without buffer rings)."),
        ("ringside_recv_ring_buffers_held", "gauge", "Ring buffers filled and not yet taken by their connection (idle connections hold none)."),
        ("ringside_recv_ring_dry_total", "counter", "Receives ended because the ring was empty; each connection then read once the plain way (bytes wait in the socket, none are lost)."),
        ("ringside_recv_ring_paused_total", "counter", "Receives paused because their connection held too many unread buffers (it resumes when it reads)."),
    ];
    for (i, (name, kind, help)) in ring.iter().enumerate() {
        family(out, name, kind, help);
        for c in cores {
            let _ = writeln!(
                out,
                "{name}{{worker=\"{}\"}} {}",
                c.worker,
                c.conns.recv_ring()[i]
            );
        }
    }
}
