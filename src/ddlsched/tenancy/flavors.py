"""Flavor assignment: which flavor of each resource group a workload's podsets get, and in
which mode (fit, preempt, no fit) and at which borrowing level.

Restates ``pkg/scheduler/flavorassigner/flavorassigner.go`` at kubernetes-sigs/kueue
ff69552e79ad21652c36caa97038382e55625cf7: ``assignFlavors``, ``findFlavorForPodSets``,
``fitsResourceQuota``, ``isPreferred``, ``shouldTryNextFlavor``, ``canPreemptWhileBorrowing``,
and ``FindHeightOfLowestSubtreeThatFits`` (``preemption/classical/hierarchical_preemption.go``).
Node labels, taints and topology-aware scheduling are not modelled: every flavor of a group
matches every podset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .model import ClusterQueue, FlavorFungibility
from .quota import FR, Node
from .snapshot import Snap

# preemption modes of one (flavor, resource), worst first (flavorassigner.go, preemptionMode)
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
# the assignment's modes (FlavorAssignmentMode), worst first
MODE_NO_FIT, MODE_PREEMPT, MODE_DEFERRED_FIT, MODE_FIT = range(4)

#: oracle(cq, fr, quantity) -> (NO_CANDIDATES | PREEMPT | RECLAIM, borrow level after)
Oracle = Callable[[str, FR, int], tuple[int, int]]


def _flavor_mode(pm: int) -> int:
    if pm == NO_FIT:
        return MODE_NO_FIT
    if pm == FIT:
        return MODE_FIT
    return MODE_PREEMPT


@dataclass(frozen=True)
class Granular:
    """``granularMode``: a preemption mode and a borrowing level (0: no borrowing)."""

    pm: int
    borrow: int


WORST = Granular(NO_FIT, 1 << 62)
BEST = Granular(FIT, 0)


def is_preferred(a: Granular, b: Granular, fung: FlavorFungibility) -> bool:
    """``isPreferred``: is ``a`` better than ``b`` under the queue's fungibility preference
    (default BorrowingOverPreemption: a better preemption mode first, then less borrowing)?"""
    if a.pm == NO_FIT:
        return False
    if b.pm == NO_FIT:
        return True
    if (a.pm == NO_CANDIDATES) != (b.pm == NO_CANDIDATES):
        return a.pm != NO_CANDIDATES
    if fung.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.pm > b.pm
    if a.pm != b.pm:
        return a.pm > b.pm
    return a.borrow < b.borrow


def should_try_next(mode: Granular, fung: FlavorFungibility) -> bool:
    """``shouldTryNextFlavor``."""
    if mode.pm in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.pm in (PREEMPT, RECLAIM) and fung.when_can_preempt == "TryNextFlavor":
        return True
    return mode.borrow != 0 and fung.when_can_borrow == "TryNextFlavor"


def height_of_lowest_subtree_that_fits(cq: Node, fr: FR, val: int) -> tuple[int, bool]:
    """``FindHeightOfLowestSubtreeThatFits``: the borrowing level needed for ``val`` of ``fr``
    (0: within the ClusterQueue), and whether the subtree that fits has a parent (so that
    quota could be reclaimed from it)."""
    if not cq.borrowing_with(fr, val) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = val - cq.local_available(fr)
    for node in cq.ancestors():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= node.local_available(fr)
    assert cq.parent is not None
    return cq.parent.root().height(), False


@dataclass
class Assignment:
    """A workload's flavors: per podset ``{resource: (flavor, mode)}``, the usage per
    (flavor, resource), the borrowing level, and the representative mode."""

    podsets: list[dict[str, tuple[str, int]]] = field(default_factory=list)
    usage: dict[FR, int] = field(default_factory=dict)
    borrowing: int = 0
    mode: int = MODE_NO_FIT

    def preempt_frs(self) -> frozenset[FR]:
        """``flavorResourcesNeedPreemption``."""
        return frozenset(
            (flavor, res)
            for ps in self.podsets
            for res, (flavor, mode) in ps.items()
            if mode == MODE_PREEMPT
        )


class FlavorAssigner:
    """Assigns flavors to one workload of one ClusterQueue in a snapshot."""

    def __init__(self, snap: Snap, cq: ClusterQueue, oracle: Oracle, fair_sharing: bool) -> None:
        self.snap = snap
        self.cq = cq
        self.node = snap.cq(cq.name)
        self.oracle = oracle
        self.fair_sharing = fair_sharing

    def assign(self, requests: list[dict[str, int]]) -> Assignment:
        """``assignFlavors``: podsets in order, each resource (sorted) through the flavors of
        its group; a resource no group covers, with a non-zero request, is no fit."""
        a = Assignment()
        borrowing = 0
        worst = MODE_FIT
        for req in requests:
            flavors: dict[str, tuple[str, int, int]] = {}
            for res in sorted(req):
                if res in flavors:
                    continue
                if self.cq.group_of(res) is None and req[res] == 0:
                    continue
                found = self._find_flavor(req, res, a.usage)
                if found is None:
                    a.podsets.append({})
                    a.mode = MODE_NO_FIT
                    return a
                flavors.update(found)
            a.podsets.append({r: (f, m) for r, (f, m, _) in flavors.items()})
            for res, (flavor, mode, borrow) in flavors.items():
                borrowing = max(borrowing, borrow)
                fr = (flavor, res)
                a.usage[fr] = a.usage.get(fr, 0) + req[res]
                worst = min(worst, mode)
        a.borrowing = borrowing
        a.mode = worst if a.podsets else MODE_NO_FIT
        return a

    def _find_flavor(
        self, req: dict[str, int], res: str, assigned: dict[FR, int]
    ) -> dict[str, tuple[str, int, int]] | None:
        """``findFlavorForPodSets``: the first flavor that is good enough under the
        fungibility policy, else the best one seen; ``None`` when none fits."""
        rg = self.cq.group_of(res)
        if rg is None:
            return None
        fung = self.cq.fungibility
        wanted = sorted(r for r in req if r in rg.covered)
        best: dict[str, tuple[str, int, int]] | None = None
        best_mode = WORST
        for flavor in rg.flavors:
            rep = BEST
            assignments: dict[str, tuple[str, int, int]] = {}
            for r in wanted:
                fr = (flavor, r)
                pm, borrow = self._fits_quota(fr, assigned.get(fr, 0), req[r])
                mode = Granular(pm, borrow)
                if is_preferred(rep, mode, fung):
                    rep = mode
                if rep.pm == NO_FIT:
                    break
                assignments[r] = (flavor, _flavor_mode(pm), borrow)
            if not should_try_next(rep, fung):
                return assignments
            if is_preferred(rep, best_mode, fung):
                best, best_mode = assignments, rep
        return best

    def _fits_quota(self, fr: FR, assumed: int, request: int) -> tuple[int, int]:
        """``fitsResourceQuota``: fit (with the borrowing level), preempt/reclaim (as the
        preemption oracle finds), or no fit."""
        node = self.node
        val = assumed + request
        if val > node.potential_available(fr):
            return NO_FIT, 0
        borrow, may_reclaim = height_of_lowest_subtree_that_fits(node, fr, val)
        if val <= max(0, node.available(fr)):
            return FIT, borrow
        if node.nominal(fr) >= val or may_reclaim or self._can_preempt_while_borrowing():
            return self.oracle(self.cq.name, fr, val)
        return NO_FIT, borrow

    def _can_preempt_while_borrowing(self) -> bool:
        p = self.cq.preemption
        return p.borrow_within_cohort != "Never" or (
            self.fair_sharing and p.reclaim_within_cohort != "Never"
        )
