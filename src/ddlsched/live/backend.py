"""Live jobs as a backend (docs/live.md): the engine on the wall clock (``RealtimeSimulator``)
with the ``LiveExecutor``; the policies registered for trace jobs run on it unchanged. It is
chosen by ``ddlsched live`` (``build_simulator(..., backend=LiveBackend(...))``), never picked
from a workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..backends.base import Backend, Progress
from ..core.job import JobSpec
from ..core.protocols import SchedulingPolicy
from ..policies.plugins import TRACE_JOBS
from ..settings_scope import LIVE, RunScope
from .executor import EventLog, LiveExecutor
from .launch import Launcher

if TYPE_CHECKING:  # pragma: no cover
    from ..core.cluster import Cluster
    from ..core.realtime import RealtimeSimulator
    from ..policies.plugins import PolicyOrigin, Registered
    from ..settings import Settings
    from .jobfile import LiveJob


class LiveBackend(Backend):
    """Real processes through a ``Launcher``; one job per GPU (no sharing yet)."""

    name = "live"
    job_kind = TRACE_JOBS
    sections = {LIVE: ("policy",)}

    def __init__(
        self,
        launcher: Launcher,
        jobs: Mapping[int, LiveJob],
        run_dir: Path,
        *,
        grace: float = 10.0,
        poll_interval: float = 0.2,
        log: EventLog | None = None,
        cwd: str | None = None,
        launcher_name: str = "",
    ) -> None:
        self.launcher = launcher
        self.live_jobs = jobs
        self.run_dir = run_dir
        self.grace = grace
        self.poll_interval = poll_interval
        self.log = log
        self.cwd = cwd
        self.launcher_name = launcher_name
        self.executor: LiveExecutor | None = None

    def accepts(
        self, jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings
    ) -> bool:
        return False  # chosen explicitly

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        out = super().resolved(scope, settings)
        if self.launcher_name:
            out["launcher"] = self.launcher_name
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
    ) -> RealtimeSimulator:
        from ..core.realtime import RealtimeSimulator

        self.executor = LiveExecutor(
            self.launcher,
            self.live_jobs,
            self.run_dir,
            grace=self.grace,
            cwd=self.cwd,
            log=self.log,
        )
        return RealtimeSimulator(
            cluster,
            jobs,
            policy,
            self.executor,
            seed=seed,
            max_jobs_per_gpu=1,
            restart_delay=0.0,
            progress=progress,
            policy_origin=origin,
            builtin_policy=builtin,
            poll_interval=self.poll_interval,
        )
