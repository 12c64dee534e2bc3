"""A timed TCP transfer between testbed namespaces, for tests/test_testbed.py (standard
library only; run as ``ip netns exec NS python _netxfer.py …``).

``recv ADDR PORT N WARMUP WINDOW``: accept N connections, then read them all; after the last
one connected, skip WARMUP seconds (slow start, the other sender's start), count each
connection's bytes for WINDOW seconds, print ``{"bps": [...]}`` (goodput, bits/s) and close.

``send ADDR PORT LIMIT``: connect and send until the receiver closes (LIMIT s at most).
"""

from __future__ import annotations

import json
import selectors
import socket
import sys
import time


def recv(addr: str, port: int, n: int, warmup: float, window: float) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(n)
    srv.settimeout(20.0)
    print("listening", flush=True)
    conns = [srv.accept()[0] for _ in range(n)]
    sel = selectors.DefaultSelector()
    for i, c in enumerate(conns):
        c.setblocking(False)
        sel.register(c, selectors.EVENT_READ, i)
    counts = [0] * n
    start = time.monotonic() + warmup
    end = start + window
    buf = bytearray(1 << 16)
    while (now := time.monotonic()) < end:
        for key, _ in sel.select(timeout=0.05):
            got = key.fileobj.recv_into(buf)  # type: ignore[union-attr]
            if now >= start:
                counts[key.data] += got
    print(json.dumps({"bps": [8.0 * c / window for c in counts]}), flush=True)
    for c in conns:
        c.close()
    srv.close()


def send(addr: str, port: int, limit: float) -> None:
    deadline = time.monotonic() + limit
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=5.0)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    data = b"\0" * (1 << 16)
    try:
        while time.monotonic() < deadline:
            s.sendall(data)
    except OSError:
        pass  # the receiver closed: done
    s.close()


if __name__ == "__main__":
    mode, a, p = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "recv":
        recv(a, p, int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]))
    else:
        send(a, p, float(sys.argv[4]))
