"""Live model jobs under an offline planner (Yu et al.'s SJF-BCO and its §7 baselines
yu-ff, yu-ls, yu-rand): the plan is made from the job file's model fields (iterations,
size_mb, t_forward, t_backward) under Yu's RAR model on the run's cluster, exactly as
``ddlsched run`` makes it, and real processes execute it — each job starts on its planned
GPUs, in the plan's order, once it has arrived and those GPUs are free (``PlanPolicy``). The
model plans; the processes decide when a job has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..backends.planned import PlannedBackend
from ..errors import InputError
from ..settings_scope import LIVE, RunScope
from .backend import LiveParts

if TYPE_CHECKING:  # pragma: no cover
    from ..backends.base import Progress
    from ..core.cluster import Cluster
    from ..core.job import JobSpec
    from ..core.protocols import SchedulingPolicy
    from ..core.realtime import RealtimeSimulator
    from ..policies.plugins import PolicyOrigin, Registered
    from ..settings import Settings
    from .jobfile import LiveJob


class LivePlannedBackend(LiveParts, PlannedBackend):
    """Model jobs, real processes: the planners' plan executed live; one job per GPU."""

    name = "live-planned"
    sections = {LIVE: ("model", "rar", "planner", "policy")}

    def check(self, jobs: Sequence[JobSpec], settings: Settings) -> None:
        if settings.model not in ("auto", "rar"):
            raise InputError(
                "live, real processes execute the plan, which is made under Yu's RAR model: "
                "model=auto or rar (model=wang times a simulated execution)",
                source="--set",
                field="model",
            )

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        return RunScope(LIVE, policy)

    def runs_policy(self, entry: Registered) -> bool:
        return entry.places_jobs  # the offline planners; Wang's presets decide per iteration

    def make_policy(
        self, entry: Registered, settings: Settings, placement: str | None
    ) -> SchedulingPolicy:
        if not self.runs_policy(entry):
            raise InputError(
                f"policy {entry.name!r} decides per iteration in simulation; live model jobs "
                "run the offline planners (sjf-bco, yu-ff, yu-ls, yu-rand) — Wang's gates "
                "run live through --gate (docs/live.md)",
                field="policy",
            )
        return super().make_policy(entry, settings, placement)

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
    ) -> RealtimeSimulator:
        from ..planning import PlanningError

        try:
            return self.realtime(cluster, jobs, policy, seed, progress, origin, builtin)
        except PlanningError as e:
            raise InputError(str(e), source="--set", field="horizon") from None


def to_model_specs(jobs: list[LiveJob], time_scale: float) -> list[JobSpec]:
    """Live jobs with model fields as the engine's model jobs (every job needs them)."""
    from ..core.job import JobSpec
    from ..perf.model_profile import ModelProfile

    out = []
    for j in jobs:
        if j.iterations is None or j.size_mb is None or j.t_forward is None:
            raise InputError(
                f"job {j.job_id} has no model (iterations, size_mb, t_forward) while others "
                "have one: give every job one (the planners) or none",
                field="iterations",
                line=j.line,
            )
        model = ModelProfile(
            name=f"live-{j.job_id}",
            size_mb=j.size_mb,
            memory_mb=0.0,
            batch_size=j.batch_size or 1,
            t_forward=j.t_forward,
            t_backward=j.t_backward or 0.0,
        )
        out.append(
            JobSpec(
                job_id=j.job_id,
                arrival=j.arrival / time_scale,
                num_gpus=j.gpus,
                iterations=j.iterations,
                model=model,
                batch_size=j.batch_size or 0,
                name=" ".join(j.command)[:80],
            )
        )
    return out
