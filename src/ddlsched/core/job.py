"""Jobs as immutable input (SPEC §2). Runtime state lives in the engine, not here."""

from __future__ import annotations

from dataclasses import dataclass

from ..perf.model_profile import ModelProfile  # defined in perf (it is a cost model), kept here too


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

    @property
    def memory_mb(self) -> float:
        return self.model.memory_mb
