"""Which admitted workloads a pending one may preempt, and why: Kueue's classical preemption
(priorities, reclaiming lent quota, borrowing while preempting) and fair-sharing preemption.

Restates, at kubernetes-sigs/kueue ff69552e79ad21652c36caa97038382e55625cf7:
``pkg/scheduler/preemption/preemption.go`` (``classicalPreemptions``, ``fillBackWorkloads``,
``fairPreemptions``, ``runFirstFsStrategy``, ``runSecondFsStrategy``, ``findCandidates``,
``cqIsBorrowing``, ``workloadFits``, ``queueUnderNominalInResourcesNeedingPreemption``),
``preemption/classical/candidate_generator.go`` and ``hierarchical_preemption.go``
(``NewCandidateIterator``, ``candidateIsValid``, ``classifyPreemptionVariant``,
``collectCandidatesForHierarchicalReclaim``), ``preemption/common/ordering.go``
(``CandidatesOrdering``), ``preemption/common/preemption_policy.go``
(``SatisfiesPreemptionPolicy``), ``preemption/fairsharing/{ordering,target,strategy,
least_common_ancestor}.go`` and ``preemption/preemption_oracle.go`` (``SimulatePreemption``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .flavors import NO_CANDIDATES, PREEMPT, RECLAIM, height_of_lowest_subtree_that_fits
from .model import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    Workload,
)
from .quota import DRS, FR, NEGATIVE_DRS, Node, compare_drs
from .snapshot import Info, Snap


@dataclass
class Target:
    """A workload to preempt and Kueue's reason."""

    info: Info
    reason: str


def satisfies_policy(preemptor: Workload, candidate: Workload, policy: str) -> bool:
    """``SatisfiesPreemptionPolicy``: LowerPriority, LowerOrNewerEqualPriority (same priority,
    created later than the preemptor), Any."""
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        newer = preemptor.priority == candidate.priority and preemptor.created < candidate.created
        return lower or newer
    return policy == "Any"


def candidates_key(info: Info, cq: str) -> tuple[bool, int, float, str]:
    """``CandidatesOrdering``: other ClusterQueues first, lower priority first, most recently
    admitted first, then by name (Kueue: UID)."""
    admitted_at = info.wl.admitted_at if info.wl.admitted_at is not None else 0.0
    return (info.cq == cq, info.priority, -admitted_at, info.name)


