#!/usr/bin/env python3
"""Server CPU per request, ringside against real peers, measured the house way.

Each server runs with one worker pinned to CPU 0; wrk runs pinned to CPU 1.
Servers take turns, round after round, in one run. For each run the server
process's utime+stime delta (/proc/PID/stat, all threads) is divided by the
requests wrk completed. Medians over the rounds are printed at the end.
Beside it, "client" is wrk's own CPU (user+system, from wait4) per request:
where it nears 1e6 / req/s, wrk's CPU was full and set the pace (large
files: wrk copies every byte in 8 KiB reads, and pays for any TCP sending
that the server leaves to be triggered by wrk's ACKs). --client
ringside-bench puts this repository's load generator (one core, keep-alive,
64 KiB reads) in wrk's place, for static and proxy runs: on large files it
costs the client less, so that the server is the one to saturate.

usage: cpu_per_request.py [--rounds 3] [--duration 10] [--connections 50]
                          [--file hello.txt] [--servers ringside,nginx,lighttpd]
                          [--ringside-args "..."] [--root DIR] [--proxy]
                          [--client wrk|ringside-bench]
                          [--fastcgi [--fpm-children 16] [--fpm-pm static|dynamic]]

A ringside server may be named ringside[:BACKEND][@SETUP][+VAR=VALUE] to
compare backends (ringside:epoll), io_uring ring setups (ringside@defer,
@none, @coop), an environment switch, or a flag (ringside+--coalesce-wait=0),
all in the same run. With --baseline EXE, a server named "baseline" (with
the same suffixes) runs that ringside binary instead of this tree's: a build
of another commit, to compare a change side by side in one run. The server "floor" (bench/src/bin/ringside-floor.rs)
answers fixed bytes without parsing, or with --proxy relays bytes both ways
without HTTP: the kernel's share of a request, below which no server goes.

--proxy measures reverse proxies instead of static serving: one nginx origin
(deploy/bench/nginx-origin.conf, answering "hello from origin\n" on every
path) runs pinned to CPU 1 beside wrk for the whole run, and each server under
test (default ringside,nginx,haproxy) proxies to it from CPU 0. Only the
proxy's own CPU time is counted. The origin's stub_status also says how many
connections it accepted while wrk ran ("up conns") and how many were open at
the end ("up open": the proxy's upstream pool). A pooling proxy shows 0 to a
few dozen up conns: when wrk's warm-up stops it drops the requests in flight,
and a proxy may close the upstream connections carrying them (nginx does)
and open new ones in the run. A proxy without a pool shows about one per
request ("origin req/req" is the origin's requests per wrk request, ~1.000).

--fastcgi measures FastCGI front ends: one php-fpm (deploy/bench/php-fpm.conf,
pm = static with --fpm-children children, or with --fpm-pm dynamic Debian's
default www pool: pm = dynamic, start_servers 2, min_spare_servers 1,
max_spare_servers 3, max_children --fpm-children (5 in Debian's; a queue
forms behind a small pool, which is what users of a default install meet),
TCP on loopback) runs pinned to
CPU 1 beside wrk for the whole run, and each server under test (default
ringside,nginx,nginx-nokeep,lighttpd) runs /hello.php (from
proxy/tests/support/php unless --root) on it from CPU 0: ringside with
--fastcgi; nginx with fastcgi_keep_conn on and an upstream keepalive 8
(deploy/bench/nginx-fastcgi.conf); nginx-nokeep, the same file with
keep_conn off and no upstream keepalive; lighttpd with mod_fastcgi
(deploy/bench/lighttpd-fastcgi.conf), one connection per request. Only the
front end's CPU time is counted; "fpm us/req" is php-fpm's own (master and
children), for scale. "fpm acc/req" is php-fpm's "accepted conn" delta per
wrk request, fetched from /fpm-status with the script's own FastCGI client
(less its probe): php-fpm counts each time a child starts reading a request,
so it is ~1.0 without persistent connections and ~1.0 plus the new
connections with them; it is not a count of connections. "up conns" is the
connections php-fpm accepted during the run, from the kernel's TCP
PassiveOpens counter (this network namespace) less wrk's own connections:
~0 with a warm persistent pool, ~1 per request without one. "up open" is
the connections open to php-fpm at the end. nginx keeps at most 8 idle
connections, so with more concurrent requests (-c50) it still opens and
closes connections beyond those 8 all run long; -c8 shows its pool alone.
Each kept idle connection holds a php-fpm child, so --fpm-children must
exceed nginx's keepalive (8), or requests starve behind idle connections.
ringside learns the children and may keep them all, so php-fpm's status is
read before each front end starts and after it stops ("fpm acc/req" then
counts the warm-up's connections too, less its requests).

--gzip measures compression on the fly: wrk asks for gzip (Accept-Encoding:
gzip), the static file is an 11 KiB HTML page (page.html), and with
--proxy the origin serves an 11 KiB JSON body (data.json) besides its 18
bytes; nginx gets gzip on at level 6 (gzip_min_length 256, gzip_vary, JSON
in gzip_types), ringside its defaults (gzip level 6 too). Each server's
answer is checked to be gzip before its run, and its size printed beside
the identity's as the compression ratio.

A server that fails to start or to serve is reported, per round, with its
error and left out of the medians; the others are still measured, and the
exit status is then 1. With --fastcgi a run that wrk saw errors in (non-2xx
answers, socket errors) is printed with its error count but left out of the
medians too: a peer that cannot complete the run cleanly is excluded.
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import struct
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


def fill(template, prefix, root, port, upstream_port=None, extra=None):
    with open(template) as f:
        text = f.read()
    text = text.replace("@ROOT@", root or "").replace("@PORT@", str(port)).replace("@PREFIX@", prefix)
    # One worker, in one process (the shootout command fills these for more).
    text = text.replace("@WORKERS@", "1").replace("@MASTER@", "off").replace("@MAXWORKER@", "0")
    if upstream_port is not None:
        text = text.replace("@UPSTREAM_PORT@", str(upstream_port))
    for k, v in (extra or {}).items():
        text = text.replace(k, v)
    path = os.path.join(prefix, os.path.basename(template))
    with open(path, "w") as f:
        f.write(text)
    return path


# nginx's compression for --gzip, at the level ringside uses by default.
NGINX_GZIP = """    gzip on;
    gzip_comp_level 6;
    gzip_min_length 256;
    gzip_vary on;
    gzip_types application/json;
