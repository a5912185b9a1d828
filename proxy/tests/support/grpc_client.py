#!/usr/bin/env python3
"""A gRPC client (grpcio) for the proxy's gRPC tests: runs the check
named on the command line against ADDR and prints one line per result,
"name value", for the Rust test to compare.

    /usr/bin/python3 grpc_client.py ADDR CHECK...
"""
import hashlib
import sys

import grpc


def ident(b):
    return b


def call(ch, kind, method):
    make = getattr(ch, kind)
    return make("/test.Echo/" + method, request_serializer=ident, response_deserializer=ident)


def run(ch, check):
    if check == "unary":
        return call(ch, "unary_unary", "Unary")(b"hello", timeout=10).decode()
    if check == "server_stream":
        # 10 MiB in 160 messages of 64 KiB, relayed as they come.
        h = hashlib.sha256()
        n = 0
        for m in call(ch, "unary_stream", "ServerStream")(b"160:65536", timeout=30):
            h.update(m)
            n += len(m)
        want = hashlib.sha256(b"".join(bytes([i % 251]) * 65536 for i in range(160)))
        return f"{n} {h.hexdigest() == want.hexdigest()}"
    if check == "client_stream":
        msgs = [bytes([i % 251]) * 65536 for i in range(160)]
        got = call(ch, "stream_unary", "ClientStream")(iter(msgs), timeout=30).decode()
        want = hashlib.sha256(b"".join(msgs)).hexdigest()
        n, total, digest = got.split(":")
        return f"{n} {total} {digest == want}"
    if check == "bidi":
        # Each reply comes before the next message is sent: a proxy that
        # held either direction back would hang here.
        import queue
        q = queue.Queue()
        replies = call(ch, "stream_stream", "Bidi")(iter(q.get, None), timeout=10)
        out = []
        for word in ["one", "two", "three"]:
            q.put(word.encode())
            out.append(next(replies).decode())
        q.put(None)
        out.extend(r.decode() for r in replies)
        return ",".join(out)
    if check == "error":
        try:
            call(ch, "unary_unary", "Fail")("ünï".encode(), timeout=10)
            return "no error"
        except grpc.RpcError as e:
            return f"{e.code().name} {e.details()}"
    if check == "deadline":
        try:
            call(ch, "unary_unary", "Slow")(b"3", timeout=0.5)
            return "no error"
        except grpc.RpcError as e:
            return e.code().name
    if check == "die":
        got = []
        try:
            for m in call(ch, "unary_stream", "Die")(b"", timeout=10):
                got.append(m.decode())
            return "no error"
        except grpc.RpcError as e:
            return f"{','.join(got)} {e.code().name}"
    if check == "cancel":
        # A client that gives up on a quiet server stream: the server must
        # learn it (through the proxy's reset) long before its next message.
        watching = call(ch, "unary_stream", "Watch")(b"", timeout=30)
        first = next(watching).decode()
        watching.cancel()
        told = call(ch, "unary_unary", "WasCancelled")(b"5", timeout=10).decode()
        return f"{first} {told}"
    if check == "too_big":
        msgs = [b"x" * 65536 for _ in range(32)]
        try:
            call(ch, "stream_unary", "ClientStream")(iter(msgs), timeout=10)
            return "no error"
        except grpc.RpcError as e:
            return e.code().name
    if check == "health":
        check = ch.unary_unary("/grpc.health.v1.Health/Check",
                               request_serializer=ident, response_deserializer=ident)
        ok = check(b"\x0a\x09test.Echo", timeout=10)
        return "SERVING" if ok == b"\x08\x01" else repr(ok)
    if check == "unavailable":
        try:
            call(ch, "unary_unary", "Unary")(b"x", timeout=10)
            return "no error"
        except grpc.RpcError as e:
            return e.code().name
    raise SystemExit(f"unknown check {check}")


def raw_deadline(addr):
    """A call with grpc-timeout 300m that the client itself never times
    out (python3-h2, not grpcio): only the proxy can end it in time."""
    import socket
    import struct
    import time

    import h2.connection
    import h2.events

    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    c = h2.connection.H2Connection()
    c.initiate_connection()
    c.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", "/test.Echo/Slow"),
                       (":authority", addr), ("content-type", "application/grpc"),
                       ("te", "trailers"), ("grpc-timeout", "300m")])
    c.send_data(1, b"\0" + struct.pack(">I", 1) + b"3", end_stream=True)
    s.sendall(c.data_to_send())
    start = time.monotonic()
    fields = {}
    while True:
        data = s.recv(65536)
        if not data:
            return "closed"
        for e in c.receive_data(data):
            if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                fields.update({k.decode(): v.decode() for k, v in e.headers})
            if isinstance(e, h2.events.StreamEnded):
                took = time.monotonic() - start
                return f"{fields.get(':status')} {fields.get('grpc-status')} {took < 2}"
            if isinstance(e, h2.events.StreamReset):
                return f"reset {e.error_code}"
        s.sendall(c.data_to_send())


def main():
    addr = sys.argv[1]
    if sys.argv[2:] == ["raw_deadline"]:
        print("raw_deadline", raw_deadline(addr), flush=True)
        return
    with grpc.insecure_channel(addr) as ch:
        for check in sys.argv[2:]:
            print(check, run(ch, check), flush=True)


if __name__ == "__main__":
    main()
