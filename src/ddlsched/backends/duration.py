"""Trace jobs with a measured duration (Philly, Gavel …): ``DurationExecutor`` + a job-level
policy; ``restart_delay`` after every preemption and ``stop_delay`` at each (the jobs' own where
they have them). Exclusive GPUs, except under a GPU-sharing policy (sjf-ffs, sjf-bsbf, a policy
declaring ``jobs_per_gpu`` > 1): then up to that many jobs per GPU (``max_jobs_per_gpu`` may
lower or raise it), each slowed by Gavel's measured pairs or the ``interference`` ratio
(docs/models.md "Co-location on shared GPUs")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from ..core.protocols import SchedulingPolicy
from ..errors import InputError
from ..policies.plugins import TRACE_JOBS
from ..settings_scope import DURATION, RunScope
from .base import Backend, Progress, jobs_per_gpu, shares_gpus

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..core.cluster import Cluster
    from ..core.simulator import Simulator
    from ..policies.plugins import PolicyOrigin, Registered


class DurationBackend(Backend):
    """Any job with a duration makes a trace run (every job must then have one)."""

    name = "duration"
    job_kind = TRACE_JOBS
    sections = {DURATION: ("engine", "policy", "workload")}
    #: a sharing run also reads ``interference`` (the profile section's other settings do not
    #: apply to trace jobs: ``settings_scope``)
    _SHARING_SECTIONS = ("engine", "policy", "workload", "profile")

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return any(j.duration > 0 for j in jobs)

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        if not shares_gpus(policy, policy_object):
            return RunScope(DURATION, policy)
        return RunScope(DURATION, policy, shares_gpus=True, sections=self._SHARING_SECTIONS)

    def check(self, jobs: Sequence[JobSpec], settings: Settings) -> None:
        missing = [j.job_id for j in jobs if not j.duration > 0]
        if missing:
            raise InputError(
                f"a workload mixes trace jobs (with a duration) and jobs without one "
                f"(first: job {missing[0]}); give every job a duration or none",
                field="duration",
            )
        if settings.semantics != "events":
            raise InputError(
                "trace (duration) jobs run in events semantics only",
                source="--set",
                field="semantics",
            )

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
        from ..core.durationexec import DurationExecutor
        from ..core.simulator import Simulator

        return Simulator(
            cluster,
            jobs,
            policy,
            DurationExecutor(interference=settings.interference, stop_delay=settings.stop_delay),
            seed=seed,
            max_jobs_per_gpu=jobs_per_gpu(policy, settings),
            restart_delay=settings.restart_delay,
            polls_every=settings.poll_interval,
            progress=progress,
            policy_origin=origin,
            builtin_policy=builtin,
        )
