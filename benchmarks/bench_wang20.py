"""Benchmark: wall time of one 160-job wang20 run at exact and coarse granularity, with the
compiled task loop (the default) and the Python loop (``compiled=false``), same events.

Not a test: run ``make bench`` (or ``python benchmarks/bench_wang20.py``) and record the numbers
in docs/performance.md. Targets (2-core machine): exact Ada-SRSF run ≤ 2 s (issue #15; < 10 s in
issue #2), coarse < 0.3 s. ``wall s`` is ``Simulator.run()``; the compiled loop's first run in a
process also loads it from numba's cache (or compiles it, once per checkout: ``compile s``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched import Settings, build_simulator, load_cluster, load_workload  # noqa: E402


def time_run(policy: str, ipt: int, seed: int, compiled: bool) -> tuple[float, int, float]:
    cluster = load_cluster("wang20")
    jobs = load_workload("wang20", seed=seed)
    settings = Settings(iterations_per_task=ipt, compiled=compiled)
    sim = build_simulator(cluster, jobs, policy, seed=seed, settings=settings)
    t0 = time.perf_counter()
    res = sim.run()
    return time.perf_counter() - t0, sim.events_processed, res.summary["avg_jct"]


def load_kernel() -> float:
    """Seconds to make the compiled loop ready (cache load, or a compile on a fresh checkout),
    so that the table's first exact run does not include it."""
    from ddlsched.core.compiledtask import warm_up

    t0 = time.perf_counter()
    warm_up()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--policies", default="ada-srsf,srsf1")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeat-coarse", type=int, default=5)
    ap.add_argument(
        "--python", action="store_true", help="also time the Python loop (about 10× slower)"
    )
    args = ap.parse_args()
    print(f"compiled loop ready in {load_kernel():.2f} s (numba cache load or compile)")
    iters = sum(j.iterations for j in load_workload("wang20", seed=0))
    print(f"wang20 seed 0: {iters} iterations in all")
    print(
        f"{'policy':10s} {'granularity':12s} {'loop':8s} {'seed':>4s} {'wall s':>8s} "
        f"{'events':>9s} {'µs/event':>9s} {'avg JCT':>9s}"
    )
    loops = (True, False) if args.python else (True,)
    for policy in args.policies.split(","):
        for ipt, label, reps in ((1000, "coarse", args.repeat_coarse), (1, "exact", 1)):
            for compiled in loops:
                for seed in range(args.seeds):
                    walls = []
                    for _ in range(reps):
                        wall, events, jct = time_run(policy, ipt, seed, compiled)
                        walls.append(wall)
                    w = statistics.median(walls)
                    print(
                        f"{policy:10s} {label:12s} {'compiled' if compiled else 'python':8s} "
                        f"{seed:4d} {w:8.3f} {events:9d} {1e6 * w / events:9.3f} {jct:9.1f}"
                    )


if __name__ == "__main__":
    main()
