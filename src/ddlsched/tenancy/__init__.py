"""Multi-tenant clusters: Kueue's quota model (ResourceFlavors, ClusterQueues, hierarchical
Cohorts, LocalQueues, priorities, preemption, flavor fungibility, fair sharing) and one Kueue
scheduling cycle as a pure function, :func:`decide`, from a snapshot to a decision.

Restates kubernetes-sigs/kueue at ff69552e79ad21652c36caa97038382e55625cf7; docs/tenancy.md
lists every rule and the Kueue file and function it comes from. Imports nothing of the
engine: the engine (a later step) builds a :class:`Snapshot` and calls :func:`decide`.
"""

from __future__ import annotations

from .cycle import decide
from .inputs import load_snapshot, parse_snapshot
from .manifests import load_queues, parse_documents
from .model import Decision, QueuesConfig, Snapshot, Workload

__all__ = [
    "Decision",
    "QueuesConfig",
    "Snapshot",
    "Workload",
    "decide",
    "load_queues",
    "load_snapshot",
    "parse_documents",
    "parse_snapshot",
]
