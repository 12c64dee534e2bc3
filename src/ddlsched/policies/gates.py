"""Communication gates (SPEC §5): may a ready all-reduce start now?

A gate sees the iteration-level executor (running all-reduces per server) and the job's run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..core.taskexec import Run, TaskExecutor


class CommGate(Protocol):
    """Decides whether a ready all-reduce may start now.

    ``blocker`` returns −1 to start, else the server whose all-reduces hold it back. The engine
    asks again when an all-reduce on that server ends, or one starts on a server listed by
    ``start_watch``; a gate must name every change that could turn its "no" into a "yes".
    """

    name: str

    def blocker(self, ex: TaskExecutor, run: Run) -> int: ...

    def start_watch(self, ex: TaskExecutor, run: Run, block: int) -> Sequence[int]: ...


@dataclass(frozen=True)
class SrsfN:
    """SRSF(n): start only if every server of the job has fewer than n running all-reduces.

    SRSF(1) avoids all contention; SRSF(2) allows 2-way contention without further checks.
    """

    n: int = 1

    @property
    def name(self) -> str:
        return f"srsf{self.n}"

    def blocker(self, ex: TaskExecutor, run: Run) -> int:
        comms = ex.server_comms
        n = self.n
        for s in run.servers:
            if len(comms[s]) >= n:
                return s
        return -1

    def start_watch(self, ex: TaskExecutor, run: Run, block: int) -> Sequence[int]:
        return ()  # more all-reduces never open SRSF(n)


@dataclass(frozen=True)
class AdaDual:
    """AdaDUAL (Wang Alg. 2): accept 2-way contention only when Theorem 2 says it pays.

    No running all-reduce on the job's servers → start. Exactly one (on the busiest server) →
    start iff M_new / M_old < b / (2(b + η)), M_old being its *remaining* bytes (Theorem 1:
    otherwise wait for it to finish). Two or more → wait. As in Alg. 2 lines 2–7, M_old is taken
    from the first server (in the job's server order) that has the maximum count.
    """

    name: str = "adadual"

    def blocker(self, ex: TaskExecutor, run: Run) -> int:
        comms = ex.server_comms
        max_tasks = 0
        busiest = -1
        for s in run.servers:
            k = len(comms[s])
            if k > max_tasks:
                max_tasks = k
                busiest = s
        if max_tasks == 0:
            return -1
        if max_tasks > 1:
            return busiest
        # one running all-reduce: Theorem 2's test against its remaining bytes; if it fails,
        # the ratio only grows as that all-reduce progresses, so wait for it to end
        m_old = ex.remaining_bytes(comms[busiest][0])
        if m_old > 0 and ex.message_bytes(run) / m_old < ex.model.adadual_threshold:
            return -1
        return busiest

    def start_watch(self, ex: TaskExecutor, run: Run, block: int) -> Sequence[int]:
        """With one running all-reduce on the refusing server (the first busiest), a start on a
        server earlier in the job's order makes that server the first busiest and its new
        all-reduce the reference task of the test. With two or more, only ends can help."""
        if len(ex.server_comms[block]) != 1:
            return ()
        servers = run.servers
        return servers[: servers.index(block)]


#: gates by name (``register_gate`` adds to it); "none" starts every all-reduce at once
GATES: dict[str, CommGate | None] = {
    "none": None,
    "srsf1": SrsfN(1),
    "srsf2": SrsfN(2),
    "srsf3": SrsfN(3),
    "adadual": AdaDual(),
}
_BUILTIN = frozenset(GATES)


def register_gate(name: str, gate: CommGate, *, replace: bool = False) -> CommGate:
    """Make ``name`` a gate for ``compose(gate=name)`` and ``ddlsched list``: ``gate`` is an
    object with ``blocker(executor, run)`` (shared by the policies that name it, as the
    built-in gates are). Returns ``gate``."""
    from .naming import new_part_name

    if not callable(getattr(gate, "blocker", None)):
        raise TypeError(f"a gate has blocker(executor, run), got {gate!r}")
    GATES[new_part_name("gate", name, GATES, _BUILTIN, replace)] = gate
    return gate
