#!/usr/bin/env python3
"""How fast the kernel copies a cached file into user memory, by where the
destination starts relative to the source's offset in its page.

Why: on the AMD EPYC this project is measured on, the kernel's `rep movsb`
copy ran 3.4 times slower when the destination lay 1 to 31 bytes past the
source within a page, which is where a malloc'd buffer (16 bytes into a
page) put a file's bytes behind a 5-byte HTTP/3 frame header. Ringside now
starts each read on the source's offset in a cache line
(`runtime::fs::read_pad`); this shows whether a machine has the effect.

usage: pread_alignment.py [--mib 100] [--piece-kib 256] [--offsets 0,5,16,21,32,64]
Run it pinned (taskset -c 0); it prints the best of 5 passes per offset.
"""

import argparse
import mmap
import os
import tempfile
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=100)
    p.add_argument("--piece-kib", type=int, default=256)
    p.add_argument("--offsets", default="0,5,16,21,31,32,64")
    a = p.parse_args()
    piece = a.piece_kib << 10
    size = a.mib << 20
    with tempfile.NamedTemporaryFile(prefix="pread-align-") as f:
        f.write(os.urandom(size))
        f.flush()
        fd = os.open(f.name, os.O_RDONLY)
        # Page-aligned, so an offset here is the destination's offset in
        # its page, and the file's pieces start on pages.
        buf = mmap.mmap(-1, piece + 2 * mmap.PAGESIZE)
        view = memoryview(buf)
        for _ in range(2):  # into the page cache, and the buffer faulted in
            for pos in range(0, size, piece):
                os.preadv(fd, [view[:piece]], pos)
        print(f"# {a.mib} MiB in {a.piece_kib} KiB preads; destination offset in its page (source: 0)")
        for off in (int(x) for x in a.offsets.split(",")):
            best = None
            for _ in range(5):
                t0 = time.perf_counter()
                for pos in range(0, size, piece):
                    os.preadv(fd, [view[off:off + piece]], pos)
                t = time.perf_counter() - t0
                best = t if best is None else min(best, t)
            print(f"offset {off:>4}: {best * 1000 / a.mib:.3f} ms/MiB")
        view.release()
        buf.close()
        os.close(fd)


if __name__ == "__main__":
    main()
