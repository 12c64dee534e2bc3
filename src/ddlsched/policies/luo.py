"""Luo et al.'s policies on application profiles: FIFO and SJF (exclusive GPUs), SJF-FFS and
SJF-BSBF (GPU sharing, at most two jobs per GPU; Alg. 1–2 with Theorem 1).

Shared reading of the paper (docs/design.md "Luo et al."):
- a job's length L_k is its remaining run time alone on a consolidated placement (Alg. 1 input);
- placement of a job on free GPUs is consolidated: it repeatedly takes what it still needs from
  the server with the most free GPUs (Alg. 1 line 7, "as consolidated as possible");
- memory: a worker uses (micro-batch ÷ the application's maximum local batch) of a GPU; two
  workers fit on a GPU if their shares sum to ≤ 1; a sharing job reduces its micro-batch by
  powers of two (gradient accumulation keeps its total batch, Eq. 7);
- interference: while two jobs share a GPU each runs ξ times slower (Eq. 5–6; one constant, or
  per application pair).

The sharing policies run on application-profile and trace jobs alike through the executor's
``SharingEstimates`` (``core/protocols.py``): trace jobs' ``DurationExecutor`` offers it (one
micro-batch candidate, Gavel's measured pairs; docs/models.md "Co-location on shared GPUs");
``_ProfileSharing`` below adapts the profile executor's estimates (micro-batches, memory).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..core.protocols import JobConfig, JobTimes, ProfileEstimates, SharingEstimates
from .placement import cannot_run_on, consolidated, fastest_types

if TYPE_CHECKING:  # pragma: no cover
    from ..core.simulator import Simulator
    from ..core.state import JobState
    from .ordering import Ordering


@dataclass
class _Base:
    name: str
    interval: float | None = None

    def attach(self, sim: Simulator) -> None:
        self._sim = sim
        self._times: JobTimes | None = None
        self._profiles: ProfileEstimates | None = None

    @property
    def times(self) -> JobTimes:
        """The executor's job times (asked of the engine on first use)."""
        if self._times is None:
            self._times = self._sim.estimates(JobTimes)
        return self._times

    @property
    def ex(self) -> ProfileEstimates:
        """The profile executor's estimates (asked of the engine on first use)."""
        if self._profiles is None:
            self._profiles = self._sim.estimates(ProfileEstimates)
        return self._profiles

    def on_round(self, sim: Simulator) -> None:
        pass

    def length(self, sim: Simulator, job: JobState) -> float:
        """L_k: remaining time alone, consolidated, at the requested batch."""
        return self.times.remaining_alone(job)

    def free_gpus(self, sim: Simulator) -> set[int]:
        return set(sim.idle)


