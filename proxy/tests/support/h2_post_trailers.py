#!/usr/bin/python3
"""POSTs a body ending with trailers over h2c (prior knowledge), as a gRPC
client or any HTTP/2 client may, and prints the response body.

Usage: h2_post_trailers.py HOST:PORT PATH
Sends "hello" then the trailers x-sum: 42 and x-note: end; exits 1 unless
the response is a 200.
"""

import socket
import sys

import h2.config
import h2.connection
import h2.events


def main():
    addr, path = sys.argv[1], sys.argv[2]
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=20)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":authority", addr),
                         (":path", path)])
    c.send_data(sid, b"hello")
    c.send_headers(sid, [("x-sum", "42"), ("x-note", "end")], end_stream=True)
    sock.sendall(c.data_to_send())
    status, body, done = None, b"", False
    while not done:
        data = sock.recv(65536)
        if not data:
            break
        for e in c.receive_data(data):
            if isinstance(e, h2.events.ResponseReceived):
                status = dict(e.headers).get(b":status")
            elif isinstance(e, h2.events.DataReceived):
                body += e.data
                c.acknowledge_received_data(e.flow_controlled_length, sid)
            elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset,
                                h2.events.ConnectionTerminated)):
                done = True
        sock.sendall(c.data_to_send())
    sys.stdout.write(body.decode(errors="replace"))
    sys.exit(0 if status == b"200" else 1)


main()
