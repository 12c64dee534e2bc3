"""Gavel's heterogeneity-aware allocation problems as SciPy/HiGHS linear programs (#17).

Gavel (Narayanan et al., OSDI '20, "Heterogeneity-Aware Cluster Scheduling Policies for Deep
Learning Workloads"; code: github.com/stanford-futuredata/gavel, MIT licence, read at commit
c4fa400) computes, every time the job set changes, an *allocation* X[j, t] in [0, 1]: the
fraction of time job j should run on GPU type t. Its round-based mechanism then turns X into
rounds (priorities = X / rounds received, deficits; scheduler/scheduler.py
``_schedule_jobs_on_workers_helper``); that mechanism is not here. This module holds only the
allocation problems, as pure functions of numpy arrays (no engine dependency, no cvxpy):

* jobs j = 0..J-1, each with a scale factor ``scale[j]`` (its GPU count; no space sharing);
* GPU types t = 0..K-1 with ``counts[t]`` GPUs;
* ``T[j, t]``: steps/s of job j alone on type t at its scale factor (Gavel's ``throughputs``);
* constraints (Gavel ``Policy.get_base_constraints``, scheduler/policies/policy.py):
  X >= 0, sum_t X[j, t] <= 1, sum_j scale[j] * X[j, t] <= counts[t];
* effective throughput of job j: sum_t T[j, t] * X[j, t] (:func:`effective_throughput`).

Policies (Gavel class -> function here):

* ``MaxMinFairnessPolicyWithPerf`` -> :func:`max_min_fairness_perf`;
  ``MaxMinFairnessPolicy`` (heterogeneity-agnostic) -> :func:`max_min_fairness`.
* ``FinishTimeFairnessPolicyWithPerf`` -> :func:`finish_time_fairness_perf`;
  ``FinishTimeFairnessPolicy`` -> :func:`finish_time_fairness`.
* ``MinTotalDurationPolicyWithPerf`` -> :func:`min_total_duration_perf`;
  ``MinTotalDurationPolicy`` -> :func:`min_total_duration`.
* ``FIFOPolicy`` / ``FIFOPolicyWithPerf`` (scheduler/policies/fifo.py) are not optimisation
  problems and are not implemented here: jobs in arrival (job id) order each get X = 1 on one
  type with ``scale`` free GPUs (a random such type in 'base' mode, the highest-throughput one in
  'perf' mode), and keep it until they finish; a job that does not fit blocks the queue.
* The packing (space-sharing) variants, water-filling max-min
  (max_min_fairness_water_filling.py), strategy-proof max-min, AlloX, Gandiva and the cost
  policies are out of scope.

How each LP is solved: ``scipy.optimize.linprog(method="highs-ds")`` (HiGHS dual simplex; a
serial, deterministic algorithm, so equal inputs give bit-identical X). Max-min and
min-makespan are LPs after the usual epigraph variable; finish-time fairness is a
quasi-convex problem, solved by a Dinkelbach-type sequence of max-min LPs (or, as a check, by
bisection on rho with LP feasibility checks; see :func:`finish_time_fairness_perf`). Returned
X are cleaned up like Gavel's (``x.value.clip(0, 1)``) and additionally rescaled so that solver
round-off never leaves a row sum above 1 or a type above its count.

Where Gavel's paper and its code differ (this module follows the code):

1. Max-min normalisation. The paper normalises each job's throughput by its throughput under
   an equal 1/N share of the cluster. ``MaxMinFairnessPolicyWithPerf`` instead divides by
   ``ProportionalPolicy.get_throughputs`` (proportional.py): X_prop[j, t] =
   counts[t] / sum(counts), which depends neither on N nor on the scale factor, and then
   multiplies the objective by ``scale[j]`` (and divides by the priority weight). Taking the
   1/N share as Gavel's ``IsolatedPolicy`` computes it (:func:`isolated_throughput`:
   counts[t] / (N * scale[j]) while that row sums to at most 1), the paper's per-job terms are
   the code's times the common constant N / sum(counts) whenever N * scale[j] >= sum(counts)
   for every job (a loaded cluster), so both have the same optimal X there; on an under-loaded
   cluster (a job's 1/N share would exceed a whole job-time) they differ.
   :func:`proportional_throughput` is the code's normaliser, and is what is used here.
2. The heterogeneity-agnostic max-min (``MaxMinFairnessPolicy``) sets every throughput to 1.0
   (including on types where the job's real throughput is 0) and calls the perf version. With
   T = 1 the proportional throughput is 1, so it maximises min_j scale[j] * sum_t X[j, t] /
   weight[j]: equal (scale-weighted) time shares, blind to type.
3. The heterogeneity-agnostic finish-time fairness and min-total-duration policies replace every
   column of T by the 'v100' column (hard-coded in Gavel, "since all other worker types have a
   throughput of 0 for some job"); here the caller names that column (``reference_type``).
4. Finish-time fairness: the code's rho_j is (time since start_j + steps_remaining_j /
   throughput_j) / (cumulative isolated time_j + steps_remaining_j / isolated throughput_j),
   where the cumulative isolated time is state Gavel's policy object accumulates between calls
   (sum over calls of steps done since the previous call / the isolated throughput at that
   call); here it is the argument ``isolated_time_elapsed`` (default 0, which is what Gavel has
   on a job's first call). Priority weights are accepted but unused by Gavel ("TODO: Do
   something with these priority_weights"); these functions do not take them.
5. Min-total-duration: the code does not solve the min-makespan problem exactly; it bisects on
   the makespan M in seconds over [100, 1e6] (extending the bracket x10 while nothing is
   feasible) and stops once max/min < 1.05, returning a feasible X for the last feasible M. So
   its makespan is within 5% of the optimum, except that an optimum below 100 s comes back as
   any allocation with makespan <= ~105 s (M is never searched lower).
   :func:`min_total_duration_perf` reproduces that search (``method="bisection"``, default) and
   also offers the exact LP (``method="exact"``: maximise theta = 1/M subject to
   throughput_j >= steps_remaining_j * theta).
6. Solution choice. Gavel solves with ECOS (an interior-point method) and returns whatever
   optimal point it lands on; no second pass (water-filling is a separate policy). When the
   optimum is not unique (a non-bottleneck job could get more), that choice is solver-defined.
   Here ``refine=True`` (default) adds a deterministic second LP: among allocations within a
   relative 1e-9 of the optimal value, maximise the sum over jobs of the normalised
   throughputs (max-min: the same per-job terms as the objective; finish-time fairness:
   throughput_j / the throughput job j needs to meet the optimal rho; makespan: throughput_j /
   steps_remaining_j), so spare capacity is not left idle. ``refine=False`` returns the first
   LP's vertex. The optimal *value* is the same either way (up to that 1e-9).
7. Also a deviation, harmless for every objective here: X[j, t] is fixed to 0 where the
   throughput the LP sees is 0 (time there cannot raise any job's throughput).

Validation: shapes must agree, at least one GPU type and at least one GPU, throughputs and counts
non-negative and finite, scale factors / weights / steps remaining positive; for the perf
policies every job needs a positive throughput on some type that has GPUs (otherwise Gavel
divides by zero). Violations raise :class:`ValueError`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

__all__ = [
    "effective_throughput",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "finish_time_ratios",
    "isolated_throughput",
    "jain_index",
    "makespan",
    "max_min_fairness",
    "max_min_fairness_perf",
    "max_min_normalised",
    "max_sum_throughput_perf",
    "min_total_duration",
    "min_total_duration_perf",
    "proportional_throughput",
]

ArrayLike = np.ndarray | Sequence[float] | Sequence[Sequence[float]]

#: Relative slack on the first LP's optimum when the second (refining) LP re-imposes it.
_REFINE_SLACK = 1e-9
#: Relative width at which the finish-time-fairness bisection stops; iteration cap.
_BISECT_RTOL = 1e-10
_BISECT_MAX_ITER = 100
_HIGHS = "highs-ds"
#: HiGHS tolerances (defaults 1e-7); every LP here is scaled so that they act as relative ones.
_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# --------------------------------------------------------------------------- validation


def _array(name: str, value: ArrayLike, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def _check_base(
    T: ArrayLike, scale: ArrayLike, counts: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T = _array("T (throughputs)", T, 2)
    J, K = T.shape
    if K == 0:
        raise ValueError("need at least one GPU type (T has 0 columns)")
    scale = _array("scale", scale, 1)
    counts = _array("counts", counts, 1)
    if scale.shape != (J,):
        raise ValueError(f"scale must have one entry per job ({J}), got shape {scale.shape}")
    if counts.shape != (K,):
        raise ValueError(f"counts must have one entry per GPU type ({K}), got {counts.shape}")
    if np.any(T < 0):
        raise ValueError("throughputs T must be non-negative")
    if np.any(scale <= 0):
        raise ValueError("scale factors must be positive")
    if np.any(counts < 0):
        raise ValueError("GPU counts must be non-negative")
    if counts.sum() <= 0:
        raise ValueError("the cluster has no GPUs (counts sum to 0)")
    return T, scale, counts


def _check_runnable(T: np.ndarray, counts: np.ndarray) -> None:
    ok = (T[:, counts > 0] > 0).any(axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok).tolist()
        raise ValueError(f"jobs {bad} have zero throughput on every GPU type that has GPUs")


def _per_job(name: str, value: ArrayLike | None, J: int, default: float, positive: bool):
    if value is None:
        return np.full(J, default)
    arr = _array(name, value, 1)
    if arr.shape != (J,):
        raise ValueError(f"{name} must have one entry per job ({J}), got shape {arr.shape}")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be positive")
    if not positive and np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative")
    return arr


def _reference_column(T: np.ndarray, reference_type: int) -> np.ndarray:
    K = T.shape[1]
    if not isinstance(reference_type, int | np.integer) or not -K <= reference_type < K:
        raise ValueError(f"reference_type must be a column index of T (0..{K - 1})")
    return np.repeat(T[:, [reference_type]], K, axis=1)


# --------------------------------------------------------------------------- reference shares


def effective_throughput(T: ArrayLike, X: ArrayLike) -> np.ndarray:
    """Per-job throughput sum_t T[j, t] * X[j, t] of allocation X (Gavel's
    ``cp.sum(cp.multiply(throughputs, x), axis=1)``)."""
    T = _array("T (throughputs)", T, 2)
    X = _array("X", X, 2)
    if T.shape != X.shape:
        raise ValueError(f"T and X shapes differ: {T.shape} vs {X.shape}")
    return (T * X).sum(axis=1)


def proportional_throughput(T: ArrayLike, counts: ArrayLike) -> np.ndarray:
    """Max-min's normaliser: Gavel ``ProportionalPolicy.get_throughputs`` (proportional.py).

    X_prop[j, t] = (counts[t] / N) / max_j' sum_t (counts[t] / N) = counts[t] / sum(counts), so
    the result sum_t T[j, t] * counts[t] / sum(counts) is independent of N and of the scale factor
    (module doc, item 1).
    """
    T = _array("T (throughputs)", T, 2)
    counts = _array("counts", counts, 1)
    if counts.shape != (T.shape[1],) or counts.sum() <= 0 or np.any(counts < 0):
        raise ValueError("counts must be non-negative, one per column of T, with a positive sum")
    return T @ (counts / counts.sum())


def _isolated_allocation(J: int, scale: np.ndarray, counts: np.ndarray) -> np.ndarray:
    x = np.tile(counts / J, (J, 1)) / scale[:, None]
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


def isolated_throughput(T: ArrayLike, scale: ArrayLike, counts: ArrayLike) -> np.ndarray:
    """The equal 1/N share's throughput: Gavel ``IsolatedPolicy.get_throughputs`` (isolated.py).

    X_iso[j, t] = counts[t] / (N * scale[j]), each row then divided by max(row sum, 1): job j
    gets 1/N of every type's GPUs (as a time fraction of its scale[j]-GPU gang), capped at a
    whole job-time. X_iso is feasible. Finish-time fairness's reference.
    """
    T, scale, counts = _check_base(T, scale, counts)
    if T.shape[0] == 0:
        return np.zeros(0)
    return (T * _isolated_allocation(T.shape[0], scale, counts)).sum(axis=1)


def jain_index(x: ArrayLike) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2), in [1/n, 1]; 1.0 for all-zero x."""
    x = _array("x", x, 1)
    if x.size == 0:
        raise ValueError("jain_index of an empty vector")
    if np.any(x < 0):
        raise ValueError("jain_index needs non-negative values")
    sq = float((x * x).sum())
    if sq == 0.0:
        return 1.0
    return float(x.sum() ** 2 / (x.size * sq))


