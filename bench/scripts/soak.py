#!/usr/bin/env python3
"""Soak: ringside under mixed load for a long while, watching RSS and fds.

One ringside under test (2 workers, access log and the admin listener on,
as in a real deployment) serves three routes, all on loopback:

  /static/  files from a temp dir: small ones (cached per core), a 768 KiB
            one (file -> socket without a copy) and, for aborts only, 8 MiB;
  /up/      a proxy route to an HTTP origin, a second ringside (1 worker,
            no admin, no log) serving the same kind of files;
  /php/     a FastCGI route to a real php-fpm (pm = static, TCP on
            loopback, its own config from deploy/bench/php-fpm.conf in a
            temp dir, scripts copied from proxy/tests/support/php).

For --duration seconds (default 600) it runs, all at once and at a moderate
open-loop rate (ringside-bench -R; the point is leaks, not throughput):

  static-ka / static-close   small, mid and large files, kept alive or a new
                             connection per request;
  proxy-ka / proxy-close     the same through the proxy route;
  fastcgi-ka / fastcgi-close hello.php, index.php, headers.php and a 16 KiB
                             POST to echo.php;

and, from Python threads, aborted requests:

  abort-head   connect, send nothing or part of a head, close (FIN or RST);
  abort-large  ask for a large body (a 768 KiB or 8 MiB static or proxied
               file, or 1 or 4 MiB from stream.php) with a small receive
               buffer, read 1-48 KiB of it, close with SO_LINGER 0 (RST);
  abort-post   start a POST with Content-Length 200000 (echo.php, or the
               proxy route), send 4-16 KiB of it, close (FIN or RST).

Every 10 s (and at the end of the warm-up) it samples ringside's VmRSS
(summed over its process and any children), its open fds (/proc/PID/fd,
split into sockets, pipes, files and other) and its /metrics gauges (open
client connections, upstream connections in flight and idle), prints one
line and appends a row to the CSV (--out; default a temp dir, kept).

Verdict, exit 1 if either fails:
  RSS  after the warm-up (--warmup, default 20% of the duration), the
       largest RSS seen is at most 1.05 x the RSS at the warm-up's end.
  fds  after the load stops and every client is closed, it waits (bounded,
       polling, no fixed sleeps) for the open-connection gauge to reach 0,
       for ringside to hold no TCP connection fd (its socket fds looked up
       in /proc/net/tcp; the same wait precedes the count before the load,
       so the readiness probe's connection is not in it) and for the
       upstream pools to drain (the upstreams' idle_timeout
       is --idle-timeout, default 5s, so that an idle pooled connection,
       which is not a leak, goes away within a bounded wait), then for the
       fd count to come back to the count measured before the load. Every
       kind of fd (sockets, files, other) must equal its count before the
       load, except pipes: each worker keeps up to 16 empty spare pipes for
       splice (runtime/src/fs.rs, pipes::give) and never shrinks that pool,
       so pipes may exceed their count before by at most 2 x 16 x workers
       fds. The summary says how many there were.

A Markdown summary (RSS at start / end of warm-up / max after / end, and
the anon RSS growth after the warm-up per accepted connection and per
request; fds before / peak / after; the access log's lines by status;
requests and errors per kind) is printed at the end. The temp dir keeps
the config, the logs, ringside-bench's JSON reports and the CSV; the served
files and the access log (tens of MB) are removed.

Binaries: target/release/ringside and ringside-bench; when either is
missing the script runs `cargo build --release -p ringside -p ringside-bench`
(and builds nothing otherwise). php-fpm: /usr/sbin/php-fpm8.2, else any
/usr/sbin/php-fpm* or one on PATH (scripts/test.sh installs it).

Placement (as in cpu_per_request.py): ringside's two workers are pinned to
the first two allowed CPUs by its own cpu_affinity; the origin, php-fpm and
the load generators run pinned to the last allowed CPU.

Every process it starts is stopped by pid at the end, on errors and on
Ctrl-C/SIGTERM too, and also gets PR_SET_PDEATHSIG so it dies with this
script if the script is killed outright.

The RSS verdict wants the full length. RSS still settles in steps of
~150-200 KiB (the allocator) for a few minutes: with the accept-loop waker
leak capped in a scratch build, 600 s with 120 s of warm-up passed (+4.6%,
flat from 270 s on) while 300 s with 60 s of warm-up did not (+10%). A
short run (--duration 60 --warmup 15) checks the machinery and the fds.

usage: soak.py [--duration 600] [--warmup SECONDS] [--out FILE.csv]
               [--rate-scale 1.0] [--abort-rate 5] [--interval 10]
               [--fpm-children 6] [--idle-timeout 5]
quick check: soak.py --duration 60 --warmup 15
"""
import argparse
import csv
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
RELEASE = os.path.join(REPO, "target", "release")
PHP_SUPPORT = os.path.join(REPO, "proxy", "tests", "support", "php")
FPM_TEMPLATE = os.path.join(REPO, "deploy", "bench", "php-fpm.conf")

