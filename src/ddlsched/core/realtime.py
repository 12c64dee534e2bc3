"""The engine on a wall clock (live mode): the same ``Simulator`` — queue, GPU bookkeeping,
policy calls, rounds — but time is the real time since the start of the run, and jobs
progress outside it (real processes), reported by an executor that ``Polls``.

Like SimPy's ``RealtimeEnvironment``, another clock is a subclass, not a flag: events due at
time t run once the wall clock reaches t (arrivals, policy rounds); between them the engine
sleeps at most ``poll_interval`` seconds and asks the executor what happened.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any

from .protocols import Polls
from .simulator import Simulator


class RealtimeSimulator(Simulator):
    """``Simulator`` whose clock is the wall clock (seconds since ``run`` started)."""

    guards_stalls = False

    def __init__(
        self,
        *args: Any,
        poll_interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.executor, Polls):
            raise TypeError(f"a real-time run needs an executor that polls, not {self.executor!r}")
        self.poll_interval = poll_interval
        self._clock = clock
        self._sleep = sleep
        self._t0: float | None = None

    def elapsed(self) -> float:
        """Seconds of wall time since the run started (0 before)."""
        return 0.0 if self._t0 is None else self._clock() - self._t0

    def _loop(self) -> int:
        """Run due events, poll the executor, call the policy and settle, then sleep until the
        next event or ``poll_interval``; until every job has finished."""
        heap = self._heap
        executor = self.executor
        assert isinstance(executor, Polls)
        self._t0 = self._clock()
        count = 0
        while self.finished < len(self.jobs):
            now = self.elapsed()
            while heap and heap[0][0] <= now:
                _, _, handler, args = heapq.heappop(heap)
                self.now = max(self.now, now)
                handler(*args)
                count += 1
            self.now = max(self.now, self.elapsed())
            executor.poll()
            if self._dirty:
                self._policy_pass()
            self.executor.settle()
            if self.finished >= len(self.jobs):
                break
            wait = self.poll_interval
            if heap:
                wait = min(wait, heap[0][0] - self.elapsed())
            if wait > 0:
                self._sleep(wait)
        return count
