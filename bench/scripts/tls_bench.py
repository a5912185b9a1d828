#!/usr/bin/env python3
"""Server CPU per request over TLS, ringside against nginx, the house way.

As in cpu_per_request.py (whose helpers this imports): each server runs with
one worker pinned to CPU 0 (taskset), wrk -t1 runs pinned to CPU 1, servers
take turns round after round in one run, and the server process's
utime+stime delta (/proc/PID/stat, all threads) over the wrk run is divided
by the requests wrk completed. Medians over the rounds are printed as one
markdown table per mode, with the ratio ringside/nginx for throughput and
for CPU per request. "server CPU" is the server's busy share of CPU 0 over
the run: well below 100 % the client (wrk, OpenSSL on CPU 1) set the pace,
and the req/s column says more about wrk than about the server; CPU per
request is the figure to compare then. Each (round, mode, server) gets a freshly started
server, a one-second warm-up in the same mode, then the measured run.

Modes (--modes, default all three):
  ka26   keep-alive, the 26 B /hello.txt over https
  ka1m   keep-alive, a 1 MiB /1m.bin over https; MB/s (10^6 bytes of body)
         is reported beside req/s
  new26  a new connection per request: /hello.txt with "Connection: close",
         so every request costs a TLS handshake; req/s is handshakes/s and
         the CPU per request is the CPU per handshake (plus one small
         request and a TCP connect and close)

  hs26   full handshakes by key-exchange group: ringside-bench (not wrk)
         makes a new connection per request for /hello.txt with session
         resumption off (--tls-no-resume), offering the groups of each
         --groups entry (ringside-bench --tls-group; default
         "x25519mlkem768,x25519:p256": post-quantum hybrid, then classical
         X25519, with P-256 listed so that OpenSSL 3.0 accepts the ECDSA
         certificate). Rows are "SERVER GROUP": req/s is full handshakes/s
         and the CPU per request the server CPU per full handshake. The
         group each server negotiated is checked once before the rounds
         with a one-request run; a server that shares no group with an
         entry (nginx on OpenSSL 3.0 has no ML-KEM) is left out of that
         entry's rows, said so, and is no error.

Full or resumed handshakes in new26: RESUMED, wherever the server resumes.
wrk (4.1, OpenSSL 3.0) keeps one SSL object per connection and, on
reconnecting, calls SSL_shutdown and SSL_clear, which keep the session (a
TLS 1.3 ticket), so its next SSL_connect offers it: against nginx (tickets
on, shared cache) all but the first handshake of each of wrk's connections
are resumed (a -c4 check: 461 of 465 connections "r" in $ssl_session_reused,
all TLSv1.3). A TLS 1.3 resumption is psk_dhe_ke: it still does an X25519
exchange but no certificate signature, so new26 measures "resumed TLS 1.3
handshakes with ECDHE", not full ones. The script checks this on every run,
once before the rounds: it counts $ssl_session_reused in an nginx access log
over a one-second wrk run in new26's mode, and it asks each server, with two
`openssl s_client` connections (-sess_out, then -sess_in, SNI 127.0.0.1 as
wrk sends it), whether it resumes a session it issued. The new26 table says
per server which kind it measured: "resumed" where wrk resumes and the
server resumed s_client's session, "full" where either does not.

Both servers get the same certificate, made at run time in a temporary
directory with openssl: an ECDSA P-256 key (default; --key-type rsa2048 for
RSA 2048) and a self-signed certificate for CN/SAN localhost and IP
127.0.0.1. nginx runs deploy/bench/nginx-tls.conf (TLSv1.2 and TLSv1.3,
session tickets on, shared session cache, sendfile on, no access log, no
HTTP/2, ALPN default). ringside runs with --config FILE:

    [runtime]
    workers = 1
    cpu_affinity = false   # pinned by taskset, as cpu_per_request.py does
    [server]
    listen = [{ addr = "127.0.0.1:PORT", tls = { cert = "...", key = "..." } }]
    root = "..."
    [admin]
    listen = "off"

(and RUST_LOG=warn, as cpu_per_request.py gives it). Names like
ringside:epoll, ringside@defer and ringside+--coalesce-wait=0 select variants
as in cpu_per_request.py, and "baseline" (with its variants) runs the
--baseline EXE binary the same way, to compare a change with the previous
landing; --ringside-args adds flags to every ringside. If
target/release/ringside is missing it is built once (cargo build --release
-p ringside) before the rounds.

Before it is measured, a server must serve the mode's file over https:
`curl -sk https://127.0.0.1:PORT/FILE` must return the file's bytes. A
server that fails to start, to speak TLS or to serve cleanly (wrk socket
errors or non-2xx answers, in the warm-up or the run) is reported for that
round with its error and left out of the medians; the others are still
measured, and the exit status is then 1.

usage: tls_bench.py [--rounds 3] [--duration 8] [--connections 50]
                    [--servers ringside,nginx] [--modes ka26,ka1m,new26,hs26]
                    [--groups x25519mlkem768,x25519:p256] [--baseline EXE]
                    [--key-type ec-p256|rsa2048] [--ringside-args "..."]
                    [--json FILE]
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
# No bench/scripts/__pycache__ left in the working tree by the import.
sys.dont_write_bytecode = True
import cpu_per_request as cpr  # noqa: E402  (the house helpers)

REPO = cpr.REPO
TICK = cpr.TICK
NGINX_TEMPLATE = os.path.join(REPO, "deploy", "bench", "nginx-tls.conf")
SMALL = b"hello from ringside 26 B.\n"
BIG_SIZE = 1 << 20

MODES = {
    "ka26": {"file": "hello.txt", "close": False, "title": "keep-alive, 26 B /hello.txt over https"},
    "ka1m": {"file": "1m.bin", "close": False, "title": "keep-alive, 1 MiB /1m.bin over https"},
    "new26": {"file": "hello.txt", "close": True,
              "title": 'new connection per request ("Connection: close"), 26 B /hello.txt over https'},
    "hs26": {"file": "hello.txt", "close": True,
             "title": "full handshakes (ringside-bench --tls-no-resume, a connection per request), by key-exchange group"},
}
KEY_TYPES = {
    "ec-p256": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
    "rsa2048": ["-newkey", "rsa:2048"],
}


class Material:
    """The temporary directory with the certificate, key and document root."""

    def __init__(self, key_type):
        self.dir = tempfile.mkdtemp(prefix="tlsbench-")
        self.cert = os.path.join(self.dir, "cert.pem")
        self.key = os.path.join(self.dir, "key.pem")
        self.root = os.path.join(self.dir, "root")
        os.mkdir(self.root)
        self.files = {"hello.txt": SMALL, "1m.bin": os.urandom(BIG_SIZE)}
        for name, data in self.files.items():
            with open(os.path.join(self.root, name), "wb") as f:
                f.write(data)
        cmd = ["openssl", "req", "-x509"] + KEY_TYPES[key_type] + [
            "-nodes", "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", self.key, "-out", self.cert]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            self.cleanup()
            raise SystemExit(f"openssl req failed: {r.stderr.strip()}")

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


_build = {}


def ensure_ringside(package="ringside"):
    """target/release/PACKAGE, built once per run if it is missing."""
    exe = os.path.join(REPO, "target", "release", package)
    if os.path.exists(exe):
        return exe
    if package not in _build:
        print(f"target/release/{package} is missing: cargo build --release -p {package}", flush=True)
        r = subprocess.run(["cargo", "build", "--release", "-p", package], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _build[package] = None if r.returncode == 0 and os.path.exists(exe) else \
            f"cargo build --release -p {package} failed: " + r.stdout.strip()[-400:]
    if _build[package]:
        raise RuntimeError(_build[package])
    return exe


def handshakes(port, group, connections, duration):
    """One ringside-bench run on CPU 1, full handshakes offering `group`:
    (handshakes, the group negotiated). Any failed request fails the run."""
    exe = ensure_ringside("ringside-bench")
    cmd = ["taskset", "-c", "1", exe, "--json", "--insecure", "--tls-no-resume", "--tls-group", group,
           "-c", str(connections)]
    cmd += ["-n", "1"] if duration == 0 else ["--duration", f"{duration}s"]
    cmd.append(f"https://127.0.0.1:{port}/hello.txt")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    try:
        v = json.loads(r.stdout)
    except ValueError:
        raise RuntimeError(f"ringside-bench failed (exit {r.returncode}): {(r.stdout + r.stderr).strip()[-400:]}")
    done, failed = v["complete_requests"], v["failed_requests"]
    if r.returncode != 0 or failed or not done:
        raise RuntimeError(f"ringside-bench: {done} complete, {failed} failed (exit {r.returncode}): "
                           f"{r.stderr.strip()[-300:]}")
    if v["counts"]["tls_resumed"]:
        raise RuntimeError(f"{v['counts']['tls_resumed']} handshakes resumed despite --tls-no-resume")
    return v["counts"]["tls_handshakes"], (v.get("tls") or {}).get("group")


def toml_str(s):
    # A JSON string is a valid TOML basic string for these paths.
    return json.dumps(s)


def start(name, mat, args, access_log=False):
    """Starts one server on CPU 0, TLS on its port: (proc, port, prefix)."""
    port = cpr.free_port()
    prefix = tempfile.mkdtemp(prefix="tlsbench-srv-")
    try:
        if name.startswith(("ringside", "baseline")):
            if name.startswith("ringside"):
                ensure_ringside()
            exe, extra, env = cpr.ringside_variant(name)
            conf = os.path.join(prefix, "ringside.toml")
            with open(conf, "w") as f:
                f.write("# written by bench/scripts/tls_bench.py\n"
                        "[runtime]\nworkers = 1\ncpu_affinity = false\n"
                        "[server]\n"
                        f"listen = [{{ addr = \"127.0.0.1:{port}\", tls = {{ cert = {toml_str(mat.cert)}, "
                        f"key = {toml_str(mat.key)} }} }}]\n"
                        f"root = {toml_str(mat.root)}\n"
                        "[admin]\nlisten = \"off\"\n")
            # No --listen: it would replace the config's listen list, TLS and all.
            cmd = [exe, "--config", conf] + args.ringside_args.split() + extra
        elif name == "nginx":
            log = f"{prefix}/access.log tlscheck" if access_log else "off"
            conf = cpr.fill(NGINX_TEMPLATE, prefix, mat.root, port,
                            extra={"@CERT@": mat.cert, "@KEY@": mat.key, "@ACCESS_LOG@": log})
            cmd = [cpr.nginx_exe(), "-c", conf, "-p", prefix]
            env = None
        else:
            raise SystemExit(f"unknown server {name}; known: ringside[...], nginx")
    except BaseException:
        shutil.rmtree(prefix, ignore_errors=True)
        raise
    # launch() removes prefix itself when the server does not come up.
    return cpr.launch(cmd, env, port, prefix, cpu=0)


def check_serves(port, path, want):
    """curl -sk https://127.0.0.1:PORT/PATH must return exactly `want`."""
    url = f"https://127.0.0.1:{port}/{path}"
    r = subprocess.run(["curl", "-sSk", "--max-time", "10", url], capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"no TLS answer: curl -sk {url}: {r.stderr.decode(errors='replace').strip()}")
    if r.stdout != want:
        raise RuntimeError(f"curl -sk {url} returned {len(r.stdout)} bytes, not the file's {len(want)}: "
                           f"{r.stdout[:80]!r}")


