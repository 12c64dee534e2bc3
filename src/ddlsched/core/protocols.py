"""The policy ↔ engine contract: what the engine calls on a policy and the optional
capabilities a policy or an executor declares.

Every optional feature is a small protocol here: the engine tests it with ``isinstance``
(``runtime_checkable``) instead of probing attributes with ``getattr``. A policy needs only
``SchedulingPolicy``; it gains a feature by having the members of a capability protocol (no
base class to inherit). ``ddlsched.policy`` re-exports these names for policy authors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from ..perf.profiles import Application, BatchConfig
    from .simulator import Simulator
    from .state import JobState


@runtime_checkable
class SchedulingPolicy(Protocol):
    """What the engine calls on a policy.

    Required: ``name``; ``attach(sim)`` once when the simulation is built; ``schedule(sim)`` at
    the end of every instant where jobs arrived, finished or were preempted and the queue is
    not empty — start jobs with ``sim.start(job, gpus)``.

    Optional capabilities, each a protocol of ``ddlsched.policy`` the engine tests with
    ``isinstance``:

    - ``Periodic`` (``interval: float | None`` and ``on_round(sim)``) — if ``interval`` is set,
      ``on_round(sim)`` runs every ``interval`` seconds from the first arrival; it may
      ``sim.preempt(job)`` (job granularity and application-profile jobs; the iteration level
      cannot preempt) and start jobs;
    - ``GatesAllReduce`` (``gate: CommGate | None``) — all-reduce gate of the iteration-level
      executor (jobs with a model profile, ``granularity=iteration``);
    - ``SharesGpus`` (``jobs_per_gpu: int``) — GPU sharing degree for application-profile and
      trace jobs (default 1);
    - ``Elastic`` (``elastic: bool``) — the policy starts jobs on another GPU count than they
      asked for (``sim.start(job, gpus, resize=True)``, as Pollux does); recorded in
      ``summary.json``;
    - ``SummaryExtras`` (``summary_extras(sim) -> dict``) — extra keys for ``summary.json``.

    - ``JobAgent`` (``observe(run)``, ``rebatch(run)``) — the policy is also its jobs' agent
      (application-profile jobs): the engine registers it with the executor.

    What a policy may use of ``sim`` (stable): ``now``, ``cluster``, ``jobs``, ``queue``
    (waiting ``JobState``s), ``running`` (job id → ``JobState``), ``residents`` (GPU → jobs on
    it), ``idle`` (GPUs without a job), ``rng`` (the run's seeded generator: the only
    randomness allowed), ``fits(job, gpu)``, ``gpu_loads()`` (Wang's remaining workload per
    GPU), ``estimates(JobTimes)`` / ``estimates(ProfileEstimates)`` (the executor's estimates:
    remaining time alone, per GPU busy time, configurations; application-profile and trace
    jobs); and to act: ``start(job, gpus, config=None)`` (``config``: a ``JobConfig``),
    ``resize(job, gpus, config=None)`` (elastic), ``preempt(job)``, ``request_schedule()``. Of a ``JobState``: ``job_id``, ``spec`` (the ``JobSpec``),
    ``num_gpus``, ``arrival``, ``status``, ``gpus``, ``servers``, ``start``, ``preemptions``,
    ``iterations_left`` and ``service_left`` (model-profile jobs). ``sim.executor`` is internal.
    """

    name: str

    def attach(self, sim: Simulator) -> None: ...

    def schedule(self, sim: Simulator) -> None: ...


# ---------------------------------------------------------------- policy capabilities
@runtime_checkable
class RoundHook(Protocol):
    """A policy with ``on_round(sim)``: called every round (``rounds`` semantics, and every
    ``interval`` seconds for a ``Periodic`` policy)."""

    def on_round(self, sim: Simulator) -> None: ...


@runtime_checkable
class Periodic(RoundHook, Protocol):
    """A policy with rounds: ``on_round(sim)`` every ``interval`` seconds (``None``: never)."""

    interval: float | None


@runtime_checkable
class RoundLength(Protocol):
    """A policy whose rounds are the engine's step under ``semantics=rounds``: the engine
    advances jobs ``round_length`` seconds per round instead of the ``interval`` setting (Sia's
    Gavel: 360 s rounds, where Sia's and Pollux's are 60 s)."""

    round_length: float


@runtime_checkable
class SummaryExtras(Protocol):
    """A policy that adds keys to ``summary.json`` at the end of the run."""

    def summary_extras(self, sim: Simulator) -> dict[str, Any]: ...


@runtime_checkable
class Evictions(Protocol):
    """A policy told when the quota layer (a run with ``--queues``) takes a job's admission
    back: the job, stopped if it ran, is out of ``sim.running`` and ``sim.queue`` (status
    ``held``) until it is admitted again, when it rejoins ``sim.queue``. A policy that keeps
    its own books of arrived jobs (``keeps_arrivals = True``) needs this to run with queues."""

    def on_evicted(self, sim: Simulator, job: JobState) -> None: ...


@runtime_checkable
class Admission(Protocol):
    """The engine's quota layer (``core.admission``): run at every scheduling point before
    the policy; it moves jobs between ``sim.held`` and ``sim.queue`` (``Simulator.admit``,
    ``Simulator.evict``) and adds its metrics to the result."""

    def attach(self, sim: Simulator) -> None: ...

    def cycle(self, sim: Simulator) -> None: ...

    def finish(self, sim: Simulator, summary: dict[str, Any]) -> tuple[tuple[object, ...], ...]: ...


@runtime_checkable
class GatesAllReduce(Protocol):
    """A policy with a communication gate (``policies.gates.CommGate``) that the
    iteration-level executor applies to every ready all-reduce; ``None``: no gate."""

    gate: Any


@runtime_checkable
class SharesGpus(Protocol):
    """A policy that puts up to ``jobs_per_gpu`` application-profile or trace jobs on one GPU."""

    jobs_per_gpu: int


@runtime_checkable
class Elastic(Protocol):
    """A policy that may start jobs on another GPU count than they asked for (``elastic``
    true), recorded as ``elastic`` in ``summary.json``."""

    elastic: bool


# ---------------------------------------------------------------- executor capabilities
@runtime_checkable
class RanksGpus(Protocol):
    """An executor that tracks how long each GPU was held (idle GPUs are ranked by it)."""

    def gpu_busy(self, gpu: int) -> float: ...


@runtime_checkable
class OwnsEvents(Protocol):
    """An executor that keeps its own event heap (a compiled loop, ``core/compiledtask.py``):
    the engine merges it with its own heap by (time, sequence number), one sequence counter
    for both, so the order of events is what one heap would give."""

    def own_events(self) -> int: ...

    def own_next(self) -> tuple[float, int] | None: ...

    def own_run(self, before: float | None, one_instant: bool) -> float | None: ...

    def own_events_at(self, time: float, seq_limit: int | None) -> None: ...


@runtime_checkable
class Ticks(Protocol):
    """An executor that advances every running job one step per round (``rounds``
    semantics)."""

    def tick(self, now: float) -> None: ...


@runtime_checkable
class StopDelays(Protocol):
    """An executor whose stops take time (``core/durationexec.py``): the run's
    ``stop_delay`` seconds, GPUs held after a preemption (a job's own
    ``JobSpec.stop_delay`` wins). The engine's livelock guard sizes its window by it."""

    stop_delay: float


