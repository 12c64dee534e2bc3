"""Model jobs under an offline planner (Yu et al., Alg. 1–3): the plan executed at job level
under Yu's RAR model (Eq. 6–8); one job per GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from ..core.protocols import SchedulingPolicy
from ..errors import InputError
from ..policies.plugins import MODEL_JOBS
from ..settings_scope import PLANNER, RunScope
from .base import Backend, Progress

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..core.cluster import Cluster
    from ..core.simulator import Simulator
    from ..policies.plugins import PolicyOrigin, Registered


class PlannedBackend(Backend):
    """Model jobs whose built-in policy places jobs itself (sjf-bco, yu-ff, yu-ls, yu-rand)."""

    name = "planned"
    job_kind = MODEL_JOBS
    sections = {PLANNER: ("model", "rar", "planner", "policy", "workload")}

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return entry is not None and entry.places_jobs and MODEL_JOBS in entry.kinds

    def check(self, jobs: Sequence[JobSpec], settings: Settings) -> None:
        if settings.model not in ("auto", "rar"):
            raise InputError(
                "planners run under Yu's RAR model; use model=auto or model=rar",
                source="--set",
                field="model",
            )

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        return {**super().resolved(scope, settings), "model": "rar", "granularity": "job"}

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

        try:
            return Simulator(
                cluster,
                jobs,
                policy,
                JobExecutor(RarRate(settings.rar, settings.time_slots)),
                seed=seed,
                max_jobs_per_gpu=1,
                progress=progress,
                builtin_policy=True,
            )
        except PlanningError as e:
            raise InputError(str(e), source="--set", field="horizon") from None
