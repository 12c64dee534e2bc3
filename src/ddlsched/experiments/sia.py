"""Sia (Jayaram Subramanya et al., SOSP '23), Tables 3 and 4 (issue #29): Sia against Pollux
and Gavel+TunedJobs on the artifact's workloads and per-type profiles.

The inputs are Sia's public artifact (github.com/siasosp23/artifacts, folder
``sia-simulator/``), which has no licence: ddlsched ships none of it. ``reproduce sia-table3
--data DIR`` (or ``$DDLSCHED_SIA_DATA``) names a checkout — the repository or its
``sia-simulator`` folder. A run is what the artifact's ``run_experiment.sh`` runs: the
``sia-64`` cluster (Table 3) or ``sia-homo-64`` (Table 4), 60 s rounds (Gavel 360 s), the
artifact's calibration (``--set calibration=sia``) and round semantics; seed n runs
``workload-n.csv``. Besides the paper's numbers, the table closes with the artifact's own
simulator's, run on this machine (docs/reproduction/sia.md says how).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from .plots import bar_chart
from .runner import Experiment, Row, Task

HOURS = 1 / 3600
METRICS = ["avg_jct", "p99_jct", "makespan", "gpu_hours_per_job"]
UNITS = {"avg_jct": HOURS, "p99_jct": HOURS, "makespan": HOURS}
#: GPUs of both Sia presets (``sia-64``, ``sia-homo-64``)
GPUS = 64


def gpu_hours_per_job(summary: Mapping[str, float]) -> float:
    """GPU-hours a job held on average: every job's GPUs × time (``gpu_util_jobs`` × GPUs ×
    makespan) over the jobs (the paper's "GPU hrs/job"; the artifact counts a round's GPUs
    from its allocation, print_run_stats.py:12-43)."""
    n = summary["num_jobs"]
    return summary["gpu_util_jobs"] * GPUS * summary["makespan"] / n / 3600 if n else 0.0


#: the paper's trace names → the artifact's workload folders
TRACES = {"philly": "philly", "helios": "saturn", "newtrace": "newtrace"}
#: Table 3's rows: our policy, the paper's name
#: the elastic rows fit their jobs' throughput models as the artifact does (its goodput.py:
#: one L-BFGS-B at tol 1e-5; ``--set goodput_fit=artifact``, docs/sia.md)
ARTIFACT_FIT: Mapping[str, object] = {"goodput_fit": "artifact"}
TABLE3_ROWS = [
    ("Sia", "sia", ARTIFACT_FIT),
    ("Pollux", "pollux-unaware", ARTIFACT_FIT),
    ("Gavel+TJ", "gavel-tunedjobs", {}),
]
TABLE4_ROWS = [
    ("Sia", "sia", ARTIFACT_FIT),
    ("Pollux", "pollux", ARTIFACT_FIT),
    ("Gavel+TJ", "gavel-tunedjobs", {}),
]


def _p(avg: float, p99: float, makespan: float, gpu_h: float) -> dict[str, float]:
    return {"avg_jct": avg, "p99_jct": p99, "makespan": makespan, "gpu_hours_per_job": gpu_h}


#: Table 3 (heterogeneous 64 GPUs; means over the paper's workloads; hours)
TABLE3_PAPER = {
    "philly": {
        "Sia": _p(0.6, 9.5, 14.2, 4.0),
        "Pollux": _p(1.0, 14.9, 24.5, 5.6),
        "Gavel+TJ": _p(1.9, 30.0, 33.8, 9.0),
    },
    "helios": {
        "Sia": _p(0.7, 10.9, 14.9, 4.8),
        "Pollux": _p(1.0, 15.0, 25.5, 5.9),
        "Gavel+TJ": _p(2.5, 38.7, 43.0, 12.1),
    },
    "newtrace": {
        "Sia": _p(0.7, 4.6, 52.2, 3.0),
        "Pollux": _p(1.5, 10.3, 62.3, 3.4),
        "Gavel+TJ": _p(11.3, 98.1, 110.0, 6.4),
    },
}
#: Table 4 (homogeneous: 64 T4s, Philly; hours)
TABLE4_PAPER = {
    "philly": {
        "Sia": _p(1.9, 18.1, 21.4, 8.4),
        "Pollux": _p(2.0, 19.3, 21.7, 8.6),
        "Gavel+TJ": _p(4.3, 37.1, 44.3, 15.3),
    }
}

#: The artifact's own simulator, run on this machine (commit aaf7a0de, 2026-11-26/27; the
#: commands and environment: docs/reproduction/sia.md): average JCT (s) of workload-1, -2, …
#: (measured, not the paper's; a policy's list stops where our runs stopped)
ARTIFACT_AVG_JCT = {
    ("philly", "sia"): (1949.75, 2690.68, 2070.08),
    ("philly", "gavel-tunedjobs"): (6016.46, 7572.36, 4781.43),
    ("helios", "sia"): (2091.09, 2575.18, 2671.54),
    ("helios", "gavel-tunedjobs"): (6474.21, 6182.01, 9347.32),
    ("newtrace", "sia"): (2853.69, 3950.08, 2917.02),
    ("newtrace", "gavel-tunedjobs"): (30824.14, 57324.14, 38127.45),
}

#: The same for Table 4: the artifact's simulator with its cluster set to 16 nodes of 4 T4s
#: (``cluster_nnodes = {"aws": 16}``, the line its simulator_config.py has commented out for
#: the homogeneous cluster); its Pollux is ``multi_simulator_unaware.py`` on that one type
ARTIFACT_AVG_JCT_HOMO: dict[tuple[str, str], tuple[float, ...]] = {
    ("philly", "sia"): (6043.61875, 8713.09375, 6036.86875),
    ("philly", "gavel-tunedjobs"): (12026.2875, 14300.4625, 15683.36875),
}


def sia_data(data: str | None = None) -> Path:
    """The artifact's ``sia-simulator`` folder: ``--data DIR`` (the repository or that folder),
    else ``$DDLSCHED_SIA_DATA``; one-line error when neither holds ``traces/`` and
    ``workloads/``."""
    from ..errors import InputError

    given = data if data is not None else os.environ.get("DDLSCHED_SIA_DATA")
    if not given:
        raise InputError(
            "needs Sia's artifact (git clone github.com/siasosp23/artifacts): --data DIR or "
            "$DDLSCHED_SIA_DATA",
            field="--data",
        )
    for root in (Path(given) / "sia-simulator", Path(given)):
        if (root / "traces").is_dir() and (root / "workloads").is_dir():
            return root
    raise InputError(
        "not Sia's artifact: neither it nor its sia-simulator/ has traces/ and workloads/",
        source=given,
    )


def _resolver(cluster: str):
    def resolve(data: str | None = None):
        root = sia_data(data)
        return (
            cluster,
            "",
            {
                "profiles": str(root / "traces"),
                "calibration": "sia",
                "semantics": "rounds",
                "data": str(root),
            },
            f"Sia artifact workloads and per-type profiles ({root}), {cluster}, the "
            "artifact's calibration, rounds semantics; seed n = workload-n.csv",
        )

    return resolve


def _variants(traces: list[str]) -> dict[str, dict[str, object]]:
    return {t: {"workload": "{data}/workloads/" + TRACES[t] + "/workload-{n}.csv"} for t in traces}


def _cost(task: Task) -> float:
    """Longest first: newtrace's 960 jobs, then Sia's ILP rounds, then Pollux, then Gavel."""
    size = 6.0 if "/newtrace/" in task.workload else 1.0
    return size * {"sia": 3.0, "pollux-unaware": 2.0, "pollux": 2.0}.get(task.policy, 1.0)


def artifact_verdict_of(
    references: Mapping[tuple[str, str], tuple[float, ...]], cluster_note: str = ""
) -> Callable[[Experiment, list[dict]], str]:
    """The table's closing section: our average JCT beside the artifact's own simulator on the
    same workloads (``references``: (variant, policy) → its average JCT of workload-1, -2, …,
    where we ran it), and the difference."""

    def verdict(exp: Experiment, table: list[dict]) -> str:
        lines = [
            "## Beside the artifact's own simulator",
            "",
            "Average JCT (h) of the same workload files, the artifact's simulator run on this "
            f"machine{cluster_note} (docs/reproduction/sia.md).",
            "",
            "| trace | row | ours | artifact | difference | workloads |",
            "|---|---|---|---|---|---|",
        ]
        policy = {r.name: r.policy for r in exp.rows}
        shown = 0
        for t in table:
            if t["metric"] != "avg_jct":
                continue
            ref = references.get((t["variant"], policy[t["row"]]), ())
            n = t["seeds"]
            if len(ref) < n:
                continue
            art = sum(ref[:n]) / n * HOURS
            ours = t["ours_mean"]
            lines.append(
                f"| {t['variant']} | {t['row']} | {ours:.3f} | {art:.3f} | "
                f"{round((ours / art - 1) * 100, 1) + 0.0:+.1f} % | 1–{n} |"
            )
            shown += 1
        if not shown:
            lines.append("| – | – | – | – | – | none of these runs has an artifact reference |")
        return "\n".join(lines) + "\n"

    return verdict


#: Table 3's closing section (the heterogeneous ``sia-64``)
artifact_verdict = artifact_verdict_of(ARTIFACT_AVG_JCT)


P99_NOTE = (
    "p99 here is each workload's 99th percentile averaged; the paper pools the workloads' jobs."
)


def _table(name: str, description: str, cluster: str, rows, paper, traces, notes: str, **kw):
    """One of Sia's tables: rows × traces (variants) on ``cluster``, hours and GPU-hours."""
    return Experiment(
        name=name,
        description=description,
        cluster=cluster,
        workload="",
        rows=[Row(n, p, settings=dict(st)) for n, p, st in rows],
        metrics=METRICS,
        units=UNITS,
        derived={"gpu_hours_per_job": gpu_hours_per_job},
        paper_by_variant=paper,
        resolve=_resolver(cluster),
        variants=_variants(traces),
        plot=lambda e, t, o: bar_chart(e, t, o, "avg_jct"),
        default_seeds=3,
        task_cost=_cost,
        notes=f"{notes} {P99_NOTE}",
        **kw,
    )


