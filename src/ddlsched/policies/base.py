"""The online policy: an ordering + a placement (+ a gate the executor applies)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .gates import CommGate
from .ordering import Ordering
from .placement import Placement

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator


@dataclass
class Policy:
    """Non-preemptive online policy (Wang Alg. 3 lines 5–13).

    At every instant where the queue or resources changed, walk the queue in ``ordering`` order
    and start each job that ``placement`` can place (jobs that do not fit are skipped: backfill).
    ``gate`` is applied by the iteration-level executor to every ready all-reduce.
    Subclasses may override ``on_round`` (called every ``interval`` seconds) to preempt or resize.
    """

    name: str
    ordering: Ordering
    placement: Placement
    gate: CommGate | None = None
    interval: float | None = None
    backfill: bool = True

    def attach(self, sim: Simulator) -> None:
        """Called once when the simulation is built."""

    def schedule(self, sim: Simulator) -> None:
        for job in sorted(sim.queue, key=lambda j: self.ordering(j, sim)):
            gpus = self.placement.select(job, sim)
            if gpus is not None:
                sim.start(job, gpus)
            elif not self.backfill:
                break

    def on_round(self, sim: Simulator) -> None:
        """Periodic hook (Tiresias/Pollux rounds); the default does nothing."""
