#!/usr/bin/env python3
"""Server CPU per request, ringside against real peers, measured the house way.

Each server runs with one worker pinned to CPU 0; wrk runs pinned to CPU 1.
Servers take turns, round after round, in one run. For each run the server
process's utime+stime delta (/proc/PID/stat, all threads) is divided by the
requests wrk completed. Medians over the rounds are printed at the end.

usage: cpu_per_request.py [--rounds 3] [--duration 10] [--connections 50]
                          [--file hello.txt] [--servers ringside,nginx,lighttpd]
                          [--ringside-args "..."] [--root DIR]

A ringside server may be named ringside[:BACKEND][@SETUP][+VAR=VALUE] to
compare backends (ringside:epoll), io_uring ring setups (ringside@defer,
@none, @coop) or an environment switch, all in the same run.
"""
import argparse
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
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime is field 14, stime field 15.
    return int(fields[11]), int(fields[12])


def wait_port(port, proc, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def fill(template, prefix, root, port):
    with open(template) as f:
        text = f.read()
    text = text.replace("@ROOT@", root).replace("@PORT@", str(port)).replace("@PREFIX@", prefix)
    path = os.path.join(prefix, os.path.basename(template))
    with open(path, "w") as f:
        f.write(text)
    return path


def start(name, root, args):
    port = free_port()
    prefix = tempfile.mkdtemp(prefix="shootout-")
    if name.startswith("ringside"):
        # ringside[:BACKEND][@URING_SETUP], e.g. ringside:epoll, ringside@defer
        rest = name[len("ringside"):]
        extra_env = {}
        if "+" in rest:
            # ringside...+NAME=VALUE: an environment variable for this server only.
            rest, assign = rest.split("+", 1)
            k, v = assign.split("=", 1)
            extra_env[k] = v
        setup = None
        if "@" in rest:
            rest, setup = rest.split("@", 1)
        backend = rest.lstrip(":") or None
        exe = os.path.join(REPO, "target", "release", "ringside")
        cmd = [exe, "--listen", f"127.0.0.1:{port}", "--workers", "1", "--root", root] + args.ringside_args.split()
        if backend:
            cmd += ["--backend", backend]
        env = dict(os.environ, RUST_LOG="warn", **extra_env)
        if setup:
            env["RINGSIDE_URING_SETUP"] = setup
    elif name == "nginx":
        conf = fill(os.path.join(REPO, "deploy", "peers", "nginx-static.conf"), prefix, root, port)
        cmd = [shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", prefix]
        env = None
    elif name == "lighttpd":
        conf = fill(os.path.join(REPO, "deploy", "peers", "lighttpd-static.conf"), prefix, root, port)
        cmd = [shutil.which("lighttpd") or "/usr/sbin/lighttpd", "-D", "-f", conf]
        env = None
    else:
        raise SystemExit(f"unknown server {name}")
    proc = subprocess.Popen(["taskset", "-c", "0"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wait_port(port, proc)
    return proc, port, prefix


def stop(proc, prefix):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(prefix, ignore_errors=True)


def run_wrk(port, args):
    url = f"http://127.0.0.1:{port}/{args.file}"
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", f"-c{args.connections}", f"-d{args.duration}s", url],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"(\d+) requests in", out)
    if not m:
        raise RuntimeError(f"cannot read wrk output:\n{out}")
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"errors during the run:\n{out}")
    return int(m.group(1)), out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--file", default="hello.txt")
    p.add_argument("--root", default=None)
    p.add_argument("--servers", default="ringside,nginx,lighttpd")
    p.add_argument("--ringside-args", default="")
    args = p.parse_args()
    root = args.root
    if root is None:
        root = tempfile.mkdtemp(prefix="shootout-root-")
        with open(os.path.join(root, "hello.txt"), "wb") as f:
            f.write(b"hello from ringside 26 B.\n")
    servers = args.servers.split(",")
    results = {s: [] for s in servers}
    for rnd in range(1, args.rounds + 1):
        for name in servers:
            proc, port, prefix = start(name, root, args)
            try:
                # A short warm-up so lazily built state is not charged.
                subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c10", "-d1s", f"http://127.0.0.1:{port}/{args.file}"],
                               capture_output=True, check=True)
                u0, s0 = cpu_ticks(proc.pid)
                reqs, _ = run_wrk(port, args)
                u1, s1 = cpu_ticks(proc.pid)
            finally:
                stop(proc, prefix)
            us = lambda t: t / TICK / reqs * 1e6
            row = (reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0))
            results[name].append(row)
            print(f"round {rnd} {name:16s} {row[0]:9.0f} req/s  cpu {row[1]:6.2f} us/req (user {row[2]:5.2f}, sys {row[3]:5.2f})", flush=True)
    print(f"\nmedians over {args.rounds} rounds, /{args.file}, wrk -t1 -c{args.connections} -d{args.duration}s:")
    print(f"{'server':16s} {'req/s':>9s} {'cpu us/req':>11s} {'user':>7s} {'sys':>7s}")
    for name in servers:
        med = [statistics.median(r[i] for r in results[name]) for i in range(4)]
        print(f"{name:16s} {med[0]:9.0f} {med[1]:11.2f} {med[2]:7.2f} {med[3]:7.2f}")


if __name__ == "__main__":
    sys.exit(main())