@dataclass
class Exclusive(_Base):
    """FIFO (arrival order) or SJF (by L_k) on whole GPUs; a job that does not fit is skipped
    (``backfill``, default) or, with ``backfill=False``, blocks the queue behind it.

    Runs on any executor with ``JobTimes`` (application profiles, trace durations). A job fits
    iff its GPU count ≤ the idle GPUs (both placements may span servers), and a waiting job's key
    does not change while it waits, so the queue is kept in one heap per GPU count: a pass
    repeatedly starts the first job in order among the heap heads that fit — the same jobs, in
    the same order, as a scan of the whole sorted queue — in O(GPU counts + log n) per start."""

    #: keeps its own books of arrived jobs (``sim.jobs[:sim.arrived]``): with ``--queues``
    #: it must take evictions (``on_evicted``; docs/tenancy.md "In the engine")
    keeps_arrivals: ClassVar[bool] = True
    #: places a job admitted in a GPU-type flavor on that type only (``--queues``;
    #: ``cannot_run_on``), with a queue per (GPU count, type) so that one type's busy GPUs
    #: do not hold up jobs bound to another
    holds_flavor_types: ClassVar[bool] = True
    order: str = "fifo"
    backfill: bool = True
    #: ``least-busy``: the free GPUs with least accumulated execution time (Luo's FIFO
    #: baseline, §VI-A); ``consolidated``: Alg. 1 line 7's placement
    placement: str = "consolidated"
    #: on declared GPU types: the job's GPUs all of the type where it runs fastest that has
    #: enough idle GPUs (then ``placement`` within it); else ``placement`` over every type
    type_aware: bool = False

    def attach(self, sim: Simulator) -> None:
        super().attach(sim)
        #: waiting jobs by (GPU count, the GPU type a Kueue flavor holds them to), each a
        #: heap of (order key, job)
        self._waiting: dict[tuple[int, str | None], list[tuple[tuple, JobState]]] = {}
        self._seen = 0  # jobs of sim.jobs taken in (they arrive in that order)
        self._held = 0  # jobs in the heaps
        self._stale = False  # a job left sim.queue other than by a start: rebuild

    def on_evicted(self, sim: Simulator, job: JobState) -> None:
        """The quota layer took ``job`` back (``--queues``): the heaps are rebuilt from
        ``sim.queue`` at the next pass."""
        self._stale = True

    def _key(self, sim: Simulator, job: JobState) -> tuple:
        if self.order == "fifo":
            return (job.arrival, job.job_id)
        return (self.length(sim, job), job.arrival, job.job_id)

    def _push(self, sim: Simulator, job: JobState) -> None:
        heap = self._waiting.setdefault((job.num_gpus, job.flavor_type), [])
        heapq.heappush(heap, (self._key(sim, job), job))
        self._held += 1

    def _sync(self, sim: Simulator) -> None:
        """Take in the arrivals since the last pass (rebuild if jobs came back otherwise)."""
        for job in sim.jobs[self._seen : sim.arrived]:
            self._push(sim, job)
        self._seen = sim.arrived
        if self._stale or self._held != len(sim.queue):
            self._waiting, self._held, self._stale = {}, 0, False
            for job in sim.queue:
                self._push(sim, job)

    def schedule(self, sim: Simulator) -> None:
        self._sync(sim)
        idle = sim.idle
        least_busy = self.placement == "least-busy"
        # queues (GPU count, flavor type) whose head cannot run on the idle types now
        blocked: set[tuple[int, str | None]] = set()
        while True:
            free = len(idle)
            best: list[tuple[tuple, JobState]] | None = None
            best_key: tuple[int, str | None] = (0, None)
            for key, heap in self._waiting.items():
                if heap and key not in blocked and (key[0] <= free or not self.backfill):
                    if best is None or heap[0][0] < best[0][0]:
                        best, best_key = heap, key
            if best is None:
                return
            job = best[0][1]
            if job.num_gpus > free:
                return  # no backfill: the first waiting job blocks the queue
            avoid = cannot_run_on(sim, job)
            gpus = None
            if self.type_aware:
                for other in fastest_types(sim, job):  # servers of all other types
                    gpus = self._pick(idle, job.num_gpus, avoid | other, least_busy)
                    if gpus is not None:
                        break
            if gpus is None:
                gpus = self._pick(idle, job.num_gpus, avoid, least_busy)
            if gpus is None:  # only GPUs of types it cannot run on are idle
                if not self.backfill:
                    return
                blocked.add(best_key)
                continue
            heapq.heappop(best)
            self._held -= 1
            sim.start(job, gpus)

    @staticmethod
    def _pick(idle, need: int, avoid: frozenset[int], least_busy: bool) -> list[int] | None:
        if least_busy:
            return idle.least_busy(need, avoid)
        return idle.consolidated(need, avoid)


