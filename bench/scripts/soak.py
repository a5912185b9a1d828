#!/usr/bin/env python3
"""Soak: ringside under mixed load for a long while, with a verdict on
leaks, failures, warnings and latency.

One ringside under test (access log and the admin listener on, as in a
real deployment) serves three routes on loopback: /static/ (files from a
temp dir: small ones cached per core, larger ones spliced from disk or kept
open by the file cache), /up/ (a proxy route to an HTTP origin, a second
ringside) and /php/ (FastCGI to a real php-fpm, pm = static).

Profiles (--profile):

  light (default)  2 workers, 10 minutes at a moderate open-loop rate
                   (ringside-bench -R; the point is leaks, not throughput):
                   static, proxy and FastCGI, kept alive and a connection
                   per request, plus aborted requests (a partial head, a
                   large body reset mid-way, a POST cut short). No faults.
  heavy            1 worker on the first CPU, 30 minutes, everything else
                   on the last CPU. The light kinds at higher rates, plus
                   ranges, HTTP/1.1 over TLS (h2load --h1), h2 over TLS and
                   h2c (h2load), TLS with a handshake per request, slow
                   readers, and a filler (a 256 KiB text file gzipped per
                   request) whose rate is steered each minute to keep
                   ringside's core 70-90% busy. From minute 6 to 25 faults
                   are injected (soaklib/faults.py): a config reload every
                   minute (every fourth broken), the origin restarted every
                   3 minutes, php-fpm every 5, the origin hung for 20 s.
                   The filler is steered in the first 4 minutes and then
                   held; minutes 4-6 are the baseline.

Clients run in segments (the whole run for light, 60 s for heavy) so that
each segment's counts and p99 belong to a known stretch of time. Every
10 s (--interval) it samples ringside's CPU use, RSS, fds by kind and
/metrics into a CSV.

Verdict (exit 1 if any check fails):
  RSS       after the warm-up, within ±5% of the RSS at its end; the
            upper bound is raised by what the request buffers took on since
            (ringside_request_buffer_bytes: the buffers a worker owns, in use
            or pooled; bounded by count, the pools keep a burst's
            high-water mark by design).
  fds       after the load, once no client connection is open: each kind
            of fd equals its count before the load plus what ringside keeps
            by design, as /metrics says, each within its bound: spare splice
            pipes (ringside_spare_pipes, two fds each), files the static
            cache holds open (ringside_file_cache_open_files) and idle
            upstream connections (ringside_upstream_idle_connections).
  failures  none, but those a fault explains: a failure in a fault's
            window, on the part of the site it hits, with a status it
            causes (502/503 while the origin or php-fpm is down; 504, then
            502/503 while the origin hangs and is held down after).
            Failures are the access log's statuses >= 400 (but 499) of the
            tagged kinds (every URL carries ?k=KIND), the clients' socket
            errors, and the Python clients' own.
  warnings  every WARN or ERROR line of ringside's log inside a fault's
            window (light: none at all).
  reloads   (heavy) each reload accepted or refused as it should be.
  p99       (heavy) static-ka, which no fault touches: the median of its
            segments' p99 during and after the faults within 2x of before.

A debug build leaks one /dev/null descriptor every N requests when run
with RINGSIDE_FAULT_LEAK_FD_EVERY=N (--leak-fd-every N; proxy/src/
failpoint.rs): the fd check must then fail (proxy/tests/soak.rs shows it).

Binaries: target/release, built when missing, or those in --bin-dir (the
test suite's debug build). Every process it starts is stopped by pid at the end, on
errors and on Ctrl-C/SIGTERM too, and dies with this script otherwise.

usage: soak.py [--profile light|heavy] [--duration S] [--warmup S]
               [--out FILE.csv] [--rate-scale 1.0] [--abort-rate 5]
               [--interval 10] [--fpm-children 6] [--idle-timeout 5]
               [--bin-dir DIR] [--leak-fd-every N]
quick check: soak.py --duration 60 --warmup 15
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from soaklib import verdict
from soaklib.clients import Clients
from soaklib.faults import Faults
from soaklib.load import Kind, Segmented, tagged
from soaklib.procs import Procs, binaries, free_port, tail, wait_until
from soaklib.report import summary
from soaklib.sample import Sampler, cpu_seconds, fd_listing, fds, metrics, pools, socket_table, tcp_conns
from soaklib.servers import make_cert, prepare_www, start_fpm, start_origin, start_ringside, write_config

PROFILES = {  # duration, warm-up, workers, segment, faults from, faults to
    "light": dict(duration=600, warmup=None, workers=2, segment=None, faults=None),
    # Steered in the warm-up, then two minutes held without faults: the
    # "before" that latency during and after the faults is held to.
    "heavy": dict(duration=1800, warmup=240, workers=1, segment=60, faults=(360, 1500)),
}
FILLER_TARGET = 0.80  # of one core


def kinds_for(profile, port, tls_port, tmp, scale):
    base = f"http://127.0.0.1:{port}"
    post = os.path.join(tmp, "post16k.bin")
    with open(post, "wb") as f:
        f.write(os.urandom(16 << 10))
    static = [f"{base}/static/{n}" for n in ("small.txt", "small.txt", "small.txt", "page.html", "mid.bin",
                                             "big.bin")]
    proxy = [u.replace("/static/", "/up/") for u in static]
    php = [f"{base}/php/hello.php", f"{base}/php/hello.php", f"{base}/php/", f"{base}/php/headers.php?x=1",
           f"{base}/php/echo.php POST <{post}"]
    heavy = profile == "heavy"
    x = 6 if heavy else 1
    specs = [  # name, rate, concurrency, URLs, class, keep-alive
        ("static-ka", 150 * x, 8, static, "static", True),
        ("static-close", 40 * x, 4, static, "static", False),
        ("proxy-ka", 100 * x, 8, proxy, "up", True),
        ("proxy-close", 40 * x, 4, proxy, "up", False),
        ("fastcgi-ka", 40 * x, 4, php, "php", True),
        ("fastcgi-close", 20 * x, 2, php, "php", False),
    ]
    kinds = [Kind(n, "bench", max(1.0, r * scale), c, tagged(u, n), cls, ka=ka) for n, r, c, u, cls, ka in specs]
    if heavy:
        tls = f"https://127.0.0.1:{tls_port}"
        kinds += [
            Kind("static-range", "bench", 100 * scale, 4, tagged([f"{base}/static/mid.bin", f"{base}/static/big.bin"],
                                                              "static-range"), "static",
                 headers=["Range: bytes=1000-30999"]),
            Kind("filler-gzip", "bench", 40, 4, tagged([f"{base}/static/book.txt"], "filler-gzip"), "static",
                 headers=["Accept-Encoding: gzip"]),
            Kind("tls-ka", "h2load", 200 * scale, 4, tagged([f"{tls}/static/small.txt", f"{tls}/static/page.html",
                                                          f"{tls}/up/small.txt"], "tls-ka"), "mixed", h1=True),
            Kind("h2-tls", "h2load", 300 * scale, 4, tagged([f"{tls}/static/small.txt", f"{tls}/static/mid.bin",
                                                          f"{tls}/up/page.html"], "h2-tls"), "mixed", streams=4),
            Kind("h2c", "h2load", 200 * scale, 2, tagged([f"{base}/static/page.html", f"{base}/php/hello.php"], "h2c"),
                 "mixed", streams=4),
        ]
    return {k.name: k for k in kinds}


class Filler:
    """Steers the filler's rate at each of its segments in the warm-up
    toward keeping ringside's core FILLER_TARGET busy, from ringside's CPU
    time since the last segment began; after the warm-up it holds, so that
    the phases before, during and after the faults see the same load.
    Every other kind keeps its fixed rate."""

    def __init__(self, pid, t0, warmup):
        self.pid, self.rate, self.t0, self.warmup = pid, None, t0, warmup
        self.last = (time.monotonic(), cpu_seconds(pid))
        self.history = []  # (busy, rate chosen)

    def rate_of(self, kind):
        if kind.name != "filler-gzip":
            return kind.rate
        if self.rate is not None and time.monotonic() - self.t0 >= self.warmup - 1:
            return self.rate
        now = (time.monotonic(), cpu_seconds(self.pid))
        busy = (now[1] - self.last[1]) / max(1e-3, now[0] - self.last[0])
        self.last = now
        if self.rate is None:
            self.rate = kind.rate
        else:
            # Saturated, the busy figure says nothing of how far over: halve.
            step = 0.5 if busy > 0.95 else 1 + (FILLER_TARGET - busy) / max(busy, 0.05)
            self.rate = min(5000.0, max(5.0, self.rate * min(2.0, max(0.5, step))))
        self.history.append((round(busy, 3), round(self.rate)))
        return self.rate


def main():
    p = argparse.ArgumentParser(description="Mixed-load soak of ringside: leaks, failures, faults.")
    p.add_argument("--profile", choices=sorted(PROFILES), default="light")
    p.add_argument("--duration", type=int, default=None, help="seconds of load (light 600, heavy 1800)")
    p.add_argument("--warmup", type=int, default=None, help="seconds of warm-up (light 20%%, heavy 300)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples (default 10)")
    p.add_argument("--out", default=None, help="CSV of the samples (default: a temp dir, kept)")
    p.add_argument("--rate-scale", type=float, default=1.0, help="multiply every fixed client rate")
    p.add_argument("--abort-rate", type=float, default=5.0, help="aborted requests per second per kind")
    p.add_argument("--fpm-children", type=int, default=6, help="php-fpm pm.max_children = max_conns")
    p.add_argument("--idle-timeout", type=int, default=5, help="upstreams' idle_timeout in seconds")
    p.add_argument("--bin-dir", default=None, help="where ringside and ringside-bench are (default target/release)")
    p.add_argument("--leak-fd-every", type=int, default=0, help="debug builds: leak an fd every N requests")
    args = p.parse_args()
    prof = dict(PROFILES[args.profile])
    duration = args.duration or prof["duration"]
    if duration < 10:
        raise SystemExit("--duration must be at least 10 seconds")
    scale = duration / prof["duration"]
    warmup = args.warmup if args.warmup is not None else (
        int(prof["warmup"] * scale) if prof["warmup"] else duration // 5)
    if not 0 < warmup < duration:
        raise SystemExit("--warmup must be between 0 and --duration")
    faults_at = tuple(int(x * scale) for x in prof["faults"]) if prof["faults"] else None
    segment = prof["segment"] or duration
    workers = prof["workers"]

    ringside, bench = binaries(args.bin_dir)
    cpus = sorted(os.sched_getaffinity(0))
    side_cpu = cpus[-1]  # origin, php-fpm, clients
    tmp = tempfile.mkdtemp(prefix="ringside-soak-")
    out = os.path.abspath(args.out) if args.out else os.path.join(tmp, "soak.csv")
    procs = Procs()

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    clients = sampler = faults = None
    loaders = {}
    failed = True
    try:
        s = dict(tmp=tmp, workers=workers, www=prepare_www(tmp), port=free_port(), admin_port=free_port(),
                 origin_port=free_port(), fpm_children=args.fpm_children, idle_timeout=args.idle_timeout,
                 tls_port=free_port() if args.profile == "heavy" else None)
        if s["tls_port"]:
            s["cert"], s["key"] = make_cert(tmp)
        origin = start_origin(procs, ringside, tmp, s["origin_port"], side_cpu)
        fpm, s["fpm_port"] = start_fpm(procs, tmp, args.fpm_children, side_cpu)
        conf = write_config(s)
        check = subprocess.run([ringside, "check", conf], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"ringside check {conf}: {check.stdout}{check.stderr}")
        env_extra = {"RINGSIDE_FAULT_LEAK_FD_EVERY": str(args.leak_fd_every)} if args.leak_fd_every else None
        server, server_log = start_ringside(procs, ringside, tmp, "ringside", ["--config", conf], s["port"],
                                            env_extra=env_extra)
        admin = s["admin_port"]
        if not wait_until("the admin listener", lambda: metrics(admin) is not None, 10)[0]:
            raise RuntimeError(f"no /metrics on {admin}: {tail(server_log)}")
        pid = server.pid
        print(f"{args.profile} soak: ringside pid {pid} ({workers} workers) on 127.0.0.1:{s['port']} "
              f"(admin {admin}{', TLS ' + str(s['tls_port']) if s['tls_port'] else ''}), origin "
              f":{s['origin_port']}, php-fpm :{s['fpm_port']}; {duration}s, warm-up {warmup}s"
              f"{f', faults {faults_at[0]}-{faults_at[1]}s' if faults_at else ''}; samples: {out}", flush=True)

        def drained():
            m = metrics(admin)
            return (m is not None and int(m.get("ringside_open_connections", -1)) == 0
                    and int(m.get("ringside_upstream_active_connections", -1)) == 0
                    and tcp_conns(pid) == pools(m)["idle"][0])
        wait_until("the readiness probe's connection to close", drained, 10)
        sampler = Sampler(pid, admin, out, side_cpu)
        fd_before, pools_before, listing_before = fds(pid), pools(metrics(admin)), fd_listing(pid)
        start_row, _ = sampler.sample(0.0, "before")

        kinds = kinds_for(args.profile, s["port"], s["tls_port"], tmp, args.rate_scale)
        t0, wall_t0 = time.monotonic(), time.time()
        sampler.last_cpu = (0.0, cpu_seconds(pid))
        filler = Filler(pid, t0, warmup)
        for name, kind in kinds.items():
            loaders[name] = Segmented(procs, bench, tmp, kind, t0, duration, segment, side_cpu, filler.rate_of)
        for ld in loaders.values():
            ld.start()
        clients = Clients(s["port"], t0, args.abort_rate, heavy=args.profile == "heavy", tls_port=s["tls_port"])
        clients.start()
        if faults_at:
            env = dict(procs=procs, exe=ringside, s=s, pid=pid, origin=origin, fpm=fpm, cpu=side_cpu, generation=0)
            faults = Faults(env, t0, *faults_at)
            faults.start()

        times = sorted({i * args.interval for i in range(1, int(duration / args.interval) + 1)} | {float(warmup)})
        warm_row = None
        for t in (t for t in times if t <= duration):
            delay = t0 + t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for name, ld in loaders.items():
                if ld.failure:
                    raise RuntimeError(f"{name}: {ld.failure}")
            if faults and faults.failure:
                raise RuntimeError(f"fault injection: {faults.failure}")
            if server.poll() is not None:
                raise RuntimeError(f"ringside exited ({server.returncode}): {tail(server_log)}")
            row, _ = sampler.sample(time.monotonic() - t0, "warmup" if t <= warmup else "load")
            if t == warmup:
                warm_row = row

        clients.finish()
        if faults:
            faults.finished.wait(timeout=60)
        for ld in loaders.values():
            ld.join(timeout=120)

        # Drained: no client connection open, no upstream request in flight,
        # and no TCP fd but the idle pooled ones.
        conns_ok, waited_conns = wait_until("client connections to close", drained, 30)
        state = {}

        def fds_back():
            state["fd"] = fds(pid)
            state["pools"] = pools(metrics(admin))
            return verdict.fd_check(fd_before, state["fd"], pools_before, state["pools"], True)[0]
        _, waited_fds = wait_until("the fd count to come back", fds_back, 15)
        # A sample counts fds before it asks /metrics, but the admin
        # connection of the look before may not be closed yet: a lone extra
        # socket that the next look no longer sees. A leak stays, so a few
        # looks apart tell the two apart.
        for look in range(5):
            end_row, end_m = sampler.sample(time.monotonic() - t0, "after")
            fd_after = {k: end_row[f"fd_{k}"] for k in ("socket", "pipe", "file", "other")}
            fd_pass, fd_text = verdict.fd_check(fd_before, fd_after, pools_before, pools(end_m), conns_ok)
            if fd_pass:
                break
            if look < 4:
                time.sleep(0.2)
        if not fd_pass:
            listing_after = fd_listing(pid)
            socks = socket_table()
            print("fds open now that were not before the load:", flush=True)
            for fd, target in sorted((fd, t) for fd, t in listing_after.items() if listing_before.get(fd) != t)[:40]:
                inode = target[len("socket:["):-1] if target.startswith("socket:[") else None
                print(f"  {fd}: {target} {socks.get(inode, '') if inode else ''}", flush=True)

        server_rc = procs.stop(server, timeout=40)  # drains, flushes its log, exits 0
        report = dict(args=args, profile=args.profile, duration=duration, warmup=warmup, workers=workers,
                      faults_at=faults_at, rows=sampler.rows, start_row=start_row,
                      warm_row=warm_row, end_row=end_row, end_m=end_m, fd_before=fd_before, fd_after=fd_after,
                      fd_pass=fd_pass, fd_text=fd_text, waited=(waited_conns, waited_fds), server_rc=server_rc,
                      server_log=server_log, access_log=os.path.join(tmp, "access.log"), kinds=kinds,
                      loaders=loaders, clients=clients, faults=faults, filler=filler, wall_t0=wall_t0, out=out)
        text, ok = summary(report)
        print("\n" + text, flush=True)
        failed = not ok
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e or 'Ctrl-C'}): stopping everything", flush=True)
    except (RuntimeError, OSError) as e:
        print(f"soak failed: {e}", flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if clients:
            clients.stop.set()
        if faults:
            faults.stop.set()
        for ld in loaders.values():
            ld.stop.set()
        procs.stop_all()
        if sampler:
            sampler.close()
        # Keep the samples, the config and the logs; drop the served files
        # and the access log (tens of MB; counted in the summary) unless
        # the verdict failed, when it is kept gzipped.
        for d in ("www", "origin"):
            shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
        if failed and os.path.exists(os.path.join(tmp, "access.log")):
            subprocess.run(["gzip", "-f", os.path.join(tmp, "access.log")], check=False)
        for f in ("post16k.bin", "access.log"):
            try:
                os.unlink(os.path.join(tmp, f))
            except OSError:
                pass
        print(f"config, logs and samples kept in {tmp}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
