"""Application-profile jobs in ``ddlsched serve`` (docs/live.md "Pollux and Sia in the
service"): a service whose policy schedules only jobs with an application profile (``pollux``,
``sia``, ``sjf-ffs``, ``sjf-bsbf``) takes jobs with an ``app`` and a ``batch_size``, as ``ddlsched
live`` does, and its policy resizes them, moves them across GPU types or shares GPUs.

Its jobs come after the start, so the profiles are read once, at the start: every application
of the profiles directory (or the built-in ones) that runs on the cluster — the others are
named, with the reason, when a job asks for one. A submission is checked against them in the
HTTP thread (unknown application, missing batch, a batch the profiles do not cover) and
refused with one line; the engine's executor learns each job as the loop takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ...backends.profile import (
    check_job_batches,
    default_applications,
    load_job_applications,
)
from ...core.job import JobSpec
from ...errors import InputError, quote
from ..profile import LiveProfileBackend, LiveProfileExecutor
from .engine import ServiceSimulator

if TYPE_CHECKING:  # pragma: no cover
    from ...backends.base import Progress
    from ...core.cluster import Cluster
    from ...core.protocols import SchedulingPolicy
    from ...core.state import JobState
    from ...policies.plugins import PolicyOrigin
    from ...settings import Settings

__all__ = ["ServiceProfileBackend", "ServiceProfileExecutor", "profile_service"]


def profile_service(policy: str) -> bool:
    """Whether a service of ``policy`` takes application-profile jobs: its built-in policy
    runs only those (Pollux, Sia) or shares GPUs (SJF-FFS, SJF-BSBF: live trace jobs hold a
    GPU each). Other policies, and plugins, take trace jobs."""
    from ...policies.plugins import PROFILE_JOBS, TRACE_JOBS, builtin_policies_for, policy_entry

    name = policy.lower()
    if name not in builtin_policies_for(PROFILE_JOBS):
        return False
    entry = policy_entry(name)
    return name not in builtin_policies_for(TRACE_JOBS) or bool(entry and entry.shares_gpus)


class ServiceProfileExecutor(LiveProfileExecutor):
    """``LiveProfileExecutor`` of the service: jobs are added while it runs, and the reason
    of a stop (a cancel, a preemption) is the processes' executor's."""

    @property
    def intent(self) -> str | None:
        return self.procs.intent

    @intent.setter
    def intent(self, value: str | None) -> None:
        self.procs.intent = value

    def job_added(self, job: JobState) -> None:
        """The service's engine took a new job: its profile run."""
        self.add_run(job)


def _catalogue_spec(app: str) -> JobSpec:
    from ...workloads.trace_formats import placeholder_model

    return JobSpec(0, 0.0, 1, 0, placeholder_model(app), application=app, batch_size=1)


class ServiceProfileBackend(LiveProfileBackend):
    """The service's backend for application-profile jobs: a ``ServiceSimulator`` over a
    ``ServiceProfileExecutor``, the profiles read at the start."""

    name = "live-service-profile"

    def engine(self) -> type[ServiceSimulator]:
        return ServiceSimulator

    def executor(self, apps: dict, **options: object) -> ServiceProfileExecutor:  # type: ignore[override]
        return ServiceProfileExecutor(apps, self.procs, **options)

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
    ) -> ServiceSimulator:
        from ...perf.typed_profiles import profile_types

        defaults, where = default_applications(settings)
        layout = profile_types(settings.profiles) if settings.profiles else {}
        names = sorted(set(defaults) | {a for a, types in layout.items() if types})
        #: application → why it cannot run on this cluster (said when a job asks for it)
        self.unavailable: dict[str, str] = {}
        measured = replace(settings, ground_truth="measured")  # a check: nothing fitted
        runnable = []
        for a in names:
            spec = _catalogue_spec(a)
            try:
                load_job_applications(cluster, [spec], measured, defaults)
            except InputError as e:
                self.unavailable[a] = e.message
            else:
                runnable.append(spec)
        apps, type_apps, where = load_job_applications(cluster, runnable, settings, defaults)
        self.apps, self.type_apps, self.where = apps, type_apps, where
        self.policy, self.settings = policy, settings
        sim = self.assemble(
            cluster, [], policy, settings, apps, type_apps, seed, progress, origin, builtin
        )
        assert isinstance(sim, ServiceSimulator)
        return sim

    def check_jobs(self, specs: Sequence[JobSpec]) -> None:
        """A submission's jobs run on the profiles read at the start (``InputError``
        naming the job and the field otherwise); called by the HTTP thread, reads only."""
        for i, s in enumerate(specs):
            a = s.application
            if a not in self.apps:
                why = self.unavailable.get(a)
                known = ", ".join(sorted(self.apps)) or "none"
                raise InputError(
                    f"job {i}: application {quote(a)} "
                    + (
                        f"cannot run on this service's cluster: {why}"
                        if why
                        else f"has no profile in {self.where}; profiles: {known}"
                    ),
                    source="request",
                    field="app",
                )
        try:
            check_job_batches(
                specs, self.apps, self.type_apps, self.where, self.policy, self.settings
            )
        except InputError as e:
            raise InputError(e.message, source="request", field="batch_size") from None
