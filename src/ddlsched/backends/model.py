"""Model jobs (Wang et al., Yu et al.) under an online policy: at iteration level (Wang's
task DAG, ``TaskExecutor``) or at job level (``JobExecutor`` with Wang's contention or Yu's
RAR model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from ..core.protocols import GatesAllReduce, SchedulingPolicy
from ..policies.plugins import MODEL_JOBS
from ..settings_scope import ITERATION, JOB_LEVEL, RAR, USER_MODEL, RunScope
from .base import Backend, Progress, builtin_entry, factory_error

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..core.cluster import Cluster
    from ..core.jobexec import JobExecutor
    from ..core.simulator import Simulator
    from ..core.taskexec import TaskExecutor
    from ..policies.plugins import PolicyOrigin, Registered


class _OnlineModelBackend(Backend):
    """What both model-job backends share: presets built with their placement, the
    placement in the settings scope, ``max_jobs_per_gpu`` and ``restart_delay``."""

    job_kind = MODEL_JOBS

    def make_policy(
        self, entry: Registered, settings: Settings, placement: str | None
    ) -> SchedulingPolicy:
        try:
            return entry.factory(settings, placement)
        except KeyError as e:
            raise factory_error(e) from None

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        builtin = builtin_entry(policy)
        kind = self.scope_kind(settings)
        return RunScope(kind, policy, placement or (builtin.placement if builtin else None))

    def scope_kind(self, settings: Settings) -> str:
        return self.scopes[0]

    def executor(
        self, policy: SchedulingPolicy, settings: Settings, jobs: Sequence[JobSpec] = ()
    ) -> TaskExecutor | JobExecutor:
        raise NotImplementedError

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        out = super().resolved(scope, settings)
        rar = scope.kind == RAR
        out["model"] = "rar" if rar else "wang"
        out["granularity"] = "job" if rar or scope.kind == JOB_LEVEL else "iteration"
        return out

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
        from ..core.simulator import Simulator

        return Simulator(
            cluster,
            jobs,
            policy,
            self.executor(policy, settings, jobs),
            seed=seed,
            max_jobs_per_gpu=settings.max_jobs_per_gpu or None,
            restart_delay=settings.restart_delay,
            progress=progress,
            policy_origin=origin,
            builtin_policy=builtin,
        )


class IterationBackend(_OnlineModelBackend):
    """Model jobs at iteration level (the default): Wang's task DAG with contention."""

    name = "model-iteration"
    sections = {
        ITERATION: ("engine", "model", "wang", "iteration", "placement", "policy", "workload")
    }

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return True  # the last resort: any model jobs

    def executor(
        self, policy: SchedulingPolicy, settings: Settings, jobs: Sequence[JobSpec] = ()
    ) -> TaskExecutor:
        """:func:`iteration_executor` with the policy's gate."""
        gate = policy.gate if isinstance(policy, GatesAllReduce) else None
        return iteration_executor(settings, gate, jobs)


def iteration_executor(
    settings: Settings, gate: object, jobs: Sequence[JobSpec] = ()
) -> TaskExecutor:
    """Wang's iteration-level executor for ``settings`` with ``gate`` (None: all-reduces start
    when ready): the compiled loop where it applies (``compiled``, a built-in gate, numba, a run
    that ends inside the kernel's exact time range, M unscaled), else the Python loop."""
    from ..core.taskexec import TaskExecutor

    kernel_gate = _kernel_gate(gate)
    if settings.compiled and kernel_gate is not None and not settings.ring_bytes:
        from ..core.compiledtask import CompiledTaskExecutor, compiled_available, fits

        if compiled_available() and fits(jobs, settings.contention):
            return CompiledTaskExecutor(
                settings.contention,
                gate,  # type: ignore[arg-type]
                settings.iterations_per_task,
                settings.shortcuts,
                gate_kind=kernel_gate[0],
                gate_n=kernel_gate[1],
            )
    return TaskExecutor(
        settings.contention,
        gate,  # type: ignore[arg-type]
        settings.iterations_per_task,
        settings.shortcuts,
        ring_bytes=settings.ring_bytes,
    )


def _kernel_gate(gate: object) -> tuple[str, int] | None:
    """The compiled loop's name for a built-in gate (kind, n), None for any other gate (a
    user's gate, or a subclass, runs in the Python loop)."""
    from ..policies.gates import AdaDual, SrsfN

    if gate is None:
        return "none", 0
    if type(gate) is SrsfN:
        return "srsf", gate.n
    if type(gate) is AdaDual:
        return "adadual", 0
    return None


class JobLevelBackend(_OnlineModelBackend):
    """Model jobs at job level under a registered performance model (``core/ratemodels.py``):
    ``model=rar`` (Yu's RAR model for any online policy), ``granularity=job`` (Wang's
    contention as fluid rates), or ``model=NAME`` of a user's ``register_model``."""

    name = "model-job-level"
    _BASE = ("engine", "model", "placement", "policy", "workload")
    #: Wang's model reads ``wang``, Yu's ``rar``; a user model also the sections it registered
    #: (added by ``scope``)
    sections = {
        JOB_LEVEL: (*_BASE, "wang"),
        RAR: (*_BASE, "rar"),
        USER_MODEL: _BASE,
    }

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return settings.model not in ("auto", "wang") or settings.granularity != "iteration"

    def scope_kind(self, settings: Settings) -> str:
        if settings.model == "rar":
            return RAR
        return JOB_LEVEL if settings.model in ("auto", "wang") else USER_MODEL

    def scope(
        self,
        jobs: Sequence[JobSpec],
        policy: str | None,
        policy_object: object,
        placement: str | None,
        settings: Settings,
    ) -> RunScope:
        from dataclasses import replace

        from ..core.ratemodels import model_entry

        scope = super().scope(jobs, policy, policy_object, placement, settings)
        if scope.kind != USER_MODEL:
            return scope
        entry = model_entry(settings.model)
        extra = entry.sections if entry is not None else ()
        return replace(scope, sections=(*self._BASE, *extra))

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        out = super().resolved(scope, settings)
        if scope.kind == USER_MODEL:
            out["model"] = settings.model.lower()
        return out

    def executor(
        self, policy: SchedulingPolicy, settings: Settings, jobs: Sequence[JobSpec] = ()
    ) -> JobExecutor:
        from ..core.jobexec import JobExecutor
        from ..core.ratemodels import model_entry

        name = "wang" if settings.model == "auto" else settings.model
        entry = model_entry(name)
        assert entry is not None  # Settings.check accepts registered names only
        return JobExecutor(entry.factory(settings))