WORKERS = 2
SPARE_PIPES_PER_WORKER = 16  # runtime/src/fs.rs: pipes::give keeps 16 at most
RSS_LIMIT = 1.05

SMALL = b"hello from the ringside soak\n"
FILES = {  # name under static/ (and in the origin's root): size in bytes
    "small.txt": len(SMALL),
    "page.html": 4 << 10,
    "mid.bin": 48 << 10,  # below cache_max_file (64k): cached per core
    "big.bin": 768 << 10,  # above it: spliced file -> pipe -> socket
    # Only for abort-large: larger than what the kernel's socket buffers
    # take at once, so that the reset lands while ringside is still sending.
    "huge.bin": 8 << 20,
}
PHP_SCRIPTS = ("hello.php", "index.php", "headers.php", "echo.php", "stream.php")


# ---------------------------------------------------------------- processes

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child_setup():
    # Runs in the child between fork and exec. Default SIGINT and SIGTERM
    # (a shell may have started this script with them ignored, which the
    # child would inherit), and SIGTERM the child if this script dies (the
    # flag survives the exec of taskset and of the program).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Procs:
    """Everything this script started, stopped by pid: the load generators
    first (tier 0), then ringside (1), then its origin and php-fpm (2)."""

    def __init__(self):
        self.items = []  # (name, Popen, tier)

    def start(self, name, cmd, stdout, stderr, env=None, tier=2):
        # A session of its own: Ctrl-C reaches this script only, which then
        # stops each child itself, in order.
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_child_setup)
        self.items.append((name, proc, tier))
        return proc

    def stop(self, *procs, timeout=15):
        """SIGTERMs the given processes by pid, then waits for each; kills
        one that lingers. Returns the exit status of the last."""
        names = {id(p): n for n, p, _ in self.items}
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.terminate()
                except ProcessLookupError:
                    pass
        end = time.monotonic() + timeout
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"{names.get(id(proc), proc.args[0])} (pid {proc.pid}) did not stop in {timeout}s: "
                      f"killing it", flush=True)
                proc.kill()
                proc.wait()
        return procs[-1].returncode if procs else None

    def stop_all(self):
        for tier in (0, 1, 2):
            group = [p for _, p, t in self.items if t == tier and p.returncode is None]
            if group:
                self.stop(*group, timeout=40 if tier == 1 else 15)


def wait_port(port, proc, what, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what}: port {port} never opened")


def tail(path, n=800):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:].strip()
    except OSError:
        return ""


def binaries():
    exes = [os.path.join(RELEASE, n) for n in ("ringside", "ringside-bench")]
    if not all(os.access(e, os.X_OK) for e in exes):
        print("building: cargo build --release -p ringside -p ringside-bench", flush=True)
        subprocess.run(["cargo", "build", "--release", "-p", "ringside", "-p", "ringside-bench"],
                       cwd=REPO, check=True)
    return exes


def fpm_exe():
    """Debian's php-fpm8.2, else any /usr/sbin/php-fpm*, else one on PATH."""
    if os.path.exists("/usr/sbin/php-fpm8.2"):
        return "/usr/sbin/php-fpm8.2"
    for d in ["/usr/sbin"] + os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isdir(d):
            found = sorted(f for f in os.listdir(d) if f.startswith("php-fpm"))
            if found:
                return os.path.join(d, found[-1])
    raise SystemExit("php-fpm is needed (scripts/test.sh installs it)")


def start_fpm(procs, tmp, children, cpu):
    """php-fpm on a loopback TCP port, ready when its master says so.
    php-fpm cannot listen on port 0; a port taken in the meantime is tried
    again with another one."""
    prefix = os.path.join(tmp, "fpm")
    os.makedirs(prefix)
    root = os.geteuid() == 0
    with open(FPM_TEMPLATE) as f:
        template = f.read()
    for _attempt in range(3):
        port = free_port()
        text = (template.replace("@PREFIX@", prefix).replace("@LISTEN@", f"127.0.0.1:{port}")
                .replace("@CHILDREN@", str(children))
                .replace("@USERLINES@", "user = root\ngroup = root" if root else ""))
        conf = os.path.join(prefix, "php-fpm.conf")
        with open(conf, "w") as f:
            f.write(text)
        log = os.path.join(prefix, "php-fpm.log")
        if os.path.exists(log):
            os.unlink(log)
        errpath = os.path.join(prefix, "stderr.log")
        with open(errpath, "wb") as err:
            proc = procs.start("php-fpm", ["taskset", "-c", str(cpu), fpm_exe(), "-F", "-y", conf]
                               + (["-R"] if root else []), subprocess.DEVNULL, err)
        end = time.time() + 10
        while True:
            text = tail(log, 100000)
            if "ready to handle connections" in text:
                return proc, port
            if proc.poll() is not None or time.time() > end:
                procs.stop(proc)
                break
            time.sleep(0.02)
        if "Address already in use" not in text:
            raise RuntimeError(f"php-fpm did not start: {text[-500:]} {tail(errpath, 500)}")
    raise RuntimeError("php-fpm: no free port after 3 tries")


