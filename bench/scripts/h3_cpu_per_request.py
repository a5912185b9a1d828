#!/usr/bin/env python3
"""Server CPU per request over HTTP/3, ringside against Caddy (quic-go),
with ringside's own HTTP/2 over TLS on the same load beside it, measured
the house way: each server runs on CPU 0 (Caddy with GOMAXPROCS=1, ringside
with one worker), the load generator on CPU 1, the servers take turns round
after round in one run, and the server's utime+stime delta
(/proc/PID/stat) over the load's run is divided by the requests completed.
Medians over the rounds are printed at the end.

usage: h3_cpu_per_request.py [--rounds 3] [--duration 5] [--file 26.txt]
                             [--servers ringside,ringside-h2,caddy]
                             [--proxy] [-c 100] [-m 10] [--baseline EXE]
                             [--syscalls]

--syscalls also counts the server's system calls per request over each
measured run (perf stat -e raw_syscalls:sys_enter -p PID).

HTTP/3 load is ringside-bench --h3 (target/release; no HTTP/3 client here
has a load mode: Debian's h2load and curl are built without it);
"ringside-h2" is the same ringside measured with h2load over TLS (ALPN h2),
and "caddy-h2" the same for Caddy: each server's own HTTP/3 against its
own HTTP/2 on the same files.
--proxy puts the nginx origin (18 bytes on every path) on CPU 1 and
measures the servers proxying to it over HTTP/1.1. The document root is
the HTTP/2 script's: 26.txt, 11k.txt, 1m.bin.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_request as base  # noqa: E402
import h2_cpu_per_request as h2  # noqa: E402

REPO = base.REPO
BENCH = os.path.join(REPO, "target", "release", "ringside-bench")


def start(name, root, args, cert, origin_port):
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="h3bench-")
    if base.is_ringside(name):
        exe, extra, env = base.ringside_variant(name.replace("-h2", ""))
        listen = f'{{ addr = "127.0.0.1:{port}", tls = {{ cert = "{cert[0]}", key = "{cert[1]}" }} }}'
        conf = f'[server]\nlisten = [{listen}]\nroot = "{root}"\n\n[admin]\nlisten = "off"\n'
        if origin_port:
            conf += (f'\n[upstream.o]\nservers = ["127.0.0.1:{origin_port}"]\n\n'
                     '[[route]]\nprefix = "/"\nupstream = "o"\n')
        path = os.path.join(prefix, "ringside.toml")
        with open(path, "w") as f:
            f.write(conf)
        cmd = [exe, "--workers", "1", "--config", path] + extra
    elif name in ("caddy", "caddy-h2"):
        serve = f"reverse_proxy 127.0.0.1:{origin_port}" if origin_port else f"root * {root}\n  file_server"
        conf = (f"{{\n  admin off\n  auto_https off\n  default_sni 127.0.0.1\n  storage file_system {prefix}\n}}\n"
                f"https://127.0.0.1:{port} {{\n  bind 127.0.0.1\n  tls {cert[0]} {cert[1]}\n  {serve}\n}}\n")
        path = os.path.join(prefix, "Caddyfile")
        with open(path, "w") as f:
            f.write(conf)
        env = dict(os.environ, GOMAXPROCS="1", HOME=prefix, XDG_DATA_HOME=prefix, XDG_CONFIG_HOME=prefix)
        cmd = [shutil.which("caddy") or "/usr/bin/caddy", "run", "--config", path, "--adapter", "caddyfile"]
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        raise SystemExit(f"unknown server {name}")
    return base.launch(cmd, env, port, prefix, cpu=0)


def h3load(port, args, duration):
    cmd = ["taskset", "-c", "1", BENCH, "--h3", "--insecure", "-k", "-c", str(args.c),
           "--streams", str(args.m), "--duration", f"{duration}s", "--json",
           f"https://127.0.0.1:{port}/{args.file}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        d = json.loads(out.stdout)
    except ValueError:
        raise RuntimeError(f"ringside-bench failed ({out.returncode}):\n{out.stderr[-2000:]}")
    done, failed = d["complete_requests"], d["failed_requests"]
    if out.returncode != 0 or failed or d["counts"]["non_2xx"] or not done:
        raise RuntimeError(f"errors during the run: {done} complete, {failed} failed, {d['counts']}")
    return done


def measure(name, root, args, cert, origin_port):
    proc, port, prefix = start(name, root, args, cert, origin_port)
    h2args = argparse.Namespace(tls=True, h1=False, file=args.file)
    try:
        if name.endswith("-h2"):
            h2.h2load(port, h2args, 1, args.c, args.m)
        else:
            h3load(port, args, 1)
        perf = None
        if args.syscalls:
            # The server's system calls over the measured run only.
            perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter",
                                     "-p", str(proc.pid)], stderr=subprocess.PIPE, text=True)
        u0, s0 = base.cpu_ticks(proc.pid)
        if name.endswith("-h2"):
            reqs = h2.h2load(port, h2args, args.duration, args.c, args.m)[0]
        else:
            reqs = h3load(port, args, args.duration)
        u1, s1 = base.cpu_ticks(proc.pid)
        calls = None
        if perf:
            perf.send_signal(2)
            err = perf.communicate()[1]
            calls = next(float(l.split(",")[0]) for l in err.splitlines() if "sys_enter" in l)
    finally:
        base.stop(proc, prefix)
    us = lambda t: t / base.TICK / reqs * 1e6
    per = None if calls is None else calls / reqs
    return reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0), per


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--file", default="26.txt")
    p.add_argument("--servers", default="ringside,ringside-h2,caddy")
    p.add_argument("--proxy", action="store_true")
    p.add_argument("-c", type=int, default=100)
    p.add_argument("-m", type=int, default=10)
    p.add_argument("--baseline", default=None)
    p.add_argument("--syscalls", action="store_true",
                   help="count the server's system calls per request (perf stat)")
    args = p.parse_args()
    base.BASELINE = args.baseline
    root = h2.make_root()
    cert = h2.make_cert(root)
    origin = base.start_origin() if args.proxy else None
    servers = args.servers.split(",")
    rows = {s: [] for s in servers}
    failed = False
    mode = f"{'proxy' if args.proxy else 'static'} /{args.file}, -c{args.c} streams {args.m}"
    print(f"# {mode}, {args.duration}s x {args.rounds} rounds; server CPU 0, load CPU 1")
    print(f"{'round':>5} {'server':<14} {'req/s':>10} {'us/req':>8} {'user':>7} {'sys':>7}"
          + (f" {'calls/req':>9}" if args.syscalls else ""))
    calls = lambda row: f" {row[4]:>9.3f}" if row[4] is not None else ""
    try:
        for r in range(args.rounds):
            for s in servers:
                try:
                    row = measure(s, root, args, cert, origin[1] if origin else None)
                except RuntimeError as e:
                    failed = True
                    print(f"{r + 1:>5} {s:<14} failed: {e}")
                    continue
                rows[s].append(row)
                print(f"{r + 1:>5} {s:<14} {row[0]:>10.0f} {row[1]:>8.2f} {row[2]:>7.2f} {row[3]:>7.2f}"
                      + calls(row), flush=True)
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
            med.append(statistics.median(x[4] for x in rows[s]) if args.syscalls else None)
            print(f"{'med':>5} {s:<14} {med[0]:>10.0f} {med[1]:>8.2f} {med[2]:>7.2f} {med[3]:>7.2f}"
                  + calls(med))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
