"""Benchmark (issue #5): one 160-job Pollux run on the artifact's workload, with the time each
scheduling round takes (speedup tables + allocation search + placement).

Not a test: run ``make bench`` or ``python benchmarks/bench_pollux.py [--workloads 1,6]`` and
record the numbers in docs/performance.md. Target: a 160-job run under 60 s (the artifact's
NSGA-II simulator needs about 52 minutes: ~3 s per round). Needs the Pollux artifact data
(../shared/data/pollux or $DDLSCHED_POLLUX_DATA); skips with a message without it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched import Settings, build_simulator, load_cluster, load_workload  # noqa: E402
from ddlsched.experiments.luo24 import pollux_data  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workloads", default="1,6", help="workload numbers (1–8)")
    ap.add_argument("--semantics", default="rounds")
    args = ap.parse_args()
    root = pollux_data()
    if root is None:
        print("bench_pollux: Pollux artifact data not found; skipped", file=sys.stderr)
        return
    settings = Settings(profiles=str(root / "traces"), semantics=args.semantics)
    cluster = load_cluster("luo24")
    print(f"data: {root}  semantics: {args.semantics}")
    print(
        f"{'workload':9s} {'wall s':>7s} {'rounds':>7s} {'round ms mean':>14s} "
        f"{'median':>7s} {'max':>7s} {'avg JCT s':>10s}"
    )
    for n in args.workloads.split(","):
        jobs = load_workload(str(root / "workloads" / f"workload-{n}.csv"), seed=0)
        sim = build_simulator(cluster, jobs, "pollux", settings=settings)
        pol = sim.policy
        inner = pol.on_round
        rounds: list[float] = []

        def timed(s, inner=inner, rounds=rounds):
            t = time.perf_counter()
            inner(s)
            rounds.append(time.perf_counter() - t)

        pol.on_round = timed  # type: ignore[method-assign]
        t0 = time.perf_counter()
        res = sim.run()
        wall = time.perf_counter() - t0
        ms = [1000 * r for r in rounds]
        print(
            f"{n:9s} {wall:7.2f} {len(ms):7d} {statistics.mean(ms):14.2f} "
            f"{statistics.median(ms):7.2f} {max(ms):7.1f} {res.summary['avg_jct']:10.1f}"
        )


if __name__ == "__main__":
    main()