def make_files(root):
    os.makedirs(root, exist_ok=True)
    rnd = random.Random(42)
    for name, size in FILES.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(SMALL if name == "small.txt" else rnd.randbytes(size))


def write_config(tmp, port, admin_port, origin_port, fpm_port, fpm_children, idle_timeout):
    www = os.path.join(tmp, "www")
    make_files(os.path.join(www, "static"))
    os.makedirs(os.path.join(www, "php"))
    for name in PHP_SCRIPTS:
        shutil.copy(os.path.join(PHP_SUPPORT, name), os.path.join(www, "php", name))
    conf = os.path.join(tmp, "ringside.toml")
    text = f"""# ringside under test, written by bench/scripts/soak.py
[runtime]
workers = {WORKERS}
cpu_affinity = true
backend = "auto"

[server]
listen = ["127.0.0.1:{port}"]
root = "{www}"
pid_file = "{tmp}/ringside.pid"

[admin]
listen = "127.0.0.1:{admin_port}"

[access_log]
path = "{tmp}/access.log"
format = "combined"

[[route]]
prefix = "/static/"
root = "{www}"
cache_control = "max-age=60"

[upstream.origin]
servers = ["127.0.0.1:{origin_port}"]
idle_timeout = "{idle_timeout}s"

[[route]]
prefix = "/up/"
upstream = "origin"
strip_prefix = true

[upstream.php]
protocol = "fastcgi"
servers = ["127.0.0.1:{fpm_port}"]
max_conns = {fpm_children}
idle_timeout = "{idle_timeout}s"

[[route]]
prefix = "/php/"
upstream = "php"
root = "{www}"
"""
    with open(conf, "w") as f:
        f.write(text)
    return conf


def start_ringside(procs, exe, tmp, name, cmd_tail, port, cpu=None):
    errpath = os.path.join(tmp, f"{name}.stderr.log")
    env = dict(os.environ, RUST_LOG="warn")
    cmd = ([] if cpu is None else ["taskset", "-c", str(cpu)]) + [exe] + cmd_tail
    with open(errpath, "wb") as err:
        proc = procs.start(name, cmd, subprocess.DEVNULL, err, env=env, tier=1 if name == "ringside" else 2)
    try:
        wait_port(port, proc, name)
    except RuntimeError as e:
        raise RuntimeError(f"{e}: {tail(errpath)}")
    return proc, errpath


# ---------------------------------------------------------------- sampling

def rss_kib(pid, field="VmRSS"):
    """VmRSS (or RssAnon, RssFile) of pid and of its child processes, if any."""
    pids = [pid]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == str(pid):
                        pids.append(int(p))
            except (OSError, IndexError):
                pass
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def fds(pid):
    """Open fds by kind: {'socket': n, 'pipe': n, 'file': n, 'other': n}."""
    kinds = {"socket": 0, "pipe": 0, "file": 0, "other": 0}
    d = f"/proc/{pid}/fd"
    for fd in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, fd))
        except OSError:
            continue  # closed while we looked
        if target.startswith("socket:"):
            kinds["socket"] += 1
        elif target.startswith("pipe:"):
            kinds["pipe"] += 1
        elif target.startswith("/"):
            kinds["file"] += 1
        else:
            kinds["other"] += 1  # anon_inode: io_uring, eventfd, epoll...
    return kinds


def fd_listing(pid):
    out = {}
    d = f"/proc/{pid}/fd"
    for fd in os.listdir(d):
        try:
            out[int(fd)] = os.readlink(os.path.join(d, fd))
        except OSError:
            pass
    return out


def socket_table():
    """socket inode: 'tcp LOCAL -> REMOTE STATE' from /proc/net/{tcp,tcp6}."""
    states = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}

    def addr(a):
        host, port = a.split(":")
        if len(host) == 8:
            host = socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(host, 16)))
        return f"{host}:{int(port, 16)}"
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/net/{name}") as f:
                for line in list(f)[1:]:
                    c = line.split()
                    out[c[9]] = f"{name} {addr(c[1])} -> {addr(c[2])} {states.get(c[3], c[3])}"
        except OSError:
            pass
    return out


def tcp_conns(pid):
    """ringside's fds that are TCP sockets other than listeners: client and
    upstream connections, whatever the gauges say (an fd outlives its
    connection's gauge until the close completes)."""
    table = socket_table()
    n = 0
    for target in fd_listing(pid).values():
        if target.startswith("socket:["):
            entry = table.get(target[len("socket:["):-1])
            if entry and not entry.endswith("LISTEN"):
                n += 1
    return n


