"""Live application-profile jobs: the policies that need a job's performance model (sjf,
sjf-ffs, sjf-bsbf, pollux, and fifo/tiresias on such jobs) schedule real processes.

``LiveProfileExecutor`` is the simulator's ``ProfileExecutor`` — the application profile
gives the estimates the policies ask for (remaining time at a configuration, batch
configurations, memory share; Pollux's goodput) and follows each job's configuration as it
starts, stops and is resized — while real processes decide when a job has finished: the
model's own completion ends nothing. An elastic policy's batch reaches the job as
``DDLSCHED_BATCH_SIZE``; a sharing policy's two jobs on one GPU each claim half of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends.profile import ProfileBackend
from ..core.profileexec import ProfileExecutor
from ..core.protocols import ObservesMeasured
from ..errors import InputError
from .backend import LiveParts
from .executor import LiveExecutor

if TYPE_CHECKING:  # pragma: no cover
    from ..core.job import JobSpec
    from ..core.profileexec import _Run
    from ..core.realtime import RealtimeSimulator
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from ..settings import Settings
    from ..settings_scope import RunScope
    from .jobfile import LiveJob


class LiveProfileExecutor(ProfileExecutor):
    """``ProfileExecutor`` for the estimates, a ``LiveExecutor`` for the processes."""

    def __init__(self, applications: dict, procs: LiveExecutor, **options: object) -> None:
        super().__init__(applications, **options)  # type: ignore[arg-type]
        self.procs = procs
        #: per job, the configuration (placement, micro-batch) last measured for its agent
        self._measured: dict[int, tuple] = {}
        #: jobs whose model has said they are done (``model_done`` logged)
        self._model_done: set[int] = set()
        procs.on_done = self._process_done
        procs.batch_of = self._batch

    def attach(self, sim: Simulator) -> None:
        super().attach(sim)
        self.procs.attach(sim)

    def start(self, job: JobState, delay: float) -> None:
        super().start(job, delay)  # the configuration (batch, micro-batch) is chosen here
        self.procs.start(job, delay)

    def stop(self, job: JobState) -> bool:
        pending = self.procs.stop(job)  # a request: the GPUs drain until the processes exit
        super().stop(job)
        return pending

    def poll(self) -> None:
        """The processes' exits and reports; a running job's measured seconds per iteration
        go to its agent (Pollux refits its goodput model), once per configuration."""
        self.procs.poll()
        agent = self.agent
        if not isinstance(agent, ObservesMeasured):
            return
        for job in self.sim.running.values():
            r = self.runs[job.job_id]
            if r.cfg is None:
                continue
            key = (r.placement, r.cfg.a)
            if self._measured.get(job.job_id) == key:
                continue
            step = self.procs.step_time(job)
            if step is None:
                continue
            self._measured[job.job_id] = key
            recorded = agent.observe_measured(r, step)
            if self.procs.log is not None:
                # the profile of the GPU type the job runs on, where the type has its own
                own = r.typed.get(r.cfg_type) if r.cfg_type is not None else None
                typed = {} if own is None else {"gpu_type": r.cfg_type}
                profile_step = (own or r.app).step_time(r.placement, r.cfg.a)[0]
                self.procs.log.write(
                    self.sim.now,
                    "measured",
                    job.job_id,
                    placement=list(r.placement),
                    local_batch=r.cfg.a,
                    batch=r.cfg.M,
                    iteration_s=step,
                    step_s=recorded[0],
                    sync_s=recorded[1],
                    profile_step_s=profile_step,
                    **typed,
                )

    def _rebatch(self, r: _Run) -> bool:
        """A running job keeps the batch its processes were started with
        (``DDLSCHED_BATCH_SIZE``): a policy's re-tune between rounds or epochs (Pollux's,
        Sia's) would change only the model's configuration, not the processes', and the
        measured iteration would be read as another batch's. A new batch takes a restart."""
        return False

    def _finish(self, r: _Run, at: float) -> None:
        """The model says the job is done; the job's processes decide (they keep running),
        the model stays at its end (``_model_ended``): logged once per job."""
        self._model_ended(r)
        if self.procs.log is not None and r.job.job_id not in self._model_done:
            self._model_done.add(r.job.job_id)
            self.procs.log.write(self.sim.now, "model_done", r.job.job_id)

    def _process_done(self, job: JobState) -> None:
        r = self.runs[job.job_id]
        if r.running:
            if self.semantics == "events":
                self._advance(r, self.sim.now)
            self._leave(r)
        self.sim.job_finished(job)

    def _batch(self, job: JobState) -> int | None:
        """The total batch the job's configuration trains with (R · micro-batch · steps)."""
        r = self.runs[job.job_id]
        return r.cfg.M if r.cfg is not None else job.spec.batch_size or None


class LiveProfileBackend(LiveParts, ProfileBackend):
    """Live jobs that name an application profile (``app`` in the job file)."""

    name = "live-profile"

    def check(self, jobs: object, settings: Settings) -> None:  # type: ignore[override]
        if settings.semantics != "events":
            raise InputError(
                "live runs are in events semantics (real time)", source="--set", field="semantics"
            )

    def resolved(self, scope: RunScope, settings: Settings) -> dict[str, object]:
        out = super().resolved(scope, settings)
        out["jobs"] = "live application-profile jobs"
        return out

    def executor(self, apps: dict, **options: object) -> LiveProfileExecutor:  # type: ignore[override]
        return LiveProfileExecutor(apps, self.procs, **options)

    def simulator(self, *args: object, **options: object) -> RealtimeSimulator:  # type: ignore[override]
        options.pop("semantics", None)
        options.pop("round_interval", None)
        return self.engine()(*args, poll_interval=self.poll_interval, **options)  # type: ignore[arg-type]


def to_profile_specs(jobs: list[LiveJob], time_scale: float) -> list[JobSpec]:
    """Live jobs with an ``app`` as application-profile jobs (their ``batch_size`` needed)."""
    from ..core.job import JobSpec
    from ..workloads.trace_formats import placeholder_model

    out = []
    for j in jobs:
        if not j.app:
            raise InputError(
                f"job {j.job_id} has no app while others have one: give every job an app "
                "(application-profile policies) or none (trace policies)",
                field="app",
                line=j.line,
            )
        if not j.batch_size:
            raise InputError(
                f"job {j.job_id} ({j.app}) needs a batch_size (the total batch it asks for)",
                field="batch_size",
                line=j.line,
            )
        out.append(
            JobSpec(
                job_id=j.job_id,
                arrival=j.arrival / time_scale,
                num_gpus=j.gpus,
                iterations=0,
                model=placeholder_model(j.app),
                application=j.app,
                batch_size=j.batch_size,
                name=" ".join(j.command)[:80],
                queue=j.queue,
                priority=j.priority,
            )
        )
    return out
