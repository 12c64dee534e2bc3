"""Luo et al. (SJF-BSBF): Tables III–IV and Fig. 6 (SPEC §6) on the Pollux workloads and
application profiles. The data directory (the Pollux artifact's ``traces/`` and workload folders)
is found in ``$DDLSCHED_POLLUX_DATA``, else ``../shared/data/pollux`` beside the repository;
without it the experiments run on the built-in synthetic profiles and generated workloads
(``luo24-N``) and say so in the table. Times are reported in hours, like the paper.
"""

from __future__ import annotations

import os
from pathlib import Path

from .plots import bar_chart, series_chart
from .runner import Experiment, Row, Task

HOURS = 1 / 3600
METRICS = ["avg_jct", "avg_jct_large", "avg_jct_small", "avg_queueing"]
UNITS = {m: HOURS for m in METRICS}


def pollux_data(data: str | None = None) -> Path | None:
    """The Pollux artifact's data directory, if present: ``reproduce --data DIR`` (an error
    when it has no ``traces/``), else ``$DDLSCHED_POLLUX_DATA``, else ``../shared``'s."""
    if data is not None:
        if not (Path(data) / "traces").is_dir():
            from ..errors import InputError

            raise InputError(
                "not the Pollux artifact's data folder: it has no traces/", source=data
            )
        return Path(data)
    env = os.environ.get("DDLSCHED_POLLUX_DATA")
    if env:  # explicit: only that folder (an empty or missing one selects the built-ins)
        return Path(env) if (Path(env) / "traces").is_dir() else None
    candidates = [
        Path.cwd().parent / "shared" / "data" / "pollux",
        Path(__file__).resolve().parents[4] / "shared" / "data" / "pollux",
    ]
    for c in candidates:
        if (c / "traces").is_dir():
            return c
    return None


#: jobs per workload in each Pollux workload folder
FOLDER_JOBS = {
    "workloads-0.5": 80,
    "workloads": 160,
    "workloads-1.5": 240,
    "workloads-2.0": 320,
    "workloads-3.0-generated": 480,
}


def _resolver(folder: str):
    def resolve(data: str | None = None):
        root = pollux_data(data)
        if root is None:
            return (
                "luo24",
                f"luo24-{FOLDER_JOBS[folder]}",
                {},
                "no Pollux data found: BUILT-IN synthetic profiles and generated workloads "
                "(not comparable with the paper's numbers)",
            )
        return (
            "luo24",
            str(root / folder / "workload-{n}.csv"),
            {"profiles": str(root / "traces"), "data": str(root)},
            f"Pollux artifact profiles and workloads ({root.name}/{folder}, measured ground truth)",
        )

    return resolve


#: Pollux's cost per job relative to the other policies' (its rounds fit every job's model)
POLLUX_COST = 30.0


def task_cost(task: Task) -> float:
    """A run's rough cost, for handing out the longest runs first (``Experiment.task_cost``):
    jobs in the workload (its folder, or the ``-N`` of a generated preset) × POLLUX_COST for
    Pollux."""
    jobs = 240.0
    for folder, n in FOLDER_JOBS.items():
        if f"/{folder}/" in task.workload:
            jobs = float(n)
    tail = task.workload.rsplit("-", 1)[-1]
    if task.workload.startswith("luo24") and tail.isdigit():
        jobs = float(tail)
    jobs *= 1.0 + float(dict(task.settings).get("jobs_per_hour", 0.0) or 0.0) / 300.0
    return jobs * (POLLUX_COST if task.policy == "pollux" else 1.0)


def _p(all_: float, large: float, small: float, queue: float) -> dict[str, float]:
    return {"avg_jct": all_, "avg_jct_large": large, "avg_jct_small": small, "avg_queueing": queue}