def metrics(admin_port):
    """/metrics summed per family name; None if it cannot be fetched."""
    req = urllib.request.Request(f"http://127.0.0.1:{admin_port}/metrics", headers={"Connection": "close"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    sums = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        try:
            sums[name] = sums.get(name, 0.0) + float(value)
        except ValueError:
            pass
    return sums


def upstream_conns(m, kind):
    return int(m.get(f"ringside_upstream_{kind}_connections", 0)) if m else None


CSV_FIELDS = ["t_s", "phase", "rss_kib", "rss_anon_kib", "rss_file_kib",
              "fds", "fd_socket", "fd_pipe", "fd_file", "fd_other", "tcp_conns", "threads",
              "open_conns", "accepted_total", "requests_total", "upstream_active", "upstream_idle"]


class Sampler:
    def __init__(self, pid, admin_port, out):
        self.pid, self.admin_port = pid, admin_port
        self.rows = []
        self.f = open(out, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=CSV_FIELDS)
        self.w.writeheader()
        self.last = None

    def sample(self, t, phase, quiet=False):
        m = metrics(self.admin_port)
        k = fds(self.pid)
        row = {
            "t_s": round(t, 1), "phase": phase, "rss_kib": rss_kib(self.pid),
            "rss_anon_kib": rss_kib(self.pid, "RssAnon"), "rss_file_kib": rss_kib(self.pid, "RssFile"),
            "fds": sum(k.values()), "fd_socket": k["socket"], "fd_pipe": k["pipe"],
            "fd_file": k["file"], "fd_other": k["other"], "tcp_conns": tcp_conns(self.pid),
            "threads": threads(self.pid),
            "open_conns": int(m.get("ringside_open_connections", 0)) if m else "",
            "accepted_total": int(m.get("ringside_accepted_connections_total", 0)) if m else "",
            "requests_total": int(m.get("ringside_requests_total", 0)) if m else "",
            "upstream_active": upstream_conns(m, "active") if m else "",
            "upstream_idle": upstream_conns(m, "idle") if m else "",
        }
        self.w.writerow(row)
        self.f.flush()
        self.rows.append(row)
        if not quiet:
            rate = ""
            if phase in ("warmup", "load") and self.last and m and self.last["requests_total"] != "":
                rate = f"{(row['requests_total'] - self.last['requests_total']) / (t - self.last['t_s']):6.0f} req/s"
            print(f"t={t:6.1f}s {phase:7s} rss {row['rss_kib']:6d} KiB (anon {row['rss_anon_kib']}, "
                  f"file {row['rss_file_kib']})  fds {row['fds']:3d} "
                  f"(sock {k['socket']}: tcp {row['tcp_conns']}; pipe {k['pipe']}, file {k['file']}, "
                  f"other {k['other']})  open {row['open_conns']}  "
                  f"up act/idle {row['upstream_active']}/{row['upstream_idle']}  {rate}", flush=True)
        self.last = row
        return row, m

    def close(self):
        self.f.close()


# ---------------------------------------------------------------- load

def bench_kinds(port, tmp, scale):
    """name: (keep-alive, concurrency, rate/s, URL-file lines)."""
    base = f"http://127.0.0.1:{port}"
    post = os.path.join(tmp, "post16k.bin")
    with open(post, "wb") as f:
        f.write(os.urandom(16 << 10))
    static = [f"{base}/static/small.txt"] * 3 + [f"{base}/static/page.html", f"{base}/static/mid.bin",
                                                 f"{base}/static/big.bin"]
    proxy = [f"{base}/up/small.txt"] * 3 + [f"{base}/up/page.html", f"{base}/up/mid.bin", f"{base}/up/big.bin"]
    php = [f"{base}/php/hello.php", f"{base}/php/hello.php", f"{base}/php/", f"{base}/php/headers.php?x=1",
           f"{base}/php/echo.php POST <{post}"]
    kinds = {
        "static-ka": (True, 8, 150, static),
        "static-close": (False, 4, 40, static),
        "proxy-ka": (True, 8, 100, proxy),
        "proxy-close": (False, 4, 40, proxy),
        "fastcgi-ka": (True, 4, 40, php),
        "fastcgi-close": (False, 2, 20, php),
    }
    return {k: (ka, c, max(1.0, r * scale), urls) for k, (ka, c, r, urls) in kinds.items()}


def start_bench(procs, exe, tmp, name, spec, duration, cpu):
    ka, conc, rate, urls = spec
    ufile = os.path.join(tmp, f"{name}.urls")
    with open(ufile, "w") as f:
        f.write("\n".join(urls) + "\n")
    cmd = ["taskset", "-c", str(cpu), exe, "-q", "--progress", "none", "--json", "-l",
           "-c", str(conc), "-R", f"{rate:g}", "-d", f"{duration}s", "-s", "30", "-f", ufile]
    if ka:
        cmd.insert(4, "-k")
    out = open(os.path.join(tmp, f"{name}.json"), "wb")
    err = open(os.path.join(tmp, f"{name}.stderr"), "wb")
    proc = procs.start(name, cmd, out, err, tier=0)
    out.close()
    err.close()
    return proc


def bench_result(tmp, name, rc):
    """(requests done, errors, note) from ringside-bench's --json."""
    try:
        with open(os.path.join(tmp, f"{name}.json")) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return 0, 1, f"no report (exit {rc}): {tail(os.path.join(tmp, f'{name}.stderr'), 300)}"
    c = j["counts"]
    errors = j["failed_requests"] + c["non_2xx"]
    notes = [f"{k} {c[k]}" for k in ("failed_connect", "failed_receive", "failed_length", "failed_exception",
                                     "timeouts", "resets", "write_errors", "non_2xx") if c.get(k)]
    return j["complete_requests"] - c["non_2xx"], errors, ", ".join(notes)


class Aborts:
    """The aborted requests, one thread per kind, each at `rate` per second."""

    KINDS = ("abort-head", "abort-large", "abort-post")

    def __init__(self, port, rate):
        self.addr = ("127.0.0.1", port)
        self.rate = rate
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.done = {k: 0 for k in self.KINDS}
        self.errors = {k: 0 for k in self.KINDS}
        self.last_error = {}
        self.threads = []
        self.rnd = random.Random(7)

    def count(self, kind, err=None):
        with self.lock:
            if err is None:
                self.done[kind] += 1
            else:
                self.errors[kind] += 1
                self.last_error[kind] = err

    def start(self):
        for kind, fn in zip(self.KINDS, (self.head, self.large, self.post)):
            t = threading.Thread(target=self.loop, args=(kind, fn), name=kind, daemon=True)
            t.start()
            self.threads.append(t)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def loop(self, kind, fn):
        gap = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.stop.is_set():
            try:
                fn()
                self.count(kind)
            except Exception as e:  # noqa: BLE001 - every failure is counted
                self.count(kind, f"{type(e).__name__}: {e}")
            next_at += gap
            delay = next_at - time.monotonic()
            if delay > 0:
                self.stop.wait(delay)
            else:
                next_at = time.monotonic()

    @staticmethod
    def close(s, rst):
        if rst:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()

    def head(self):
        """Nothing, or part of a head, then FIN or RST."""
        part = self.rnd.choice([
            b"",
            b"GET /static/sm",
            b"GET /static/small.txt HTTP/1.1\r\nHost: soak\r\nUser-Ag",
            b"GET /up/small.txt HTTP/1.1\r\nHost: soak\r\n",
            b"POST /php/echo.php HTTP/1.1\r\nHost: soak\r\nContent-Le",
        ])
        s = socket.create_connection(self.addr, timeout=5)
        try:
            if part:
                s.sendall(part)
            if self.rnd.random() < 0.5:
                time.sleep(self.rnd.random() * 0.05)
        finally:
            self.close(s, self.rnd.random() < 0.5)

    def large(self):
        """A large body, a little of it read, then RST mid-body."""
        path = self.rnd.choice(["/static/big.bin", "/static/huge.bin", "/up/big.bin", "/up/huge.bin",
                                "/php/stream.php?mb=1", "/php/stream.php?mb=4"])
        s = socket.socket()
        # A small receive window, so the server is still sending when we go.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        s.settimeout(10)
        try:
            s.connect(self.addr)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: soak\r\n\r\n".encode())
            got = b""
            want = self.rnd.randint(1, 48) << 10
            while len(got) < want:
                more = s.recv(65536)
                if not more:
                    raise RuntimeError(f"{path}: closed after {len(got)} bytes")
                got += more
            if not got.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"{path}: {got[:40]!r}")
        finally:
            self.close(s, True)

    def post(self):
        """A POST body of 200000 bytes announced, 4-16 KiB of it sent."""
        path = self.rnd.choice(["/php/echo.php", "/php/echo.php", "/up/small.txt"])
        s = socket.create_connection(self.addr, timeout=5)
        try:
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: soak\r\nContent-Type: application/octet-stream\r\n"
                      f"Content-Length: 200000\r\n\r\n".encode())
            try:
                s.sendall(os.urandom(self.rnd.randint(4, 16) << 10))
            except OSError:
                pass  # the server may answer (405 through the proxy) and close first
            if self.rnd.random() < 0.5:
                time.sleep(self.rnd.random() * 0.05)
        finally:
            self.close(s, self.rnd.random() < 0.5)


