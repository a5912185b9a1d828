"""Misbehaving HTTP/3 clients on aioquic's lower-level API, for
tests/h3_abuse.rs. Usage: h3_abuse.py HOST PORT --ca CA.pem [--sni NAME] MODE [ARG]

Modes (one JSON report on stdout):
- silent N: N fresh QuicConnections, each from its own UDP port, send their
  first Initial datagrams and go silent: {"sent": N, "datagrams": D}.
- raw CASE[,CASE...]: each case on a connection of its own, hand-made
  HTTP/3 bytes written on it; how the server ended it, per case:
  {"CASE": {"terminated": code, "reason": ..., "reset": code, "after": status}}.
- over_limit N: a client that takes the server's stream limit to be 1000
  and opens N request streams at once: how the connection ended.
- cid_flood N: once connected, issues N connection IDs of its own at once
  (NEW_CONNECTION_ID), far past the server's active_connection_id_limit:
  how the connection ended, and how many it had issued.
- retire_flood N: retires N connection IDs the server never issued
  (RETIRE_CONNECTION_ID): how the connection ended.
- stall PATH: asks for PATH with a 16 KiB stream window (64 KiB for the
  connection) that it never raises and never reads; waits for the server
  to give the stream up: {"reset": code, "after_s": s, "received": bytes}.
"""

import argparse
import asyncio
import json
import socket
import ssl
import sys
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset

WAIT = 10.0
BARE = False
AUTHORITY = "h2.test"


def varint(n):
    if n < 0x40:
        return bytes([n])
    if n < 0x4000:
        return (n | 0x4000).to_bytes(2, "big")
    if n < 0x40000000:
        return (n | 0x80000000).to_bytes(4, "big")
    return (n | 0xC000000000000000).to_bytes(8, "big")


def frame(ty, payload):
    return varint(ty) + varint(len(payload)) + payload


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Without H3Connection, nothing but what a case writes is sent.
        self.h3 = None if BARE else H3Connection(self._quic)
        self.ended = asyncio.get_running_loop().create_future()
        self.resets = {}
        self.statuses = {}
        self.received = 0
        self.waiters = {}

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            if not self.ended.done():
                self.ended.set_result(event)
            return
        if isinstance(event, StreamReset):
            self.resets[event.stream_id] = event.error_code
            self.wake(event.stream_id)
            return
        if isinstance(event, StreamDataReceived) and event.stream_id % 4 == 0:
            self.received += len(event.data)
        for e in self.h3.handle_event(event) if self.h3 else []:
            if isinstance(e, HeadersReceived) and e.stream_id not in self.statuses:
                self.statuses[e.stream_id] = int(dict(e.headers)[b":status"])
                self.wake(e.stream_id)

    def wake(self, sid):
        w = self.waiters.pop(sid, None)
        if w and not w.done():
            w.set_result(None)

    async def until(self, sid, timeout=WAIT):
        """Until the stream is answered or reset, or the connection ends."""
        if sid in self.resets or sid in self.statuses:
            return
        w = asyncio.get_running_loop().create_future()
        self.waiters[sid] = w
        await asyncio.wait_for(asyncio.wait([w, self.ended], return_when=asyncio.FIRST_COMPLETED), timeout)

    def get(self, path):
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", AUTHORITY.encode()),
                (b":path", path.encode()),
            ],
            end_stream=True,
        )
        self.transmit()
        return sid

    def raw(self, data, end_stream=True, sid=None):
        if sid is None:
            sid = self._quic.get_next_available_stream_id()
        self._quic.send_stream_data(sid, data, end_stream=end_stream)
        self.transmit()
        return sid


def config(args, **kw):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=args.sni)
    cfg.load_verify_locations(args.ca)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def terminated(c):
    if not c.ended.done():
        return None
    e = c.ended.result()
    return {"terminated": e.error_code, "reason": e.reason_phrase}


