"""Live jobs as a backend (docs/live.md): the engine on the wall clock (``RealtimeSimulator``)
with the ``LiveExecutor``; the policies registered for trace jobs run on it unchanged. It is
chosen by ``ddlsched live`` (``build_simulator(..., backend=LiveBackend(...))``), never picked
from a workload."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..backends.base import Backend, Progress
from ..core.job import JobSpec
from ..core.protocols import SchedulingPolicy
from ..errors import InputError
from ..policies.plugins import TRACE_JOBS
from ..settings_scope import LIVE, RunScope
from .executor import LiveExecutor

if TYPE_CHECKING:  # pragma: no cover
    from ..core.cluster import Cluster
    from ..core.realtime import RealtimeSimulator
    from ..policies.plugins import PolicyOrigin, Registered
    from ..settings import Settings


class LiveParts:
    """What both live backends share: the processes' executor ``ddlsched live`` builds
    (launcher, jobs, run dir), the engine's poll interval, the launcher's name in
    ``resolved``; never picked from a workload. Put before the ``Backend`` base."""

    def __init__(
        self, procs: LiveExecutor, *, poll_interval: float = 0.2, launcher_name: str = ""
    ) -> None:
        self.procs = procs
        self.poll_interval = poll_interval
        self.launcher_name = launcher_name

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return False  # chosen explicitly

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        out = super().resolved(scope, settings)  # type: ignore[misc]
        if self.launcher_name:
            out["launcher"] = self.launcher_name
        return out

    def realtime(
        self,
        cluster: Cluster,
        jobs: Sequence[JobSpec],
        policy: SchedulingPolicy,
        seed: int,
        progress: Progress,
        origin: PolicyOrigin | None,
        builtin: bool,
    ) -> RealtimeSimulator:
        """The real-time engine over these processes: one job per GPU, no modelled restart
        cost (a restart costs what the processes take)."""
        return self.engine()(
            cluster,
            jobs,
            policy,
            self.procs,
            seed=seed,
            max_jobs_per_gpu=1,
            restart_delay=0.0,
            progress=progress,
            policy_origin=origin,
            builtin_policy=builtin,
            poll_interval=self.poll_interval,
        )

    def engine(self) -> type[RealtimeSimulator]:
        """The real-time engine class this backend builds (the service's is another)."""
        from ..core.realtime import RealtimeSimulator

        return RealtimeSimulator


class LiveBackend(LiveParts, Backend):
    """Real processes through a ``Launcher``; one job per GPU."""

    name = "live"
    job_kind = TRACE_JOBS
    sections = {LIVE: ("policy",)}

    def runs_policy(self, entry: Registered) -> bool:
        return not entry.shares_gpus  # simulated trace jobs share GPUs; these processes do not

    def make_policy(
        self, entry: Registered, settings: Settings, placement: str | None
    ) -> SchedulingPolicy:
        if not self.runs_policy(entry):
            raise InputError(
                f"policy {entry.name!r} shares GPUs, which live jobs without an `app` do not "
                "(one job per GPU); give every job an `app` to run it",
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
        return self.realtime(cluster, jobs, policy, seed, progress, origin, builtin)
