#!/usr/bin/env python3
"""Server CPU per cache hit, ringside's response cache against nginx
proxy_cache and Varnish, and against ringside serving the same bytes as a
static file, measured the house way (cpu_per_request.py, whose helpers this
imports): each server runs one worker (or one process, pinned) on CPU 0, wrk
-t1 on CPU 1, the servers take turns round after round in one run, and the
server's utime+stime delta (/proc/PID/stat, all threads, and its child
processes' for Varnish) over wrk's run is divided by the requests wrk
completed. Medians over the rounds are printed at the end, with each
server's CPU per request as a multiple of ringside-static's.

usage: cache_cpu_per_request.py [--rounds 3] [--duration 10] [--connections 50]
                                [--file 26.txt|11k.txt|1m.bin (or 26, 11k, 1m)]
                                [--servers ringside-static,ringside-cache,nginx-cache,varnish]
                                [--ringside-args "..."] [--ringside EXE] [--baseline EXE]
                                [--nginx-sendfile auto|on|off]
                                [--client wrk|ringside-bench]

The objects, made here in one root: 26.txt (26 bytes), 11k.txt (11 KiB)
and 1m.bin (1 MiB). One nginx origin (deploy/bench/nginx-cache-origin.conf)
serves that root pinned to CPU 1 beside wrk for the whole run, every answer
with Cache-Control: max-age=3600, so a cache stores each object at its
first request and answers every later one itself. Only the server on
CPU 0 is counted. The servers:

  ringside-static  ringside serving the root as static files (--root, as
                   cpu_per_request.py does): the bytes without a cache.
  ringside-cache   ringside proxying to the origin through a [cache.bench]
                   with the defaults (64m of memory per core, max_object 4m:
                   the 1 MiB object is kept in memory too; ringside's cache
                   has no disk tier) on a [[route]] with cache = "bench".
  nginx-cache      nginx proxy_cache (deploy/bench/nginx-cache.conf): keys
                   in a shared-memory zone, bodies in cache files under the
                   server's temporary prefix, read through the page cache;
                   freshness from the origin's max-age (no
                   proxy_cache_valid). sendfile on for 1m.bin, off for the
                   small objects, whichever costs nginx less
                   (--nginx-sendfile on|off to choose): with it on a small
                   hit goes out as a writev of the head and a sendfile of
                   the body, two sends.
  varnish          varnishd -F -a 127.0.0.1:PORT -b 127.0.0.1:ORIGIN
                   -s malloc,256m -p thread_pools=1 (the builtin VCL), the
                   manager and the cache process with all their threads
                   pinned to CPU 0 by taskset. Installed with
                   `apt-get install -y varnish` (Debian 12: Varnish 7.1);
                   the package's own service is not used (stop it, e.g.
                   `systemctl stop varnish`, if the install started one).

A ringside server may carry cpu_per_request.py's suffixes after its name
(ringside-cache:epoll, ringside-cache@defer, ringside-cache+--coalesce-wait=0);
with --baseline EXE, baseline-static and baseline-cache run that binary.
--ringside EXE runs another binary than this tree's target/release/ringside
as ringside-static and ringside-cache (a worktree without a build of its own).
Every ringside gets its admin listener on a free port (not 9180).

Before each measured run the server gets one request for each object and
then one more for the measured object, whose body must be the file's bytes
and whose head must say it was a hit (ringside: Cache-Status "...; hit";
nginx: X-Cache-Status: HIT; Varnish: X-Varnish with two transaction ids);
round 1 prints that head line. Then wrk's own warm-up (1 s at the full
connection count), then the run. "up req/req" is the origin's requests
during the run (its stub_status, less the probe) per wrk request: ~0 when
every request was a hit; a server whose origin requests exceed 1% of wrk's
is reported as failing the round. "x static" is the server's median CPU
per request over ringside-static's.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_request as base  # noqa: E402

REPO = base.REPO

# Name -> size; --file also takes the sizes' short names.
OBJECTS = {"26.txt": 26, "11k.txt": 11 * 1024, "1m.bin": 1 << 20}
ALIASES = {"26": "26.txt", "26b": "26.txt", "11k": "11k.txt", "1m": "1m.bin"}
SERVERS = ("ringside-static", "ringside-cache", "ringside-cache-disk", "nginx-cache", "varnish")


def make_root():
    """The objects, readable by every server (Varnish never reads them:
    only the origin does)."""
    root = tempfile.mkdtemp(prefix="cachebench-root-")
    os.chmod(root, 0o755)
    with open(os.path.join(root, "26.txt"), "wb") as f:
        f.write(b"x" * 25 + b"\n")
    with open(os.path.join(root, "11k.txt"), "wb") as f:
        f.write((b"0123456789abcdef" * 704)[:11 * 1024 - 1] + b"\n")
    with open(os.path.join(root, "1m.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4096)
    for name, size in OBJECTS.items():
        assert os.path.getsize(os.path.join(root, name)) == size
    return root


def start_origin(root):
    """nginx serving the objects with max-age=3600, pinned to CPU 1."""
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="cachebench-origin-")
    conf = base.fill(os.path.join(REPO, "deploy", "bench", "nginx-cache-origin.conf"), prefix, root, port)
    return base.launch([base.nginx_exe(), "-c", conf, "-p", prefix], None, port, prefix, cpu=1)


def ringside_kind(name):
    """("static" | "cache", the cpu_per_request.py server name of its
    binary and suffixes) for ringside-static..., baseline-cache..."""
    m = re.match(r"(ringside|baseline)-(static|cache-disk|cache)(.*)$", name)
    if not m:
        return None
    return m.group(2), m.group(1) + m.group(3)


def start(name, root, args, origin_port):
    """One server under test on CPU 0: (proc, port, prefix)."""
    port = base.free_port()
    prefix = tempfile.mkdtemp(prefix="cachebench-")
    kind = ringside_kind(name)
    if kind:
        exe, extra, env = base.ringside_variant(kind[1])
        if args.ringside and kind[1].startswith("ringside"):
            exe = args.ringside
        admin = f"127.0.0.1:{base.free_port()}"
        if kind[0] == "static":
            cmd = [exe, "--listen", f"127.0.0.1:{port}", "--workers", "1", "--root", root, "--admin", admin]
        else:
            conf = os.path.join(prefix, "ringside.toml")
            # cache-disk: a disk tier in the run's own directory, where a
            # body above 64 KiB is kept and sent from (sendfile/splice).
            disk = f'disk = "{prefix}/disk"\n' if kind[0] == "cache-disk" else ""
            with open(conf, "w") as f:
                f.write(f'[server]\nlisten = ["127.0.0.1:{port}"]\n\n'
                        f'[admin]\nlisten = "{admin}"\n\n'
                        f'[cache.bench]\n{disk}\n'
                        f'[upstream.origin]\nservers = ["127.0.0.1:{origin_port}"]\n\n'
                        '[[route]]\nprefix = "/"\nupstream = "origin"\ncache = "bench"\n')
            cmd = [exe, "--workers", "1", "--config", conf]
        cmd += args.ringside_args.split() + extra
    elif name == "nginx-cache":
        sendfile = args.nginx_sendfile
        if sendfile == "auto":
            sendfile = "on" if OBJECTS[args.file] > 64 * 1024 else "off"
        conf = base.fill(os.path.join(REPO, "deploy", "bench", "nginx-cache.conf"), prefix, None, port, origin_port,
                         extra={"@SENDFILE@": sendfile})
        cmd, env = [base.nginx_exe(), "-c", conf, "-p", prefix], None
    elif name == "varnish":
        # varnishd started as root runs its cache process as the varnish
        # users (-j unix), which must reach its working directory.
        os.chmod(prefix, 0o755)
        exe = shutil.which("varnishd") or "/usr/sbin/varnishd"
        if not os.path.exists(exe):
            shutil.rmtree(prefix, ignore_errors=True)
            raise RuntimeError("varnishd not found: apt-get install -y varnish")
        cmd = [exe, "-F", "-n", os.path.join(prefix, "varnish"), "-a", f"127.0.0.1:{port}",
               "-b", f"127.0.0.1:{origin_port}", "-s", "malloc,256m", "-p", "thread_pools=1"]
        env = None
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        raise SystemExit(f"unknown server {name}; known: {', '.join(SERVERS)} (ringside ones with suffixes)")
    return base.launch(cmd, env, port, prefix, cpu=0)


def tree_user_sys(pid):
    """(user, system) ticks of the process and its descendants."""
    parents = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    parents[int(p)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    user = system = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            u, s = base.cpu_ticks(p)
        except OSError:
            continue
        user, system = user + u, system + s
        todo += [c for c, pp in parents.items() if pp == p]
    return user, system


def is_static(name):
    kind = ringside_kind(name)
    return bool(kind) and kind[0] == "static"


def get(port, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/{path}")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers, r.read()


def hit_line(name, headers):
    """The head line that says this answer was a hit, or None."""
    if is_static(name):
        return "static file"
    if ringside_kind(name):
        v = headers.get("Cache-Status", "")
        return f"Cache-Status: {v}" if re.search(r";\s*hit\b", v) else None
    if name == "nginx-cache":
        v = headers.get("X-Cache-Status", "")
        return f"X-Cache-Status: {v}" if v == "HIT" else None
    if name == "varnish":
        v = headers.get("X-Varnish", "")
        return f"X-Varnish: {v}, Age: {headers.get('Age')}" if len(v.split()) == 2 else None
    return None


def warm(name, port, root, args):
    """One request per object, then the measured object once more, which
    must be its file's bytes and a hit: returns the line saying so."""
    for obj in OBJECTS:
        status, _, _ = get(port, obj)
        if status != 200:
            raise RuntimeError(f"/{obj}: status {status}")
    status, headers, body = get(port, args.file)
    with open(os.path.join(root, args.file), "rb") as f:
        want = f.read()
    if status != 200 or body != want:
        raise RuntimeError(f"/{args.file}: status {status}, {len(body)} bytes, not the file's {len(want)}")
    line = hit_line(name, headers)
    if line is None:
        head = " | ".join(f"{k}: {v}" for k, v in headers.items())
        raise RuntimeError(f"/{args.file} was not a hit on its third request: {head}")
    return line


