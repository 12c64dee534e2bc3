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
   held GPUs, is preempted (progress kept); with ``--queues`` whose flavors hold jobs to GPU
   types, each type's GPUs are a budget too (ddlsched's, not the artifact's: ``_fits_types``);
4. placement: running jobs keep their GPUs; each newly admitted job repeatedly takes as many GPUs
   as it still needs from the server with the most free GPUs (lowest index on ties).

Incremental form (same decisions, cheap at Philly scale): a job's executed time is kept as
"executed before its current admission + (now − admission time)"; demotions come from a heap of
threshold-crossing times; a call with no arrival, completion or demotion since the previous one
changes nothing (the admission scan depends only on the queues' order) and returns at once; when
all active jobs fit the cluster together, all are admitted without a scan.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from .placement import cannot_run_on

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState

#: 16 GPU-hours in GPU-seconds: the Pollux artifact's single queue threshold
ARTIFACT_THRESHOLD = 16 * 3600.0
#: crossing times are looked at this early (seconds), then checked exactly
_EARLY = 1e-3


@dataclass
class Tiresias:
    """2D-LAS with ``thresholds`` (GPU-seconds) between queues; see module doc."""

    name: str = "tiresias"
    #: keeps its own books of arrived jobs (``sim.jobs[:sim.arrived]``): with ``--queues``
    #: it must take evictions (``on_evicted``; docs/tenancy.md "In the engine")
    keeps_arrivals: ClassVar[bool] = True
    #: with ``--queues`` whose GPU flavors name GPU types, admits against a budget per type
    #: and places a job on its flavor's type (docs/tenancy.md "GPU types")
    holds_flavor_types: ClassVar[bool] = True
    thresholds: tuple[float, ...] = (ARTIFACT_THRESHOLD,)
    interval: float | None = 60.0
    #: queue levels, each an insertion-ordered set of job ids
    _queues: list[dict[int, None]] = field(default_factory=list, init=False, repr=False)
    _queue_of: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    #: position of a job in its level (insertion counter): queue order = (level, position)
    _pos: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    #: executed time before the current admission; admission time of admitted jobs
    _base: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _since: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _running: set[int] = field(default_factory=set, init=False, repr=False)

    def attach(self, sim: Simulator) -> None:
        self._queues = [{} for _ in range(len(self.thresholds) + 1)]
        self._state = {j.job_id: j for j in sim.jobs}
        self._size = {j.job_id: j.num_gpus for j in sim.jobs}
        self._seen = 0  # jobs of sim.jobs taken in (they arrive in that order)
        self._done_seen = 0  # entries of sim.completed taken into account
        self._counter = 0
        self._demand = 0  # GPUs requested by all active jobs
        #: (earliest crossing time, job id, version) of admitted jobs below the last queue
        self._crossings: list[tuple[float, int, int]] = []
        self._ver: dict[int, int] = {}
        self._now = 0.0
        #: jobs the quota layer evicted (``--queues``), not back in ``sim.queue`` yet
        self._held: set[int] = set()

    def on_evicted(self, sim: Simulator, job: JobState) -> None:
        """The quota layer took ``job``'s admission back (``--queues``): it keeps its queue
        and attained service, stops counting as running, and is not admitted by this policy
        until it is back in ``sim.queue``."""
        self._now = sim.now
        jid = job.job_id
        if jid in self._running:
            self._base[jid] = self.attained(jid)
            self._since.pop(jid, None)
            self._stop_watching(jid)
            self._running.discard(jid)
        self._held.add(jid)

    def _fits_types(self, sim: Simulator, jid: int, left: dict[str, int]) -> bool:
        """Admission per GPU type (``left``: each type's GPUs not yet budgeted; taken if it
        fits): a running job keeps the GPUs it holds, a waiting job held to a type by its
        flavor needs that many of it, any other only the cluster's count — it is placed after
        the typed ones, on what they leave."""
        job = self._state[jid]
        if jid in self._running:
            need: dict[str, int] = {}
            for g in job.gpus:
                t = sim.cluster.gpu_type(g)
                need[t] = need.get(t, 0) + 1
        elif job.flavor_type is not None:
            need = {job.flavor_type: job.num_gpus}
        else:
            return True
        if any(left[t] < n for t, n in need.items()):
            return False
        for t, n in need.items():
            left[t] -= n
        return True

    def on_round(self, sim: Simulator) -> None:
        """Every round is a full call, as in the artifact, even with nobody waiting: demotions
        then happen at the round where the threshold is crossed, which fixes queue-1 order
        (a second call in the same instant changes nothing)."""
        self.schedule(sim)

    def attained(self, job_id: int) -> float:
        """Executed wall time of a job so far (seconds)."""
        base = self._base.get(job_id, 0.0)
        since = self._since.get(job_id)
        return base + (self._now - since) if since is not None else base

    def queue_of(self, job_id: int) -> int:
        return self._queue_of[job_id]

    def _append(self, jid: int, level: int) -> None:
        self._queues[level][jid] = None
        self._queue_of[jid] = level
        self._counter += 1
        self._pos[jid] = self._counter

    def _watch(self, jid: int) -> None:
        """Schedule a look at the admitted job ``jid``'s next threshold crossing."""
        level = self._queue_of[jid]
        ver = self._ver.get(jid, 0) + 1
        self._ver[jid] = ver
        if level < len(self.thresholds):
            gpus = self._state[jid].num_gpus
            t = self._since[jid] + self.thresholds[level] / gpus - self._base[jid]
            heapq.heappush(self._crossings, (t - _EARLY, jid, ver))

    def _stop_watching(self, jid: int) -> None:
        self._ver[jid] = self._ver.get(jid, 0) + 1

    def schedule(self, sim: Simulator) -> None:
        now = self._now = sim.now
        changed = False
        # 1. new jobs join queue 0 in workload order; finished jobs leave
        if sim.arrived > self._seen:
            new = sim.jobs[self._seen : sim.arrived]
            self._seen = sim.arrived
            for job in sorted(new, key=lambda j: j.job_id):
                self._state[job.job_id] = job  # (a service adds jobs after attach)
                self._size[job.job_id] = job.num_gpus
                self._append(job.job_id, 0)
                self._base[job.job_id] = 0.0
                self._demand += job.num_gpus
            changed = True
        if len(sim.completed) > self._done_seen:
            for job in sim.completed[self._done_seen :]:
                jid = job.job_id
                del self._queues[self._queue_of[jid]][jid]
                self._running.discard(jid)
                self._base[jid] = self.attained(jid)
                self._since.pop(jid, None)
                self._stop_watching(jid)
                self._demand -= job.num_gpus
            self._done_seen = len(sim.completed)
            changed = True
        if self._held:  # evicted jobs the quota layer admitted again
            back = [j.job_id for j in sim.queue if j.job_id in self._held]
            if back:
                self._held.difference_update(back)
                changed = True
        # 2. demotion of admitted jobs whose executed time × GPUs reached their threshold
        heap = self._crossings
        due: list[tuple[float, int, int]] = []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if entry[2] == self._ver.get(entry[1]):
                due.append(entry)
        for entry in sorted(due, key=lambda e: e[1]):
            jid = entry[1]
            level = self._queue_of[jid]
            gpus = self._state[jid].num_gpus
            if (self._base[jid] + (now - self._since[jid])) * gpus >= self.thresholds[level]:
                del self._queues[level][jid]
                self._append(jid, level + 1)
                self._watch(jid)
                changed = True
            else:
                heapq.heappush(heap, entry)  # looked at early: check again at the next call
        if not changed:
            return  # same queues → same admission; every admitted job already runs
        # 3. admission against the cluster's GPU count, skipping what does not fit (and,
        # where Kueue flavors hold jobs to GPU types, against each type's GPUs)
        typed = bool(getattr(sim.admission, "flavor_types", None))
        if self._demand <= sim.cluster.num_gpus and not typed:
            waiting = sorted(
                (self._queue_of[j.job_id], self._pos[j.job_id], j.job_id) for j in sim.queue
            )
            admitted_ids = self._running | {jid for _, _, jid in waiting}
            to_start = [self._state[jid] for _, _, jid in waiting]
        else:
            free = sim.cluster.num_gpus
            size = self._size
            order: list[int] = []
            held = self._held
            left = dict(sim.cluster.gpu_types) if typed else {}
            for q in self._queues:
                for jid in q:
                    if jid in held:
                        continue
                    g = size[jid]
                    if g <= free:
                        if typed and not self._fits_types(sim, jid, left):
                            continue
                        free -= g
                        order.append(jid)
                        if not free:
                            break
                if not free:
                    break
            admitted_ids = set(order)
            running = self._running
            to_start = [self._state[jid] for jid in order if jid not in running]
        for jid in sorted(self._running - admitted_ids):
            job = self._state[jid]
            self._base[jid] = self.attained(jid)
            del self._since[jid]
            self._stop_watching(jid)
            sim.preempt(job)
        for job in to_start:
            self._since[job.job_id] = now
            self._watch(job.job_id)
        self._running = admitted_ids
        # 4. placement of admitted jobs without GPUs (queue order): most free GPUs first;
        # jobs held to a GPU type before the others, which the budget lets go anywhere
        if typed:
            to_start.sort(key=lambda j: j.flavor_type is None)
        for job in to_start:
            # on GPU types the job can run on when possible (admission counts every GPU:
            # where only others are idle, the engine refuses the placement with a message)
            gpus = sim.idle.consolidated(job.num_gpus, cannot_run_on(sim, job))
            if gpus is None:
                gpus = sim.idle.consolidated(job.num_gpus)
            if gpus is None:  # cannot happen: admission kept the budget
                raise RuntimeError("Tiresias admitted a job that does not fit")
            sim.start(job, gpus)
