"""``ddlsched trace stats``: a trace's shape (job count, GPU-size histogram, duration quantiles,
arrival rate) as a dict and as text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.job import JobSpec

#: Quantiles reported for durations (numpy's default linear interpolation).
DURATION_QUANTILES: tuple[tuple[str, float], ...] = (
    ("min", 0.0),
    ("p25", 0.25),
    ("p50", 0.5),
    ("p75", 0.75),
    ("p90", 0.9),
    ("p99", 0.99),
    ("max", 1.0),
)
#: How many of the most frequent models/applications are listed.
TOP_MODELS = 10


def trace_stats(jobs: Sequence[JobSpec]) -> dict[str, Any]:
    """Distribution of a job list.

    ``span_s`` = last − first arrival; ``arrival_rate_per_hour`` = (jobs − 1) / span · 3600 (None
    for a zero span); ``gpus.histogram`` = jobs per GPU count; ``duration_s`` quantiles over the
    jobs with a duration (None if none); ``gpu_hours`` = Σ duration · GPUs / 3600;
    ``models`` = the :data:`TOP_MODELS` most frequent application/model names;
    ``peak_gpu_demand`` = the most GPUs the jobs with a duration hold at once if each ran from
    its arrival (None if none has a duration): on a cluster with at least that many GPUs no
    job ever waits, so every queue order gives the same result."""
    n = len(jobs)
    if n == 0:
        raise ValueError("no jobs")
    arrivals = np.sort(np.array([j.arrival for j in jobs], dtype=float))
    gpus = np.array([j.num_gpus for j in jobs], dtype=np.int64)
    span = float(arrivals[-1] - arrivals[0])
    gaps = np.diff(arrivals)
    hist = Counter(int(g) for g in gpus)
    with_duration = [j for j in jobs if j.duration > 0]
    with_iters = [j.iterations for j in jobs if j.iterations > 0]
    names = Counter(j.application or j.model.name for j in jobs)
    top = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_MODELS]
    stats: dict[str, Any] = {
        "jobs": n,
        "first_arrival_s": float(arrivals[0]),
        "last_arrival_s": float(arrivals[-1]),
        "span_s": span,
        "arrival_rate_per_hour": (n - 1) / span * 3600.0 if span > 0 else None,
        "interarrival_s": _summary(gaps) if len(gaps) else None,
        "gpus": {
            "histogram": {g: hist[g] for g in sorted(hist)},
            "mean": float(gpus.mean()),
            "max": int(gpus.max()),
            "total": int(gpus.sum()),
        },
        "duration_s": None,
        "gpu_hours": None,
        "peak_gpu_demand": None,
        "iterations": _summary(np.array(with_iters, dtype=float)) if with_iters else None,
        "models": dict(top),
        "distinct_models": len(names),
    }
    if with_duration:
        d = np.array([j.duration for j in with_duration])
        g = np.array([j.num_gpus for j in with_duration], dtype=float)
        stats["duration_s"] = _summary(d)
        stats["gpu_hours"] = float((d * g).sum() / 3600.0)
        stats["peak_gpu_demand"] = peak_gpu_demand(with_duration)
    return stats


def peak_gpu_demand(jobs: Sequence[JobSpec]) -> int:
    """The most GPUs held at once if every job ran on ``[arrival, arrival + duration)`` from
    its arrival (no queueing; a job ending at t frees its GPUs before one arriving at t)."""
    starts = [(j.arrival, j.num_gpus) for j in jobs]
    ends = [(j.arrival + j.duration, -j.num_gpus) for j in jobs]
    held = peak = 0
    for _, change in sorted(starts + ends):  # at equal times the ends (negative) come first
        held += change
        peak = max(peak, held)
    return peak


def _summary(values: np.ndarray) -> dict[str, float]:
    qs = np.quantile(values, [q for _, q in DURATION_QUANTILES])
    out = {"jobs": len(values), "mean": float(values.mean())}
    out.update({name: float(v) for (name, _), v in zip(DURATION_QUANTILES, qs, strict=True)})
    return out


def _num(x: float) -> str:
    """Readable number: thousands separators from 100 on, 3 significant digits below."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _quantile_line(s: dict[str, float]) -> str:
    parts = [f"{name} {_num(s[name])}" for name, _ in DURATION_QUANTILES]
    return "  ".join(parts) + f"  mean {_num(s['mean'])}"


def format_trace_stats(stats: dict[str, Any], title: str = "") -> str:
    """The text ``ddlsched trace stats`` prints."""
    n = stats["jobs"]
    lines = [title] if title else []
    lines.append(f"jobs          {n:,}")
    span = stats["span_s"]
    rate = stats["arrival_rate_per_hour"]
    arr = (
        f"arrivals      {_num(stats['first_arrival_s'])} s .. {_num(stats['last_arrival_s'])} s"
        f" (span {span / 3600:,.1f} h)"
    )
    if rate is not None:
        arr += f", {_num(rate)} jobs/h"
    lines.append(arr)
    ia = stats["interarrival_s"]
    if ia is not None:
        lines.append(
            f"inter-arrival mean {_num(ia['mean'])} s  p50 {_num(ia['p50'])} s  "
            f"p90 {_num(ia['p90'])} s  max {_num(ia['max'])} s"
        )
    g = stats["gpus"]
    lines.append(f"GPUs per job  mean {g['mean']:.2f}  max {g['max']}  total {g['total']:,}")
    for size, count in g["histogram"].items():
        label = f"{size} GPU" + ("s" if size != 1 else "")
        lines.append(f"  {label:<11} {count:>9,}  {100 * count / n:5.1f} %")
    d = stats["duration_s"]
    if d is not None:
        lines.append(f"duration (s)  {d['jobs']:,} jobs: " + _quantile_line(d))
        lines.append(f"GPU time      {stats['gpu_hours']:,.1f} GPU-hours")
        lines.append(
            f"peak demand   {stats['peak_gpu_demand']:,} GPUs at once if no job waited "
            "(on a cluster this large none queues: every queue order gives the same result; "
            "--load-scale X packs arrivals X times closer)"
        )
    else:
        lines.append("duration (s)  none (no job has a duration)")
    it = stats["iterations"]
    if it is not None:
        lines.append(f"iterations    {it['jobs']:,} jobs: " + _quantile_line(it))
    models = stats["models"]
    shown = ", ".join(f"{name} {count:,}" for name, count in models.items())
    more = stats["distinct_models"] - len(models)
    lines.append(f"models        {shown}" + (f" (+{more} more)" if more > 0 else ""))
    return "\n".join(lines) + "\n"
