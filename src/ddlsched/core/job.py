"""Jobs as immutable input (SPEC §2). Runtime state lives in the engine, not here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..perf.model_profile import ModelProfile  # defined in perf (it is a cost model), kept here too

if TYPE_CHECKING:  # pragma: no cover
    from ..workloads.trace_formats import GavelPairs


@dataclass(frozen=True)
class JobSpec:
    """One training job: gang of ``num_gpus`` workers running ``iterations`` iterations.

    Jobs of an application-profile workload (Luo, Pollux) name their ``application`` and total
    ``batch_size`` and run for the application's epochs instead (``iterations`` = 0); ``name`` is
    the workload file's job name where it has one.

    Jobs imported from a job trace (Philly, Gavel, Tiresias formats) carry a measured wall-clock
    ``duration`` in seconds (> 0) on ``num_gpus`` dedicated GPUs instead of a performance
    model; 0 means "not a duration job". ``user`` and ``queue`` (virtual cluster) are a trace's
    optional tenant labels, kept for policies and reports that group by tenant.
    """

    job_id: int
    arrival: float
    num_gpus: int
    iterations: int
    model: ModelProfile
    application: str = ""
    batch_size: int = 0
    name: str = ""
    duration: float = 0.0
    user: str = ""
    queue: str = ""
    #: a duration job's seconds alone on ``num_gpus`` GPUs of each type (GPU type → seconds;
    #: ``inf``: it cannot run there), e.g. from Gavel's per-type throughputs; empty: the
    #: ``duration`` ÷ the GPU type's speed factor (``Server.speed``)
    type_durations: tuple[tuple[str, float], ...] = ()
    #: a Gavel-trace job's measured co-location table (Gavel's throughputs file, read with the
    #: trace): its slowdown next to another Gavel job on a shared GPU, keyed by (``model.name``,
    #: ``num_gpus``); None: a shared GPU slows it by the run's ``interference`` ratio
    #: (docs/models.md "Co-location on shared GPUs"). Not part of equality or hashing.
    colocation: GavelPairs | None = field(default=None, compare=False, repr=False)
    #: seconds without progress at each restart of this job (GPUs held), e.g. the start-up a
    #: live run measured for it (``ddlsched replay``); None: the run's ``restart_delay``
    restart_delay: float | None = None
    #: seconds a preempted job keeps its GPUs after the stop request (checkpoint and exit)
    #: before they are free; None: the run's ``stop_delay`` (trace jobs)
    stop_delay: float | None = None
    #: the job's priority in its queue (a run with ``--queues``): an integer or the name of a
    #: WorkloadPriorityClass; "": 0 (Kueue's default)
    priority: str = ""
    #: Sia's job category (its workload CSV's optional ``category``): ``rigid`` (fixed GPU
    #: count and batch), ``scale-gpus`` (fixed batch), ``adaptive``; "": not given (Sia's
    #: simulator then treats the job as adaptive). For policies; the engine ignores it
    category: str = ""

    def duration_on(self, gpu_type: str, speed: float = 1.0) -> float | None:
        """Seconds alone on ``num_gpus`` GPUs of ``gpu_type`` (speed factor ``speed``): the
        job's own table when it has one (type names compared case-insensitively; None if the
        table lacks the type), else ``duration / speed``."""
        if not self.type_durations:
            return self.duration if speed == 1.0 else self.duration / speed
        want = gpu_type.casefold()
        for name, seconds in self.type_durations:
            if name.casefold() == want:
                return seconds
        return None

    @property
    def memory_mb(self) -> float:
        return self.model.memory_mb