"""

GZIP = False


def gzip_conf(path):
    """Turns nginx's gzip on in a filled config (--gzip)."""
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("http {\n", "http {\n" + NGINX_GZIP, 1))


def bench_page():
    """11 KiB of HTML, worded like a page: what --gzip serves."""
    import random
    rng = random.Random(26)
    words = ("the server edge proxy file cache core request response client "
             "upstream static page body header kernel ring socket buffer time "
             "with from into over under each every one two three fast slow").split()
    out = ["<!doctype html>\n<html><head><title>ringside</title></head><body>\n"]
    size = len(out[0])
    i = 0
    while size < 11 * 1024 - 40:
        line = f'<p class="c{i % 7}">' + " ".join(rng.choice(words) for _ in range(14)) + "</p>\n"
        out.append(line)
        size += len(line)
        i += 1
    out.append("</body></html>\n")
    return "".join(out).encode()[: 11 * 1024]


def bench_json():
    """11 KiB of JSON records: the proxied body --gzip serves."""
    import json
    import random
    rng = random.Random(26)
    names = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    items, size = [], 2
    while size < 11 * 1024 - 120:
        item = {"id": len(items), "name": rng.choice(names), "score": round(rng.random(), 4),
                "tags": rng.sample(names, 2), "active": rng.random() < 0.5}
        items.append(item)
        size += len(json.dumps(item)) + 1
    return json.dumps(items).encode()


def check_gzip(port, path):
    """(identity bytes, gzip bytes) of one answer; fails unless it is gzip."""
    sizes = []
    for ae in ("identity", "gzip"):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/{path}", headers={"Accept-Encoding": ae})
        with urllib.request.urlopen(req, timeout=5) as r:
            body = r.read()
            coding = r.headers.get("Content-Encoding")
        if (coding == "gzip") != (ae == "gzip"):
            raise RuntimeError(f"asked for {ae}, got Content-Encoding {coding}")
        sizes.append(len(body))
    return sizes


