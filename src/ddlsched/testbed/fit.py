"""Fitting the papers' contention models to measured all-reduce times, as this project
implements them (docs/models.md), and their error on points the fit did not see.

A point is k concurrent all-reduces of M bytes, each by a 2-worker job across two servers,
all of them crossing one uplink (``measure``'s placements), and the mean time one took.

**Wang** (:class:`~ddlsched.perf.contention.LinearContention`): ``t = a + k·b·M + (k−1)·η·M``,
fitted the way Wang et al. fit it (Sec. III-B, Fig. 2): ``a`` and ``b`` from the k = 1 points
alone (Eq. 2; both ≥ 0: a latency and a time per byte), then ``η`` from the k > 1 points with
that ``a`` and ``b`` (Eq. 5; any sign: contention may cost less than a fair share).

**Yu** (:class:`~ddlsched.perf.rar.RarModel`, Eq. 6–8), the job's compute set to 0:
``τ = 2(w−1)·(M/w)/B + (w−1)·(M/w)/C + ξ2·(servers)`` with ``B = b_e / f(α, max(1, ξ1·p))``,
``f = k + α(k−1)``, p = k here, w = 2 workers on 2 servers. ``b_e`` is the link rate the
cluster file gives (the shaped rate: not fitted, as the simulator takes it from the cluster)
and C the model's default; ``ξ1``, ``α`` and ``ξ2`` are fitted to all points at once by
least squares on relative errors, evaluated by ``RarModel`` itself (its clamp included).

For 2-worker jobs both are the same affine family in (k, M) — per byte ``k·b + (k−1)·η`` vs
``(ξ1·k·(1+α) − α)/b_e`` — so what differs is the reading: Wang's fixed cost ``a`` is a latency
paid once, Yu's ``2·ξ2`` an overhead per server; Wang measures ``b`` alone and attributes only
what contention adds to ``η``; Yu keeps the nominal rate and folds everything else into ξ1, α.

Every fit minimises relative error (each residual divided by its measured time), the measure
every report uses (the mean relative error, MRE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares, nnls

from ..core.job import JobSpec
from ..perf.contention import MB, LinearContention
from ..perf.model_profile import ModelProfile
from ..perf.rar import RarModel

#: workers per job and servers per job in every measured point
WORKERS = 2
SERVERS = 2


@dataclass(frozen=True)
class Point:
    """k concurrent all-reduces of ``size_mb`` MB took ``measured_s`` seconds each (mean)."""

    k: int
    size_mb: float
    measured_s: float


def _spec(size_mb: float) -> JobSpec:
    """A 2-worker job whose iteration is one all-reduce of ``size_mb`` (no compute)."""
    return JobSpec(
        job_id=0,
        arrival=0.0,
        num_gpus=WORKERS,
        iterations=1,
        model=ModelProfile("allreduce", size_mb, 0.0, 1, 0.0, 0.0),
    )


def wang_time(model: LinearContention, k: int, size_mb: float) -> float:
    return model.time(size_mb * MB, k)


def yu_time(model: RarModel, k: int, size_mb: float, b_e: float) -> float:
    """Eq. 8 for a 2-worker job on 2 servers with p = k cross-server jobs on its busiest one
    (b_e in bytes/s; b_i unused: the job spans servers)."""
    return model.iteration_time(_spec(size_mb), SERVERS, k, b_e, b_e)


def fit_wang(points: Sequence[Point]) -> LinearContention:
    """a, b ≥ 0 from the k = 1 points (weighted non-negative least squares), then η from the
    k > 1 points."""
    solo = [p for p in points if p.k == 1]
    if len({p.size_mb for p in solo}) < 2:
        raise ValueError("fitting a and b needs k = 1 points of at least two sizes")
    w = np.array([1.0 / p.measured_s for p in solo])
    x = np.array([[1.0, p.size_mb * MB] for p in solo])
    y = np.array([p.measured_s for p in solo])
    (a, b), _ = nnls(x * w[:, None], y * w)  # a latency and a time per byte are ≥ 0
    more = [p for p in points if p.k > 1]
    eta = 0.0
    if more:
        w2 = np.array([1.0 / p.measured_s for p in more])
        xe = np.array([(p.k - 1) * p.size_mb * MB for p in more]) * w2
        ye = np.array([p.measured_s - a - p.k * b * p.size_mb * MB for p in more]) * w2
        eta = float(xe @ ye / (xe @ xe))
    return LinearContention(a=float(a), b=float(b), eta=eta)


def fit_yu(points: Sequence[Point], b_e: float) -> RarModel:
    """ξ1, α, ξ2 by least squares on relative errors (b_e, C fixed; see the module docstring).

    Started from the closed-form solution of the unclamped model (linear in 2ξ2,
    ξ1(1+α)/b_e and −α/b_e), then refined through ``RarModel`` so the clamp k ≥ 1 counts."""
    base = RarModel()
    c = base.reduction_speed
    ring = 2.0 * (WORKERS - 1) / WORKERS  # bytes on the link per byte of gradient
    w = np.array([1.0 / p.measured_s for p in points])
    x = np.array([[1.0, ring * p.size_mb * MB * p.k, ring * p.size_mb * MB] for p in points])
    y = np.array([p.measured_s - (WORKERS - 1) / WORKERS * p.size_mb * MB / c for p in points])
    (u0, u1, u2), *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    alpha0 = float(np.clip(-u2 * b_e, -0.9, 50.0))
    xi1_0 = float(max(u1 * b_e / (1.0 + alpha0), 1e-3))
    xi2_0 = float(max(u0 / SERVERS, 0.0))

    def model(v: np.ndarray) -> RarModel:
        return RarModel(xi1=float(v[0]), xi2=float(v[1]), alpha=float(v[2]), reduction_speed=c)

    def residuals(v: np.ndarray) -> np.ndarray:
        m = model(v)
        return np.array([yu_time(m, p.k, p.size_mb, b_e) / p.measured_s - 1.0 for p in points])

    res = least_squares(
        residuals,
        x0=np.array([xi1_0, xi2_0, alpha0]),
        bounds=([1e-3, 0.0, -0.9], [100.0, 10.0, 50.0]),
        method="trf",
    )
    return model(res.x)


def mre(points: Sequence[Point], predict: Callable[[int, float], float]) -> float:
    """Mean relative error |predicted − measured| / measured over ``points``."""
    if not points:
        return float("nan")
    return float(
        np.mean([abs(predict(p.k, p.size_mb) - p.measured_s) / p.measured_s for p in points])
    )


def split_sizes(sizes: Sequence[float]) -> tuple[list[float], list[float]]:
    """(sizes to fit on, sizes held out): the smallest, the middle and the largest are fitted
    (an affine model needs the ends), every other size is held out; with 3 sizes the middle
    one is held out."""
    s = sorted(set(sizes))
    if len(s) < 3:
        raise ValueError("need at least 3 sizes: 2 to fit on and 1 to hold out")
    fit = [s[0], s[-1]] if len(s) == 3 else [s[0], s[len(s) // 2], s[-1]]
    return sorted(fit), [x for x in s if x not in fit]


@dataclass(frozen=True)
class Fits:
    """Both models fitted on one subset of the points and scored on another."""

    wang: LinearContention
    yu: RarModel
    wang_mre: float
    yu_mre: float


def fit_and_score(points: Sequence[Point], fit_on: Callable[[Point], bool], b_e: float) -> Fits:
    """Fit both models on the points ``fit_on`` accepts, score them on the rest."""
    train = [p for p in points if fit_on(p)]
    test = [p for p in points if not fit_on(p)]
    wang = fit_wang(train)
    yu = fit_yu(train, b_e)
    return Fits(
        wang=wang,
        yu=yu,
        wang_mre=mre(test, lambda k, s: wang_time(wang, k, s)),
        yu_mre=mre(test, lambda k, s: yu_time(yu, k, s, b_e)),
    )


#: the settings ``--contention-fit`` takes from a summary.json: Wang's model, which the
#: simulator's Wang presets and the live gates (``live --gate``) price all-reduces with
FIT_KEYS = ("a", "b", "eta")


def fit_settings(path: str) -> dict[str, str]:
    """``a``, ``b``, ``eta`` of ``testbed measure``'s ``summary.json`` at ``path`` as ``--set``
    strings (``repr`` keeps every digit); ``InputError`` naming ``--contention-fit`` for a file
    that is missing, not JSON, or without the three numbers."""
    import json

    from ..errors import InputError

    try:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}", field="--contention-fit") from None
    except ValueError as e:
        raise InputError(f"{path}: not JSON ({e})", field="--contention-fit") from None
    if not isinstance(summary, dict):
        raise InputError(f"{path}: not a testbed measure summary.json", field="--contention-fit")
    out: dict[str, str] = {}
    for key in FIT_KEYS:
        value = summary.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(
                f"{path}: no number {key!r} (a summary.json of `ddlsched testbed measure`)",
                field="--contention-fit",
            )
        out[key] = repr(float(value))
    return out
