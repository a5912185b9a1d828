#!/usr/bin/env python3
"""A minimal RFC 6455 WebSocket client for proxy tests (python3 stdlib only).

    python3 ws_client.py HOST PORT PATH MESSAGE...

connects to HOST:PORT (in the tests, the proxy), sends the opening handshake
for PATH with Host set to HOST:PORT, checks for 101 and the right
Sec-WebSocket-Accept, then sends each MESSAGE as one masked text frame and
reads its echo, printing each echoed message on its own line. It ends with a
close frame, waits for the server's close, and exits 0. On any failure (a
status other than 101, a wrong accept key, an echo that differs, a timeout,
the connection closing early) it prints why on stderr and exits 1.
"""
import base64
import hashlib
import os
import socket
import struct
import sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TIMEOUT = 10.0


class Fail(Exception):
    pass


def read_exact(conn, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise Fail(f"connection closed with {n - len(buf)} bytes of a frame still to come")
        buf += chunk
    return bytes(buf)


class Conn:
    def __init__(self, sock, pending):
        self.sock = sock
        self.pending = pending

    def recv(self, n):
        if self.pending:
            out, self.pending = self.pending[:n], self.pending[n:]
            return out
        return self.sock.recv(n)


def masked_frame(opcode, payload):
    """A client frame: FIN set, masked with a fresh key (RFC 6455 section 5.3)."""
    key = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + key + bytes(b ^ key[i & 3] for i, b in enumerate(payload))


def read_frame(conn):
    b0, b1 = read_exact(conn, 2)
    opcode, length = b0 & 0x0F, b1 & 0x7F
    if b1 & 0x80:
        raise Fail("server sent a masked frame")
    if length == 126:
        (length,) = struct.unpack("!H", read_exact(conn, 2))
    elif length == 127:
        (length,) = struct.unpack("!Q", read_exact(conn, 8))
    return bool(b0 & 0x80), opcode, read_exact(conn, length)


def read_message(conn, sock):
    """The next text/binary message, answering pings on the way."""
    data, op = b"", None
    while True:
        fin, opcode, payload = read_frame(conn)
        if opcode == 0x9:
            sock.sendall(masked_frame(0xA, payload))
            continue
        if opcode == 0xA:
            continue
        if opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            raise Fail(f"server closed the WebSocket (code {code}, {payload[2:]!r}) before echoing")
        if opcode in (0x1, 0x2):
            data, op = payload, opcode
        elif opcode == 0x0 and op is not None:
            data += payload
        else:
            raise Fail(f"unexpected opcode {opcode:#x}")
        if fin:
            return op, data


def handshake(sock, host, port, path):
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (f"GET {path} HTTP/1.1\r\n"
         f"Host: {host}:{port}\r\n"
         "Upgrade: websocket\r\n"
         "Connection: Upgrade\r\n"
         f"Sec-WebSocket-Key: {key}\r\n"
         "Sec-WebSocket-Version: 13\r\n\r\n").encode()
    )
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise Fail(f"connection closed during the handshake after {buf!r}")
        buf += chunk
        if len(buf) > 16384:
            raise Fail("handshake response head too large")
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if len(status) < 2 or status[1] != "101":
        raise Fail(f"handshake answered {lines[0]!r}, not 101")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    want = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
    if headers.get("sec-websocket-accept") != want:
        raise Fail(f"Sec-WebSocket-Accept is {headers.get('sec-websocket-accept')!r}, want {want!r}")
    if headers.get("upgrade", "").lower() != "websocket":
        raise Fail(f"Upgrade header is {headers.get('upgrade')!r}")
    return Conn(sock, rest)


def main(argv):
    if len(argv) < 5:
        print("usage: ws_client.py HOST PORT PATH MESSAGE...", file=sys.stderr)
        return 2
    host, port, path, messages = argv[1], argv[2], argv[3], argv[4:]
    if not port.isdigit() or not 0 < int(port) < 65536:
        print(f"ws_client: PORT {port!r} is not a port number", file=sys.stderr)
        return 2
    port = int(port)
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT) as sock:
            conn = handshake(sock, host, port, path)
            for msg in messages:
                sock.sendall(masked_frame(0x1, msg.encode()))
                op, echo = read_message(conn, sock)
                if op != 0x1 or echo != msg.encode():
                    raise Fail(f"sent {msg!r}, got back opcode {op:#x} {echo!r}")
                print(echo.decode(), flush=True)
            sock.sendall(masked_frame(0x8, struct.pack("!H", 1000)))
            while True:
                _fin, opcode, _payload = read_frame(conn)
                if opcode == 0x8:
                    break
        return 0
    except (Fail, OSError, ValueError, UnicodeDecodeError) as e:
        print(f"ws_client: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