def nginx_exe():
    return shutil.which("nginx") or "/usr/sbin/nginx"


BASELINE = None


def is_ringside(name):
    return name.startswith("ringside") or name.startswith("baseline")


def ringside_variant(name):
    """ringside[:BACKEND][@URING_SETUP][+NAME=VALUE]: (exe, extra arguments,
    environment), e.g. ringside:epoll, ringside@defer,
    ringside+--coalesce-wait=200us (a NAME starting with -- is a flag);
    "baseline..." the same for the --baseline binary."""
    exe = os.path.join(REPO, "target", "release", "ringside")
    if name.startswith("baseline"):
        if BASELINE is None:
            raise SystemExit("server baseline needs --baseline EXE")
        exe, name = BASELINE, "ringside" + name[len("baseline"):]
    rest = name[len("ringside"):]
    env = dict(os.environ, RUST_LOG="warn")
    extra = []
    if "+" in rest:
        # An environment variable or a flag for this server only.
        rest, assign = rest.split("+", 1)
        k, v = assign.split("=", 1)
        if k.startswith("--"):
            extra = [k, v]
        else:
            env[k] = v
    if "@" in rest:
        rest, env["RINGSIDE_URING_SETUP"] = rest.split("@", 1)
    backend = rest.lstrip(":")
    if backend:
        extra += ["--backend", backend]
    return exe, extra, env