class _ProfileSharing:
    """``SharingEstimates`` of application-profile jobs from the profile executor's estimates:
    micro-batch limits (Alg. 2 lines 5, 12), memory shares and ξ per application pair."""

    def __init__(self, ex: ProfileEstimates) -> None:
        self.ex = ex
        self._limit_memo: dict[int, list[int | None]] = {}

    def remaining_alone(self, job: JobState) -> float:
        return self.ex.remaining_alone(job)

    def gpu_busy(self, gpu: int) -> float:
        return self.ex.gpu_busy(gpu)

    def micro_limits(self, job: JobState) -> list[int | None]:
        """Micro-batch candidates: the requested local batch, then halves (Alg. 2 lines 5, 12),
        keeping those whose accumulated micro-batch stays within the application's measured
        local batches."""
        hit = self._limit_memo.get(job.job_id)
        if hit is not None:
            return hit
        app = self.ex.application(job)
        b = self.ex.config(job).a
        out: list[int | None] = []
        while b >= 1:
            if self.ex.config(job, b).a >= app.min_local:
                out.append(b)
            if b == 1:
                break
            b //= 2
        self._limit_memo[job.job_id] = out
        return out

    def fits_beside(self, job: JobState, limit: int | None, host: JobState) -> bool:
        """Memory: the job's worker with ``limit`` and the host's fit one GPU together."""
        app = self.ex.application(job)
        cfg = self.ex.config(job, limit)
        return cfg.a / app.max_local + self.ex.memory_share(host) <= 1.0 + 1e-9

    def slowdown_beside(self, job: JobState, other: JobState, gpus: tuple[int, ...]) -> float:
        return self.ex.ratio(job.spec.application, other.spec.application)

    def remaining_beside(self, job: JobState, limit: int | None, host: JobState) -> float:
        return self.ex.remaining_consolidated(job, self.ex.config(job, limit))

    def remaining_as_running(self, job: JobState) -> float:
        return self.ex.remaining_as_running(job)


