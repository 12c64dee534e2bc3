"""Job-level execution: each running job progresses fluidly at 1/t_iter iterations per second.

The rate comes from a ``RateModel`` and is recomputed only for the jobs whose *contention
domain* changed (jobs sharing a GPU or, for cross-server jobs, a server with a job that started
or stopped). Later performance models (Yu's RAR model, application profiles with sharing
interference) plug in here.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

from ..perf.contention import MB, LinearContention
from .state import JobState

if TYPE_CHECKING:  # pragma: no cover
    from .cluster import Cluster
    from .job import JobSpec
    from .simulator import Simulator


class RateModel(Protocol):
    def iteration_time(self, job: JobState, ex: JobExecutor) -> float:
        """Seconds per iteration of ``job`` in the current running set."""
        ...


class AloneRate(Protocol):
    """A rate model that also gives a job's iteration time alone (no other job anywhere) on a
    placement's ``servers`` (for ``JobExecutor.alone_time``, the base of fairness metrics)."""

    def alone_iteration(
        self, cluster: Cluster, spec: JobSpec, servers: tuple[int, ...]
    ) -> float: ...


class WangJobLevel:
    """Wang's model at job granularity (an approximation of the DAG model).

    t_iter = (t_f + t_b) × (most jobs resident on any of its GPUs: processor sharing)
             + [cross-server] a + M·(k·b + (k−1)·η), k = most cross-server jobs on any of its servers.
    """

    def __init__(self, model: LinearContention | None = None) -> None:
        self.model = model or LinearContention()

    def alone_iteration(self, cluster: Cluster, spec: JobSpec, servers: tuple[int, ...]) -> float:
        """t_f + t_b, plus one all-reduce with no other (k = 1) when it spans servers."""
        t = cluster.mean_speed_time(spec.model.t_compute)
        if len(servers) > 1:
            t += self.model.time(spec.model.size_mb * MB, 1)
        return t

    def iteration_time(self, job: JobState, ex: JobExecutor) -> float:
        sim = ex.sim
        share = max(len(sim.residents[g]) for g in job.gpus)
        t = job.spec.model.t_compute * share
        speed = sim.cluster.slowest_speed(job.gpus)
        if speed != 1.0:
            t /= speed
        if job.cross_server:
            k = max(len(ex.cross_on[s]) for s in job.servers)
            t += self.model.time(job.spec.model.size_mb * MB, k)
        return t


class _Flow:
    __slots__ = ("job", "done", "rate", "last", "ver", "gpu_share")

    def __init__(self, job: JobState, start: float) -> None:
        self.job = job
        self.done = float(job.spec.iterations - job.iterations_left)
        self.rate = 0.0
        self.last = start
        self.ver = 0
        #: this job's share of its GPUs' busy time per second: sum over its GPUs of
        #: 1 / (jobs resident there), set at every re-timing (shared GPUs are not counted twice)
        self.gpu_share = 0.0


class JobExecutor:
    """Fluid job-level executor (SPEC §4 "job level")."""

    def __init__(self, rate_model: RateModel | None = None) -> None:
        self.rate_model = rate_model or WangJobLevel()

    def attach(self, sim: Simulator) -> None:
        self.sim = sim
        self.flows: dict[int, _Flow] = {}
        #: per server: ids of the running cross-server jobs that use it (Yu's p_j, Wang's k)
        self.cross_on: list[set[int]] = [set() for _ in range(sim.cluster.num_servers)]
        #: the rate model's time slot (Yu's per-slot accounting): finishes round up to it
        self.slot: float | None = getattr(self.rate_model, "slot", None)
        self._affected: set[int] = set()
        self.busy = 0.0

    def busy_gpu_seconds(self) -> float:
        return self.busy

    def alone_time(self, job: JobState) -> float:
        """Seconds ``job`` needs alone on its most consolidated placement (``AloneTimes``):
        its iterations × the rate model's ``alone_iteration`` (``NotImplementedError`` if the
        rate model has none: the run then reports no fairness metrics)."""
        alone = getattr(self.rate_model, "alone_iteration", None)
        if alone is None:
            raise NotImplementedError("this rate model gives no alone iteration time")
        cl = self.sim.cluster
        spec = job.spec
        return spec.iterations * alone(cl, spec, cl.consolidated_servers(spec.num_gpus))

    def _touch(self, job: JobState) -> None:
        """Mark every job sharing a GPU or (if cross-server) a server with ``job`` for re-timing."""
        sim = self.sim
        for g in job.gpus:
            for j in sim.residents[g]:
                self._affected.add(j.job_id)
        if job.cross_server:
            for s in job.servers:
                self._affected.update(self.cross_on[s])
        self._affected.add(job.job_id)

    def start(self, job: JobState, delay: float) -> None:
        f = _Flow(job, self.sim.now + delay)
        self.flows[job.job_id] = f
        if job.cross_server:
            for s in job.servers:
                self.cross_on[s].add(job.job_id)
        self._touch(job)

    def stop(self, job: JobState) -> None:
        f = self.flows.pop(job.job_id)
        f.ver += 1  # its pending finish event is void
        self._advance(f)
        job.iterations_left = max(job.spec.iterations - int(f.done + 1e-9), 0)
        if job.cross_server:
            for s in job.servers:
                self.cross_on[s].discard(job.job_id)
        self._touch(job)
        self._affected.discard(job.job_id)

    def refresh(self, job: JobState) -> None:
        f = self.flows.get(job.job_id)
        if f is not None:
            self._advance(f)
            left = job.spec.iterations - f.done
            job.service_left = max(left, 0.0) * job.spec.model.t_compute * job.num_gpus

    def _advance(self, f: _Flow) -> None:
        now = self.sim.now
        if now > f.last:
            step = (now - f.last) * f.rate if f.rate != float("inf") else f.job.spec.iterations
            f.done = min(f.done + step, float(f.job.spec.iterations))
            self.busy += (now - f.last) * f.gpu_share
            f.last = now

    def settle(self) -> None:
        if not self._affected:
            return
        now = self.sim.now
        for jid in sorted(self._affected):
            f = self.flows.get(jid)
            if f is None:
                continue
            self._advance(f)
            if now < f.last:  # still in its restart delay
                f.rate = 0.0
                start = f.last
            else:
                start = now
            t_iter = self.rate_model.iteration_time(f.job, self)
            residents = self.sim.residents
            f.gpu_share = sum(1.0 / len(residents[g]) for g in f.job.gpus)
            f.rate = 1.0 / t_iter if t_iter > 0 else float("inf")
            f.ver += 1
            left = f.job.spec.iterations - f.done
            end = start + left * t_iter if t_iter > 0 else start
            if self.slot:  # a job completes at the end of the slot where its last iteration ends
                end = math.ceil(end / self.slot - 1e-9) * self.slot
            self.sim.at(end, self._done, f, f.ver)
        self._affected.clear()

    def _done(self, f: _Flow, ver: int) -> None:
        if ver != f.ver or self.flows.get(f.job.job_id) is not f:
            return  # re-timed, or stopped (preempted) since
        self._advance(f)  # accounts its busy time up to now
        f.done = float(f.job.spec.iterations)
        del self.flows[f.job.job_id]
        job = f.job
        if job.cross_server:
            for s in job.servers:
                self.cross_on[s].discard(job.job_id)
        self._touch(job)
        self._affected.discard(job.job_id)
        self.sim.job_finished(job)
