"""The clients of a soak written here, one thread per kind at its own rate:
aborted requests, slow readers, TLS with a handshake per request. Every
failure is kept with its time, so that the verdict can tell one a fault
explains from one it does not."""
import os
import random
import socket
import ssl
import struct
import threading
import time


def path_class(path):
    for prefix, cls in (("/up/", "up"), ("/php/", "php")):
        if path.startswith(prefix):
            return cls
    return "static"


class Clients:
    """KINDS: name -> (method, threads, rate per second of each thread)."""

    def __init__(self, port, t0, abort_rate, heavy=False, tls_port=None):
        self.addr = ("127.0.0.1", port)
        self.tls_addr = ("127.0.0.1", tls_port) if tls_port else None
        self.t0 = t0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.kinds = {"abort-head": (self.head, 1, abort_rate), "abort-large": (self.large, 1, abort_rate),
                      "abort-post": (self.post, 1, abort_rate)}
        if heavy:
            # Back to back: each reads at about 320 KiB/s, so a 768 KiB body
            # takes ~2.4 s; four of them keep ringside waiting on slow sockets.
            self.kinds["slow-read"] = (self.slow_read, 4, 100.0)
            self.kinds["tls-close"] = (self.tls_close, 1, 20.0)
        self.done = {k: 0 for k in self.kinds}
        self.errors = {k: 0 for k in self.kinds}
        self.events = []  # (t, kind, class, text)
        self.threads = []
        self.rnd = random.Random(7)
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE
        self.session = None

    def count(self, kind, path, err=None):
        with self.lock:
            if err is None:
                self.done[kind] += 1
            else:
                self.errors[kind] += 1
                self.events.append((time.monotonic() - self.t0, kind, path_class(path), err))

    def start(self):
        for kind, (fn, n, rate) in self.kinds.items():
            for i in range(n):
                t = threading.Thread(target=self.loop, args=(kind, fn, rate), name=f"{kind}-{i}", daemon=True)
                t.start()
                self.threads.append(t)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def loop(self, kind, fn, rate):
        gap = 1.0 / rate
        next_at = time.monotonic()
        while not self.stop.is_set():
            path = "?"
            try:
                path = fn()
                self.count(kind, path)
            except Exception as e:  # noqa: BLE001 - every failure is counted
                path = getattr(e, "soak_path", path)
                self.count(kind, path, f"{type(e).__name__}: {e}")
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
        return "/static/" if b"/static/" in part or not part else part.split(b" ")[1].decode()

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
            sep = "&" if "?" in path else "?"
            s.sendall(f"GET {path}{sep}k=abort-large HTTP/1.1\r\nHost: soak\r\n\r\n".encode())
            got = b""
            want = self.rnd.randint(1, 48) << 10
            while len(got) < want:
                more = s.recv(65536)
                if not more:
                    raise RuntimeError(f"{path}: closed after {len(got)} bytes")
                got += more
            if not got.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"{path}: {got[:40]!r}")
        except Exception as e:
            e.soak_path = path
            raise
        finally:
            self.close(s, True)
        return path

    def post(self):
        """A POST body of 200000 bytes announced, 4-16 KiB of it sent."""
        path = self.rnd.choice(["/php/echo.php", "/php/echo.php", "/up/small.txt"])
        s = socket.create_connection(self.addr, timeout=5)
        try:
            s.sendall(f"POST {path}?k=abort-post HTTP/1.1\r\nHost: soak\r\nContent-Type: application/octet-stream\r\n"
                      f"Content-Length: 200000\r\n\r\n".encode())
            try:
                s.sendall(os.urandom(self.rnd.randint(4, 16) << 10))
            except OSError:
                pass  # the server may answer (405 through the proxy) and close first
            if self.rnd.random() < 0.5:
                time.sleep(self.rnd.random() * 0.05)
        finally:
            self.close(s, self.rnd.random() < 0.5)
        return path

    @staticmethod
    def read_response(s, path, pace=None):
        """Reads one whole response with Content-Length; checks 200 and the
        length. With `pace`, 16 KiB at a time, `pace` seconds apart."""
        buf = b""
        while b"\r\n\r\n" not in buf:
            more = s.recv(16384)
            if not more:
                raise RuntimeError(f"{path}: closed in the head after {len(buf)} bytes")
            buf += more
        head, _, body = buf.partition(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if status != b"200" or length is None:
            raise RuntimeError(f"{path}: {head[:60]!r}")
        got = len(body)
        while got < length:
            if pace:
                time.sleep(pace)
            more = s.recv(16384)
            if not more:
                raise RuntimeError(f"{path}: closed after {got} of {length} body bytes")
            got += len(more)
        return got

    def slow_read(self):
        """A 768 KiB file read 16 KiB every 50 ms, to the last byte."""
        path = "/static/big.bin?k=slow-read"
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.settimeout(30)
        try:
            s.connect(self.addr)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: soak\r\n\r\n".encode())
            self.read_response(s, path, pace=0.05)
        finally:
            s.close()
        return path

    def tls_close(self):
        """One request per TLS connection, every other one resuming the
        last session: full and abbreviated handshakes both."""
        path = self.rnd.choice(["/static/page.html", "/static/small.txt", "/up/small.txt"]) + "?k=tls-close"
        raw = socket.create_connection(self.tls_addr, timeout=10)
        try:
            session = self.session if self.rnd.random() < 0.5 else None
            s = self.ctx.wrap_socket(raw, server_hostname="localhost", session=session)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n".encode())
            self.read_response(s, path)
            self.session = s.session
            s.close()
        except Exception as e:
            e.soak_path = path
            raise
        finally:
            raw.close()
        return path
