#!/usr/bin/python3
"""HTTP/2 attacks against ringside, frame by frame (Python's h2 family:
hyperframe writes the frames, hpack the header blocks, so nothing on the
client side refuses to send what a client must not).

Usage: h2_attacks.py HOST:PORT CASE...
Prints "ok CASE: detail" or "FAIL CASE: reason" for each case, and exits 1
if any failed. Every case checks that the server answers a normal request
on a fresh connection afterwards.
"""

import socket
import sys
import time

from hpack import Encoder, Decoder, NeverIndexedHeaderTuple
from hyperframe.frame import (
    ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame,
    PriorityFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED, FRAME_SIZE_ERROR = 0x1, 0x3, 0x5, 0x6
REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = 0x7, 0x8, 0xB


class Failed(Exception):
    pass


class Conn:
    def __init__(self, addr, settings=None):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.enc = Encoder()
        self.dec = Decoder()
        self.buf = b""
        self.eof = False
        self.goaway = None
        self.resets = {}
        self.status = {}
        self.body = {}
        self.ended = set()
        self.sent = 0
        self.raw(PREFACE + SettingsFrame(0, settings or {}).serialize())

    def raw(self, data):
        try:
            self.sock.sendall(data)
            self.sent += len(data)
            return True
        except OSError:
            return False

    def send(self, *frames):
        return self.raw(b"".join(f.serialize() for f in frames))

    def block(self, path="/small.txt", method="GET", extra=(), authority="h2.test"):
        fields = [(":method", method), (":scheme", "http"), (":path", path),
                  (":authority", authority)] + list(extra)
        return self.enc.encode(fields)

    def request(self, sid, path="/small.txt", method="GET", end=True, extra=()):
        flags = ["END_HEADERS"] + (["END_STREAM"] if end else [])
        return HeadersFrame(sid, self.block(path, method, extra), flags=flags)

    def read_frame(self, deadline):
        while True:
            if len(self.buf) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buf[:9]))
                if len(self.buf) >= 9 + length:
                    frame.parse_body(memoryview(self.buf[9:9 + length]))
                    self.buf = self.buf[9 + length:]
                    self.note(frame)
                    return frame
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return None
            except OSError:
                data = b""
            if not data:
                self.eof = True
            self.buf += data

    def note(self, f):
        if isinstance(f, GoAwayFrame):
            self.goaway = f.error_code
            self.last_stream = f.last_stream_id
        elif isinstance(f, RstStreamFrame):
            self.resets[f.stream_id] = f.error_code
        elif isinstance(f, HeadersFrame):
            for name, value in self.dec.decode(f.data):
                if name in (b":status", ":status"):
                    self.status[f.stream_id] = int(value)
            if "END_STREAM" in f.flags:
                self.ended.add(f.stream_id)
        elif isinstance(f, DataFrame):
            self.body[f.stream_id] = self.body.get(f.stream_id, b"") + f.data
            if "END_STREAM" in f.flags:
                self.ended.add(f.stream_id)
        elif isinstance(f, SettingsFrame) and "ACK" not in f.flags:
            self.send(SettingsFrame(0, flags=["ACK"]))
        elif isinstance(f, PingFrame) and "ACK" not in f.flags:
            self.send(PingFrame(0, f.opaque_data, flags=["ACK"]))

    def until(self, done, seconds=10):
        """Reads until done() holds, the server closes, or time runs out."""
        deadline = time.monotonic() + seconds
        while not done():
            if self.read_frame(deadline) is None:
                return done()
        return True

    def drain(self, seconds=10):
        """Reads until the server closes; returns whether it did."""
        self.until(lambda: False, seconds)
        return self.eof

    def close(self):
        self.sock.close()


def expect(cond, why):
    if not cond:
        raise Failed(why)


def flood(addr, make, what, first=None):
    """Sends make(conn, n) for n = 0, 1, ... (after first(conn), if given)
    until the server answers GOAWAY, which must be ENHANCE_YOUR_CALM, and
    closes."""
    c = Conn(addr)
    if first:
        c.send(first(c))
    n = 0
    while n < 20000 and c.send(*make(c, n)):
        n += 1
        if n % 200 == 0 and c.until(lambda: c.goaway is not None, 0):
            break
    expect(c.until(lambda: c.goaway is not None), f"no GOAWAY after {n} {what}")
    expect(c.goaway == ENHANCE_YOUR_CALM, f"GOAWAY {c.goaway} after {what}")
    expect(c.drain(), "connection left open after GOAWAY")
    return f"GOAWAY ENHANCE_YOUR_CALM after {n} {what}"


