"""The one event-driven engine (SPEC §4).

Continuous time, fluid progress between events. The ``Simulator`` owns the clock, the event heap,
the queue of waiting jobs and the cluster's GPU bookkeeping (memory, residents). *How* running jobs
progress is delegated to an ``Executor`` (iteration-level DAG or job-level fluid rates); *which*
jobs start where is decided by a ``Policy``. Events are processed in time order; after all events
of one instant, the engine runs the policy (if the queue or the resources changed) and lets the
executor settle (gates, idle GPUs, rate updates) — the per-slot order of Wang Alg. 3.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

import numpy as np

from ..errors import InputError, PolicyError, ScheduleError
from .cluster import Cluster
from .freegpus import FreeGpus
from .job import JobSpec
from .protocols import (
    Admission,
    AloneTimes,
    Configurable,
    Elastic,
    Evictions,
    HostsAgents,
    JobAgent,
    JobConfig,
    JobTimes,
    OwnsEvents,
    Periodic,
    RanksGpus,
    RoundHook,
    SchedulingPolicy,
    StopDelays,
    SummaryExtras,
    Ticks,
)
from .results import SimResult, build_result
from .state import DONE, HELD, QUEUED, RUNNING, JobState, Segment

if TYPE_CHECKING:  # pragma: no cover
    from ..policies.plugins import PolicyOrigin

__all__ = ["TIME_DIGITS", "Executor", "JobTimes", "Simulator", "quantize"]


#: Event times live on a 1 ns grid: sums of task durations and their products (shortcuts) then
#: land on the very same float, so coincident events stay coincident.
TIME_DIGITS = 9


_E = TypeVar("_E")


def quantize(t: float) -> float:
    """Round a time to the engine's 1 ns grid."""
    return round(t, TIME_DIGITS)


class Executor(Protocol):
    """How running jobs make progress. Implementations: ``TaskExecutor``, ``JobExecutor``."""

    def attach(self, sim: Simulator) -> None: ...

    def start(self, job: JobState, delay: float) -> None: ...

    def stop(self, job: JobState) -> bool | None:
        """Stop ``job``'s run. A falsy return: it is stopped now. ``True``: the stop was only
        requested (real processes checkpoint and exit); the executor calls
        ``Simulator.stop_done(job)`` once they are gone, and the job's GPUs drain until then."""

    def refresh(self, job: JobState) -> None:
        """Bring ``job.service_left``/``iterations_left`` up to ``sim.now`` (for policies)."""

    def settle(self) -> None:
        """End-of-instant work: gates, idle GPUs, rate changes."""

    def busy_gpu_seconds(self) -> float: ...