async def one_case(args, case):
    global BARE
    BARE = case == "huge_settings"
    async with connect(args.host, args.port, configuration=config(args), create_protocol=Client) as c:
        out = {}
        sid = None
        if case == "qpack_insert_count":
            # Required Insert Count 1: capacity 0 was advertised.
            sid = c.raw(frame(0x01, b"\x02\x00\xd1"))
        elif case == "qpack_dynamic_index":
            # Indexed field line, T=0: the dynamic table's entry 0.
            sid = c.raw(frame(0x01, b"\x00\x00\x80"))
        elif case == "qpack_encoder_insert":
            # Insert With Literal Name "abc: xyz" on the encoder stream.
            c.raw(b"\x43abc\x03xyz", end_stream=False, sid=c.h3._local_encoder_stream_id)
        elif case == "qpack_decoder_increment":
            # Insert Count Increment 1 on the decoder stream: we inserted
            # nothing.
            c.raw(b"\x01", end_stream=False, sid=c.h3._local_decoder_stream_id)
        elif case == "goaway_too_long":
            # A GOAWAY declaring 64 KiB: its payload is one varint.
            data = varint(0x07) + varint(64 << 10) + bytes(100)
            c.raw(data, end_stream=False, sid=c.h3._local_control_stream_id)
        elif case == "huge_settings":
            # The client's control stream opening with 64 KiB of SETTINGS.
            uni = c._quic.get_next_available_stream_id(is_unidirectional=True)
            c.raw(varint(0x00) + varint(0x04) + varint(64 << 10) + bytes(100), False, uni)
        elif case == "second_control_stream":
            uni = c._quic.get_next_available_stream_id(is_unidirectional=True)
            c.raw(varint(0x00) + frame(0x04, b""), end_stream=False, sid=uni)
        elif case == "oversized_headers":
            # Declares 128 KiB of HEADERS (the bound is 4 x 16 KiB + 64).
            sid = c.raw(varint(0x01) + varint(128 << 10) + bytes(1000), end_stream=False)
        elif case == "truncated_headers":
            # A HEADERS frame of 100 bytes, the stream ending after 10.
            sid = c.raw(varint(0x01) + varint(100) + bytes(10), end_stream=True)
        elif case == "data_first":
            sid = c.raw(frame(0x00, b"abc"), end_stream=False)
        elif case == "second_settings":
            c.raw(frame(0x04, b""), end_stream=False, sid=c.h3._local_control_stream_id)
        elif case == "close_control":
            c.raw(b"", end_stream=True, sid=c.h3._local_control_stream_id)
        else:
            raise SystemExit(f"unknown case {case}")
        if sid is not None:
            try:
                await c.until(sid)
            except asyncio.TimeoutError:
                pass
        if sid is None or sid not in c.resets:
            try:
                await asyncio.wait_for(asyncio.shield(c.ended), WAIT)
            except asyncio.TimeoutError:
                pass
        t = terminated(c)
        if t:
            out.update(t)
        if sid is not None and sid in c.resets:
            out["reset"] = c.resets[sid]
        if not t:
            # The connection stands: a request on it is still answered.
            after = c.get("/small.txt")
            try:
                await c.until(after)
            except asyncio.TimeoutError:
                pass
            out["after"] = c.statuses.get(after)
        return out


async def over_limit(args, n):
    async with connect(args.host, args.port, configuration=config(args), create_protocol=Client) as c:
        # Takes the server's limit to be far above what it advertised.
        c._quic._remote_max_streams_bidi = 1000
        sids = [c.get(f"/app/flood{i}") for i in range(n)]
        try:
            await asyncio.wait_for(asyncio.shield(c.ended), WAIT)
        except asyncio.TimeoutError:
            pass
        out = terminated(c) or {}
        out["answered"] = sum(1 for s in sids if s in c.statuses)
        return out