# ---------------------------------------------------------------- the run

def wait_until(what, check, timeout, poll=0.2):
    """Polls check() until it returns true; (ok, seconds waited)."""
    t0 = time.monotonic()
    while True:
        if check():
            return True, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            print(f"gave up waiting for {what} after {timeout:.0f}s", flush=True)
            return False, time.monotonic() - t0
        time.sleep(poll)


def fd_ok(before, now, pipe_slack):
    return (all(now[k] == before[k] for k in ("socket", "file", "other"))
            and before["pipe"] <= now["pipe"] <= before["pipe"] + pipe_slack)


def access_log_classes(path):
    """Lines of the access log (combined format) by status, summed per
    class, with 499 (client gone) apart."""
    counts = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    status = line.split('"', 2)[2].split()[0]
                except IndexError:
                    status = "?"
                key = "499" if status == "499" else (status[0] + "xx" if status[:1].isdigit() else "?")
                counts[key] = counts.get(key, 0) + 1
    except OSError:
        pass
    return counts


def summary(r):
    """The Markdown summary and whether every check passed."""
    args, rows, warm_row, start_row, end_row = r["args"], r["rows"], r["warm_row"], r["start_row"], r["end_row"]
    if warm_row is None:
        warm_row = max((x for x in rows if x["phase"] == "warmup"), key=lambda x: x["t_s"])
    after_warm = [x for x in rows if x["t_s"] > warm_row["t_s"]]
    max_rss = max(x["rss_kib"] for x in after_warm)
    max_anon = max(x["rss_anon_kib"] for x in after_warm)
    rss_limit = RSS_LIMIT * warm_row["rss_kib"]
    rss_pass = max_rss <= rss_limit
    fd_before, fd_after, slack = r["fd_before"], r["fd_after"], r["pipe_slack"]
    pooled_pipes = fd_after["pipe"] - fd_before["pipe"]
    load_rows = [x for x in after_warm if x["phase"] == "load" and x["accepted_total"] != ""]

    def mib(k):
        return f"{k / 1024:.1f} MiB"

    def fmt(d):
        return f"{sum(d.values())} (sock {d['socket']}, pipe {d['pipe']}, file {d['file']}, other {d['other']})"

    lines = [f"**ringside soak**: {args.duration} s of mixed load, warm-up {r['warmup']} s, {WORKERS} workers, "
             f"access log and /metrics on; {len(rows)} samples every {args.interval:g} s.", "",
             "| figure | value | check |", "|---|---|---|"]
    add = lambda *cells: lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    growth = (max_rss / warm_row["rss_kib"] - 1) * 100
    add("RSS at start (before load)", f"{mib(start_row['rss_kib'])} (anon {mib(start_row['rss_anon_kib'])})", "")
    add(f"RSS at end of warm-up (t={warm_row['t_s']:.0f} s)",
        f"{mib(warm_row['rss_kib'])} (anon {mib(warm_row['rss_anon_kib'])})", "")
    add("RSS max after warm-up", f"{mib(max_rss)} ({growth:+.1f}%; anon max {mib(max_anon)})",
        f"{'pass' if rss_pass else 'FAIL'}: limit {mib(rss_limit)} (+5%)")
    add("RSS at end (drained)", f"{mib(end_row['rss_kib'])} (anon {mib(end_row['rss_anon_kib'])})", "")
    if load_rows:
        last = load_rows[-1]
        d_kib = last["rss_anon_kib"] - warm_row["rss_anon_kib"]
        d_conn = last["accepted_total"] - warm_row["accepted_total"]
        d_req = last["requests_total"] - warm_row["requests_total"]
        add("anon RSS growth after warm-up", f"{d_kib:+d} KiB over {d_conn} accepted connections "
            f"({d_kib * 1024 / max(1, d_conn):.1f} B each) and {d_req} requests "
            f"({d_kib * 1024 / max(1, d_req):.1f} B each)", "")
    add("fds before load", fmt(fd_before), "")
    add("fds peak", max(x["fds"] for x in rows), "")
    why = "" if r["conns_ok"] else "; connections did not drain"
    add(f"fds after (drained in {r['waited'][0]:.1f} s + {r['waited'][1]:.1f} s)", fmt(fd_after),
        f"{'pass' if r['fd_pass'] else 'FAIL'}: sockets, files, other equal; {pooled_pipes} pipe fds more = "
        f"{pooled_pipes // 2} spare pipes pooled (at most {slack // 2}){why}")
    add("open connections / upstream active, idle after",
        f"{end_row['open_conns']} / {end_row['upstream_active']}, {end_row['upstream_idle']}", "")
    add("threads (start / end)", f"{start_row['threads']} / {end_row['threads']}", "")
    log = tail(r["server_log"], 10 ** 9).splitlines()
    add("ringside log: warnings / errors; exit status on SIGTERM",
        f"{sum('WARN' in x for x in log)} / {sum('ERROR' in x for x in log)}; {r['server_rc']}", "")
    classes = access_log_classes(r["access_log"])
    add("access log lines", f"{sum(classes.values())} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())) + ")", "")
    lines += ["", "| kind | rate | requests done | errors | notes |", "|---|---|---:|---:|---|"]
    total_done = total_err = 0
    for name, (ka, conc, rate, _urls) in r["kinds"].items():
        done, errs, note = r["results"][name]
        total_done, total_err = total_done + done, total_err + errs
        add(name, f"{rate:g}/s, -c{conc}{' -k' if ka else ''}", done, errs, note)
    ab = r["aborts"]
    for kind in Aborts.KINDS:
        total_done, total_err = total_done + ab.done[kind], total_err + ab.errors[kind]
        add(kind, f"{args.abort_rate:g}/s", ab.done[kind], ab.errors[kind], ab.last_error.get(kind, ""))
    add("**total**", "", total_done, total_err, "")
    m = r["end_m"]
    if m:
        lines += ["", f"ringside counted {int(m.get('ringside_requests_total', 0))} requests and "
                  f"{int(m.get('ringside_accepted_connections_total', 0))} accepted connections; upstream "
                  f"connections opened {int(m.get('ringside_upstream_connections_opened_total', 0))}, "
                  f"reused {int(m.get('ringside_upstream_connection_reuses_total', 0))}, "
                  f"failures {int(m.get('ringside_upstream_failures_total', 0))}."]
    ok = rss_pass and r["fd_pass"]
    lines += ["", f"Verdict: **{'PASS' if ok else 'FAIL'}** (RSS {'pass' if rss_pass else 'FAIL'}, "
              f"fds {'pass' if r['fd_pass'] else 'FAIL'}). Samples: `{r['out']}`."]
    return "\n".join(lines), ok


