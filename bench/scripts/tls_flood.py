#!/usr/bin/env python3
"""Do TLS handshakes stall the other connections of their core?

One ringside worker (CPU 0) holds two listeners: plain http and https.
ringside-bench sends keep-alive requests to the plain listener at a
constant rate (-R, latency corrected for coordinated omission) and reports
its latency percentiles in three phases, round after round:

  alone        nothing else runs;
  tls-flood    wrk floods the https listener with a new connection per
               request ("Connection: close"), each a TLS handshake (wrk
               resumes sessions: see tls_bench.py; still an X25519 exchange
               each);
  plain-flood  the same wrk flood without TLS (a TCP connect per request):
               the core as busy with connections, without the crypto.

If handshakes ran as one long computation, or waited on a client with the
core held, the tls-flood latencies would jump by a handshake's time or
more, well beyond plain-flood's. ringside-bench and wrk share CPU 1; wrk
runs at nice 19 so that the probe is not starved by wrk's own handshake
crypto, and still the floods slow the client side somewhat: compare
tls-flood with plain-flood.

usage: tls_flood.py [--rounds 3] [--duration 8] [--rate 2000]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_request as cpr  # noqa: E402
import tls_bench  # noqa: E402

BENCH = os.path.join(tls_bench.REPO, "target", "release", "ringside-bench")
PCTS = ["50", "99", "99.9", "100"]


def start(mat):
    plain, tls = cpr.free_port(), cpr.free_port()
    prefix = tempfile.mkdtemp(prefix="tlsflood-")
    conf = os.path.join(prefix, "ringside.toml")
    q = tls_bench.toml_str
    with open(conf, "w") as f:
        f.write("[runtime]\nworkers = 1\ncpu_affinity = false\n[server]\n"
                f"listen = [\"127.0.0.1:{plain}\", {{ addr = \"127.0.0.1:{tls}\", tls = "
                f"{{ cert = {q(mat.cert)}, key = {q(mat.key)} }} }}]\n"
                f"root = {q(mat.root)}\n[admin]\nlisten = \"off\"\n")
    exe = os.path.join(tls_bench.REPO, "target", "release", "ringside")
    env = dict(os.environ, RUST_LOG="warn")
    proc, _, prefix = cpr.launch([exe, "--config", conf], env, plain, prefix, cpu=0)
    return proc, plain, tls, prefix


def bench(port, rate, duration):
    cmd = ["taskset", "-c", "1", BENCH, "--http1.1", "-R", str(rate), "-k", "-c10", "--duration", f"{duration}s",
           "--json", "--progress", "none", f"http://127.0.0.1:{port}/hello.txt"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    if r.returncode != 0:
        raise RuntimeError(f"ringside-bench failed: {r.stderr.strip()[-300:]}")
    d = json.loads(r.stdout)
    if d["failed_requests"]:
        raise RuntimeError(f"ringside-bench: {d['failed_requests']} failed requests")
    return d["latency"]["percentiles"]


def flood(url, duration):
    # Niced, so that on the shared CPU the latency probe runs first and
    # its figures are the server's, not a client starved by wrk's own
    # handshake crypto.
    cmd = ["taskset", "-c", "1", "nice", "-n", "19", "wrk", "-t1", "-c50", f"-d{duration}s",
           "-H", "Connection: close", url]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run_phase(phase, proc, plain, tls, args):
    w = None
    if phase != "alone":
        url = (f"https://127.0.0.1:{tls}" if phase == "tls-flood" else f"http://127.0.0.1:{plain}")
        w = flood(url + "/hello.txt", args.duration + 2)
    try:
        u0, s0 = cpr.cpu_ticks(proc.pid)
        lat = bench(plain, args.rate, args.duration)
        u1, s1 = cpr.cpu_ticks(proc.pid)
    finally:
        out = w.communicate(timeout=args.duration + 60)[0] if w else ""
    conns = 0.0
    if w:
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        if not m:
            raise RuntimeError(f"wrk failed: {out.strip()[-300:]}")
        conns = float(m.group(1))
    busy = (u1 - u0 + s1 - s0) / os.sysconf("SC_CLK_TCK") / args.duration * 100
    return {"lat": lat, "conns_s": conns, "server_cpu": busy}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=8)
    p.add_argument("--rate", type=int, default=2000)
    args = p.parse_args()
    for exe in (BENCH, os.path.join(tls_bench.REPO, "target", "release", "ringside")):
        if not os.path.exists(exe):
            raise SystemExit(f"{exe} is missing: cargo build --release -p ringside -p ringside-bench")
    mat = tls_bench.Material("ec-p256")
    phases = ["alone", "tls-flood", "plain-flood"]
    results = {ph: [] for ph in phases}
    proc, plain, tls, prefix = start(mat)
    try:
        for rnd in range(1, args.rounds + 1):
            for ph in phases:
                r = run_phase(ph, proc, plain, tls, args)
                results[ph].append(r)
                lat = " ".join(f"p{k} {r['lat'][k]:.3f}" for k in PCTS)
                print(f"round {rnd} {ph:12} flood {r['conns_s']:8.0f} conn/s  server CPU "
                      f"{r['server_cpu']:3.0f} %  latency ms: {lat}", flush=True)
    finally:
        cpr.stop(proc, prefix)
        mat.cleanup()
    print(f"\nmedians over {args.rounds} rounds; ringside-bench -R {args.rate} -k -c10 "
          f"-d{args.duration}s on the plain listener; wrk -t1 -c50 flood; 1 worker on CPU 0\n")
    print("| phase | flood conn/s | server CPU | " + " | ".join(f"p{k} ms" for k in PCTS) + " |")
    print("|---|---:|---:|" + "---:|" * len(PCTS))
    for ph in phases:
        rs = results[ph]
        med = lambda f: statistics.median(f(r) for r in rs)
        cells = " | ".join(f"{med(lambda r, k=k: r['lat'][k]):.3f}" for k in PCTS)
        print(f"| {ph} | {med(lambda r: r['conns_s']):.0f} | {med(lambda r: r['server_cpu']):.0f} % | {cells} |")


if __name__ == "__main__":
    main()
