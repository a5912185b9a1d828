#!/usr/bin/env python3
"""A gRPC server (grpcio) for the proxy's gRPC tests, on raw bytes (no
generated stubs): every call kind, an error status, a slow call, a call
whose server dies mid-stream, a quiet stream that notes its
cancellation, and the standard health service
(grpc.health.v1, its two messages encoded by hand: they are one field
each).

    /usr/bin/python3 grpc_server.py

binds 127.0.0.1 on a free port, prints "PORT <n>" and serves until its
stdin reaches EOF.
"""
import hashlib
import os
import sys
import threading
import time
from concurrent import futures

import grpc

SERVING = b"\x08\x01"  # HealthCheckResponse{status: SERVING}


def unary(req, ctx):
    return b"echo:" + req


def server_stream(req, ctx):
    # "COUNT:SIZE": COUNT messages of SIZE bytes, each filled with its index.
    count, size = (int(x) for x in req.decode().split(":"))
    for i in range(count):
        yield bytes([i % 251]) * size


def client_stream(reqs, ctx):
    h = hashlib.sha256()
    n = total = 0
    for r in reqs:
        h.update(r)
        n += 1
        total += len(r)
    return f"{n}:{total}:{h.hexdigest()}".encode()


def bidi(reqs, ctx):
    for r in reqs:
        yield b"re:" + r


def fail(req, ctx):
    ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing: " + req.decode())


def slow(req, ctx):
    time.sleep(float(req.decode()))
    return b"late"


CANCELLED = threading.Event()


def watch(req, ctx):
    # One message, then quiet until the call is cancelled (at most 10 s).
    # A cancel that lands while "first" is being sent makes grpc drop this
    # generator unresumed, so the loop below never sees it: the callback
    # (run when the call ends, here only by a cancel within 10 s) does.
    ctx.add_callback(CANCELLED.set)
    yield b"first"
    for _ in range(200):
        if not ctx.is_active():
            CANCELLED.set()
            return
        time.sleep(0.05)


def was_cancelled(req, ctx):
    return b"yes" if CANCELLED.wait(float(req.decode())) else b"no"


def die(req, ctx):
    yield b"first"
    time.sleep(0.2)
    os._exit(3)


def health(req, ctx):
    # HealthCheckRequest{service: NAME}: tag 0x0a, length, the name.
    name = req[2:].decode() if req[:1] == b"\x0a" else ""
    if name in ("", "test.Echo"):
        return SERVING
    ctx.abort(grpc.StatusCode.NOT_FOUND, "unknown service")


def ident(b):
    return b


def main():
    u = grpc.unary_unary_rpc_method_handler
    handlers = {
        "Unary": u(unary, ident, ident),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, ident, ident),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream, ident, ident),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi, ident, ident),
        "Fail": u(fail, ident, ident),
        "Slow": u(slow, ident, ident),
        "Die": grpc.unary_stream_rpc_method_handler(die, ident, ident),
        "Watch": grpc.unary_stream_rpc_method_handler(watch, ident, ident),
        "WasCancelled": u(was_cancelled, ident, ident),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("test.Echo", handlers),
        grpc.method_handlers_generic_handler(
            "grpc.health.v1.Health", {"Check": u(health, ident, ident)}),
    ))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