def wrk(port, path, connections, duration, close):
    """One wrk run on CPU 1: (requests, output). Any error fails the run."""
    cmd = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s"]
    if close:
        cmd += ["-H", "Connection: close"]
    cmd.append(f"https://127.0.0.1:{port}/{path}")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    out = r.stdout + r.stderr
    m = re.search(r"(\d+) requests in", out)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed (exit {r.returncode}): {out.strip()[-400:]}")
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"{cpr.wrk_errors(out)} errors during the run: {out.strip()[-400:]}")
    return int(m.group(1)), out


def measure(name, mode, mat, args, group=None):
    """One server, one mode, one round: a dict of raw numbers."""
    m = MODES[mode]
    proc, port, prefix = start(name, mat, args)
    try:
        check_serves(port, m["file"], mat.files[m["file"]])
        try:
            if group:
                handshakes(port, group, 10, 1)
            else:
                wrk(port, m["file"], 10, 1, m["close"])
        except RuntimeError as e:
            raise RuntimeError(f"warm-up: {e}")
        u0, s0 = cpr.cpu_ticks(proc.pid)
        if group:
            reqs, _ = handshakes(port, group, args.connections, args.duration)
        else:
            reqs, _ = wrk(port, m["file"], args.connections, args.duration, m["close"])
        u1, s1 = cpr.cpu_ticks(proc.pid)
    finally:
        cpr.stop(proc, prefix)
    if reqs == 0:
        raise RuntimeError("wrk completed no requests")
    us = lambda t: t / TICK / reqs * 1e6
    return {
        "requests": reqs, "user_ticks": u1 - u0, "sys_ticks": s1 - s0,
        "req_s": reqs / args.duration,
        "mb_s": reqs * len(mat.files[m["file"]]) / args.duration / 1e6,
        "us_user": us(u1 - u0), "us_sys": us(s1 - s0), "us_total": us(u1 - u0 + s1 - s0),
        # The server's busy share of its one CPU: near 100 % it is the
        # bottleneck; well below, wrk (on its own CPU) is.
        "server_cpu_pct": (u1 - u0 + s1 - s0) / TICK / args.duration * 100,
    }


