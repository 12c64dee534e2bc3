"""Finish-time fairness and throughput shares (issue #17; docs/models.md "Fairness metrics").

Finish-time fairness (Themis, Mahajan et al., NSDI '20; Gavel's ``finish_time_fairness``) asks
how much longer a job took than on its fair share of the cluster. Our exact definition, for a
job j with JCT_j on a cluster of G GPUs:

* ``alone_j``: its time from start to finish alone on its requested g_j GPUs (consolidated),
  time-sharing the cluster's GPU types in proportion to their counts (the executor's
  ``alone_time``; on a single-type cluster simply its time alone);
* ``contention_j`` = N_j: the time-average number of jobs in the system (arrived, not finished;
  j included, so ≥ 1) over [arrival_j, finish_j] — the 1/N share it was entitled to;
* ``fair_jct_j`` = alone_j × max(1, N_j · g_j / G): on an equal 1/N_j share of the GPUs a job
  needing more than G/N_j GPUs time-shares them, one that needs fewer cannot go faster;
* ρ_j = JCT_j / fair_jct_j (< 1: better than its fair share; a job alone on an empty cluster
  has N_j = 1 and ρ_j = JCT_j / alone_j).

The summary gets ``avg_ftf_rho``, ``max_ftf_rho`` and ``jain_index`` (Jain's index
(Σx)² / (n·Σx²) of the per-job throughput shares x_j = 1/ρ_j: 1 when every job got the same
fraction of its fair throughput), ``fairness.csv`` the per-job values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

FAIRNESS_COLUMNS = ["job_id", "alone", "contention", "fair_jct", "rho"]
FAIRNESS_KEYS = ["avg_ftf_rho", "max_ftf_rho", "jain_index"]


class _Job(Protocol):
    job_id: int
    arrival: float
    finish: float
    gpus: int


def contention(arrivals: Sequence[float], finishes: Sequence[float]) -> np.ndarray:
    """Per job, the time-average number of jobs in the system over [arrival, finish] (its
    own arrival/finish included; a zero-length stay counts the jobs present at that instant)."""
    a = np.asarray(arrivals, dtype=float)
    f = np.asarray(finishes, dtype=float)
    times = np.concatenate([a, f])
    steps = np.concatenate([np.ones(len(a)), -np.ones(len(f))])
    order = np.lexsort((-steps, times))  # at one instant, arrivals before departures
    t, d = times[order], steps[order]
    # distinct breakpoints: the count on [T_k, T_k+1) and the integral up to T_k
    uniq, first = np.unique(t, return_index=True)
    count = np.cumsum(d)
    last = np.append(first[1:], len(t)) - 1
    n = count[last]  # jobs present after every change at T_k
    widths = np.diff(uniq)
    integral = np.concatenate([[0.0], np.cumsum(n[:-1] * widths)])

    def area(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(uniq, x, side="right") - 1
        return integral[k] + n[k] * (x - uniq[k])

    span = f - a
    out = np.empty(len(a))
    pos = span > 0
    out[pos] = (area(f[pos]) - area(a[pos])) / span[pos]
    if (~pos).any():  # no stay: the jobs present just after it arrived
        k = np.searchsorted(uniq, a[~pos], side="right") - 1
        out[~pos] = n[k]
    return np.maximum(out, 1.0)


def fairness(
    jobs: Sequence[_Job], alone: Mapping[int, float], num_gpus: int
) -> tuple[list[tuple[int, float, float, float, float]], dict[str, float]]:
    """``fairness.csv`` rows (job id, alone, contention, fair JCT, ρ) and the summary keys."""
    if not jobs:
        return [], {}
    n = contention([j.arrival for j in jobs], [j.finish for j in jobs])
    rows = []
    for j, nj in zip(jobs, n, strict=True):
        base = float(alone[j.job_id])
        fair = base * max(1.0, float(nj) * j.gpus / num_gpus)
        jct = j.finish - j.arrival
        rows.append((j.job_id, base, float(nj), fair, _rho(jct, fair)))
    rho = np.array([r[4] for r in rows])
    rho = rho[np.isfinite(rho)]
    if not len(rho):
        return rows, {}
    share = 1.0 / rho
    return rows, {
        "avg_ftf_rho": float(rho.mean()),
        "max_ftf_rho": float(rho.max()),
        "jain_index": float(share.sum() ** 2 / (len(share) * (share**2).sum())),
    }


def _rho(jct: float, fair: float) -> float:
    """ρ = JCT ÷ fair JCT; a job that needs no time (fair JCT 0): 1 if it also took none (it
    finished as it would have alone), else ∞ (no finite ratio; left out of the summary)."""
    if fair > 0:
        return jct / fair
    return 1.0 if jct <= 0 else float("inf")


def union_length(spans: Iterable[tuple[float, float]]) -> float:
    """Length of the union of the intervals ``spans`` (summed in (start, end) order)."""
    held = 0.0
    lo = hi = None
    for a, b in sorted(spans):
        if hi is None or a > hi:
            if hi is not None:
                held += hi - lo
            lo, hi = a, b
        elif b > hi:
            hi = b
    if hi is not None:
        held += hi - lo
    return held


def type_held(
    segments: Sequence[tuple[float, float, tuple[int, ...]]],
    gpu_type: Sequence[str],
    makespan: float,
) -> dict[str, float]:
    """``gpu_held_<type>``: per GPU type, the share of its GPU-seconds over the makespan during
    which a GPU held at least one job (a shared GPU counts once), as ``gpu_held``."""
    per_gpu: dict[int, list[tuple[float, float]]] = {}
    for start, end, gpus in segments:
        for g in gpus:
            per_gpu.setdefault(g, []).append((start, end))
    held: dict[str, float] = {t: 0.0 for t in gpu_type}
    count: dict[str, int] = {}
    for t in gpu_type:
        count[t] = count.get(t, 0) + 1
    for g, spans in per_gpu.items():
        held[gpu_type[g]] += union_length(spans)
    if not makespan > 0:
        return {f"gpu_held_{t}": 0.0 for t in count}
    return {f"gpu_held_{t}": held[t] / (count[t] * makespan) for t in count}
