"""Issue #16, step 3: why SJF-BSBF loses to Pollux on the paper's workload, measured from runs.

Not a test: ``python benchmarks/luo24_causes.py [--seeds 3] [--loads 1,4,8]``. For each load
(× 30 jobs per hour on ``luo24-paper-240``, the Pollux artifact's profiles) and seed it runs
SJF (exclusive, non-preemptive: the reference run time of every job), SJF-BSBF, Tiresias and
Pollux and prints, per policy, means over seeds of:

* queueing and running time (JCT − queueing), hours;
* shared: % of jobs that ever ran on a GPU together with another job;
* slowdown: running time ÷ the same job's running time under SJF, over the jobs that shared
  (the interference paid; 1 = none) and over all jobs;
* GPUs: GPU-seconds a job held ÷ (requested GPUs × its running time): Pollux's elasticity
  (> 1: it spread the job over more GPUs than requested).
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched.api import simulate_named  # noqa: E402
from ddlsched.experiments.luo24 import pollux_data  # noqa: E402

POLICIES = ["sjf", "sjf-bsbf", "tiresias", "pollux"]


def _gpus(placement: str) -> list[str]:
    return [g for g in placement.split(";") if g]


def shared_jobs(res) -> set[int]:
    """Jobs that held a GPU at a time when another job held it too (segments overlap)."""
    per_gpu: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for s in res.segments:
        for g in _gpus(s.placement):
            per_gpu[g].append((s.start, s.end, s.job_id))
    out: set[int] = set()
    for spans in per_gpu.values():
        spans.sort()
        active: list[tuple[float, int]] = []  # (end, job)
        for start, end, job in spans:
            active = [(e, j) for e, j in active if e > start]
            for _, other in active:
                if other != job:
                    out.update((job, other))
            active.append((end, job))
    return out


def measure(res, reference: dict[int, float] | None) -> dict[str, float]:
    """The quantities of the module doc for one run (``reference``: SJF running times)."""
    hours = 1 / 3600
    running = {j.job_id: j.finish - j.start for j in res.jobs}
    held: dict[int, float] = defaultdict(float)
    for s in res.segments:
        held[s.job_id] += (s.end - s.start) * len(_gpus(s.placement))
    shared = shared_jobs(res)
    out = {
        "queueing_h": statistics.mean(j.start - j.arrival for j in res.jobs) * hours,
        "running_h": statistics.mean(running.values()) * hours,
        "shared_pct": 100.0 * len(shared) / len(res.jobs),
        "gpus_ratio": statistics.mean(
            held[j.job_id] / (j.gpus * running[j.job_id]) for j in res.jobs if running[j.job_id] > 0
        ),
    }
    if reference:
        ratio = {k: running[k] / reference[k] for k in running if reference.get(k, 0) > 0}
        out["slowdown_all"] = statistics.mean(ratio.values())
        sh = [ratio[k] for k in shared if k in ratio]
        out["slowdown_shared"] = statistics.mean(sh) if sh else 1.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--loads", default="1,4,8")
    args = ap.parse_args()
    root = pollux_data()
    base = {"profiles": str(root / "traces")} if root else {}
    print(f"profiles: {'Pollux artifact' if root else 'built-in synthetic'}")
    cols = [
        "queueing_h",
        "running_h",
        "shared_pct",
        "slowdown_shared",
        "slowdown_all",
        "gpus_ratio",
    ]
    print(f"{'load':>5s} {'policy':9s} " + " ".join(f"{c:>15s}" for c in cols))
    for load in (float(x) for x in args.loads.split(",")):
        rows: dict[str, list[dict[str, float]]] = defaultdict(list)
        for seed in range(args.seeds):
            settings = {**base, "jobs_per_hour": 30.0 * load}
            ref = None
            for policy in POLICIES:
                res = simulate_named(
                    "luo24", "luo24-paper-240", policy, seed=seed, settings=settings
                )
                m = measure(res, ref)
                if policy == "sjf":
                    ref = {j.job_id: j.finish - j.start for j in res.jobs}
                rows[policy].append(m)
        for policy in POLICIES:
            ms = rows[policy]
            cells = []
            for c in cols:
                vals = [m[c] for m in ms if c in m]
                cells.append(f"{statistics.mean(vals):15.2f}" if vals else f"{'':>15s}")
            print(f"{load:5g} {policy:9s} " + " ".join(cells))


if __name__ == "__main__":
    main()
