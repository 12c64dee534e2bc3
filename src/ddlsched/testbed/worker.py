"""One all-reduce worker of ``ddlsched testbed measure``: a standalone program (the standard
library, numpy, and torch for the gloo backend; nothing of ddlsched), started by the
coordinator inside its server's namespace with ``ip netns exec NS python worker.py …``.

It joins its job's group (``--world`` workers, ``--rank`` of them, every worker's address in
``--addrs``), prints ``{"ready": …}`` and then obeys one JSON command per line on stdin:

- ``{"op": "run", "bytes": N, "id": X}``: fill N bytes of float32 with rank + 1, meet the
  job's other workers (a barrier), all-reduce them, check the sum, and print
  ``{"id": X, "t0": …, "t1": …}``: ``time.monotonic()`` right after the barrier and right
  after the all-reduce. The machine's monotonic clock is one for every namespace, so the
  coordinator compares the workers' times directly.
- ``{"op": "quit"}`` (or end of stdin): leave the group and exit 0.

Two backends move the same bytes:

- ``gloo``: ``torch.distributed`` with the gloo backend (rendezvous ``tcp://ADDR0:PORT``),
  ``dist.all_reduce`` on a CPU tensor; what a PyTorch DDP job does between servers.
- ``ring``: our own ring all-reduce over plain TCP (reduce-scatter, then all-gather: w − 1
  steps each, every step sending one chunk of M/w bytes to the right neighbour while
  receiving one from the left), so each worker sends and receives 2(w − 1)/w · M bytes —
  the traffic of Yu's ring model and of gloo's ring. For 2 workers: M/2 each way, twice.

Every socket operation has ``--timeout`` seconds, so a lost peer ends the worker with an
error line instead of a hang.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

import numpy as np

#: bytes per element: float32, as gradients
ELEM = 4


def _say(doc: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------ the ring
class Ring:
    """A ring of ``world`` workers over TCP: a connection to the right neighbour (sending)
    and one from the left (receiving); with 2 workers both neighbours are the other one."""

    def __init__(
        self,
        rank: int,
        world: int,
        addrs: list[str],
        ports: list[int],
        timeout: float,
        congestion: str = "",
    ) -> None:
        self.rank, self.world, self.timeout = rank, world, timeout
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if congestion:  # the accepted connection inherits it
            listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
        listener.bind((addrs[rank], ports[rank]))
        listener.listen(1)
        listener.settimeout(timeout)
        right = (rank + 1) % world
        deadline = time.monotonic() + timeout
        self.right: socket.socket | None = None
        result: dict[str, socket.socket] = {}

        def accept() -> None:
            try:
                conn, _ = listener.accept()
                result["left"] = conn
            except OSError:
                pass

        acceptor = threading.Thread(target=accept, daemon=True)
        acceptor.start()
        while self.right is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if congestion:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                sock.connect((addrs[right], ports[right]))
                self.right = sock
            except OSError:
                sock.close()
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"no connection to rank {right} at {addrs[right]}:{ports[right]}"
                    ) from None
                time.sleep(0.05)
        acceptor.join(max(0.0, deadline - time.monotonic()))
        listener.close()
        if "left" not in result:
            raise TimeoutError(f"rank {(rank - 1) % world} never connected")
        self.left = result["left"]
        for s in (self.left, self.right):
            s.settimeout(timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _exchange(self, send: memoryview, recv: memoryview) -> None:
        """Send ``send`` to the right while receiving ``len(recv)`` bytes from the left."""
        assert self.right is not None
        errors: list[BaseException] = []

        def sender() -> None:
            try:
                self.right.sendall(send)  # type: ignore[union-attr]
            except BaseException as e:  # noqa: BLE001 - reported by the caller
                errors.append(e)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        got = 0
        while got < len(recv):
            n = self.left.recv_into(recv[got:], len(recv) - got)
            if n == 0:
                raise ConnectionError("the left neighbour closed the ring")
            got += n
        t.join(self.timeout)
        if errors:
            raise errors[0]
        if t.is_alive():
            raise TimeoutError("sending to the right neighbour did not finish")

    def barrier(self) -> None:
        """Every worker has reached this point: a token passed w − 1 times round the ring."""
        token = bytearray(1)
        for _ in range(self.world - 1):
            self._exchange(memoryview(b"\x01"), memoryview(token))

    def all_reduce(self, buf: np.ndarray, scratch: np.ndarray) -> None:
        """Sum ``buf`` (float32) over the ring in place: reduce-scatter, then all-gather."""
        w, r = self.world, self.rank
        if w == 1:
            return
        bounds = np.linspace(0, len(buf), w + 1).astype(int)

        def chunk(a: np.ndarray, i: int) -> np.ndarray:
            return a[bounds[i % w] : bounds[i % w + 1]]

        for step in range(w - 1):  # reduce-scatter: after it, rank r owns chunk r + 1 summed
            out, into = chunk(buf, r - step), chunk(buf, r - step - 1)
            tmp = scratch[: len(into)]
            self._exchange(memoryview(out).cast("B"), memoryview(tmp).cast("B"))
            into += tmp
        for step in range(w - 1):  # all-gather: pass the summed chunks round
            out, into = chunk(buf, r - step + 1), chunk(buf, r - step)
            self._exchange(
                memoryview(np.ascontiguousarray(out)).cast("B"), memoryview(into).cast("B")
            )

    def close(self) -> None:
        for s in (self.left, self.right):
            if s is not None:
                s.close()


# ------------------------------------------------------------------------------ the backends
class RingBackend:
    def __init__(self, args: argparse.Namespace, addrs: list[str]) -> None:
        ports = [args.port + i for i in range(args.world)]
        self.ring = Ring(args.rank, args.world, addrs, ports, args.timeout, args.tcp)
        self.buf = np.zeros(args.max_bytes // ELEM, dtype=np.float32)
        self.scratch = np.zeros(len(self.buf) // args.world + 1, dtype=np.float32)

    def prepare(self, n: int, value: float) -> None:
        self.buf[:n] = value

    def barrier(self) -> None:
        self.ring.barrier()

    def all_reduce(self, n: int) -> float:
        self.ring.all_reduce(self.buf[:n], self.scratch)
        return float(self.buf[0]) if n else 0.0

    def close(self) -> None:
        self.ring.close()


class GlooBackend:
    def __init__(self, args: argparse.Namespace, addrs: list[str]) -> None:
        import datetime
        import os

        if args.ifname:
            os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        self.torch, self.dist = torch, dist
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{addrs[0]}:{args.port}",
            rank=args.rank,
            world_size=args.world,
            timeout=datetime.timedelta(seconds=args.timeout),
        )
        self.buf = torch.zeros(args.max_bytes // ELEM, dtype=torch.float32)

    def prepare(self, n: int, value: float) -> None:
        self.buf[:n].fill_(value)

    def barrier(self) -> None:
        self.dist.barrier()

    def all_reduce(self, n: int) -> float:
        view = self.buf[:n]
        self.dist.all_reduce(view)
        return float(view[0]) if n else 0.0

    def close(self) -> None:
        self.dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=("ring", "gloo"), required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--addrs", required=True, help="every rank's address, comma-separated")
    p.add_argument("--port", type=int, required=True, help="rank r listens on PORT + r")
    p.add_argument("--max-bytes", type=int, required=True)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--ifname", default="", help="GLOO_SOCKET_IFNAME (gloo)")
    p.add_argument("--tcp", default="", help="TCP congestion control of the ring's sockets")
    args = p.parse_args(argv)
    addrs = args.addrs.split(",")
    try:
        backend = (RingBackend if args.backend == "ring" else GlooBackend)(args, addrs)
    except Exception as e:  # noqa: BLE001 - one line for the coordinator
        _say({"error": f"{type(e).__name__}: {e}"})
        return 1
    _say({"ready": True, "rank": args.rank})
    expected = args.world * (args.world + 1) / 2.0
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd.get("op") == "quit":
                break
            n = min(int(cmd["bytes"]) // ELEM, args.max_bytes // ELEM)
            backend.prepare(n, float(args.rank + 1))
            backend.barrier()
            t0 = time.monotonic()
            got = backend.all_reduce(n)
            t1 = time.monotonic()
            if n and got != expected:
                _say({"id": cmd.get("id"), "error": f"sum {got}, expected {expected}"})
                return 1
            _say({"id": cmd.get("id"), "t0": t0, "t1": t1})
    except Exception as e:  # noqa: BLE001 - one line for the coordinator
        _say({"error": f"{type(e).__name__}: {e}"})
        return 1
    finally:
        try:
            backend.close()
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