def connection_error(addr, frames, code, what):
    """frames(conn) must end the connection with GOAWAY code."""
    c = Conn(addr)
    c.send(*frames(c))
    expect(c.until(lambda: c.goaway is not None), f"no GOAWAY for {what}")
    expect(c.goaway == code, f"GOAWAY {c.goaway} for {what}, wanted {code}")
    expect(c.drain(), "connection left open")
    return f"GOAWAY {code} for {what}"


def stream_error(addr, frames, what):
    """The stream is reset with PROTOCOL_ERROR (or the connection ends with
    it), no response comes, and the connection serves the next stream."""
    c = Conn(addr)
    c.send(*frames(c))
    expect(c.until(lambda: 1 in c.resets or c.goaway is not None), f"no error for {what}")
    expect(c.status.get(1) is None, f"{what} was answered {c.status.get(1)}")
    if c.goaway is not None:
        expect(c.goaway == PROTOCOL_ERROR, f"GOAWAY {c.goaway} for {what}")
        return f"GOAWAY PROTOCOL_ERROR for {what}"
    expect(c.resets[1] == PROTOCOL_ERROR, f"RST_STREAM {c.resets[1]} for {what}")
    c.send(c.request(3))
    expect(c.until(lambda: 3 in c.ended), "the next stream was not served")
    expect(c.status.get(3) == 200, f"next stream: {c.status.get(3)}")
    return f"RST_STREAM PROTOCOL_ERROR for {what}, next stream 200"


CASES = {}


def case(f):
    CASES[f.__name__] = f
    return f


@case
def rapid_reset(addr):
    return flood(addr, lambda c, n: [c.request(1 + 2 * n, "/app/ok"),
                                     RstStreamFrame(1 + 2 * n, CANCEL)],
                 "streams opened and reset")


@case
def made_you_reset(addr):
    # Each stream is made to be reset by the server: DATA past the
    # content-length it declared is a stream error (RFC 9113 §8.1.1).
    return flood(addr, lambda c, n: [
        c.request(1 + 2 * n, "/app/upload", "POST", end=False, extra=[("content-length", "1")]),
        DataFrame(1 + 2 * n, b"xx", flags=["END_STREAM"])], "streams made to be reset")


@case
def continuation_flood(addr):
    # A header block that never ends: CONTINUATION after CONTINUATION.
    c = Conn(addr)
    c.send(HeadersFrame(1, c.block(), flags=[]))
    junk = c.enc.encode([("x-filler", "a" * 4000)])
    n = 0
    while n < 5000 and c.send(ContinuationFrame(1, junk)):
        n += 1
        if n % 50 == 0 and c.until(lambda: c.goaway is not None or c.eof, 0):
            break
    expect(c.until(lambda: c.goaway is not None or c.eof), f"no end after {n} CONTINUATION")
    expect(c.sent < 4 << 20, f"{c.sent} bytes taken before the end")
    expect(c.status.get(1) is None, "answered a header block that never ended")
    c.drain()
    return f"closed (GOAWAY {c.goaway}) after {n} CONTINUATION frames, {c.sent} bytes"


@case
def hpack_bomb(addr):
    # One 4000-byte field in the dynamic table, then a block naming it
    # 100 times: 100 bytes that decode to 400 kB, far past max_head. The
    # blocks are encoded in the order they are sent, so both HPACK tables
    # stay in step, and the bomb's own fields are never indexed, so the
    # big entry is still the newest (62) when it is named.
    c = Conn(addr)
    big = ("x-bomb", "b" * 4000)
    head = c.block()
    first = c.enc.encode([big])  # literal with incremental indexing
    c.send(HeadersFrame(1, head + first, flags=["END_HEADERS", "END_STREAM"]))
    c.until(lambda: 1 in c.ended or 1 in c.resets or c.goaway is not None)
    plain = c.enc.encode([NeverIndexedHeaderTuple(n, v) for n, v in (
        (":method", "GET"), (":scheme", "http"), (":path", "/small.txt"),
        (":authority", "h2.test"))])
    bomb = plain + bytes([0x80 | 62]) * 100  # the dynamic entry, indexed
    expect(len(bomb) < 200, f"the bomb is {len(bomb)} bytes")
    c.send(HeadersFrame(3, bomb, flags=["END_HEADERS", "END_STREAM"]))
    expect(c.until(lambda: 3 in c.ended or 3 in c.resets or c.goaway is not None),
           "no answer to the bomb")
    expect(c.status.get(3) in (None, 431), f"the bomb was answered {c.status.get(3)}")
    if c.goaway is None:
        c.send(c.request(5))
        expect(c.until(lambda: 5 in c.ended), "the next stream was not served")
        expect(c.status.get(5) == 200, f"next stream: {c.status.get(5)}")
    return (f"bomb answered {c.status.get(3)}, reset {c.resets.get(3)}, "
            f"GOAWAY {c.goaway}")