def start(name, root, args, upstream_port=None, fcgi_port=None):
    """Starts one server under test on CPU 0; with upstream_port, as a proxy
    to it; with fcgi_port, as a FastCGI front end to php-fpm there."""
    if fcgi_port is not None:
        return start_fastcgi(name, root, args, fcgi_port)
    port = free_port()
    prefix = tempfile.mkdtemp(prefix="shootout-")
    if is_ringside(name):
        exe, extra, env = ringside_variant(name)
        if upstream_port is None:
            cmd = [exe, "--listen", f"127.0.0.1:{port}", "--workers", "1", "--root", root]
        else:
            cmd = [exe, "--workers", "1", "--listen", f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{upstream_port}"]
        cmd += args.ringside_args.split() + extra
    elif name == "floor":
        # The kernel's share: bench/src/bin/ringside-floor.rs.
        exe = os.path.join(REPO, "target", "release", "ringside-floor")
        if upstream_port is None:
            cmd = [exe, "respond", f"127.0.0.1:{port}"]
        else:
            cmd = [exe, "relay", f"127.0.0.1:{port}", f"127.0.0.1:{upstream_port}"]
        env = None
    elif name == "nginx":
        template = "nginx-static.conf" if upstream_port is None else "nginx-proxy.conf"
        conf = fill(os.path.join(REPO, "deploy", "bench", template), prefix, root, port, upstream_port)
        if GZIP:
            gzip_conf(conf)
        cmd = [nginx_exe(), "-c", conf, "-p", prefix]
        env = None
    elif name == "haproxy" and upstream_port is not None:
        conf = fill(os.path.join(REPO, "deploy", "bench", "haproxy-proxy.cfg"), prefix, root, port, upstream_port)
        cmd = [shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f", conf]
        env = None
    elif name == "lighttpd" and upstream_port is None:
        conf = fill(os.path.join(REPO, "deploy", "bench", "lighttpd-static.conf"), prefix, root, port)
        cmd = [shutil.which("lighttpd") or "/usr/sbin/lighttpd", "-D", "-f", conf]
        env = None
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        mode = "proxy" if upstream_port is not None else "static"
        raise SystemExit(f"unknown server {name} for {mode} mode")
    return launch(cmd, env, port, prefix, cpu=0)


def start_fastcgi(name, root, args, fcgi_port):
    """Starts one FastCGI front end on CPU 0, passing .php to php-fpm."""
    port = free_port()
    prefix = tempfile.mkdtemp(prefix="shootout-")
    if is_ringside(name):
        exe, extra, env = ringside_variant(name)
        # No --fastcgi-max-conns: ringside learns php-fpm's capacity.
        cmd = [exe, "--workers", "1", "--listen", f"127.0.0.1:{port}", "--root", root,
               "--fastcgi", f"127.0.0.1:{fcgi_port}"]
        cmd += args.ringside_args.split() + extra
    elif name in ("nginx", "nginx-nokeep"):
        keep = name == "nginx"
        conf = fill(os.path.join(REPO, "deploy", "bench", "nginx-fastcgi.conf"), prefix, root, port, extra={
            "@FCGI@": f"127.0.0.1:{fcgi_port}",
            "@KEEPCONN@": "on" if keep else "off",
            "@IFKEEP@": "" if keep else "#",
        })
        cmd = [nginx_exe(), "-c", conf, "-p", prefix]
        env = None
    elif name == "lighttpd":
        conf = fill(os.path.join(REPO, "deploy", "bench", "lighttpd-fastcgi.conf"), prefix, root, port, extra={
            "@FCGI@": f'"host" => "127.0.0.1", "port" => {fcgi_port}',
        })
        cmd = [shutil.which("lighttpd") or "/usr/sbin/lighttpd", "-D", "-f", conf]
        env = None
    else:
        shutil.rmtree(prefix, ignore_errors=True)
        raise SystemExit(f"unknown server {name} for --fastcgi mode")
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
    """The nginx origin for --proxy, pinned to CPU 1 beside wrk; with
    --gzip it serves /data.json (11 KiB) too."""
    port = free_port()
    prefix = tempfile.mkdtemp(prefix="shootout-origin-")
    conf = fill(os.path.join(REPO, "deploy", "bench", "nginx-origin.conf"), prefix, None, port)
    if GZIP:
        data = os.path.join(prefix, "data.json")
        with open(data, "wb") as f:
            f.write(bench_json())
        with open(conf) as f:
            text = f.read()
        block = (f"        location = /data.json {{\n            default_type application/json;\n"
                 f"            alias {data};\n        }}\n")
        with open(conf, "w") as f:
            f.write(text.replace("        location / {", block + "        location / {", 1))
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


def fpm_exe():
    """Debian's php-fpm8.2, else any /usr/sbin/php-fpm*, else one on PATH."""
    if os.path.exists("/usr/sbin/php-fpm8.2"):
        return "/usr/sbin/php-fpm8.2"
    found = sorted(f for f in os.listdir("/usr/sbin") if f.startswith("php-fpm"))
    if found:
        return os.path.join("/usr/sbin", found[-1])
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isdir(d):
            found = sorted(f for f in os.listdir(d) if f.startswith("php-fpm"))
            if found:
                return os.path.join(d, found[-1])
    raise SystemExit("php-fpm is needed for --fastcgi (scripts/test.sh installs it)")


# Debian's default www pool (/etc/php/*/fpm/pool.d/www.conf) less its
# max_children, which --fpm-children gives.
DEBIAN_DYNAMIC = "pm = dynamic\npm.start_servers = 2\npm.min_spare_servers = 1\npm.max_spare_servers = 3\n"


def start_fpm(children, pm="static"):
    """php-fpm pinned to CPU 1 beside wrk, ready when its master says so."""
    port = free_port()
    prefix = tempfile.mkdtemp(prefix="shootout-fpm-")
    root = os.geteuid() == 0
    conf = fill(os.path.join(REPO, "deploy", "bench", "php-fpm.conf"), prefix, None, port, extra={
        "@LISTEN@": f"127.0.0.1:{port}",
        "@CHILDREN@": str(children),
        "@USERLINES@": "user = root\ngroup = root" if root else "",
    })
    if pm == "dynamic":
        # The pool section is the file's last: a later line wins.
        with open(conf, "a") as f:
            f.write(DEBIAN_DYNAMIC)
    cmd = ["taskset", "-c", "1", fpm_exe(), "-F", "-y", conf] + (["-R"] if root else [])
    log = os.path.join(prefix, "php-fpm.log")
    with open(os.path.join(prefix, "stderr.log"), "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    end = time.time() + 10
    while True:
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        if "ready to handle connections" in text:
            return proc, port, prefix
        if proc.poll() is not None or time.time() > end:
            stop(proc, None)
            tail = (text + open(os.path.join(prefix, "stderr.log"), errors="replace").read())[-500:]
            shutil.rmtree(prefix, ignore_errors=True)
            raise SystemExit(f"php-fpm did not start: {tail}")
        time.sleep(0.02)


def fcgi_record(kind, content, rid=1):
    pad = -len(content) % 8
    return struct.pack(">BBHHBx", 1, kind, rid, len(content), pad) + content + b"\0" * pad


def fcgi_pair(name, value):
    out = b""
    for n in (len(name), len(value)):
        out += bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)
    return out + name + value


def fcgi_get(port, params):
    """One FastCGI responder request (not kept) on a fresh connection:
    returns (stdout, stderr). The FastCGI 1.0 record layer, nothing more."""
    body = b"".join(fcgi_pair(k.encode(), v.encode()) for k, v in params.items())
    msg = fcgi_record(1, struct.pack(">HB5x", 1, 0))  # BEGIN_REQUEST, responder
    msg += fcgi_record(4, body) + fcgi_record(4, b"") + fcgi_record(5, b"")
    out, err, buf = b"", b"", b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(msg)
        while True:
            while len(buf) < 8 or len(buf) < 8 + struct.unpack(">H", buf[4:6])[0] + buf[6]:
                more = s.recv(65536)
                if not more:
                    raise RuntimeError("php-fpm closed before END_REQUEST")
                buf += more
            _, kind, _, clen, plen = struct.unpack(">BBHHB", buf[:7])
            content, buf = buf[8:8 + clen], buf[8 + clen + plen:]
            if kind == 6:
                out += content
            elif kind == 7:
                err += content
            elif kind == 3:  # END_REQUEST
                return out, err


def fpm_status(port):
    """php-fpm's /fpm-status as a dict. "accepted conn" counts this request.

    It needs a free child: while idle kept connections hold every child, it
    waits in php-fpm's listen backlog and times out."""
    try:
        out, _ = fcgi_get(port, {"SCRIPT_NAME": "/fpm-status", "SCRIPT_FILENAME": "/fpm-status",
                                 "REQUEST_METHOD": "GET", "QUERY_STRING": ""})
    except socket.timeout:
        raise RuntimeError("php-fpm's /fpm-status timed out: no free child (idle kept connections "
                           "hold them all? --fpm-children must exceed the front end's idle pool)")
    text = out.split(b"\r\n\r\n", 1)[-1].decode()
    return {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in text.splitlines() if ":" in l)}


def fpm_cpu_ticks(pid):
    """utime+stime of php-fpm's master and its children."""
    total = sum(cpu_ticks(pid))
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
                if rest[1] == str(pid):
                    total += int(rest[11]) + int(rest[12])
            except (OSError, IndexError):
                pass
    return total


def passive_opens():
    """The kernel's count of TCP connections accepted (this netns)."""
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Tcp:")]
    return int(rows[1][rows[0].index("PassiveOpens")])


def open_conns(port):
    """Established TCP connections whose local port is `port`."""
    want = f":{port:04X}"
    with open("/proc/net/tcp") as f:
        return sum(1 for l in list(f)[1:] if l.split()[1].endswith(want) and l.split()[3] == "01")


def wrk_errors(out):
    """Non-2xx/3xx answers plus socket errors, as wrk reports them."""
    n = 0
    m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    if m:
        n += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        n += sum(int(x) for x in m.groups())
    return n


def run_wrk(port, args):
    """Runs the client (wrk, or ringside-bench with --client); returns
    (requests, its output, its own CPU seconds).

    The client's CPU matters where it, not the server, is the bottleneck
    (large files: it copies every byte, and it pays for whatever TCP work
    the server leaves for its ACKs to trigger)."""
    url = f"http://127.0.0.1:{port}/{args.file}"
    with tempfile.TemporaryFile(mode="w+") as f:
        # taskset execs the client, so the child reaped is the client itself.
        proc = subprocess.Popen(
            ["taskset", "-c", "1"] + client_cmd(args, args.connections, args.duration, url),
            stdout=f, stderr=subprocess.STDOUT, text=True,
        )
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        f.seek(0)
        out = f.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{args.client} exited with {proc.returncode}:\n{out}")
    if args.client == "ringside-bench":
        m = re.search(r"Complete requests:\s+(\d+)", out)
        failed = re.search(r"Failed requests:\s+(\d+)", out)
        if m and (failed is None or int(failed.group(1)) > 0 or "Non-2xx" in out):
            raise RuntimeError(f"errors during the run:\n{out}")
    else:
        m = re.search(r"(\d+) requests in", out)
        if not args.fastcgi and ("Non-2xx" in out or "Socket errors" in out):
            raise RuntimeError(f"errors during the run:\n{out}")
    if not m:
        raise RuntimeError(f"cannot read {args.client}'s output:\n{out}")
    return int(m.group(1)), out, ru.ru_utime + ru.ru_stime


def client_cmd(args, connections, duration, url):
    """The load generator's command line: wrk -t1, or ringside-bench on one
    core (keep-alive; it reads up to 64 KiB per call where wrk reads 8 KiB,
    so for large files it costs less and the server sets the pace)."""
    if args.client == "ringside-bench":
        exe = os.path.join(REPO, "target", "release", "ringside-bench")
        return [exe, "-q", "--http1.1", "-k", "-c", str(connections), "--duration", f"{duration}s", url]
    gzip = ["-H", "Accept-Encoding: gzip"] if GZIP else []
    return ["wrk", "-t1", f"-c{connections}", f"-d{duration}s"] + gzip + [url]


def measure_fastcgi(name, root, args, fpm):
    """One FastCGI front end, one round: (row, wrk errors)."""
    fpm_proc, fpm_port, _ = fpm
    # The status probes run while no front end holds a child: one that
    # keeps every child (ringside, having learned them all) would leave the
    # probe waiting in php-fpm's backlog.
    st0 = fpm_status(fpm_port)
    proc, port, prefix = start(name, root, args, fcgi_port=fpm_port)
    try:
        # Warm up with the full connection count, so that a pool is as large
        # as the run needs before the run begins. Errors here are counted
        # with the run's, not fatal: they are what the run is judged by.
        warm = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{args.connections}", "-d1s",
                               f"http://127.0.0.1:{port}/{args.file}"], capture_output=True, text=True)
        if warm.returncode != 0:
            raise RuntimeError(f"warm-up failed:\n{warm.stdout}{warm.stderr}")
        warm_reqs = int(re.search(r"(\d+) requests in", warm.stdout).group(1))
        f0 = fpm_cpu_ticks(fpm_proc.pid)
        p0 = passive_opens()
        u0, s0 = cpu_ticks(proc.pid)
        reqs, out, _ = run_wrk(port, args)
        u1, s1 = cpu_ticks(proc.pid)
        p1 = passive_opens()
        f1 = fpm_cpu_ticks(fpm_proc.pid)
        up_open = open_conns(fpm_port)
    finally:
        stop(proc, prefix)
    st1 = fpm_status(fpm_port)
    if reqs == 0:
        raise RuntimeError(f"wrk completed no requests:\n{out}")
    errs = wrk_errors(out)
    us = lambda t: t / TICK / reqs * 1e6
    # Less the second status probe, which php-fpm counts in its own figure,
    # and the warm-up's requests.
    accepted = int(st1["accepted conn"]) - int(st0["accepted conn"]) - 1 - warm_reqs
    up_conns = p1 - p0 - args.connections
    row = (reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0),
           us(f1 - f0), accepted / reqs, up_conns, up_open, errs)
    return row, errs


