#!/usr/bin/env python3
"""One long download over one connection: ringside over HTTP/3 against the
same ringside over HTTP/2 with TLS, the house way (one worker on CPU 0, the
client on CPU 1, the two taking turns round after round, medians at the
end). Each round downloads the file --count times on one connection with
ringside-bench (--h3, or --h2 over TLS: the same client both ways), and
reports MiB/s, the server's CPU per MiB (utime+stime from /proc) and the
client's, which says which side the run was bound by.

usage: h3_bulk.py [--rounds 3] [--mib 100] [--count 3]
                  [--servers ringside,ringside-h2] [--config EXTRA]
                  [--baseline EXE]

A server name takes ringside_variant's forms (ringside+ENV=VALUE ...);
"-h2" at its end measures it over HTTP/2 instead. --config appends TOML to
ringside's config (e.g. '[http3]\\nsend_window = "16m"').
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_request as base  # noqa: E402
import h2_cpu_per_request as h2  # noqa: E402

BENCH = os.path.join(base.REPO, "target", "release", "ringside-bench")


def start(name, root, cert, extra):
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="h3bulk-")
    exe, args, env = base.ringside_variant(name.replace("-h2", ""))
    listen = f'{{ addr = "127.0.0.1:{port}", tls = {{ cert = "{cert[0]}", key = "{cert[1]}" }} }}'
    conf = f'[server]\nlisten = [{listen}]\nroot = "{root}"\n\n[admin]\nlisten = "off"\n{extra}\n'
    path = os.path.join(prefix, "ringside.toml")
    with open(path, "w") as f:
        f.write(conf)
    return base.launch([exe, "--workers", "1", "--config", path] + args, env, port, prefix, cpu=0)


def download(name, port, count):
    """count downloads on one connection; (seconds, client CPU seconds)."""
    proto = "--h2" if name.endswith("-h2") else "--h3"
    cmd = ["taskset", "-c", "1", BENCH, proto, "--insecure", "-k", "-q", "-c", "1",
           "-n", str(count), "-s", "60", "--json", f"https://127.0.0.1:{port}/big.bin"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0 or '"failed_requests":0' not in out.stdout.replace(" ", ""):
        raise RuntimeError(f"ringside-bench failed ({out.returncode}): {out.stdout[-400:]} {out.stderr[-400:]}")
    client = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, client


def measure(name, root, cert, args):
    proc, port, prefix = start(name, root, cert, args.config)
    try:
        download(name, port, 1)  # warm: the file in the page cache, the handshake done once
        u0, s0 = base.cpu_ticks(proc.pid)
        wall, client = download(name, port, args.count)
        u1, s1 = base.cpu_ticks(proc.pid)
    finally:
        base.stop(proc, prefix)
    mib = args.mib * args.count
    server_ms = (u1 - u0 + s1 - s0) / base.TICK * 1000 / mib
    return mib / wall, server_ms, client * 1000 / mib


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mib", type=int, default=100)
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--servers", default="ringside,ringside-h2")
    p.add_argument("--config", default="")
    p.add_argument("--baseline", default=None, help="another ringside, as server baseline[...]")
    args = p.parse_args()
    base.BASELINE = args.baseline
    args.config = args.config.replace("\\n", "\n")
    root = tempfile.mkdtemp(prefix="h3bulk-root-")
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(os.urandom(args.mib << 20))
    cert = h2.make_cert(root)
    servers = args.servers.split(",")
    rows = {s: [] for s in servers}
    print(f"# {args.mib} MiB x {args.count} on one connection, {args.rounds} rounds; server CPU 0, client CPU 1")
    print(f"{'round':>5} {'server':<28} {'MiB/s':>8} {'server ms/MiB':>14} {'client ms/MiB':>14}")
    failed = False
    try:
        for r in range(args.rounds):
            for s in servers:
                try:
                    row = measure(s, root, cert, args)
                except RuntimeError as e:
                    failed = True
                    print(f"{r + 1:>5} {s:<28} failed: {e}")
                    continue
                rows[s].append(row)
                print(f"{r + 1:>5} {s:<28} {row[0]:>8.0f} {row[1]:>14.2f} {row[2]:>14.2f}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        for f in cert:
            os.unlink(f)
    print("# medians")
    for s in servers:
        if rows[s]:
            med = [statistics.median(x[i] for x in rows[s]) for i in range(3)]
            print(f"{'med':>5} {s:<28} {med[0]:>8.0f} {med[1]:>14.2f} {med[2]:>14.2f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