SIA_TABLE3 = _table(
    "sia-table3",
    "Sia vs Pollux (heterogeneity-unaware) vs Gavel+TunedJobs on the heterogeneous 64-GPU "
    "cluster (sia-64: 24 T4, 24 RTX 2080 Ti, 16 A100), the artifact's Philly, Helios "
    "(saturn) and newTrace workloads (Sia Table 3; hours, GPU-hours per job).",
    "sia-64",
    TABLE3_ROWS,
    TABLE3_PAPER,
    list(TRACES),
    "The paper averages 10 workloads per trace (Philly has 8 in the artifact); `--seeds N` "
    "runs workload-1 … workload-N.",
    verdict=artifact_verdict,
)

SIA_TABLE4 = _table(
    "sia-table4",
    "Sia vs Pollux vs Gavel+TunedJobs on a homogeneous 64-GPU cluster (sia-homo-64: 16 × 4 "
    "T4), the artifact's Philly workloads (Sia Table 4; hours, GPU-hours per job).",
    "sia-homo-64",
    TABLE4_ROWS,
    TABLE4_PAPER,
    ["philly"],
    "Shockwave and Themis (the paper's other rows) are not in ddlsched.",
    verdict=artifact_verdict_of(
        ARTIFACT_AVG_JCT_HOMO, " with its cluster set to 16 nodes of 4 T4s (`cluster_nnodes`)"
    ),
)

SIA_EXPERIMENTS = [SIA_TABLE3, SIA_TABLE4]
