#!/opt/ringside-test/venv/bin/python3
"""RSS per idle HTTP/3 connection: opens N QUIC connections (aioquic, from
the venv scripts/test.sh makes) to a running server, one GET answered on
each, keeps them all open and idle, and reports the server's RSS (VmRSS)
before and after, per connection. Each client keeps its connection alive
with QUIC PINGs, as a browser's idle connection would be.

usage: idle_rss_h3.py PID PORT [N] [PATH]
"""
import asyncio
import ssl
import sys

from aioquic.asyncio.client import connect
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Client(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.h3 = H3Connection(self._quic)
        self.done = asyncio.get_running_loop().create_future()

    def quic_event_received(self, event):
        for e in self.h3.handle_event(event):
            if isinstance(e, (HeadersReceived, DataReceived)) and e.stream_ended:
                if not self.done.done():
                    self.done.set_result(None)


async def one(port, path, hold):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    cfg.verify_mode = ssl.CERT_NONE
    cfg.idle_timeout = 120
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        sid = c._quic.get_next_available_stream_id()
        c.h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"),
                                (b":authority", b"localhost"), (b":path", path.encode())], end_stream=True)
        c.transmit()
        await asyncio.wait_for(c.done, 10)
        await hold.wait()


async def main():
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    path = sys.argv[4] if len(sys.argv) > 4 else "/"
    before = rss_kib(pid)
    hold = asyncio.Event()
    tasks = []
    for _ in range(n):
        tasks.append(asyncio.create_task(one(port, path, hold)))
        await asyncio.sleep(0.005)
    await asyncio.sleep(2)
    after = rss_kib(pid)
    print(f"{n} idle HTTP/3 connections: RSS {before} KiB -> {after} KiB, "
          f"{(after - before) * 1024 / n:.0f} bytes per connection")
    hold.set()
    await asyncio.gather(*tasks, return_exceptions=True)


asyncio.run(main())
