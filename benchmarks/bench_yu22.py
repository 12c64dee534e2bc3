"""Benchmark: planning time of SJF-BCO (and the §7 baselines) on the 160-job, 20-server yu22
instance, and the time to execute the plan in the engine.

Not a test: run ``make bench`` (or ``python benchmarks/bench_yu22.py``) and record the numbers
in docs/performance.md. Target (issue #3): SJF-BCO planning < 5 s on this machine.
The paper's complexity is O(n_g·|J|·N log N·log T) (Theorem 6).
"""

from __future__ import annotations

import argparse
import statistics
import time

from ddlsched import Settings, build_simulator, load_cluster, load_workload
from ddlsched.planning import make_planner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--planners", default="sjf-bco,yu-ff,yu-ls,yu-rand")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    settings = Settings()
    print(
        f"{'planner':8s} {'seed':>4s} {'GPUs':>5s} {'plan s':>8s} {'trials':>7s} "
        f"{'run s':>7s} {'makespan':>9s}"
    )
    for name in args.planners.split(","):
        plan_walls = []
        for seed in range(args.seeds):
            cluster = load_cluster("yu22", seed)
            jobs = load_workload("yu22", seed=seed)
            walls = []
            for _ in range(args.repeat):
                planner = make_planner(name, settings.planner)
                t0 = time.perf_counter()
                plan = planner.plan(cluster, jobs, settings.rar, seed)
                walls.append(time.perf_counter() - t0)
            plan_walls.append(statistics.median(walls))
            t0 = time.perf_counter()
            res = build_simulator(cluster, jobs, name, seed=seed, settings=settings).run()
            run_wall = time.perf_counter() - t0  # planning + execution
            print(
                f"{name:8s} {seed:4d} {cluster.num_gpus:5d} {plan_walls[-1]:8.3f} "
                f"{int(plan.params.get('trials', 1)):7d} {run_wall:7.3f} "
                f"{res.summary['makespan']:9.1f}"
            )
        print(f"{name:8s} median planning time {statistics.median(plan_walls):.3f} s")


if __name__ == "__main__":
    main()
