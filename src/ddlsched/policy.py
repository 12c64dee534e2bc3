"""The policy-authoring API: everything a new scheduling policy is built from, in one module.

Stable (kept compatible within a minor version; changes are announced in CHANGELOG.md): the
names in ``__all__`` here, the ``SchedulingPolicy`` protocol and its capability protocols
(defined in ``ddlsched.core.protocols``), and the parts of ``Simulator``
and ``JobState`` it documents. Anything else under ``ddlsched.core``/``ddlsched.policies`` is
internal and may change. docs/tutorial-policy.md builds a policy from these parts.

A policy is used by name (``register_policy`` / ``MODULE:FACTORY``) or passed as an object to
``ddlsched.simulate``; a name makes the engine build a fresh policy for every run.
"""

from __future__ import annotations

from .core.protocols import (
    Elastic,
    GatesAllReduce,
    JobAgent,
    JobConfig,
    JobTimes,
    Periodic,
    ProfileEstimates,
    RoundHook,
    SchedulingPolicy,
    SharesGpus,
    SharingEstimates,
    SummaryExtras,
)
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

__all__ = [
    "MODEL_JOBS",
    "PROFILE_JOBS",
    "TRACE_JOBS",
    "GATES",
    "ORDERINGS",
    "AdaDual",
    "CommGate",
    "Elastic",
    "Exclusive",
    "FirstFit",
    "GatesAllReduce",
    "JobAgent",
    "JobConfig",
    "JobState",
    "JobTimes",
    "LeastWorkloadFirst",
    "ListScheduling",
    "Ordering",
    "Periodic",
    "Placement",
    "ProfileEstimates",
    "Policy",
    "RandomPlacement",
    "RoundHook",
    "SchedulingPolicy",
    "Sharing",
    "SharesGpus",
    "SharingEstimates",
    "Simulator",
    "SrsfN",
    "SummaryExtras",
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