def measure(name, root, args, origin_port):
    """One server, one round: returns the row printed and kept for medians."""
    proc, port, prefix = start(name, root, args, origin_port)
    try:
        # A short warm-up so lazily built state is not charged. A proxy warms
        # up with the full connection count, so that its upstream pool is as
        # large as the run needs before the run begins.
        warm_conns = args.connections if origin_port else 10
        warm = subprocess.run(["taskset", "-c", "1"] + client_cmd(args, warm_conns, 1, f"http://127.0.0.1:{port}/{args.file}"),
                              capture_output=True, text=True)
        if (warm.returncode != 0 or "Non-2xx" in warm.stdout or "Socket errors" in warm.stdout
                or re.search(r"Failed requests:\s+[1-9]", warm.stdout)):
            raise RuntimeError(f"warm-up failed:\n{warm.stdout}{warm.stderr}")
        if GZIP:
            plain, packed = check_gzip(port, args.file)
            print(f"  {name}: {plain} B as gzip {packed} B, ratio {plain / packed:.2f}", flush=True)
        if origin_port:
            st0 = origin_status(origin_port)
        u0, s0 = cpu_ticks(proc.pid)
        reqs, _, client = run_wrk(port, args)
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
    row = (reqs / args.duration, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0),
           client / reqs * 1e6)
    if origin_port:
        row += (up_conns, up_open, up_reqs / reqs)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--file", default="hello.txt")
    p.add_argument("--client", choices=("wrk", "ringside-bench"), default="wrk",
                   help="the load generator on CPU 1 (default wrk -t1)")
    p.add_argument("--root", default=None)
    p.add_argument("--servers", default=None,
                   help="comma-separated; default ringside,nginx,lighttpd, or ringside,nginx,haproxy with --proxy")
    p.add_argument("--ringside-args", default="")
    p.add_argument("--baseline", default=None, metavar="EXE",
                   help="another ringside binary, run as the server named baseline")
    p.add_argument("--proxy", action="store_true",
                   help="measure reverse proxies in front of one nginx origin on CPU 1")
    p.add_argument("--fastcgi", action="store_true",
                   help="measure FastCGI front ends in front of one php-fpm on CPU 1")
    p.add_argument("--gzip", action="store_true",
                   help="ask for gzip: an 11 KiB page, or proxied 11 KiB JSON, compressed at level 6")
    p.add_argument("--fpm-children", type=int, default=16,
                   help="php-fpm's pm.max_children with --fastcgi (default 16)")
    p.add_argument("--fpm-pm", choices=("static", "dynamic"), default="static",
                   help="php-fpm's pm: static, or dynamic as Debian's default pool (start 2, spares 1-3)")
    args = p.parse_args()
    global BASELINE, GZIP
    BASELINE = os.path.abspath(args.baseline) if args.baseline else None
    GZIP = args.gzip
    if args.gzip and (args.fastcgi or args.client != "wrk"):
        raise SystemExit("--gzip measures static files or --proxy, with wrk")
    if args.gzip and args.file == "hello.txt":
        args.file = "data.json" if args.proxy else "page.html"
    if args.proxy and args.fastcgi:
        raise SystemExit("--proxy and --fastcgi are separate modes")
    if args.servers is None:
        if args.fastcgi:
            args.servers = "ringside,nginx,nginx-nokeep,lighttpd"
        else:
            args.servers = "ringside,nginx,haproxy" if args.proxy else "ringside,nginx,lighttpd"
    if args.fastcgi and args.client != "wrk":
        raise SystemExit("--fastcgi counts wrk's errors; use the default --client wrk")
    if args.fastcgi and args.file == "hello.txt":
        args.file = "hello.php"
    root = args.root
    made_root = None
    if args.fastcgi:
        root = os.path.abspath(root or os.path.join(REPO, "proxy", "tests", "support", "php"))
    elif args.proxy:
        root = None
    elif root is None:
        root = made_root = tempfile.mkdtemp(prefix="shootout-root-")
        with open(os.path.join(root, "hello.txt"), "wb") as f:
            f.write(b"hello from ringside 26 B.\n")
        with open(os.path.join(root, "page.html"), "wb") as f:
            f.write(bench_page())
    servers = args.servers.split(",")
    known = ("nginx", "haproxy", "floor") if args.proxy else ("nginx", "lighttpd", "floor")
    if args.fastcgi:
        known = ("nginx", "nginx-nokeep", "lighttpd")
    for name in servers:
        if not (is_ringside(name) or name in known):
            mode = "--fastcgi" if args.fastcgi else "--proxy" if args.proxy else "static"
            raise SystemExit(f"unknown server {name} for {mode} mode; known: ringside[...], {', '.join(known)}")
    results = {s: [] for s in servers}
    errors = {s: [] for s in servers}
    origin = None
    origin_port = None
    fpm = None
    try:
        if args.proxy:
            origin = start_origin()
            origin_port = origin[1]
        if args.fastcgi:
            fpm = start_fpm(args.fpm_children, args.fpm_pm)
        for rnd in range(1, args.rounds + 1):
            for name in servers:
                if args.fastcgi:
                    try:
                        row, errs = measure_fastcgi(name, root, args, fpm)
                    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                        msg = " ".join(str(e).split())
                        errors[name].append(msg)
                        print(f"round {rnd} {name:16s} FAILED: {msg}", flush=True)
                        continue
                    line = (f"round {rnd} {name:16s} {row[0]:9.0f} req/s  cpu {row[1]:6.2f} us/req "
                            f"(user {row[2]:5.2f}, sys {row[3]:5.2f})  fpm {row[4]:6.2f} us/req  "
                            f"fpm acc/req {row[5]:.3f}  up conns {row[6]}, up open {row[7]}  errors {errs}")
                    if errs:
                        errors[name].append(f"{errs} wrk errors")
                        line += "  EXCLUDED"
                    else:
                        results[name].append(row)
                    print(line, flush=True)
                    continue
                try:
                    row = measure(name, root, args, origin_port)
                except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                    msg = " ".join(str(e).split())
                    errors[name].append(msg)
                    print(f"round {rnd} {name:16s} FAILED: {msg}", flush=True)
                    continue
                results[name].append(row)
                line = (f"round {rnd} {name:16s} {row[0]:9.0f} req/s  cpu {row[1]:6.2f} us/req (user {row[2]:5.2f}, "
                        f"sys {row[3]:5.2f})  client {row[4]:6.2f} us/req")
                if args.proxy:
                    line += f"  up conns {row[5]}, up open {row[6]}, origin req/req {row[7]:.3f}"
                print(line, flush=True)
    finally:
        if origin:
            stop(origin[0], origin[2])
        if fpm:
            stop(fpm[0], fpm[2])
        if made_root:
            shutil.rmtree(made_root, ignore_errors=True)
    what = "proxied to an nginx origin on CPU 1" if args.proxy else f"/{args.file}"
    if args.fastcgi:
        what = f"/{args.file} on php-fpm (pm = {args.fpm_pm}, max_children {args.fpm_children}) on CPU 1"
    client = "wrk -t1" if args.client == "wrk" else "ringside-bench -k"
    print(f"\nmedians over {args.rounds} rounds, {what}, {client} -c{args.connections} -d{args.duration}s:")
    head = f"{'server':16s} {'req/s':>9s} {'cpu us/req':>11s} {'user':>7s} {'sys':>7s}"
    if not args.fastcgi:
        head += f" {'client':>7s}"
    if args.proxy:
        head += f" {'up conns':>9s} {'up open':>8s}"
    if args.fastcgi:
        head += f" {'fpm us/req':>10s} {'fpm acc/req':>11s} {'up conns':>9s} {'up open':>8s}"
    print(head)
    for name in servers:
        if not results[name]:
            print(f"{name:16s} failed: {errors[name][-1]}")
            continue
        med = [statistics.median(r[i] for r in results[name]) for i in range(len(results[name][0]))]
        line = f"{name:16s} {med[0]:9.0f} {med[1]:11.2f} {med[2]:7.2f} {med[3]:7.2f}"
        if not args.fastcgi:
            line += f" {med[4]:7.2f}"
        if args.proxy:
            line += f" {med[5]:9g} {med[6]:8g}"
        if args.fastcgi:
            line += f" {med[4]:10.2f} {med[5]:11.3f} {med[6]:9g} {med[7]:8g}"
        if errors[name]:
            line += f"  ({len(results[name])} of {args.rounds} rounds; {len(errors[name])} failed)"
        print(line)
    return 1 if any(errors.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
