#!/usr/bin/env python3
"""RSS per idle keep-alive connection.

Opens N connections to a running server one after another, sends one request
on each and reads its response, keeps them all open and idle, and reports the
server's RSS (VmRSS, all threads) before and after.

usage: idle_rss.py PID PORT [N] [PATH]
"""
import resource
import socket
import sys


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def read_response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("closed before a response")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += s.recv(65536)
    status = int(head.split(b" ")[1])
    if status != 200:
        raise RuntimeError(f"status {status}")


def main():
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    path = sys.argv[4] if len(sys.argv) > 4 else "/hello.txt"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1000), hard))
    # Warm up: one connection, so lazily built per-core state is counted in
    # the baseline rather than charged to the idle connections.
    warm = socket.create_connection(("127.0.0.1", port))
    warm.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    read_response(warm)
    before = rss_kib(pid)
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        read_response(s)
        socks.append(s)
    after = rss_kib(pid)
    per = (after - before) * 1024 / n
    print(f"connections={n} rss_before_kib={before} rss_after_kib={after} per_connection_bytes={per:.0f}")
    for s in socks:
        s.close()
    warm.close()


if __name__ == "__main__":
    main()
