#!/usr/bin/env python3
"""RSS per idle keep-alive connection.

Opens N connections to a running server one after another, sends one request
on each and reads its response, keeps them all open and idle, and reports the
server's RSS (VmRSS, all threads) before and after. With --h2 each
connection is h2c by prior knowledge (Python's h2, /usr/bin/python3's
python3-h2), one stream answered, then idle. With --tls each connection is
HTTP/1.1 over TLS (the certificate is not checked).

usage: idle_rss.py PID PORT [N] [PATH] [--h2 | --tls]
"""
import resource
import socket
import ssl
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


def h2_request(s, path):
    """One h2c request on s, read to its end; returns the h2 connection."""
    import h2.config
    import h2.connection
    import h2.events
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":path", path),
                          (":authority", "x")], end_stream=True)
    s.sendall(conn.data_to_send())
    status = None
    while True:
        data = s.recv(65536)
        if not data:
            raise RuntimeError("closed before a response")
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status = dict(ev.headers).get(b":status")
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                s.sendall(conn.data_to_send())
                if status != b"200":
                    raise RuntimeError(f"status {status}")
                return conn
        s.sendall(conn.data_to_send())


def main():
    h2 = "--h2" in sys.argv
    tls = "--tls" in sys.argv
    argv = [a for a in sys.argv if a not in ("--h2", "--tls")]
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    pid, port = int(argv[1]), int(argv[2])
    n = int(argv[3]) if len(argv) > 3 else 10000
    path = argv[4] if len(argv) > 4 else "/hello.txt"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1000), hard))
    # Warm up: one connection, so lazily built per-core state is counted in
    # the baseline rather than charged to the idle connections.
    def one():
        s = socket.create_connection(("127.0.0.1", port))
        if tls:
            s = ctx.wrap_socket(s, server_hostname="localhost")
        if h2:
            h2_request(s, path)
        else:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            read_response(s)
        return s
    warm = one()
    before = rss_kib(pid)
    socks = []
    for _ in range(n):
        socks.append(one())
    after = rss_kib(pid)
    per = (after - before) * 1024 / n
    print(f"connections={n} rss_before_kib={before} rss_after_kib={after} per_connection_bytes={per:.0f}")
    for s in socks:
        s.close()
    warm.close()


if __name__ == "__main__":
    main()
