#!/usr/bin/env python3
"""Two builds of ringside (or one build under two settings) compared by
server CPU per request, both serving at once: both on CPU 0 with one
worker, each with its own load generator, both load generators on CPU 1,
started together and run for the same time.

Why at once: this machine's speed swings by a quarter within minutes, so
servers measured in turn (cpu_per_request.py and its kin) cannot tell a
change worth 1-5% from the swing. Two servers sharing the core at the
same moments see the same swings, and the ratio of their CPU per request
holds still: with the same build on both sides it stayed within
0.976-1.043 of 1 (five rounds of 8 s), where taking turns gave 0.7-1.3.

What it gives is a ratio, not a figure to quote: with two servers taking
turns on one core, each finds less of its state in the cache than it
would alone, so the microseconds are higher than cpu_per_request.py's.
Use the house scripts for the figures and this to decide whether a
change helps.

usage: ab_concurrent.py --baseline EXE [--a ringside] [--b baseline]
                        [--proto h3|h2] [--file 11k.txt] [--rounds 5]
                        [--duration 8] [-c 100] [-m 10] [--proxy]

--proxy has both proxy to one nginx origin (18 bytes on every path) on
CPU 1, as h3_cpu_per_request.py --proxy does.

Server names are cpu_per_request.py's: "ringside" is target/release,
"baseline" the --baseline binary, and either takes +NAME=VALUE for an
environment variable or a flag of its own (ringside+RINGSIDE_QUIC_GSO=off).
"""

import argparse
import os
import shutil
import statistics
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_request as base  # noqa: E402
import h2_cpu_per_request as h2  # noqa: E402
import h3_cpu_per_request as h3  # noqa: E402


def load(port, args, duration):
    if args.proto == "h3":
        return h3.h3load(port, args, duration)
    h2args = argparse.Namespace(tls=True, h1=False, file=args.file)
    return h2.h2load(port, h2args, duration, args.c, args.m)[0]


def together(ports, args, duration):
    """Runs a load against each port at once; the requests each completed."""
    done, errors = [None] * len(ports), []

    def run(i, port):
        try:
            done[i] = load(port, args, duration)
        except RuntimeError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(ports)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return done


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", default="baseline")
    p.add_argument("--b", default="ringside")
    p.add_argument("--baseline", default=None)
    p.add_argument("--proto", choices=["h3", "h2"], default="h3")
    p.add_argument("--file", default="11k.txt")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=8)
    p.add_argument("-c", type=int, default=100)
    p.add_argument("-m", type=int, default=10)
    p.add_argument("--proxy", action="store_true")
    args = p.parse_args()
    base.BASELINE = args.baseline
    root = h2.make_root()
    cert = h2.make_cert(root)
    # h3_cpu_per_request's start serves HTTP/2 and HTTP/3 on one listener.
    # --proxy: both proxy to one nginx origin on CPU 1, as in h3_cpu_per_request.
    origin = base.start_origin() if args.proxy else None
    servers = [h3.start(n, root, args, cert, origin[1] if origin else None) for n in (args.a, args.b)]
    ratios = []
    try:
        ports = [s[1] for s in servers]
        together(ports, args, 1)
        print(f"# {args.proto} /{args.file}, -c{args.c} streams {args.m}, {args.duration}s x {args.rounds}; "
              f"A = {args.a}, B = {args.b}, both on CPU 0 at once, loads on CPU 1")
        print(f"{'round':>5} {'A us/req':>9} {'B us/req':>9} {'A req':>8} {'B req':>8} {'B/A':>6}")
        for r in range(args.rounds):
            before = [sum(base.cpu_ticks(s[0].pid)) for s in servers]
            done = together(ports, args, args.duration)
            after = [sum(base.cpu_ticks(s[0].pid)) for s in servers]
            us = [(after[i] - before[i]) / base.TICK / done[i] * 1e6 for i in range(2)]
            ratios.append(us[1] / us[0])
            print(f"{r + 1:>5} {us[0]:>9.2f} {us[1]:>9.2f} {done[0]:>8} {done[1]:>8} {ratios[-1]:>6.3f}",
                  flush=True)
    finally:
        for proc, _, prefix in servers:
            base.stop(proc, prefix)
        if origin:
            base.stop(origin[0], origin[2])
        shutil.rmtree(root, ignore_errors=True)
        for f in cert:
            os.unlink(f)
    print(f"# B/A median {statistics.median(ratios):.3f}, from {min(ratios):.3f} to {max(ratios):.3f}")


if __name__ == "__main__":
    main()
