"""The policy ↔ engine contract: what the engine calls on a policy and the optional
capabilities a policy or an executor declares.

Every optional feature is a small protocol here: the engine tests it with ``isinstance``
(``runtime_checkable``) instead of probing attributes with ``getattr``. A policy needs only
``SchedulingPolicy``; it gains a feature by having the members of a capability protocol (no
base class to inherit). ``ddlsched.policy`` re-exports these names for policy authors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
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
    - ``SharesGpus`` (``jobs_per_gpu: int``) — GPU sharing degree for application-profile jobs
      (default 1);
    - ``Elastic`` (``elastic: bool``) — the policy starts jobs on another GPU count than they
      asked for (``sim.start(job, gpus, resize=True)``, as Pollux does); recorded in
      ``summary.json``;
    - ``SummaryExtras`` (``summary_extras(sim) -> dict``) — extra keys for ``summary.json``.

    What a policy may use of ``sim`` (stable): ``now``, ``cluster``, ``jobs``, ``queue``
    (waiting ``JobState``s), ``running`` (job id → ``JobState``), ``residents`` (GPU → jobs on
    it), ``rng`` (the run's seeded generator: the only randomness allowed), ``fits(job, gpu)``,
    ``gpu_loads()`` (Wang's remaining workload per GPU), ``start(job, gpus)``, ``preempt(job)``,
    ``request_schedule()``. Of a ``JobState``: ``job_id``, ``spec`` (the ``JobSpec``),
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
class SummaryExtras(Protocol):
    """A policy that adds keys to ``summary.json`` at the end of the run."""

    def summary_extras(self, sim: Simulator) -> dict[str, Any]: ...


@runtime_checkable
class GatesAllReduce(Protocol):
    """A policy with a communication gate (``policies.gates.CommGate``) that the
    iteration-level executor applies to every ready all-reduce; ``None``: no gate."""

    gate: Any


@runtime_checkable
class SharesGpus(Protocol):
    """A policy that puts up to ``jobs_per_gpu`` application-profile jobs on one GPU."""

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
class Ticks(Protocol):
    """An executor that advances every running job one step per round (``rounds``
    semantics)."""

    def tick(self, now: float) -> None: ...


class JobTimes(Protocol):
    """What the exclusive policies (FIFO, SJF; policies/luo.py) ask the executor, whatever the
    job kind: ``ProfileExecutor`` (application profiles) and ``DurationExecutor`` (traces)."""

    def remaining_alone(self, job: JobState) -> float:
        """Seconds ``job`` still needs alone on a consolidated placement (SJF's length L_k)."""
        ...

    def gpu_busy(self, gpu: int) -> float:
        """Accumulated held time of ``gpu`` so far (FIFO's least-busy placement)."""
        ...
