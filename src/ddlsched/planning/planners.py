"""Offline planners: SJF-BCO (Yu et al. Alg. 1) and the §7 baselines FF, LS, RAND.

All share Alg. 1's outer loop: bisection over the execution-time limit θ_u ∈ [1, T] (lines
5–31); per θ_u, each configuration (SJF-BCO: each κ; FF/LS: one) list-schedules the jobs and
the plan with the smallest planned makespan below T is kept. A smaller makespan moves the right
pointer (line 27), anything else the left one (line 30). RAND places once with θ_u = T.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.cluster import Cluster
from ..core.job import JobSpec
from ..perf.rar import RarModel
from ..policies.planner_names import PLANNER_DESCRIPTIONS
from .plan import Estimator, PlacementRule, Plan, PlannedJob, PlanningError, list_schedule
from .rules import FaFfp, FirstFitRule, Lbsgf, ListSchedulingRule, RandomRule


@dataclass(frozen=True)
class PlannerParams:
    """Knobs of Alg. 1–3 with the paper's values as defaults (§7)."""

    horizon: float = 1200.0  # T
    u: float = 1.0  # ρ̂/u: upper estimation factor
    lam: float = 1.0  # λ_j of LBSGF
    kappa: int = 0  # 0: search κ = 1..max G_j (Alg. 1 line 8); k > 0: only κ = k
    estimate: str = "start"  # Estimator mode
    #: when no plan finishes within T (Alg. 1 then returns makespan T and no schedule), plan
    #: again with 2T, 4T, … (at most 6 doublings) instead of failing; the T used is reported
    extend_horizon: bool = True


def _extending(params: PlannerParams, attempt) -> tuple[list[PlannedJob], dict]:
    """Run ``attempt(T)`` with T = horizon, then 2T, 4T, … while it finds no plan."""
    T = params.horizon
    for _ in range(7 if params.extend_horizon else 1):
        try:
            entries, info = attempt(T)
            return entries, {**info, "horizon": T, "extended": float(T > params.horizon)}
        except PlanningError:
            T *= 2
    raise PlanningError(
        f"no plan finishes within the horizon T = {params.horizon:g} s"
        + (f" (nor {T / 2:g} s)" if params.extend_horizon else "")
        + "; raise it with --set horizon=…"
    )


def _bisect(
    configs: Sequence[tuple[dict, Sequence[JobSpec], object]],
    cluster: Cluster,
    est: Estimator,
    params: PlannerParams,
    T: float,
) -> tuple[list[PlannedJob], dict]:
    """Alg. 1 lines 5–31 with horizon ``T`` over ``configs`` = (label, job order, rule or
    rule-per-job)."""
    best: list[PlannedJob] | None = None
    best_label: dict = {}
    m = T
    left, right = 1, int(T)
    trials = 0
    while left <= right:
        theta = (left + right) // 2
        m_theta, y_theta, lab_theta = T, None, {}
        for label, order, rule in configs:
            trials += 1
            entries = list_schedule(order, rule, cluster, est, float(theta), params.u)
            if entries is None:
                continue  # Alg. 2/3 returned (∅, T): this configuration is infeasible
            mk = max((e.end for e in entries), default=0.0)
            if mk < m_theta:
                m_theta, y_theta, lab_theta = mk, entries, label
        if m_theta < m:
            m, best, best_label = m_theta, y_theta, {**lab_theta, "theta": float(theta)}
            right = theta - 1
        else:
            left = theta + 1
    if best is None:
        raise PlanningError(f"no plan finishes within the horizon T = {T:g} s")
    return best, {**best_label, "trials": float(trials)}


class SjfBco:
    """SJF-BCO (Alg. 1): jobs by G_j ascending; FA-FFP for G_j ≤ κ, LBSGF(λ) otherwise.

    κ values that split the jobs into the same two groups give the same plan, so each such
    group of κ is list-scheduled once (an exact saving: job sizes are few, κ runs to max G_j).
    """

    name = "sjf-bco"

    def __init__(self, params: PlannerParams | None = None) -> None:
        self.params = params or PlannerParams()

    def plan(self, cluster: Cluster, jobs: Sequence[JobSpec], model: RarModel, seed: int) -> Plan:
        p = self.params
        est = Estimator(cluster, model, p.estimate)
        order = sorted(jobs, key=lambda s: (s.num_gpus, s.job_id))  # line 4
        max_g = max((s.num_gpus for s in jobs), default=1)
        kappas = [p.kappa] if p.kappa > 0 else list(range(1, max_g + 1))
        ffp, lbsgf = FaFfp(), Lbsgf(p.lam)
        configs = []
        seen: set[int] = set()
        for k in kappas:
            n_small = sum(1 for s in jobs if s.num_gpus <= k)
            if n_small in seen:
                continue
            seen.add(n_small)
            rules: dict[int, PlacementRule] = {
                s.job_id: (ffp if s.num_gpus <= k else lbsgf) for s in jobs
            }
            configs.append(({"kappa": float(k)}, order, rules))
        entries, info = _extending(p, lambda T: _bisect(configs, cluster, est, p, T))
        return Plan(tuple(entries), self.name, info)


class BisectedBaseline:
    """FF or LS of §7: jobs in input order, the rule's own θ_u found by the same bisection."""

    def __init__(self, name: str, rule: PlacementRule, params: PlannerParams | None = None):
        self.name = name
        self.rule = rule
        self.params = params or PlannerParams()

    def plan(self, cluster: Cluster, jobs: Sequence[JobSpec], model: RarModel, seed: int) -> Plan:
        est = Estimator(cluster, model, self.params.estimate)
        order = sorted(jobs, key=lambda s: s.job_id)
        p = self.params
        entries, info = _extending(
            p, lambda T: _bisect([({}, order, self.rule)], cluster, est, p, T)
        )
        return Plan(tuple(entries), self.name, info)


class RandomPlanner:
    """RAND of §7: random GPUs, θ_u = T (no search)."""

    name = "yu-rand"

    def __init__(self, params: PlannerParams | None = None) -> None:
        self.params = params or PlannerParams()

    def plan(self, cluster: Cluster, jobs: Sequence[JobSpec], model: RarModel, seed: int) -> Plan:
        est = Estimator(cluster, model, self.params.estimate)
        order = sorted(jobs, key=lambda s: s.job_id)

        def attempt(T: float) -> tuple[list[PlannedJob], dict]:
            rule = RandomRule(np.random.default_rng(seed))
            entries = list_schedule(order, rule, cluster, est, T, self.params.u)
            if entries is None:
                raise PlanningError(f"RAND found no plan within the horizon T = {T:g} s")
            return entries, {"theta": T}

        entries, info = _extending(self.params, attempt)
        return Plan(tuple(entries), self.name, info)


#: the planners ``make_planner`` builds, in registry order (their ``--policy`` names)
PLANNER_NAMES: tuple[str, ...] = tuple(PLANNER_DESCRIPTIONS)


def make_planner(name: str, params: PlannerParams | None = None):
    """``sjf-bco``, ``yu-ff``, ``yu-ls``, ``yu-rand``; KeyError otherwise."""
    params = params or PlannerParams()
    if name == "sjf-bco":
        return SjfBco(params)
    if name == "yu-ff":
        return BisectedBaseline("yu-ff", FirstFitRule(), params)
    if name == "yu-ls":
        return BisectedBaseline("yu-ls", ListSchedulingRule(), params)
    if name == "yu-rand":
        return RandomPlanner(params)
    raise KeyError(name)