@dataclass
class Sharing(_Base):
    """SJF-FFS (``mode="ffs"``) or SJF-BSBF (``mode="bsbf"``): SJF by L_k; a job that does not
    fit on free GPUs may share GPUs that hold exactly one job (Alg. 1 lines 9–17).

    ``ordering`` (a key function ``(job, sim) -> tuple``, smaller first) replaces SJF to build
    other sharing policies from the same rules. Trace jobs never go to a GPU type they cannot
    run on (``placement.cannot_run_on``; none for application-profile jobs)."""

    #: keeps a job admitted in a GPU-type flavor on that type's GPUs, free or shared
    #: (``cannot_run_on`` filters both; ``--queues``, docs/tenancy.md "GPU types")
    holds_flavor_types: ClassVar[bool] = True
    mode: str = "bsbf"
    ordering: Ordering | None = None
    #: at most two jobs per GPU (Luo's C = 2); the engine enforces it
    jobs_per_gpu = 2

    def attach(self, sim: Simulator) -> None:
        super().attach(sim)
        self._sharing: SharingEstimates | None = None

    @property
    def share(self) -> SharingEstimates:
        """The executor's sharing estimates (profile executors through ``_ProfileSharing``)."""
        if self._sharing is None:
            try:
                self._sharing = _ProfileSharing(self.ex)
            except TypeError:  # not application-profile jobs: the executor's own estimates
                self._sharing = self._sim.estimates(SharingEstimates)
        return self._sharing

    def schedule(self, sim: Simulator) -> None:
        if self.ordering is None:
            queue = sorted(sim.queue, key=lambda j: (self.length(sim, j), j.arrival, j.job_id))
        else:
            queue = sorted(sim.queue, key=lambda j: self.ordering(j, sim))  # type: ignore[misc]
        server = sim.cluster.gpu_server
        for job in queue:
            avoid = cannot_run_on(sim, job)
            gpus = sim.idle.consolidated(job.num_gpus, avoid)  # lines 6–7
            if gpus is not None:
                sim.start(job, gpus)
                continue
            free = self.free_gpus(sim)
            single = [g for g in range(sim.cluster.num_gpus) if len(sim.residents[g]) == 1]
            if avoid:
                free = {g for g in free if server[g] not in avoid}
                single = [g for g in single if server[g] not in avoid]
            if len(free) + len(single) < job.num_gpus:  # line 9
                continue
            choice = (
                self._share_ffs(sim, job, free, single)
                if self.mode == "ffs"
                else (self._share_bsbf(sim, job, free, single))
            )
            if choice is not None:
                gpus, limit = choice
                sim.start(job, gpus, None if limit is None else JobConfig(micro_limit=limit))

    # ------------------------------------------------------------------ helpers
    def _share_ffs(self, sim, job, free, single):
        """First fit over free GPUs then single-job GPUs (GPU order), with the largest
        micro-batch that fits memory next to every host."""
        hosts = {g: sim.residents[g][0] for g in single}
        share = self.share
        for limit in share.micro_limits(job):
            ok = [g for g in single if share.fits_beside(job, limit, hosts[g])]
            pool = sorted(free) + ok
            if len(pool) >= job.num_gpus:
                return pool[: job.num_gpus], limit
        return None

    def _share_bsbf(self, sim, job, free, single):
        """Alg. 1 lines 10–17 with Alg. 2 per host job: keep hosts for which sharing beats
        waiting (Theorem 1), shortest pair JCT first; free GPUs complete the set."""
        hosts: dict[int, JobState] = {}
        for g in single:
            h = sim.residents[g][0]
            hosts.setdefault(h.job_id, h)
        candidates = []
        for hid in sorted(hosts):
            host = hosts[hid]
            sf, limit, t = self._best_pair(job, host)
            if sf:
                candidates.append((t, hid, limit))
        candidates.sort()
        gpus: list[int] = []
        limit_all: int | None = None
        allowed = set(single)
        for _, hid, limit in candidates:  # lines 15–17
            if len(gpus) >= job.num_gpus:
                break
            host_gpus = [g for g in hosts[hid].gpus if g in allowed]
            gpus += host_gpus[: job.num_gpus - len(gpus)]
            if limit is not None:
                limit_all = limit if limit_all is None else min(limit_all, limit)
        if not gpus:
            return None
        if len(gpus) < job.num_gpus:
            extra = consolidated(sim, set(free), job.num_gpus - len(gpus))
            if extra is None:
                return None
            gpus += extra
        return gpus, limit_all

    def _best_pair(self, job, host):
        """Alg. 2: for micro-batches from the requested one down by halves, Theorem 1's best
        of sequential vs fully overlapped execution; the best pair JCT and its sharing flag."""
        share = self.share
        xi_a = share.slowdown_beside(job, host, host.gpus)
        xi_b = share.slowdown_beside(host, job, host.gpus)
        L_b = share.remaining_as_running(host)
        best = (False, None, float("inf"))
        for limit in share.micro_limits(job):
            if not share.fits_beside(job, limit, host):
                continue
            L_a = share.remaining_beside(job, limit, host)
            sf, t = theorem1(L_a, L_b, xi_a, xi_b)
            if t <= best[2]:
                best = (sf, limit, t)
        return best


def theorem1(L_a: float, L_b: float, xi_a: float, xi_b: float) -> tuple[bool, float]:
    """Luo Theorem 1 for a new job A (alone-time L_a) and a running job B (remaining alone-time
    L_b): the pair's average completion time (from now) is smallest either sequentially (A after
    B) or fully overlapped (both start now, slowed by ξ until one ends). Returns (share?, avg)."""
    sequential = (L_b + (L_b + L_a)) / 2.0
    if xi_a * L_a >= xi_b * L_b:  # B ends first (Eq. 18–19)
        t_b = xi_b * L_b
        t_a = t_b + L_a - t_b / xi_a
    else:  # A ends first (Eq. 22–23 with κ = 0)
        t_a = xi_a * L_a
        t_b = t_a + L_b - t_a / xi_b
    overlap = (t_a + t_b) / 2.0
    return (overlap < sequential, min(overlap, sequential))
