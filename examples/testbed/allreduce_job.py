"""A synthetic data-parallel job for the testbed (docs/testbed.md "Live on a testbed"): per
iteration, compute for ``--compute-s`` seconds (a sleep: the GPUs are logical), then ask the
scheduler's communication gate (``live.may_communicate``), then all-reduce ``--mb`` MB of
float32 across the job's workers, then tell the gate it is done. Reports every step,
checkpoints its step count and resumes from it; a stop request ends it with exit 0.

The all-reduce: torch.distributed with gloo where torch is installed, else the testbed's own
ring all-reduce over TCP (``ddlsched.testbed.worker.Ring``, numpy); ``--backend`` forces one.
Rendezvous from the live contract: MASTER_ADDR/MASTER_PORT (gloo; the ring listens on
MASTER_PORT + 1 + rank), RANK, WORLD_SIZE, DDLSCHED_ADDRS (every rank's address; 127.0.0.1
outside a testbed).

    python allreduce_job.py --iters 20 --compute-s 0.2 --mb 4
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import ddlsched.live as live


def _backend(name: str, rank: int, world: int, mb: float, timeout: float):  # noqa: ANN202
    n = max(1, int(mb * 1e6) // 4)
    addr, port = (
        os.environ.get("MASTER_ADDR", "127.0.0.1"),
        int(os.environ.get("MASTER_PORT", 29500)),
    )
    if name == "auto":
        try:
            import torch  # noqa: F401

            name = "gloo"
        except ImportError:
            name = "ring"
    if name == "gloo":
        import datetime

        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        dist.init_process_group(
            "gloo", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world,
            timeout=datetime.timedelta(seconds=timeout),
        )  # fmt: skip
        buf = torch.ones(n, dtype=torch.float32)

        def all_reduce() -> float:
            buf.fill_(rank + 1)
            dist.all_reduce(buf)
            return float(buf[0])

        return "gloo", all_reduce, dist.barrier, dist.destroy_process_group
    from ddlsched.testbed.worker import Ring

    addrs = os.environ.get("DDLSCHED_ADDRS", "").split(",")
    if len(addrs) != world:
        addrs = [addr] * world
    ports = [port + 1 + r for r in range(world)]
    ring = Ring(rank, world, addrs, ports, timeout) if world > 1 else None
    arr = np.ones(n, dtype=np.float32)
    scratch = np.zeros(n // world + 1, dtype=np.float32)

    def ring_reduce() -> float:
        arr[:] = rank + 1
        if ring is not None:
            ring.all_reduce(arr, scratch)
        return float(arr[0])

    noop = lambda: None  # noqa: E731
    return (
        "ring",
        ring_reduce,
        (ring.barrier if ring is not None else noop),
        (ring.close if ring is not None else noop),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--compute-s", type=float, default=0.2)
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--backend", choices=("auto", "gloo", "ring"), default="auto")
    ap.add_argument("--timeout", type=float, default=120.0)
    # what the gate is told: M (default), or M·2(w−1)/w, the bytes a ring all-reduce puts on
    # each uplink relative to a 2-worker one (what Wang's b fitted on 2 servers prices)
    ap.add_argument("--ask-link-bytes", action="store_true")
    args = ap.parse_args()
    rank, world = live.rank(), live.world_size()
    ckpt = os.path.join(live.checkpoint_dir() or ".", "step")
    saved = live.load_checkpoint(ckpt) if live.checkpoint_dir() else None
    step = int(saved) if saved else 0
    live.should_stop()  # from here on a SIGTERM is a stop request
    backend, all_reduce, barrier, close = _backend(args.backend, rank, world, args.mb, args.timeout)
    want = world * (world + 1) / 2
    nbytes = args.mb * 1e6
    gated = world > 1 and bool(os.environ.get("DDLSCHED_COMM"))
    if args.ask_link_bytes and world > 1:
        nbytes *= 2 * (world - 1) / world
    comm_s = 0.0
    try:
        while step < args.iters:
            time.sleep(args.compute_s)  # forward + backward
            if not live.may_communicate(nbytes, step):
                break  # a stop request while waiting for the gate
            if gated:
                # only rank 0 asks: the others wait here for it, so that no rank puts bytes
                # on a link before the gate said yes (a ring's first step sends at once)
                barrier()
            t0 = time.monotonic()
            got = all_reduce()
            comm_s += time.monotonic() - t0
            live.done_communicating()
            if got != want:
                print(f"all-reduce gave {got}, expected {want}", file=sys.stderr)
                return 3
            step += 1
            live.report(step=step, comm_s=round(comm_s, 4), done=step >= args.iters)
            if rank == 0 and live.checkpoint_dir():
                live.save_checkpoint(ckpt, str(step))
            if live.should_stop():
                break
    finally:
        close()
    print(
        f"rank {rank}/{world} {backend} at {os.environ.get('DDLSCHED_SERVER_ADDR', '-')}: {step} steps, {comm_s:.2f} s all-reducing",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