def main():
    p = argparse.ArgumentParser(description="Mixed-load soak of ringside: RSS and fd leaks.")
    p.add_argument("--duration", type=int, default=600, help="seconds of load (default 600)")
    p.add_argument("--warmup", type=int, default=None, help="seconds of warm-up (default 20%% of --duration)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples (default 10)")
    p.add_argument("--out", default=None, help="CSV of the samples (default: a temp dir, kept)")
    p.add_argument("--rate-scale", type=float, default=1.0, help="multiply every client rate (default 1)")
    p.add_argument("--abort-rate", type=float, default=5.0, help="aborted requests per second per kind (default 5)")
    p.add_argument("--fpm-children", type=int, default=6, help="php-fpm pm.max_children = max_conns (default 6)")
    p.add_argument("--idle-timeout", type=int, default=5, help="upstreams' idle_timeout in seconds (default 5)")
    args = p.parse_args()
    if args.duration < 10:
        raise SystemExit("--duration must be at least 10 seconds")
    warmup = args.warmup if args.warmup is not None else args.duration // 5
    if not 0 < warmup < args.duration:
        raise SystemExit("--warmup must be between 0 and --duration")

    ringside, bench = binaries()
    cpus = sorted(os.sched_getaffinity(0))
    side_cpu = cpus[-1]  # origin, php-fpm, load generators

    tmp = tempfile.mkdtemp(prefix="ringside-soak-")
    out = os.path.abspath(args.out) if args.out else os.path.join(tmp, "soak.csv")
    procs = Procs()

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)  # even if started with SIGINT ignored

    aborts = None
    sampler = None
    failed = True
    try:
        # The origin: a second ringside serving the same files.
        origin_root = os.path.join(tmp, "origin")
        make_files(origin_root)
        origin_port = free_port()
        start_ringside(procs, ringside, tmp, "origin",
                       ["--workers", "1", "--listen", f"127.0.0.1:{origin_port}", "--root", origin_root,
                        "--admin", "off"], origin_port, cpu=side_cpu)
        fpm, fpm_port = start_fpm(procs, tmp, args.fpm_children, side_cpu)
        port, admin_port = free_port(), free_port()
        conf = write_config(tmp, port, admin_port, origin_port, fpm_port, args.fpm_children, args.idle_timeout)
        check = subprocess.run([ringside, "check", conf], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"ringside check {conf}: {check.stdout}{check.stderr}")
        server, server_log = start_ringside(procs, ringside, tmp, "ringside", ["--config", conf], port)
        ok, _ = wait_until("the admin listener", lambda: metrics(admin_port) is not None, 10)
        if not ok:
            raise RuntimeError(f"no /metrics on {admin_port}: {tail(server_log)}")
        pid = server.pid
        pipe_slack = 2 * SPARE_PIPES_PER_WORKER * WORKERS
        print(f"ringside pid {pid} on 127.0.0.1:{port} (admin {admin_port}), origin :{origin_port}, "
              f"php-fpm :{fpm_port} ({args.fpm_children} children, pid {fpm.pid}); "
              f"load for {args.duration}s, warm-up {warmup}s; samples: {out}", flush=True)

        # The readiness probe's connection must be gone before the count.
        def no_conns():
            m = metrics(admin_port)
            return (m is not None and int(m.get("ringside_open_connections", -1)) == 0
                    and tcp_conns(pid) == 0)
        wait_until("the readiness probe's connection to close", no_conns, 10)
        sampler = Sampler(pid, admin_port, out)
        fd_before = fds(pid)
        listing_before = fd_listing(pid)
        start_row, _ = sampler.sample(0.0, "before")

        kinds = bench_kinds(port, tmp, args.rate_scale)
        t0 = time.monotonic()
        loaders = {name: start_bench(procs, bench, tmp, name, spec, args.duration, side_cpu)
                   for name, spec in kinds.items()}
        aborts = Aborts(port, args.abort_rate)
        aborts.start()

        # Samples every interval, and one at the end of the warm-up.
        times = [i * args.interval for i in range(1, int(args.duration / args.interval) + 1)]
        times = sorted(set(times + [float(warmup)]))
        times = [t for t in times if t <= args.duration]
        warm_row = None
        for t in times:
            delay = t0 + t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for name, proc in loaders.items():
                if proc.poll() is not None and time.monotonic() - t0 < args.duration - 5:
                    raise RuntimeError(f"{name} stopped early ({proc.returncode}): "
                                       f"{tail(os.path.join(tmp, name + '.stderr'), 300)}")
            if server.poll() is not None:
                raise RuntimeError(f"ringside exited ({server.returncode}): {tail(server_log)}")
            row, _ = sampler.sample(time.monotonic() - t0, "warmup" if t <= warmup else "load")
            if t == warmup:
                warm_row = row

        # The load stops: the Python clients first, then ringside-bench ends
        # on its own at --duration (bounded here by its request timeout).
        aborts.finish()
        results = {}
        for name, proc in loaders.items():
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                rc = procs.stop(proc)  # past its own end and timeout: stuck
            results[name] = bench_result(tmp, name, rc)

        # Drained: no client connection open, and the upstream pools empty
        # (idle_timeout plus the once-a-second reaper).
        def drained():
            m = metrics(admin_port)
            return (no_conns() and m is not None
                    and upstream_conns(m, "active") == 0 and upstream_conns(m, "idle") == 0)
        conns_ok, waited_conns = wait_until("open connections and upstream pools to drain", drained,
                                            args.idle_timeout + 30)
        fd_now = {}

        def fds_back():
            fd_now.update(fds(pid))
            return fd_ok(fd_before, fd_now, pipe_slack)
        _, waited_fds = wait_until("the fd count to come back", fds_back, 10)
        end_row, end_m = sampler.sample(time.monotonic() - t0, "after")
        fd_after = {k: end_row[f"fd_{k}"] for k in ("socket", "pipe", "file", "other")}
        fd_pass = conns_ok and fd_ok(fd_before, fd_after, pipe_slack)
        if not fd_pass:
            listing_after = fd_listing(pid)
            new = {fd: t for fd, t in listing_after.items() if listing_before.get(fd) != t}
            print("fds open now that were not before the load:", flush=True)
            socks = socket_table()
            for fd, target in sorted(new.items())[:40]:
                inode = target[len("socket:["):-1] if target.startswith("socket:[") else None
                print(f"  {fd}: {target} {socks.get(inode, '') if inode else ''}", flush=True)

        # ringside drains and exits 0 on SIGTERM (and flushes its log).
        server_rc = procs.stop(server, timeout=40)
        report = dict(args=args, warmup=warmup, rows=sampler.rows, start_row=start_row,
                      warm_row=warm_row, end_row=end_row, end_m=end_m, fd_before=fd_before,
                      fd_after=fd_after, fd_pass=fd_pass, conns_ok=conns_ok, waited=(waited_conns, waited_fds),
                      pipe_slack=pipe_slack, server_rc=server_rc, server_log=server_log,
                      access_log=os.path.join(tmp, "access.log"), kinds=kinds, results=results,
                      aborts=aborts, out=out)
        text, ok = summary(report)
        print("\n" + text, flush=True)
        failed = not ok
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e or 'Ctrl-C'}): stopping everything", flush=True)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"soak failed: {e}", flush=True)
    finally:
        # A second Ctrl-C or SIGTERM must not cut the clean-up short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if aborts:
            aborts.stop.set()
        procs.stop_all()
        if sampler:
            sampler.close()
        # Keep the samples, the config and the logs; drop the served files
        # and the access log (tens of MB; counted in the summary).
        for d in ("www", "origin"):
            shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
        for f in ("post16k.bin", "access.log"):
            try:
                os.unlink(os.path.join(tmp, f))
            except OSError:
                pass
        print(f"config, logs and samples kept in {tmp}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
