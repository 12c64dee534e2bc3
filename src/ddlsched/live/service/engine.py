"""The live service's engine: the real-time engine that never runs out of jobs (they are
submitted while it runs, cancelled, drained) and the live executor that commits every decision
to the service's :class:`~ddlsched.live.service.store.JobStore` before it acts on it (docs/live.md,
"Operating the service").

Commit-before-act, per decision: start → ``store.start`` then launch (then the processes' ids
are recorded); preempt → ``store.preempt`` then stop; finish / crash / hang → recorded, then
GPUs freed or the job restarted; cancel → ``store.cancel`` (by the HTTP thread) then stop. A
crash of the service between the two halves leaves a record that says more than what happened,
never less: the restarted service ends whatever processes the store lists and requeues.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...core.job import JobSpec
from ...core.realtime import RealtimeSimulator
from ...core.state import DONE, JobState
from ...processes import process_start_time
from ..backend import LiveBackend
from ..executor import CANCEL, HUNG, PREEMPT, RUNNING, LiveExecutor, LiveRun  # noqa: F401
from ..launchers.base import end_process_group
from .store import JobStore, StateError, StoredJob

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["ServiceBackend", "ServiceExecutor", "ServiceSimulator"]


class ServiceExecutor(LiveExecutor):
    """``LiveExecutor`` whose jobs come from a store and whose every decision is committed
    there first; detects hung jobs (no new progress report for ``hang_timeout`` seconds,
    once a job has reported)."""

    def __init__(
        self,
        launcher: Any,
        store: JobStore,
        state_dir: Any,
        *,
        grace: float = 10.0,
        hang_timeout: float | None = 600.0,
        clock: Callable[[], float] = time.time,
        log: Any = None,
    ) -> None:
        super().__init__(launcher, {}, state_dir, grace=grace, cwd=os.getcwd(), log=log)
        self.store = store
        self.clock = clock
        self.hang_timeout = hang_timeout
        #: why the next preemption happens (recorded with it)
        self.preempt_reason = "preempted"
        self._changed: dict[int, float] = {}  # last progress change (wall clock), per job
        self._procs: dict[int, list[tuple[int, int]]] = {}  # (pid, start time) per job

    def attach(self, sim: Any) -> None:
        self.sim = sim
        self.runs = {}
        self.gpu_busy_done = [0.0] * sim.cluster.num_gpus

    def add(self, stored: StoredJob, attained: float = 0.0) -> None:
        """Know ``stored`` (its attempts, failures and the seconds it ran before)."""
        job = replace(stored.job, job_id=stored.id)
        self.live[stored.id] = job
        self.runs[stored.id] = LiveRun(
            job, attempt=stored.attempt, failures=stored.failures, attained=attained
        )

    # ------------------------------------------------------------------ decisions
    def _launch(self, job: JobState, r: LiveRun) -> None:
        attempt = r.attempt + 1
        try:
            self.store.start(job.job_id, job.gpus, attempt, self.clock())  # commit, then act
        except StateError:
            # cancelled by a request the loop has not taken yet: the inbox ends it next
            self._event("not_started", job, reason="cancelled meanwhile")
            self._states[job.job_id] = job
            return
        super()._launch(job, r)
        if r.launch_error is not None:
            return
        pids = self.launcher.poll(job.job_id).pids
        procs = [(p, process_start_time(p)) for p in pids]
        self._procs[job.job_id] = procs
        self.store.launched(job.job_id, attempt, procs)
        self._changed[job.job_id] = self.clock()

    def stop(self, job: JobState) -> bool:
        if self.intent == PREEMPT and self.store.job(job.job_id).state == "running":
            self.store.preempt(job.job_id, self.clock(), self.preempt_reason)  # commit, then act
        return super().stop(job)

    def record_finish(self, job: JobState, r: LiveRun) -> None:
        self.store.finish(job.job_id, self.clock())

    def record_fail(self, job: JobState, r: LiveRun, reason: str) -> None:
        self.store.fail(job.job_id, self.clock(), reason)

    def record_crash(self, job: JobState, r: LiveRun, reason: str) -> bool:
        again = self.store.crashed(job.job_id, self.clock(), reason)
        r.failures += 1
        return again

    def requeue(self, job: JobState, reason: str) -> None:
        # a worker whose host (a Ray actor) died may live on, orphaned: end it by its id
        for pid, start in self._procs.pop(job.job_id, []):
            end_process_group(pid, start, self.grace)
        self.preempt_reason = reason
        try:
            super().requeue(job, reason)
        finally:
            self.preempt_reason = "preempted"

    # ------------------------------------------------------------------ watching
    def poll(self) -> None:
        super().poll()
        if self.hang_timeout:
            self._hung()

    def _progress(self, job: JobState, r: LiveRun, p: Any) -> None:
        if p.progress is not None and p.progress != r.progress:
            self._changed[job.job_id] = self.clock()
        super()._progress(job, r, p)

    def _hung(self) -> None:
        """A job that reported progress and then none for ``hang_timeout`` s: recorded as a
        crash (so ``max_restarts`` bounds it), stopped, restarted from its checkpoint once
        its processes are gone (or failed)."""
        now = self.clock()
        for job_id, r in list(self.runs.items()):
            a = r.current
            since = self._changed.get(job_id)
            if a is None or a.state != RUNNING or r.progress is None or since is None:
                continue
            if now - since < self.hang_timeout:  # type: ignore[operator]
                continue
            job = self._states[job_id]
            reason = f"hung: no progress report for {now - since:.0f} s"
            a.restart = self.record_crash(job, r, reason)  # commit, then act
            self._event("hung", job, failures=r.failures, restart=a.restart)
            self.intent = HUNG
            super().stop(job)

    def step_of(self, job_id: int) -> object:
        """The latest step rank 0 of a running job reported (None before any)."""
        r = self.runs.get(job_id)
        return r.progress.get("step") if r is not None and r.progress else None


class ServiceSimulator(RealtimeSimulator):
    """``RealtimeSimulator`` that runs until told to stop: jobs are added (``add_job``) and
    cancelled while it runs; ``drain`` stops all scheduling and ends the loop once no job
    runs; ``between`` is called on every pass of the loop (the service's inbox)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("clock", time.time)
        super().__init__(*args, **kwargs)
        #: engine time 0, on the clock (unix time by default): jobs added later arrive at
        #: their submission time minus this
        self.origin = self._clock()
        self._t0 = self.origin
        self.by_id: dict[int, JobState] = {}
        self.draining = False
        self.stop_requested = False
        self.between: Callable[[], None] | None = None
        #: whether jobs may start now (False: the disk is nearly full); the policy is then not
        #: called, running jobs go on
        self.may_start: Callable[[], bool] = lambda: True
        #: the error of a policy that raised (it is called no more), and who hears of it
        self.policy_error: str | None = None
        self.on_policy_error: Callable[[str], None] | None = None

    def add_job(self, spec: JobSpec) -> JobState:
        """A new job, arriving at ``spec.arrival`` (engine time) or now if that is past. It
        joins ``jobs`` when it arrives, so that ``jobs[:arrived]`` stays the arrivals in
        order, as policies read them."""
        job = JobState(spec=spec)
        self.by_id[spec.job_id] = job
        added = getattr(self.executor, "job_added", None)
        if added is not None:  # an executor that models each job (application profiles)
            added(job)
        if self.admission is not None:
            self.admission.add(spec)  # type: ignore[attr-defined]  # its workload
        self.at(max(spec.arrival, self.now), self._arrive, job)
        return job

    def _arrive(self, job: JobState) -> None:
        if job.status != DONE:  # a job cancelled before it arrived never does
            if self.admission is not None:
                self._index[job.job_id] = len(self.jobs)  # where ``admit`` finds it
            self.jobs.append(job)
            super()._arrive(job)

    def cancel(self, job_id: int) -> None:
        """End ``job_id`` (its cancellation is already committed): out of the queue, or its
        processes asked to stop (its GPUs drain until they are gone). Policies see it among
        ``completed``."""
        job = self.by_id.get(job_id)
        if job is None or job.status == DONE:
            return
        executor = self.executor
        arrived = job in self.queue or self.running.get(job_id) is job
        if self.admission is not None:
            self.admission.forget(job_id)  # type: ignore[attr-defined]
        held = job in self.held
        if held:  # waiting for the quota layer: the policy saw it only if it was admitted once
            self.held.remove(job)
            arrived = self._index.get(job_id, len(self.jobs)) < self.arrived
        elif job in self.queue:
            self.queue.remove(job)
        elif self.running.get(job_id) is job:
            if self.launch_pending.pop(job_id, None) is not None:
                self._release(job)
            else:
                executor.intent = CANCEL  # type: ignore[attr-defined]
                self._release(job, draining=bool(executor.stop(job)))
        job.status = DONE
        if arrived:
            self.completed.append(job)
        if arrived or held:
            self.finished += 1
        self._dirty = True

    def _policy_pass(self) -> None:
        if not self.may_start():
            return  # stays dirty: the policy runs once jobs may start again
        if self.policy_error is None:
            try:
                super()._policy_pass()
            except Exception as e:  # noqa: BLE001 - the service outlives a broken policy
                self._broken(e)

    def _broken(self, e: Exception) -> None:
        """A policy that raised schedules nothing more; running jobs go on, the API answers,
        ``drain`` ends the service (the error is in ``/health`` and the service's log)."""
        self.policy_error = " ".join(f"{type(e).__name__}: {e}".split())
        if self.on_policy_error is not None:
            self.on_policy_error(self.policy_error)

    def _round(self, interval: float, tick: bool = False) -> None:
        if self.stop_requested:
            return
        if (
            not self.draining
            and self.policy_error is None
            and (self.queue or self.running)
            and self.may_start()
        ):
            try:
                super()._round(interval, tick)  # the policy's round; it schedules the next
            except Exception as e:  # noqa: BLE001
                self._broken(e)
        else:
            self.at(self.now + interval, self._round, interval, tick)

    def serve(self) -> None:
        """Run until ``stop_requested``, or until drained (no job running)."""
        interval = getattr(self.policy, "interval", None)
        if interval:
            self.at(0.0, self._round, float(interval))
        heap = self._heap
        executor = self.executor
        while not self.stop_requested:
            if self.between is not None:
                self.between()
            now = self.elapsed()
            while heap and heap[0][0] <= now:
                _, _, handler, args = heapq.heappop(heap)
                self.now = max(self.now, now)
                handler(*args)
            self.now = max(self.now, self.elapsed())
            executor.poll()  # type: ignore[attr-defined]
            if self.draining:
                self._dirty = False
                if not self.running:
                    break
            elif self._dirty:
                self._policy_pass()
            executor.settle()
            wait = self.poll_interval
            if heap:
                wait = min(wait, heap[0][0] - self.elapsed())
            if wait > 0:
                self._sleep(wait)


class ServiceBackend(LiveBackend):
    """The live backend of ``ddlsched serve``: a ``ServiceSimulator``."""

    name = "live-service"

    def engine(self) -> type[ServiceSimulator]:
        return ServiceSimulator
