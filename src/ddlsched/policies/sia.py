"""Sia (Jayaram Subramanya et al., SOSP '23): one integer program per round over (GPU type,
GPU count) configurations of every job, as the artifact's ``sia.py`` solves it.

References are to github.com/siasosp23/artifacts at commit ``aaf7a0de``, folder
``sia-simulator/`` (``SiaPolicy.optimize_mip`` and ``__solve_mip_rescaled``), as the artifact
runs it (``run_experiment.sh``: ``--policy_p_val=-0.5 --mip_lambda_n=1.1 --mip_lambda_a=0.01
--interval=60 --project_throughputs --share_max_replicas``). Every ``interval`` seconds:

1. **Configurations** (sia.py:13-17, 100-144): per GPU type with G GPUs per node, the GPU counts
   1, 2, 4, … below G on one node, then whole nodes G, 2G, … up to 64 GPUs, on at most
   min(nodes of the type, ``SIA_MAX_PHYSICAL_NODES``) nodes — the artifact's ``CONFIGS_4GPU``
   and ``CONFIGS_8GPU`` (sia-64: 8 ``aws`` + 5 ``dgx-ext`` + 6 ``rtx`` = 19 columns).
2. **Goodput per configuration** (sia.py:612-669, 423-507): per type, the job's own throughput
   model (``perf.goodput`` fit of the (step, sync) times it measured on that type, first
   observation per (nodes, replicas, micro-batch) kept, job.py:387-412) × the statistical
   efficiency of its latest gradient statistics, at the best of 50 geometric batches up to the
   workload's batch (``Job.get_speedup_fn``, job.py:240-252; goodput.py:89-147). A type where
   the job has not run yet is *projected* from the first type (cluster order) where it has:
   that model at the same GPU count, × the ratio of the two types' one-GPU throughputs in the
   profiles (``--project_throughputs``: cluster.py:227-276, sia.py:423-507). A job that has run
   nowhere gets goodput 1 for one GPU of every type and nothing else. Configurations above
   the job's replica limit — max over types of min(2 × most replicas it ran on there, 64,
   max_bsz ÷ min_local), cluster.py:376-379 — are invalid.
3. **Normalisation** (sia.py:674-719): each job's row ÷ its smallest valid goodput; invalid
   and tiny entries = 1e-4.
4. **Restart factor** (sia.py:721-748): r = max(age − restarts·P, 0)/(age + P) (1 if age < P)
   with Sia's per-application penalty P (sia.py:23-35) multiplies every configuration but the
   job's previous one.
5. **ILP** (sia.py:907-1036): A = min(round(G^p, 2), 3000); binary x_jc;
   minimise Σ A_jc x_jc + λ_n (N − Σ x_jc) s.t. Σ_c x_jc ≤ 1, Σ_{j, c of type t} gpus(c) x_jc ≤
   GPUs(t), and x = 1 on the previous configuration of a job still in checkpoint-restore
   (cluster.py:424-425). λ_a is parsed but unused by the artifact (sia.py:936); so here.
   Solver: SciPy's HiGHS (``scipy.optimize.milp``) at relative gap 1e-4, the artifact's CBC
   ``allowablePercentageGap=0.01`` (docs/sia.md: where another solver can answer differently).
6. **Placement** (sia.py:155-204, ``alloc_to_placement_fast``): per type, jobs by GPU count
   (descending, stable), whole free nodes first, then round-robin from a node pointer,
   recomputed from empty nodes every round; every job runs where it is placed. A job whose
   type and per-node GPUs stay the same does not restart — it keeps its GPUs, or moves to
   the computed ones for free (``sia_free_moves``; the artifact's simulator restarts a job
   only when its type or per-node tuple changes, cluster.py:184-215, job.py:524-546); the
   others restart with the batch their model picks on the new placement (job.py:317-386).

The policy is also its jobs' agent (``JobAgent``): it records each configuration a job runs
on the job's model of that GPU type and re-tunes the batch within the placement's limits.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..core.protocols import JobConfig, ProfileEstimates
from ..core.sia_clusters import SIA_MAX_PHYSICAL_NODES
from ..perf.goodput import EPS, JobGoodput, grad_gain, iteration_times, measured_step
from ..perf.profiles import node_runs
from .native_quiet import native_stdout_silenced

if TYPE_CHECKING:  # pragma: no cover
    from ..core.protocols import ProfileRun
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from ..perf.fitting import ThroughputParams
    from ..perf.profiles import Application

#: Goodput of an invalid configuration (``ZERO_ALLOC_GAIN``, sia.py:19)
ZERO_ALLOC_GAIN = 1e-4
#: Largest entry of A (``sia_goodput_clip_val``, simulator_config.py:58)
CLIP = 3000.0
#: Most GPUs of one configuration (the last entries of CONFIGS_4GPU/8GPU, sia.py:13-17)
MAX_CONFIG_GPUS = 64
#: Most replicas of a job (cluster.py:377, "simulator can't handle more")
MAX_REPLICAS = 64
#: Candidate batches of the goodput search (``np.geomspace``'s default, goodput.py:121)
CANDIDATES = 50
#: Relative MIP gap (``sia_solver_thresh``, simulator_config.py:66; CBC's
#: allowablePercentageGap = 100 × it, sia.py:1036)
MIP_GAP = 1e-4


#: Sia's scheduler's restart penalties by substring of the job's name (sia.py:23-35)
PENALTIES = (
    ("deepspeech", 25.0),
    ("imagenet", 250.0),
    ("cifar", 30.0),
    ("bert", 120.0),
    ("yolov3", 45.0),
)


def restart_penalty(name: str, application: str = "") -> float:
    """Sia's scheduler's restart penalty of a job, by substring of its name (sia.py:23-35);
    a name that holds none of Sia's keys — a live job's name is its command line — by its
    ``application`` (the artifact's names, ``<application>-<i>``, always hold their
    application, so its jobs get the same penalty either way); else 30 s."""
    for text in (name, application):
        for key, seconds in PENALTIES:
            if key in text:
                return seconds
    return 30.0


def restart_factor(age: float, restarts: int, penalty: float) -> float:
    """Sia's re-allocation factor (sia.py:721-739, ``sia_use_pollux_realloc_factor``):
    max(age − restarts·penalty, 0)/(age + penalty), and 1 while age < penalty."""
    if age < penalty:
        return 1.0
    return max(age - restarts * penalty, 0.0) / (age + penalty)


def configurations(gpus_per_node: int, nodes: int) -> list[tuple[int, int]]:
    """(nodes, GPUs) of a type's configurations (sia.py:13-17, 100-118): powers of two below
    ``gpus_per_node`` on one node, then k whole nodes, up to 64 GPUs and ``nodes`` nodes —
    ``CONFIGS_4GPU`` for 4 GPUs per node, ``CONFIGS_8GPU`` for 8."""
    out: list[tuple[int, int]] = []
    g = 1
    while g < gpus_per_node:
        out.append((1, g))
        g *= 2
    k = 1
    while k * gpus_per_node <= MAX_CONFIG_GPUS and k <= nodes:
        out.append((k, k * gpus_per_node))
        k += 1
    return out


@lru_cache(maxsize=4096)
def _candidate_batches(start: float, stop: float) -> np.ndarray:
    """``np.geomspace(start, stop, CANDIDATES)``, read-only, computed once per (start, stop):
    a Table 3 run asks for the same few hundred ranges ≈ 100,000 times."""
    out = np.geomspace(start, stop, CANDIDATES)
    out.flags.writeable = False
    return out


def best_goodput(
    params: ThroughputParams,
    grad: tuple[float, float],
    init_bsz: int,
    num_nodes: int,
    replicas: int,
    max_batch: int,
    atomic_range: tuple[int, int],
) -> tuple[float, int]:
    """(goodput, total batch) of the best of 50 geometric batches from max(init_bsz,
    min_atomic·R) to ``max_batch`` with gradient accumulation (``GoodputFunction.optimize``,
    goodput.py:89-147, ``accumulation=True``): k = ⌈local/max_atomic − ε⌉ − 1 (≥ 1 on one
    replica above init_bsz), a = ⌈local/(k + 1) − ε⌉; goodput = init_bsz·gain/T_iter, 0 where a
    is outside ``atomic_range``; the first best wins. The batch is R·a·(k + 1)."""
    lo, hi = atomic_range
    batch = _candidate_batches(max(init_bsz, lo * replicas), max_batch)
    local = batch / replicas
    k = np.ceil(local / hi - EPS) - 1
    if replicas == 1:
        k = np.where(local > init_bsz + EPS, np.maximum(k, 1), k)
    a = np.ceil(local / (k + 1) - EPS)
    eff = replicas * a * (k + 1)
    t = iteration_times(params, num_nodes, replicas, a, k)
    good = init_bsz * grad_gain(grad, init_bsz, eff) / t
    good = np.where((a >= lo) & (a <= hi), good, 0.0)
    i = int(np.argmax(good))
    return float(good[i]), int(eff[i])


def one_gpu_throughput(app: Application) -> float:
    """Samples per second on one GPU: largest local batch ÷ largest step time of the one-GPU
    rows (cluster.py:243-253, the base of the projection ratios)."""
    curve = app.measured((1,))
    if curve is None:
        raise ValueError(f"{app.name}: the tables have no one-GPU placement")
    xs, steps = curve
    return max(xs) / max(steps)


def alloc_to_placement(
    free: list[int], demands: list[tuple[int, int]], per_node: int
) -> dict[int, list[int]]:
    """Node ids per GPU of each (key, GPUs) in ``demands`` on nodes with ``free`` GPUs
    (``alloc_to_placement_fast``, sia.py:155-204): by GPUs descending (stable); ⌊g/G⌋ wholly
    free nodes first, scanning round-robin from a pointer, then the rest from the pointer,
    min(need, free) per node, the pointer advancing after every node; the next job starts at
    the node after the previous one's last. ``free`` is updated."""
    n = len(free)
    out: dict[int, list[int]] = {}
    node = 0
    for key, gpus in sorted(demands, key=lambda d: d[1], reverse=True):
        nodes: list[int] = []
        if gpus == 0:
            out[key] = nodes
            continue
        node_id = node
        whole = gpus // per_node
        checked = 0
        while checked < n and whole > 0:
            if free[node_id] == per_node:
                free[node_id] = 0
                gpus -= per_node
                nodes += [node_id] * per_node
                whole -= 1
            node_id = (node_id + 1) % n
            checked += 1
        while gpus > 0:
            if free[node_id]:
                take = min(gpus, free[node_id])
                gpus -= take
                free[node_id] -= take
                nodes += [node_id] * take
            node_id = (node_id + 1) % n
        out[key] = nodes
        node = node_id
    return out


