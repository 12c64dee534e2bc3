"""Speed of the ``sia`` policy (issue #29).

    python benchmarks/bench_sia.py [SIA_DIR] [--jobs 640,1280]

1. With ``SIA_DIR`` (an extracted ``sia-simulator`` folder of the artifact): a Table 3 run —
   ``philly/workload-1.csv`` on ``sia-64``, ``semantics=rounds``, ``calibration=sia`` — its
   wall time (target < 1 min) and the median ILP solve time per round at 64 GPUs (target
   ≤ 100 ms).
2. The ILP alone at 2,048 GPUs (``sia-64x32``: 768 ``aws``, 512 ``dgx-ext``, 768 ``rtx``; 29
   configurations, the artifact's node caps): instances of ``--jobs`` jobs whose normalised
   goodputs are drawn as Sia's look (one-GPU = 1 on every type for a fifth of the jobs, new;
   the others increasing with GPUs, sublinearly, × a type factor), each solved by
   ``policies.sia.solve_ilp``; median and max solve time (target ≤ 1 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def table3(sia_dir: Path) -> None:
    from ddlsched.api import simulate
    from ddlsched.core.cluster_io import load_cluster
    from ddlsched.policies.sia import Sia
    from ddlsched.workloads.traces import read_trace

    wl = sia_dir / "workloads" / "philly" / "workload-1.csv"
    jobs = read_trace(str(wl))
    from ddlsched.perf.typed_profiles import calibration

    pol = Sia(restart_delays=calibration("sia")["app_delays"])  # as ``--policy sia`` builds it
    settings = {
        "profiles": str(sia_dir / "traces"),
        "semantics": "rounds",
        "calibration": "sia",
    }
    t0 = time.perf_counter()
    res = simulate(load_cluster("sia-64"), jobs, pol, settings=settings)
    wall = time.perf_counter() - t0
    ms = pol.solve_ms
    print(
        f"table3 philly/workload-1 sia-64: wall {wall:.1f} s, avg JCT "
        f"{res.summary['avg_jct']:.1f} s, {len(ms)} rounds, ILP median "
        f"{statistics.median(ms):.1f} ms, p95 {sorted(ms)[int(0.95 * len(ms))]:.1f} ms, "
        f"max {max(ms):.1f} ms"
    )


def ilp_2048(jobs: int, instances: int = 5) -> None:
    from ddlsched.policies.sia import CLIP, ZERO_ALLOC_GAIN, configurations, solve_ilp

    types = [("aws", 4, 192, 16), ("dgx-ext", 8, 64, 2), ("rtx", 8, 96, 3)]
    configs = []
    for t, per, nodes, cap in types:
        configs += [(t, n, g) for n, g in configurations(per, min(nodes, cap))]
    gpus = np.array([g for _, _, g in configs])
    type_of = np.array([[t for t, *_ in types].index(t) for t, _, _ in configs])
    capacity = np.array([per * nodes for _, per, nodes, _ in types])
    rng = np.random.default_rng(0)
    times = []
    for _ in range(instances):
        g = np.full((jobs, len(configs)), ZERO_ALLOC_GAIN)
        for j in range(jobs):
            if rng.random() < 0.2:  # new: one GPU of every type = 1
                g[j, gpus == 1] = 1.0
                continue
            limit = int(rng.choice([2, 4, 8, 16, 32, 64]))
            speed = {0: 1.0, 1: rng.uniform(1.5, 6.0), 2: rng.uniform(0.8, 2.5)}
            expo = rng.uniform(0.5, 0.95)
            for c, (_, _, n) in enumerate(configs):
                if n <= limit:
                    g[j, c] = speed[int(type_of[c])] * n**expo
            g[j] /= g[j][g[j] > ZERO_ALLOC_GAIN].min()
        cost = np.minimum(np.round(g**-0.5, 2), CLIP)
        t0 = time.perf_counter()
        solve_ilp(cost, gpus, type_of, capacity, 1.1, [])
        times.append((time.perf_counter() - t0) * 1e3)
    print(
        f"ILP sia-64x32 (2048 GPUs, {len(configs)} configurations), {jobs} jobs: median "
        f"{statistics.median(times):.0f} ms, max {max(times):.0f} ms over {instances} instances"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sia_dir", type=Path, nargs="?")
    ap.add_argument("--jobs", default="640,1280")
    args = ap.parse_args(argv)
    if args.sia_dir is not None:
        table3(args.sia_dir)
    for n in args.jobs.split(","):
        ilp_2048(int(n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
