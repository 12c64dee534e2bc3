"""Tiresias (Gu et al., NSDI '19) as the Pollux artifact implements it (its tiresias.py) — the
baseline of Luo et al.: discretised two-dimensional least-attained-service (2D-LAS).

Each call (every round, and in ``events`` semantics also on arrivals and completions):

1. new jobs join queue 0 in workload order; finished jobs leave;
2. accounting: a job that was running since the last call adds the elapsed wall time to its
   ``executed`` time (restart delays included); a queue-0 job whose executed time × requested
   GPUs reaches the threshold (16 GPU-hours) moves to the end of queue 1 (no promotion back:
   the starvation rule is off in the artifact);
3. admission: scan queue 0 then queue 1 with the cluster's GPU count as budget; a job that fits
   the remaining budget runs, one that does not is skipped (the scan goes on: backfill) and, if it
   held GPUs, is preempted (progress kept);
4. placement: running jobs keep their GPUs; each newly admitted job repeatedly takes as many GPUs
   as it still needs from the server with the most free GPUs (lowest index on ties).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .placement import consolidated

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState

#: 16 GPU-hours in GPU-seconds: the Pollux artifact's single queue threshold
ARTIFACT_THRESHOLD = 16 * 3600.0


@dataclass
class Tiresias:
    """2D-LAS with ``thresholds`` (GPU-seconds) between queues; see module doc."""

    name: str = "tiresias"
    thresholds: tuple[float, ...] = (ARTIFACT_THRESHOLD,)
    interval: float | None = 60.0
    gate = None
    _queues: list[list[int]] = field(default_factory=list, init=False, repr=False)
    _executed: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _last: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _running: set[int] = field(default_factory=set, init=False, repr=False)
    _queue_of: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def attach(self, sim: Simulator) -> None:
        self._queues = [[] for _ in range(len(self.thresholds) + 1)]
        self._state = {j.job_id: j for j in sim.jobs}

    def on_round(self, sim: Simulator) -> None:
        """Every round is a full call, as in the artifact, even with nobody waiting: demotions
        then happen at the round where the threshold is crossed, which fixes queue-1 order
        (a second call in the same instant changes nothing)."""
        self.schedule(sim)

    def attained(self, job_id: int) -> float:
        """Executed wall time of a job so far (seconds)."""
        return self._executed.get(job_id, 0.0)

    def queue_of(self, job_id: int) -> int:
        return self._queue_of[job_id]

    def schedule(self, sim: Simulator) -> None:
        now = sim.now
        active = {j.job_id for j in sim.queue} | set(sim.running)
        # 1. drop finished jobs, append new ones to queue 0 in workload order
        for q in self._queues:
            q[:] = [jid for jid in q if jid in active]
        for jid in sorted(active - set(self._queue_of)):
            self._queues[0].append(jid)
            self._queue_of[jid] = 0
            self._executed[jid] = 0.0
        # 2. accounting and demotion (workload order)
        for jid in sorted(active):
            if jid in self._running:
                self._executed[jid] += now - self._last.get(jid, 0.0)
                level = self._queue_of[jid]
                gpus = self._state[jid].num_gpus
                if level < len(self.thresholds) and (
                    self._executed[jid] * gpus >= self.thresholds[level]
                ):
                    self._queues[level].remove(jid)
                    self._queues[level + 1].append(jid)
                    self._queue_of[jid] = level + 1
            self._last[jid] = now
        # 3. admission against the cluster's GPU count, skipping what does not fit
        free = sim.cluster.num_gpus
        admitted: list[JobState] = []
        for q in self._queues:
            for jid in q:
                job = self._state[jid]
                if job.num_gpus <= free:
                    free -= job.num_gpus
                    admitted.append(job)
        admitted_ids = {j.job_id for j in admitted}
        for jid in sorted(self._running - admitted_ids):
            job = self._state[jid]
            if jid in sim.running:
                sim.preempt(job)
        self._running = admitted_ids
        # 4. placement of admitted jobs without GPUs (queue order): most free GPUs first
        free_gpus = {g for g in range(sim.cluster.num_gpus) if not sim.residents[g]}
        for job in admitted:
            if job.job_id in sim.running:
                continue
            gpus = consolidated(sim, free_gpus, job.num_gpus)
            if gpus is None:  # cannot happen: admission kept the budget
                raise RuntimeError("Tiresias admitted a job that does not fit")
            free_gpus.difference_update(gpus)
            sim.start(job, gpus)
