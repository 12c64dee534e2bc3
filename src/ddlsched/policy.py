"""The policy-authoring API: everything a new scheduling policy is built from, in one module.

Stable (kept compatible within a minor version; changes are announced in CHANGELOG.md): the
names in ``__all__`` here, the ``SchedulingPolicy`` protocol, and the parts of ``Simulator``
and ``JobState`` it documents. Anything else under ``ddlsched.core``/``ddlsched.policies`` is
internal and may change. docs/tutorial-policy.md builds a policy from these parts.

A policy is used by name (``register_policy`` / ``MODULE:FACTORY``) or passed as an object to
``ddlsched.simulate``; a name makes the engine build a fresh policy for every run.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .core.simulator import Simulator
from .core.state import JobState
from .policies.base import Policy
from .policies.compose import compose, gate_of, ordering_of, placement_of
from .policies.gates import GATES, AdaDual, CommGate, SrsfN, register_gate
from .policies.luo import Exclusive, Sharing, theorem1
from .policies.ordering import ORDERINGS, Ordering, fifo, register_ordering, srsf
from .policies.placement import (
    FirstFit,
    LeastWorkloadFirst,
    ListScheduling,
    Placement,
    RandomPlacement,
    consolidated,
    make_placement,
    register_placement,
)
from .policies.plugins import (
    MODEL_JOBS,
    PROFILE_JOBS,
    TRACE_JOBS,
    register_policy,
    registered_policies,
    resolve_policy,
    unregister_policy,
)


@runtime_checkable
class SchedulingPolicy(Protocol):
    """What the engine calls on a policy.

    Required: ``name``; ``attach(sim)`` once when the simulation is built; ``schedule(sim)`` at
    the end of every instant where jobs arrived, finished or were preempted and the queue is
    not empty — start jobs with ``sim.start(job, gpus)``.

    Optional attributes the engine reads with ``getattr``:

    - ``interval: float | None`` — if set, ``on_round(sim)`` runs every ``interval`` seconds
      from the first arrival; it may ``sim.preempt(job)`` (job granularity and
      application-profile jobs; the iteration level cannot preempt) and start jobs;
    - ``gate: CommGate | None`` — all-reduce gate of the iteration-level executor (jobs with a
      model profile, ``granularity=iteration``);
    - ``jobs_per_gpu: int`` — GPU sharing degree for application-profile jobs (default 1);
    - ``elastic: bool`` — the policy starts jobs on another GPU count than they asked for
      (``sim.start(job, gpus, resize=True)``, as Pollux does); recorded in ``summary.json``;
    - ``summary_extras(sim) -> dict`` — extra keys for ``summary.json``.

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


__all__ = [
    "MODEL_JOBS",
    "PROFILE_JOBS",
    "TRACE_JOBS",
    "GATES",
    "ORDERINGS",
    "AdaDual",
    "CommGate",
    "Exclusive",
    "FirstFit",
    "JobState",
    "LeastWorkloadFirst",
    "ListScheduling",
    "Ordering",
    "Placement",
    "Policy",
    "RandomPlacement",
    "SchedulingPolicy",
    "Sharing",
    "Simulator",
    "SrsfN",
    "compose",
    "consolidated",
    "fifo",
    "gate_of",
    "make_placement",
    "ordering_of",
    "placement_of",
    "register_gate",
    "register_ordering",
    "register_placement",
    "register_policy",
    "registered_policies",
    "resolve_policy",
    "srsf",
    "theorem1",
    "unregister_policy",
]
