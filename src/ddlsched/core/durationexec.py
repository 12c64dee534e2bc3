"""Job-level execution of trace jobs with a measured duration (Philly, Gavel, Tiresias traces).

A job needs ``spec.duration`` seconds of wall time on its ``num_gpus`` dedicated GPUs (the trace
has no performance model). On a cluster whose GPU types differ, a placement takes the job's time
on the slowest type among its GPUs (synchronous data parallelism: every step waits for the
slowest worker; ``JobSpec.duration_on``): the work left is kept in seconds of ``duration`` and
runs at ``pace`` = that time ÷ ``duration`` (1 on a single-type cluster, so its arithmetic is
unchanged). Preemption keeps the work done; every restart first costs the engine's
``restart_delay`` seconds without progress (GPUs held). One finish event per run: O(log n) per
start, stop and completion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .simulator import Simulator
    from .state import JobState


class _Run:
    """One job's work state (kept across preemptions)."""

    __slots__ = ("left", "since", "work_from", "ver", "running", "pace")

    def __init__(self, duration: float) -> None:
        self.left = duration  # seconds of work (of ``duration``) still to do, as of ``work_from``
        self.pace = 1.0  # wall seconds per second of work on the current placement
        self.since = 0.0  # when it got its current GPUs
        self.work_from = 0.0  # when its current run starts making progress (after the delay)
        self.ver = 0
        self.running = False


class DurationExecutor:
    """Executor for duration jobs (``JobSpec.duration`` > 0)."""

    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.runs: dict[int, _Run] = {}
        for j in sim.jobs:
            if not j.spec.duration > 0:
                raise ValueError(f"job {j.job_id} has no duration (> 0)")
            self.runs[j.job_id] = _Run(j.spec.duration)
        self.busy = 0.0
        #: busy seconds per GPU of the runs that ended (see ``gpu_busy``)
        self.gpu_busy_done = [0.0] * sim.cluster.num_gpus
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
        r.since = now
        r.work_from = now + delay
        r.running = True
        r.ver += 1
        r.pace = self.pace(job, job.gpus)
        self.sim.at(r.work_from + r.left * r.pace, self._done, job, r.ver)

    def stop(self, job: JobState) -> None:
        r = self.runs[job.job_id]
        r.left = self._left(r)
        self._leave(job, r)

    def refresh(self, job: JobState) -> None:
        """Service left for SRSF-style orderings: GPUs × remaining seconds (Wang's L_J)."""
        job.service_left = self.remaining_time(job) * job.num_gpus

    def settle(self) -> None:
        pass

    def busy_gpu_seconds(self) -> float:
        return self.busy

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
        """Accumulated held time of ``gpu`` so far (restart delays included)."""
        now = self.sim.now
        return self.gpu_busy_done[gpu] + sum(
            now - self.runs[j.job_id].since for j in self.sim.residents[gpu]
        )

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

    # ------------------------------------------------------------------ internals
    def _left(self, r: _Run) -> float:
        done = self.sim.now - r.work_from
        if r.pace != 1.0:
            done /= r.pace
        return r.left - done if done > 0 else r.left

    def _leave(self, job: JobState, r: _Run) -> None:
        """``job`` gives its GPUs back: void its finish event, account its held time."""
        r.running = False
        r.ver += 1
        held = self.sim.now - r.since
        self.busy += held * len(job.gpus)
        for g in job.gpus:
            self.gpu_busy_done[g] += held

    def _done(self, job: JobState, ver: int) -> None:
        r = self.runs[job.job_id]
        if ver != r.ver or not r.running:
            return  # preempted since
        r.left = 0.0
        self._leave(job, r)
        self.sim.job_finished(job)