class Simulator:
    """Runs ``jobs`` on ``cluster`` under ``policy`` with ``executor``; deterministic per seed."""

    #: stop a run whose rounds go on without progress (``_check_stalled``); a wall-clock
    #: engine has real jobs to wait for and never does
    guards_stalls = True

    def __init__(
        self,
        cluster: Cluster,
        jobs: Sequence[JobSpec],
        policy: SchedulingPolicy,
        executor: Executor,
        *,
        seed: int = 0,
        max_jobs_per_gpu: int | None = None,
        restart_delay: float = 0.0,
        progress: Callable[[int, int], None] | None = None,
        semantics: str = "events",
        round_interval: float = 60.0,
        policy_origin: PolicyOrigin | None = None,
        builtin_policy: bool = False,
        polls_every: float = 0.0,
    ) -> None:
        self.cluster = cluster
        self.policy = policy
        self.executor = executor
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.max_jobs_per_gpu = max_jobs_per_gpu
        self.restart_delay = restart_delay
        self.progress = progress
        if semantics not in ("events", "rounds"):
            raise ValueError(f"unknown semantics {semantics!r}")
        #: ``rounds``: the Pollux artifact's loop — arrivals seen, GPUs freed and the policy
        #: called only every ``round_interval`` seconds; the executor must offer ``tick(now)``
        self.semantics = semantics
        self.round_interval = round_interval
        #: a user policy's origin: its exceptions become one-line ``PolicyError``s naming it
        self.policy_origin = policy_origin
        #: a built-in policy: a schedule the engine rejects is a bug (RuntimeError), not input
        self.builtin_policy = builtin_policy
        #: what this run is, as its backend resolved it (``SimResult.resolved``)
        self.resolved: dict[str, object] = {}
        #: ``rounds``: GPU-seconds jobs held their GPUs after they finished, until the boundary
        self.held_after_finish = 0.0
        self.now = 0.0
        self.jobs = [JobState(spec=s) for s in sorted(jobs, key=lambda s: (s.arrival, s.job_id))]
        self.queue: list[JobState] = []
        self.running: dict[int, JobState] = {}
        self.finished = 0
        #: finished jobs in completion order (policies read what is new since their last call)
        self.completed: list[JobState] = []
        n = cluster.num_gpus
        self.mem_free = [cluster.gpu_memory(g) for g in range(n)]
        self.residents: list[list[JobState]] = [[] for _ in range(n)]
        self._heap: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        self._dirty = True  # the policy should look at the queue at the end of this instant
        self.events_processed = 0
        #: jobs of ``jobs`` that have arrived so far (arrivals happen in ``jobs`` order)
        self.arrived = 0
        #: the idle GPUs (no resident), ranked by the executor's ``gpu_busy`` where it has one
        self.idle = FreeGpus(
            cluster, executor.gpu_busy if isinstance(executor, RanksGpus) else None
        )
        self._epoch = 0  # bumped whenever a job starts or leaves GPUs
        self._loads: list[float] = []
        self._loads_key: tuple[float, int] | None = None
        self._resized = False  # a job was started on another GPU count than it asked for
        #: stops requested and not yet done (real processes checkpointing): job id → the GPUs
        #: its old run still occupies; ``gpu_draining[g]`` counts such runs on GPU g
        self.stopping: dict[int, tuple[int, ...]] = {}
        self.gpu_draining = [0] * n
        #: jobs started on GPUs that still drain (or while their own old run stops): launched
        #: by ``stop_done`` once the GPUs are clear, in start order; job id → (job, delay)
        self.launch_pending: dict[int, tuple[JobState, float]] = {}
        #: > 0: the engine decides as a live engine polling its jobs every ``polls_every``
        #: seconds (``observe_at``, ``_loop_polled``); 0: at every event's exact time
        self.polls_every = polls_every
        #: observed events (``observe_at``): (time, seq, handler, args), and those made during
        #: the current iteration of ``_loop_polled`` (seen from the next one on)
        self._observed: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._fresh: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        #: the quota layer (``--queues``; ``core.admission``), None: every arrival is queued.
        #: With one, arrivals wait in ``held`` until admitted; ``arrived`` counts the jobs the
        #: policy has seen (``jobs[:arrived]``, in the order of their first admission)
        self.admission: Admission | None = None
        self.held: list[JobState] = []
        #: jobs whose arrival has happened, admitted or not (= ``arrived`` without queues)
        self.entered = 0
        self._index: dict[int, int] = {}
        #: the livelock guard (``_check_stalled``): (finished, entered) at its last sample, and
        #: since when no job finished, arrived or computed
        self._stall_mark: tuple[int, int] = (-1, -1)
        self._stall_since = 0.0
        self._stall_worked = 0.0  # the last preemption of a job that had computed
        self._stall_next = 0.0  # the next sample
        self._stall_window: float | None = None
        executor.attach(self)
        try:
            policy.attach(self)
        except (Exception, SystemExit) as e:
            self._policy_failed("attach", e)
        if isinstance(policy, JobAgent) and isinstance(executor, HostsAgents):
            executor.register_agent(policy)  # the policy is its jobs' agent (Pollux)

    def _policy_failed(self, hook: str, exc: BaseException) -> NoReturn:
        """Re-raise ``exc``, raised by the policy's ``hook``: a user policy's as a one-line error
        naming it; a schedule a built-in policy made that the engine rejects as a bug."""
        if isinstance(exc, ScheduleError) and self.builtin_policy:
            raise RuntimeError(f"built-in policy {self.policy.name}: {exc}") from exc
        if self.policy_origin is not None and (
            isinstance(exc, ScheduleError) or not isinstance(exc, InputError)
        ):
            raise self.policy_origin.error(exc, hook) from exc
        raise exc

    # ------------------------------------------------------------------ events
    def at(self, time: float, handler: Callable[..., None], *args: Any) -> None:
        """Schedule ``handler(*args)`` at ``time`` (ties keep insertion order: deterministic)."""
        self._seq += 1
        heapq.heappush(self._heap, (round(time, TIME_DIGITS), self._seq, handler, args))

    def observe_at(self, time: float, handler: Callable[..., None], *args: Any) -> None:
        """Schedule ``handler(*args)``, something the engine learns by looking at the jobs (a
        job's end, a stop's completion), at ``time``. With ``polls_every`` = p > 0 it runs at
        the first later iteration of the polling loop at or after ``time`` − p/2 (the nearest
        poll: a live engine sees an exit at its next poll, and a duration measured live ends
        at a poll already); else exactly as ``at``."""
        if not self.polls_every:
            self.at(time, handler, *args)
            return
        self._seq += 1
        self._fresh.append((round(time, TIME_DIGITS), self._seq, handler, args))

    def request_schedule(self) -> None:
        """Ask for a policy pass at the end of the current instant."""
        self._dirty = True

    # ------------------------------------------------------------------ the quota layer
    def set_admission(self, admission: Admission) -> None:
        """Run with a quota layer (before ``run``): arrivals are held until it admits them."""
        self.admission = admission
        self._index = {j.job_id: k for k, j in enumerate(self.jobs)}
        admission.attach(self)

    def admit(self, jobs: Sequence[JobState]) -> None:
        """The quota layer admitted ``jobs`` (held ones): they join the queue the policy sees,
        in this order; a job's first admission is its arrival for the policy (it moves to
        ``jobs[arrived]``)."""
        if not jobs:
            return
        ids = {j.job_id for j in jobs}
        self.held = [j for j in self.held if j.job_id not in ids]
        index, order = self._index, self.jobs
        for job in jobs:
            job.status = QUEUED
            self.queue.append(job)
            k = index[job.job_id]
            if k >= self.arrived:  # first admission: swap it to the policy's arrivals
                other = order[self.arrived]
                order[k], order[self.arrived] = other, job
                index[other.job_id], index[job.job_id] = k, self.arrived
                self.arrived += 1
        self._dirty = True

    def evict(self, job: JobState) -> None:
        """The quota layer took ``job``'s admission back: stopped if it runs (a preemption,
        progress kept), out of the queue, held until admitted again; the policy is told
        (``on_evicted``) when it wants to be."""
        if self.running.get(job.job_id) is job:
            self.preempt(job)
        self.queue.remove(job)
        job.status = HELD
        self.held.append(job)
        self._dirty = True
        if isinstance(self.policy, Evictions):
            try:
                self.policy.on_evicted(self, job)
            except (Exception, SystemExit) as e:
                self._policy_failed("on_evicted", e)

    # ------------------------------------------------------------------ queries for policies
    def fits(self, job: JobState, gpu: int) -> bool:
        """Whether one more worker of ``job`` fits on ``gpu`` (memory and sharing degree)."""
        if self.max_jobs_per_gpu is not None and len(self.residents[gpu]) >= self.max_jobs_per_gpu:
            return False
        return self.mem_free[gpu] >= job.spec.memory_mb

    def gpu_load(self, gpu: int) -> float:
        """Remaining workload of a GPU (Wang's L_g): the remaining service of its residents."""
        return self.gpu_loads()[gpu]

    def gpu_loads(self) -> list[float]:
        """L_g of every GPU, computed once per instant and placement change (cached)."""
        key = (self.now, self._epoch)
        if self._loads_key != key:
            loads = [0.0] * self.cluster.num_gpus
            refresh = self.executor.refresh
            for j in self.running.values():
                refresh(j)
                svc = j.service_left
                for g in j.gpus:
                    loads[g] += svc
            self._loads = loads
            self._loads_key = key
        return self._loads

    def estimates(self, interface: type[_E]) -> _E:
        """The executor's estimates through the declared ``interface`` (``JobTimes``,
        ``ProfileEstimates`` of ``core.protocols``); ``TypeError`` if this run's jobs have
        none (e.g. a policy for application-profile jobs on jobs with a model profile)."""
        executor = self.executor
        if not isinstance(executor, interface):
            raise TypeError(
                f"this run's executor ({type(executor).__name__}) offers no "
                f"{interface.__name__}: the policy does not run on these jobs"
            )
        return executor

    # ------------------------------------------------------------------ actions for policies
    def _check_start(self, job: JobState, gpus: tuple[int, ...], resize: bool) -> None:
        """Raise ``ScheduleError`` naming the job and the rule if ``job`` may not start on
        ``gpus``: it must be waiting, the GPUs existing ids, distinct, as many as it asked
        (unless ``resize``) and each must fit it (sharing degree, memory)."""
        if not isinstance(job, JobState):
            raise ScheduleError(f"start needs a job of sim.queue, got {type(job).__name__}")
        jid = job.job_id
        status = job.status
        if status != QUEUED:
            raise ScheduleError(f"job {jid} cannot start: it is not waiting (it is {status})")
        n = self.cluster.num_gpus
        for g in gpus:
            if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 0 <= g < n:
                raise ScheduleError(
                    f"job {jid} cannot start on GPU {g!r}: GPU ids are integers 0 to {n - 1}"
                )
        if len(set(gpus)) != len(gpus):
            raise ScheduleError(f"job {jid} cannot start on GPUs {list(gpus)}: a GPU appears twice")
        held = job.flavor_type
        if held is not None:
            wrong = [g for g in gpus if self.cluster.gpu_type(g) != held]
            if wrong:
                raise ScheduleError(
                    f"job {jid} cannot start on GPU {wrong[0]} ({self.cluster.gpu_type(wrong[0])}):"
                    f" its Kueue flavor holds it to GPU type {held}"
                )
        if not gpus or (not resize and len(gpus) != job.num_gpus):
            raise ScheduleError(
                f"job {jid} asked for {job.num_gpus} GPU(s), the policy gave it {len(gpus)}"
            )
        for g in gpus:
            if (
                self.max_jobs_per_gpu is not None
                and len(self.residents[g]) >= self.max_jobs_per_gpu
            ):
                held = ", ".join(str(j.job_id) for j in self.residents[g])
                raise ScheduleError(
                    f"job {jid} cannot start on GPU {g}: it is busy with job(s) {held} "
                    f"(at most {self.max_jobs_per_gpu} job(s) per GPU in this run)"
                )
            if self.mem_free[g] < job.spec.memory_mb:
                raise ScheduleError(
                    f"job {jid} cannot start on GPU {g}: it needs {job.spec.memory_mb:g} MB, "
                    f"{self.mem_free[g]:g} MB are free"
                )

    def start(
        self,
        job: JobState,
        gpus: Sequence[int],
        config: JobConfig | None = None,
        *,
        resize: bool = False,
    ) -> None:
        """Place ``job`` on ``gpus`` (distinct, each must fit) and start it, with ``config``
        (batch, micro-batch limit; application-profile jobs) if given. ``resize`` lets an
        elastic policy (Pollux) give the job another number of GPUs than it requested. A
        schedule the engine rejects raises ``ScheduleError`` (nothing is changed)."""
        gpus = tuple(gpus)
        self._check_start(job, gpus, resize)
        configure = None
        if config is not None:
            executor = self.executor
            if not isinstance(executor, Configurable):
                raise ScheduleError(
                    f"job {job.job_id} cannot start with {config}: these jobs take no configuration"
                )
            configure = executor.configure
        try:
            self.queue.remove(job)
        except ValueError:
            raise ScheduleError(f"job {job.job_id} cannot start: it has not arrived") from None
        mem = job.spec.memory_mb
        for g in gpus:
            self.mem_free[g] -= mem
            if not self.residents[g]:
                self.idle.take(g)
            self.residents[g].append(job)
        self._resized |= len(gpus) != job.num_gpus
        job.status = RUNNING
        job.gpus = gpus
        job.servers = self.cluster.servers_of(gpus)
        delay = 0.0 if job.start is None else self.restart_delay_of(job)
        self.running[job.job_id] = job
        self._epoch += 1
        if configure is not None and config is not None:
            configure(job, config)
        if job.job_id in self.stopping or any(self.gpu_draining[g] for g in gpus):
            # real processes still on these GPUs (or the job's own old run still stopping):
            # the job holds the GPUs now and is launched once they are clear (``stop_done``)
            self.launch_pending[job.job_id] = (job, delay)
            return
        self._launch(job, delay)

    def restart_delay_of(self, job: JobState) -> float:
        """Seconds without progress at each restart of ``job``: its own
        (``JobSpec.restart_delay``) where it has one, else the run's ``restart_delay``."""
        own = job.spec.restart_delay
        return self.restart_delay if own is None else own

    def _launch(self, job: JobState, delay: float) -> None:
        """Open the job's segment and hand it to the executor (its processes start now)."""
        if job.start is None:
            job.start = self.now
        job.segments.append(Segment(job.job_id, self.now, float("nan"), job.gpus))
        self.executor.start(job, delay)

    def resize(self, job: JobState, gpus: Sequence[int], config: JobConfig | None = None) -> None:
        """Start ``job`` on ``gpus``, as many as the policy chooses (an elastic policy), with
        ``config``; a running job is first preempted (it keeps its progress)."""
        if isinstance(job, JobState) and self.running.get(job.job_id) is job:
            self.preempt(job)
        self.start(job, gpus, config, resize=True)

    def preempt(self, job: JobState) -> None:
        """Stop a running job, keep its progress, put it back in the queue (``ScheduleError``
        if it is not running)."""
        if not isinstance(job, JobState):
            raise ScheduleError(f"preempt needs a running job, got {type(job).__name__}")
        if self.running.get(job.job_id) is not job:
            raise ScheduleError(
                f"job {job.job_id} cannot be preempted: it is not running (it is {job.status})"
            )
        if self.launch_pending.pop(job.job_id, None) is not None:
            self._release(job)  # never launched: nothing to stop, no preemption
        else:
            if self._computes(job):
                self._stall_worked = self.now
            self._release(job, draining=bool(self.executor.stop(job)))
            job.preemptions += 1
        job.status = QUEUED
        self.queue.append(job)
        self._dirty = True

    def stop_done(self, job: JobState) -> None:
        """The executor's callback: ``job``'s requested stop completed (its processes are
        gone). Its old segment ends now, its GPUs stop draining, and the jobs waiting for
        them launch (in the order they were started)."""
        gpus = self.stopping.pop(job.job_id, None)
        if gpus is None:
            return
        for seg in reversed(job.segments):
            if seg.end != seg.end:  # NaN: the stopped run's segment
                seg.end = self.now
                break
        for g in gpus:
            self.gpu_draining[g] -= 1
        self._epoch += 1
        self._dirty = True
        for jid, (waiting, delay) in list(self.launch_pending.items()):
            if jid in self.stopping or any(self.gpu_draining[g] for g in waiting.gpus):
                continue
            del self.launch_pending[jid]
            self._launch(waiting, delay)

    # ------------------------------------------------------------------ executor callbacks
    def job_finished(self, job: JobState, at: float | None = None) -> None:
        """``job`` completed at ``at`` (default now; earlier in ``rounds`` semantics, where its
        GPUs are freed only at the boundary: its last segment ends at ``at``, the GPU-seconds
        until now count in ``held_after_finish``)."""
        job.finish = self.now if at is None else at
        if self.running.get(job.job_id) is job:
            pending = self.launch_pending.pop(job.job_id, None) is not None
            if pending and job.job_id in self.stopping:
                job.preemptions -= 1  # restarted while it stopped, and finished instead
            self._release(job)
            if pending and job.job_id in self.stopping:  # its old run's processes are gone
                job.segments[-1].end = self.now
            if pending and job.segments:  # it never ran on the GPUs it was restarted on
                job.gpus = job.segments[-1].gpus
                job.servers = self.cluster.servers_of(job.gpus)
        elif job in self.queue:  # it finished its work while its stop was under way:
            self.queue.remove(job)  # the stop did not preempt it
            job.preemptions -= 1
        elif job in self.held:  # … and was evicted by the quota layer meanwhile
            self.held.remove(job)
            job.preemptions -= 1
        if at is not None:
            job.segments[-1].end = at
            self.held_after_finish += (self.now - at) * len(job.gpus)
        job.status = DONE
        job.iterations_left = 0
        job.service_left = 0.0
        self.finished += 1
        self.completed.append(job)
        self._dirty = True
        if self.progress is not None:
            self.progress(self.finished, len(self.jobs))

    def _release(self, job: JobState, draining: bool = False) -> None:
        """``job`` leaves its GPUs in the engine's books. With ``draining`` its processes are
        still stopping: the GPUs may be given to other jobs, which launch once ``stop_done``
        says the processes are gone (the segment ends then)."""
        self._epoch += 1
        mem = job.spec.memory_mb
        for g in job.gpus:
            self.mem_free[g] += mem
            self.residents[g].remove(job)
            if not self.residents[g]:
                self.idle.give(g)
        if draining:
            self.stopping[job.job_id] = job.gpus
            for g in job.gpus:
                self.gpu_draining[g] += 1
        elif (  # a restart that waited for its old run's stop: ``stop_done`` ends that segment
            job.job_id not in self.stopping
            and job.segments
            and job.segments[-1].end != job.segments[-1].end
        ):
            job.segments[-1].end = self.now
        del self.running[job.job_id]

    def _arrive(self, job: JobState) -> None:
        self._dirty = True
        self.entered += 1
        if self.admission is not None:
            job.status = HELD
            self.held.append(job)
            return
        self.arrived += 1
        self.queue.append(job)

    def _round(self, interval: float, tick: bool = False) -> None:
        """A policy round; with ``tick`` (``rounds`` semantics) the executor first advances
        every running job one step."""
        if tick:
            executor = self.executor
            if not isinstance(executor, Ticks):
                raise TypeError(f"rounds semantics needs an executor with tick(), not {executor!r}")
            executor.tick(self.now)
        if self.finished < len(self.jobs):
            policy = self.policy
            if self.admission is not None:
                self.admission.cycle(self)
            try:
                if not isinstance(policy, RoundHook):
                    raise AttributeError(
                        f"{type(policy).__name__!r} object has no attribute 'on_round'"
                    )
                policy.on_round(self)
            except (Exception, SystemExit) as e:
                self._policy_failed("on_round", e)
            self._dirty = True
            self.at(self.now + interval, self._round, interval, tick)

    def _check_stalled(self) -> None:
        """Livelock guard (a policy's rounds keep the clock going forever): a ``ScheduleError``
        once, for ``stall_window`` seconds, jobs were waiting or running, yet none finished or
        arrived and none computed (ran past its restart delay: seen at its preemption, or
        while running at a sample every tenth of the window). A policy that preempts jobs
        every round, with stop and restart delays longer than its round, does that: its jobs
        only ever restart."""
        if self.now < self._stall_next:
            return
        window = self.stall_window()
        self._stall_next = self.now + window / 10
        mark = (self.finished, self.entered)
        if (
            mark != self._stall_mark
            or self.entered == self.finished  # nothing to run until the next arrival
            or any(self._computes(j) for j in self.running.values())
        ):
            self._stall_mark, self._stall_since = mark, self.now
            return
        since = max(self._stall_since, self._stall_worked)
        if self.now - since <= window:
            return
        left, idle = len(self.jobs) - self.finished, not self.running and not self.stopping
        why = (
            f"the policy left {left} job(s) waiting with none running"
            if idle
            else f"{left} job(s) unfinished, and none finished, arrived or ran past its "
            "restart delay (stop and restart delays longer than the policy's round let "
            "preempted jobs only restart)"
        )
        text = f"no progress for {self.now - since:g} simulated seconds since {since:g} s: {why}"
        if self.policy_origin is not None:
            raise ScheduleError(text, source=self.policy_origin.label)
        raise ScheduleError(f"{text} (policy {self.policy.name!r})", field="policy")

    def _computes(self, job: JobState) -> bool:
        """``job``'s processes have run longer than the delay of their launch (a restart's
        ``restart_delay``; none at the first), so it has done work."""
        if job.job_id in self.launch_pending or not job.segments:
            return False
        seg = job.segments[-1]
        delay = self.restart_delay_of(job) if len(job.segments) > 1 else 0.0
        return seg.end != seg.end and self.now - seg.start > delay

    def stall_window(self) -> float:
        """Seconds without progress ``_check_stalled`` allows: a week of simulated time, or
        100 × the longest stop plus restart delay of a job if longer (computed once)."""
        if self._stall_window is None:
            ex = self.executor
            stop = float(ex.stop_delay) if isinstance(ex, StopDelays) else 0.0
            longest = max(
                (
                    self.restart_delay_of(j)
                    + (stop if j.spec.stop_delay is None else j.spec.stop_delay)
                    for j in self.jobs
                ),
                default=0.0,
            )
            self._stall_window = max(7 * 86400.0, 100.0 * longest)
        return self._stall_window

    # ------------------------------------------------------------------ main loop
    def _loop(self) -> int:
        """Process every event in time order, then the policy and ``settle`` after each
        instant; return the number of events."""
        if self.polls_every:
            return self._loop_polled()
        if isinstance(self.executor, OwnsEvents):
            return self._loop_shared(self.executor)
        heap = self._heap
        pop = heapq.heappop
        settle = self.executor.settle
        count = 0
        while heap:
            now, _, handler, args = pop(heap)
            self.now = now
            handler(*args)
            count += 1
            while heap and heap[0][0] == now:
                _, _, handler, args = pop(heap)
                handler(*args)
                count += 1
            if self._dirty:
                self._policy_pass()
            settle()
        return count

    def _loop_shared(self, ex: OwnsEvents) -> int:
        """``_loop`` with an executor that has its own heap: it runs its instants alone until
        one needs the engine (a job finished) or an engine event is due; instants with events
        of both heaps are processed here in (time, sequence) order. Same events, same order."""
        heap = self._heap
        pop = heapq.heappop
        settle = self.executor.settle
        before = ex.own_events()
        count = 0
        while True:
            t = ex.own_run(heap[0][0] if heap else None, self._dirty)
            if t is not None:  # an instant of its own that needs the policy
                if self._dirty:
                    self._policy_pass()
                settle()
                continue
            if not heap:
                break
            now = heap[0][0]
            self.now = now
            while True:
                own = ex.own_next()
                own_now = own is not None and own[0] == now
                if heap and heap[0][0] == now and (not own_now or heap[0][1] < own[1]):
                    _, _, handler, args = pop(heap)
                    handler(*args)
                    count += 1
                elif own_now:
                    ex.own_events_at(now, heap[0][1] if heap and heap[0][0] == now else None)
                else:
                    break
            if self._dirty:
                self._policy_pass()
            settle()
        return count + ex.own_events() - before

    def _loop_polled(self) -> int:
        """``_loop`` as the live engine's loop (``core/realtime.py``) runs it, in simulated time:
        iterations at 0, then every ``polls_every`` seconds after the previous one or at the
        next timed event (arrival, round) if earlier; each runs the events due, then what is
        observed by then (``observe_at``), then the policy and ``settle``. Iterations where
        nothing happens are skipped (they would change nothing)."""
        heap, seen, fresh = self._heap, self._observed, self._fresh
        pop, push = heapq.heappop, heapq.heappush
        p = self.polls_every
        half = p / 2
        settle = self.executor.settle
        count = 0
        t = 0.0
        while True:
            self.now = t
            while heap and heap[0][0] <= t:
                _, _, handler, args = pop(heap)
                handler(*args)
                count += 1
            while seen and seen[0][0] - half <= t + 1e-9:
                _, _, handler, args = pop(seen)
                handler(*args)
                count += 1
            if self._dirty:
                self._policy_pass()
            settle()
            for item in fresh:
                push(seen, item)
            fresh.clear()
            nxt = math.inf
            if heap:
                nxt = max(heap[0][0], t)  # due now (made during this iteration): at once
            if seen:
                k = max(1, math.ceil((seen[0][0] - half - t) / p - 1e-9))
                nxt = min(nxt, t + k * p)
            if nxt == math.inf:
                return count
            t = round(nxt, TIME_DIGITS)

    def _policy_pass(self) -> None:
        """The policy's ``schedule`` at the end of an instant where something changed."""
        self._dirty = False
        if self.guards_stalls:
            self._check_stalled()
        if self.admission is not None:
            self.admission.cycle(self)
        if self.queue:
            self._loads_key = None  # loads are recomputed once per policy pass
            try:
                self.policy.schedule(self)
            except (Exception, SystemExit) as e:
                self._policy_failed("schedule", e)

    def run(self) -> SimResult:
        """Process all events; return per-job records and the summary."""
        rounds = self.semantics == "rounds"
        step = self.round_interval
        for job in self.jobs:
            job.iterations_left = job.spec.iterations
            # rounds: a job submitted at s is first seen at max(I, ⌈s/I⌉·I)
            t = max(step, math.ceil(job.arrival / step - 1e-9) * step) if rounds else job.arrival
            self.at(t, self._arrive, job)
        interval = self.policy.interval if isinstance(self.policy, Periodic) else None
        if interval and not (
            isinstance(interval, (int, float, np.integer, np.floating))
            and not isinstance(interval, bool)
            and math.isfinite(interval)
            and interval > 0
        ):
            text = f"its interval must be a number of seconds > 0, got {interval!r}"
            if self.policy_origin is not None:
                raise PolicyError(text, source=self.policy_origin.label)
            raise ValueError(text)
        if rounds:
            self.at(step, self._round, step, True)
        elif interval:
            self.at(self.jobs[0].arrival if self.jobs else 0.0, self._round, float(interval))
        try:
            count = self._loop()
        except InputError:
            raise
        except (Exception, SystemExit) as e:  # a user policy's code elsewhere (e.g. its gate)
            hook = self.policy_origin.hook_of(e) if self.policy_origin is not None else None
            if hook is None:
                raise
            raise self.policy_origin.error(e, hook) from e  # type: ignore[union-attr]
        self.events_processed = count
        unfinished = [j.job_id for j in self.jobs if j.status != DONE]
        if unfinished:
            text = (
                f"simulation ended with {len(unfinished)} unfinished jobs "
                f"(first: {unfinished[:5]}); a job may never fit"
            )
            if self.policy_origin is not None:
                raise ScheduleError(
                    f"the policy left {len(unfinished)} job(s) waiting forever "
                    f"(first: {unfinished[:5]})",
                    source=self.policy_origin.label,
                )
            raise RuntimeError(text)
        alone = self.executor.alone_time if isinstance(self.executor, AloneTimes) else None
        try:
            res = build_result(self.cluster, self.jobs, self.executor.busy_gpu_seconds(), alone)
        except NotImplementedError:  # an executor (rate model) without alone times
            res = build_result(self.cluster, self.jobs, self.executor.busy_gpu_seconds())
        res = replace(res, resolved=dict(self.resolved))
        # what the run allowed, for `ddlsched check`: jobs per GPU (0 = memory only) and
        # whether jobs may run on another GPU count than they asked for
        res.summary["max_jobs_per_gpu"] = int(self.max_jobs_per_gpu or 0)
        elastic = isinstance(self.policy, Elastic) and self.policy.elastic
        res.summary["elastic"] = bool(elastic or self._resized)
        if rounds:
            res.summary["held_after_finish_gpu_seconds"] = self.held_after_finish
        if self.admission is not None:
            res = replace(res, queues=self.admission.finish(self, res.summary))
        if isinstance(self.policy, SummaryExtras):
            try:
                res.summary.update(self.policy.summary_extras(self))
            except (Exception, SystemExit) as e:
                self._policy_failed("summary_extras", e)
        return res
