"""Benchmark: replay the whole Philly trace (82,247 jobs) on the ``philly`` cluster preset with
FIFO, SJF and Tiresias at job granularity (each job runs for its measured duration).

Not a test: run ``make bench`` (or ``python benchmarks/bench_philly.py [--trace PATH]``) and
record the numbers in docs/performance.md. Target (issue #6): each policy under 60 s on the
project's 2-core machine. Wall time is ``Simulator.run()`` only (reading the trace and building
the simulator are printed apart). ``--queues proportional`` adds the runs with per-VC
queues in one cohort (issue #28's target: Tiresias under 30 s). Skips with a message when the trace is absent.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched import Settings, build_simulator, load_cluster  # noqa: E402
from ddlsched.core.cluster import Cluster, Server  # noqa: E402
from ddlsched.core.cluster_io import PHILLY_SERVERS  # noqa: E402
from ddlsched.core.job import JobSpec  # noqa: E402

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "pollux" / "traces" / "philly.csv"
)


def read_philly(path: Path) -> list[JobSpec]:
    """The trace's jobs through the library's trace reader."""
    from ddlsched.workloads.traces import read_trace

    return read_trace(path, format="philly")


def scaled_philly(scale: float) -> Cluster:
    """The ``philly`` preset with ``scale`` × its server counts (a contended replay)."""
    if scale == 1.0:
        return load_cluster("philly")
    servers = [
        Server(num_gpus=per, gpu_memory_mb=mem)
        for count, per, mem in PHILLY_SERVERS
        for _ in range(max(round(count * scale), 1))
    ]
    return Cluster(tuple(servers), name=f"philly-x{scale:g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="Philly philly.csv")
    ap.add_argument("--policies", default="fifo,sjf,tiresias")
    ap.add_argument("--limit", type=int, default=0, help="first N jobs only (0 = all)")
    ap.add_argument(
        "--scale", type=float, default=1.0, help="server counts × this (0.25: a contended run)"
    )
    ap.add_argument(
        "--queues",
        default="",
        help="also with Kueue's quota layer: 'proportional' (one ClusterQueue per Philly VC, "
        "nominal quota ∝ its GPU demand, one cohort) or a queues file (issue #28)",
    )
    args = ap.parse_args()
    if not args.trace.is_file():
        print(f"skipped: Philly trace not found at {args.trace} (shared data absent)")
        return
    t0 = time.perf_counter()
    jobs = read_philly(args.trace)
    if args.limit:
        jobs = sorted(jobs, key=lambda j: (j.arrival, j.job_id))[: args.limit]
    print(f"trace: {args.trace}: {len(jobs)} jobs, read in {time.perf_counter() - t0:.1f} s")
    cluster = scaled_philly(args.scale)
    print(f"cluster: {cluster.name}, {cluster.num_servers} servers, {cluster.num_gpus} GPUs")
    print(
        f"{'policy':9s} {'wall s':>8s} {'events':>9s} {'avg JCT h':>10s} {'avg queue h':>12s} "
        f"{'preempt':>8s}"
    )
    runs = [(p, None) for p in args.policies.split(",")]
    if args.queues:
        runs += [(p, args.queues) for p in args.policies.split(",")]
    for policy, queues in runs:
        sim = build_simulator(cluster, jobs, policy, settings=Settings(), queues=queues)
        t0 = time.perf_counter()
        res = sim.run()
        wall = time.perf_counter() - t0
        s = res.summary
        preempt = sum(j.preemptions for j in res.jobs)
        print(
            f"{policy + (' +q' if queues else ''):9s} {wall:8.1f} {sim.events_processed:9d} {s['avg_jct'] / 3600:10.2f} "
            f"{s['avg_queueing'] / 3600:12.2f} {preempt:8d}",
            flush=True,
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
