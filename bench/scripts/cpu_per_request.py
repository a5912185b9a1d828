#!/usr/bin/env python3
"""Server CPU per request, ringside against real peers, measured the house way.

Each server runs with one worker pinned to CPU 0; wrk runs pinned to CPU 1.
Servers take turns, round after round, in one run. For each run the server
process's utime+stime delta (/proc/PID/stat, all threads) is divided by the
requests wrk completed. Medians over the rounds are printed at the end.

usage: cpu_per_request.py [--rounds 3] [--duration 10] [--connections 50]
                          [--file hello.txt] [--servers ringside,nginx,lighttpd]
                          [--ringside-args "..."] [--root DIR] [--proxy]

A ringside server may be named ringside[:BACKEND][@SETUP][+VAR=VALUE] to
compare backends (ringside:epoll), io_uring ring setups (ringside@defer,
@none, @coop) or an environment switch, all in the same run.

--proxy measures reverse proxies instead of static serving: one nginx origin
(deploy/peers/nginx-origin.conf, answering "hello from origin\n" on every
path) runs pinned to CPU 1 beside wrk for the whole run, and each server under
test (default ringside,nginx,haproxy) proxies to it from CPU 0. Only the
proxy's own CPU time is counted. The origin's stub_status also says how many
connections it accepted while wrk ran ("up conns") and how many were open at
the end ("up open": the proxy's upstream pool). A pooling proxy shows 0 to a
few dozen up conns: when wrk's warm-up stops it drops the requests in flight,
and a proxy may close the upstream connections carrying them (nginx does)
and open new ones in the run. A proxy without a pool shows about one per
request ("origin req/req" is the origin's requests per wrk request, ~1.000).

A server that fails to start or to serve is reported, per round, with its
error and left out of the medians; the others are still measured, and the
exit status is then 1.
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
import urllib.request

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


def fill(template, prefix, root, port, upstream_port=None):
    with open(template) as f:
        text = f.read()
    text = text.replace("@ROOT@", root or "").replace("@PORT@", str(port)).replace("@PREFIX@", prefix)
    if upstream_port is not None:
        text = text.replace("@UPSTREAM_PORT@", str(upstream_port))
    path = os.path.join(prefix, os.path.basename(template))
    with open(path, "w") as f:
        f.write(text)
    return path


def nginx_exe():
    return shutil.which("nginx") or "/usr/sbin/nginx"


def start(name, root, args, upstream_port=None):
    """Starts one server under test on CPU 0; with upstream_port, as a proxy to it."""
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
        if upstream_port is None:
            cmd = [exe, "--listen", f"127.0.0.1:{port}", "--workers", "1", "--root", root]
        else:
            cmd = [exe, "--workers", "1", "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{upstream_port}"]
        cmd += args.ringside_args.split()
        if backend:
            cmd += ["--backend", backend]
        env = dict(os.environ, RUST_LOG="warn", **extra_env)
        if setup:
            env["RINGSIDE_URING_SETUP"] = setup
    elif name == "nginx":
        template = "nginx-static.conf" if upstream_port is None else "nginx-proxy.conf"
        conf = fill(os.path.join(REPO, "deploy", "peers", template), prefix, root, port, upstream_port)
        cmd = [nginx_exe(), "-c", conf, "-p", prefix]
        env = None
    elif name == "haproxy" and upstream_port is not None:
        conf = fill(os.path.join(REPO, "deploy", "peers", "haproxy-proxy.cfg"), prefix, root, port, upstream_port)
        cmd = [shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f", conf]
        env = None
    elif name == "lighttpd" and upstream_port is None:
        conf = fill(os.path.join(REPO, "deploy", "peers", "lighttpd-static.conf"), prefix, root, port)
        cmd = [shutil.which("lighttpd") or "/usr/sbin/lighttpd", "-D", "-f", conf]
        env = None
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        mode = "proxy" if upstream_port is not None else "static"
        raise SystemExit(f"unknown server {name} for {mode} mode")
    return launch(cmd, env, port, prefix, cpu=0)


def launch(cmd, env, port, prefix, cpu):
    # stderr goes to a file, not a pipe nobody reads (a chatty server would
    # block on a full pipe), and is quoted when the server fails to start.
    errpath = os.path.join(prefix, "stderr.log")
    with open(errpath, "wb") as err:
        try:
            proc = subprocess.Popen(["taskset", "-c", str(cpu)] + cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        except OSError as e:
            shutil.rmtree(prefix, ignore_errors=True)
            raise RuntimeError(f"cannot run {cmd[0]}: {e}")
    try:
        wait_port(port, proc)
    except RuntimeError as e:
        stop(proc, None)
        with open(errpath, errors="replace") as f:
            tail = f.read().strip()[-500:]
        shutil.rmtree(prefix, ignore_errors=True)
        raise RuntimeError(f"{e}: {tail}" if tail else str(e))
    return proc, port, prefix


def stop(proc, prefix):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if prefix:
        shutil.rmtree(prefix, ignore_errors=True)


def start_origin():
    """The nginx origin for --proxy, pinned to CPU 1 beside wrk."""
    port = free_port()
    prefix = tempfile.mkdtemp(prefix="shootout-origin-")
    conf = fill(os.path.join(REPO, "deploy", "peers", "nginx-origin.conf"), prefix, None, port)
    return launch([nginx_exe(), "-c", conf, "-p", prefix], None, port, prefix, cpu=1)


def origin_status(port):
    """nginx stub_status: (active connections, accepts, requests).

    Each call is one fresh connection and one request, which the figures it
    returns already include; callers subtract their own probes."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/nginx_status", headers={"Connection": "close"})
    with urllib.request.urlopen(req, timeout=5) as r:
        text = r.read().decode()
    active = int(re.search(r"Active connections:\s*(\d+)", text).group(1))
    accepts, _handled, requests = (int(x) for x in re.search(r"\n\s*(\d+)\s+(\d+)\s+(\d+)", text).groups())
    return active, accepts, requests


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