HTTP_GET = b"GET /hello.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


def s_client(port, sess_flag, sess_path):
    """One openssl s_client connection (SNI 127.0.0.1, as wrk sends) that
    GETs /hello.txt and reads to the server's close, so a TLS 1.3 ticket
    sent after the handshake is in the session it saves. It offers ALPN
    h2,http/1.1 to see that the server keeps to HTTP/1.1 (wrk offers no
    ALPN at all)."""
    cmd = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "127.0.0.1",
           "-alpn", "h2,http/1.1", "-ign_eof", sess_flag, sess_path]
    r = subprocess.run(cmd, input=HTTP_GET, capture_output=True, timeout=20)
    return r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


def tls_probe(name, mat, args):
    """What the server negotiates with OpenSSL's client, and whether it
    resumes the session it issued: a dict, or {"error": ...}."""
    try:
        proc, port, prefix = start(name, mat, args)
    except (RuntimeError, OSError) as e:
        return {"error": " ".join(str(e).split())}
    try:
        sess = os.path.join(prefix, "session.pem")
        first = s_client(port, "-sess_out", sess)
        if not os.path.exists(sess):
            return {"error": "openssl s_client got no session: " + " ".join(first.split())[-300:]}
        second = s_client(port, "-sess_in", sess)
    except subprocess.TimeoutExpired:
        return {"error": "openssl s_client timed out"}
    finally:
        cpr.stop(proc, prefix)
    out = {}
    m = re.search(r"^(New|Reused), (\S+), Cipher is (\S+)", first, re.M)
    if not m:
        return {"error": "no TLS session: " + " ".join(first.split())[-300:]}
    out["protocol"], out["cipher"] = m.group(2), m.group(3)
    for key, pat in (("group", r"Server Temp Key: ([^,\n]+)"), ("signature", r"Peer signature type: (\S+)"),
                     ("alpn", r"ALPN protocol: (\S+)|(No ALPN negotiated)")):
        m = re.search(pat, first)
        out[key] = (m.group(1) or "none") if m else None
    m = re.search(r"^(New|Reused), ", second, re.M)
    out["resumed"] = bool(m and m.group(1) == "Reused")
    out["served"] = SMALL.decode().strip() in first
    return out


