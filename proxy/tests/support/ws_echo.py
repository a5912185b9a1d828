#!/usr/bin/env python3
"""A minimal RFC 6455 WebSocket echo server for proxy tests (python3 stdlib only).

    python3 ws_echo.py

binds 127.0.0.1 on a free port, prints "PORT <n>" on stdout and flushes, then
serves each connection on its own thread: it completes the opening handshake
(RFC 6455 section 4.2; Sec-WebSocket-Accept is base64(SHA-1(key + GUID))),
echoes text and binary messages back (fragmented messages are reassembled and
echoed as one), answers ping with pong, and answers close with close. It
exits when its stdin reaches EOF, so a test that drops the pipe ends it.

Any other request than a GET with "Upgrade: websocket" gets 400. Frames from
the client must be masked (section 5.1); an unmasked one gets close 1002.
"""
import base64
import hashlib
import socket
import struct
import sys
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_HEAD = 16384
MAX_PAYLOAD = 16 << 20


def accept_key(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("peer closed mid-frame")
        buf += chunk
    return bytes(buf)


def read_head(sock):
    """Reads up to the blank line; returns (head, bytes read past it)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD:
            raise ValueError("request head too large")
        chunk = sock.recv(4096)
        if not chunk:
            raise EOFError("peer closed during the handshake")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


class Conn:
    """A socket with bytes already read kept in front of it."""

    def __init__(self, sock, pending):
        self.sock = sock
        self.pending = pending

    def recv(self, n):
        if self.pending:
            out, self.pending = self.pending[:n], self.pending[n:]
            return out
        return self.sock.recv(n)


def read_frame(conn):
    """Returns (fin, opcode, payload), unmasked (RFC 6455 section 5.2)."""
    b0, b1 = read_exact(conn, 2)
    fin, opcode = b0 & 0x80, b0 & 0x0F
    masked, length = b1 & 0x80, b1 & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", read_exact(conn, 2))
    elif length == 127:
        (length,) = struct.unpack("!Q", read_exact(conn, 8))
    if length > MAX_PAYLOAD:
        raise ValueError(f"frame of {length} bytes is too large")
    mask = read_exact(conn, 4) if masked else None
    payload = read_exact(conn, length)
    if mask:
        payload = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
    return bool(fin), opcode, payload, bool(masked)


def frame(opcode, payload):
    """A server frame: FIN set, never masked (section 5.1)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


def handshake(sock):
    head, rest = read_head(sock)
    lines = head.split("\r\n")
    parts = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    ok = (
        len(parts) == 3
        and parts[0] == "GET"
        and "websocket" in headers.get("upgrade", "").lower()
        and "upgrade" in headers.get("connection", "").lower()
        and "sec-websocket-key" in headers
    )
    if not ok:
        body = b"not a WebSocket handshake\n"
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return None
    sock.sendall(
        ("HTTP/1.1 101 Switching Protocols\r\n"
         "Upgrade: websocket\r\n"
         "Connection: Upgrade\r\n"
         f"Sec-WebSocket-Accept: {accept_key(headers['sec-websocket-key'])}\r\n\r\n").encode()
    )
    return Conn(sock, rest)


def serve(sock):
    with sock:
        try:
            conn = handshake(sock)
            if conn is None:
                return
            message, message_op = b"", None
            while True:
                fin, opcode, payload, masked = read_frame(conn)
                if not masked:
                    sock.sendall(frame(0x8, struct.pack("!H", 1002) + b"unmasked frame"))
                    return
                if opcode == 0x8:  # close: answer with the same status, then end
                    sock.sendall(frame(0x8, payload[:2]))
                    return
                if opcode == 0x9:  # ping
                    sock.sendall(frame(0xA, payload))
                    continue
                if opcode == 0xA:  # unsolicited pong
                    continue
                if opcode in (0x1, 0x2):
                    message, message_op = payload, opcode
                elif opcode == 0x0 and message_op is not None:
                    message += payload
                else:
                    sock.sendall(frame(0x8, struct.pack("!H", 1002) + b"bad opcode"))
                    return
                if fin:
                    sock.sendall(frame(message_op, message))
                    message, message_op = b"", None
        except (EOFError, OSError, ValueError):
            return


def main():
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)

    def accept_loop():
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(sock,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    # Block until the test drops our stdin; daemon threads die with us.
    sys.stdin.buffer.read()
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
