"""Benchmark: one 240-job and one 480-job Luo/Pollux workload under Tiresias and SJF-BSBF.

Not a test: run ``make bench`` (or ``python benchmarks/bench_luo24.py [DATA]``) and record the
numbers in docs/performance.md. Targets (issue #4): Tiresias and SJF-BSBF under 1 s on 240 jobs
and under 2 s on 480 jobs (the Pollux artifact's simulator needs 23 s and 50 s). Uses the Pollux
artifact data when found (default ../shared/data/pollux), else built-in profiles and generated
workloads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched import Settings, build_simulator, load_cluster, load_workload  # noqa: E402
from ddlsched.experiments.luo24 import pollux_data  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--policies", default="tiresias,sjf-bsbf,sjf-ffs,sjf,fifo")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--semantics", default="events")
    args = ap.parse_args()
    root = pollux_data()
    if root is not None:
        cases = [
            ("240 jobs", str(root / "workloads-1.5" / "workload-1.csv")),
            ("480 jobs", str(root / "workloads-3.0-generated" / "workload-1.csv")),
        ]
        settings = Settings(profiles=str(root / "traces"), semantics=args.semantics)
        print(f"data: {root}")
    else:
        cases = [("240 jobs", "luo24-240"), ("480 jobs", "luo24-480")]
        settings = Settings(semantics=args.semantics)
        print("data: built-in profiles and generated workloads")
    cluster = load_cluster("luo24")
    print(
        f"{'policy':9s} {'workload':9s} {'wall s (median)':>16s} {'events':>8s} {'avg JCT h':>10s}"
    )
    for policy in args.policies.split(","):
        for label, wl in cases:
            jobs = load_workload(wl, seed=0)
            walls = []
            for _ in range(args.repeat):
                sim = build_simulator(cluster, jobs, policy, settings=settings)
                t0 = time.perf_counter()
                res = sim.run()
                walls.append(time.perf_counter() - t0)
            print(
                f"{policy:9s} {label:9s} {statistics.median(walls):16.3f} "
                f"{sim.events_processed:8d} {res.summary['avg_jct'] / 3600:10.2f}"
            )


if __name__ == "__main__":
    main()
