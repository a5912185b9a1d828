#!/usr/bin/python3
"""Downloads ranges of one path over a single h2c connection, all streams
at once, as a browser's HTTP/2 stack does: the default 64 KiB windows,
each DATA frame's credit given back as it is consumed, so the server gets
a WINDOW_UPDATE for the stream and one for the connection each time.

Usage: h2_ranges.py HOST:PORT PATH OUTDIR START...
Writes OUTDIR/got-I for the range "START-" of each I; prints the
server's GOAWAY error code if one came, and exits 1 unless every stream
ended with a 206 and no GOAWAY came.
"""

import os
import socket
import sys

import h2.config
import h2.connection
import h2.events


def main():
    addr, path, outdir, starts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    ids = {}
    for i, start in enumerate(starts):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                                (":authority", addr), (":path", path),
                                ("range", f"bytes={start}-")], end_stream=True)
        ids[sid] = i
    sock.sendall(conn.data_to_send())
    bodies = {sid: [] for sid in ids}
    status, ended, goaway = {}, set(), None
    while len(ended) < len(ids) and goaway is None:
        data = sock.recv(1 << 16)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                status[ev.stream_id] = dict(ev.headers).get(b":status")
            elif isinstance(ev, h2.events.DataReceived):
                bodies[ev.stream_id].append(ev.data)
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                ended.add(ev.stream_id)
            elif isinstance(ev, h2.events.StreamReset):
                print(f"stream {ev.stream_id} reset: {ev.error_code}")
                ended.add(ev.stream_id)
            elif isinstance(ev, h2.events.ConnectionTerminated):
                goaway = ev.error_code
        sock.sendall(conn.data_to_send())
    sock.close()
    for sid, i in ids.items():
        with open(os.path.join(outdir, f"got-{i}"), "wb") as f:
            f.write(b"".join(bodies[sid]))
    bad = [i for sid, i in ids.items() if sid not in ended or status.get(sid) != b"206"]
    if goaway is not None:
        print(f"GOAWAY {goaway}")
    if bad or goaway is not None:
        print(f"unfinished or not 206: {bad}")
        sys.exit(1)


main()
