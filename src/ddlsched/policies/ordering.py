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


#: orderings by name (``register_ordering`` adds to it)
ORDERINGS: dict[str, Ordering] = {"fifo": fifo, "srsf": srsf}
_BUILTIN = frozenset(ORDERINGS)


def register_ordering(name: str, key: Ordering, *, replace: bool = False) -> Ordering:
    """Make ``name`` an ordering for ``compose(ordering=name)`` and ``ddlsched list``:
    ``key(job, sim)`` returns a tuple, smaller first. Returns ``key`` (decorator use)."""
    from .naming import new_part_name

    if not callable(key):
        raise TypeError(f"an ordering is a function (job, sim) -> tuple, got {key!r}")
    ORDERINGS[new_part_name("ordering", name, ORDERINGS, _BUILTIN, replace)] = key
    return key
