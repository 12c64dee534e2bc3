"""Gavel (Narayanan et al., OSDI '20), Fig. 8-style: average JCT against the input job rate on a
heterogeneous cluster, heterogeneity-agnostic vs heterogeneity-aware policies (issue #17).

Gavel's Fig. 8 runs its LAS policy (max-min fairness), agnostic and aware, on a 36:36:36
cluster with 1-GPU jobs from its generator (continuous arrivals, measured on a window of jobs
4,000–5,000). The data in ``../shared`` allows the same on a smaller scale: Gavel's generator is
reproduced (``workloads/gavel_gen.py``), and the throughputs file is Gavel's. This experiment
runs a 12:12:12 cluster (a third of Gavel's) with the rates scaled likewise, 400 jobs per run
averaged over all jobs, and two policy pairs: LAS (``max-min-fairness``) and FIFO, each
agnostic and ``-perf`` (finish-time fairness costs about 5× more per run; run it with
``ddlsched sweep``). docs/reproduction/gavel.md has the results.
"""

from __future__ import annotations

from .plots import series_chart
from .runner import Experiment, Row, Task

#: jobs per hour on 12:12:12 (a third of the cluster: about a third of Gavel's rates)
RATES = [1.0, 2.0, 3.0, 4.0]
JOBS = 400
CLUSTER = "gavel-12:12:12"

GAVEL_POLICIES = [
    ("LAS (agnostic)", "max-min-fairness"),
    ("LAS (aware)", "max-min-fairness-perf"),
    ("FIFO (agnostic)", "gavel-fifo"),
    ("FIFO (aware)", "gavel-fifo-perf"),
]


def _variants() -> dict[str, dict[str, object]]:
    return {f"{r:g} jobs/h": {"workload": f"gavel-{JOBS}@{r:g}"} for r in RATES}


def _cost(task: Task) -> float:
    """Higher rates queue more jobs: longer runs (for handing out the longest first)."""
    rate = float(task.workload.rsplit("@", 1)[-1])
    return rate * (5.0 if "fairness" in task.policy else 1.0)


HOURS = 1 / 3600

GAVEL_FIG8 = Experiment(
    name="gavel-fig8",
    description=(
        "Average JCT vs input job rate on a heterogeneous cluster (gavel-12:12:12, 1-GPU jobs "
        "of Gavel's generator, 400 per run): heterogeneity-agnostic vs -aware LAS (max-min "
        "fairness) and FIFO (Gavel Fig. 8, scaled to a third)."
    ),
    cluster=CLUSTER,
    workload=f"gavel-{JOBS}@1",
    rows=[Row(n, p) for n, p in GAVEL_POLICIES],
    metrics=["avg_jct", "max_ftf_rho", "jain_index"],
    units={"avg_jct": HOURS},
    variants=_variants(),
    plot=lambda e, t, o: series_chart(
        e, t, o, "avg_jct", "input job rate (jobs/h)", [f"{r:g}" for r in RATES]
    ),
    default_seeds=3,
    task_cost=_cost,
    notes=(
        "Gavel's paper (§7) reports lower average JCTs for its heterogeneity-aware policies "
        "than for the agnostic baselines, and higher input rates sustained before JCTs grow "
        "without bound."
    ),
)

GAVEL_EXPERIMENTS = [GAVEL_FIG8]