TABLE3_PAPER = {
    "FIFO": _p(2.34, 3.92, 2.13, 1.65),
    "SJF": _p(1.25, 3.50, 0.94, 0.56),
    "Tiresias": _p(1.51, 3.48, 1.23, 0.81),
    "Pollux": _p(1.04, 1.96, 0.91, 1.00),
    "SJF-FFS": _p(1.23, 4.29, 0.81, 0.18),
    "SJF-BSBF": _p(1.01, 3.38, 0.68, 0.14),
}
TABLE4_PAPER = {
    "FIFO": _p(7.52, 10.06, 7.08, 0.73),
    "SJF": _p(2.55, 7.00, 1.90, 1.87),
    "Tiresias": _p(5.09, 8.25, 4.59, 4.41),
    "Pollux": _p(4.69, 6.03, 4.51, 4.41),
    "SJF-FFS": _p(1.89, 8.12, 0.99, 0.73),
    "SJF-BSBF": _p(1.57, 6.13, 0.88, 0.69),
}
POLICIES = [
    ("FIFO", "fifo"),
    ("SJF", "sjf"),
    ("Tiresias", "tiresias"),
    ("SJF-FFS", "sjf-ffs"),
    ("SJF-BSBF", "sjf-bsbf"),
]
#: the simulation tables and Fig. 6a also compare with Pollux (elastic; not in the testbed's
#: Table II)
WITH_POLLUX = [*POLICIES[:3], ("Pollux", "pollux"), *POLICIES[3:]]

TABLE3 = Experiment(
    name="luo24-table3",
    description="240 jobs (Pollux workloads-1.5, 8 workloads), 16 × 4 GPUs (Luo et al. Table III).",
    cluster="luo24",
    workload="",
    rows=[Row(n, p, paper=TABLE3_PAPER[n]) for n, p in WITH_POLLUX],
    metrics=METRICS,
    units=UNITS,
    resolve=_resolver("workloads-1.5"),
    plot=lambda e, t, o: bar_chart(e, t, o, "avg_jct"),
    default_seeds=8,
    task_cost=task_cost,
    variants={"default": {}, "paper-workload": {"workload": "luo24-paper-240"}},
    optional_variants=frozenset({"paper-workload"}),
)

TABLE4 = Experiment(
    name="luo24-table4",
    description="480 jobs (workloads-3.0-generated, 8 workloads), 16 × 4 GPUs (Luo et al. Table IV).",
    cluster="luo24",
    workload="",
    rows=[Row(n, p, paper=TABLE4_PAPER[n]) for n, p in WITH_POLLUX],
    metrics=METRICS,
    units=UNITS,
    resolve=_resolver("workloads-3.0-generated"),
    plot=lambda e, t, o: bar_chart(e, t, o, "avg_jct"),
    default_seeds=8,
    task_cost=task_cost,
    variants={"default": {}, "paper-workload": {"workload": "luo24-paper-480"}},
    optional_variants=frozenset({"paper-workload"}),
)

#: Fig. 6a: the Pollux load levels available (jobs per workload)
LOADS = {
    "80 jobs": "workloads-0.5",
    "160 jobs": "workloads",
    "240 jobs": "workloads-1.5",
    "320 jobs": "workloads-2.0",
    "480 jobs": "workloads-3.0-generated",
}


def _load_variants() -> dict[str, dict[str, object]]:
    """One variant per load: the data folder's workloads, else generated ones as large."""
    return {
        label: {
            "workload": "{data}/" + folder + "/workload-{n}.csv",
            "builtin_workload": f"luo24-{FOLDER_JOBS[folder]}",
        }
        for label, folder in LOADS.items()
    }


FIG6A = Experiment(
    name="luo24-fig6a",
    description="Average JCT as the load grows (80–480 jobs; Luo et al. Fig. 6a scales 240 jobs "
    "by 0.5×–2×).",
    cluster="luo24",
    workload="",
    rows=[Row(n, p) for n, p in WITH_POLLUX],
    metrics=METRICS,
    units=UNITS,
    resolve=_resolver("workloads-1.5"),
    variants=_load_variants(),
    plot=lambda e, t, o: series_chart(e, t, o, "avg_jct", "jobs", list(LOADS)),
    default_seeds=8,
    task_cost=task_cost,
)

