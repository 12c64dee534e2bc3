"""Kueue's hierarchical quota: the resource tree of Cohorts and ClusterQueues, what a node
may still use, and the dominant resource share of fair sharing.

Restates ``pkg/cache/scheduler/resource_node.go`` (``localQuota``, ``LocalAvailable``,
``available``, ``potentialAvailable``, ``addUsage``, ``removeUsage``,
``updateCohortResourceNode``/``accumulateFromChild``, ``QuantitiesFitInQuota``,
``IsWithinNominalInResources``) and ``pkg/cache/scheduler/fair_sharing.go``
(``dominantResourceShare``, ``calculateLendable``, ``CompareDRS``) at kubernetes-sigs/kueue
ff69552e79ad21652c36caa97038382e55625cf7.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from .model import QueuesConfig, ResourceQuota

FR = tuple[str, str]  # (flavor, resource)


class Node:
    """A ClusterQueue or a Cohort in the tree. ``subtree`` is the quota the node holds
    (its own nominal plus what its children lend up); ``usage`` what it uses of it."""

    def __init__(
        self, name: str, quotas: dict[FR, ResourceQuota], weight: float, is_cq: bool
    ) -> None:
        self.name = name
        self.quotas = quotas
        self.weight = weight
        self.is_cq = is_cq
        self.parent: Node | None = None
        self.child_cohorts: list[Node] = []
        self.child_cqs: list[Node] = []
        self.subtree: dict[FR, int] = {}
        self.usage: dict[FR, int] = {}

    # -- resource_node.go
    def local_quota(self, fr: FR) -> int:
        """Quota kept from the parent: ``subtree − lendingLimit`` (0 without a limit)."""
        q = self.quotas.get(fr)
        if q is None or q.lending_limit is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - q.lending_limit)

    def local_available(self, fr: FR) -> int:
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def available(self, fr: FR) -> int:
        """Unused quota this node can use now, borrowing limits included (``available``)."""
        if self.parent is None:
            return self.subtree.get(fr, 0) - self.usage.get(fr, 0)
        parent_available = self.parent.available(fr)
        q = self.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            lq = self.local_quota(fr)
            stored = self.subtree.get(fr, 0) - lq
            used = max(0, self.usage.get(fr, 0) - lq)
            parent_available = min(stored - used + q.borrowing_limit, parent_available)
        return self.local_available(fr) + parent_available

    def potential_available(self, fr: FR) -> int:
        """Most this node could use with the whole tree empty (``potentialAvailable``)."""
        if self.parent is None:
            return self.subtree.get(fr, 0)
        avail = self.local_quota(fr) + self.parent.potential_available(fr)
        q = self.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            avail = min(self.subtree.get(fr, 0) + q.borrowing_limit, avail)
        return avail

    def add_usage(self, fr: FR, val: int) -> None:
        local = self.local_available(fr)
        self.usage[fr] = self.usage.get(fr, 0) + val
        if self.parent is not None and val > local:
            self.parent.add_usage(fr, val - local)

    def remove_usage(self, fr: FR, val: int) -> None:
        stored_in_parent = self.usage.get(fr, 0) - self.local_quota(fr)
        self.usage[fr] = self.usage.get(fr, 0) - val
        if stored_in_parent <= 0 or self.parent is None:
            return
        self.parent.remove_usage(fr, min(val, stored_in_parent))

    def borrowing_with(self, fr: FR, val: int) -> bool:
        """``BorrowingWith``: would using ``val`` more exceed this node's quota?"""
        return self.subtree.get(fr, 0) < self.usage.get(fr, 0) + val

    def nominal(self, fr: FR) -> int:
        q = self.quotas.get(fr)
        return q.nominal if q is not None else 0

    def within_nominal(self, frs: set[FR] | frozenset[FR]) -> bool:
        """``IsWithinNominalInResources``."""
        return all(self.subtree.get(fr, 0) >= self.usage.get(fr, 0) for fr in frs)

    def quantities_fit(self, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
        """``QuantitiesFitInQuota``: whether ``requests`` fit in the subtree quota, and what is
        left to source from above."""
        fits = True
        remaining = {}
        for fr, v in requests.items():
            if self.subtree.get(fr, 0) < self.usage.get(fr, 0) + v:
                fits = False
            remaining[fr] = max(0, v - self.local_available(fr))
        return fits, remaining

    def ancestors(self) -> Iterator[Node]:
        """Parent to root (``PathParentToRoot``)."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def subtree_cqs(self) -> list[Node]:
        out = list(self.child_cqs)
        for c in self.child_cohorts:
            out.extend(c.subtree_cqs())
        return out

    def height(self) -> int:
        """``getNodeHeight`` (classical/hierarchical_preemption.go)."""
        h = min(len(self.child_cohorts) + len(self.child_cqs), 1)
        for c in self.child_cohorts:
            h = max(h, c.height() + 1)
        return h

    def drs(self, extra: dict[FR, int] | None = None) -> DRS:
        return dominant_resource_share(self, extra)


def build_tree(config: QueuesConfig) -> dict[str, Node]:
    """Nodes of every ClusterQueue (by name) and Cohort (``"cohort/NAME"``), linked, with
    subtree quotas computed (``updateCohortResourceNode``); usage is empty. A cohort named
    only by a ClusterQueue's ``cohort`` field exists implicitly, as in Kueue."""
    nodes: dict[str, Node] = {}
    for name, co in config.cohorts.items():
        nodes["cohort/" + name] = Node(name, co.quotas(), co.weight, is_cq=False)
    for name, co in config.cohorts.items():
        if co.parent is not None:
            parent = nodes["cohort/" + co.parent]
            node = nodes["cohort/" + name]
            node.parent = parent
            parent.child_cohorts.append(node)
    for name in sorted(config.cluster_queues):
        cq = config.cluster_queues[name]
        node = Node(name, cq.quotas(), cq.weight, is_cq=True)
        nodes[name] = node
        if cq.cohort is not None:
            parent = nodes["cohort/" + cq.cohort]
            node.parent = parent
            parent.child_cqs.append(node)
    for node in nodes.values():
        node.child_cohorts.sort(key=lambda n: n.name)
    for node in nodes.values():
        if node.parent is None:
            _update_subtree(node)
    return nodes


def _update_subtree(node: Node) -> None:
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    for child in node.child_cohorts + node.child_cqs:
        _update_subtree(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + quota - child.local_quota(fr)


# ------------------------------------------------------------------ fair_sharing.go
@dataclass(frozen=True)
class DRS:
    """A dominant resource share: the borrowed fraction (×1000) of the most borrowed resource
    relative to what the parent could lend, divided by the node's fair-sharing weight."""

    weight: float = 1.0
    ratio: float = 0.0
    resource: str = ""
    borrowing: bool = False
    borrowed: tuple[FR, ...] = field(default=())

    def is_zero(self) -> bool:
        return self.ratio == 0

    def weighted(self) -> float:
        """``PreciseWeightedShare``: 0 when nothing is borrowed, ∞ for a zero weight."""
        if self.is_zero():
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and not self.is_zero()

    def borrowing_on(self, requested: dict[FR, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE_DRS = DRS(weight=1.0, ratio=-1.0)


def compare_drs(a: DRS, b: DRS) -> int:
    """``CompareDRS``: zero-weight borrowers after everyone, then the weighted share."""
    if a.zero_weight_borrows() and b.zero_weight_borrows():
        x, y = a.ratio, b.ratio
    elif a.zero_weight_borrows():
        return 1
    elif b.zero_weight_borrows():
        return -1
    else:
        x, y = a.weighted(), b.weighted()
    return (x > y) - (x < y)


def dominant_resource_share(node: Node, extra: dict[FR, int] | None = None) -> DRS:
    """``dominantResourceShare``: 0 for a root; otherwise, over the resources the node uses
    above its subtree quota, the largest ``borrowed × 1000 / lendable`` where lendable is what
    the parent could give it of that resource summed over flavors (``calculateLendable``)."""
    if node.parent is None:
        return DRS(weight=node.weight)
    extra = extra or {}
    borrowing: dict[str, int] = {}
    borrowed = []
    for fr, quota in node.subtree.items():
        b = extra.get(fr, 0) + node.usage.get(fr, 0) - quota
        if b > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + b
            borrowed.append(fr)
    if not borrowing:
        return DRS(weight=node.weight)
    parent = node.parent
    lendable: dict[str, int] = {}
    for fr in parent.root().subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + parent.potential_available(fr)
    ratio, dominant = 0.0, ""
    for res in sorted(borrowing):
        lr = lendable.get(res, 0)
        if lr > 0:
            r = borrowing[res] * 1000.0 / lr
            if r > ratio:
                ratio, dominant = r, res
    return DRS(node.weight, ratio, dominant, True, tuple(borrowed))