# preemption variants (hierarchical_preemption.go)
WITHIN_CQ, HIERARCHICAL_RECLAIM, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(1, 5)
_REASONS = {
    WITHIN_CQ: IN_CLUSTER_QUEUE,
    HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


class Preemptor:
    """Finds preemption targets for one pending workload in a snapshot."""

    def __init__(self, snap: Snap, fair_sharing: bool, strategies: tuple[str, ...]) -> None:
        self.snap = snap
        self.fair_sharing = fair_sharing
        self.strategies = strategies

    # -------------------------------------------------------------- entry points
    def get_targets(
        self, wl: Workload, cq: str, usage: dict[FR, int], frs: frozenset[FR]
    ) -> list[Target]:
        """``GetTargets``: the victims that let ``usage`` fit, or none."""
        if self.fair_sharing:
            return self._fair(wl, cq, usage, frs)
        return self._classical(wl, cq, usage, frs)

    def simulate(self, wl: Workload, cq: str, fr: FR, quantity: int) -> tuple[int, int]:
        """``SimulatePreemption`` (the flavor assigner's oracle): NO_CANDIDATES, PREEMPT (a
        victim in the same ClusterQueue) or RECLAIM, and the borrowing level afterwards."""
        node = self.snap.cq(cq)
        targets = self.get_targets(wl, cq, {fr: quantity}, frozenset([fr]))
        if not targets:
            return NO_CANDIDATES, height_of_lowest_subtree_that_fits(node, fr, quantity)[0]
        for t in targets:
            self.snap.remove_usage(t.info.cq, t.info.usage)
        borrow = height_of_lowest_subtree_that_fits(node, fr, quantity)[0]
        for t in targets:
            self.snap.add_usage(t.info.cq, t.info.usage)
        if any(t.info.cq == cq for t in targets):
            return PREEMPT, borrow
        return RECLAIM, borrow

    # -------------------------------------------------------------- shared
    def _fits(self, cq: str, usage: dict[FR, int], allow_borrowing: bool) -> bool:
        """``workloadFits``."""
        node = self.snap.cq(cq)
        for fr, v in usage.items():
            if not allow_borrowing and node.nominal(fr) < node.usage.get(fr, 0) + v:
                return False
            if v > max(0, node.available(fr)):
                return False
        return True

    def _fill_back(
        self, cq: str, usage: dict[FR, int], targets: list[Target], allow_borrowing: bool
    ) -> list[Target]:
        """``fillBackWorkloads``: give back every victim but the last one found that is not
        needed, newest-found first, so that the set is minimal."""
        for i in range(len(targets) - 2, -1, -1):
            self.snap.add_workload(targets[i].info)
            if self._fits(cq, usage, allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.snap.remove_workload(targets[i].info)
        return targets

    def _restore(self, targets: list[Target]) -> None:
        for t in targets:
            self.snap.add_workload(t.info)

    # -------------------------------------------------------------- classical
    def _classical(
        self, wl: Workload, cq: str, usage: dict[FR, int], frs: frozenset[FR]
    ) -> list[Target]:
        spec = self.snap.spec(cq)
        node = self.snap.cq(cq)
        pol = spec.preemption
        forbidden = pol.borrow_within_cohort == "Never"
        threshold = pol.max_priority_threshold

        def classify(info: Info, advantage: bool) -> int:
            if not info.uses(frs):
                return 0
            same = info.cq == cq
            policy = pol.within_cluster_queue if same else pol.reclaim_within_cohort
            if not satisfies_policy(wl, info.wl, policy):
                return 0
            if same:
                return WITHIN_CQ
            if advantage:
                return HIERARCHICAL_RECLAIM
            if forbidden:
                return RECLAIM_WITHOUT_BORROWING
            if info.priority >= wl.priority or (
                threshold is not None and info.priority > threshold
            ):
                return RECLAIM_WITHOUT_BORROWING
            return RECLAIM_WHILE_BORROWING

        def from_cq(
            q: Node, lca: Node | None, advantage: bool
        ) -> list[tuple[Info, Node | None, int]]:
            out = []
            for info in self.snap.workloads[q.name].values():
                variant = classify(info, advantage)
                if variant:
                    out.append((info, lca, variant))
            return out

        same_queue = [] if pol.within_cluster_queue == "Never" else from_cq(node, None, False)
        hierarchy: list[tuple[Info, Node | None, int]] = []
        priority: list[tuple[Info, Node | None, int]] = []
        if node.parent is not None and pol.reclaim_within_cohort != "Never":
            advantage, remaining = node.quantities_fit(usage)
            previous: Node | None = None

            def collect(cur: Node, root: Node, skip: Node | None, adv: bool, out: list) -> None:
                for child in cur.child_cohorts:
                    if child is skip or child.within_nominal(frs):
                        continue
                    collect(child, root, skip, adv, out)
                for q in cur.child_cqs:
                    if q is node or q.within_nominal(frs):
                        continue
                    out.extend(from_cq(q, root, adv))

            for sub_root in node.ancestors():
                collect(
                    sub_root, sub_root, previous, advantage, hierarchy if advantage else priority
                )
                fits, remaining = sub_root.quantities_fit(remaining)
                advantage = advantage or fits
                previous = sub_root
        for lst in (same_queue, priority, hierarchy):
            lst.sort(key=lambda c: candidates_key(c[0], cq))
        candidates = hierarchy + priority + same_queue
        no_other = not hierarchy and not priority
        under_nominal = all(node.nominal(fr) > node.usage.get(fr, 0) for fr in frs)
        if no_other or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]

        def valid(info: Info, lca: Node | None, variant: int, borrow: bool) -> bool:
            if info.cq == cq:
                return True
            if borrow and variant == RECLAIM_WITHOUT_BORROWING:
                return False
            q = self.snap.cq(info.cq)
            if q.within_nominal(frs):
                return False
            for anc in q.ancestors():
                if anc is lca:
                    break
                if anc.within_nominal(frs):
                    return False
            return True

        for borrow in attempts:
            targets: list[Target] = []
            for info, lca, variant in candidates:
                if not valid(info, lca, variant, borrow):
                    continue
                self.snap.remove_workload(info)
                targets.append(Target(info, _REASONS[variant]))
                if self._fits(cq, usage, borrow):
                    targets = self._fill_back(cq, usage, targets, borrow)
                    self._restore(targets)
                    return targets
            self._restore(targets)
        return []

    # -------------------------------------------------------------- fair sharing
    def _find_candidates(self, wl: Workload, cq: str, frs: frozenset[FR]) -> list[Info]:
        """``findCandidates``: same-queue workloads under ``withinClusterQueue``, and the
        workloads of borrowing ClusterQueues of the tree under ``reclaimWithinCohort``."""
        pol = self.snap.spec(cq).preemption
        node = self.snap.cq(cq)
        out = []
        if pol.within_cluster_queue != "Never":
            out += [
                i
                for i in self.snap.workloads[cq].values()
                if satisfies_policy(wl, i.wl, pol.within_cluster_queue) and i.uses(frs)
            ]
        if node.parent is not None and pol.reclaim_within_cohort != "Never":
            for q in node.parent.root().subtree_cqs():
                if q is node or not any(q.borrowing_with(fr, 0) for fr in frs):
                    continue
                out += [
                    i
                    for i in self.snap.workloads[q.name].values()
                    if satisfies_policy(wl, i.wl, pol.reclaim_within_cohort) and i.uses(frs)
                ]
        return out

    def _fair(
        self, wl: Workload, cq: str, usage: dict[FR, int], frs: frozenset[FR]
    ) -> list[Target]:
        """``fairPreemptions``: strategies in order; the preemptor's usage is added while
        they run, then the set is made minimal."""
        candidates = self._find_candidates(wl, cq, frs)
        if not candidates:
            return []
        candidates.sort(key=lambda i: candidates_key(i, cq))
        self.snap.add_usage(cq, usage)
        fits, targets, retry = self._first_strategy(cq, usage, frs, candidates)
        if not fits and len(self.strategies) > 1:
            fits, targets = self._second_strategy(cq, usage, retry, targets)
        self.snap.remove_usage(cq, usage)
        if not fits:
            self._restore(targets)
            return []
        targets = self._fill_back(cq, usage, targets, True)
        self._restore(targets)
        return targets

    def _fits_fs(self, cq: str, usage: dict[FR, int]) -> bool:
        """``workloadFitsForFairSharing``: the preemptor's simulated usage taken out first."""
        self.snap.remove_usage(cq, usage)
        ok = self._fits(cq, usage, True)
        self.snap.add_usage(cq, usage)
        return ok

    def _first_strategy(
        self, cq: str, usage: dict[FR, int], frs: frozenset[FR], candidates: list[Info]
    ) -> tuple[bool, list[Target], list[Info]]:
        strategy = self.strategies[0]
        order = _TargetOrdering(self.snap, cq, candidates)
        targets: list[Target] = []
        retry: list[Info] = []
        node = self.snap.cq(cq)
        within_nominal = not any(node.borrowing_with(fr, 0) for fr in frs)
        for target_cq in order:
            if target_cq is node:
                info = order.pop(target_cq)
                self.snap.remove_workload(info)
                targets.append(Target(info, IN_CLUSTER_QUEUE))
                if self._fits_fs(cq, usage):
                    return True, targets, []
                continue
            if within_nominal:
                info = order.pop(target_cq)
                self.snap.remove_workload(info)
                targets.append(Target(info, IN_COHORT_RECLAMATION))
                if self._fits_fs(cq, usage):
                    return True, targets, []
                continue
            preemptor_new, target_old = order.shares(target_cq)
            if preemptor_new.weighted() == float("inf") and target_old.weighted() != float("inf"):
                while order.has(target_cq):
                    retry.append(order.pop(target_cq))
                continue
            while order.has(target_cq):
                info = order.pop(target_cq)
                self.snap.remove_usage(info.cq, info.usage)
                target_new = order.almost_lca(target_cq).drs()
                self.snap.add_usage(info.cq, info.usage)
                if strategy == "LessThanOrEqualToFinalShare":
                    passed = compare_drs(preemptor_new, target_new) <= 0
                else:
                    passed = compare_drs(preemptor_new, target_old) < 0
                if passed:
                    self.snap.remove_workload(info)
                    targets.append(Target(info, IN_COHORT_FAIR_SHARING))
                    if self._fits_fs(cq, usage):
                        return True, targets, []
                    break
                retry.append(info)
        return False, targets, retry

    def _second_strategy(
        self, cq: str, usage: dict[FR, int], retry: list[Info], targets: list[Target]
    ) -> tuple[bool, list[Target]]:
        order = _TargetOrdering(self.snap, cq, retry)
        for target_cq in order:
            preemptor_new, target_old = order.shares(target_cq)
            info = order.pop(target_cq)
            if compare_drs(preemptor_new, target_old) < 0:
                self.snap.remove_workload(info)
                targets.append(Target(info, IN_COHORT_FAIR_SHARING))
                if self._fits_fs(cq, usage):
                    return True, targets
            order.drop(target_cq)
        return False, targets


class _TargetOrdering:
    """``TargetClusterQueueOrdering``: repeatedly the ClusterQueue to preempt from next, down
    the tree from the root along the children with the highest share, pruning nodes that do
    not borrow (fairsharing/ordering.go)."""

    def __init__(self, snap: Snap, cq: str, candidates: list[Info]) -> None:
        self.snap = snap
        self.preemptor = snap.cq(cq)
        self.ancestors = set(map(id, self.preemptor.ancestors()))
        self.targets: dict[str, list[Info]] = {}
        for info in candidates:
            self.targets.setdefault(info.cq, []).append(info)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()

    def has(self, q: Node) -> bool:
        return bool(self.targets.get(q.name))

    def pop(self, q: Node) -> Info:
        return self.targets[q.name].pop(0)

    def drop(self, q: Node) -> None:
        self.pruned_cqs.add(q.name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        if self.preemptor.parent is None:
            while self.preemptor.name not in self.pruned_cqs and self.has(self.preemptor):
                yield self.preemptor
            return
        root = self.preemptor.parent.root()
        while id(root) not in self.pruned_cohorts:
            q = self._next(root)
            if q is not None:
                yield q

    def _next(self, cohort: Node) -> Node | None:
        best_cq: Node | None = None
        best_cq_drs = NEGATIVE_DRS
        for q in cohort.child_cqs:
            if q.name in self.pruned_cqs:
                continue
            drs = q.drs()
            if (not drs.borrowing and q is not self.preemptor) or not self.has(q):
                self.pruned_cqs.add(q.name)
                continue
            c = compare_drs(drs, best_cq_drs)
            if c == 0 and best_cq is not None:
                mine = self.targets[q.name][0]
                theirs = self.targets[best_cq.name][0]
                if candidates_key(mine, self.preemptor.name) < candidates_key(
                    theirs, self.preemptor.name
                ):
                    best_cq = q
            elif c == 1:
                best_cq, best_cq_drs = q, drs
        best_co: Node | None = None
        best_co_drs = NEGATIVE_DRS
        for co in cohort.child_cohorts:
            if id(co) in self.pruned_cohorts:
                continue
            drs = co.drs()
            if not drs.borrowing and id(co) not in self.ancestors:
                self.pruned_cohorts.add(id(co))
            elif compare_drs(drs, best_co_drs) >= 0:
                best_co, best_co_drs = co, drs
        if best_co is None and best_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if best_co is not None and compare_drs(best_co_drs, best_cq_drs) >= 0:
            return self._next(best_co)
        return best_cq

    def almost_lca(self, q: Node) -> Node:
        """The child of the lowest common ancestor of ``q`` and the preemptor on ``q``'s side
        (``getAlmostLCA``)."""
        lca = next(a for a in q.ancestors() if id(a) in self.ancestors)
        return _almost(q, lca)

    def shares(self, q: Node) -> tuple[DRS, DRS]:
        """``ComputeShares``: the preemptor side's and the target side's share below the
        lowest common ancestor."""
        lca = next(a for a in q.ancestors() if id(a) in self.ancestors)
        return _almost(self.preemptor, lca).drs(), _almost(q, lca).drs()


def _almost(q: Node, lca: Node) -> Node:
    node = q
    for anc in q.ancestors():
        if anc is lca:
            return node
        node = anc
    raise AssertionError("no common ancestor")