def measure(name, root, args, origin_port):
    """One server, one round: (row, hit line)."""
    proc, port, prefix = start(name, root, args, origin_port)
    try:
        line = warm(name, port, root, args)
        url = f"http://127.0.0.1:{port}/{args.file}"
        w = subprocess.run(["taskset", "-c", "1"] + base.client_cmd(args, args.connections, 1, url),
                           capture_output=True, text=True)
        if (w.returncode != 0 or "Non-2xx" in w.stdout or "Socket errors" in w.stdout
                or re.search(r"Failed requests:\s+[1-9]", w.stdout)):
            raise RuntimeError(f"warm-up failed:\n{w.stdout}{w.stderr}")
        st0 = base.origin_status(origin_port)
        u0, s0 = tree_user_sys(proc.pid)
        reqs, _, client = base.run_wrk(port, args)
        u1, s1 = tree_user_sys(proc.pid)
        st1 = base.origin_status(origin_port)
    finally:
        base.stop(proc, prefix)
    if reqs == 0:
        raise RuntimeError("wrk completed no requests")
    # Less the second probe's own request.
    up_reqs = st1[2] - st0[2] - 1
    us = lambda t: t / base.TICK / reqs * 1e6
    row = (reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0),
           client / reqs * 1e6, up_reqs / reqs)
    if not is_static(name) and up_reqs > reqs / 100:
        raise RuntimeError(f"the origin served {up_reqs} of {reqs} requests: not a hit run")
    return row, line


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--file", default="26.txt",
                   help="the object: 26.txt, 11k.txt or 1m.bin (or 26, 11k, 1m)")
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--ringside-args", default="")
    p.add_argument("--ringside", default=None, metavar="EXE",
                   help="the ringside binary (default: this tree's target/release/ringside)")
    p.add_argument("--baseline", default=None, metavar="EXE",
                   help="another ringside binary, run as baseline-static and baseline-cache")
    p.add_argument("--nginx-sendfile", choices=("auto", "on", "off"), default="auto",
                   help="nginx-cache's sendfile; auto: on for 1m.bin, off for the small objects")
    p.add_argument("--client", choices=("wrk", "ringside-bench"), default="wrk",
                   help="the load generator on CPU 1 (default wrk -t1)")
    args = p.parse_args()
    args.file = ALIASES.get(args.file.lower(), args.file)
    if args.file not in OBJECTS:
        raise SystemExit(f"--file: one of {', '.join(OBJECTS)} (or {', '.join(ALIASES)})")
    args.fastcgi = False  # for cpu_per_request.run_wrk
    base.BASELINE = os.path.abspath(args.baseline) if args.baseline else None
    args.ringside = os.path.abspath(args.ringside) if args.ringside else None
    servers = args.servers.split(",")
    for name in servers:
        if not (ringside_kind(name) or name in SERVERS):
            raise SystemExit(f"unknown server {name}; known: {', '.join(SERVERS)}")
    results = {s: [] for s in servers}
    errors = {s: [] for s in servers}
    root = make_root()
    origin = None
    try:
        origin = start_origin(root)
        for rnd in range(1, args.rounds + 1):
            for name in servers:
                try:
                    row, line = measure(name, root, args, origin[1])
                except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                    msg = " ".join(str(e).split())
                    errors[name].append(msg)
                    print(f"round {rnd} {name:16s} FAILED: {msg}", flush=True)
                    continue
                results[name].append(row)
                if rnd == 1:
                    print(f"  {name}: /{args.file} {line}", flush=True)
                print(f"round {rnd} {name:16s} {row[0]:9.0f} req/s  cpu {row[1]:6.2f} us/req (user {row[2]:5.2f}, "
                      f"sys {row[3]:5.2f})  client {row[4]:6.2f} us/req  up req/req {row[5]:.4f}", flush=True)
    finally:
        if origin:
            base.stop(origin[0], origin[2])
        shutil.rmtree(root, ignore_errors=True)
    size = OBJECTS[args.file]
    size = f"{size} B" if size < 1024 else f"{size // 1024} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
    client = "wrk -t1" if args.client == "wrk" else "ringside-bench -k"
    print(f"\nmedians over {args.rounds} rounds, /{args.file} ({size}) hits, origin on CPU 1, "
          f"{client} -c{args.connections} -d{args.duration}s:")
    print(f"{'server':16s} {'req/s':>9s} {'cpu us/req':>11s} {'user':>7s} {'sys':>7s} {'client':>7s} "
          f"{'up req/req':>10s} {'x static':>8s}")
    meds = {}
    for name in servers:
        if results[name]:
            meds[name] = [statistics.median(r[i] for r in results[name]) for i in range(len(results[name][0]))]
    ref = next((meds[s][1] for s in servers if s in meds and is_static(s)), None)
    for name in servers:
        if name not in meds:
            print(f"{name:16s} failed: {errors[name][-1]}")
            continue
        med = meds[name]
        up = "-" if is_static(name) else f"{med[5]:.4f}"
        ratio = f"{med[1] / ref:.2f}" if ref else "-"
        line = (f"{name:16s} {med[0]:9.0f} {med[1]:11.2f} {med[2]:7.2f} {med[3]:7.2f} {med[4]:7.2f} "
                f"{up:>10s} {ratio:>8s}")
        if errors[name]:
            line += f"  ({len(results[name])} of {args.rounds} rounds; {len(errors[name])} failed)"
        print(line)
    return 1 if any(errors.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