@case
def ping_flood(addr):
    return flood(addr, lambda c, n: [PingFrame(0, n.to_bytes(8, "big"))], "PING")


@case
def settings_flood(addr):
    return flood(addr, lambda c, n: [SettingsFrame(0, {0x3: 100})], "SETTINGS")


@case
def priority_flood(addr):
    return flood(addr, lambda c, n: [PriorityFrame(1 + 2 * n, depends_on=0, stream_weight=16)],
                 "PRIORITY")


@case
def window_update_flood(addr):
    return flood(addr, lambda c, n: [WindowUpdateFrame(0, 1)], "WINDOW_UPDATE")


@case
def empty_data_flood(addr):
    return flood(addr, lambda c, n: [DataFrame(1, b"")], "empty DATA",
                 first=lambda c: c.request(1, "/app/upload", "POST", end=False))


@case
def too_many_streams(addr):
    # Streams whose bodies never end stay open; past 128 they are refused.
    c = Conn(addr)
    frames = [c.request(1 + 2 * i, "/app/upload", "POST", end=False) for i in range(200)]
    c.send(*frames)
    expect(c.until(lambda: len(c.resets) >= 72), f"{len(c.resets)} streams refused")
    refused = sorted(s for s, code in c.resets.items() if code == REFUSED_STREAM)
    expect(len(refused) == 72, f"{len(refused)} refused: {c.resets}")
    expect(refused[0] == 1 + 2 * 128, f"first refused {refused[0]}")
    expect(c.goaway is None, f"GOAWAY {c.goaway}")
    return "128 streams open, 72 REFUSED_STREAM"


@case
def zero_window_reader(addr):
    # A client that opens no window: the response waits for capacity for
    # the send timeout, then its stream is cancelled.
    c = Conn(addr, {0x4: 0})
    start = time.monotonic()
    c.send(c.request(1, "/big.bin"))
    expect(c.until(lambda: 1 in c.resets, 20), "the stalled stream was never ended")
    took = time.monotonic() - start
    expect(c.resets[1] == CANCEL, f"RST_STREAM {c.resets[1]}")
    expect(not c.body.get(1), "data sent past a zero window")
    return f"RST_STREAM CANCEL after {took:.1f}s of zero window"


@case
def never_reads(addr):
    # A client that stops reading its socket: the connection is closed
    # once a send waits past the send timeout.
    c = Conn(addr, {0x4: 2**31 - 1})
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.send(WindowUpdateFrame(0, 2**31 - 65536))
    c.send(*[c.request(1 + 2 * i, "/big.bin") for i in range(4)])
    time.sleep(4)  # the client stalls: this is the attack, not a wait
    expect(c.drain(20), "the server kept a client that never reads")
    return "closed a connection that never read"


@case
def oversized_frame(addr):
    return connection_error(addr, lambda c: [
        c.request(1, "/app/upload", "POST", end=False),
        DataFrame(1, b"x" * 20000)], FRAME_SIZE_ERROR, "a 20000-byte DATA frame")


@case
def stream_id_backwards(addr):
    return connection_error(addr, lambda c: [c.request(5), c.request(3)],
                            PROTOCOL_ERROR, "stream 3 after stream 5")


@case
def stream_id_reuse(addr):
    def frames(c):
        c.send(c.request(1))
        c.until(lambda: 1 in c.ended)
        return [c.request(1)]
    return connection_error(addr, frames, STREAM_CLOSED, "stream 1 opened twice")


@case
def data_on_closed_stream(addr):
    def frames(c):
        c.send(c.request(1))
        c.until(lambda: 1 in c.ended)
        return [DataFrame(1, b"late", flags=["END_STREAM"])]
    return connection_error(addr, frames, STREAM_CLOSED, "DATA on a closed stream")


