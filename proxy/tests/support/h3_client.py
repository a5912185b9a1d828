"""An HTTP/3 client on aioquic for the tests: one QUIC connection, the
requests read as JSON from stdin sent on it at once, each answer written
back as JSON (status, headers, body's length and SHA-256, or the stream's
error). Usage: h3_client.py HOST PORT --ca CA.pem [--sni NAME]."""

import argparse
import asyncio
import base64
import hashlib
import json
import ssl
import sys

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamReset


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

    async def request(self, req, authority):
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
        self.transmit()
        await asyncio.wait_for(fut, req.get("timeout", 20))
        a = self.answers.pop(sid)
        data = b"".join(a.pop("_body"))
        a["length"] = len(data)
        a["sha256"] = hashlib.sha256(data).hexdigest()
        if len(data) <= 4096:
            a["body"] = base64.b64encode(data).decode()
        return a


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--ca")
    p.add_argument("--sni", default="localhost")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()
    reqs = json.load(sys.stdin)
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=a.sni)
    cfg.max_data = 64 << 20
    cfg.max_stream_data = 32 << 20
    if a.ca:
        cfg.load_verify_locations(a.ca)
    else:
        cfg.verify_mode = ssl.CERT_NONE
    if a.cert:
        cfg.load_cert_chain(a.cert, a.key)
    out = []
    async with connect(a.host, a.port, configuration=cfg, create_protocol=Client) as c:
        authority = f"{a.sni}:{a.port}"
        answers = await asyncio.gather(
            *(c.request(r, authority) for r in reqs), return_exceptions=True
        )
        for r in answers:
            out.append({"error": repr(r)} if isinstance(r, BaseException) else r)
        alpn = c._quic.tls.alpn_negotiated
    json.dump({"alpn": alpn, "answers": out}, sys.stdout)


asyncio.run(main())
