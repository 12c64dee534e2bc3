"""The ``fitted`` ground truth: the Pollux throughput model fitted to an application's measurements.

The measured ground truth (:mod:`ddlsched.perf.profiles`) interpolates the artifact's step times;
this module replaces that with the parametric model that Pollux's scheduler itself uses (the
artifact's goodput.py; notes §6), fitted once to *every* measured row of an application.

**Model** (:class:`ThroughputParams`). A replica processes ``a`` samples per micro-step; a job on
``n`` nodes with ``R`` replicas runs ``k`` extra accumulation micro-steps and one synchronising step
per iteration:

- compute of one micro-step: T_a = α_c + β_c·a;
- gradient all-reduce: T_net = α_n + β_n·max(R − 2, ε) if n > 1 (inter-node link), α_r +
  β_r·max(R − 2, ε) if n = 1 and R > 1 (intra-node link), and 0 if R = 1;
- the synchronising step overlaps compute and all-reduce: T_o = (T_a^γ + T_net^γ)^(1/γ), γ ∈
  [1, 10] (γ = 1: no overlap, γ → ∞: perfect overlap);
- one iteration: T_iter = k·T_a + T_o.

This is Eq. 7 of Luo et al. ("Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters via Wise
Resource Sharing"): t_iter = (s − 1)·t_comp(B/s) + (t_comp(B/s)^δ + t_comm^δ)^(1/δ), with s = k + 1
micro-steps, B/s = a, δ = γ, and t_comp(B) = α_comp + β_comp·B its Eq. 3. The differences:
Luo's Eq. 4 models communication as t_comm = α_comm + β_comm·M with M the *message size* (one
constant per model), while Pollux's T_net depends on the placement (separate inter-/intra-node
link constants α_n, α_r) and grows with the number of replicas (β_n, β_r per replica beyond 2); a
single replica has no all-reduce here. Luo's Eq. 5–6 (an interference ratio ξ multiplying the
iteration time of jobs sharing GPUs) are not part of this model: the fit is for exclusive use.

**Mapping to the measured rows.** The artifact's ground truth runs an iteration in
step + k·(step − sync) (notes §2–3), so a measured row gives T_o = step_time and T_a = step_time −
sync_time. :class:`FittedApplication` reports the model the same way: step = T_o, sync = T_o − T_a.

**Fit** (:func:`fit_throughput`). Like the artifact's ``fit_perf_params``, the loss is the squared
log error (RMSLE) of both the compute time T_a (against step − sync) and the step time T_o
(against step) over all rows of placements.csv (n = number of digits, R = digit sum) and
scalability.csv, minimised with ``scipy.optimize.least_squares`` (trust-region reflective, bounds:
every α, β ≥ 0 — optimised as logarithms, floored at 1e-12 — and γ ∈ [1, 10]). Unlike the artifact,
there are no regularisers (they pull β towards 0 and γ towards 1 so that the online fit on a few
configurations stays optimistic; with all rows they only add bias), and the fit is deterministic:
a fixed set of starting points, the best result kept.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .profiles import EPS, Application, BatchConfig, canonical_placement

#: Floor of every α, β in the fit (they are optimised as logarithms, so "≥ 0" becomes "≥ this").
PARAM_FLOOR = 1e-12
#: Bounds of γ (as in the artifact's goodput.py).
GAMMA_BOUNDS = (1.0, 10.0)


@dataclass(frozen=True)
class ThroughputParams:
    """Parameters of the Pollux/Luo throughput model (seconds; batch sizes in samples)."""

    alpha_c: float  # compute: constant term
    beta_c: float  # compute: seconds per sample of the micro-batch
    alpha_n: float  # inter-node all-reduce: constant term
    beta_n: float  # inter-node all-reduce: per replica beyond 2
    alpha_r: float  # intra-node all-reduce: constant term
    beta_r: float  # intra-node all-reduce: per replica beyond 2
    gamma: float  # overlap of compute and all-reduce, in [1, 10]

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, numbers.Real) and math.isfinite(v)):
                raise ValueError(f"{f.name} must be a finite number, got {v!r}")
            if v < 0:
                raise ValueError(f"{f.name} must be ≥ 0, got {v!r}")
        if self.gamma < 1:
            raise ValueError(f"gamma must be ≥ 1, got {self.gamma!r}")
        if self.alpha_c <= 0 and self.beta_c <= 0:
            raise ValueError("alpha_c and beta_c are both 0: compute would take no time")

    def as_tuple(self) -> tuple[float, ...]:
        # spelled out: dataclasses.astuple deep-copies and is ~10× slower (a hot path in Pollux)
        return (
            float(self.alpha_c),
            float(self.beta_c),
            float(self.alpha_n),
            float(self.beta_n),
            float(self.alpha_r),
            float(self.beta_r),
            float(self.gamma),
        )

    # ---------------------------------------------------------------- the model
    def compute_time(self, local_bsz: float) -> float:
        """T_a = α_c + β_c·a: one micro-step of ``local_bsz`` samples per replica (Luo Eq. 3)."""
        return self.alpha_c + self.beta_c * local_bsz

    def network_time(self, num_nodes: int, replicas: int) -> float:
        """T_net: the all-reduce on the placement's slowest link; 0 for one replica."""
        if replicas <= 1:
            return 0.0
        extra = max(replicas - 2, EPS)
        if num_nodes > 1:
            return self.alpha_n + self.beta_n * extra
        return self.alpha_r + self.beta_r * extra

    def sync_step_time(self, num_nodes: int, replicas: int, local_bsz: float) -> float:
        """T_o = (T_a^γ + T_net^γ)^(1/γ): the synchronising micro-step."""
        return _overlap(
            self.compute_time(local_bsz), self.network_time(num_nodes, replicas), self.gamma
        )

    def iteration_time(
        self, num_nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        """T_iter = k·T_a + T_o (Luo Eq. 7 with s = k + 1)."""
        t_a = self.compute_time(local_bsz)
        t_o = _overlap(t_a, self.network_time(num_nodes, replicas), self.gamma)
        return accum_steps * t_a + t_o

    def step_and_sync(self, num_nodes: int, replicas: int, local_bsz: float) -> tuple[float, float]:
        """(step_time, sync_time) as the measured rows define them: (T_o, T_o − T_a)."""
        t_a = self.compute_time(local_bsz)
        t_o = _overlap(t_a, self.network_time(num_nodes, replicas), self.gamma)
        return t_o, t_o - t_a

    def log_step_times(
        self, num_nodes: np.ndarray, replicas: np.ndarray, local_bsz: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised (log T_a, log T_o) for arrays of configurations."""
        return _log_times(np.asarray(self.as_tuple()), num_nodes, replicas, local_bsz)


def _overlap(t_a: float, t_net: float, gamma: float) -> float:
    if t_net <= 0.0:
        return t_a
    # (t_a^γ + t_net^γ)^(1/γ) = m·(1 + (other/m)^γ)^(1/γ), m = max: no overflow for large γ
    m = max(t_a, t_net)
    return m * (1.0 + (min(t_a, t_net) / m) ** gamma) ** (1.0 / gamma)


def _log_times(
    p: np.ndarray, nodes: np.ndarray, replicas: np.ndarray, bsz: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = p
    log_a = np.log(alpha_c + beta_c * bsz)
    extra = np.maximum(replicas - 2.0, EPS)
    net = np.where(nodes > 1, alpha_n + beta_n * extra, alpha_r + beta_r * extra)
    single = replicas <= 1
    log_net = np.log(np.where(single, 1.0, net))
    log_o = np.logaddexp(gamma * log_a, gamma * log_net) / gamma
    return log_a, np.where(single, log_a, log_o)


# -------------------------------------------------------------------------------------------
# measured rows
# -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredRows:
    """Every measured throughput row of an application, as arrays of equal length."""

    num_nodes: np.ndarray
    replicas: np.ndarray
    local_bsz: np.ndarray
    step_time: np.ndarray
    sync_time: np.ndarray

    def __len__(self) -> int:
        return len(self.step_time)


def measured_rows(app: Application) -> MeasuredRows:
    """placements.csv rows (n = number of nodes, R = GPUs in all) followed by scalability.csv
    rows, recovered from the :class:`~ddlsched.perf.profiles.Application` that holds them.

    ``Application`` keeps no public copy of its rows: the placement rows are its per-placement
    curves, and the scalability rows are the tail of its LinearND point set, after one grouped
    mean per (nodes, replicas, local_bsz) of the placement rows.
    """
    if isinstance(app, FittedApplication):
        app = app.measured
    curves: dict[tuple[int, ...], tuple[list[float], list[float], list[float]]] = app._curves
    points: np.ndarray = app._nd_points
    rows: list[tuple[float, float, float, float, float]] = []
    groups: set[tuple[float, float, float]] = set()
    for p, (xs, steps, syncs) in curves.items():
        n, r = float(len(p)), float(sum(p))
        for x, step, sync in zip(xs, steps, syncs, strict=True):
            rows.append((n, r, x, step, sync))
            groups.add((n, r, x))
    scal = points[len(groups) :]
    data = np.array(rows, dtype=float).reshape(-1, 5)
    if len(scal):
        data = np.vstack([data, scal])
    return MeasuredRows(*(np.ascontiguousarray(data[:, i]) for i in range(5)))


# -------------------------------------------------------------------------------------------
# fit
# -------------------------------------------------------------------------------------------

#: Starting points (α_c, β_c, α_n, β_n, α_r, β_r, γ) tried by :func:`fit_rows`, in this order.
_STARTS: tuple[tuple[float, ...], ...] = (
    (1e-1, 1e-2, 1e-1, 1e-2, 1e-1, 1e-2, 1.5),
    (1e-2, 1e-3, 1e-1, 1e-3, 1e-2, 1e-4, 3.0),
)


def fit_rows(rows: MeasuredRows) -> ThroughputParams:
    """Least-squares fit of :class:`ThroughputParams` to measured rows (see the module doc)."""
    from scipy.optimize import least_squares

    if len(rows) == 0:
        raise ValueError("no measured rows to fit")
    nodes, reps, bsz = rows.num_nodes, rows.replicas, rows.local_bsz
    if not np.all(np.isfinite(rows.step_time) & (rows.step_time > 0)):
        raise ValueError("step times must be positive and finite")
    log_step = np.log(rows.step_time)
    compute = rows.step_time - rows.sync_time
    ok = compute > 0  # rows without a usable compute time fit the step time only
    log_compute = np.log(np.where(ok, compute, 1.0))

    lo_log, hi_log = math.log(PARAM_FLOOR), math.log(1e4)
    lower = np.array([lo_log] * 6 + [GAMMA_BOUNDS[0]])
    upper = np.array([hi_log] * 6 + [GAMMA_BOUNDS[1]])

    def unpack(theta: np.ndarray) -> np.ndarray:
        return np.concatenate([np.exp(theta[:6]), theta[6:]])

    multi = nodes > 1
    single = reps <= 1
    extra = np.maximum(reps - 2.0, EPS)

    def residuals(theta: np.ndarray) -> np.ndarray:
        log_a, log_o = _log_times(unpack(theta), nodes, reps, bsz)
        return np.concatenate([(log_a - log_compute)[ok], log_o - log_step])

    def jacobian(theta: np.ndarray) -> np.ndarray:
        """d residuals / d θ (θ = log α, log β …, γ), analytic."""
        alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = unpack(theta)
        t_a = alpha_c + beta_c * bsz
        d_la = np.stack([alpha_c / t_a, beta_c * bsz / t_a], axis=1)  # d log T_a / d θ_c
        t_net = np.where(multi, alpha_n + beta_n * extra, alpha_r + beta_r * extra)
        log_a, log_net = np.log(t_a), np.log(np.where(single, 1.0, t_net))
        log_o = np.logaddexp(gamma * log_a, gamma * log_net) / gamma
        w = np.where(single, 1.0, np.exp(gamma * (log_a - log_o)))  # d log T_o / d log T_a
        jo = np.zeros((len(bsz), 7))
        jo[:, :2] = w[:, None] * d_la
        v = np.where(single, 0.0, 1.0 - w) / t_net  # d log T_o / d T_net
        jo[:, 2] = np.where(multi, v * alpha_n, 0.0)
        jo[:, 3] = np.where(multi, v * beta_n * extra, 0.0)
        jo[:, 4] = np.where(multi, 0.0, v * alpha_r)
        jo[:, 5] = np.where(multi, 0.0, v * beta_r * extra)
        jo[:, 6] = np.where(single, 0.0, (w * log_a + (1 - w) * log_net - log_o) / gamma)
        ja = np.zeros((int(ok.sum()), 7))
        ja[:, :2] = d_la[ok]
        return np.vstack([ja, jo])

    best: Any = None
    for start in _STARTS:
        theta0 = np.concatenate([np.log(start[:6]), start[6:]])
        res = least_squares(residuals, theta0, jac=jacobian, bounds=(lower, upper), method="trf")
        if best is None or res.cost < best.cost - 1e-12:
            best = res
    p = unpack(best.x)
    p[:6] = np.where(p[:6] <= PARAM_FLOOR * 1.000001, 0.0, p[:6])
    p[6] = min(max(p[6], GAMMA_BOUNDS[0]), GAMMA_BOUNDS[1])
    return ThroughputParams(*(float(v) for v in p))


def fit_throughput(app: Application) -> ThroughputParams:
    """:class:`ThroughputParams` fitted to every measured row of ``app`` (deterministic)."""
    return fit_rows(measured_rows(app))


@dataclass(frozen=True)
class FitError:
    """How well parameters reproduce measured step times."""

    rmsle: float  # root mean squared log error of step_time
    mape: float  # mean |predicted − measured| / measured of step_time
    max_rel: float  # largest relative error of step_time
    compute_mape: float  # mean relative error of the compute time (step − sync)
    rows: int


def fit_error(params: ThroughputParams, rows: MeasuredRows | Application) -> FitError:
    """Step-time errors of ``params`` on measured rows (or on an application's rows)."""
    if not isinstance(rows, MeasuredRows):
        rows = measured_rows(rows)
    log_a, log_o = params.log_step_times(rows.num_nodes, rows.replicas, rows.local_bsz)
    rel = np.abs(np.exp(log_o) / rows.step_time - 1.0)
    compute = rows.step_time - rows.sync_time
    ok = compute > 0
    crel = np.abs(np.exp(log_a[ok]) / compute[ok] - 1.0)
    return FitError(
        rmsle=float(np.sqrt(np.mean((log_o - np.log(rows.step_time)) ** 2))),
        mape=float(rel.mean()),
        max_rel=float(rel.max()),
        compute_mape=float(crel.mean()) if len(crel) else 0.0,
        rows=len(rows),
    )


# -------------------------------------------------------------------------------------------
# the fitted application
# -------------------------------------------------------------------------------------------


class FittedApplication(Application):
    """An :class:`Application` whose throughput is the fitted model instead of interpolation.

    Everything else — batch configuration, gradient statistics, gain, progress, constants — is the
    measured application's (this object shares its state). Step and iteration times come from
    ``params`` for any placement (no hull limit, no clamp of the node count).
    """

    def __init__(self, app: Application, params: ThroughputParams) -> None:  # noqa: D107
        if isinstance(app, FittedApplication):
            app = app.measured
        # share the measured application's state (validation, constants, gain cache); own caches
        self.__dict__.update(app.__dict__)
        self.measured = app
        self.params = params
        self._tput = {}
        self._iter: dict[tuple[tuple[int, ...], int, int], float] = {}

    def __repr__(self) -> str:
        return f"Fitted{super().__repr__()}"

    @staticmethod
    def _shape(placement: Sequence[int]) -> tuple[int, int]:
        p = canonical_placement(placement)
        return len(p), sum(p)

    def _measure(self, placement: Sequence[int], local_bsz: float) -> tuple[float, float]:
        """(T_o, T_o − T_a) of the model in place of the measured rows' (step_time, sync_time);
        ``Application.step_time`` caches it."""
        n, r = self._shape(placement)
        return self.params.step_and_sync(n, r, local_bsz)

    def iteration_time(self, placement: Sequence[int], cfg: BatchConfig) -> float:
        """T_iter = k·T_a + T_o (Luo Eq. 7)."""
        if type(placement) is not tuple:
            placement = tuple(placement)
        key = (placement, cfg.a, cfg.accum)
        hit = self._iter.get(key)
        if hit is None:
            n, r = self._shape(placement)
            hit = self._iter[key] = self.params.iteration_time(n, r, cfg.a, cfg.accum)
        return hit

    def rate(self, placement: Sequence[int], cfg: BatchConfig, epoch: int) -> float:
        """Progress per second gain(epoch, M)/T_iter."""
        return self.gain(epoch, cfg.M) / self.iteration_time(placement, cfg)


def fitted_applications(apps: Mapping[str, Application]) -> dict[str, FittedApplication]:
    """Each application with its throughput fitted (:func:`fit_throughput`), same keys."""
    return {name: FittedApplication(app, fit_throughput(app)) for name, app in apps.items()}
