"""An HTTP/3 client on aioquic for the tests: one QUIC connection, the
requests read as JSON from stdin sent on it at once, each answer written
back as JSON (status, headers, body's length and SHA-256, or the stream's
error). Usage: h3_client.py HOST PORT --ca CA.pem [--sni NAME].

With --zero-rtt, a first connection GETs --warmup and keeps the session
ticket the server sends; the requests then go on a second connection that
resumes with it, sent before its handshake ends (in 0-RTT where the ticket
allows it, or anyway with --force-early-data), and the report says whether
the ticket allowed early data and whether the server took it."""

import argparse
import asyncio
import base64
import hashlib
import json
import socket
import ssl
import sys

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamReset
from aioquic.tls import Epoch


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.waiting = {}
        self.answers = {}

    def quic_event_received(self, event):
        if isinstance(event, StreamReset) and event.stream_id in self.waiting:
            a = self.answers[event.stream_id]
            a["reset"] = event.error_code
            self.waiting.pop(event.stream_id).set_result(None)
            return
        for e in self.h3.handle_event(event):
            sid = getattr(e, "stream_id", None)
            if sid not in self.answers:
                continue
            a = self.answers[sid]
            if isinstance(e, HeadersReceived):
                fields = [(k.decode(), v.decode("latin-1")) for k, v in e.headers]
                if "status" not in a:
                    a["status"] = int(dict(fields)[":status"])
                    a["headers"] = fields
                else:
                    a["trailers"] = fields
            elif isinstance(e, DataReceived):
                a["_body"].append(e.data)
            if getattr(e, "stream_ended", False) and sid in self.waiting:
                self.waiting.pop(sid).set_result(None)

    def send(self, req, authority):
        """Puts a request on a new stream, not yet on the wire; the future
        its answer sets."""
        sid = self._quic.get_next_available_stream_id()
        body = b""
        if "body_file" in req:
            body = open(req["body_file"], "rb").read()
        elif "body" in req:
            body = req["body"].encode()
        elif "body_b64" in req:
            body = base64.b64decode(req["body_b64"])
        fields = [
            (b":method", req.get("method", "GET").encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", req["path"].encode()),
        ] + [(k.encode(), v.encode()) for k, v in req.get("headers", [])]
        if req.get("raw_fields"):
            fields = [(k.encode(), v.encode()) for k, v in req["raw_fields"]]
        self.answers[sid] = {"_body": []}
        fut = asyncio.get_running_loop().create_future()
        self.waiting[sid] = fut
        self.h3.send_headers(sid, fields, end_stream=not body)
        if body:
            self.h3.send_data(sid, body, end_stream=True)
        return sid, fut

    async def answer(self, sid, fut, timeout):
        await asyncio.wait_for(fut, timeout)
        a = self.answers.pop(sid)
        data = b"".join(a.pop("_body"))
        a["length"] = len(data)
        a["sha256"] = hashlib.sha256(data).hexdigest()
        if len(data) <= 4096:
            a["body"] = base64.b64encode(data).decode()
        return a

    async def requests(self, reqs, authority):
        """Sends every request and then transmits once, so that all of
        them leave in the first flight (aioquic paces what one call to
        transmit leaves for later, which would go after the handshake)."""
        sent = [self.send(r, authority) for r in reqs]
        keys = self._quic._cryptos
        early = keys[Epoch.ZERO_RTT].send.is_valid() and not keys[Epoch.ONE_RTT].send.is_valid()
        self.transmit()
        # Whether every byte of them left under 0-RTT keys.
        self.all_sent_in_0rtt = early and all(
            not len(self._quic._streams[sid].sender._pending)
            and not self._quic._streams[sid].sender._pending_eof
            for sid, _ in sent
        )
        return await asyncio.gather(
            *(self.answer(sid, fut, r.get("timeout", 20)) for (sid, fut), r in zip(sent, reqs)),
            return_exceptions=True,
        )


def config(a):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=a.sni)
    cfg.max_data = 64 << 20
    cfg.max_stream_data = 32 << 20
    if a.ca:
        cfg.load_verify_locations(a.ca)
    else:
        cfg.verify_mode = ssl.CERT_NONE
    if a.cert:
        cfg.load_cert_chain(a.cert, a.key)
    return cfg


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--ca")
    p.add_argument("--sni", default="localhost")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--zero-rtt", action="store_true")
    p.add_argument("--warmup", default="/")
    p.add_argument("--force-early-data", action="store_true")
    a = p.parse_args()
    reqs = json.load(sys.stdin)
    cfg = config(a)
    authority = f"{a.sni}:{a.port}"
    report = {}
    wait = True
    if a.zero_rtt:
        tickets = []
        async with connect(
            a.host,
            a.port,
            configuration=cfg,
            create_protocol=Client,
            session_ticket_handler=tickets.append,
        ) as c:
            await c.requests([{"path": a.warmup}], authority)
            # rustls sends its tickets once the client's Finished is read.
            for _ in range(100):
                if tickets:
                    break
                await asyncio.sleep(0.05)
        if not tickets:
            sys.exit("no session ticket came on the first connection")
        cfg = config(a)
        report["ticket_allows_early_data"] = tickets[-1].max_early_data_size is not None
        if a.force_early_data:
            # As a ticket from before the server turned early data off.
            tickets[-1].max_early_data_size = 0xFFFFFFFF
        cfg.session_ticket = tickets[-1]
        wait = False
    out = []
    async with connect(
        a.host, a.port, configuration=cfg, create_protocol=Client, wait_connected=wait
    ) as c:
        # A receive buffer as ringside-bench and quinn ask for (4 MiB), not
        # the kernel's default: Python reads slowly, and a download into
        # 208 KiB loses datagrams, so the server's congestion window, and
        # with it the datagram size its path MTU search may try, would
        # depend on how busy the machine is.
        sock = c._transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        # Without waiting for the handshake, these are sent at once: in
        # 0-RTT where the ticket allows it.
        answers = await c.requests(reqs, authority)
        for r in answers:
            out.append({"error": repr(r)} if isinstance(r, BaseException) else r)
        report["alpn"] = c._quic.tls.alpn_negotiated
        report["early_data_accepted"] = c._quic.tls.early_data_accepted
        report["resumed"] = c._quic.tls.session_resumed
        report["all_sent_in_0rtt"] = c.all_sent_in_0rtt
    report["answers"] = out
    json.dump(report, sys.stdout)


asyncio.run(main())