@dataclass
class SiaProblem:
    """One round's ILP (kept with ``Sia(record=[])``): job ids, configurations (type, nodes,
    GPUs), the normalised goodputs G (after the restart factor), A, GPUs per type, fixed
    (job row, config column) pairs, and the solution (config column per job, -1: none)."""

    job_ids: tuple[int, ...]
    configs: tuple[tuple[str, int, int], ...]
    goodput: np.ndarray
    cost: np.ndarray
    capacity: dict[str, int]
    fixed: tuple[tuple[int, int], ...]
    choice: tuple[int, ...] = ()
    solve_ms: float = 0.0


def useful_columns(
    cost: np.ndarray, gpus: np.ndarray, type_of: np.ndarray, lambda_n: float, minimise: bool = True
) -> np.ndarray:
    """Mask (jobs × configurations) of the columns an optimum of Sia's ILP may need: with
    v_jc = A_jc − λ_n (minimised; λ_n − A_jc when maximised) the objective is Σ v x + const.

    1. **v_jc ≥ 0 is never needed.** Take any feasible x with x_jc = 1 and set x_jc = 0: the
       job's row Σ_c x_jc ≤ 1 and every capacity row only loosen (all coefficients ≥ 0), so
       the result is feasible, and the objective changes by −v_jc ≤ 0.
    2. **A column dominated within its type is never needed:** if c′ has the same GPU type,
       fewer GPUs and v_jc′ ≤ v_jc, moving job j from c to c′ keeps its row at 1, lowers its
       type's capacity row by gpus_c − gpus_c′ > 0 and the objective by v_jc − v_jc′ ≥ 0.

    Applying either rule to an optimum gives an optimum that avoids the dropped column, and
    applying them repeatedly ends (each move lowers Σ gpus·x or Σ x), so the ILP restricted to
    the kept columns has the same optimal value as the full one. Rule 2 is checked against
    the running minimum of v over the type's columns with fewer GPUs (``configurations``
    gives each type's GPU counts distinct and increasing, checked here by sorting)."""
    v = (cost - lambda_n) if minimise else (lambda_n - cost)
    keep = v < 0
    for t in np.unique(type_of):
        cols = np.flatnonzero(type_of == t)
        cols = cols[np.argsort(gpus[cols], kind="stable")]
        if cols.size < 2:
            continue
        g = gpus[cols]
        best = np.minimum.accumulate(v[:, cols], axis=1)
        # best over columns with strictly fewer GPUs than column k
        prev = np.full((v.shape[0], cols.size), np.inf)
        for k in range(1, cols.size):
            # last column with fewer GPUs than g[k]
            m = int(np.searchsorted(g, g[k], side="left"))
            if m > 0:
                prev[:, k] = best[:, m - 1]
        keep[:, cols] &= ~(prev <= v[:, cols])
    return keep


