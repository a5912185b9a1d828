#!/usr/bin/env python3
"""Load generators compared against one target, in one run: wrk, ab and
ringside-bench, each pinned to the same CPU, taking turns round after round.

The target (ringside, one worker, serving a 26-byte file; or nginx with
deploy/bench/nginx-static.conf) runs pinned to CPU 0 for the whole run.
Each client runs pinned to CPU 1 with the same connection count and
duration:

    wrk -t1 -cN -dDs URL
    ab -k -cN -tD -n 2000000 URL        (-t bounds the time; -n sizes ab's table)
    ringside-bench --cores 1 -k -cN -dDs --json -q URL

Per run it records the client's req/s (from its own report) and the
client's own CPU time per request: utime + stime of the client process
from /proc/PID/stat, read after it exited but before it is reaped
(waitid WNOWAIT), divided by the requests it completed. Medians over the
rounds are printed at the end, with ringside-bench's ratios to wrk and ab.

usage: compare_clients.py [--rounds 3] [--duration 10] [--connections 50]
                          [--target ringside|nginx] [--clients wrk,ab,ringside-bench]
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
TICK = os.sysconf("SC_CLK_TCK")
BODY = b"hello from ringside 26 B.\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"target exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def start_target(kind, root, prefix):
    port = free_port()
    if kind == "ringside":
        exe = os.path.join(REPO, "target", "release", "ringside")
        cmd = [exe, "--workers", "1", "--root", root, "--listen", f"127.0.0.1:{port}"]
        env = dict(os.environ, RUST_LOG="warn")
    elif kind == "nginx":
        with open(os.path.join(REPO, "deploy", "bench", "nginx-static.conf")) as f:
            text = f.read()
        text = text.replace("@ROOT@", root).replace("@PORT@", str(port)).replace("@PREFIX@", prefix)
        text = text.replace("@WORKERS@", "1").replace("@MASTER@", "off")
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(text)
        cmd = [shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", prefix]
        env = None
    else:
        raise SystemExit(f"unknown target {kind}")
    err = open(os.path.join(prefix, "target.err"), "wb")
    proc = subprocess.Popen(["taskset", "-c", "0"] + cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    wait_port(port, proc)
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_client(cmd):
    """Runs cmd pinned to CPU 1; returns (stdout, cpu seconds of the client)."""
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen(["taskset", "-c", "1"] + cmd, stdout=out, stderr=subprocess.DEVNULL)
    try:
        # Wait for the exit without reaping, so /proc/PID/stat still has the
        # final CPU times of the (zombie) process.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    finally:
        proc.wait()
    out.seek(0)
    text = out.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}:\n{text[-2000:]}")
    return text, cpu


def measure(client, url, args):
    n, d = args.connections, args.duration
    if client == "wrk":
        text, cpu = run_client(["wrk", "-t1", f"-c{n}", f"-d{d}s", url])
        reqs = int(re.search(r"(\d+) requests in", text).group(1))
        rps = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
        if "Non-2xx" in text or "Socket errors" in text:
            raise RuntimeError(f"wrk saw errors:\n{text}")
    elif client == "ab":
        text, cpu = run_client(["ab", "-q", "-k", f"-c{n}", f"-t{d}", "-n", "2000000", url])
        reqs = int(re.search(r"Complete requests:\s*(\d+)", text).group(1))
        rps = float(re.search(r"Requests per second:\s*([\d.]+)", text).group(1))
        if int(re.search(r"Failed requests:\s*(\d+)", text).group(1)):
            raise RuntimeError(f"ab saw failures:\n{text}")
    elif client == "ringside-bench":
        exe = os.path.join(REPO, "target", "release", "ringside-bench")
        text, cpu = run_client([exe, "--cores", "1", "--http1.1", "-k", "-c", str(n), "--duration", f"{d}s", "--json", "-q", url])
        j = json.loads(text)
        reqs, rps = j["complete_requests"], j["requests_per_second"]
        if j["failed_requests"]:
            raise RuntimeError(f"ringside-bench saw failures: {j['counts']}")
    else:
        raise SystemExit(f"unknown client {client}")
    return rps, cpu / reqs * 1e6, reqs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--target", default="ringside")
    p.add_argument("--clients", default="wrk,ab,ringside-bench")
    args = p.parse_args()
    clients = args.clients.split(",")
    prefix = tempfile.mkdtemp(prefix="compare-clients-")
    root = os.path.join(prefix, "root")
    os.makedirs(root)
    with open(os.path.join(root, "hello.txt"), "wb") as f:
        f.write(BODY)
    results = {c: [] for c in clients}
    proc = None
    try:
        proc, port = start_target(args.target, root, prefix)
        url = f"http://127.0.0.1:{port}/hello.txt"
        for rnd in range(1, args.rounds + 1):
            for c in clients:
                rps, us, reqs = measure(c, url, args)
                results[c].append((rps, us))
                print(f"round {rnd} {c:15s} {rps:10.0f} req/s  client cpu {us:6.2f} us/req  ({reqs} requests)", flush=True)
    finally:
        if proc:
            stop(proc)
        shutil.rmtree(prefix, ignore_errors=True)
    print(f"\nmedians over {args.rounds} rounds; target {args.target} (1 worker, CPU 0), "
          f"clients on CPU 1, -c {args.connections}, {args.duration}s, 26-byte file:")
    print(f"{'client':15s} {'req/s':>10s} {'cpu us/req':>11s}")
    med = {}
    for c in clients:
        med[c] = tuple(statistics.median(r[i] for r in results[c]) for i in range(2))
        print(f"{c:15s} {med[c][0]:10.0f} {med[c][1]:11.2f}")
    if "ringside-bench" in med:
        rb = med["ringside-bench"]
        for other in ("wrk", "ab"):
            if other in med:
                print(f"ringside-bench / {other}: rate x{rb[0] / med[other][0]:.2f}, "
                      f"cpu per request x{rb[1] / med[other][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