@runtime_checkable
class Polls(Protocol):
    """An executor whose jobs progress outside the engine (real processes, live mode): the
    real-time engine calls ``poll()`` between events; it reports what happened since (a job
    finished, failed) through the engine's callbacks (``job_finished``, ``preempt``)."""

    def poll(self) -> None: ...


@runtime_checkable
class JobTimes(Protocol):
    """What the exclusive policies (FIFO, SJF; policies/luo.py) ask the executor, whatever the
    job kind: ``ProfileExecutor`` (application profiles) and ``DurationExecutor`` (traces).
    A policy gets it with ``sim.estimates(JobTimes)``."""

    def remaining_alone(self, job: JobState) -> float:
        """Seconds ``job`` still needs alone on a consolidated placement (SJF's length L_k)."""
        ...

    def gpu_busy(self, gpu: int) -> float:
        """Accumulated held time of ``gpu`` so far (FIFO's least-busy placement)."""
        ...


@runtime_checkable
class AloneTimes(Protocol):
    """An executor that knows each job's time alone on an equal share of the cluster's GPU
    types (the base of finish-time fairness, ``core.fairness``): ``DurationExecutor`` and
    ``ProfileExecutor``."""

    def alone_time(self, job: JobState) -> float:
        """Seconds ``job`` needs from start to finish alone on its requested GPUs
        (consolidated), time-sharing the cluster's GPU types in proportion to their counts."""
        ...