def wrk_resumption(mat, args):
    """Does wrk resume TLS sessions in new26's mode? Counted with nginx's
    $ssl_session_reused over a one-second run: a dict."""
    try:
        proc, port, prefix = start("nginx", mat, args, access_log=True)
    except (RuntimeError, OSError) as e:
        return {"error": " ".join(str(e).split())}
    try:
        # wait_port's TCP connect makes no log line; nor does anything else
        # before this run.
        wrk(port, "hello.txt", 4, 1, True)
        with open(os.path.join(prefix, "access.log")) as f:
            lines = [l.split() for l in f if l.strip()]
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return {"error": " ".join(str(e).split())}
    finally:
        cpr.stop(proc, prefix)
    protos = sorted({l[0] for l in lines})
    return {"connections": len(lines), "resumed": sum(1 for l in lines if l[-1] == "r"),
            "protocols": protos, "wrk_connections": 4}


def md(text):
    return str(text).replace("|", "\\|")


def ratio_lines(mode, meds, labels):
    """Each ringside row against the first nginx row measured (in hs26,
    nginx's classical group)."""
    out = []
    base = next((l for l in labels if l.split()[0] == "nginx" and l in meds), None)
    if base is None:
        return out
    n = meds[base]
    for s in labels:
        if s.startswith(("ringside", "baseline")) and s in meds:
            r = meds[s]
            what = "handshakes/s" if mode in ("new26", "hs26") else "req/s"
            line = f"{s} / {base}: {what} x{r['req_s'] / n['req_s']:.2f}"
            if mode == "ka1m":
                line += f" (MB/s x{r['mb_s'] / n['mb_s']:.2f})"
            line += f", CPU per {'handshake' if mode in ('new26', 'hs26') else 'request'} x{r['us_total'] / n['us_total']:.2f}"
            line += f" (user x{r['us_user'] / n['us_user']:.2f}, sys x{r['us_sys'] / n['us_sys']:.2f})" \
                if n["us_user"] and n["us_sys"] else ""
            out.append(line + "; above 1 is more throughput, more CPU")
    return out


