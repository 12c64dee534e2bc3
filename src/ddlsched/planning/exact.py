"""The optimal plan under the planners' isolated estimate: how far from optimal are they?

Model (Estimator mode ``isolated``, the one ``yu22-optgap`` compares against): job j picks a
*mode*, a per-server GPU count vector y_j with Σ_s y_js = G_j and 0 ≤ y_js ≤ O_s, and a start
S_j ≥ 0; it then runs for d_j = ρ̂_j(n)/u with n = #{s : y_js > 0}
(``Estimator.rho_by_servers``, no contention). Per server s, the jobs running at any instant
use at most O_s GPUs (a cumulative constraint). Objective: the makespan max_j S_j + d_j.

The per-server cumulative is exact for GPU-level feasibility: jobs never migrate, so handing out
concrete GPUs in start order always succeeds (at S_j the jobs still holding GPUs of server s are
exactly those running at S_j, and they hold at most O_s − y_js of them), see ``assign_gpus``.

``solve_exact`` is a multi-mode RCPSP in OR-Tools CP-SAT: one optional fixed-size interval per
(job, mode), exactly one present per job, sharing the job's start; per server a cumulative over
the mode intervals that use it (demand y_js), plus a redundant cluster-wide cumulative (demand
G_j, capacity Σ O_s) over one variable-length interval per job, and GPU-time cuts. Two exact
reductions: a job that can run beside no other goes first in its fastest mode, and servers of
equal capacity are interchangeable (one job's counts are sorted within each such group). Time
is integer in ticks of ``resolution`` seconds. CP-SAT runs with one worker and a fixed seed;
``work_limit`` (deterministic time) makes a run that it stops reproducible, ``time_limit``
(wall seconds) is a safety net.

Rounding. Durations are rounded *down* to whole ticks. Then any schedule with the real
durations maps to an integer one (floor every start: ⌊S_a⌋ + ⌊d_a⌋ ≤ ⌊S_a + d_a⌋ ≤ ⌊S_b⌋
whenever a ends before b starts, and the makespan does not grow), so the solver's optimum
(and, if stopped early, its proven bound) times the resolution is a *lower bound* on the true
optimum: ``ExactResult.lower_bound`` ≤ OPT ≤ any planner's makespan, so gaps measured against
it are never negative. Rounding *up* would instead give a feasible schedule (an upper bound on OPT)
that a planner could beat by a few ticks. The returned ``Plan`` uses the real durations: the
solver's modes and its order on shared servers are kept and every job is started as early as
that order allows (``_retime``); this is feasible (jobs that overlap in the retimed plan on a
server pairwise overlapped in the solver's schedule, hence all at one instant by Helly's
property, so they fit) and ``makespan`` − ``lower_bound`` ≤ n·resolution when proven optimal.

``rho_by_servers`` uses the cluster's fastest links; with uniform links (every preset) that is
the planners' isolated estimate exactly, otherwise the optimum here is a lower bound of it.

``brute_force_makespan`` enumerates job lists × modes with the serial schedule-generation scheme
(for tiny instances: the best active schedule over all lists is optimal for the makespan).
OR-Tools is optional: ``pip install ddlsched[exact]``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.cluster import Cluster
from ..core.job import JobSpec
from ..perf.rar import RarModel
from .plan import EPS, Estimator, Plan, PlannedJob

#: ``ExactResult.status`` values (CP-SAT's status names)
OPTIMAL, FEASIBLE = "OPTIMAL", "FEASIBLE"


@dataclass(frozen=True)
class ExactResult:
    """``solve_exact``'s answer.

    ``plan``: a feasible plan with the real durations (GPU ids assigned in start order);
    ``makespan``: its makespan (s); ``lower_bound``: a proven lower bound on the optimal
    makespan (s), equal to the optimum of the tick-rounded problem when ``optimal``;
    ``optimal``: CP-SAT proved optimality (else a limit stopped it); ``status``: CP-SAT's
    status name; ``wall_time``: solver seconds; ``resolution``: seconds per tick."""

    plan: Plan
    makespan: float
    lower_bound: float
    optimal: bool
    status: str
    wall_time: float
    resolution: float

    @property
    def optimum(self) -> float:
        """The optimal makespan to compare planners against (a lower bound, see module doc)."""
        return self.lower_bound


def job_modes(cluster: Cluster, num_gpus: int) -> list[tuple[int, ...]]:
    """Every per-server GPU count vector y (Σ y = ``num_gpus``, 0 ≤ y_s ≤ O_s), in
    lexicographic order from the largest count on server 0."""
    caps = [s.num_gpus for s in cluster.servers]
    suffix = np.cumsum(caps[::-1])[::-1].tolist() + [0]  # GPUs on servers s.. (to prune)
    out: list[tuple[int, ...]] = []
    vec = [0] * len(caps)

    def rec(s: int, left: int) -> None:
        if s == len(caps):
            if left == 0:
                out.append(tuple(vec))
            return
        for y in range(min(caps[s], left), -1, -1):
            if left - y > suffix[s + 1]:
                break
            vec[s] = y
            rec(s + 1, left - y)
        vec[s] = 0

    rec(0, num_gpus)
    return out


def isolated_durations(
    cluster: Cluster, jobs: Sequence[JobSpec], model: RarModel, u: float = 1.0
) -> list[list[float]]:
    """Per job, its isolated duration ρ̂_j(n)/u on n = 1..min(G_j, #servers) servers
    (at index n − 1)."""
    est = Estimator(cluster, model, "isolated")
    return [
        [
            est.rho_by_servers(spec, n) / u
            for n in range(1, min(spec.num_gpus, cluster.num_servers) + 1)
        ]
        for spec in jobs
    ]


def _check(cluster: Cluster, jobs: Sequence[JobSpec]) -> None:
    ids = [s.job_id for s in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError("job ids must be distinct")
    for s in jobs:
        if not 1 <= s.num_gpus <= cluster.num_gpus:
            raise ValueError(
                f"job {s.job_id} needs {s.num_gpus} GPUs; the cluster has {cluster.num_gpus}"
            )


def _exclusive(jobs: Sequence[JobSpec], total: int) -> list[int]:
    """Indices of the jobs that no other job can run beside, in input order."""
    g = [s.num_gpus for s in jobs]
    return [j for j in range(len(g)) if all(g[j] + g[k] > total for k in range(len(g)) if k != j)]


def _servers_used(y: Sequence[int]) -> int:
    return sum(1 for v in y if v > 0)


def assign_gpus(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    starts: Sequence[float],
    durations: Sequence[float],
    modes: Sequence[Sequence[int]],
    name: str = "exact",
    params: dict[str, float] | None = None,
) -> Plan:
    """Concrete GPUs for a per-server schedule: in start order, each job takes on each server s
    the y_js lowest-numbered GPUs free at its start. Raises ``ValueError`` if a server lacks free
    GPUs (the schedule broke a per-server capacity)."""
    free_at = np.zeros(cluster.num_gpus)
    order = sorted(range(len(jobs)), key=lambda i: (starts[i], jobs[i].job_id))
    entries = []
    for i in order:
        t, end = float(starts[i]), float(starts[i]) + float(durations[i])
        gpus: list[int] = []
        for s, y in enumerate(modes[i]):
            if y == 0:
                continue
            ids = np.asarray(cluster.gpus_of_server(s))
            ok = ids[free_at[ids] <= t + EPS]
            if len(ok) < y:
                raise ValueError(
                    f"server {s} has {len(ok)} free GPUs at {t:g} s; job {jobs[i].job_id} needs {y}"
                )
            gpus += ok[:y].tolist()
        free_at[gpus] = end
        entries.append(PlannedJob(jobs[i].job_id, tuple(sorted(gpus)), t, end))
    return Plan(tuple(entries), name, params or {})


def _retime(
    starts_tick: Sequence[int],
    ends_tick: Sequence[int],
    modes: Sequence[Sequence[int]],
    durations: Sequence[float],
) -> list[float]:
    """Real start times keeping the tick schedule's order on shared servers (see module doc):
    job b waits for every job a that shares a server with it and ends (in ticks) by b's start."""
    n = len(starts_tick)
    order = sorted(range(n), key=lambda i: (starts_tick[i], i))
    used = [{s for s, y in enumerate(m) if y > 0} for m in modes]
    start = [0.0] * n
    done: list[int] = []
    for b in order:
        t = 0.0
        for a in done:
            if ends_tick[a] <= starts_tick[b] and used[a] & used[b]:
                t = max(t, start[a] + durations[a])
        start[b] = t
        done.append(b)
    return start


def solve_exact(
    cluster: Cluster,
    jobs: Sequence[JobSpec],
    model: RarModel | None = None,
    *,
    u: float = 1.0,
    time_limit: float = 10.0,
    resolution: float = 1e-3,
    seed: int = 0,
    max_modes: int = 20000,
    work_limit: float | None = None,
) -> ExactResult:
    """The makespan-optimal plan under the isolated estimate (see the module doc), by CP-SAT
    with one worker and seed ``seed``: deterministic unless the wall-clock ``time_limit``
    (seconds) stops it before ``work_limit`` (CP-SAT deterministic time units; None: none).

    Raises ``ImportError`` without OR-Tools, ``ValueError`` for a job that cannot fit, more than
    ``max_modes`` (job, mode) pairs, or a duration shorter than one tick.
    """
    try:
        from ortools.sat.python import cp_model
    except ImportError as e:
        raise ImportError(
            "the exact solver needs OR-Tools: pip install ddlsched[exact] (or ortools>=9.9)"
        ) from e

    model = model or RarModel()
    _check(cluster, jobs)
    if not jobs:
        return ExactResult(Plan((), "exact", {}), 0.0, 0.0, True, OPTIMAL, 0.0, resolution)
    durs = isolated_durations(cluster, jobs, model, u)
    modes = [job_modes(cluster, s.num_gpus) for s in jobs]
    if sum(len(m) for m in modes) > max_modes:
        raise ValueError(
            f"{sum(len(m) for m in modes)} (job, mode) pairs exceed max_modes = {max_modes}: "
            "the exact solver is meant for small instances"
        )
    # durations in ticks, rounded down (a lower bound, see module doc); the 1e-7 tick keeps a
    # whole number of ticks whole despite float error in d / resolution
    ticks = [[math.floor(d / resolution + 1e-7) for d in dj] for dj in durs]
    # per job, the duration of each of its modes
    mode_ticks = [[ticks[j][_servers_used(y) - 1] for y in modes[j]] for j in range(len(jobs))]
    if min(min(t) for t in mode_ticks) < 1:
        raise ValueError(f"a duration is shorter than the resolution {resolution:g} s")

    caps = [s.num_gpus for s in cluster.servers]
    # serial schedule with each job's fastest mode: an upper bound on the optimum
    horizon = sum(min(t) for t in mode_ticks)

    m = cp_model.CpModel()
    makespan = m.new_int_var(0, horizon, "makespan")
    starts, pres = [], []
    per_server: list[tuple[list, list]] = [([], []) for _ in caps]
    server_energy: list[list] = [[] for _ in caps]
    masters, energy = [], []
    for j, spec in enumerate(jobs):
        sj = m.new_int_var(0, horizon, f"s{j}")
        lits = []
        dur_expr = []
        for k, y in enumerate(modes[j]):
            d = mode_ticks[j][k]
            x = m.new_bool_var(f"x{j}_{k}")
            iv = m.new_optional_fixed_size_interval_var(sj, d, x, f"i{j}_{k}")
            for s, ys in enumerate(y):
                if ys > 0:
                    per_server[s][0].append(iv)
                    per_server[s][1].append(ys)
                    server_energy[s].append(ys * d * x)
            lits.append(x)
            dur_expr.append(d * x)
        m.add_exactly_one(lits)
        # the job's own interval, whatever its mode: its size is known to lie in
        # [fastest, slowest mode], which the cluster-wide cumulative can reason with
        dj = m.new_int_var(min(mode_ticks[j]), max(mode_ticks[j]), f"d{j}")
        m.add(dj == sum(dur_expr))
        ej = m.new_int_var(0, horizon, f"e{j}")
        masters.append(m.new_interval_var(sj, dj, ej, f"job{j}"))
        m.add(makespan >= ej)
        energy.append(spec.num_gpus * dj)
        starts.append(sj)
        pres.append(lits)
    for s, (ivs, dem) in enumerate(per_server):
        if ivs:
            m.add_cumulative(ivs, dem, caps[s])
            m.add(sum(server_energy[s]) <= caps[s] * makespan)  # redundant: GPU-time
    # redundant: all GPUs of the cluster as one resource, and its GPU-time
    m.add_cumulative(masters, [s.num_gpus for s in jobs], sum(caps))
    m.add(sum(energy) <= sum(caps) * makespan)
    # dominance: a job that can overlap no other (G_j + G_k > Σ O_s for every k) runs alone, so
    # it may go first (shift what ran before it right by its duration) in its fastest mode
    offset = 0
    for j in _exclusive(jobs, sum(caps)):
        k = min(range(len(modes[j])), key=lambda k: _servers_used(modes[j][k]))
        m.add(pres[j][k] == 1)
        m.add(starts[j] == offset)
        offset += mode_ticks[j][k]
    # symmetry: servers of equal capacity are interchangeable (durations depend only on how
    # many servers a job spans), so the largest other job may take, within each such group,
    # non-increasing counts in server order
    excl = set(_exclusive(jobs, sum(caps)))
    rest = sorted(
        (j for j in range(len(jobs)) if j not in excl), key=lambda j: (-jobs[j].num_gpus, j)
    )
    if rest:
        j0 = rest[0]
        for y, x in zip(modes[j0], pres[j0], strict=True):
            if any(
                caps[a] == caps[b] and y[a] < y[b]
                for a in range(len(caps))
                for b in range(a + 1, len(caps))
            ):
                m.add(x == 0)
    m.minimize(makespan)

    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.num_workers = 1
    prm.random_seed = seed
    prm.max_time_in_seconds = float(time_limit)
    prm.linearization_level = 2  # the LP relaxation proves more optima here
    if work_limit is not None:
        prm.max_deterministic_time = float(work_limit)
    t0 = time.perf_counter()
    status = solver.solve(m)
    wall = time.perf_counter() - t0
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no schedule ({name}) within the limits")

    chosen = [next(k for k, x in enumerate(lits) if solver.boolean_value(x)) for lits in pres]
    y = [modes[j][k] for j, k in enumerate(chosen)]
    d_real = [durs[j][_servers_used(y[j]) - 1] for j in range(len(jobs))]
    s_tick = [int(solver.value(v)) for v in starts]
    e_tick = [s_tick[j] + ticks[j][_servers_used(y[j]) - 1] for j in range(len(jobs))]
    s_real = _retime(s_tick, e_tick, y, d_real)
    optimal = status == cp_model.OPTIMAL
    bound = solver.value(makespan) if optimal else solver.best_objective_bound
    lower = float(bound) * resolution
    plan = assign_gpus(
        cluster,
        jobs,
        s_real,
        d_real,
        y,
        "exact",
        {"lower_bound": lower, "optimal": float(optimal), "resolution": resolution},
    )
    return ExactResult(plan, plan.makespan, lower, optimal, name, wall, resolution)


def brute_force_makespan(
    cluster: Cluster, jobs: Sequence[JobSpec], model: RarModel | None = None, u: float = 1.0
) -> float:
    """The optimal makespan (s, real durations) by enumeration, for tiny instances: every job
    list × every mode per job, each scheduled by the serial schedule-generation scheme (each
    job at the earliest time its per-server demands fit for its whole duration beside the jobs
    already placed). The best active schedule over all lists and modes is optimal (RCPSP);
    branches whose partial makespan already reaches the best are cut."""
    model = model or RarModel()
    _check(cluster, jobs)
    caps = [s.num_gpus for s in cluster.servers]
    durs = isolated_durations(cluster, jobs, model, u)
    options = [
        [(y, durs[j][_servers_used(y) - 1]) for y in job_modes(cluster, spec.num_gpus)]
        for j, spec in enumerate(jobs)
    ]
    n = len(jobs)
    placed: list[tuple[float, float, tuple[int, ...]]] = []
    best = math.inf

    def fits(t: float, d: float, y: tuple[int, ...]) -> bool:
        end = t + d
        over = [p for p in placed if p[0] < end - EPS and p[1] > t + EPS]
        if not over:
            return True
        # usage is piecewise constant: check at t and at every start inside (t, end)
        for c in [t] + [p[0] for p in over if p[0] > t]:
            for s, ys in enumerate(y):
                if ys == 0:
                    continue
                used = sum(p[2][s] for p in over if p[0] <= c + EPS and p[1] > c + EPS)
                if used + ys > caps[s]:
                    return False
        return True

    def earliest(d: float, y: tuple[int, ...]) -> float:
        for t in sorted({0.0, *(p[1] for p in placed)}):
            if fits(t, d, y):
                return t
        raise AssertionError("unreachable: after every placed job the cluster is empty")

    def rec(left: list[int], mk: float) -> None:
        nonlocal best
        if not left:
            best = min(best, mk)
            return
        for i, j in enumerate(left):
            rest = left[:i] + left[i + 1 :]
            for y, d in options[j]:
                t = earliest(d, y)
                if max(mk, t + d) >= best - EPS:
                    continue
                placed.append((t, t + d, y))
                rec(rest, max(mk, t + d))
                placed.pop()

    rec(list(range(n)), 0.0)
    return 0.0 if n == 0 else best
