#!/usr/bin/env python3
"""An HTTP/2 origin (h2c, prior knowledge) for the proxy's h2 upstream
tests, on python3-h2:

  POST /echo          the request body back, with its length
  POST /echo-trailers the request's trailers back, a "name: value" line each
  GET  /trailers      "ok" and the trailers x-sum: 42, x-note: end
  GET  /slow          "late" after 2 s, or a reset of its own sooner (never)
  GET  /anything      "hello N" (N: the request's number on its connection)
  GET  /conns         how many connections were accepted so far
  GET  /authority     the request's :authority
  GET  /header/NAME   the request's field NAME (lower case), or "-"
  GET  /early-425     425 Too Early to a request with early-data, else
                      200 "not early"

    /usr/bin/python3 h2_origin.py [GOAWAY_EVERY] [unix:PATH]

With GOAWAY_EVERY, each connection says GOAWAY (NO_ERROR) after that many
streams, naming the last it will answer, and closes once they are done:
streams the client opened beyond it must go again elsewhere. Binds
127.0.0.1 on a free port, prints "PORT <n>", serves until stdin's EOF;
with unix:PATH, listens on that unix socket instead and prints "PORT 0".
"""
import os
import socket
import struct
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

ACCEPTED = 0
LOCK = threading.Lock()


def serve(sock, goaway_every):
    cfg = h2.config.H2Configuration(client_side=False, validate_inbound_headers=False)
    c = h2.connection.H2Connection(config=cfg)
    c.initiate_connection()
    sock.sendall(c.data_to_send())
    bodies = {}
    heads = {}
    trailers = {}
    served = 0
    last = None
    open_streams = set()
    ignored = set()
    lock = threading.Lock()

    def send():
        with lock:
            data = c.data_to_send()
            if data:
                sock.sendall(data)

    pending = {}

    def push(sid, body, trailers):
        """Sends what the windows allow of a body, then its end (trailers
        or END_STREAM on the last DATA); the rest waits in `pending`."""
        off = 0
        while off < len(body):
            n = min(c.local_flow_control_window(sid), c.max_outbound_frame_size, len(body) - off)
            if n <= 0:
                break
            c.send_data(sid, body[off:off + n], end_stream=(trailers is None and off + n == len(body)))
            off += n
        if off < len(body):
            pending[sid] = (body[off:], trailers)
            return
        pending.pop(sid, None)
        if trailers is not None:
            c.send_headers(sid, trailers, end_stream=True)
        open_streams.discard(sid)

    def respond(sid, status, body, trailers=None):
        with lock:
            head = [(":status", str(status))]
            if trailers is None:
                head.append(("content-length", str(len(body))))
            c.send_headers(sid, head, end_stream=not body and trailers is None)
            if body or trailers is not None:
                push(sid, body, trailers)
            else:
                open_streams.discard(sid)
        send()

    def flush_pending():
        for sid, (rest, trailers) in list(pending.items()):
            push(sid, rest, trailers)

    def handle(sid):
        nonlocal served
        h = heads.pop(sid)
        path = h.get(":path", "/")
        served += 1
        if path == "/echo":
            respond(sid, 200, bytes(bodies.pop(sid, b"")))
        elif path == "/echo-trailers":
            got = trailers.pop(sid, [])
            respond(sid, 200, "".join(f"{k}: {v}\n" for k, v in got).encode())
        elif path == "/trailers":
            respond(sid, 200, b"ok", trailers=[("x-sum", "42"), ("x-note", "end")])
        elif path == "/authority":
            respond(sid, 200, h.get(":authority", "").encode())
        elif path.startswith("/header/"):
            respond(sid, 200, h.get(path[len("/header/"):], "-").encode())
        elif path == "/early-425":
            if "early-data" in h:
                respond(sid, 425, b"too early")
            else:
                respond(sid, 200, b"not early")
        elif path == "/conns":
            respond(sid, 200, str(ACCEPTED).encode())
        elif path == "/slow":
            threading.Thread(target=lambda: (time.sleep(2), respond(sid, 200, b"late")),
                             daemon=True).start()
        else:
            respond(sid, 200, f"hello {served}".encode())

    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
            with lock:
                events = c.receive_data(data)
            for e in events:
                if isinstance(e, h2.events.RequestReceived):
                    if last is not None and e.stream_id > last:
                        ignored.add(e.stream_id)
                        continue
                    heads[e.stream_id] = {k.decode(): v.decode() for k, v in e.headers}
                    bodies[e.stream_id] = bytearray()
                    open_streams.add(e.stream_id)
                    if goaway_every and last is None and len(open_streams) + served >= goaway_every:
                        last = e.stream_id
                        # Written raw: python3-h2 would refuse every frame
                        # after its own GOAWAY, as a real server does not.
                        send()
                        with lock:
                            sock.sendall(struct.pack(">I", 8)[1:] + bytes([7, 0]) +
                                         struct.pack(">III", 0, last, 0))
                    if e.stream_ended:
                        handle(e.stream_id)
                elif isinstance(e, h2.events.DataReceived):
                    with lock:
                        c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                    if e.stream_id in bodies:
                        bodies[e.stream_id] += e.data
                elif isinstance(e, h2.events.TrailersReceived):
                    # Its StreamEnded event follows.
                    trailers[e.stream_id] = [(k.decode(), v.decode()) for k, v in e.headers]
                elif isinstance(e, h2.events.StreamEnded):
                    if e.stream_id in heads and e.stream_id not in ignored:
                        handle(e.stream_id)
                elif isinstance(e, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                    with lock:
                        flush_pending()
                elif isinstance(e, h2.events.StreamReset):
                    heads.pop(e.stream_id, None)
                    pending.pop(e.stream_id, None)
                    open_streams.discard(e.stream_id)
            send()
            if last is not None and not open_streams and not pending:
                # As a real server lingers: the client's frames in flight
                # are read, not answered with a TCP reset.
                sock.shutdown(socket.SHUT_WR)
                sock.settimeout(2)
                while sock.recv(65536):
                    pass
                return
    except (OSError, h2.exceptions.ProtocolError):
        return
    finally:
        sock.close()


def main():
    global ACCEPTED
    args = sys.argv[1:]
    unix = [a[len("unix:"):] for a in args if a.startswith("unix:")]
    every = next((int(a) for a in args if not a.startswith("unix:")), 0)
    if unix:
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(unix[0])
        port = 0
    else:
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
    ls.listen(128)
    if not unix:
        port = ls.getsockname()[1]
    print(f"PORT {port}", flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    while True:
        s, _ = ls.accept()
        with LOCK:
            ACCEPTED += 1
        threading.Thread(target=serve, args=(s, every), daemon=True).start()


if __name__ == "__main__":
    main()