def handshake_kind(name, probes, wrkres):
    p = probes.get(name, {})
    if "error" in wrkres or "resumed" not in p:
        return "unknown"
    wrk_resumes = wrkres["connections"] and wrkres["resumed"] * 2 > wrkres["connections"]
    return "resumed" if wrk_resumes and p["resumed"] else "full"


def probe_group(name, group, mat, args):
    """The group `name` negotiates with ringside-bench offering `group`."""
    proc, port, prefix = start(name, mat, args)
    try:
        return handshakes(port, group, 1, 0)[1]
    finally:
        cpr.stop(proc, prefix)


def main():
    p = argparse.ArgumentParser(description="Server CPU per request over TLS (see the docstring).")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=8)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--servers", default="ringside,nginx")
    p.add_argument("--modes", default="ka26,ka1m,new26")
    p.add_argument("--key-type", choices=sorted(KEY_TYPES), default="ec-p256")
    p.add_argument("--ringside-args", default="")
    p.add_argument("--groups", default="x25519mlkem768,x25519:p256",
                   help="hs26: ringside-bench --tls-group values, one row per server and value")
    p.add_argument("--json", metavar="FILE", help="write the raw numbers to FILE")
    p.add_argument("--baseline", default=None, metavar="EXE",
                   help="another ringside binary (a previous landing), run as the server named baseline")
    args = p.parse_args()
    cpr.BASELINE = os.path.abspath(args.baseline) if args.baseline else None
    servers = [s for s in args.servers.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    for s in servers:
        if not (s.startswith(("ringside", "baseline")) or s == "nginx"):
            raise SystemExit(f"unknown server {s}; known: ringside[...], baseline[...], nginx")
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"unknown mode {m}; known: {', '.join(MODES)}")

    # SIGTERM unwinds like Ctrl-C, so the finally blocks stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # The rows of each mode's table: (label, server, ringside-bench group).
    table_rows = {m: [(s, s, None) for s in servers] for m in modes}
    raw = []
    probes, wrkres, negotiated = {}, {}, {}
    mat = Material(args.key_type)
    try:
        if "hs26" in modes:
            table_rows["hs26"] = []
            print("hs26 group check (ringside-bench -n 1 --tls-no-resume --tls-group G):")
            for s in servers:
                for g in [g for g in args.groups.split(",") if g]:
                    label = f"{s} {g}"
                    try:
                        negotiated[label] = probe_group(s, g, mat, args)
                    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                        print(f"  {label:34s} left out, no group in common or no answer: {' '.join(str(e).split())[-200:]}")
                        continue
                    table_rows["hs26"].append((label, s, g))
                    print(f"  {label:34s} negotiates {negotiated[label]}", flush=True)
        results = {m: {l: [] for l, _, _ in table_rows[m]} for m in modes}
        errors = {m: {l: [] for l, _, _ in table_rows[m]} for m in modes}
        print(f"certificate: {args.key_type}, self-signed for localhost and 127.0.0.1, in {mat.dir}")
        print("TLS check (openssl s_client, SNI 127.0.0.1 as wrk sends; second connection offers the first's session):")
        for s in servers:
            probes[s] = pr = tls_probe(s, mat, args)
            if "error" in pr:
                print(f"  {s:16s} FAILED: {pr['error']}", flush=True)
            else:
                print(f"  {s:16s} {pr['protocol']} {pr['cipher']}, {pr['group']}, signature {pr['signature']}, "
                      f"ALPN (offered h2,http/1.1) {pr['alpn']}; resumes: {'yes' if pr['resumed'] else 'NO'}", flush=True)
        if "new26" in modes:
            wrkres = wrk_resumption(mat, args)
            if "error" in wrkres:
                print(f"wrk resumption check (nginx access log) FAILED: {wrkres['error']}")
            else:
                print(f"wrk resumption check (nginx, $ssl_session_reused, wrk -c4 -d1s -H 'Connection: close'): "
                      f"{wrkres['resumed']} of {wrkres['connections']} connections resumed "
                      f"({', '.join(wrkres['protocols'])}); the first of each of wrk's 4 connections cannot be")
            kinds = ", ".join(f"{s} {handshake_kind(s, probes, wrkres)}" for s in servers)
            print(f"=> new26 measures handshakes: {kinds}")
        print(flush=True)

        for rnd in range(1, args.rounds + 1):
            for mode in modes:
                for s, server, group in table_rows[mode]:
                    try:
                        row = measure(server, mode, mat, args, group)
                    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                        msg = " ".join(str(e).split())
                        errors[mode][s].append(msg)
                        raw.append({"round": rnd, "mode": mode, "server": s, "error": msg})
                        print(f"round {rnd} {mode:5s} {s:16s} FAILED: {msg}", flush=True)
                        continue
                    results[mode][s].append(row)
                    raw.append(dict(round=rnd, mode=mode, server=s, **row))
                    extra = f"  {row['mb_s']:8.1f} MB/s" if mode == "ka1m" else ""
                    print(f"round {rnd} {mode:5s} {s:16s} {row['req_s']:9.0f} req/s{extra}  cpu {row['us_total']:7.2f} "
                          f"us/req (user {row['us_user']:6.2f}, sys {row['us_sys']:6.2f})  server CPU {row['server_cpu_pct']:3.0f} %",
                          flush=True)
    finally:
        mat.cleanup()

    medians = {}
    for mode in modes:
        m = MODES[mode]
        rate = "handshakes/s" if mode in ("new26", "hs26") else "req/s"
        per = "µs/handshake" if mode in ("new26", "hs26") else "µs/request"
        print(f"\n### {mode}: {m['title']}\n")
        client = "ringside-bench" if mode == "hs26" else "wrk -t1"
        print(f"medians over {args.rounds} rounds, {client} -c{args.connections} -d{args.duration}s, "
              f"{args.key_type} certificate; server on CPU 0, {client.split()[0]} on CPU 1\n")
        cols = ["server", rate] + (["MB/s"] if mode == "ka1m" else []) + \
               [f"{per} user", f"{per} sys", f"{per} total", "server CPU"] + (["handshake"] if mode == "new26" else []) + \
               (["group negotiated"] if mode == "hs26" else [])
        print("| " + " | ".join(cols) + " |")
        print("|" + "|".join("---" if c in ("server", "handshake", "group negotiated") else "---:" for c in cols) + "|")
        medians[mode] = {}
        for s, _, _ in table_rows[mode]:
            rows = results[mode][s]
            if not rows:
                err = errors[mode][s][-1] if errors[mode][s] else "not measured"
                print(f"| {md(s)} | failed: {md(err[:300])} |" + " |" * (len(cols) - 2))
                continue
            med = {k: statistics.median(r[k] for r in rows)
                   for k in ("req_s", "mb_s", "us_user", "us_sys", "us_total", "server_cpu_pct")}
            medians[mode][s] = med
            cells = [md(s) + (f" ({len(rows)} of {args.rounds} rounds)" if errors[mode][s] else ""),
                     f"{med['req_s']:.0f}"]
            if mode == "ka1m":
                cells.append(f"{med['mb_s']:.1f}")
            cells += [f"{med['us_user']:.2f}", f"{med['us_sys']:.2f}", f"{med['us_total']:.2f}",
                      f"{med['server_cpu_pct']:.0f} %"]
            if mode == "new26":
                cells.append(handshake_kind(s, probes, wrkres))
            if mode == "hs26":
                cells.append(md(negotiated.get(s)))
            print("| " + " | ".join(cells) + " |")
        lines = ratio_lines(mode, medians[mode], [l for l, _, _ in table_rows[mode]])
        if lines:
            print()
            for l in lines:
                print(l)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "meta": {"rounds": args.rounds, "duration_s": args.duration, "connections": args.connections,
                         "wrk_threads": 1, "key_type": args.key_type, "servers": servers, "modes": modes,
                         "clock_ticks_per_s": TICK, "file_bytes": {"hello.txt": len(SMALL), "1m.bin": BIG_SIZE}},
                "tls_probe": probes,
                "wrk_resumption": wrkres,
                "handshake_kind": {s: handshake_kind(s, probes, wrkres) for s in servers} if "new26" in modes else {},
                "hs26_groups": negotiated,
                "runs": raw,
                "medians": medians,
                "errors": errors,
            }, f, indent=2)
        print(f"\nraw numbers: {args.json}")
    return 1 if any(e for per in errors.values() for e in per.values()) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