#: Variables (jobs × configurations) from which ``solve_ilp`` prunes by default. Below it the
#: whole ILP goes to HiGHS as the artifact builds it: a pruned ILP has the same optimal value
#: but HiGHS may return another of its tied optima (one round of Table 3's philly/workload-1
#: at 64 GPUs does, and the run's results move), so runs at Sia's scale keep theirs.
PRUNE_FROM = 2000


def lp_fixing(
    obj: np.ndarray,
    a: object,
    upper: np.ndarray,
    jobs: int,
    gpus: np.ndarray,
    type_of: np.ndarray,
    var_job: np.ndarray,
) -> tuple[np.ndarray, float] | None:
    """Indices of the columns (of min obj·x, a x ≤ upper, 0 ≤ x ≤ 1 binary; the first ``jobs``
    rows the jobs' Σ x ≤ 1, then one capacity row per type) that an optimum may use, by
    reduced-cost fixing; None if the LP relaxation is not solved.

    The LP's optimal duals (y ≤ 0 on the rows, u ≤ 0 on x ≤ 1, d ≥ 0 on x ≥ 0) satisfy
    obj = aᵀy + u + d and z_LP = y·upper + u·1, so every feasible binary x has
    obj·x = y·(a x) + u·x + d·x ≥ y·upper + u·1 + d·x = z_LP + d·x. A feasible integer
    solution of value z_inc is built from the LP's: its integral jobs, then greedily (by obj)
    any column of a job not yet placed that fits what capacity is left. A column k with
    d_k > z_inc − z_LP can then only be in solutions worse than z_inc, hence in no optimum
    (nor in any solution HiGHS's gap could accept that the full ILP's would not): dropping it
    keeps every optimum."""
    from scipy.optimize import linprog

    res = linprog(obj, A_ub=a, b_ub=upper, bounds=(0, 1), method="highs")
    if res.status != 0:
        return None
    x = res.x
    frac_jobs = np.unique(var_job[(x > 1e-9) & (x < 1 - 1e-9)])
    inc = (x > 1 - 1e-9) & ~np.isin(var_job, frac_jobs)
    cap = upper[jobs:].copy()
    cap -= np.bincount(type_of[inc], weights=gpus[inc], minlength=cap.size)
    placed = set(var_job[inc].tolist())
    for k in np.argsort(obj, kind="stable"):
        j = int(var_job[k])
        if j in placed or obj[k] >= 0:
            continue
        if gpus[k] <= cap[type_of[k]]:
            cap[type_of[k]] -= gpus[k]
            placed.add(j)
            inc[k] = True
    gap = float(obj[inc].sum() - res.fun)
    return np.flatnonzero(res.lower.marginals <= gap + 1e-6), float(obj[inc].sum())


