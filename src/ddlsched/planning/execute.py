"""Executing a plan on the engine: the policy side of an offline planner.

At attach time the planner sees every job (offline, Yu et al.'s setting) and emits a ``Plan``.
The engine then runs it under the performance model: the next job of the plan starts as soon as
it has arrived and all its planned GPUs are free; a job never overtakes its predecessors in the
plan (start order is kept). Estimated and executed times differ because the model's contention
depends on what actually runs together; the summary reports both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..perf.rar import RarModel
from .plan import Plan, makespan_lower_bound

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator


class PlanPolicy:
    """A policy that executes the plan of ``planner`` (see module doc)."""

    interval = None
    #: plans every job ahead (``sim.jobs``): does not run with ``--queues``
    keeps_arrivals = True
    queues_refusal = (
        "an offline planner fixes every job's GPUs and start order ahead, from the whole "
        "workload; a quota layer that holds and evicts jobs would break the plan"
    )

    def __init__(self, planner, model: RarModel) -> None:
        self.planner = planner
        self.model = model
        self.name = planner.name
        self.plan: Plan | None = None
        self._next = 0

    def attach(self, sim: Simulator) -> None:
        specs = [j.spec for j in sim.jobs]
        self.plan = self.planner.plan(sim.cluster, specs, self.model, sim.seed)
        self._state = {j.job_id: j for j in sim.jobs}
        self._next = 0

    def schedule(self, sim: Simulator) -> None:
        assert self.plan is not None
        entries = self.plan.entries
        residents = sim.residents
        while self._next < len(entries):
            e = entries[self._next]
            job = self._state[e.job_id]
            if job.arrival > sim.now or any(residents[g] for g in e.gpus):
                return  # wait: the plan's order is kept
            sim.start(job, e.gpus)
            self._next += 1

    def on_round(self, sim: Simulator) -> None:  # pragma: no cover - no rounds
        pass

    def summary_extras(self, sim: Simulator) -> dict[str, float]:
        """Planned makespan / avg JCT beside the executed ones, and the estimate's accuracy:
        executed ÷ planned duration per job (min, max), Theorem 5's u/l when measured."""
        assert self.plan is not None
        ratios = []
        for e in self.plan.entries:
            j = self._state[e.job_id]
            planned = e.end - e.start
            if planned > 0 and j.start is not None and j.finish is not None:
                ratios.append((j.finish - j.start) / planned)
        r = np.asarray(ratios) if ratios else np.ones(1)
        cl, model = sim.cluster, self.model
        executed = ideal = 0.0
        for j in sim.jobs:
            if j.start is None or j.finish is None:
                continue
            executed += j.finish - j.start
            ideal += j.spec.iterations * model.ideal_time(cl, j.spec, j.servers)
        out = {
            # share of executed time due to contention (k > 1) and overhead (γ): the paper's
            # "extra time cost … within 15 % of the total actual execution time" (§7)
            "extra_share": (executed - ideal) / executed if executed > 0 else 0.0,
            # no schedule finishes before this (total GPU-time / GPUs, longest job; one server,
            # no contention)
            "makespan_lower_bound": makespan_lower_bound(cl, [j.spec for j in sim.jobs], model),
            "planned_makespan": self.plan.makespan,
            "planned_avg_jct": self.plan.avg_jct,
            "exec_over_planned_min": float(r.min()),
            "exec_over_planned_max": float(r.max()),
        }
        lb = out["makespan_lower_bound"]
        span = max((j.finish or 0.0) for j in sim.jobs) - min(j.arrival for j in sim.jobs)
        out["makespan_over_lb"] = span / lb if lb > 0 else 0.0
        for k, v in self.plan.params.items():
            out[f"plan_{k}"] = float(v)
        return out
