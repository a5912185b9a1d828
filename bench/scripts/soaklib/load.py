"""The load of a soak: open-loop clients (ringside-bench -R, h2load --rps)
run in segments, so that each segment's counts and p99 belong to a known
stretch of time (before, during or after the faults)."""
import json
import os
import re
import subprocess
import threading
import time

from .procs import tail


class Kind:
    """One client kind. `tool` is "bench" (ringside-bench) or "h2load"
    (h2 by ALPN or prior knowledge, or HTTP/1.1 over TLS with --h1).
    `cls` says what it depends on: "static", "up" (the origin), "php"
    (php-fpm) or "mixed" (its URLs reach more than one)."""

    def __init__(self, name, tool, rate, conc, urls, cls, ka=True, headers=(), streams=1, h1=False):
        self.name, self.tool, self.rate, self.conc = name, tool, rate, conc
        self.urls, self.cls, self.ka, self.headers = urls, cls, ka, list(headers)
        self.streams, self.h1 = streams, h1

    def describe(self):
        if self.tool == "bench":
            return f"{self.rate:g}/s, -c{self.conc}{' -k' if self.ka else ''}"
        proto = "h1 over TLS" if self.h1 else ("h2c" if self.urls[0].startswith("http:") else "h2 over TLS")
        return f"{self.rate:g}/s, h2load -c{self.conc} -m{self.streams} ({proto})"


def tagged(urls, kind):
    """Each URL with ?k=KIND (or &k=), so the access log tells the kinds apart."""
    out = []
    for u in urls:
        url, sep, rest = u.partition(" ")
        url += ("&" if "?" in url else "?") + "k=" + kind
        out.append(url + sep + rest)
    return out


def bench_cmd(exe, kind, ufile, secs, rate, cpu):
    cmd = ["taskset", "-c", str(cpu), exe, "-q", "--progress", "none", "--json", "-l", "--http1.1",
           "-c", str(kind.conc), "-R", f"{rate:g}", "--duration", f"{secs:g}s", "-s", "30", "--file", ufile]
    if kind.ka:
        cmd.insert(4, "-k")
    for h in kind.headers:
        cmd += ["-H", h]
    return cmd


def h2load_cmd(kind, secs, rate, cpu, log):
    per_client = max(1.0, rate / kind.conc)
    cmd = ["taskset", "-c", str(cpu), "h2load", "-c", str(kind.conc), "-m", str(kind.streams),
           "--rps", f"{per_client:g}", "-D", f"{max(1, int(secs))}", "--log-file", log]
    if kind.h1:
        cmd.append("--h1")
    for h in kind.headers:
        cmd += ["-H", h]
    return cmd + [u.split(" ", 1)[0] for u in kind.urls]


def bench_result(path, errpath, rc):
    """(done, non_2xx, socket errors, note, p99 ms) from ringside-bench --json."""
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return 0, 0, 1, f"no report (exit {rc}): {tail(errpath, 300)}", None
    c = j["counts"]
    notes = [f"{k} {c[k]}" for k in ("failed_connect", "failed_receive", "failed_length", "failed_exception",
                                     "timeouts", "resets", "write_errors") if c.get(k)]
    p99 = j["latency"]["percentiles"]["99"] if j["latency"]["count"] else None
    return j["complete_requests"], c["non_2xx"], j["failed_requests"], ", ".join(notes), p99


def h2load_result(out_path, log, rc):
    """The same from h2load's summary and its per-request log."""
    text = tail(out_path, 10 ** 6)
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if not m or not codes:
        return 0, 0, 1, f"no summary (exit {rc}): {text[-300:]}", None
    done, errored, timeout = int(m.group(3)), int(m.group(6)), int(m.group(7))
    non2xx = int(codes.group(2)) + int(codes.group(3)) + int(codes.group(4))
    lat = []
    try:
        with open(log) as f:
            for line in f:
                c = line.split()
                if len(c) >= 3:
                    lat.append(int(c[2]))
    except OSError:
        pass
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1000 if lat else None
    notes = ", ".join(f"{k} {v}" for k, v in (("errored", errored), ("timeout", timeout)) if v)
    # Started but never done: cut off by the end of the segment, not failed.
    return done - non2xx, non2xx, errored + timeout, notes, p99


class Segmented(threading.Thread):
    """Runs `kind` from t0 for `duration` seconds in segments of `segment`
    seconds, one client process each, at the rate rate_of(kind) gives when
    the segment starts. Each segment leaves a row: (start, end, rate, done,
    non-2xx, socket errors, notes, p99 ms), times from t0."""

    def __init__(self, procs, exe, tmp, kind, t0, duration, segment, cpu, rate_of):
        super().__init__(name=kind.name, daemon=True)
        self.procs, self.exe, self.tmp, self.kind = procs, exe, tmp, kind
        self.t0, self.duration, self.segment, self.cpu, self.rate_of = t0, duration, segment, cpu, rate_of
        self.rows = []
        self.stop = threading.Event()
        self.failure = None
        self.ufile = os.path.join(tmp, f"{kind.name}.urls")
        with open(self.ufile, "w") as f:
            f.write("\n".join(kind.urls) + "\n")

    def run(self):
        try:
            self.loop()
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.failure = f"{type(e).__name__}: {e}"

    def loop(self):
        k, end = 0, self.t0 + self.duration
        while not self.stop.is_set():
            start = time.monotonic()
            secs = min(self.segment, end - start)
            if secs < 1:
                return
            rate = self.rate_of(self.kind)
            base = os.path.join(self.tmp, f"{self.kind.name}.{k}")
            log = base + ".log"
            if self.kind.tool == "bench":
                cmd = bench_cmd(self.exe, self.kind, self.ufile, secs, rate, self.cpu)
            else:
                cmd = h2load_cmd(self.kind, secs, rate, self.cpu, log)
            with open(base + ".out", "wb") as out, open(base + ".err", "wb") as err:
                proc = self.procs.start(self.kind.name, cmd, out, err, tier=0)
            try:
                rc = proc.wait(timeout=secs + 120)
            except subprocess.TimeoutExpired:
                rc = self.procs.stop(proc)
            if self.stop.is_set():
                return
            if self.kind.tool == "bench":
                res = bench_result(base + ".out", base + ".err", rc)
            else:
                res = h2load_result(base + ".out", log, rc)
                try:
                    os.unlink(log)
                except OSError:
                    pass
            self.rows.append((start - self.t0, time.monotonic() - self.t0, rate) + res)
            k += 1

    def totals(self):
        done = sum(r[3] for r in self.rows)
        non2xx = sum(r[4] for r in self.rows)
        errors = sum(r[5] for r in self.rows)
        notes = "; ".join(f"t={r[0]:.0f}s: {r[6]}" for r in self.rows if r[6])
        return done, non2xx, errors, notes
