"""The Pollux agent's per-job goodput model, as the Pollux artifact's simulator uses it.

Section numbers refer to the project's notes on the artifact's semantics (§2 batch rule, §4
statistical efficiency, §6 Pollux); line references abbreviate the artifact's files as the notes
do: ``gp`` = goodput.py, ``sp`` = speedup.py, ``pol`` = pollux.py, ``sim`` = simulator.py.

A Pollux job knows nothing of its throughput in advance. Each time it runs a configuration
(num_nodes, replicas, per-replica micro-batch ``a``) it measures (step_time, sync_time) and
:meth:`JobGoodput.observe` keeps the **first** measurement of that configuration and refits the
throughput model (:class:`~ddlsched.perf.fitting.ThroughputParams`) to all configurations kept
so far (§6; sim:85-98). From the fitted model and the statistical efficiency the job predicts its
*goodput* for any allocation, picks its total batch (:meth:`JobGoodput.optimize`) and reports
its *speedup* to the scheduler (:meth:`JobGoodput.speedup`).

**Model goodput** (§6; gp:65-89, 232-257). For total batch M on R replicas the §2 rule gives k
accumulation micro-steps of a samples per replica (below); then, with the throughput model,

    T_a = α_c + β_c·a,  T_o = (T_a^γ + T_net^γ)^(1/γ),  T_iter = k·T_a + T_o,
    goodput = M/T_iter · gain/scale = init_bsz · gain / T_iter,  scale = M/init_bsz,

where gain = (var + sqr)/(var/scale + sqr) is the statistical gain of §4 (so gain/scale is the
statistical efficiency). T_net is the all-reduce time: α_n + β_n·max(R − 2, ε) on several nodes,
α_r + β_r·max(R − 2, ε) on one node with R > 1, and none for one replica (the artifact uses
1e-8 there, which changes T_o by less than 1e-7 relative).

**The §2 rule, uncapped** (gp:91-145): local = M/R; k = ⌈local/max_local − ε⌉ − 1, at least 1 if
R = 1 and local > init_bsz + ε; a = ⌈local/(k + 1) − ε⌉; the effective batch R·a·(k + 1) is what
the goodput is evaluated at. A configuration whose a lies outside [min_local, max_local] scores 0
(gp:91-145). The artifact scores candidates *before* the §2 cap a ≤ ⌊max_bsz/(R(k+1))⌋; the
cap is applied only when the job actually runs the chosen batch (sim:77-83), which
:meth:`Application.batch_config <ddlsched.perf.profiles.Application.batch_config>` does.

**Statistical efficiency: two sources.** The artifact's agent evaluates gain at every candidate
batch with one pair (grad_sqr, grad_var): the latest *true* statistics of the batch the job is
running now, in its current epoch (sim:85-98, updated on every progress step; gp:65-89, gain = 1
where var/scale + sqr ≤ 0). Pass them to :meth:`JobGoodput.observe` (``grad=``) or set
:attr:`JobGoodput.grad` to get exactly that; the ``epoch`` arguments are then ignored. When
``grad`` is None the model instead uses the application's statistics *at each candidate batch*
(:meth:`Application.gain <ddlsched.perf.profiles.Application.gain>` for epoch ``epoch``, cached per
(epoch, M); batches just above max_bsz, which the uncapped rule can produce, use the statistics at
max_bsz with the true scale). That is the §4 ground truth rather than the agent's extrapolation.

**Fit** (:func:`fit_observations`; gp:148-229, ``fit_perf_params`` and ``_obj_fn``). The
artifact's loss, bounds, starting point and special cases:

- loss = RMSLE(T_a vs. step − sync) + RMSLE(T_o vs. step) + 1e-3·(γ − 1)² + 1e-2·((β_n/α_n)² +
  (β_r/α_r)²) — the regularisers prefer little overlap and no retrogression, i.e. an optimistic
  model while few configurations are known;
- start (α_c, β_c, α_n, β_n, α_r, β_r, γ) = (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001); bounds
  α, β ≥ 1e-8, γ ∈ [1, 10];
- fixed parameters: α_c = mean(step − sync)/2 if only one micro-batch size was observed;
  α_n = β_n = 1e-8 without a multi-node observation; α_r = β_r = 1e-8 without a one-node
  multi-replica observation; β_n = β_r = 1e-8 without an observation of more than 2 replicas;
- afterwards, without a multi-node observation, α_n ← max(α_n, 1.1·α_r) and β_n ← max(β_n,
  1.1·β_r) (inter-node is at least as slow as intra-node).

So one or two observations already give sane, optimistic parameters: an unobserved link costs
≈ 0 and the job is predicted to scale linearly until it has been measured otherwise — which is
why :func:`max_replicas` lets a job at most double its largest profiled replica count.

*How* the loss is minimised differs. The artifact runs one L-BFGS-B from its starting point in
raw parameter space; with α ~ 0.1 and β ~ 1e-4 that often stops far from the minimum (on the
built-in synthetic applications, whose rows follow the model exactly, at a loss 10–300× the
loss of the true parameters). Here, deterministically:

1. ``scipy.optimize.least_squares`` (trust-region reflective, analytic Jacobian, α and β as
   logarithms) on a smooth surrogate, MSLE(T_a) + MSLE(T_o) + the same regularisers, from the
   artifact's starting point and, warm, from the previous fit; the lower surrogate kept;
2. L-BFGS-B (the artifact's optimiser, analytic gradient, same parametrisation) on the
   artifact's own loss from there, kept if it lowers that loss;
3. the inter-node prior above.

``fit_observations(..., method="artifact")`` (setting ``goodput_fit=artifact``) runs the
artifact's own minimisation instead, as Sia's copy of this file has it (one L-BFGS-B from the
start at ``tol`` 1e-5); where the loss is flat the two differ (docs/sia.md, "The throughput
fit").

Further numerical differences: α and β are bounded above by 1e4 s (the artifact: ∞); fixed
parameters are left out of the optimisation instead of given equal bounds; observations with
step ≤ sync (no usable compute time; none in the artifact's data) are left out of the
compute-time error instead of making it NaN; an RMSLE of exactly 0 gets gradient 0.

**Search** (:meth:`JobGoodput.optimize`; gp:91-145; sim:156, 162). 50 total batches spaced
geometrically over [max(init_bsz, min_local·R), max_bsz] (numpy ``geomspace``), each
configured by the uncapped rule, scored, the first best kept. The candidates depend only on the
application and R and are built once per (application, R); their efficiency once per (R, epoch);
a call evaluates the throughput model on 50 values with numpy, and its result is memoised per
(multi-node?, R, epoch) until the parameters or gradient statistics change (as the artifact's
SpeedupFunction memoises within a round, sp:27-67). "Change" is of value, compared by exact
bytes (the agent sets a new but often equal ``grad`` every step); T_iter is kept per
(parameters, multi-node?, R) and the gains per (``grad``, R), so a change of one reuses the
other; :meth:`JobGoodput.prefetch` fills the memo for many shapes in one numpy pass. None of
this changes a result by a bit.
"""