XIS = [1.0, 1.25, 1.5, 1.75, 2.0]

FIG6B = Experiment(
    name="luo24-fig6b",
    description="SJF-FFS vs SJF-BSBF as the interference ratio ξ grows (Luo et al. Fig. 6b; "
    "240 jobs).",
    cluster="luo24",
    workload="",
    rows=[Row("SJF-FFS", "sjf-ffs"), Row("SJF-BSBF", "sjf-bsbf")],
    metrics=METRICS,
    units=UNITS,
    resolve=_resolver("workloads-1.5"),
    variants={f"ξ={x:g}": {"interference": x} for x in XIS},
    plot=lambda e, t, o: series_chart(e, t, o, "avg_jct", "ξ", [f"{x:g}" for x in XIS]),
    default_seeds=8,
    task_cost=task_cost,
)


def _physical(data: str | None = None):
    root = pollux_data(data)
    if root is None:
        return (
            "luo24-physical",
            "luo24-physical",
            {},
            "no Pollux data found: BUILT-IN "
            "synthetic profiles (not comparable with the paper's numbers)",
        )
    return (
        "luo24-physical",
        "luo24-physical",
        {"profiles": str(root / "traces")},
        "Pollux artifact profiles (T4 step times) for the paper's 2080 Ti testbed; the "
        "30-job workload is our reading of §VI-A (docs/reproduction/luo24.md)",
    )


TABLE2 = Experiment(
    name="luo24-table2",
    description="30 jobs on 4 × 4 GPUs, makespan and average JCT in seconds (Luo et al. "
    "Table II, physical cluster).",
    cluster="luo24-physical",
    workload="luo24-physical",
    rows=[
        Row(n, p, paper={"makespan": mk, "avg_jct": jct})
        for (n, p), (mk, jct) in zip(
            POLICIES,
            [(2317, 662.6), (2319, 609.55), (2398, 664.73), (2176, 530.36), (2129, 483.16)],
            strict=True,
        )
    ],
    metrics=["makespan", "avg_jct"],
    resolve=_physical,
    plot=lambda e, t, o: bar_chart(e, t, o, "avg_jct"),
    default_seeds=5,
)

#: the Pollux artifact's own average JCTs (reference_results/<policy>-1.0/summary.json "mean":
#: 160-job workloads 1–8, 64 GPUs, 60 s rounds, 30 s restarts, measured ground truth)
ARTIFACT_MEANS = {"Tiresias": 4038.18, "Pollux": 2751.13}


def _artifact_data(data: str | None = None):
    root = pollux_data(data)
    if root is None:
        from ..errors import InputError

        raise InputError(
            "needs the Pollux artifact's data (../shared/data/pollux or $DDLSCHED_POLLUX_DATA)",
            field="pollux-artifact",
        )
    return (
        "luo24",
        str(root / "workloads" / "workload-{n}.csv"),
        {"profiles": str(root / "traces"), "semantics": "rounds"},
        f"Pollux artifact workloads and profiles ({root.name}/workloads), rounds semantics; "
        "the 'paper' column is the artifact's own result (reference_results/*-1.0)",
    )


POLLUX_ARTIFACT = Experiment(
    name="pollux-artifact",
    description="Tiresias and Pollux vs the Pollux artifact's own results (160 jobs, 8 "
    "workloads, 16 × 4 GPUs; seconds).",
    cluster="luo24",
    workload="",
    rows=[Row(n, n.lower(), paper={"avg_jct": v}) for n, v in ARTIFACT_MEANS.items()],
    metrics=["avg_jct"],
    resolve=_artifact_data,
    plot=lambda e, t, o: bar_chart(e, t, o, "avg_jct"),
    default_seeds=8,
    task_cost=task_cost,
)

LUO24_EXPERIMENTS = [TABLE2, TABLE3, TABLE4, FIG6A, FIG6B, POLLUX_ARTIFACT]
