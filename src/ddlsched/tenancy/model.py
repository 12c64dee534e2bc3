"""Plain data of Kueue's quota model: flavors, ClusterQueues, Cohorts, LocalQueues, priority
classes, the cycle's settings, and the workloads of a snapshot.

Names and defaults follow Kueue's API types (``apis/kueue/v1beta2/clusterqueue_types.go``,
``cohort_types.go``, ``localqueue_types.go``, ``workloadpriorityclass_types.go`` and
``apis/config/v1beta2/configuration_types.go`` at kubernetes-sigs/kueue
ff69552e79ad21652c36caa97038382e55625cf7). Amounts are integers in milli-units
(``"2"`` CPUs are 2000, ``"1Gi"`` is 1073741824000), so that every comparison is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: ``withinClusterQueue`` values (clusterqueue_types.go, ClusterQueuePreemption)
WITHIN_CQ_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
#: ``reclaimWithinCohort`` values
RECLAIM_POLICIES = ("Never", "LowerPriority", "Any")
#: ``borrowWithinCohort.policy`` values
BORROW_POLICIES = ("Never", "LowerPriority")
#: ``flavorFungibility.whenCanBorrow`` / ``whenCanPreempt`` (v1beta1 also spells the stop
#: values ``Borrow`` and ``Preempt``; both mean ``MayStopSearch``)
FUNGIBILITY_POLICIES = ("MayStopSearch", "TryNextFlavor")
#: ``flavorFungibility.preference``
PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
#: ``queueingStrategy``
QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
#: ``fairSharing.preemptionStrategies`` (the lists Kueue's configuration validation accepts)
FS_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")

#: Kueue's preemption reasons (apis/kueue/v1beta2/workload_types.go)
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


@dataclass(frozen=True)
class ResourceQuota:
    """One resource of one flavor: ``nominalQuota``, optional ``borrowingLimit`` and
    ``lendingLimit`` (``None``: no limit), milli-units."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class ResourceGroup:
    """``coveredResources`` and the flavors that can give them, in preference order; every
    flavor has a quota for every covered resource."""

    covered: tuple[str, ...]
    flavors: tuple[str, ...]
    quotas: dict[tuple[str, str], ResourceQuota]  # (flavor, resource) -> quota


@dataclass(frozen=True)
class Preemption:
    """``spec.preemption`` of a ClusterQueue, with Kueue's defaults."""

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class FlavorFungibility:
    """``spec.flavorFungibility`` (defaults: whenCanBorrow MayStopSearch, whenCanPreempt
    TryNextFlavor, no preference, which Kueue treats as BorrowingOverPreemption)."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None


@dataclass(frozen=True)
class ClusterQueue:
    """A ClusterQueue: its quotas (resource groups), cohort, policies and fair-sharing weight."""

    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: str = "BestEffortFIFO"
    preemption: Preemption = field(default_factory=Preemption)
    fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    weight: float = 1.0

    def group_of(self, resource: str) -> ResourceGroup | None:
        """The resource group covering ``resource`` (``RGByResource``)."""
        for rg in self.resource_groups:
            if resource in rg.covered:
                return rg
        return None

    def quotas(self) -> dict[tuple[str, str], ResourceQuota]:
        out: dict[tuple[str, str], ResourceQuota] = {}
        for rg in self.resource_groups:
            out.update(rg.quotas)
        return out


@dataclass(frozen=True)
class Cohort:
    """A Cohort: optional parent, quotas of its own (lent to its subtree) and a weight."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    weight: float = 1.0

    def quotas(self) -> dict[tuple[str, str], ResourceQuota]:
        out: dict[tuple[str, str], ResourceQuota] = {}
        for rg in self.resource_groups:
            out.update(rg.quotas)
        return out


@dataclass(frozen=True)
class QueuesConfig:
    """Everything ``--queues`` declares."""

    flavors: frozenset[str]
    cluster_queues: dict[str, ClusterQueue]
    cohorts: dict[str, Cohort]
    local_queues: dict[str, str]  # LocalQueue name -> ClusterQueue name
    priority_classes: dict[str, int]
    fair_sharing: bool = False
    fs_strategies: tuple[str, ...] = FS_STRATEGIES


@dataclass(frozen=True)
class PodSet:
    """``count`` pods that each request ``requests`` (milli-units); ``flavors`` only for an
    admitted workload (resource -> flavor)."""

    name: str
    count: int
    requests: dict[str, int]
    flavors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    """A workload of the snapshot. ``queue`` is the ClusterQueue (a LocalQueue is resolved
    when the file is read); ``created`` orders the queue (FIFO), ``admitted_at`` the
    preemption candidates (newest reservation first)."""

    name: str
    queue: str
    podsets: tuple[PodSet, ...]
    priority: int = 0
    created: float = 0.0
    admitted_at: float | None = None


@dataclass(frozen=True)
class Snapshot:
    """Admitted and pending workloads; the input of :func:`decide`."""

    admitted: tuple[Workload, ...] = ()
    pending: tuple[Workload, ...] = ()


@dataclass
class Decision:
    """What the cycle(s) did: newly admitted workloads with their flavors
    (``{workload: {podset: {resource: flavor}}}``), preempted ones with Kueue's reason, and the
    workloads still pending."""

    admitted: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    preempted: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    cycles: int = 1
    #: ``until_stable``: False when the cycles came back to an earlier state (admitted
    #: workloads and their flavors) or reached ``max_cycles`` without one that changes nothing
    stable: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "admitted": self.admitted,
            "preempted": self.preempted,
            "pending": sorted(self.pending),
        }
