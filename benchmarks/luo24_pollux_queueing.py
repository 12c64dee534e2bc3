"""Issue #16, step 3: what would make Pollux queue 1.00 h (Luo et al., Table III)?

Not a test: ``python benchmarks/luo24_pollux_queueing.py [--seeds 3] [--loads 4,8]``.
On ``luo24-paper-240`` (× 30 jobs per hour, the Pollux artifact's profiles) it runs Tiresias
and Pollux — Pollux at its artifact setting and with longer rounds (``interval``) and dearer
re-allocations (``rescale_delay``) — and prints, as means over seeds in hours, the average JCT
and the queueing under three definitions:

* ``first``: first start − arrival (ours, every table);
* ``idle``: all the time a job held no GPU (``first`` + the gaps between its segments:
  preemptions and Pollux's scale-to-zero);
* ``no_progress``: ``idle`` + the ``rescale_delay`` the job spent restarting after each of its
  (re-)allocations, i.e. JCT − the time it made progress. The paper says its preemptive
  policies "exhibit longer queuing times attributable to job migration", which this counts;

and ``allocs``, the (re-)allocations per job. The paper's Pollux pair, 1.04 h JCT with 1.00 h
queueing, leaves 0.04 h of progress per job: compare with each row's JCT − no_progress.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ddlsched.api import simulate_named  # noqa: E402
from ddlsched.experiments.luo24 import pollux_data  # noqa: E402

#: (label, policy, extra settings)
VARIANTS: list[tuple[str, str, dict[str, float]]] = [
    ("tiresias", "tiresias", {}),
    ("pollux", "pollux", {}),
    ("pollux interval=360", "pollux", {"interval": 360.0}),
    ("pollux interval=1800", "pollux", {"interval": 1800.0}),
    ("pollux rescale=300", "pollux", {"rescale_delay": 300.0}),
    ("pollux rescale=900", "pollux", {"rescale_delay": 900.0}),
]


def measure(res, rescale_delay: float) -> dict[str, float]:
    """Mean JCT, the three queueing definitions of the module doc (hours) and allocations."""
    hours = 1 / 3600
    held: dict[int, float] = defaultdict(float)
    allocs: dict[int, int] = defaultdict(int)
    for s in res.segments:
        held[s.job_id] += s.end - s.start
        allocs[s.job_id] += 1
    jct = [j.finish - j.arrival for j in res.jobs]
    idle = [j.finish - j.arrival - held[j.job_id] for j in res.jobs]
    restarting = [min(rescale_delay * allocs[j.job_id], held[j.job_id]) for j in res.jobs]
    return {
        "jct_h": statistics.mean(jct) * hours,
        "first_h": statistics.mean(j.start - j.arrival for j in res.jobs) * hours,
        "idle_h": statistics.mean(idle) * hours,
        "no_progress_h": statistics.mean(i + r for i, r in zip(idle, restarting, strict=True))
        * hours,
        "allocs": statistics.mean(allocs[j.job_id] for j in res.jobs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--loads", default="4,8")
    args = ap.parse_args()
    root = pollux_data()
    base = {"profiles": str(root / "traces")} if root else {}
    print(f"profiles: {'Pollux artifact' if root else 'built-in synthetic'}")
    cols = ["jct_h", "first_h", "idle_h", "no_progress_h", "allocs"]
    print(f"{'load':>5s} {'variant':22s} " + " ".join(f"{c:>14s}" for c in cols), flush=True)
    for load in (float(x) for x in args.loads.split(",")):
        for label, policy, extra in VARIANTS:
            ms = []
            for seed in range(args.seeds):
                settings = {**base, "jobs_per_hour": 30.0 * load, **extra}
                res = simulate_named(
                    "luo24", "luo24-paper-240", policy, seed=seed, settings=settings
                )
                ms.append(measure(res, extra.get("rescale_delay", 30.0)))
            cells = " ".join(f"{statistics.mean(m[c] for m in ms):14.2f}" for c in cols)
            print(f"{load:5g} {label:22s} {cells}", flush=True)


if __name__ == "__main__":
    main()
