"""Job orderings for the waiting queue (SPEC §5 "Ordering"). Smaller key = served first."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState

Ordering = Callable[["JobState", "Simulator"], tuple]


def fifo(job: JobState, sim: Simulator) -> tuple:
    """First in, first out: by arrival, then job id."""
    return (job.arrival, job.job_id)


def srsf(job: JobState, sim: Simulator) -> tuple:
    """Shortest remaining service first: GPUs × remaining compute time.

    Wang sorts the queue with E_J = 0 (communication unknown before placement).
    """
    spec = job.spec
    return (spec.num_gpus * job.iterations_left * spec.model.t_compute, job.arrival, job.job_id)


ORDERINGS: dict[str, Ordering] = {"fifo": fifo, "srsf": srsf}