def measure(name, root, args, origin_port):
    """One server, one round: returns the row printed and kept for medians."""
    proc, port, prefix = start(name, root, args, origin_port)
    try:
        # A short warm-up so lazily built state is not charged. A proxy warms
        # up with the full connection count, so that its upstream pool is as
        # large as the run needs before the run begins.
        warm_conns = args.connections if origin_port else 10
        warm = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{warm_conns}", "-d1s", f"http://127.0.0.1:{port}/{args.file}"],
                              capture_output=True, text=True)
        if warm.returncode != 0 or "Non-2xx" in warm.stdout or "Socket errors" in warm.stdout:
            raise RuntimeError(f"warm-up failed:\n{warm.stdout}{warm.stderr}")
        if origin_port:
            st0 = origin_status(origin_port)
        u0, s0 = cpu_ticks(proc.pid)
        reqs, _ = run_wrk(port, args)
        u1, s1 = cpu_ticks(proc.pid)
        if origin_port:
            st1 = origin_status(origin_port)
            # Less the second probe's own connection and request; "active"
            # counts the probe itself too.
            up_conns = st1[1] - st0[1] - 1
            up_reqs = st1[2] - st0[2] - 1
            up_open = st1[0] - 1
    finally:
        stop(proc, prefix)
    if reqs == 0:
        raise RuntimeError("wrk completed no requests")
    us = lambda t: t / TICK / reqs * 1e6
    row = (reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0))
    if origin_port:
        row += (up_conns, up_open, up_reqs / reqs)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--file", default="hello.txt")
    p.add_argument("--root", default=None)
    p.add_argument("--servers", default=None,
                   help="comma-separated; default ringside,nginx,lighttpd, or ringside,nginx,haproxy with --proxy")
    p.add_argument("--ringside-args", default="")
    p.add_argument("--proxy", action="store_true",
                   help="measure reverse proxies in front of one nginx origin on CPU 1")
    args = p.parse_args()
    if args.servers is None:
        args.servers = "ringside,nginx,haproxy" if args.proxy else "ringside,nginx,lighttpd"
    root = args.root
    made_root = None
    if args.proxy:
        root = None
    elif root is None:
        root = made_root = tempfile.mkdtemp(prefix="shootout-root-")
        with open(os.path.join(root, "hello.txt"), "wb") as f:
            f.write(b"hello from ringside 26 B.\n")
    servers = args.servers.split(",")
    known = ("nginx", "haproxy") if args.proxy else ("nginx", "lighttpd")
    for name in servers:
        if not (name.startswith("ringside") or name in known):
            mode = "--proxy" if args.proxy else "static"
            raise SystemExit(f"unknown server {name} for {mode} mode; known: ringside[...], {', '.join(known)}")
    results = {s: [] for s in servers}
    errors = {s: [] for s in servers}
    origin = None
    origin_port = None
    try:
        if args.proxy:
            origin = start_origin()
            origin_port = origin[1]
        for rnd in range(1, args.rounds + 1):
            for name in servers:
                try:
                    row = measure(name, root, args, origin_port)
                except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                    msg = " ".join(str(e).split())
                    errors[name].append(msg)
                    print(f"round {rnd} {name:16s} FAILED: {msg}", flush=True)
                    continue
                results[name].append(row)
                line = f"round {rnd} {name:16s} {row[0]:9.0f} req/s  cpu {row[1]:6.2f} us/req (user {row[2]:5.2f}, sys {row[3]:5.2f})"
                if args.proxy:
                    line += f"  up conns {row[4]}, up open {row[5]}, origin req/req {row[6]:.3f}"
                print(line, flush=True)
    finally:
        if origin:
            stop(origin[0], origin[2])
        if made_root:
            shutil.rmtree(made_root, ignore_errors=True)
    what = "proxied to an nginx origin on CPU 1" if args.proxy else f"/{args.file}"
    print(f"\nmedians over {args.rounds} rounds, {what}, wrk -t1 -c{args.connections} -d{args.duration}s:")
    head = f"{'server':16s} {'req/s':>9s} {'cpu us/req':>11s} {'user':>7s} {'sys':>7s}"
    if args.proxy:
        head += f" {'up conns':>9s} {'up open':>8s}"
    print(head)
    for name in servers:
        if not results[name]:
            print(f"{name:16s} failed: {errors[name][-1]}")
            continue
        med = [statistics.median(r[i] for r in results[name]) for i in range(len(results[name][0]))]
        line = f"{name:16s} {med[0]:9.0f} {med[1]:11.2f} {med[2]:7.2f} {med[3]:7.2f}"
        if args.proxy:
            line += f" {med[4]:9g} {med[5]:8g}"
        if errors[name]:
            line += f"  ({len(results[name])} of {args.rounds} rounds; {len(errors[name])} failed)"
        print(line)
    return 1 if any(errors.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