async def cid_flood(args, n):
    from aioquic.quic.connection import QuicConnectionId
    import os
    async with connect(args.host, args.port, configuration=config(args), create_protocol=Client) as c:
        q = c._quic
        # aioquic issues min(8, the server's limit); these go past both.
        for _ in range(n):
            q._host_cids.append(
                QuicConnectionId(cid=os.urandom(8), sequence_number=q._host_cid_seq,
                                 stateless_reset_token=os.urandom(16)))
            q._host_cid_seq += 1
        c.transmit()
        try:
            await asyncio.wait_for(asyncio.shield(c.ended), WAIT)
        except asyncio.TimeoutError:
            pass
        out = terminated(c) or {}
        out["issued"] = q._host_cid_seq
        out["server_limit"] = q._remote_active_connection_id_limit
        return out


async def retire_flood(args, n):
    async with connect(args.host, args.port, configuration=config(args), create_protocol=Client) as c:
        # Sequence numbers far beyond any the server issued (RFC 9000
        # 19.16: a PROTOCOL_VIOLATION), sent as aioquic sends its own.
        c._quic._retire_connection_ids.extend(range(1000, 1000 + n))
        c.get("/small.txt")
        try:
            await asyncio.wait_for(asyncio.shield(c.ended), WAIT)
        except asyncio.TimeoutError:
            pass
        return terminated(c) or {}


async def stall(args, path):
    # Credit given once, in the transport parameters, and never again:
    # aioquic raises its windows as data arrives, not as it is read.
    QuicConnection._write_stream_limits = lambda self, builder, space, stream: None
    QuicConnection._write_connection_limits = lambda self, builder, space: None
    cfg = config(args, max_stream_data=16 << 10, max_data=64 << 10)
    async with connect(args.host, args.port, configuration=cfg, create_protocol=Client) as c:
        start = time.monotonic()
        sid = c.get(path)
        try:
            await c.until(sid)  # the head
            if sid not in c.resets:
                w = asyncio.get_running_loop().create_future()
                c.waiters[sid] = w
                await asyncio.wait_for(asyncio.wait([w, c.ended], return_when=asyncio.FIRST_COMPLETED), 30)
        except asyncio.TimeoutError:
            pass
        out = terminated(c) or {}
        out.update(
            {
                "status": c.statuses.get(sid),
                "reset": c.resets.get(sid),
                "after_s": time.monotonic() - start,
                "received": c.received,
            }
        )
        return out


def silent(args, n):
    # The Initials are all made first, then sent in one burst: the server
    # sees them within its handshake idle timeout of each other.
    burst = []
    for _ in range(n):
        q = QuicConnection(configuration=config(args))
        now = time.time()
        q.connect((args.host, args.port), now=now)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        burst.append((s, q.datagrams_to_send(now=now)))
    sent = 0
    for s, datagrams in burst:
        for data, addr in datagrams:
            s.sendto(data, addr)
            sent += 1
    for s, _ in burst:
        s.close()
    return {"sent": n, "datagrams": sent}


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--ca", required=True)
    p.add_argument("--sni", default="h2.test")
    p.add_argument("mode")
    p.add_argument("arg", nargs="?")
    a = p.parse_args()
    global AUTHORITY
    # As h3_client.py names it: the same cache key.
    AUTHORITY = f"{a.sni}:{a.port}"
    if a.mode == "silent":
        out = silent(a, int(a.arg))
    elif a.mode == "raw":
        out = {}
        for case in a.arg.split(","):
            out[case] = await one_case(a, case)
    elif a.mode == "over_limit":
        out = await over_limit(a, int(a.arg))
    elif a.mode == "cid_flood":
        out = await cid_flood(a, int(a.arg))
    elif a.mode == "retire_flood":
        out = await retire_flood(a, int(a.arg))
    elif a.mode == "stall":
        out = await stall(a, a.arg)
    else:
        raise SystemExit(f"unknown mode {a.mode}")
    json.dump(out, sys.stdout)


asyncio.run(main())
