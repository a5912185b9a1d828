#!/usr/bin/env python3
"""Whether a zero-copy send (MSG_ZEROCOPY, the socket side of io_uring's
SEND_ZC) stays zero-copy to a peer on this machine.

Sends 1 MiB with MSG_ZEROCOPY to a local peer and reads the completion
from the socket's error queue: code 1 (SO_EE_CODE_ZEROCOPY_COPIED) means
the kernel copied the pages after all. Two paths: loopback, and a veth
pair between two network namespaces of our own (needs root; made with
unshare and gone when this ends).

Why it matters: SEND_ZC can only pay where the pages really leave by
DMA. Where every peer is local, as on a one-machine benchmark, the kernel
copies them on delivery (skb_orphan_frags_rx), after pinning them and
sending a notification, so it can only cost more there.

Run: sudo python3 bench/scripts/zerocopy_local.py
"""
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time

SO_ZEROCOPY = 60
MSG_ZEROCOPY = 0x4000000
MSG_ERRQUEUE = 0x2000
SO_EE_ORIGIN_ZEROCOPY = 5
SO_EE_CODE_ZEROCOPY_COPIED = 1
SIZE = 1 << 20


def send_and_report(sock: socket.socket) -> str:
    """Sends SIZE bytes zero-copy on `sock`; what the completion says."""
    sent = sock.send(b"x" * SIZE, MSG_ZEROCOPY)
    # The completion is queued once the peer's side let the pages go.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        select.select([sock], [], [], 0.5)
        try:
            _, anc, _, _ = sock.recvmsg(0, 1024, MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue
        for _, _, d in anc:
            _, origin, _, code = struct.unpack("=IBBB", d[:7])
            if origin == SO_EE_ORIGIN_ZEROCOPY:
                how = "copied" if code == SO_EE_CODE_ZEROCOPY_COPIED else "zero-copy"
                return f"{sent} bytes sent, completion code {code}: {how}"
    return f"{sent} bytes sent, no completion within 5 s"


def loopback() -> str:
    ls = socket.create_server(("127.0.0.1", 0))
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    c.connect(ls.getsockname())
    s, _ = ls.accept()

    # Read as it comes, so the sender's completion is not held up.
    def drain():
        got = 0
        while got < SIZE:
            got += len(s.recv(SIZE))

    t = threading.Thread(target=drain)
    t.start()
    report = send_and_report(c)
    t.join()
    for x in (c, s, ls):
        x.close()
    return report


def veth_peer():
    """In the second namespace: take one connection and read it whole."""
    ls = socket.create_server(("10.9.0.2", 5555))
    print("ready", flush=True)
    s, _ = ls.accept()
    while s.recv(SIZE):
        pass


def veth_sender():
    """In the first namespace: connect over the veth and send."""
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    c.connect(("10.9.0.2", 5555))
    print(send_and_report(c), flush=True)
    c.close()


def veth() -> str:
    me = os.path.abspath(__file__)
    holder = subprocess.Popen(["unshare", "-n", "sleep", "60"])
    try:
        time.sleep(0.2)
        pid = holder.pid
        script = f"""
set -e
ip link set lo up
ip link add va type veth peer name vb
ip link set vb netns {pid}
ip addr add 10.9.0.1/24 dev va
ip link set va up
nsenter -t {pid} -n ip addr add 10.9.0.2/24 dev vb
nsenter -t {pid} -n ip link set vb up
nsenter -t {pid} -n python3 {me} --veth-peer | {{ read ready; python3 {me} --veth-sender; }}
"""
        out = subprocess.run(
            ["unshare", "-n", "bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if out.returncode != 0:
            return f"could not set up the namespaces: {out.stderr.strip()}"
        return out.stdout.strip()
    finally:
        holder.kill()
        holder.wait()


def main():
    if sys.argv[1:] == ["--veth-peer"]:
        return veth_peer()
    if sys.argv[1:] == ["--veth-sender"]:
        return veth_sender()
    print(f"loopback: {loopback()}")
    print(f"veth between namespaces: {veth()}")


if __name__ == "__main__":
    main()