# --------------------------------------------------------------------------- objectives


def max_min_normalised(
    T: ArrayLike,
    X: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Per-job terms of Gavel's max-min objective: scale[j] * throughput_j(X) /
    (weight[j] * proportional_throughput[j]). :func:`max_min_fairness_perf` maximises their min;
    with T = ones they are :func:`max_min_fairness`'s."""
    T, scale, counts = _check_base(T, scale, counts)
    w = _per_job("weights", weights, T.shape[0], 1.0, positive=True)
    return effective_throughput(T, X) * _max_min_coef(T, scale, counts, w)


def finish_time_ratios(
    T: ArrayLike,
    X: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    steps_remaining: ArrayLike,
    times_since_start: ArrayLike | None = None,
    isolated_time_elapsed: ArrayLike | None = None,
) -> np.ndarray:
    """Gavel's rho_j (module doc, item 4); inf where X gives job j no throughput."""
    T, scale, counts = _check_base(T, scale, counts)
    R, tss, cum = _ftf_inputs(T, steps_remaining, times_since_start, isolated_time_elapsed)
    iso_time = cum + R / isolated_throughput(T, scale, counts)
    thr = effective_throughput(T, X)
    with np.errstate(divide="ignore"):
        return (tss + R / thr) / iso_time


def makespan(T: ArrayLike, X: ArrayLike, steps_remaining: ArrayLike) -> float:
    """max_j steps_remaining[j] / throughput_j(X); inf if some job gets no throughput."""
    thr = effective_throughput(T, X)
    R = _per_job("steps_remaining", steps_remaining, thr.size, 1.0, positive=True)
    with np.errstate(divide="ignore"):
        return float((R / thr).max()) if thr.size else 0.0


# --------------------------------------------------------------------------- LP plumbing


class _Base:
    """Variables x = X.ravel() (row-major, J*K) and optionally one extra variable last."""

    def __init__(self, coef: np.ndarray, scale: np.ndarray, counts: np.ndarray, extra: bool):
        J, K = coef.shape
        self.J, self.K, self.n = J, K, J * K + int(extra)
        rows = np.repeat(np.arange(J), K)
        cols = np.arange(J * K)
        # sum_t X[j, t] <= 1
        row_sum = sparse.csr_matrix((np.ones(J * K), (rows, cols)), shape=(J, self.n))
        # sum_j scale[j] X[j, t] <= counts[t]
        cap = sparse.csr_matrix(
            (np.repeat(scale, K), (np.tile(np.arange(K), J), cols)), shape=(K, self.n)
        )
        self.A = sparse.vstack([row_sum, cap], format="csr")
        self.b = np.concatenate([np.ones(J), counts])
        ub = np.where(coef.ravel() > 0, 1.0, 0.0)
        self.bounds = [(0.0, u) for u in ub] + ([(None, None)] if extra else [])
        self.rows, self.cols = rows, cols

    def per_job(self, coef: np.ndarray, extra_col: np.ndarray | None = None) -> sparse.csr_matrix:
        """Row j: sum_t coef[j, t] x[j, t] (+ extra_col[j] * extra variable)."""
        m = sparse.csr_matrix((coef.ravel(), (self.rows, self.cols)), shape=(self.J, self.n))
        if extra_col is not None:
            m = m + sparse.csr_matrix(
                (extra_col, (np.arange(self.J), np.full(self.J, self.n - 1))),
                shape=(self.J, self.n),
            )
        return m

    def solve(self, c: np.ndarray, A_extra=None, b_extra=None):
        A, b = self.A, self.b
        if A_extra is not None:
            A = sparse.vstack([A, A_extra], format="csr")
            b = np.concatenate([b, b_extra])
        res = linprog(c, A_ub=A, b_ub=b, bounds=self.bounds, method=_HIGHS, options=_OPTIONS)
        if res.status == 2:
            return None
        if res.status != 0:
            raise RuntimeError(f"HiGHS failed (status {res.status}): {res.message}")
        return res.x

    def allocation(self, x: np.ndarray, scale: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return _repair(x[: self.J * self.K].reshape(self.J, self.K), scale, counts)


def _repair(X: np.ndarray, scale: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Gavel's clip to [0, 1], then scale away round-off violations of the base constraints."""
    X = np.clip(X, 0.0, 1.0)
    rs = X.sum(axis=1)
    X = X / np.maximum(rs, 1.0)[:, None]
    used = scale @ X
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(used > counts, counts / np.where(used > 0, used, 1.0), 1.0)
    return X * f[None, :]


def _max_min_coef(T, scale, counts, weights) -> np.ndarray:
    prop = proportional_throughput(T, counts)
    return scale / (weights * prop)


def _max_min(coef: np.ndarray, scale, counts, refine: bool) -> np.ndarray:
    """max z s.t. z <= sum_t coef[j, t] X[j, t] for all j, base constraints; then refine.

    coef is first divided by a common factor (the min over jobs of the term at X[j, t] =
    counts[t] / sum(counts)) so that z is of order 1 and HiGHS's absolute tolerances are
    relative ones; a common factor does not change the optimal X."""
    coef = coef / float((coef @ (counts / counts.sum())).min())
    base = _Base(coef, scale, counts, extra=True)
    c = np.zeros(base.n)
    c[-1] = -1.0
    # z - sum_t coef x <= 0
    A1 = base.per_job(-coef, np.ones(base.J))
    x = base.solve(c, A1, np.zeros(base.J))
    if x is None:  # cannot happen: X = 0, z = 0 is feasible
        raise RuntimeError("max-min LP infeasible")
    if not refine:
        return base.allocation(x, scale, counts)
    z = x[-1]
    floor = z - _REFINE_SLACK * abs(z)
    c2 = np.zeros(base.n)
    c2[: base.J * base.K] = -coef.ravel()
    x2 = base.solve(c2, base.per_job(-coef), np.full(base.J, -floor))
    return base.allocation(x if x2 is None else x2, scale, counts)


# --------------------------------------------------------------------------- max-min fairness


def max_min_fairness_perf(
    T: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    refine: bool = True,
    method: str = "highs",
) -> np.ndarray:
    """Heterogeneity-aware max-min fairness: Gavel ``MaxMinFairnessPolicyWithPerf.get_allocation``
    (scheduler/policies/max_min_fairness.py).

    maximise over X   min_j  scale[j] * sum_t T[j, t] X[j, t] / (weights[j] * prop[j])

    with prop = :func:`proportional_throughput` (Gavel's ``priority_weights`` is 1 / weight, so a
    larger weight earns a larger share). Solved as one LP in (X, z): max z with
    z <= each job's term; then, if ``refine``, a second LP (module doc, item 6). Returns X (J x K).
    """
    T, scale, counts = _check_base(T, scale, counts)
    if T.shape[0] == 0:
        return np.zeros(T.shape)
    w = _per_job("weights", weights, T.shape[0], 1.0, positive=True)
    _check_runnable(T, counts)
    if method == "ecos":
        X = _ecos_max_min(T, scale, counts, w)
        if X is not None:
            return X
    elif method != "highs":
        raise ValueError(f"method must be 'highs' or 'ecos', got {method!r}")
    coef = T * _max_min_coef(T, scale, counts, w)[:, None]
    return _max_min(coef, scale, counts, refine)


def _ecos_max_min(
    T: np.ndarray, scale: np.ndarray, counts: np.ndarray, w: np.ndarray
) -> np.ndarray | None:
    """Gavel's ``MaxMinFairnessPolicyWithPerf`` solved by Gavel's solver: the coefficients
    computed with Gavel's own float operations (``ProportionalPolicy``'s split, priority
    weights 1 / w ÷ proportional throughput, × scale factor) and the program CVXPY hands ECOS
    for ``Maximize(min_j Σ_t coef[j,t] x[j,t])`` (variables [t, x column-major]; rows: the
    epigraph, x ≥ 0, per-type capacity, per-job share ≤ 1). The optimum is not unique; ECOS's
    point is Gavel's. None without ``ecos``."""
    try:
        import ecos
    except ImportError:
        return None
    from scipy import sparse as sp

    J, K = T.shape
    N = J * K
    x_prop = np.array([[c / J for c in counts] for _ in range(J)])
    x_prop = x_prop / np.sum(x_prop, axis=1).max()
    prop = np.sum(np.multiply(T, x_prop), axis=1).reshape((J, 1))
    pw = np.multiply((1.0 / w).reshape((J, 1)), 1.0 / prop)
    sf = np.repeat(scale.reshape((J, 1)), K, axis=1)
    coef = np.multiply(T * pw.reshape((J, 1)), sf)
    col = np.arange(N)
    jj = col % J  # x[j, t] is variable 1 + t*J + j
    v = coef.T.ravel()
    keep = v != 0
    G_epi = sp.csc_matrix(
        (
            np.concatenate([-np.ones(J), -v[keep]]),
            (
                np.concatenate([np.arange(J), jj[keep]]),
                np.concatenate([np.zeros(J), 1 + col[keep]]),
            ),
        ),
        shape=(J, N + 1),
    )
    G_pos, G_cap, G_row = _ecos_base_rows(J, K, scale, 1)
    G = sp.vstack([G_epi, G_pos, G_cap, G_row], format="csc")
    h = np.concatenate([np.zeros(J + N), counts.astype(float), np.ones(J)])
    c = np.zeros(N + 1)
    c[0] = 1.0
    sol = ecos.solve(c, G, h, {"l": G.shape[0], "q": [], "e": 0}, verbose=False)
    if sol["info"]["exitFlag"] not in (0, 10):  # optimal (or close): else keep HiGHS's
        return None
    return np.clip(sol["x"][1:].reshape(K, J).T, 0.0, 1.0)


def max_min_fairness(
    T: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    refine: bool = True,
    method: str = "highs",
) -> np.ndarray:
    """Heterogeneity-agnostic max-min fairness: Gavel ``MaxMinFairnessPolicy.get_allocation``
    (max_min_fairness.py), which replaces every throughput by 1.0 and runs the perf version.

    The proportional throughput is then 1, so this maximises min_j scale[j] * sum_t X[j, t] /
    weights[j]: equal (scale- and weight-adjusted) time, any type. ``T`` is used only for its
    shape (its values are ignored, as in Gavel).
    """
    T, scale, counts = _check_base(T, scale, counts)
    return max_min_fairness_perf(
        np.ones_like(T), scale, counts, weights, refine=refine, method=method
    )


# --------------------------------------------------------------------------- max sum throughput


def max_sum_throughput_perf(
    T: ArrayLike, scale: ArrayLike, counts: ArrayLike, *, symmetric: bool = True
) -> np.ndarray:
    """Gavel's ``ThroughputSumWithPerf.get_allocation`` as Sia's artifact ships it
    (sia-simulator/policies/max_sum_throughput.py:9-19, 35-90; its Gavel's default,
    simulator_config.py:75): maximise Σ_j Σ_t T[j, t] X[j, t] — raw throughputs, no
    normalisation — subject to the base constraints. One LP (HiGHS).

    ``symmetric``: jobs with identical rows of T and scale factors get the same X. The LP
    only sees such jobs through their sum, so where capacity runs out among them its optimum
    is a whole face; HiGHS returns a vertex of it (some of them 1, some 0), ECOS (Gavel's
    solver, an interior-point method) a point inside it, where they are equal by symmetry.
    Here the LP is solved over classes of identical jobs (class c of n_c jobs: per-job share
    z[c, t], capacity Σ_c n_c scale_c z[c, t] ≤ counts[t], objective Σ n_c T[c, t] z[c, t])
    and every job of a class gets its class's z (docs/sia.md "The `gavel-tunedjobs` policy").
    Returns X (J x K) in [0, 1], before the artifact's rounding to 5 decimals."""
    T, scale, counts = _check_base(T, scale, counts)
    J = T.shape[0]
    if J == 0:
        return np.zeros(T.shape)
    if symmetric:
        first: dict[tuple[float, ...], int] = {}  # class key → its first job
        for j in range(J):
            first.setdefault((float(scale[j]), *T[j].tolist()), j)
        rows = np.array(list(first.values()))
        of = {k: c for c, k in enumerate(first)}
        cls = np.array([of[(float(scale[j]), *T[j].tolist())] for j in range(J)])
        n = np.bincount(cls).astype(float)
        Tc, sc = T[rows] * n[:, None], scale[rows] * n
    else:
        cls, Tc, sc = np.arange(J), T, scale
    base = _Base(Tc, sc, counts, extra=False)
    x = base.solve(-Tc.ravel())
    if x is None:  # cannot happen: X = 0 is feasible
        raise RuntimeError("max-sum-throughput LP infeasible")
    Z = base.allocation(x, sc, counts)
    return Z[cls]


# --------------------------------------------------------------------------- finish-time fairness


def _ftf_inputs(T, steps_remaining, times_since_start, isolated_time_elapsed):
    J = T.shape[0]
    R = _per_job("steps_remaining", steps_remaining, J, 1.0, positive=True)
    tss = _per_job("times_since_start", times_since_start, J, 0.0, positive=False)
    cum = _per_job("isolated_time_elapsed", isolated_time_elapsed, J, 0.0, positive=False)
    return R, tss, cum


def finish_time_fairness_perf(
    T: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    steps_remaining: ArrayLike,
    times_since_start: ArrayLike | None = None,
    isolated_time_elapsed: ArrayLike | None = None,
    *,
    method: str = "dinkelbach",
    refine: bool = True,
) -> np.ndarray:
    """Finish-time fairness: Gavel ``FinishTimeFairnessPolicyWithPerf.get_allocation``
    (scheduler/policies/finish_time_fairness.py).

    minimise over X   max_j rho_j,   rho_j = (tss_j + R_j / thr_j(X)) / (cum_j + R_j / iso_j)

    with R = ``steps_remaining``, tss = ``times_since_start`` (Gavel: now - job start),
    cum = ``isolated_time_elapsed`` (Gavel's ``_cumulative_isolated_time``; module doc, item 4),
    iso = :func:`isolated_throughput`, thr = :func:`effective_throughput`. Gavel hands this to
    cvxpy as ``cp.maximum`` of ``inv_pos`` terms (a convex program).

    Method. rho_j <= rho  <=>  thr_j(X) >= need_j(rho) := R_j / (rho * I_j - tss_j), with
    I_j = cum_j + R_j / iso_j and rho * I_j > tss_j: for a fixed rho, linear in X.

    * ``method="dinkelbach"`` (default; a Dinkelbach-type iteration for generalised fractional
      programs, Crouzeix, Ferland & Schaible 1985): start at rho_0 = max_j rho_j of the isolated
      allocation (feasible). At rho_k solve the max-min LP lambda_k = max_X min_j thr_j(X) /
      need_j(rho_k). lambda_k >= 1 always (the previous X qualifies); if lambda_k <= 1 + 1e-9
      no allocation beats rho_k for every job, so rho_k is optimal; otherwise every job of the
      LP's X is strictly better, and rho_{k+1} = max_j rho_j(X) < rho_k. A few LPs in practice
      (at most 100).
    * ``method="bisection"``: bisect rho between a lower bound (max_j (tss_j + R_j / max_t
      T[j, t]) / I_j) and rho_0 with one feasibility LP per step, until the bracket is 1e-10
      relative. Slower; kept as an independent check.

    With ``refine`` a last LP at the optimal rho* maximises sum_j thr_j / need_j(rho*) among
    allocations with every job within 1e-9 of its optimum term (module doc, item 6).
    """
    T, scale, counts = _check_base(T, scale, counts)
    if T.shape[0] == 0:
        return np.zeros(T.shape)
    R, tss, cum = _ftf_inputs(T, steps_remaining, times_since_start, isolated_time_elapsed)
    _check_runnable(T, counts)
    if method not in ("dinkelbach", "bisection"):
        raise ValueError(f"method must be 'dinkelbach' or 'bisection', got {method!r}")
    J = T.shape[0]
    iso = isolated_throughput(T, scale, counts)
    I = cum + R / iso  # noqa: E741 - the paper's isolated finish time

    def rho_of(X: np.ndarray) -> float:
        thr = (T * X).sum(axis=1)
        with np.errstate(divide="ignore"):
            return float(((tss + R / thr) / I).max())

    def coef(rho: float) -> np.ndarray:  # T[j, t] / need_j(rho)
        return T * ((rho * I - tss) / R)[:, None]

    X = _isolated_allocation(J, scale, counts)
    rho = rho_of(X)
    if method == "dinkelbach":
        # lower bound on the optimum: every job alone on its fastest type
        lo = float(((tss + R / T.max(axis=1)) / I).max()) * (1 - 1e-12)
        prev_dec = None
        for _ in range(_BISECT_MAX_ITER):
            X_new = _max_min(coef(rho), scale, counts, refine=False)
            lam = float(((coef(rho) * X_new).sum(axis=1)).min())
            rho_new = rho_of(X_new)
            if lam <= 1 + _REFINE_SLACK or rho_new >= rho * (1 - 1e-12):
                if rho_new <= rho:
                    X, rho = X_new, rho_new
                break
            dec = rho - rho_new
            X, rho = X_new, rho_new
            if rho - lo <= _BISECT_RTOL * rho:
                break
            if prev_dec is not None and dec < prev_dec:
                # the steps shrink geometrically (linear convergence): try the limit of that
                # series (Aitken); accepted only if an allocation reaches it, else a lower bound
                q = dec / prev_dec
                target = max(rho - dec * q / (1 - q), lo + 0.5 * (rho - lo))
                if np.all(target * I - tss > 0):
                    c_t = coef(target)
                    X_t = _max_min(c_t, scale, counts, refine=False)
                    if float(((c_t * X_t).sum(axis=1)).min()) >= 1.0:
                        rho_t = rho_of(X_t)
                        if rho_t < rho:
                            X, rho = X_t, rho_t
                        prev_dec = None
                        continue
                lo = max(lo, target)
            prev_dec = dec
    else:
        base = _Base(T, scale, counts, extra=False)
        c = np.zeros(base.n)
        ones = -np.ones(J)
        lo = float(((tss + R / T.max(axis=1)) / I).max()) * (1 - 1e-12)
        hi = rho
        for _ in range(_BISECT_MAX_ITER):
            if hi - lo <= _BISECT_RTOL * hi:
                break
            mid = 0.5 * (lo + hi)
            slack = mid * I - tss
            # thr_j >= R_j / slack_j, divided by its right-hand side: rows of order 1
            x = (
                None
                if np.any(slack <= 0)
                else base.solve(c, base.per_job(-T * (slack / R)[:, None]), ones)
            )
            if x is None:
                lo = mid
            else:
                hi = mid
                X = base.allocation(x, scale, counts)
        rho = rho_of(X)
    if refine:
        X_ref = _max_min(coef(rho), scale, counts, refine=True)
        if rho_of(X_ref) <= rho * (1 + 2 * _REFINE_SLACK):
            X = X_ref
    return X


def finish_time_fairness(
    T: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    steps_remaining: ArrayLike,
    times_since_start: ArrayLike | None = None,
    isolated_time_elapsed: ArrayLike | None = None,
    *,
    reference_type: int,
    method: str = "dinkelbach",
    refine: bool = True,
) -> np.ndarray:
    """Heterogeneity-agnostic finish-time fairness: Gavel ``FinishTimeFairnessPolicy``
    (finish_time_fairness.py), which gives every type job j's throughput on one reference type
    (Gavel hard-codes 'v100'; here column ``reference_type``) and runs the perf version.

    Note the steps remaining and isolated reference are then also in reference-type units.
    """
    T, scale, counts = _check_base(T, scale, counts)
    return finish_time_fairness_perf(
        _reference_column(T, reference_type),
        scale,
        counts,
        steps_remaining,
        times_since_start,
        isolated_time_elapsed,
        method=method,
        refine=refine,
    )


# --------------------------------------------------------------------------- min total duration


def min_total_duration_perf(
    T: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    steps_remaining: ArrayLike,
    *,
    method: str = "bisection",
    refine: bool = True,
    center: bool = True,
) -> np.ndarray:
    """Minimum makespan: Gavel ``MinTotalDurationPolicyWithPerf.get_allocation``
    (scheduler/policies/min_total_duration.py): minimise max_j steps_remaining[j] / thr_j(X).

    ``method="bisection"`` (default) is Gavel's search (module doc, item 5): feasibility LPs
    thr_j(X) >= R_j / M (``get_allocation_helper``) for M bisected in [100, 1e6] s while
    1.05 * min < max, the bracket moving to [max, 10 * max] while nothing is feasible; X is the
    last feasible LP's allocation. ``method="exact"``: one LP maximising theta = 1 / M subject to
    thr_j(X) >= R_j * theta. With ``refine`` the LPs maximise sum_j thr_j / R_j among their
    feasible (bisection) or optimal (exact) allocations (module doc, item 6).
    ``method="ecos"``: Gavel's bisection solved by Gavel's own solver, ECOS (the optional
    extra ``ddlsched[gavel]``), which reproduces Gavel's allocation; without ``ecos`` installed
    it falls back to ``"bisection"``. With ``center``
    (default; bisection only) the answer is instead, at the last feasible makespan M, the
    allocation that makes every job's throughput ÷ its need R_j / M as equal as possible
    (max-min of that ratio): Gavel's ``Maximize(1)`` feasibility problem has many solutions and
    its interior-point solver returns an inner one; a vertex or the refined point favours short
    jobs (average JCT up to 48 % below Gavel's on its traces), this one stays within 10 %; the
    analytic centre, tried too, within 37 % (docs/gavel.md, benchmarks/gavel_fidelity.py).
    """
    T, scale, counts = _check_base(T, scale, counts)
    if T.shape[0] == 0:
        return np.zeros(T.shape)
    R = _per_job("steps_remaining", steps_remaining, T.shape[0], 1.0, positive=True)
    _check_runnable(T, counts)
    if method == "exact":
        return _max_min(T / R[:, None], scale, counts, refine)
    if method == "ecos":
        X = _ecos_bisection(T, scale, counts, R)
        if X is not None:
            return X
        method = "bisection"  # ecos is not installed: HiGHS and the shared slack below
    if method != "bisection":
        raise ValueError(f"method must be 'bisection', 'ecos' or 'exact', got {method!r}")
    base = _Base(T, scale, counts, extra=False)
    c = -(T / R[:, None]).ravel() if refine else np.zeros(base.n)
    c = c / max(float(np.abs(c).max()), 1e-300)
    ones = -np.ones(T.shape[0])
    max_T, min_T = 1_000_000.0, 100.0
    last_max_T = max_T
    last_feasible = None
    while last_feasible is None:
        while 1.05 * min_T < max_T:
            M = (min_T + max_T) / 2.0
            # thr_j >= R_j / M, divided by R_j / M
            x = base.solve(c, base.per_job(-T * (M / R)[:, None]), ones)
            if x is not None:
                last_feasible, max_T = x, M
            else:
                min_T = M
        max_T, min_T = last_max_T * 10.0, last_max_T
        last_max_T *= 10.0
        if last_max_T > 1e300:  # every job has positive throughput, so unreachable
            raise RuntimeError("min-total-duration bisection found no feasible makespan")
    if center:
        # the last feasible makespan M: every job's throughput over its need R_j / M made as
        # equal as possible (max-min of the ratio), so the slack is shared, not heaped on a few
        X = base.allocation(last_feasible, scale, counts)
        M = float((R / np.maximum((T * X).sum(axis=1), 1e-300)).max())
        return _max_min(T * (M / R)[:, None], scale, counts, refine=False)
    return base.allocation(last_feasible, scale, counts)


def ecos_available() -> bool:
    """Whether the ``ecos`` package (the optional extra ``ddlsched[gavel]``) imports."""
    try:
        import ecos  # noqa: F401
    except ImportError:
        return False
    return True


def _ecos_base_rows(J: int, K: int, scale: np.ndarray, offset: int):
    """Gavel's base constraints as CVXPY hands them to ECOS, for x[j, t] = variable
    ``offset + t*J + j`` (column-major, after ``offset`` other variables): −x ≤ 0, per-type
    capacity Σ_j scale_j x[j, t] ≤ counts_t, per-job share Σ_t x[j, t] ≤ 1."""
    from scipy import sparse as sp

    N = J * K
    col = np.arange(N)
    jj, tt = col % J, col // J
    width = N + offset
    G_pos = sp.csc_matrix((-np.ones(N), (col, offset + col)), shape=(N, width))
    G_cap = sp.csc_matrix((scale[jj], (tt, offset + col)), shape=(K, width))
    G_row = sp.csc_matrix((np.ones(N), (jj, offset + col)), shape=(J, width))
    return G_pos, G_cap, G_row


def _ecos_bisection(
    T: np.ndarray, scale: np.ndarray, counts: np.ndarray, R: np.ndarray
) -> np.ndarray | None:
    """Gavel's ``MinTotalDurationPolicyWithPerf.get_allocation`` with Gavel's solver: the same
    bisection over M, each step ECOS on the very problem CVXPY gives it for Gavel's
    ``Maximize(1)`` feasibility program (variables column-major; rows: x ≥ 0, per-type
    capacity, per-job time share ≤ 1, per-job throughput ≥ R_j / M; checked equal to CVXPY +
    ECOS to the last bit on random instances). A step counts as feasible only when ECOS says
    "optimal" (exit flag 0), as CVXPY reports and Gavel tests; the last feasible x, clipped to
    [0, 1], is the answer. None if ``ecos`` is not installed."""
    try:
        import ecos
    except ImportError:
        return None
    from scipy import sparse as sp

    J, K = T.shape
    N = J * K
    col = np.arange(N)
    jj = col % J  # column-major: x[j, t] is variable t*J + j
    G_pos, G_cap, G_row = _ecos_base_rows(J, K, scale, 0)
    thr = T.T.ravel()  # T[j, t] at t*J + j
    keep = thr != 0
    G_thr = sp.csc_matrix((-thr[keep], (jj[keep], col[keep])), shape=(J, N))
    G = sp.vstack([G_pos, G_cap, G_row, G_thr], format="csc")
    h_base = np.concatenate([np.zeros(N), counts.astype(float), np.ones(J)])
    dims = {"l": G.shape[0], "q": [], "e": 0}
    c = np.zeros(N)
    max_T, min_T = 1_000_000.0, 100.0
    last_max_T = max_T
    last = None
    while last is None:
        while 1.05 * min_T < max_T:
            M = (min_T + max_T) / 2.0
            h = np.concatenate([h_base, -R / M])
            sol = ecos.solve(c, G, h, dims, verbose=False)
            if sol["info"]["exitFlag"] == 0:
                last, max_T = sol["x"], M
            else:
                min_T = M
        max_T, min_T = last_max_T * 10.0, last_max_T
        last_max_T *= 10.0
        if last_max_T > 1e300:
            raise RuntimeError("min-total-duration bisection found no feasible makespan")
    return np.clip(last.reshape(K, J).T, 0.0, 1.0)


def min_total_duration(
    T: ArrayLike,
    scale: ArrayLike,
    counts: ArrayLike,
    steps_remaining: ArrayLike,
    *,
    reference_type: int,
    method: str = "bisection",
    refine: bool = True,
) -> np.ndarray:
    """Heterogeneity-agnostic min-total-duration: Gavel ``MinTotalDurationPolicy``
    (min_total_duration.py): every type gets the reference ('v100') column's throughput."""
    T, scale, counts = _check_base(T, scale, counts)
    return min_total_duration_perf(
        _reference_column(T, reference_type),
        scale,
        counts,
        steps_remaining,
        method=method,
        refine=refine,
    )
