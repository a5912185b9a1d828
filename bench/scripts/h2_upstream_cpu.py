#!/usr/bin/env python3
"""Proxy CPU per request with HTTP/2 on both sides: ringside (protocol =
"h2") against nginx (grpc_pass, its only HTTP/2 upstream) and HAProxy
(server ... proto h2), measured the house way: the proxy runs one worker
pinned to CPU 0; h2load and the origin run on CPU 1; the proxies take
turns round after round in one run, and the proxy's utime+stime delta
(/proc/PID/stat) over h2load's run is divided by the requests it
completed. Medians over the rounds are printed at the end.

usage: h2_upstream_cpu.py [--rounds 3] [--duration 5] [--grpc]
                          [--servers ringside,nginx,haproxy] [-c 100] [-m 10]

Without --grpc the origin is nginx with an h2c listener answering 18
bytes on every path (deploy/bench/nginx-origin.conf), and h2load runs
GETs at -c100 -m10. With --grpc the origin is the grpcio test server
(proxy/tests/support/grpc_server.py, Debian's python3-grpcio) and h2load
sends unary calls (/test.Echo/Unary, a 5-byte message, te: trailers) at
-c50 -m1. The client speaks h2c to every proxy.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_request as base  # noqa: E402

REPO = base.REPO


def start_origin(args):
    if args.grpc:
        prefix = tempfile.mkdtemp(prefix="h2up-grpc-")
        proc = subprocess.Popen(
            ["taskset", "-c", "1", "/usr/bin/python3",
             os.path.join(REPO, "proxy", "tests", "support", "grpc_server.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"no grpcio origin (python3-grpcio missing?): {line!r}")
        return proc, int(line.split()[1]), prefix
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="h2up-origin-")
    conf = base.fill(os.path.join(REPO, "deploy", "bench", "nginx-origin.conf"), prefix, None, port)
    with open(conf) as f:
        text = f.read()
    with open(conf, "w") as f:
        # nginx 1.22 closes an h2 connection after 1000 requests by default.
        text = text.replace(" reuseport;", " reuseport http2;", 1)
        f.write(text.replace("keepalive_requests 1000000;",
                             "keepalive_requests 1000000;\n    http2_max_requests 100000000;", 1))
    return base.launch([base.nginx_exe(), "-c", conf, "-p", prefix], None, port, prefix, cpu=1)


def start(name, args, origin_port):
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="h2up-")
    if base.is_ringside(name):
        exe, extra, env = base.ringside_variant(name)
        conf = (f'[server]\nlisten = ["127.0.0.1:{port}"]\n\n[admin]\nlisten = "off"\n\n'
                f'[upstream.o]\nprotocol = "h2"\nservers = ["127.0.0.1:{origin_port}"]\n\n'
                f'[[route]]\nprefix = "/"\nupstream = "o"\n')
        path = os.path.join(prefix, "ringside.toml")
        with open(path, "w") as f:
            f.write(conf)
        cmd = [exe, "--workers", "1", "--config", path] + extra
    elif name == "nginx":
        serve = "location / { grpc_pass grpc://origin; }"
        conf = base.fill(os.path.join(REPO, "deploy", "bench", "nginx-h2.conf"), prefix, prefix, port,
                         origin_port, extra={"@LISTEN@": "http2", "@TLS@": "", "@SERVE@": serve})
        cmd, env = [base.nginx_exe(), "-c", conf, "-p", prefix], None
    elif name == "haproxy":
        conf = os.path.join(prefix, "haproxy.cfg")
        with open(conf, "w") as f:
            f.write(f"""global
    nbthread 1
    maxconn 8000
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 75s
    timeout server 75s
frontend proxy
    bind 127.0.0.1:{port} proto h2
    default_backend origin
backend origin
    server origin 127.0.0.1:{origin_port} proto h2
""")
        cmd, env = [shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f", conf], None
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        raise SystemExit(f"unknown server {name}")
    return base.launch(cmd, env, port, prefix, cpu=0)


def h2load(port, args, duration, body):
    cmd = ["taskset", "-c", "1", "h2load", "-c", str(args.c), "-m", str(args.m), "-D", str(duration)]
    if args.grpc:
        cmd += ["-d", body, "-H", "content-type: application/grpc", "-H", "te: trailers",
                f"http://127.0.0.1:{port}/test.Echo/Unary"]
    else:
        cmd += [f"http://127.0.0.1:{port}/26.txt"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"h2load failed ({out.returncode}):\n{text}")
    done, failed, errored = (int(m.group(i)) for i in (3, 5, 6))
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    bad = codes and any(int(codes.group(i)) for i in (2, 3, 4))
    if failed or errored or bad:
        raise RuntimeError(f"errors during the run:\n{text}")
    return done


def measure(name, args, origin_port, body):
    proc, port, prefix = start(name, args, origin_port)
    try:
        h2load(port, args, 1, body)  # warm-up, not charged
        u0, s0 = base.cpu_ticks(proc.pid)
        reqs = h2load(port, args, args.duration, body)
        u1, s1 = base.cpu_ticks(proc.pid)
    finally:
        base.stop(proc, prefix)
    us = lambda t: t / base.TICK / reqs * 1e6
    return reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--servers", default="ringside,nginx,haproxy")
    p.add_argument("--grpc", action="store_true")
    p.add_argument("-c", type=int, default=None)
    p.add_argument("-m", type=int, default=None)
    p.add_argument("--baseline", default=None)
    args = p.parse_args()
    base.BASELINE = args.baseline
    args.c = args.c or (50 if args.grpc else 100)
    args.m = args.m or (1 if args.grpc else 10)
    body = os.path.join(tempfile.mkdtemp(prefix="h2up-body-"), "call.bin")
    with open(body, "wb") as f:
        f.write(b"\0\0\0\0\x05hello")  # one uncompressed gRPC message
    origin = start_origin(args)
    servers = args.servers.split(",")
    rows = {s: [] for s in servers}
    failed = False
    mode = f"{'gRPC unary' if args.grpc else 'h2 GET 18 B'} via h2 upstream, -c{args.c} -m{args.m}"
    print(f"# {mode}, {args.duration}s x {args.rounds} rounds; proxy CPU 0, h2load and origin CPU 1")
    print(f"{'round':>5} {'server':<12} {'req/s':>10} {'us/req':>8} {'user':>7} {'sys':>7}")
    try:
        for r in range(args.rounds):
            for s in servers:
                try:
                    row = measure(s, args, origin[1], body)
                except RuntimeError as e:
                    failed = True
                    print(f"{r + 1:>5} {s:<12} failed: {e}")
                    continue
                rows[s].append(row)
                print(f"{r + 1:>5} {s:<12} {row[0]:>10.0f} {row[1]:>8.2f} {row[2]:>7.2f} {row[3]:>7.2f}", flush=True)
    finally:
        base.stop(origin[0], origin[2])
        shutil.rmtree(os.path.dirname(body), ignore_errors=True)
    print(f"# medians ({mode})")
    for s in servers:
        if rows[s]:
            med = [statistics.median(x[i] for x in rows[s]) for i in range(4)]
            print(f"{'med':>5} {s:<12} {med[0]:>10.0f} {med[1]:>8.2f} {med[2]:>7.2f} {med[3]:>7.2f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
