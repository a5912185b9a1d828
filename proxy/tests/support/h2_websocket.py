#!/usr/bin/python3
"""A WebSocket client over HTTP/2 (RFC 8441 extended CONNECT), frame by
frame with Python's hyperframe and hpack (h2_attacks.Conn).

    h2_websocket.py HOST:PORT PATH MESSAGE...

Checks that the server's SETTINGS enable extended CONNECT, opens stream 1
with :method CONNECT and :protocol websocket, wants :status 200, then
sends each MESSAGE as one masked text frame in DATA and reads its echo,
printing each echoed message on its own line; then a close frame, the
server's close, and END_STREAM. Exits 1 with the reason on stderr on any
failure.
"""

import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h2_attacks import Conn, DataFrame, HeadersFrame, SettingsFrame  # noqa: E402

ENABLE_CONNECT_PROTOCOL = 0x8


def ws_frame(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_parse(buf):
    """(opcode, payload, rest) of the first whole frame in buf, or None."""
    if len(buf) < 2:
        return None
    op, n = buf[0] & 0x0F, buf[1] & 0x7F
    at = 2
    if n == 126:
        if len(buf) < 4:
            return None
        n, at = struct.unpack("!H", buf[2:4])[0], 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n, at = struct.unpack("!Q", buf[2:10])[0], 10
    if len(buf) < at + n:
        return None
    return op, buf[at:at + n], buf[at + n:]


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def main():
    addr, path, messages = sys.argv[1], sys.argv[2], sys.argv[3:]
    c = Conn(addr)
    settings = {}
    deadline = time.monotonic() + 10
    while not settings:
        f = c.read_frame(deadline)
        if f is None:
            fail("no SETTINGS from the server")
        if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
            settings = dict(f.settings)
    if settings.get(ENABLE_CONNECT_PROTOCOL) != 1:
        fail(f"extended CONNECT not enabled: {settings}")
    block = c.enc.encode([(":method", "CONNECT"), (":protocol", "websocket"),
                          (":scheme", "http"), (":path", path), (":authority", addr),
                          ("sec-websocket-version", "13")])
    c.send(HeadersFrame(1, block, flags=["END_HEADERS"]))
    if not c.until(lambda: 1 in c.status or 1 in c.resets or c.goaway is not None):
        fail("no answer to the extended CONNECT")
    if c.status.get(1) != 200:
        fail(f"extended CONNECT answered {c.status.get(1)}, reset {c.resets.get(1)}")
    for m in messages:
        payload = m.encode()
        data = ws_frame(0x1, payload)
        for at in range(0, len(data), 16000):
            c.send(DataFrame(1, data[at:at + 16000]))
        if not c.until(lambda: ws_parse(c.body.get(1, b"")) is not None):
            fail(f"no echo of {m[:20]!r}")
        op, echo, rest = ws_parse(c.body[1])
        c.body[1] = rest
        if op != 0x1 or echo != payload:
            fail(f"echo {op:#x} {echo[:40]!r} for {m[:40]!r}")
        print(echo.decode(), flush=True)
    c.send(DataFrame(1, ws_frame(0x8, struct.pack("!H", 1000))))
    if not c.until(lambda: ws_parse(c.body.get(1, b"")) is not None):
        fail("no close from the server")
    c.send(DataFrame(1, b"", flags=["END_STREAM"]))
    if not c.until(lambda: 1 in c.ended or 1 in c.resets):
        fail("the stream was not ended after the close")
    c.close()


if __name__ == "__main__":
    main()