@runtime_checkable
class ProfileEstimates(JobTimes, Protocol):
    """The profile executor's estimates for application-profile jobs (Luo's sharing policies,
    Pollux), through ``sim.estimates(ProfileEstimates)``: nothing here changes the run except
    ``rebatch``, which asks the job's agent for its batch now."""

    def application(self, job: JobState) -> Application:
        """The application (measured profile) ``job`` runs."""
        ...

    def epoch(self, job: JobState) -> int:
        """Epochs ``job`` has completed."""
        ...

    def pace(self, job: JobState) -> tuple[Application, float]:
        """(profile, speed factor) running ``job`` computes at on its GPUs: its slowest GPU
        type's own measured profile at speed 1, else the default profile at the slowest
        speed (1.0 on a cluster without GPU types)."""
        ...

    def application_on(self, job: JobState, gpu_type: str) -> tuple[Application, float]:
        """(profile, speed factor) ``job`` runs at on GPUs of ``gpu_type`` only: the type's own
        measured profile at speed 1, else the default profile at the type's speed."""
        ...

    def config(
        self,
        job: JobState,
        limit: int | None = None,
        replicas: int | None = None,
        batch: int | None = None,
        gpu_type: str | None = None,
    ) -> BatchConfig:
        """The batch configuration ``job`` would run on ``replicas`` GPUs with total ``batch``
        and micro-batches of at most ``limit`` samples (defaults: what it asked for), on GPUs
        of ``gpu_type`` within that type's own profile's batch limits (None: the default
        profile's)."""
        ...

    def memory_share(self, job: JobState) -> float:
        """Fraction of a GPU's memory one worker of running ``job`` uses."""
        ...

    def ratio(self, app: str, other: str) -> float:
        """ξ: the slowdown of a job of ``app`` sharing a GPU with a job of ``other``."""
        ...

    def remaining_consolidated(self, job: JobState, cfg: BatchConfig | None = None) -> float:
        """Seconds ``job`` still needs alone on its most consolidated placement with ``cfg``
        (default: the requested batch)."""
        ...

    def remaining_as_running(self, job: JobState) -> float:
        """Seconds running ``job`` still needs alone on its placement and configuration."""
        ...

    def rebatch(self, job: JobState) -> None:
        """Re-tune running ``job``'s batch now through its agent (an elastic policy's round)."""
        ...


@runtime_checkable
class SharingEstimates(JobTimes, Protocol):
    """What Luo's GPU-sharing policies (SJF-FFS, SJF-BSBF; ``policies/luo.Sharing``) ask,
    whatever the job kind: ``DurationExecutor`` offers it for trace jobs; the policy adapts a
    ``ProfileEstimates`` executor to it for application-profile jobs (micro-batches, memory)."""

    def micro_limits(self, job: JobState) -> list[int | None]:
        """Micro-batch limits to try, largest first (None: the job as it is)."""
        ...

    def fits_beside(self, job: JobState, limit: int | None, host: JobState) -> bool:
        """Whether ``job`` (with micro-batch ``limit``) may share the GPUs of running ``host``."""
        ...

    def slowdown_beside(self, job: JobState, other: JobState, gpus: tuple[int, ...]) -> float:
        """ξ: the slowdown of ``job`` while it shares ``gpus`` with ``other``."""
        ...

    def remaining_beside(self, job: JobState, limit: int | None, host: JobState) -> float:
        """Seconds waiting ``job`` still needs alone with ``limit`` where it would share with
        ``host`` (application profiles: consolidated)."""
        ...

    def remaining_as_running(self, job: JobState) -> float:
        """Seconds running ``job`` still needs alone on its placement and configuration."""
        ...


# ---------------------------------------------------------------- what a policy tells the engine
@dataclass(frozen=True)
class JobConfig:
    """How a job runs once started, given with ``sim.start(job, gpus, config)`` or
    ``sim.resize(job, gpus, config)`` (application-profile jobs): its total ``batch_size``
    (default: what it asked for), the largest micro-batch per replica, ``micro_limit``
    (gradient accumulation keeps the total batch; default: no limit), and the seconds
    without progress this start costs, ``restart_delay`` (default: the job's restart delay;
    0: a move Sia's simulator makes for free, to other nodes with the same GPUs per node)."""

    batch_size: int | None = None
    micro_limit: int | None = None
    restart_delay: float | None = None


@runtime_checkable
class Configurable(Protocol):
    """An executor whose jobs take a ``JobConfig`` at their next start."""

    def configure(self, job: JobState, config: JobConfig) -> None: ...


class ProfileRun(Protocol):
    """What a job agent sees of a running application-profile job."""

    job: JobState
    app: Application
    cfg: BatchConfig | None
    placement: tuple[int, ...]
    epoch: int


@runtime_checkable
class JobAgent(Protocol):
    """A policy that is also the job-side agent of its jobs (Pollux's PolluxAgent): the
    executor tells it each configuration a job is about to run and asks it for the job's batch
    between epochs. The engine registers such a policy with an executor that ``HostsAgents``."""

    def observe(self, run: ProfileRun) -> None:
        """``run`` is about to run its current configuration (placement, ``cfg``, epoch)."""
        ...

    def rebatch(self, run: ProfileRun) -> int | None:
        """The total batch ``run`` should use from now on, or None to keep its own."""
        ...


@runtime_checkable
class ObservesMeasured(Protocol):
    """A job agent that takes real measurements (live mode): seconds per iteration of the
    configuration a job runs, from its progress reports, instead of the profile's."""

    def observe_measured(self, run: ProfileRun, iteration_time: float) -> tuple[float, float]: ...


@runtime_checkable
class HostsAgents(Protocol):
    """An executor that calls a ``JobAgent`` while jobs run."""

    def register_agent(self, agent: JobAgent) -> None: ...
