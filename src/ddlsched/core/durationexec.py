"""Job-level execution of trace jobs with a measured duration (Philly, Gavel, Tiresias traces).

A job needs ``spec.duration`` seconds of wall time on its ``num_gpus`` dedicated GPUs (the trace
has no performance model). On a cluster whose GPU types differ, a placement takes the job's time
on the slowest type among its GPUs (synchronous data parallelism: every step waits for the
slowest worker; ``JobSpec.duration_on``): the work left is kept in seconds of ``duration`` and
runs at ``pace`` = that time ÷ ``duration`` (1 on a single-type cluster, so its arithmetic is
unchanged). Preemption keeps the work done; every restart first costs ``restart_delay``
seconds without progress (GPUs held): the job's own (``JobSpec.restart_delay``) or the run's.
A stop may take time: with a stop delay > 0 (the job's ``JobSpec.stop_delay`` or the run's
``stop_delay``) a preempted job's work stops at the request, but its GPUs stay held (busy) for
that many seconds — a real job checkpointing and exiting — before the engine may launch other
jobs on them (``stop`` returns True; ``Simulator.stop_done`` when the delay is over). One
finish event per run: O(log n) per start, stop and completion.

Shared GPUs (a sharing policy, ``max_jobs_per_gpu`` > 1; docs/models.md "Co-location on shared
GPUs"): while a job shares one of its GPUs, its pace is multiplied by the largest slowdown ξ
over its co-residents, ξ(a with b on the shared GPU's type) from Gavel's measured pairs
(``JobSpec.colocation``) when both are Gavel-trace jobs, else the run's ``interference`` ratio.
When a co-resident starts or leaves, each neighbour's work is advanced at its old pace and its
finish event re-made at the new one (as ``ProfileExecutor``'s events semantics). A shared GPU
counts once in the busy GPU-seconds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import ScheduleError

if TYPE_CHECKING:  # pragma: no cover
    from .simulator import Simulator
    from .state import JobState


class _Run:
    """One job's work state (kept across preemptions)."""

    __slots__ = ("left", "since", "work_from", "ver", "running", "pace", "alone_pace")

    def __init__(self, duration: float) -> None:
        self.left = duration  # seconds of work (of ``duration``) still to do, as of ``work_from``
        self.pace = 1.0  # wall seconds per second of work on the current placement
        self.alone_pace = 1.0  # ``pace`` without co-residents (GPU types only)
        self.since = 0.0  # when it got its current GPUs
        self.work_from = 0.0  # when its current run starts making progress (after the delay)
        self.ver = 0
        self.running = False


