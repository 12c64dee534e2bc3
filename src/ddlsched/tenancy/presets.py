"""Queue presets built from a workload's demand (``--queues proportional``)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputError
from .model import ClusterQueue, Cohort, Preemption, QueuesConfig, ResourceGroup, ResourceQuota

#: names ``--queues`` takes besides a file
QUEUE_PRESETS = ("proportional",)
#: the one flavor of a preset
FLAVOR = "default"
#: the cohort every preset ClusterQueue is in
COHORT = "cluster"


def proportional(demand: Mapping[str, float], total: int, resource: str) -> QueuesConfig:
    """One ClusterQueue per name of ``demand`` (a job trace's queues: Philly's virtual
    clusters) with a nominal quota of ``resource`` proportional to its demand, in whole
    units summing to ``total`` (largest remainders, ties by name), all in one cohort:
    unlimited borrowing, ``reclaimWithinCohort: Any`` (an owner takes its lent quota back),
    ``withinClusterQueue: LowerPriority``."""
    if not demand:
        raise InputError("the workload has no jobs to build queues for", field="queues")
    names = sorted(demand)
    weight = sum(demand.values())
    exact = {q: total * demand[q] / weight if weight > 0 else total / len(names) for q in names}
    quota = {q: int(exact[q]) for q in names}
    rest = total - sum(quota.values())
    for q in sorted(names, key=lambda q: (-(exact[q] - quota[q]), q))[:rest]:
        quota[q] += 1
    preemption = Preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    cqs = {
        q: ClusterQueue(
            q,
            cohort=COHORT,
            resource_groups=(
                ResourceGroup(
                    (resource,), (FLAVOR,), {(FLAVOR, resource): ResourceQuota(quota[q] * 1000)}
                ),
            ),
            preemption=preemption,
        )
        for q in names
    }
    return QueuesConfig(frozenset({FLAVOR}), cqs, {COHORT: Cohort(COHORT)}, {}, {})
