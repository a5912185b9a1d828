#!/usr/bin/env python3
"""Server CPU per request over HTTP/2, ringside against nginx and h2o,
measured the house way: each server runs one worker pinned to CPU 0, h2load
(nghttp2-client) runs pinned to CPU 1, the servers take turns round after
round in one run, and the server's utime+stime delta (/proc/PID/stat, all
threads) over h2load's run is divided by the requests it completed.
Medians over the rounds are printed at the end.

usage: h2_cpu_per_request.py [--rounds 3] [--duration 10] [--file 26.txt]
                             [--servers ringside,nginx,h2o] [--tls] [--proxy]
                             [-c 100] [-m 10] [--baseline EXE] [--h1]

The document root is made here: 26.txt (26 bytes), 11k.txt (11 KiB) and
1m.bin (1 MiB). --tls serves h2 by ALPN with a self-signed certificate made
at start (openssl), else h2c by prior knowledge. --proxy puts one nginx
origin (deploy/bench/nginx-origin.conf, 18 bytes on every path) on CPU 1
beside h2load and measures the servers proxying to it over HTTP/1.1. --h1
runs h2load --h1 (HTTP/1.1 keep-alive, one request in flight per
connection) instead, to compare one protocol with the other on the same
server: -c1 -m1 --file 1m.bin --h1 against the same without --h1 is "a
1 MiB file over one connection". A server named "baseline" runs the
ringside binary given by --baseline. Servers: deploy/bench/nginx-h2.conf
and deploy/bench/h2o-h2.conf; ringside gets a config file with the same
listener.
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


def make_root():
    root = tempfile.mkdtemp(prefix="h2bench-root-")
    with open(os.path.join(root, "26.txt"), "wb") as f:
        f.write(b"x" * 25 + b"\n")
    with open(os.path.join(root, "11k.txt"), "wb") as f:
        f.write((b"0123456789abcdef" * 704)[:11 * 1024 - 1] + b"\n")
    with open(os.path.join(root, "1m.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4096)
    return root


def make_cert(root):
    cert, key = os.path.join(root, "..", "h2bench.pem"), os.path.join(root, "..", "h2bench.key")
    cert, key = os.path.abspath(cert), os.path.abspath(key)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def start(name, root, args, cert, origin_port):
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="h2bench-")
    if base.is_ringside(name):
        exe, extra, env = base.ringside_variant(name)
        listen = f'{{ addr = "127.0.0.1:{port}", tls = {{ cert = "{cert[0]}", key = "{cert[1]}" }} }}' \
            if args.tls else f'"127.0.0.1:{port}"'
        conf = f'[server]\nlisten = [{listen}]\nroot = "{root}"\n\n[admin]\nlisten = "off"\n'
        if origin_port:
            conf += (f'\n[upstream.o]\nservers = ["127.0.0.1:{origin_port}"]\n\n'
                     '[[route]]\nprefix = "/"\nupstream = "o"\n')
        path = os.path.join(prefix, "ringside.toml")
        with open(path, "w") as f:
            f.write(conf)
        cmd = [exe, "--workers", "1", "--config", path] + extra
    elif name == "nginx":
        serve = (f"location / {{ proxy_pass http://origin; proxy_http_version 1.1; "
                 f"proxy_set_header Connection \"\"; }}") if origin_port else f"root {root};"
        tls = f"ssl_certificate {cert[0]}; ssl_certificate_key {cert[1]};" if args.tls else ""
        conf = base.fill(os.path.join(REPO, "deploy", "bench", "nginx-h2.conf"), prefix, root, port,
                         origin_port or 1, extra={"@LISTEN@": "ssl http2" if args.tls else "http2",
                                                  "@TLS@": tls, "@SERVE@": serve})
        cmd, env = [base.nginx_exe(), "-c", conf, "-p", prefix], None
    elif name == "h2o":
        serve = f"proxy.reverse.url: http://127.0.0.1:{origin_port}/" if origin_port else f"file.dir: {root}"
        tls = (f"  ssl:\n    certificate-file: {cert[0]}\n    key-file: {cert[1]}\n") if args.tls else ""
        conf = base.fill(os.path.join(REPO, "deploy", "bench", "h2o-h2.conf"), prefix, root, port,
                         extra={"@TLS@": tls.rstrip("\n"), "@SERVE@": serve})
        cmd, env = [shutil.which("h2o") or "/usr/bin/h2o", "-c", conf], None
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        raise SystemExit(f"unknown server {name}")
    return base.launch(cmd, env, port, prefix, cpu=0)


def h2load(port, args, duration, conns, streams):
    scheme = "https" if args.tls else "http"
    cmd = ["taskset", "-c", "1", "h2load", "-c", str(conns), "-m", str(streams),
           "-D", str(duration), f"{scheme}://127.0.0.1:{port}/{args.file}"]
    if args.h1:
        cmd.insert(4, "--h1")  # after "taskset -c 1 h2load"
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"h2load failed ({out.returncode}):\n{text}")
    done, ok, failed, errored = (int(m.group(i)) for i in (3, 4, 5, 6))
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    # h2load tallies status codes as responses arrive but "done" only for
    # streams that ended before the clock stopped, so 2xx may exceed done by
    # what was in flight; only failures and non-2xx answers are errors.
    bad = codes and any(int(codes.group(i)) for i in (2, 3, 4))
    if failed or errored or bad or (codes and int(codes.group(1)) < done):
        raise RuntimeError(f"errors during the run:\n{text}")
    proto = re.search(r"Application protocol: (\S+)", text)
    return done, proto.group(1) if proto else "?", text


def measure(name, root, args, cert, origin_port):
    proc, port, prefix = start(name, root, args, cert, origin_port)
    try:
        h2load(port, args, 1, args.c, args.m)  # warm-up, not charged
        u0, s0 = base.cpu_ticks(proc.pid)
        reqs, proto, _ = h2load(port, args, args.duration, args.c, args.m)
        u1, s1 = base.cpu_ticks(proc.pid)
    finally:
        base.stop(proc, prefix)
    us = lambda t: t / base.TICK / reqs * 1e6
    return (reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0)), proto


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--file", default="26.txt")
    p.add_argument("--servers", default="ringside,nginx,h2o")
    p.add_argument("--tls", action="store_true")
    p.add_argument("--proxy", action="store_true")
    p.add_argument("--h1", action="store_true")
    p.add_argument("-c", type=int, default=100)
    p.add_argument("-m", type=int, default=10)
    p.add_argument("--baseline", default=None)
    args = p.parse_args()
    base.BASELINE = args.baseline
    root = make_root()
    cert = make_cert(root)
    origin = base.start_origin() if args.proxy else None
    servers = args.servers.split(",")
    rows = {s: [] for s in servers}
    failed = False
    mode = f"{'TLS' if args.tls else 'h2c'}{' --h1' if args.h1 else ''}, {'proxy' if args.proxy else 'static'} /{args.file}, -c{args.c} -m{args.m}"
    print(f"# {mode}, {args.duration}s x {args.rounds} rounds; server CPU 0, h2load CPU 1")
    print(f"{'round':>5} {'server':<12} {'proto':<9} {'req/s':>10} {'us/req':>8} {'user':>7} {'sys':>7}")
    try:
        for r in range(args.rounds):
            for s in servers:
                try:
                    row, proto = measure(s, root, args, cert, origin[1] if origin else None)
                except RuntimeError as e:
                    failed = True
                    print(f"{r + 1:>5} {s:<12} failed: {e}")
                    continue
                rows[s].append(row)
                print(f"{r + 1:>5} {s:<12} {proto:<9} {row[0]:>10.0f} {row[1]:>8.2f} {row[2]:>7.2f} {row[3]:>7.2f}", flush=True)
    finally:
        if origin:
            base.stop(origin[0], origin[2])
        shutil.rmtree(root, ignore_errors=True)
        for f in cert:
            os.unlink(f)
    print(f"# medians ({mode})")
    for s in servers:
        if rows[s]:
            med = [statistics.median(x[i] for x in rows[s]) for i in range(4)]
            print(f"{'med':>5} {s:<12} {'':<9} {med[0]:>10.0f} {med[1]:>8.2f} {med[2]:>7.2f} {med[3]:>7.2f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