@case
def bad_preface(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
    got = b""
    while True:
        data = s.recv(65536)
        if not data:
            break
        got += data
    expect(not got.startswith(b"\x00"), f"an HTTP/2 answer to a bad preface: {got[:40]!r}")
    expect(got == b"" or got.startswith(b"HTTP/1.1 4") or got.startswith(b"HTTP/1.1 505"),
           f"answer {got[:60]!r}")
    return f"answered {got[:12]!r} and closed"


@case
def uppercase_field(addr):
    return stream_error(addr, lambda c: [
        HeadersFrame(1, c.block("/app/upload", extra=[("X-Upper", "1")]),
                     flags=["END_HEADERS", "END_STREAM"])], "an uppercase field name")


@case
def connection_specific_field(addr):
    return stream_error(addr, lambda c: [
        HeadersFrame(1, c.block("/app/upload", extra=[("connection", "keep-alive")]),
                     flags=["END_HEADERS", "END_STREAM"])], "a Connection field")


@case
def transfer_encoding(addr):
    return stream_error(addr, lambda c: [
        HeadersFrame(1, c.block("/app/upload", "POST", extra=[("transfer-encoding", "chunked")]),
                     flags=["END_HEADERS"]),
        DataFrame(1, b"5\r\nhello\r\n0\r\n\r\n", flags=["END_STREAM"])],
        "Transfer-Encoding: chunked")


@case
def content_length_short(addr):
    return stream_error(addr, lambda c: [
        c.request(1, "/app/upload", "POST", end=False, extra=[("content-length", "100")]),
        DataFrame(1, b"only ten b", flags=["END_STREAM"])],
        "content-length 100 with 10 bytes of DATA")


@case
def content_length_long(addr):
    return stream_error(addr, lambda c: [
        c.request(1, "/app/upload", "POST", end=False, extra=[("content-length", "4")]),
        DataFrame(1, b"more than four", flags=["END_STREAM"])],
        "content-length 4 with 14 bytes of DATA")


def pseudo_fields(c, method="GET", scheme="http", path="/rec/a", authority="h2.test"):
    """A request's header block with these pseudo-fields, as given."""
    return HeadersFrame(1, c.enc.encode([(":method", method), (":scheme", scheme),
                                         (":path", path), (":authority", authority)]),
                        flags=["END_HEADERS", "END_STREAM"])


@case
def method_not_a_token(addr):
    return stream_error(addr, lambda c: [pseudo_fields(c, method="GET /zqx")],
                        "a :method with a space")


@case
def path_not_origin_form(addr):
    return stream_error(addr, lambda c: [pseudo_fields(c, path="x/rec/a")],
                        "a :path without its leading /")


@case
def asterisk_path_without_options(addr):
    return stream_error(addr, lambda c: [pseudo_fields(c, path="*")], "a :path * on GET")


@case
def authority_with_userinfo(addr):
    return stream_error(addr, lambda c: [pseudo_fields(c, authority="u@h2.test")],
                        "an :authority with userinfo")


@case
def unknown_scheme(addr):
    return stream_error(addr, lambda c: [pseudo_fields(c, scheme="ftp")], "a :scheme ftp")


@case
def drain(addr):
    # Run with the server told to drain once "ready" is printed: a stream
    # in flight finishes, and the last GOAWAY names it.
    c = Conn(addr)
    c.send(c.request(1, "/app/slow"))
    c.until(lambda: False, 0.3)
    print("ready", flush=True)
    expect(c.until(lambda: 1 in c.ended, 15), "the stream in flight was not finished")
    expect(c.status.get(1) == 200, f"stream 1: {c.status.get(1)}")
    expect(c.drain(15), "the connection was not closed after the drain")
    expect(c.goaway == 0, f"GOAWAY {c.goaway}")
    expect(c.last_stream == 1, f"last stream id {c.last_stream}")
    return "stream 1 finished with 200, GOAWAY NO_ERROR last stream 1, closed"


# Cases after which the server is gone.
ENDS_SERVER = {"drain"}


def healthy(addr):
    c = Conn(addr)
    c.send(c.request(1))
    ok = c.until(lambda: 1 in c.ended) and c.status.get(1) == 200
    c.close()
    return ok


def main():
    addr, names = sys.argv[1], sys.argv[2:]
    failed = False
    for name in names:
        try:
            detail = CASES[name](addr)
            if name not in ENDS_SERVER:
                expect(healthy(addr), "the server did not serve a fresh connection after")
            print(f"ok {name}: {detail}", flush=True)
        except (Failed, OSError) as e:
            failed = True
            print(f"FAIL {name}: {e}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