def solve_ilp(
    cost: np.ndarray,
    gpus: np.ndarray,
    type_of: np.ndarray,
    capacity: np.ndarray,
    lambda_n: float,
    fixed: list[tuple[int, int]],
    minimise: bool = True,
    prune: bool | None = None,
) -> list[int]:
    """The configuration column of each job (-1: none) of Sia's ILP (sia.py:907-1036) with
    HiGHS (``scipy.optimize.milp``): x_jc ∈ {0, 1}, Σ_c x_jc ≤ 1, Σ gpus·x ≤ capacity per
    type, x fixed to 1 at ``fixed``; objective Σ A x + λ_n (N − Σ x), minimised for p < 0
    (maximised for p > 0). The constant λ_n·N is left out.

    With ``prune`` (default: from ``PRUNE_FROM`` variables on) HiGHS gets a smaller ILP of
    the same optimal value: a job with a fixed column takes it (its row forces its other
    columns to 0) and leaves the problem with its GPUs taken off its type's capacity; of the
    others only the columns ``useful_columns`` keeps enter, and a job left with none gets -1;
    then ``lp_fixing`` drops further columns by the LP relaxation's reduced costs.
    ``prune=False`` solves the whole matrix as built (the tests compare the two)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    jobs, cols = cost.shape
    if prune is None:
        prune = jobs * cols >= PRUNE_FROM
    v = (cost - lambda_n) if minimise else (lambda_n - cost)
    out = [-1] * jobs
    if prune:
        cap_left = capacity.astype(float).copy()
        keep = useful_columns(cost, gpus, type_of, lambda_n, minimise)
        for j, col in fixed:
            out[j] = col
            cap_left[type_of[col]] -= gpus[col]
            keep[j] = False
        lb_fixed: list[int] = []
    else:
        cap_left = capacity.astype(float)
        keep = np.ones((jobs, cols), dtype=bool)
        lb_fixed = [j * cols + col for j, col in fixed]
    var_job, var_col = np.nonzero(keep)
    n = var_job.size
    if n == 0:
        return out
    types = int(capacity.size)

    def rows(var_job: np.ndarray, var_col: np.ndarray):
        """The jobs with a variable, and the constraints: one configuration per such job,
        GPUs per type within what is left."""
        live, job_row = np.unique(var_job, return_inverse=True)
        m = var_job.size
        row_idx = np.concatenate([job_row, live.size + type_of[var_col]])
        col_idx = np.concatenate([np.arange(m), np.arange(m)])
        vals = np.concatenate([np.ones(m), gpus[var_col].astype(float)])
        a = csr_matrix((vals, (row_idx, col_idx)), shape=(live.size + types, m))
        return live, a, np.concatenate([np.ones(live.size), cap_left])

    live, a, upper = rows(var_job, var_col)
    lb = np.zeros(n)
    if lb_fixed:
        lb[np.searchsorted(var_job * cols + var_col, lb_fixed)] = 1.0
    obj = v[var_job, var_col]
    if prune:
        fix = lp_fixing(obj, a, upper, live.size, gpus[var_col], type_of[var_col], var_job)
        kept = fix[0] if fix is not None else None
        if kept is not None and kept.size < n:
            var_job, var_col, obj = var_job[kept], var_col[kept], obj[kept]
            n = kept.size
            live, a, upper = rows(var_job, var_col)
            lb = np.zeros(n)
    with native_stdout_silenced():  # HiGHS's debug printf()s (policies/native_quiet.py)
        res = milp(
            obj,
            constraints=LinearConstraint(a, -np.inf, upper),
            integrality=np.ones(n),
            bounds=Bounds(lb, np.ones(n)),
            options={"mip_rel_gap": MIP_GAP, "presolve": True},
        )
    if res.x is None:
        raise RuntimeError(f"Sia's ILP has no solution: {res.message}")
    for k in np.flatnonzero(np.round(res.x) > 0):
        out[int(var_job[k])] = int(var_col[k])
    return out


@dataclass
class Sia:
    """Sia's round-based ILP scheduler (module doc). ``p``, ``lambda_n``, ``lambda_a`` and
    ``interval`` default to the artifact's settings (simulator_config.py:49-56,
    run_experiment.sh); ``restart_delays`` (application → seconds the engine charges at every
    restart, for the checkpoint-restore constraint) and ``default_delay`` come from the run's
    calibration."""

    name: str = "sia"
    interval: float | None = 60.0
    p: float = -0.5
    lambda_n: float = 1.1
    lambda_a: float = 0.01
    restart_delays: dict[str, float] = field(default_factory=dict)
    default_delay: float = 30.0
    #: a list to append every round's ``SiaProblem`` to
    record: list[SiaProblem] | None = None
    #: how the jobs' throughput models are fitted (``perf.goodput.FIT_METHODS``; setting
    #: ``goodput_fit``)
    fit: str = "exact"
    elastic = True
    #: a job a Kueue flavor holds to a GPU type (``JobState.flavor_type``, ``--queues``) gets
    #: only that type's configurations (``on_round``)
    holds_flavor_types: ClassVar[bool] = True
    _fits: dict[int, dict[str, JobGoodput]] = field(default_factory=dict, init=False, repr=False)
    _grad: dict[int, tuple[float, float]] = field(default_factory=dict, init=False, repr=False)
    _prev: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _restarts: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _restore_until: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    #: job id → (state key, goodput row): the last row of each job and what it depends on
    _rows: dict[int, tuple[tuple[object, ...], np.ndarray]] = field(
        default_factory=dict, init=False, repr=False
    )

    # ------------------------------------------------------------------ set-up
    def attach(self, sim: Simulator) -> None:
        self.ex = sim.estimates(ProfileEstimates)
        self.sim = sim
        cl = sim.cluster
        #: GPU types in the cluster's order (the artifact's ``cluster_ordering``)
        self.types: list[str] = list(cl.gpu_types)
        self.per_node: dict[str, int] = {}
        self.servers: dict[str, list[int]] = {}
        for s, srv in enumerate(cl.servers):
            self.servers.setdefault(srv.gpu_type, []).append(s)
            self.per_node[srv.gpu_type] = max(self.per_node.get(srv.gpu_type, 0), srv.num_gpus)
        self.capacity = np.array([cl.gpu_types[t] for t in self.types], dtype=np.int64)
        configs: list[tuple[str, int, int]] = []
        for t in self.types:
            nodes = min(len(self.servers[t]), SIA_MAX_PHYSICAL_NODES.get(t, len(self.servers[t])))
            configs += [(t, n, g) for n, g in configurations(self.per_node[t], nodes)]
        self.configs = configs
        self.cfg_gpus = np.array([g for _, _, g in configs], dtype=np.int64)
        self.cfg_type = np.array([self.types.index(t) for t, _, _ in configs], dtype=np.int64)
        self._xput: dict[tuple[str, str], float] = {}
        self.solve_ms: list[float] = []
        #: running jobs moved to other GPUs of the same type and per-node tuple (no restart)
        self.free_moves = 0

    def schedule(self, sim: Simulator) -> None:
        """Allocations change only at rounds (``on_round``)."""

    # ------------------------------------------------------------------ the job agent
    def _type_of(self, sim: Simulator, job: JobState) -> str:
        return sim.cluster.gpu_type(job.gpus[0])

    def observe(self, run: ProfileRun) -> None:
        """The (step, sync) time of the configuration ``run`` runs, on the job's model of its
        GPU type, and its gradient statistics (``Job.update_params``, job.py:387-412)."""
        cfg = run.cfg
        assert cfg is not None
        job = run.job
        t = self._type_of(self.sim, job)
        app, _ = self.ex.application_on(job, t)
        step, sync = app.step_time(run.placement, cfg.a)
        try:
            self._grad[job.job_id] = app.grad_stats(run.epoch, cfg.M)
        except ValueError:
            pass
        fits = self._fits.setdefault(job.job_id, {})
        m = fits.get(t)
        if m is None:
            m = fits[t] = JobGoodput(app, fit=self.fit)
        m.observe(len(run.placement), sum(run.placement), cfg.a, step, sync)

    def observe_measured(self, run: ProfileRun, iteration_time: float) -> tuple[float, float]:
        """A real measurement (live mode: seconds per iteration from the job's progress
        reports) of the configuration ``run`` runs replaces the profile's in the job's model
        *of its GPU type*, which is refit (``ObservesMeasured``, as Pollux's): the iteration
        is scaled to one synchronising micro-step by that type's profile (step ÷ iteration),
        the sync share is the type's profile's. Projections to the types where the job has
        not run follow from the refit model. Returns the (step, sync) recorded."""
        cfg = run.cfg
        assert cfg is not None
        job = run.job
        t = self._type_of(self.sim, job)
        app, _ = self.ex.application_on(job, t)
        step, sync = measured_step(app, run.placement, cfg, iteration_time)
        fits = self._fits.setdefault(job.job_id, {})
        m = fits.get(t)
        if m is None:
            m = fits[t] = JobGoodput(app, fit=self.fit)
        m.observe(len(run.placement), sum(run.placement), cfg.a, step, sync, replace=True)
        return step, sync

    def _run_batch(self, job: JobState, t: str, placement: tuple[int, ...]) -> int:
        """The batch ``job`` runs on ``placement`` of type ``t`` (``update_local_bsz``,
        job.py:317-386): its model's best up to the application's max_bsz within the
        placement's local-batch limit, or max(init_bsz, min_local·R) without a model there."""
        app, _ = self.ex.application_on(job, t)
        r = sum(placement)
        m = self._fits.get(job.job_id, {}).get(t)
        grad = self._grad.get(job.job_id)
        if m is None or m.params is None or grad is None:
            return max(app.init_bsz, app.min_local * r)
        hi = app.max_local_at(placement) if app.max_nodes is not None else app.max_local
        _, batch = best_goodput(
            m.params, grad, app.init_bsz, len(placement), r, app.max_bsz, (app.min_local, hi)
        )
        return batch

    def rebatch(self, run: ProfileRun) -> int | None:
        """The batch ``run`` re-tunes to after each step and epoch (job.py:521)."""
        job = run.job
        return self._run_batch(job, self._type_of(self.sim, job), run.placement)

    # ------------------------------------------------------------------ goodputs
    def _ratio(self, app_name: str, t: str, dest: str, job: JobState) -> float:
        key = (f"{app_name}\0{t}", dest)
        hit = self._xput.get(key)
        if hit is None:
            src_app, _ = self.ex.application_on(job, t)
            dest_app, _ = self.ex.application_on(job, dest)
            hit = self._xput[key] = one_gpu_throughput(src_app) / one_gpu_throughput(dest_app)
        return hit

    def _row_key(self, job: JobState) -> tuple[object, ...]:
        """What :meth:`goodput_row` depends on besides the job's (fixed) application, batch
        and the cluster: per modelled type the exact bytes of its throughput parameters and
        the most replicas it ran on, and the bytes of the gradient statistics."""
        fits = self._fits.get(job.job_id, {})
        grad = self._grad.get(job.job_id)
        return (
            None if grad is None else np.array(grad, dtype=np.float64).tobytes(),
            *(
                (
                    t,
                    None
                    if m.params is None
                    else np.array(m.params.as_tuple(), dtype=np.float64).tobytes(),
                    m.max_profiled_replicas,
                )
                for t, m in fits.items()
            ),
        )

    def goodput_row(self, job: JobState) -> np.ndarray:
        """Job's normalised goodput per configuration (sia.py:612-719), before the restart
        factor. A pure function of :meth:`_row_key`: the last row of each job is kept and
        returned (a copy) while its key is unchanged — a job's model and gradient statistics
        change far less often than a 60 s round comes."""
        key = self._row_key(job)
        hit = self._rows.get(job.job_id)
        if hit is not None and hit[0] == key:
            return hit[1].copy()
        row = self._goodput_row(job)
        self._rows[job.job_id] = (key, row.copy())
        return row

    def _goodput_row(self, job: JobState) -> np.ndarray:
        row = np.full(len(self.configs), ZERO_ALLOC_GAIN)
        fits = self._fits.get(job.job_id, {})
        grad = self._grad.get(job.job_id)
        modelled = [t for t in self.types if t in fits and fits[t].params is not None]
        if grad is None:
            modelled = []
        apps = {t: self.ex.application_on(job, t)[0] for t in self.types}
        limit = max(
            min(
                max(2 * (fits[t].max_profiled_replicas if t in fits else 0), 1),
                MAX_REPLICAS,
                apps[t].max_bsz // apps[t].min_local,
            )
            for t in self.types
        )
        target = job.spec.batch_size
        unit: list[str] = []  # types whose one-GPU configuration gets goodput 1
        for t in self.types:
            cols = [i for i, (ct, _, g) in enumerate(self.configs) if ct == t and 1 <= g <= limit]
            if not modelled or not cols:
                unit.append(t)
                continue
            src = t if t in modelled else modelled[0]
            app = apps[src]
            m = fits[src].params
            mult = 1.0 if src == t else self._ratio(job.spec.application, t, src, job)
            per = self.per_node[src]
            assert m is not None and grad is not None
            for i in cols:
                _, nodes, g = self.configs[i]
                if src != t:
                    nodes = math.ceil(g / per)
                good, _ = best_goodput(
                    m,
                    grad,
                    app.init_bsz,
                    nodes,
                    g,
                    max(target, app.init_bsz),
                    (app.min_local, app.max_local),
                )
                row[i] = good * mult
        valid = [t for t in self.types if t not in unit]
        mins = []
        for t in valid:
            vals = row[(self.cfg_type == self.types.index(t)) & (row > ZERO_ALLOC_GAIN)]
            if vals.size:
                mins.append(vals.min())
        row *= 1.0 / (min(mins) if mins else 1.0)
        for t in unit:
            for i, (ct, _, g) in enumerate(self.configs):
                if ct == t and g == 1:
                    row[i] = 1.0
        row[row <= ZERO_ALLOC_GAIN] = ZERO_ALLOC_GAIN
        return row

    # ------------------------------------------------------------------ the round
    def on_round(self, sim: Simulator) -> None:
        jobs = sorted([*sim.queue, *sim.running.values()], key=lambda j: j.job_id)
        if not jobs:
            return
        now = sim.now
        goodput = np.vstack([self.goodput_row(j) for j in jobs])
        fixed: list[tuple[int, int]] = []
        for i, j in enumerate(jobs):
            prev = self._prev.get(j.job_id)
            if prev is None:
                continue
            pen = restart_penalty(j.spec.name or "", j.spec.application or "")
            age = now - j.arrival
            restarts = self._restarts.get(j.job_id, 0)
            factor = restart_factor(age, restarts, pen)
            keep = goodput[i, prev]
            goodput[i] *= factor
            goodput[i, prev] = keep
            if j.job_id in sim.running and self._restore_until.get(j.job_id, -1.0) > now + 1e-9:
                fixed.append((i, prev))
        for i, j in enumerate(jobs):
            if j.flavor_type is not None:  # no gain elsewhere: the ILP never picks it there
                goodput[i, self.cfg_type != self.types.index(j.flavor_type)] = ZERO_ALLOC_GAIN
        with np.errstate(divide="ignore"):
            cost = np.minimum(np.round(np.power(goodput, self.p), 2), CLIP)
        t0 = time.perf_counter()
        choice = solve_ilp(
            cost, self.cfg_gpus, self.cfg_type, self.capacity, self.lambda_n, fixed, self.p < 0
        )
        ms = (time.perf_counter() - t0) * 1e3
        self.solve_ms.append(ms)
        if self.record is not None:
            self.record.append(
                SiaProblem(
                    tuple(j.job_id for j in jobs),
                    tuple(self.configs),
                    goodput,
                    cost,
                    {t: int(c) for t, c in zip(self.types, self.capacity, strict=True)},
                    tuple(fixed),
                    tuple(choice),
                    ms,
                )
            )
        self._apply(sim, jobs, choice)

    def _apply(self, sim: Simulator, jobs: list[JobState], choice: list[int]) -> None:
        """Every job goes to the GPUs the artifact's ``alloc_to_placement_fast`` computes from
        empty nodes (sia.py:155-204), as its simulator places them: a running job of the same
        type and per-node GPUs keeps running — on its own GPUs if it is given them, else it
        moves there for free (no restart delay, no restart counted: the artifact restarts a
        job only when its type or per-node tuple changes, job.py:524-546); the others stop
        and start where they are given GPUs (paying their restart delay)."""
        cl = sim.cluster
        placed: dict[int, tuple[str, list[int]]] = {}
        for t in self.types:
            servers = self.servers[t]
            demands = [
                (i, self.configs[c][2])
                for i, c in enumerate(choice)
                if c >= 0 and self.configs[c][0] == t
            ]
            free = [cl.servers[s].num_gpus for s in servers]
            for i, nodes in alloc_to_placement(free, demands, self.per_node[t]).items():
                placed[i] = (t, [servers[k] for k in nodes])
        gpus_of = self._gpus_on(sim, jobs, placed)
        keep: set[int] = set()
        free_move: set[int] = set()
        for i, j in enumerate(jobs):
            if j.job_id not in sim.running:
                continue
            if i in placed:
                t, srv = placed[i]
                same = self._type_of(sim, j) == t and node_runs(srv) == node_runs(
                    [cl.gpu_server[g] for g in j.gpus]
                )
                if same and list(j.gpus) == gpus_of[i]:
                    keep.add(i)
                    continue
                if same:
                    free_move.add(i)
            sim.preempt(j)
        for i, j in enumerate(jobs):
            self._prev.pop(j.job_id, None)
            if choice[i] >= 0:
                self._prev[j.job_id] = choice[i]
            if i in keep:
                self.ex.rebatch(j)
        for i in sorted(placed):
            if i in keep:
                continue
            if i in free_move:
                self.free_moves += 1
                placement = node_runs(cl.gpu_server[g] for g in gpus_of[i])
                batch = self._run_batch(jobs[i], placed[i][0], placement)
                # a move in the middle of a checkpoint-restore keeps what is left of it
                left = max(self._restore_until.get(jobs[i].job_id, sim.now) - sim.now, 0.0)
                cfg = JobConfig(batch_size=int(batch), restart_delay=left)
                sim.resize(jobs[i], gpus_of[i], cfg)
            else:
                self._start(sim, jobs[i], placed[i][0], gpus_of[i])

    @staticmethod
    def _gpus_on(
        sim: Simulator, jobs: list[JobState], placed: dict[int, tuple[str, list[int]]]
    ) -> dict[int, list[int]]:
        """GPU ids for each placed job, node by node in its allocation order: on a node, a
        job keeps the GPUs it holds there (as many as it is given there), the others take
        the node's remaining GPUs in index order."""
        cl = sim.cluster
        taken: set[int] = set()
        reuse: dict[int, dict[int, list[int]]] = {}
        for i, (_, srv) in placed.items():
            want: dict[int, int] = {}
            for s in srv:
                want[s] = want.get(s, 0) + 1
            own: dict[int, list[int]] = {}
            if jobs[i].job_id in sim.running:
                for g in jobs[i].gpus:
                    s = cl.gpu_server[g]
                    if len(own.get(s, [])) < want.get(s, 0):
                        own.setdefault(s, []).append(g)
                        taken.add(g)
            reuse[i] = own
        out: dict[int, list[int]] = {}
        for i, (_, srv) in sorted(placed.items()):
            own = reuse[i]
            gpus: list[int] = []
            for s in srv:
                if own.get(s):
                    gpus.append(own[s].pop(0))
                    continue
                g = next(g for g in cl.gpus_of_server(s) if g not in taken)
                taken.add(g)
                gpus.append(g)
            out[i] = gpus
        return out

    def _start(self, sim: Simulator, job: JobState, t: str, gpus: list[int]) -> None:
        placement = node_runs(sim.cluster.gpu_server[g] for g in gpus)
        batch = self._run_batch(job, t, placement)
        if job.job_id in self._restore_until:
            self._restarts[job.job_id] = self._restarts.get(job.job_id, 0) + 1
        delay = self.restart_delays.get(job.spec.application, self.default_delay)
        self._restore_until[job.job_id] = sim.now + delay
        sim.resize(job, gpus, JobConfig(batch_size=int(batch)))

    def summary_extras(self, sim: Simulator) -> dict[str, object]:
        """Rounds whose ILP was solved and free moves (solve times are in ``solve_ms``, not in
        the deterministic summary)."""
        return {"sia_rounds": len(self.solve_ms), "sia_free_moves": self.free_moves}