from __future__ import annotations

import math
import struct
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .fitting import ThroughputParams
from .profiles import EPS, Application, BatchConfig

#: Candidate total batches per :meth:`JobGoodput.optimize` (``geomspace``'s default; gp:91-145).
CANDIDATES = 50
#: Replica cap of the simulator (sim:328-329).
MAX_REPLICAS_CAP = 64
#: Starting point (α_c, β_c, α_n, β_n, α_r, β_r, γ) of every fit (gp:148-229).
FIT_START: tuple[float, ...] = (1e-1, 1e-2, 1e-1, 1e-2, 1e-1, 1e-2, 1.0 + 1e-3)
#: Lower bound of every α and β in the fit, and the value of a fixed one (gp:148-229).
FIT_FLOOR = 1e-8
#: Bounds of γ in the fit (gp:148-229).
FIT_GAMMA = (1.0, 10.0)
#: Regulariser weights: (γ − 1)² and (β/α)² (gp:148-229, ``_obj_fn``).
REG_GAMMA = 1e-3
REG_RETRO = 1e-2
#: Without a multi-node observation, α_n ≥ this × α_r and β_n ≥ this × β_r (gp:148-229).
PRIOR_INTER = 1.1

_PACK_PARAMS = struct.Struct("7d").pack
_PACK_GRAD = struct.Struct("2d").pack


def measured_step(
    app: Application, placement: tuple[int, ...], cfg: BatchConfig, iteration_time: float
) -> tuple[float, float]:
    """(step, sync) of one synchronising micro-step from a measured iteration (live mode): a
    goodput model's rows are per synchronising micro-step, and an iteration is ``k``
    accumulation micro-steps more (T_iter = step + k·(step − sync), §2); the measured
    iteration is scaled by ``app``'s step ÷ iteration for that configuration, and the sync
    share of the step is ``app``'s."""
    p_step, p_sync = app.step_time(placement, cfg.a)
    p_iter = app.iteration_time(placement, cfg)
    step = iteration_time * (p_step / p_iter) if p_iter > 0 else iteration_time
    sync = step * (p_sync / p_step) if p_step > 0 else 0.0
    return step, sync


