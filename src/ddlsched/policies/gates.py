"""Communication gates (SPEC §5): may a ready all-reduce start now?

A gate sees the iteration-level executor (running all-reduces per server) and the job's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..core.taskexec import Run, TaskExecutor


class CommGate(Protocol):
    name: str

    def allow(self, ex: TaskExecutor, run: Run) -> bool: ...


@dataclass(frozen=True)
class SrsfN:
    """SRSF(n): start only if every server of the job has fewer than n running all-reduces.

    SRSF(1) avoids all contention; SRSF(2) allows 2-way contention without further checks.
    """

    n: int = 1

    @property
    def name(self) -> str:
        return f"srsf{self.n}"

    def allow(self, ex: TaskExecutor, run: Run) -> bool:
        comms = ex.server_comms
        return all(len(comms[s]) < self.n for s in run.servers)


@dataclass(frozen=True)
class AdaDual:
    """AdaDUAL (Wang Alg. 2): accept 2-way contention only when Theorem 2 says it pays.

    No running all-reduce on the job's servers → start. Exactly one (on the busiest server) →
    start iff M_new / M_old < b / (2(b + η)), M_old being its *remaining* bytes (Theorem 1:
    otherwise wait for it to finish). Two or more → wait. As in Alg. 2 lines 2–7, M_old is taken
    from the first server (in the job's server order) that has the maximum count.
    """

    name: str = "adadual"

    def allow(self, ex: TaskExecutor, run: Run) -> bool:
        comms = ex.server_comms
        max_tasks = 0
        old = None
        for s in run.servers:
            c = comms[s]
            if len(c) > max_tasks:
                max_tasks = len(c)
                old = c
        if max_tasks == 0:
            return True
        if max_tasks > 1 or old is None:
            return False
        m_old = ex.remaining_bytes(old[0])
        if m_old <= 0:
            return False  # it ends at this very instant; start right after it
        return ex.message_bytes(run) / m_old < ex.model.adadual_threshold


GATES = {
    "none": None,
    "srsf1": SrsfN(1),
    "srsf2": SrsfN(2),
    "srsf3": SrsfN(3),
    "adadual": AdaDual(),
}
