"""``ddlsched compare DIR_A DIR_B``: per-job and average JCT differences between two run
directories — typically a live run and the simulation of the workload it measured
(docs/live.md), or two policies on one workload. Jobs are matched by ``job_id``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from .load import RunData, group_labels, load_run

COLUMNS = ("job_id", "jct_a", "jct_b", "diff_s", "diff_pct")


@dataclass(frozen=True)
class JobDiff:
    """One job in both runs: JCTs (s) and ``b − a`` (s, and % of a)."""

    job_id: int
    jct_a: float
    jct_b: float

    @property
    def diff_s(self) -> float:
        return self.jct_b - self.jct_a

    @property
    def diff_pct(self) -> float:
        return 100.0 * self.diff_s / self.jct_a if self.jct_a > 0 else math.nan


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: matched jobs, jobs in one run only, and summary numbers."""

    a: RunData
    b: RunData
    label_a: str
    label_b: str
    jobs: tuple[JobDiff, ...]
    only_a: tuple[int, ...]
    only_b: tuple[int, ...]

    def summary(self) -> dict[str, object]:
        """Averages over the matched jobs (avg JCT a/b, difference, mean / median / max
        |per-job difference|) and each run's makespan."""
        a = np.array([j.jct_a for j in self.jobs])
        b = np.array([j.jct_b for j in self.jobs])
        d = b - a
        worst = int(np.argmax(np.abs(d)))
        avg_a, avg_b = float(a.mean()), float(b.mean())
        return {
            "a": str(self.a.path),
            "b": str(self.b.path),
            "label_a": self.label_a,
            "label_b": self.label_b,
            "matched_jobs": len(self.jobs),
            "only_in_a": list(self.only_a),
            "only_in_b": list(self.only_b),
            "avg_jct_a": avg_a,
            "avg_jct_b": avg_b,
            "avg_jct_diff_s": avg_b - avg_a,
            "avg_jct_diff_pct": 100.0 * (avg_b - avg_a) / avg_a if avg_a > 0 else math.nan,
            "mean_abs_diff_s": float(np.abs(d).mean()),
            "median_abs_diff_s": float(np.median(np.abs(d))),
            "max_abs_diff_s": float(abs(d[worst])),
            "max_abs_diff_job": self.jobs[worst].job_id,
            "makespan_a": float(self.a.summary.get("makespan", math.nan)),
            "makespan_b": float(self.b.summary.get("makespan", math.nan)),
        }


def compare_dirs(dir_a: str | Path, dir_b: str | Path) -> Comparison:
    """Load two run directories and match their jobs (``InputError`` if none match)."""
    a, b = load_run(dir_a), load_run(dir_b)
    ja = dict(zip(a.job_id.tolist(), a.jct.tolist(), strict=True))
    jb = dict(zip(b.job_id.tolist(), b.jct.tolist(), strict=True))
    common = sorted(set(ja) & set(jb))
    if not common:
        raise InputError(f"no job id in both runs ({dir_a} and {dir_b})", source=str(dir_b))
    label_a, label_b = group_labels([a.config, b.config])
    if label_a == label_b:
        label_a, label_b = f"A {label_a}", f"B {label_b}"
    return Comparison(
        a,
        b,
        label_a,
        label_b,
        tuple(JobDiff(i, ja[i], jb[i]) for i in common),
        tuple(sorted(set(ja) - set(jb))),
        tuple(sorted(set(jb) - set(ja))),
    )


def format_comparison(c: Comparison, max_rows: int = 50) -> str:
    """The fixed-width table ``ddlsched compare`` prints: per job, then the averages."""
    s = c.summary()
    lines = [f"A: {c.a.path}  ({c.label_a})", f"B: {c.b.path}  ({c.label_b})", ""]
    lines.append(
        f"{'job':>6}  {'JCT A (s)':>11}  {'JCT B (s)':>11}  {'B−A (s)':>10}  {'B−A (%)':>8}"
    )
    shown = c.jobs if len(c.jobs) <= max_rows else c.jobs[:max_rows]
    for j in shown:
        pct = f"{j.diff_pct:+8.1f}" if math.isfinite(j.diff_pct) else f"{'—':>8}"
        lines.append(
            f"{j.job_id:>6}  {j.jct_a:>11.2f}  {j.jct_b:>11.2f}  {j.diff_s:>+10.2f}  {pct}"
        )
    if len(c.jobs) > len(shown):
        lines.append(f"   … {len(c.jobs) - len(shown)} more jobs (--out FILE.csv has them all)")
    lines.append("")
    lines.append(
        f"avg JCT  A {s['avg_jct_a']:.2f} s  B {s['avg_jct_b']:.2f} s  "
        f"B−A {s['avg_jct_diff_s']:+.2f} s ({s['avg_jct_diff_pct']:+.1f} %)"
    )
    lines.append(
        f"|B−A| per job  mean {s['mean_abs_diff_s']:.1f} s  median {s['median_abs_diff_s']:.1f} s"
        f"  max {s['max_abs_diff_s']:.1f} s (job {s['max_abs_diff_job']})"
    )
    lines.append(f"makespan  A {s['makespan_a']:.1f} s  B {s['makespan_b']:.1f} s")
    lines.append(f"jobs matched {s['matched_jobs']}" + _only(c))
    return "\n".join(lines)


def _only(c: Comparison) -> str:
    parts = []
    for name, ids in (("A", c.only_a), ("B", c.only_b)):
        if ids:
            head = ", ".join(map(str, ids[:5])) + (" …" if len(ids) > 5 else "")
            parts.append(f"only in {name}: {len(ids)} ({head})")
    return ("  " + "  ".join(parts)) if parts else ""


def comparison_csv(c: Comparison) -> bytes:
    """The per-job table as CSV (``--out``)."""
    rows = [",".join(COLUMNS)]
    for j in c.jobs:
        pct = repr(j.diff_pct) if math.isfinite(j.diff_pct) else ""
        rows.append(f"{j.job_id},{j.jct_a!r},{j.jct_b!r},{j.diff_s!r},{pct}")
    return ("\n".join(rows) + "\n").encode("utf-8")
