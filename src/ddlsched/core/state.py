"""Runtime state of a job inside the engine (the input ``JobSpec`` stays immutable)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .job import JobSpec

QUEUED, RUNNING, DONE = "queued", "running", "done"
#: arrived, waiting for its queue's quota (a run with ``--queues``): not in ``sim.queue``
HELD = "held"


@dataclass
class Segment:
    """One uninterrupted run of a job on one placement."""

    job_id: int
    start: float
    end: float
    gpus: tuple[int, ...]


@dataclass(eq=False)
class JobState:
    """What the engine knows about a job while it runs. Policies read it; the engine writes it."""

    spec: JobSpec
    status: str = QUEUED
    gpus: tuple[int, ...] = ()
    servers: tuple[int, ...] = ()
    start: float | None = None  # first start
    finish: float | None = None
    preemptions: int = 0
    segments: list[Segment] = field(default_factory=list)
    #: remaining service (SRSF): GPUs × remaining per-worker time, Wang's L_J.
    service_left: float = 0.0
    #: real iterations still to run
    iterations_left: int = 0
    #: the GPU type its admission holds it to: the type a Kueue flavor of its GPUs is named
    #: after (``--queues`` on a cluster of several types; docs/tenancy.md); None: any type
    flavor_type: str | None = None

    @property
    def job_id(self) -> int:
        return self.spec.job_id

    @property
    def num_gpus(self) -> int:
        return self.spec.num_gpus

    @property
    def arrival(self) -> float:
        return self.spec.arrival

    @property
    def cross_server(self) -> bool:
        return len(self.servers) > 1

    def __repr__(self) -> str:
        return f"JobState(job={self.job_id}, {self.status}, gpus={self.gpus})"