class DurationExecutor:
    """Executor for duration jobs (``JobSpec.duration`` > 0); ``interference``: ξ of a job
    sharing a GPU with a job whose pair Gavel did not measure (Luo's single ratio)."""

    def __init__(self, interference: float = 1.5, stop_delay: float = 0.0) -> None:
        self.interference = interference
        #: seconds a preempted job holds its GPUs after the stop request (jobs without their
        #: own ``JobSpec.stop_delay``)
        self.stop_delay = stop_delay

    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.runs: dict[int, _Run] = {}
        for j in sim.jobs:
            if not j.spec.duration > 0:
                raise ValueError(f"job {j.job_id} has no duration (> 0)")
            self.runs[j.job_id] = _Run(j.spec.duration)
        n = sim.cluster.num_gpus
        #: Σ over ended runs of held seconds × GPUs (a shared GPU once per job) …
        self.busy = 0.0
        #: … minus what sharing counted twice (as ``ProfileExecutor``): Σ over each GPU's held
        #: periods of (the jobs' held seconds − the period's length); 0.0 without sharing
        self.shared_twice = 0.0
        #: whether GPUs may be shared in this run (else no co-resident is ever looked for)
        self._shares = sim.max_jobs_per_gpu != 1
        #: per GPU, its current held period: jobs on it, start, jobs' held seconds
        self._period_jobs = [0] * n
        self._period_start = [0.0] * n
        self._period_sum = [0.0] * n
        #: busy seconds per GPU of the runs that ended (see ``gpu_busy``)
        self.gpu_busy_done = [0.0] * n
        #: stops under way (a stop delay): job id → (the GPUs its stopped run holds, since when)
        self.draining: dict[int, tuple[tuple[int, ...], float]] = {}
        cl = sim.cluster
        #: per GPU: (type, speed); undeclared types: every job runs at its ``duration``
        self._types = [(cl.gpu_type(g), cl.gpu_speed(g)) for g in range(cl.num_gpus)]
        self._typed = bool(cl.typed)
        speeds = dict(self._types)
        counts = cl.gpu_types
        #: (type, GPU count, speed) in cluster order, for ``alone_time``
        self._type_info = [(t, c, speeds[t]) for t, c in counts.items()]
        self._one_type = len(counts) == 1

    # ------------------------------------------------------------------ Executor protocol
    def start(self, job: JobState, delay: float) -> None:
        r = self.runs[job.job_id]
        now = self.sim.now
        r.alone_pace = self.pace(job, job.gpus)
        slow = self.slowdown(job) if self._shares else 1.0
        r.since = now
        r.work_from = now + delay
        r.running = True
        r.ver += 1
        r.pace = r.alone_pace if slow == 1.0 else r.alone_pace * slow
        if self._shares:
            self._hold(job.gpus)
        self.sim.observe_at(r.work_from + r.left * r.pace, self._done, job, r.ver)
        if self._shares:
            self._retime_neighbours(job)

    def stop(self, job: JobState) -> bool:
        """Stop ``job``'s run, keeping its work. With a stop delay > 0 its work stops now but
        its GPUs stay held until the delay is over (``True``: the engine lets them drain, and
        ``_stopped`` calls ``Simulator.stop_done`` then); else they are free now."""
        r = self.runs[job.job_id]
        r.left = self._left(r)
        own = job.spec.stop_delay
        delay = self.stop_delay if own is None else own
        if not delay > 0:
            self._leave(job, r)
            return False
        r.running = False
        r.ver += 1  # its finish event is void
        gpus = job.gpus  # the engine may give the job other GPUs before the stop is done
        self.draining[job.job_id] = (gpus, r.since)
        if self._shares:  # it no longer slows the jobs beside it: it computes no more
            self._retime_neighbours(job, leaving=job)
        self.sim.observe_at(self.sim.now + delay, self._stopped, job)
        return True

    def _stopped(self, job: JobState) -> None:
        """``job``'s stop delay is over: its stopped run gives its GPUs back (held time
        accounted up to now) and the engine launches what waits for them."""
        gpus, since = self.draining.pop(job.job_id)
        held = self.sim.now - since
        self.busy += held * len(gpus)
        for g in gpus:
            self.gpu_busy_done[g] += held
        if self._shares:
            self._release(gpus, held)
        self.sim.stop_done(job)

    def refresh(self, job: JobState) -> None:
        """Service left for SRSF-style orderings: GPUs × remaining seconds (Wang's L_J)."""
        job.service_left = self.remaining_time(job) * job.num_gpus

    def settle(self) -> None:
        pass

    def busy_gpu_seconds(self) -> float:
        """GPU-seconds the GPUs held a job, a shared GPU counted once (docs/models.md)."""
        return self.busy - self.shared_twice

    # ------------------------------------------------------------------ what policies ask
    def remaining_time(self, job: JobState) -> float:
        """Seconds of work ``job`` still needs (the trace's duration minus the work done): an
        oracle, since a real scheduler does not know a job's duration in advance."""
        r = self.runs[job.job_id]
        return self._left(r) if r.running else r.left

    def remaining_alone(self, job: JobState) -> float:
        """SJF's job length: the remaining time (GPU placement does not change it here)."""
        return self.remaining_time(job)

    def attained(self, job: JobState) -> float:
        """Seconds of work done so far."""
        return job.spec.duration - self.remaining_time(job)

    def gpu_busy(self, gpu: int) -> float:
        """Accumulated held time of ``gpu`` so far (restart and stop delays included)."""
        now = self.sim.now
        runs = self.runs
        busy = self.gpu_busy_done[gpu] + sum(
            now - runs[j.job_id].since  # not a job waiting for a stop to finish (not running)
            for j in self.sim.residents[gpu]
            if runs[j.job_id].running
        )
        for gpus, since in self.draining.values():
            if gpu in gpus:
                busy += now - since
        return busy

    def alone_time(self, job: JobState) -> float:
        """Seconds alone on an equal share of the GPU types (``AloneTimes``): 1 ÷ Σ_t
        (c_t / G) ÷ D_t over the cluster's types t with c_t of its G GPUs, D_t the job's time
        on type t (its duration where types are undeclared or the cluster has one type)."""
        if not self._typed:
            return job.spec.duration
        n = self.sim.cluster.num_gpus
        rate = 0.0
        for t, count, speed in self._type_info:
            d = job.spec.duration_on(t, speed)
            if d is None:
                d = job.spec.duration / speed
            rate += count / n / d
        return 1.0 / rate if rate > 0 else float("inf")

    def pace(self, job: JobState, gpus: tuple[int, ...] | list[int]) -> float:
        """Wall seconds per second of ``duration`` on ``gpus``: the slowest GPU type's time ÷
        the duration (``Cluster.typed``; else 1.0: every type runs the job at its duration)."""
        spec = job.spec
        if not self._typed:
            return 1.0
        worst = 0.0
        for gpu_type, speed in dict.fromkeys(self._types[g] for g in gpus):  # each type once
            t = spec.duration_on(gpu_type, speed)
            if t is None:
                if not self._one_type:
                    raise ValueError(
                        f"job {job.job_id} has no duration for GPU type {gpu_type!r} (its "
                        "per-type table lacks it)"
                    )
                t = spec.duration / speed
            if t > worst:
                worst = t
        if worst == spec.duration:
            return 1.0
        if not worst < float("inf"):
            from ..errors import InputError

            kinds = sorted({self._types[g][0] for g in gpus})
            raise InputError(
                f"job {job.job_id} ({spec.model.name}, {spec.num_gpus} GPUs) was placed on GPU "
                f"type(s) {', '.join(kinds)}, where it cannot run (its table: no throughput); "
                f"policy {self.sim.policy.name} does not avoid such types (fifo, sjf and the "
                "gavel policies do)",
                field="gpu_type",
            )
        return worst / spec.duration

    # ------------------------------------------------------------------ what sharing policies ask
    # (``SharingEstimates``: Luo's SJF-FFS and SJF-BSBF on trace jobs)
    def micro_limits(self, job: JobState) -> list[int | None]:
        """One candidate: a trace job runs as it is (no gradient accumulation to lower)."""
        return [None]

    def fits_beside(self, job: JobState, limit: int | None, host: JobState) -> bool:
        """Whether ``job`` may share ``host``'s GPUs: it runs on their types and the pair can
        share on every one of them (Gavel's pair throughputs both > 0; always with the
        ``interference`` ratio)."""
        for gpu_type, speed in dict.fromkeys(self._types[g] for g in host.gpus):
            if self._typed:
                d = job.spec.duration_on(gpu_type, speed)
                if d is not None and not d < math.inf:
                    return False
            if self.xi(job, host, gpu_type) == math.inf or self.xi(host, job, gpu_type) == math.inf:
                return False
        return True

    def slowdown_beside(self, job: JobState, other: JobState, gpus: tuple[int, ...]) -> float:
        """ξ of ``job`` next to ``other`` on ``gpus``: the worst over their GPU types."""
        return max(self.xi(job, other, t) for t in dict.fromkeys(self._types[g][0] for g in gpus))

    def remaining_beside(self, job: JobState, limit: int | None, host: JobState) -> float:
        """Seconds waiting ``job`` still needs alone on ``host``'s GPUs (their slowest type)."""
        return self.remaining_time(job) * self.pace(job, host.gpus)

    def remaining_as_running(self, job: JobState) -> float:
        """Seconds running ``job`` still needs alone on its placement (no co-resident)."""
        return self.remaining_time(job) * self.runs[job.job_id].alone_pace

    # ------------------------------------------------------------------ internals
    def _left(self, r: _Run) -> float:
        done = self.sim.now - r.work_from
        if r.pace != 1.0:
            done /= r.pace
        return r.left - done if done > 0 else r.left

    def _leave(self, job: JobState, r: _Run) -> None:
        """``job`` gives its GPUs back: void its finish event, account its held time, re-time
        the jobs that shared its GPUs (it is still among their residents)."""
        r.running = False
        r.ver += 1
        held = self.sim.now - r.since
        self.busy += held * len(job.gpus)
        for g in job.gpus:
            self.gpu_busy_done[g] += held
        if self._shares:
            self._release(job.gpus, held)
            self._retime_neighbours(job, leaving=job)

    def _done(self, job: JobState, ver: int) -> None:
        r = self.runs[job.job_id]
        if ver != r.ver or not r.running:
            return  # preempted since
        r.left = 0.0
        self._leave(job, r)
        self.sim.job_finished(job)

    # ------------------------------------------------------------------ shared GPUs
    def xi(self, job: JobState, other: JobState, gpu_type: str | None) -> float:
        """ξ of ``job`` sharing a GPU of ``gpu_type`` (None: undeclared types) with ``other``:
        Gavel's measured slowdown when both carry its pairs (``inf``: they cannot share), else
        the ``interference`` ratio."""
        table = job.spec.colocation
        if table is None or other.spec.colocation is None:
            return self.interference
        a, b = job.spec, other.spec
        return table.slowdown(
            (a.model.name, a.num_gpus),
            (b.model.name, b.num_gpus),
            gpu_type if gpu_type is not None and self._typed else table.default_type,
        )

    def slowdown(self, job: JobState, leaving: JobState | None = None) -> float:
        """The largest ξ over the jobs sharing one of ``job``'s GPUs, on that GPU's type (1 if
        none; ``leaving`` is not counted). ``ScheduleError`` if a pair cannot share."""
        worst = 1.0
        residents = self.sim.residents
        for g in job.gpus:
            here = residents[g]
            if len(here) < 2:
                continue
            for other in here:
                if other is job or other is leaving:
                    continue
                x = self.xi(job, other, self._types[g][0])
                if x > worst:
                    worst = x
        if worst == math.inf:
            raise ScheduleError(
                f"job {job.job_id} ({job.spec.model.name}, {job.num_gpus} GPU(s)) shares a GPU "
                "with a job Gavel's throughputs file measures as unable to share with it "
                "(0 steps/s, or no pair)"
            )
        return worst

    def _neighbours(self, job: JobState) -> list[JobState]:
        """The other jobs on ``job``'s GPUs, by id."""
        seen: dict[int, JobState] = {}
        residents = self.sim.residents
        for g in job.gpus:
            here = residents[g]
            if len(here) > 1:
                for other in here:
                    if other is not job:
                        seen[other.job_id] = other
        return [seen[k] for k in sorted(seen)]

    def _retime_neighbours(self, job: JobState, leaving: JobState | None = None) -> None:
        """``job`` starts on or leaves (``leaving``) its GPUs: each running neighbour's work is
        advanced to now at its old pace and its finish event re-made at its new pace."""
        now = self.sim.now
        for other in self._neighbours(job):
            n = self.runs[other.job_id]
            if not n.running:
                continue
            slow = self.slowdown(other, leaving)
            pace = n.alone_pace if slow == 1.0 else n.alone_pace * slow
            if pace == n.pace:
                continue
            n.left = self._left(n)
            if n.work_from < now:
                n.work_from = now
            n.pace = pace
            n.ver += 1
            self.sim.observe_at(n.work_from + n.left * n.pace, self._done, other, n.ver)

    def _hold(self, gpus: tuple[int, ...]) -> None:
        """A job takes ``gpus`` now: a GPU that held none starts a held period."""
        now = self.sim.now
        for g in gpus:
            if self._period_jobs[g] == 0:
                self._period_start[g] = now
                self._period_sum[g] = 0.0
            self._period_jobs[g] += 1

    def _release(self, gpus: tuple[int, ...], held: float) -> None:
        """A job that held ``gpus`` for ``held`` seconds leaves them now; a period that ends
        adds what sharing counted twice."""
        now = self.sim.now
        for g in gpus:
            self._period_sum[g] += held
            self._period_jobs[g] -= 1
            if self._period_jobs[g] == 0:
                self.shared_twice += self._period_sum[g] - (now - self._period_start[g])