def max_replicas(app: Application, profiled_max: int) -> int:
    """A Pollux job's replica limit this round (§6; sim:328-329):
    min(max(2 × most replicas ever profiled, 1), 64, ⌊max_bsz/min_local⌋).

    The artifact also pins NCF to 1 replica (sim:332-333); that is the caller's rule.
    """
    return min(max(2 * profiled_max, 1), MAX_REPLICAS_CAP, app.max_bsz // app.min_local)


# -------------------------------------------------------------------------------------------
# candidate configurations (per application and replica count; shared by all its jobs)
# -------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Candidates:
    """The 50 candidate configurations of one (application, R): uncapped §2 rule (gp:91-145)."""

    a: np.ndarray  # samples per replica per micro-step (float, integral values)
    k: np.ndarray  # extra accumulation micro-steps (float, integral values)
    batch: np.ndarray  # effective batch R·a·(k+1) (int64)
    valid: np.ndarray  # min_local ≤ a ≤ max_local
    gain: dict[int, np.ndarray]  # epoch → application-statistics gain at each batch


_TABLES: weakref.WeakKeyDictionary[Application, dict[int, _Candidates]] = (
    weakref.WeakKeyDictionary()
)


def _configure(
    app: Application, replicas: int, batch: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, k, effective batch) of total batches ``batch`` on ``replicas`` by the uncapped rule."""
    local = batch / replicas
    k = np.ceil(local / app.max_local - EPS) - 1
    if replicas == 1:
        k = np.where(local > app.init_bsz + EPS, np.maximum(k, 1), k)
    a = np.ceil(local / (k + 1) - EPS)
    return a, k, (replicas * a * (k + 1)).astype(np.int64)


def _candidates(app: Application, replicas: int) -> _Candidates:
    table = _TABLES.get(app)
    if table is None:
        table = _TABLES[app] = {}
    cand = table.get(replicas)
    if cand is None:
        low = max(app.init_bsz, app.min_local * replicas)
        a, k, batch = _configure(app, replicas, np.geomspace(low, app.max_bsz, CANDIDATES))
        valid = (a >= app.min_local) & (a <= app.max_local)
        cand = table[replicas] = _Candidates(a, k, batch, valid, {})
    return cand


def _app_gain(app: Application, epoch: int, batch: int) -> float:
    """§4 gain at ``batch`` from the application's statistics; statistics clamped to the
    validated range, scale = batch/init_bsz unclamped."""
    if app.init_bsz <= batch <= app.max_bsz:
        return app.gain(epoch, batch)
    sqr, var = app.grad_stats(epoch, min(max(batch, app.init_bsz), app.max_bsz))
    scale = batch / app.init_bsz
    denom = var / scale + sqr
    return (var + sqr) / denom if denom > 0 else 1.0


def _grad_gain(grad: tuple[float, float], init_bsz: int, batch: np.ndarray) -> np.ndarray:
    """The artifact's gain with fixed (sqr, var) (gp:65-89): 1 where the denominator is ≤ 0."""
    sqr, var = grad
    scale = batch / init_bsz
    denom = var / scale + sqr
    return np.divide(var + sqr, denom, out=np.ones_like(denom), where=denom > 0)


def _iteration_times(
    p: ThroughputParams, num_nodes: int, replicas: int, a: np.ndarray, k: np.ndarray
) -> np.ndarray:
    """T_iter = k·T_a + T_o for arrays of (a, k) on one placement shape."""
    t_a = p.alpha_c + p.beta_c * a
    t_net = p.network_time(num_nodes, replicas)
    if t_net > 0.0:
        # (T_a^γ + T_net^γ)^(1/γ) = m·(1 + (min/m)^γ)^(1/γ), m = max: no overflow
        m = np.maximum(t_a, t_net)
        t_o = m * (1.0 + (np.minimum(t_a, t_net) / m) ** p.gamma) ** (1.0 / p.gamma)
    else:
        t_o = t_a
    return k * t_a + t_o


#: public names of the two for other goodput searches (Sia's, ``policies/sia.py``)
grad_gain = _grad_gain
iteration_times = _iteration_times


def _check(num_nodes: int, replicas: int) -> None:
    if not 1 <= num_nodes <= replicas:
        raise ValueError(f"need 1 ≤ num_nodes ≤ replicas, got {num_nodes} nodes, {replicas}")


# -------------------------------------------------------------------------------------------
# the job's model
# -------------------------------------------------------------------------------------------


@dataclass(eq=False)
class JobGoodput:
    """One job's goodput model: throughput params fitted online from the configurations the job
    has actually run (first measurement per (nodes, replicas, a) kept), × statistical efficiency.

    ``params`` is None until the first observation (set it directly to use known parameters).
    ``grad`` is the latest observed (grad_sqr, grad_var), or None to use the application's
    statistics at each candidate batch (see the module doc). ``profile`` maps each observed
    (num_nodes, replicas, a) to its first (step_time, sync_time).
    """

    app: Application
    params: ThroughputParams | None = None
    grad: tuple[float, float] | None = None
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    #: how the throughput parameters are fitted: "exact" (ddlsched's minimisation of the
    #: artifact's loss) or "artifact" (its one L-BFGS-B at tol 1e-5); :data:`FIT_METHODS`
    fit: str = "exact"
    # optimize's memos (module doc), valid while params and grad keep their exact values:
    # results per (multi-node?, R, epoch), T_iter per (multi-node?, R), grad gains per R
    _memo: dict[tuple[bool, int, int], tuple[int, float]] = field(
        default_factory=dict, init=False, repr=False
    )
    _times: dict[tuple[bool, int], np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _grad_gains: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _memo_for: tuple[object, object] = field(default=(None, None), init=False, repr=False)
    _memo_key: tuple[bytes | None, bytes | None] = field(
        default=(None, None), init=False, repr=False
    )

    # ---------------------------------------------------------------- observations
    def observe(
        self,
        num_nodes: int,
        replicas: int,
        local_bsz: int,
        step_time: float,
        sync_time: float,
        *,
        grad: tuple[float, float] | None = None,
        replace: bool = False,
    ) -> None:
        """Record a measured configuration and refit if it is new (sim:85-98); with
        ``replace`` (live mode: a real measurement of a configuration first known from the
        profile) the new times replace the recorded ones and the model is refit.

        ``local_bsz`` is the micro-batch a the job ran (after the §2 cap). A configuration seen
        before is ignored (its first measurement stays). ``grad`` (grad_sqr, grad_var), if
        given, replaces :attr:`grad` on every call, new configuration or not, as the artifact
        updates its gradient statistics on every progress step.
        """
        if grad is not None:
            self.grad = (float(grad[0]), float(grad[1]))
        key = (int(num_nodes), int(replicas), int(local_bsz))
        if key in self.profile and not replace:
            return
        _check(key[0], key[1])
        if not (math.isfinite(step_time) and step_time > 0):
            raise ValueError(f"step_time must be positive and finite, got {step_time!r}")
        if not (math.isfinite(sync_time) and sync_time >= 0):
            raise ValueError(f"sync_time must be ≥ 0 and finite, got {sync_time!r}")
        self.profile[key] = (float(step_time), float(sync_time))
        keys = list(self.profile)
        times = list(self.profile.values())
        self.params = fit_observations(
            [c[0] for c in keys],
            [c[1] for c in keys],
            [c[2] for c in keys],
            [t[0] for t in times],
            [t[1] for t in times],
            start=self.params,
            method=self.fit,
        )

    @property
    def profiled(self) -> bool:
        """Whether the job has throughput parameters (an observation, or ``params`` set)."""
        return self.params is not None

    @property
    def max_profiled_replicas(self) -> int:
        """The most replicas of any observed configuration, 0 if none (sim
        ``Job.max_profiled_replicas``)."""
        return max((c[1] for c in self.profile), default=0)

    # ---------------------------------------------------------------- goodput
    def state_key(self) -> tuple[bytes | None, bytes | None]:
        """The exact bytes of (params, grad): what the model's predictions depend on besides
        the application (and the epoch, when ``grad`` is None). Equal keys, equal results.

        Also brings optimize's memos up to date: the agent sets a new ``grad`` tuple on every
        progress step and the fit may return new but equal parameters, so the memos are
        compared by value (bytes, so that 0.0 and −0.0 differ) and kept when nothing changed.
        """
        params, grad = self.params, self.grad
        if params is self._memo_for[0] and grad is self._memo_for[1]:
            return self._memo_key
        p_key = None if params is None else _PACK_PARAMS(*params.as_tuple())
        g_key = None if grad is None else _PACK_GRAD(*grad)
        old_p, old_g = self._memo_key
        if p_key != old_p:
            self._memo.clear()
            self._times.clear()
        if g_key != old_g:
            self._memo.clear()
            self._grad_gains.clear()
        self._memo_for, self._memo_key = (params, grad), (p_key, g_key)
        return self._memo_key

    def _gains(self, cand: _Candidates, replicas: int, epoch: int) -> np.ndarray:
        if self.grad is not None:
            g = self._grad_gains.get(replicas)
            if g is None:
                g = self._grad_gains[replicas] = _grad_gain(
                    self.grad, self.app.init_bsz, cand.batch
                )
            return g
        g = cand.gain.get(epoch)
        if g is None:
            app = self.app
            g = cand.gain[epoch] = np.array([_app_gain(app, epoch, int(b)) for b in cand.batch])
        return g

    def goodput(self, num_nodes: int, replicas: int, batch: int, epoch: int) -> float:
        """Model goodput (§6; gp:65-89) of total batch ``batch`` on ``replicas`` replicas over
        ``num_nodes`` nodes: init_bsz·gain/T_iter at the effective batch of the uncapped rule,
        0 if a falls outside [min_local, max_local]. 0 while unprofiled."""
        _check(num_nodes, replicas)
        if self.params is None:
            return 0.0
        app = self.app
        a, k, eff = _configure(app, replicas, np.array([float(batch)]))
        if not app.min_local <= a[0] <= app.max_local:
            return 0.0
        t = float(_iteration_times(self.params, num_nodes, replicas, a, k)[0])
        if self.grad is not None:
            gain = float(_grad_gain(self.grad, app.init_bsz, eff)[0])
        else:
            gain = _app_gain(app, epoch, int(eff[0]))
        return app.init_bsz * gain / t

    def optimize(self, num_nodes: int, replicas: int, epoch: int) -> tuple[int, float]:
        """(total batch, its model goodput) maximising goodput on this allocation (§6; gp:91-145).

        The batch is the chosen candidate's *uncapped* effective batch R·a·(k + 1); hand it to
        :meth:`Application.batch_config` to get the configuration the job runs (it reproduces a
        and k, then applies the §2 cap, as sim:77-83 does). If no candidate is valid the first
        candidate is returned with goodput 0 (the artifact's argmax). Unprofiled: (max(init_bsz,
        min_local·R), 0.0), the batch to hand to ``batch_config`` (sim ``Job.update_local_bsz``).
        """
        _check(num_nodes, replicas)
        params = self.params
        if params is None:
            return max(self.app.init_bsz, self.app.min_local * replicas), 0.0
        if params is not self._memo_for[0] or self.grad is not self._memo_for[1]:
            self.state_key()
        # T_net depends on the nodes only through "more than one"; with observed statistics
        # the epoch does not matter
        multi = num_nodes > 1
        key = (multi, replicas, epoch if self.grad is None else -1)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        cand = _candidates(self.app, replicas)
        t = self._times.get((multi, replicas))
        if t is None:
            t = self._times[multi, replicas] = _iteration_times(
                params, num_nodes, replicas, cand.a, cand.k
            )
        good = np.where(cand.valid, self._gains(cand, replicas, epoch) / t, 0.0)
        i = int(np.argmax(good))
        hit = self._memo[key] = (int(cand.batch[i]), float(good[i]) * self.app.init_bsz)
        return hit

    def prefetch(self, shapes: Sequence[tuple[int, int]], epoch: int) -> None:
        """Fill optimize's memo for many (num_nodes, replicas) ``shapes`` in one numpy pass
        (a Pollux round asks every job for all its shapes). The arithmetic is elementwise and
        the argmax per row, so each result is exactly the one optimize would compute alone."""
        params = self.params
        if params is None:
            return
        self.state_key()
        ekey = epoch if self.grad is None else -1
        todo: dict[tuple[bool, int, int], int] = {}
        for num_nodes, replicas in shapes:
            _check(num_nodes, replicas)
            key = (num_nodes > 1, replicas, ekey)
            if key not in self._memo and key not in todo:
                todo[key] = num_nodes
        if len(todo) < 2:
            return
        cands = [_candidates(self.app, key[1]) for key in todo]
        times = []
        for (multi, replicas, _), num_nodes, cand in zip(todo, todo.values(), cands, strict=True):
            t = self._times.get((multi, replicas))
            if t is None:
                t = self._times[multi, replicas] = _iteration_times(
                    params, num_nodes, replicas, cand.a, cand.k
                )
            times.append(t)
        if self.grad is not None:
            gains = _grad_gain(self.grad, self.app.init_bsz, np.stack([c.batch for c in cands]))
        else:
            gains = np.stack(
                [self._gains(c, key[1], epoch) for c, key in zip(cands, todo, strict=True)]
            )
        good = np.where(np.stack([c.valid for c in cands]), gains / np.stack(times), 0.0)
        best = np.argmax(good, axis=1).tolist()
        init = self.app.init_bsz
        for j, (key, cand) in enumerate(zip(todo, cands, strict=True)):
            i = best[j]
            self._memo[key] = (int(cand.batch[i]), float(good[j, i]) * init)

    def speedup(self, num_nodes: int, replicas: int, epoch: int, fair_replicas: int) -> float:
        """Best goodput on (num_nodes, replicas) ÷ best goodput at fair share: 1 node,
        ``fair_replicas`` = ⌈64/J⌉ replicas (§6; pol:243-256, sp:27-67). 0 for 0 replicas.
        Unprofiled: replicas/fair_replicas. A fair-share goodput of 0 (no valid batch there)
        gives ∞, as the artifact's division does."""
        if replicas == 0:
            return 0.0
        if self.params is None:
            return replicas / fair_replicas
        best = self.optimize(num_nodes, replicas, epoch)[1]
        base = self.optimize(1, fair_replicas, epoch)[1]
        if base <= 0.0:
            return math.inf if best > 0.0 else 0.0
        return best / base


# -------------------------------------------------------------------------------------------
# the online fit (gp:148-229)
# -------------------------------------------------------------------------------------------

#: Upper bound of every α and β in the fit, seconds (the artifact's is ∞; a numerical guard).
FIT_CEILING = 1e4


class _FitProblem:
    """The artifact's fitting problem over observed configurations (module doc; gp:148-229).

    Parameters x = (α_c, β_c, α_n, β_n, α_r, β_r, γ); the optimisers see only the free ones, as
    z = log x for α, β and z = γ for γ.
    """

    def __init__(
        self,
        num_nodes: Sequence[float],
        replicas: Sequence[float],
        local_bsz: Sequence[float],
        step_time: Sequence[float],
        sync_time: Sequence[float],
    ) -> None:
        nodes = np.asarray(num_nodes, dtype=float)
        reps = np.asarray(replicas, dtype=float)
        self.bsz = np.asarray(local_bsz, dtype=float)
        step = np.asarray(step_time, dtype=float)
        compute = step - np.asarray(sync_time, dtype=float)
        if len(step) == 0:
            raise ValueError("no observations to fit")
        if not (len(nodes) == len(reps) == len(self.bsz) == len(step) == len(compute)):
            raise ValueError("observation columns differ in length")
        if not np.all(np.isfinite(step) & (step > 0)):
            raise ValueError("step times must be positive and finite")
        self.ok = compute > 0  # rows with a usable compute time (all, in the artifact's data)
        self.log_compute = np.log(compute[self.ok])
        self.log_step = np.log(step)
        self.n_ok, self.n = int(self.ok.sum()), len(step)
        # which link carries the all-reduce (gp:232-257); a single replica's is 1e-8
        self.multi = nodes > 1
        self.intra = (nodes == 1) & (reps > 1)
        self.extra = np.maximum(reps - 2.0, FIT_FLOOR)

        self.x0 = np.array(FIT_START)
        self.fixed = np.zeros(7, dtype=bool)
        if len(np.unique(self.bsz)) == 1:
            self._fix(0, max(float(np.mean(compute)) / 2, FIT_FLOOR))
        if not self.multi.any():
            self._fix(2)
            self._fix(3)
        if not self.intra.any():
            self._fix(4)
            self._fix(5)
        if not (reps > 2).any():
            self._fix(3)
            self._fix(5)
        self.free = ~self.fixed
        self.is_log = (np.arange(7) < 6)[self.free]
        lower = np.array([FIT_FLOOR] * 6 + [FIT_GAMMA[0]])[self.free]
        upper = np.array([FIT_CEILING] * 6 + [FIT_GAMMA[1]])[self.free]
        self.z_lower = np.where(self.is_log, np.log(lower), lower)
        self.z_upper = np.where(self.is_log, np.log(upper), upper)
        # constants of the evaluations (the optimisers call them ~100 times per fit, on a few
        # rows, so numpy's per-call overhead dominates): free columns as indices, each row's
        # all-reduce link as an index into (none, inter-node, intra-node), the masks as floats
        self.free_idx = np.flatnonzero(self.free)
        self.link = np.where(self.multi, 1, np.where(self.intra, 2, 0))
        self.multi_f = self.multi.astype(float)
        self.intra_f = self.intra.astype(float)
        self.all_ok = bool(self.ok.all())
        self.root_a = math.sqrt(max(self.n_ok, 1))
        self.root_o = math.sqrt(self.n)
        self._last: _Point | None = None

    def _fix(self, i: int, value: float = FIT_FLOOR) -> None:
        self.x0[i] = value
        self.fixed[i] = True

    # ---------------------------------------------------------------- parametrisation
    def to_x(self, z: np.ndarray) -> np.ndarray:
        x = self.x0.copy()
        x[self.free_idx] = np.where(self.is_log, np.exp(z), z)
        return x

    def to_z(self, x: Sequence[float] | np.ndarray) -> np.ndarray:
        """z of parameters ``x`` (fixed ones ignored), clipped into the bounds."""
        xf = np.asarray(x, dtype=float)[self.free]
        z = np.where(self.is_log, np.log(np.maximum(xf, FIT_FLOOR)), xf)
        return np.clip(z, self.z_lower, self.z_upper)

    # ---------------------------------------------------------------- model and derivatives
    def _at(self, z: np.ndarray) -> _Point:
        """The model at z, kept for the last z: least_squares asks for the residuals and then
        the Jacobian at one point, and the loss is asked again where L-BFGS-B starts. Keyed by
        z's exact bytes, so a hit returns exactly what a fresh evaluation would."""
        z = np.asarray(z, dtype=float)
        key = z.tobytes()
        pt = self._last
        if pt is None or pt.key != key:
            pt = self._last = _Point(self, z.copy(), key)
        return pt

    @staticmethod
    def _regs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Regulariser terms r (loss += Σ r²) and dr/dx: √1e-3·(γ − 1), √1e-2·β/α."""
        _, _, alpha_n, beta_n, alpha_r, beta_r, gamma = x
        sg, sr = math.sqrt(REG_GAMMA), math.sqrt(REG_RETRO)
        r = np.array([sg * (gamma - 1.0), sr * beta_n / alpha_n, sr * beta_r / alpha_r])
        d = np.array(
            [
                [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, sg],
                [0.0, 0.0, -sr * beta_n / alpha_n**2, sr / alpha_n, 0.0, 0.0, 0.0],
                [0.0, 0.0, 0.0, 0.0, -sr * beta_r / alpha_r**2, sr / alpha_r, 0.0],
            ]
        )
        return r, d

    # ---------------------------------------------------------------- the artifact's loss
    def loss(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """RMSLE(T_a) + RMSLE(T_o) + 1e-3·(γ − 1)² + 1e-2·((β_n/α_n)² + (β_r/α_r)²) and its
        gradient in z (gp:148-229, ``_obj_fn``)."""
        pt = self._at(z)
        if pt.loss is None:
            r, d_r = pt.r, pt.d_r
            value = float(r @ r)
            grad = 2.0 * (r @ d_r)
            if self.n_ok:
                e1 = pt.log_a_ok - self.log_compute
                err1 = math.sqrt(float(e1 @ e1) / self.n_ok)
                value += err1
                if err1 > 0:  # the RMSLE's gradient is undefined at 0; take 0
                    grad += (e1 @ pt.d_a_ok) / (self.n_ok * err1)
            e2 = pt.log_o - self.log_step
            err2 = math.sqrt(float(e2 @ e2) / self.n)
            value += err2
            if err2 > 0:
                grad += (e2 @ pt.d_o) / (self.n * err2)
            pt.loss = value, pt.chain(grad)
        value, grad = pt.loss
        return value, grad.copy()

    # ---------------------------------------------------------------- smooth surrogate
    def residuals(self, z: np.ndarray) -> np.ndarray:
        """Residuals whose sum of squares is MSLE(T_a) + MSLE(T_o) + the regularisers."""
        pt = self._at(z)
        e1 = (pt.log_a_ok - self.log_compute) / self.root_a
        e2 = (pt.log_o - self.log_step) / self.root_o
        return np.concatenate([e1, e2, pt.r])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        pt = self._at(z)
        d = np.vstack([pt.d_a_ok / self.root_a, pt.d_o / self.root_o, pt.d_r])
        return pt.chain(d)


class _Point:
    """:class:`_FitProblem`'s model at one point z: log T_a, log T_o and the
    regularisers at once, their derivatives d/dx (rows × 7) when first asked for."""

    def __init__(self, prob: _FitProblem, z: np.ndarray, key: bytes) -> None:
        self.prob, self.z, self.key = prob, z, key
        self.ez = np.exp(z)
        self.x = x = prob.x0.copy()
        x[prob.free_idx] = np.where(prob.is_log, self.ez, z)
        alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = x.tolist()
        bsz = prob.bsz
        self.t_a = t_a = alpha_c + beta_c * bsz
        self.log_a = log_a = np.log(t_a)
        link = prob.link  # each row's (α, β) of the all-reduce link (gp:232-257)
        self.t_net = t_net = (
            np.array((FIT_FLOOR, alpha_n, alpha_r))[link]
            + np.array((FIT_FLOOR, beta_n, beta_r))[link] * prob.extra
        )
        self.log_net = log_net = np.log(t_net)
        self.gamma = gamma
        self.log_o = np.logaddexp(gamma * log_a, gamma * log_net) / gamma
        self.log_a_ok = log_a if prob.all_ok else log_a[prob.ok]
        self.r, self.d_r = prob._regs(x)
        self._d: tuple[np.ndarray, np.ndarray] | None = None
        self.loss: tuple[float, np.ndarray] | None = None
        self._xf: np.ndarray | None = None

    def _derivatives(self) -> tuple[np.ndarray, np.ndarray]:
        if self._d is None:
            prob, t_a, gamma = self.prob, self.t_a, self.gamma
            log_a, log_net, log_o = self.log_a, self.log_net, self.log_o
            n = prob.n
            d_a = np.zeros((n, 7))
            d_a[:, 0] = 1.0 / t_a
            d_a[:, 1] = prob.bsz / t_a
            w = np.exp(gamma * (log_a - log_o))  # d log T_o / d log T_a
            w1 = 1.0 - w
            v = w1 / self.t_net  # d log T_o / d T_net
            d_o = np.zeros((n, 7))
            d_o[:, :2] = w[:, None] * d_a[:, :2]
            vm = v * prob.multi_f
            vi = v * prob.intra_f
            d_o[:, 2] = vm
            d_o[:, 3] = vm * prob.extra
            d_o[:, 4] = vi
            d_o[:, 5] = vi * prob.extra
            d_o[:, 6] = (w * log_a + w1 * log_net - log_o) / gamma
            self._d = (d_a if prob.all_ok else d_a[prob.ok]), d_o
        return self._d

    @property
    def d_a_ok(self) -> np.ndarray:
        return self._derivatives()[0]

    @property
    def d_o(self) -> np.ndarray:
        return self._derivatives()[1]

    def chain(self, d_x: np.ndarray) -> np.ndarray:
        """d/dz from d/dx (last axis 7): free columns, × x for the log-parametrised ones."""
        if self._xf is None:
            self._xf = np.where(self.prob.is_log, self.ez, 1.0)
        return d_x[..., self.prob.free_idx] * self._xf


#: fit_observations results by their exact arguments: jobs of one application that ran the same
#: configurations in the same order fit the same parameters (a 160-job Pollux run repeats
#: 3–4 of every 4 fits); bounded
_FITS: dict[tuple, ThroughputParams] = {}
_FITS_MAX = 50_000


def fit_observations(
    num_nodes: Sequence[float],
    replicas: Sequence[float],
    local_bsz: Sequence[float],
    step_time: Sequence[float],
    sync_time: Sequence[float],
    *,
    start: ThroughputParams | None = None,
    method: str = "exact",
) -> ThroughputParams:
    """:class:`ThroughputParams` minimising the artifact's fitting loss over observed
    configurations (module doc; gp:148-229). Deterministic for the same arguments.

    ``method="artifact"`` is the artifact's own minimisation instead (:func:`_fit_artifact`;
    ``start`` unused, as the artifact always starts from :data:`FIT_START`). The default:

    1. ``scipy.optimize.least_squares`` (trust-region reflective, analytic Jacobian, α and β as
       logarithms) on the smooth surrogate MSLE(T_a) + MSLE(T_o) + regularisers, from the
       artifact's starting point and from ``start`` (the previous fit), the better kept;
    2. scipy L-BFGS-B (the artifact's optimiser) on the artifact's own loss from there; the
       result with the lower artifact loss is kept;
    3. the artifact's inter-node prior when no multi-node configuration was observed.

    Results are memoised by the exact arguments (the function is pure).
    """
    key = (
        tuple(map(float, num_nodes)),
        tuple(map(float, replicas)),
        tuple(map(float, local_bsz)),
        tuple(map(float, step_time)),
        tuple(map(float, sync_time)),
        None if start is None or method == "artifact" else start.as_tuple(),
        method,
    )
    hit = _FITS.get(key)
    if hit is None:
        if method not in FIT_METHODS:
            raise ValueError(f"fit method must be one of {', '.join(FIT_METHODS)}: {method!r}")
        if len(_FITS) >= _FITS_MAX:
            _FITS.clear()
        fit = _fit_artifact if method == "artifact" else _fit
        hit = _FITS[key] = fit(num_nodes, replicas, local_bsz, step_time, sync_time, start)
    return hit


def _fit(num_nodes, replicas, local_bsz, step_time, sync_time, start) -> ThroughputParams:
    from scipy.optimize import least_squares, minimize

    prob = _FitProblem(num_nodes, replicas, local_bsz, step_time, sync_time)
    bounds = (prob.z_lower, prob.z_upper)
    starts = [prob.to_z(FIT_START)]
    if start is not None:
        starts.append(prob.to_z(start.as_tuple()))
    best: np.ndarray | None = None
    best_cost = math.inf
    with np.errstate(all="ignore"):
        for z0 in starts:
            res = least_squares(prob.residuals, z0, jac=prob.jacobian, bounds=bounds)
            if res.cost < best_cost:
                best, best_cost = res.x, float(res.cost)
        assert best is not None
        z = np.clip(best, prob.z_lower, prob.z_upper)
        value = prob.loss(z)[0]
        res = minimize(
            prob.loss, z, jac=True, method="L-BFGS-B", bounds=list(zip(*bounds, strict=True))
        )
        if math.isfinite(res.fun) and res.fun < value:
            z = np.clip(res.x, prob.z_lower, prob.z_upper)
    return _finish(prob, z)


def _finish(prob: _FitProblem, z: np.ndarray) -> ThroughputParams:
    """Parameters at z, with the artifact's inter-node prior where no multi-node
    configuration was observed (gp:148-229) and γ within its bounds."""
    x = prob.to_x(z)
    if not prob.multi.any():  # gp:148-229
        x[2] = max(x[2], x[4] * PRIOR_INTER)
        x[3] = max(x[3], x[5] * PRIOR_INTER)
    x[6] = min(max(x[6], FIT_GAMMA[0]), FIT_GAMMA[1])
    return ThroughputParams(*(float(v) for v in x))


#: ``fit_observations``'s methods (setting ``goodput_fit``)
FIT_METHODS = ("exact", "artifact")
#: the tolerance the Sia artifact gives its L-BFGS-B (sia-simulator/goodput.py,
#: ``fit_perf_params``: ``scipy.optimize.minimize(..., bounds=bounds, tol=1e-5)``)
ARTIFACT_FIT_TOL = 1e-5


def _fit_artifact(num_nodes, replicas, local_bsz, step_time, sync_time, start) -> ThroughputParams:
    """The Sia artifact's ``fit_perf_params``: one L-BFGS-B in raw parameter space from
    :data:`FIT_START`, its loss with the exact gradient, ``tol`` 1e-5, fixed parameters
    held (here: left out). Where few micro-batch sizes were observed the loss is nearly flat
    along α_c + β_c·a, and this stops near its start (β_c > 0: a smaller micro-batch is
    faster), where :func:`_fit` goes on to the minimum (often β_c → 1e-8: every micro-batch
    as slow), which makes spreading a job over more GPUs look useless (docs/sia.md)."""
    from scipy.optimize import minimize

    prob = _FitProblem(num_nodes, replicas, local_bsz, step_time, sync_time)
    is_log = prob.is_log
    lower = np.where(is_log, np.exp(prob.z_lower), prob.z_lower)
    upper = np.where(is_log, np.exp(prob.z_upper), prob.z_upper)
    x0 = np.clip(np.asarray(FIT_START, dtype=float)[prob.free], lower, upper)

    def loss(x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.clip(x, lower, upper)
        value, grad_z = prob.loss(np.where(is_log, np.log(x), x))
        return value, np.where(is_log, grad_z / x, grad_z)  # dz/dx = 1/x for z = log x

    with np.errstate(all="ignore"):
        res = minimize(
            loss,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(lower, upper, strict=True)),
            tol=ARTIFACT_FIT_TOL,
        )
    x = np.clip(res.x if np.all(np.isfinite(res.x)) else x0, lower, upper)
    return _finish(prob, np.where(is_log, np.log(x), x))
