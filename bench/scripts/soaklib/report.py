"""The soak's Markdown summary, and whether every check passed."""
import statistics

from . import verdict


def mib(k):
    return f"{k / 1024:.1f} MiB"


def fmt_fds(d):
    return f"{sum(d.values())} (sock {d['socket']}, pipe {d['pipe']}, file {d['file']}, other {d['other']})"


def classes_of(kind):
    return {"static", "up", "php"} if kind.cls == "mixed" else {kind.cls}


def failures(r, windows):
    """Every failure sorted into the faults that explain it."""
    ex = verdict.Explainer(windows)
    logged, statuses = verdict.access_failures(r["access_log"], r["wall_t0"])
    for t, kind, cls, status in logged:
        ex.add(t, None, {cls}, status, 1, f"{kind} {status}")
    for name, ld in r["loaders"].items():
        for start, end, _rate, _done, _non, errs, notes, _p99 in ld.rows:
            if errs:
                ex.add(start, end, classes_of(ld.kind), "socket", errs, f"{name}: {notes}")
    for t, kind, cls, text in r["clients"].events:
        ex.add(t, None, {cls}, "socket", 1, f"{kind}: {text}")
    return ex, statuses


def summary(r):
    args, rows, warm_row, start_row, end_row = r["args"], r["rows"], r["warm_row"], r["start_row"], r["end_row"]
    if warm_row is None:
        warm_row = max((x for x in rows if x["phase"] == "warmup"), key=lambda x: x["t_s"])
    faults = r["faults"]
    windows = faults.windows if faults else []
    lines = [f"**ringside soak, {r['profile']} profile**: {r['duration']} s of mixed load, warm-up {r['warmup']} s, "
             f"{r['workers']} worker(s), access log and /metrics on; {len(rows)} samples every {args.interval:g} s"
             + (f"; faults from {r['faults_at'][0]} s to {r['faults_at'][1]} s" if r["faults_at"] else "") + ".",
             "", "| figure | value | check |", "|---|---|---|"]

    def add(*cells):
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    checks = {}

    rss_ok, lo, hi, worst = verdict.rss_check(rows, warm_row)
    checks["RSS"] = rss_ok
    base = warm_row["rss_kib"]
    after = [x for x in rows if x["t_s"] > warm_row["t_s"] and x["phase"] != "after"] or [warm_row]
    pool_hi = max(x["buffer_kib"] for x in after)
    add("RSS at start (before load)", f"{mib(start_row['rss_kib'])} (anon {mib(start_row['rss_anon_kib'])})", "")
    add(f"RSS at end of warm-up (t={warm_row['t_s']:.0f} s); request buffers then",
        f"{mib(base)}; {mib(warm_row['buffer_kib'])}", "")
    add("RSS min / max after warm-up; request buffers max",
        f"{mib(lo)} ({(lo / base - 1) * 100:+.1f}%) / {mib(hi)} ({(hi / base - 1) * 100:+.1f}%); {mib(pool_hi)}",
        f"{'pass' if rss_ok else 'FAIL'}: ±5%, less what the request buffers took on: worst {worst * 100:+.1f}%")
    add("RSS at end (drained)", mib(end_row["rss_kib"]), "")
    busy = [x["cpu_busy"] for x in rows if x["phase"] == "load" and x["cpu_busy"] != ""]
    if busy:
        side = [x["side_cpu_busy"] for x in rows if x["phase"] == "load"]
        add("ringside CPU after warm-up (per sample)", f"median {statistics.median(busy) * 100:.0f}%, "
            f"min {min(busy) * 100:.0f}%, max {max(busy) * 100:.0f}% of one core; the clients' and backends' "
            f"CPU: median {statistics.median(side) * 100:.0f}%, max {max(side) * 100:.0f}%", "")
    add("fds before load", fmt_fds(r["fd_before"]), "")
    add("fds peak", max(x["fds"] for x in rows), "")
    checks["fds"] = r["fd_pass"]
    add(f"fds after (drained in {r['waited'][0]:.1f} s + {r['waited'][1]:.1f} s)", fmt_fds(r["fd_after"]),
        f"{'pass' if r['fd_pass'] else 'FAIL'}: {r['fd_text']}")
    add("threads (start / end)", f"{start_row['threads']} / {end_row['threads']}", "")

    ex, statuses = failures(r, windows)
    checks["failures"] = not ex.unexplained
    n_unexplained = sum(n for _, n, _, _ in ex.unexplained)
    add("failures no fault explains", n_unexplained, "pass" if not ex.unexplained else "FAIL")
    warns = verdict.log_warnings(r["server_log"], r["wall_t0"])
    loose = [(t, line) for t, line in warns
             if t is None or not any(w.covers(t) for w in windows)]
    checks["warnings"] = not loose
    add("ringside log: WARN/ERROR lines; unexplained; exit status on SIGTERM",
        f"{len(warns)}; {len(loose)}; {r['server_rc']}", "pass" if not loose else "FAIL")
    add("access log lines by status", ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())), "")
    if faults:
        rel = faults.reloads
        got = None
        if r["end_m"]:
            got = (int(r["end_m"].get("ringside_reloads_total", 0)))
        checks["reloads"] = not rel["unexpected"]
        add("reloads: accepted / refused as wanted", f"{rel['ok']} / {rel['failed']} (ringside counted {got} in all)"
            + ("; " + "; ".join(rel["unexpected"]) if rel["unexpected"] else ""),
            "pass" if not rel["unexpected"] else "FAIL")
        p = verdict.phase_p99(r["loaders"]["static-ka"].rows, r["warmup"], *r["faults_at"])
        before = p["before"][0]
        ok = before is not None and all(p[k][0] is not None and p[k][0] <= verdict.P99_LIMIT * before
                                        for k in ("during", "after"))
        checks["p99"] = ok
        add("static-ka p99, median (max) of its segments: before / during / after the faults",
            " / ".join(f"{p[k][0]:.2f} ms ({p[k][1]:.2f})" if p[k][0] is not None else "-"
                       for k in ("before", "during", "after")), f"{'pass' if ok else 'FAIL'}: ≤ 2× before")

    lines += ["", "| kind | load | requests done | non-2xx | socket errors | notes |", "|---|---|---:|---:|---:|---|"]
    total = [0, 0, 0]
    for name, ld in r["loaders"].items():
        done, non, errs, notes = ld.totals()
        total = [total[0] + done, total[1] + non, total[2] + errs]
        add(name, ld.kind.describe(), done, non, errs, notes[:200])
    cl = r["clients"]
    for kind, (_fn, n, rate) in cl.kinds.items():
        total = [total[0] + cl.done[kind], total[1], total[2] + cl.errors[kind]]
        last = next((e[3] for e in reversed(cl.events) if e[1] == kind), "")
        add(kind, f"{n} × {rate:g}/s", cl.done[kind], "", cl.errors[kind], last[:200])
    add("**total**", "", *total, "")

    if faults:
        lines += ["", "| fault | injected at (s) | note |", "|---|---|---|"]
        for t, what, note in faults.done:
            add(what, f"{t:.0f}", note)
        lines += ["", "| fault | failures it explains, by status |", "|---|---|"]
        for what in sorted({w.what for w in windows}):
            d = ex.by_fault.get(what, {})
            add(what, ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=str)) or "none")
        f = r["filler"].history
        if f:
            lines += ["", "Filler steering (ringside busy in the last segment → next rate/s): "
                      + ", ".join(f"{b * 100:.0f}%→{rt}" for b, rt in f)]
        lines += ["", "| t (s) | phase | ringside CPU | side CPU | RSS (request buffers) | fds (sock/pipe/file/other) | open conns | spare pipes | "
                  "cached files | upstream idle |", "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|"]
        for x in rows:
            if int(x["t_s"]) % 120 < args.interval or x["phase"] in ("before", "after"):
                cpu = f"{x['cpu_busy'] * 100:.0f}%" if x["cpu_busy"] != "" else ""
                add(f"{x['t_s']:.0f}", x["phase"], cpu, f"{x['side_cpu_busy'] * 100:.0f}%", f"{mib(x['rss_kib'])} ({mib(x['buffer_kib'])})",
                    f"{x['fds']} ({x['fd_socket']}/{x['fd_pipe']}/{x['fd_file']}/{x['fd_other']})",
                    x["open_conns"], x["spare_pipes"], x["cached_files"], x["upstream_idle"])
    if ex.unexplained:
        lines += ["", "Unexplained failures (first 20):"]
        lines += [f"- t={t:.1f} s: {n} × {st}: {text}" for t, n, st, text in ex.unexplained[:20]]
    if loose:
        lines += ["", "Unexplained log lines (first 10):"]
        lines += [f"- {line[:300]}" for _, line in loose[:10]]
    ok = all(checks.values())
    lines += ["", f"Verdict: **{'PASS' if ok else 'FAIL'}** ("
              + ", ".join(f"{k} {'pass' if v else 'FAIL'}" for k, v in checks.items())
              + f"). Samples: `{r['out']}`."]
    return "\n".join(lines), ok
