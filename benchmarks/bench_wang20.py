"""Benchmark: wall time of one 160-job wang20 run at exact and coarse granularity.

Not a test: run ``make bench`` (or ``python benchmarks/bench_wang20.py``) and record the numbers
in docs/performance.md. Targets (issue #2, 2-core machine): exact Ada-SRSF run < 10 s, coarse < 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ddlsched import Settings, build_simulator, load_cluster, load_workload


def time_run(policy: str, ipt: int, seed: int) -> tuple[float, int, float]:
    cluster = load_cluster("wang20")
    jobs = load_workload("wang20", seed=seed)
    sim = build_simulator(
        cluster, jobs, policy, seed=seed, settings=Settings(iterations_per_task=ipt)
    )
    t0 = time.perf_counter()
    res = sim.run()
    return time.perf_counter() - t0, sim.events_processed, res.summary["avg_jct"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--policies", default="ada-srsf,srsf1")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeat-coarse", type=int, default=5)
    args = ap.parse_args()
    iters = sum(j.iterations for j in load_workload("wang20", seed=0))
    print(f"wang20 seed 0: {iters} iterations in all")
    print(
        f"{'policy':10s} {'granularity':12s} {'seed':>4s} {'wall s':>8s} {'events':>9s} {'avg JCT':>9s}"
    )
    for policy in args.policies.split(","):
        for ipt, label, reps in ((1000, "coarse", args.repeat_coarse), (1, "exact", 1)):
            for seed in range(args.seeds):
                walls = []
                for _ in range(reps):
                    wall, events, jct = time_run(policy, ipt, seed)
                    walls.append(wall)
                print(
                    f"{policy:10s} {label:12s} {seed:4d} {statistics.median(walls):8.3f} "
                    f"{events:9d} {jct:9.1f}"
                )


if __name__ == "__main__":
    main()
