"""The soak's verdict: RSS flat, descriptors back to what they were plus
what ringside keeps by design (read from /metrics), every failure
explained by a fault, no warning that a fault does not explain, and the
p99 of traffic no fault touches within 2x of its value before the faults."""
import json
import re
import statistics
from datetime import datetime

RSS_BAND = 0.05
P99_LIMIT = 2.0
LOG_LINE = re.compile(r"^(\S+)\s+(WARN|ERROR)\s")


def fd_check(before, now, pools_before, pools_now, conns_drained):
    """(ok, text): each kind of fd equals its count before the load, plus
    what the pools hold now beyond what they held then, each pool within
    its bound."""
    extra = {k: pools_now[k][0] - pools_before[k][0] for k in pools_now}
    want = {"socket": before["socket"] + extra["idle"], "pipe": before["pipe"] + 2 * extra["pipes"],
            "file": before["file"] + extra["files"], "other": before["other"]}
    bounded = all(pools_now[k][0] <= pools_now[k][1] for k in pools_now)
    ok = conns_drained and bounded and all(now[k] == want[k] for k in want)
    text = (f"sockets {now['socket']} = {before['socket']} + {extra['idle']} idle upstream "
            f"(≤ {pools_now['idle'][1]}); pipes {now['pipe']} = {before['pipe']} + 2 × {extra['pipes']} spare "
            f"(≤ {pools_now['pipes'][1]}); files {now['file']} = {before['file']} + {extra['files']} cached open "
            f"(≤ {pools_now['files'][1]}); other {now['other']} = {before['other']}")
    mism = [k for k in want if now[k] != want[k]]
    if mism:
        text += "; MISMATCH: " + ", ".join(f"{k} {now[k]} (want {want[k]})" for k in mism)
    if not bounded:
        text += "; a pool is over its bound"
    if not conns_drained:
        text += "; client connections did not drain"
    return ok, text


def epoch(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def access_failures(path, wall_t0):
    """(t, kind, class, status) of each logged failure of a tagged kind:
    any status of 400 or more but 499 (the client went first), from the
    kinds whose own client reports failures otherwise (the abort kinds are
    counted by their clients). Also the lines per status."""
    out, statuses = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            st = e.get("status", 0)
            statuses[st] = statuses.get(st, 0) + 1
            uri = e.get("uri", "")
            m = re.search(r"[?&]k=([\w-]+)", uri)
            kind = m.group(1) if m else None
            if st < 400 or st == 499 or kind is None or kind.startswith("abort-"):
                continue
            cls = "up" if uri.startswith("/up/") else "php" if uri.startswith("/php/") else "static"
            out.append((epoch(e["time"]) - wall_t0, kind, cls, st))
    return out, statuses


def log_warnings(path, wall_t0):
    """(t, line) of each WARN or ERROR line of ringside's log."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LOG_LINE.match(line)
            if m:
                try:
                    t = epoch(m.group(1)) - wall_t0
                except ValueError:
                    t = None
                out.append((t, line.strip()))
    return out


class Explainer:
    """Sorts failures into the fault windows that explain them."""

    def __init__(self, windows):
        self.windows = windows
        self.by_fault = {}  # what -> {status or "socket": n}
        self.unexplained = []

    def add(self, t0, t1, classes, status, n, text):
        for w in self.windows:
            if w.cls in classes and w.covers(t0, t1) and (status == "socket" or status in w.statuses):
                d = self.by_fault.setdefault(w.what, {})
                d[status] = d.get(status, 0) + n
                return
        self.unexplained.append((t0, n, status, text))


def phase_p99(rows, warmup, fault_start, fault_end):
    """The static-ka segments' p99 (ms) by phase, the median per phase:
    before (after the warm-up, before the faults), during, after."""
    phases = {"before": [], "during": [], "after": []}
    for start, end, _rate, _done, _non, _err, _notes, p99 in rows:
        if p99 is None:
            continue
        if end <= fault_start:
            if start >= warmup - 1:
                phases["before"].append(p99)
        elif start >= fault_end:
            phases["after"].append(p99)
        else:
            phases["during"].append(p99)
    return {k: (statistics.median(v) if v else None, max(v) if v else None, len(v)) for k, v in phases.items()}


def rss_check(rows, warm_row):
    """(ok, low, high, worst): after the warm-up each sample's RSS is within
    ±5% of the RSS at the warm-up's end, the upper bound raised by what
    ringside's request buffers took on since (their bytes, from /metrics:
    bounded by count, they keep a burst's high-water mark by design).
    `worst` is the largest RSS over its own bound, as a fraction of base."""
    base, pool0 = warm_row["rss_kib"], warm_row["buffer_kib"]
    after = [x for x in rows if x["t_s"] > warm_row["t_s"] and x["phase"] != "after"] or [warm_row]
    lo = min(x["rss_kib"] for x in after)
    hi = max(x["rss_kib"] for x in after)
    worst = max((x["rss_kib"] - max(0, x["buffer_kib"] - pool0)) / base - 1 for x in after)
    return lo >= (1 - RSS_BAND) * base and worst <= RSS_BAND, lo, hi, worst
