"""Model jobs under an offline planner (Yu et al., Alg. 1–3): the plan executed at job level
under Yu's RAR model (Eq. 6–8); one job per GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from ..core.protocols import SchedulingPolicy
from ..errors import InputError
from ..policies.plugins import MODEL_JOBS
from ..settings_scope import PLANNER, PLANNER_WANG, RunScope
from .base import Backend, Progress

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..core.cluster import Cluster
    from ..core.simulator import Simulator
    from ..policies.plugins import PolicyOrigin, Registered


class PlannedBackend(Backend):
    """Model jobs whose built-in policy places jobs itself (sjf-bco, yu-ff, yu-ls, yu-rand).
    The plan is always made under Yu's RAR model; ``model=wang`` executes it under Wang's
    iteration-level model instead (each all-reduce timed against those in flight)."""

    name = "planned"
    job_kind = MODEL_JOBS
    _BASE = ("model", "rar", "planner", "policy", "workload")
    sections = {PLANNER: _BASE, PLANNER_WANG: (*_BASE, "wang", "iteration")}

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return entry is not None and entry.places_jobs and MODEL_JOBS in entry.kinds

    def check(self, jobs: Sequence[JobSpec], settings: Settings) -> None:
        if settings.model not in ("auto", "rar", "wang"):
            raise InputError(
                "planners plan under Yu's RAR model and execute the plan under it (model=auto "
                "or rar) or under Wang's iteration-level model (model=wang)",
                source="--set",
                field="model",
            )
        if settings.model == "wang" and settings.time_slots:
            raise InputError(
                "time slots are Yu's clock; with model=wang the plan runs under Wang's",
                source="--set",
                field="time_slots",
            )
        if settings.model == "wang" and settings.granularity != "iteration":
            raise InputError(
                "a plan runs under Wang's model at iteration level only",
                source="--set",
                field="granularity",
            )

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        return RunScope(PLANNER_WANG if settings.model == "wang" else PLANNER, policy)

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        wang = scope.kind == PLANNER_WANG
        return {
            **super().resolved(scope, settings),
            "model": "wang" if wang else "rar",
            "granularity": "iteration" if wang else "job",
        }

    def build(
        self,
        cluster: Cluster,
        jobs: Sequence[JobSpec],
        policy: SchedulingPolicy,
        settings: Settings,
        seed: int,
        progress: Progress,
        origin: PolicyOrigin | None,
        builtin: bool,
    ) -> Simulator:
        from ..core.jobexec import JobExecutor
        from ..core.simulator import Simulator
        from ..perf.rar import RarRate
        from ..planning import PlanningError
        from .model import iteration_executor

        executor = (
            iteration_executor(settings, None, jobs)
            if settings.model == "wang"
            else JobExecutor(RarRate(settings.rar, settings.time_slots))
        )
        try:
            return Simulator(
                cluster,
                jobs,
                policy,
                executor,
                seed=seed,
                max_jobs_per_gpu=1,
                progress=progress,
                builtin_policy=True,
            )
        except PlanningError as e:
            raise InputError(str(e), source="--set", field="horizon") from None
