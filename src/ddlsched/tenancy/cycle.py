"""One Kueue scheduling cycle on a snapshot, and repeated cycles until nothing changes:
a pure function from (queues, snapshot) to a :class:`~.model.Decision`.

Restates, at kubernetes-sigs/kueue ff69552e79ad21652c36caa97038382e55625cf7:
``pkg/scheduler/scheduler.go`` (``schedule``, ``nominate``, ``getInitialAssignments``,
``processEntry``, ``updateAssignmentIfNeeded``, ``fits``, ``reserveCapacityForUnreclaimablePreempt``,
``quotaResourcesToReserve``, ``makeClassicalIterator``), ``pkg/scheduler/fair_sharing_iterator.go``
(``runTournament``, ``entryComparer.less``, ``computeDRS``) and ``pkg/cache/queue/cluster_queue.go``
(``baseCompareFunc``: a queue's head; ``RequeueIfNotPresent``: StrictFIFO keeps a head that
does not fit at the head, BestEffortFIFO sets it aside until quota is freed in its tree; the
sticky preemptor of BestEffortFIFO).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .flavors import (
    MODE_DEFERRED_FIT,
    MODE_FIT,
    MODE_NO_FIT,
    MODE_PREEMPT,
    Assignment,
    FlavorAssigner,
)
from .model import Decision, QueuesConfig, Snapshot, Workload
from .preemption import Preemptor, Target
from .quota import DRS, FR, Node, compare_drs
from .snapshot import Info, Snap, admitted_info, podset_requests


@dataclass
class _Entry:
    wl: Workload
    cq: str
    assignment: Assignment
    targets: list[Target] = field(default_factory=list)
    requeue: str = "Generic"  # NoFit | PreemptionNoCandidates | PendingPreemption | Generic


class _Queue:
    """A ClusterQueue's pending workloads: higher priority first, then older, then name; a
    BestEffortFIFO queue's preemptor stays at the head (``preemptorWorkload``)."""

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.heap: list[tuple[int, float, str]] = []
        self.active: dict[str, Workload] = {}
        self.inadmissible: dict[str, Workload] = {}
        self.sticky: str | None = None

    def push(self, wl: Workload) -> None:
        self.active[wl.name] = wl
        heapq.heappush(self.heap, (-wl.priority, wl.created, wl.name))

    def pop(self) -> Workload | None:
        if self.sticky is not None and self.sticky in self.active:
            return self.active.pop(self.sticky)
        while self.heap:
            _, _, name = heapq.heappop(self.heap)
            wl = self.active.pop(name, None)
            if wl is not None:
                return wl
        return None

    def requeue(self, wl: Workload, reason: str) -> bool:
        """``RequeueIfNotPresent``: immediately back for StrictFIFO and for workloads that
        failed after nomination or wait for their preemptions; otherwise set aside (True)."""
        if reason == "PendingPreemption" and self.strategy == "BestEffortFIFO":
            self.sticky = wl.name
        immediate = self.strategy == "StrictFIFO" or reason in ("Generic", "PendingPreemption")
        if immediate:
            self.push(wl)
            return False
        self.inadmissible[wl.name] = wl
        return True

    def requeue_inadmissible(self) -> None:
        for wl in self.inadmissible.values():
            self.push(wl)
        self.inadmissible.clear()

    def names(self) -> list[str]:
        return list(self.active) + list(self.inadmissible)


class Scheduler:
    """The state between cycles: admitted workloads and the queues."""

    def __init__(self, config: QueuesConfig, snapshot: Snapshot) -> None:
        self.config = config
        self.admitted: dict[str, Info] = {}
        for wl in snapshot.admitted:
            self.admitted[wl.name] = admitted_info(wl, config.cluster_queues[wl.queue])
        self.queues = {
            name: _Queue(cq.queueing_strategy) for name, cq in config.cluster_queues.items()
        }
        for wl in snapshot.pending:
            self.queues[wl.queue].push(wl)
        self.decision = Decision()
        self.decision.cycles = 0
        #: a :class:`Session`'s snap, kept up to date between cycles; None: one built per cycle
        self.snap: Snap | None = None
        self._reserved: list[tuple[str, dict[FR, int]]] = []  # usage a cycle added to the snap

    # ------------------------------------------------------------------ nomination
    def _assign(self, snap: Snap, preemptor: Preemptor, wl: Workload) -> _Entry:
        """``getInitialAssignments``: flavors; targets when preemption is needed."""
        spec = self.config.cluster_queues[wl.queue]

        def oracle(cq: str, fr: FR, quantity: int) -> tuple[int, int]:
            return preemptor.simulate(wl, cq, fr, quantity)

        assigner = FlavorAssigner(snap, spec, oracle, self.config.fair_sharing)
        a = assigner.assign(podset_requests(wl, spec))
        e = _Entry(wl, wl.queue, a)
        if a.mode == MODE_PREEMPT:
            e.targets = preemptor.get_targets(wl, wl.queue, a.usage, a.preempt_frs())
        return e

    # ------------------------------------------------------------------ ordering
    def _classical_order(self, entries: list[_Entry]) -> list[_Entry]:
        """``makeClassicalIterator``: not borrowing first, higher priority, older (name)."""
        return sorted(
            entries, key=lambda e: (e.assignment.borrowing, -e.wl.priority, e.wl.created, e.wl.name)
        )

    def _fair_order(self, snap: Snap, entries: list[_Entry]):  # type: ignore[no-untyped-def]
        """``fairSharingIterator``: per root cohort, a tournament of the entries by the share
        each would give its path's nodes once admitted (recomputed after every pop)."""
        by_cq = {e.cq: e for e in entries}
        while by_cq:
            name = min(by_cq)
            node = snap.cq(name)
            if node.parent is None:
                yield by_cq.pop(name)
                continue
            root = node.parent.root()
            drs: dict[tuple[int, str], DRS] = {}
            requested: dict[str, dict[FR, int]] = {}
            for q in root.subtree_cqs():
                e = by_cq.get(q.name)
                if e is None:
                    continue
                usage = e.assignment.usage
                requested[e.wl.name] = usage
                snap.add_usage(q.name, usage)
                share = q.drs()
                for anc in q.ancestors():
                    drs[(id(anc), e.wl.name)] = share
                    share = anc.drs()
                snap.remove_usage(q.name, usage)
            winner = _tournament(root, by_cq, drs, requested)
            assert winner is not None
            yield by_cq.pop(winner.cq)

    # ------------------------------------------------------------------ the cycle
    def cycle(self) -> bool:
        """One ``schedule`` call; whether anything changed."""
        self.decision.cycles += 1
        heads = []
        for name in sorted(self.queues):
            wl = self.queues[name].pop()
            if wl is not None:
                heads.append(wl)
        if not heads:
            return False
        snap = self.snap if self.snap is not None else Snap(self.config, self.admitted.values())
        self._reserved = []
        preemptor = Preemptor(snap, self.config.fair_sharing, self.config.fs_strategies)
        entries = [self._assign(snap, preemptor, wl) for wl in heads]
        order = (
            self._fair_order(snap, entries)
            if self.config.fair_sharing
            else iter(self._classical_order(entries))
        )
        preempted: dict[str, Target] = {}
        admitted: list[_Entry] = []
        for e in order:
            self._process(snap, preemptor, e, preempted, admitted)
        changed = bool(admitted or preempted)
        if self.snap is not None:
            # the cycle's own reservations go (last first: exact, see Session), the
            # decisions are applied, so the snap is again the one of ``self.admitted``
            for cq, usage in reversed(self._reserved):
                snap.remove_usage(cq, usage)
        for e in admitted:
            info = Info(e.wl, dict(e.assignment.usage))
            info.flavors = set(e.assignment.usage)
            self.admitted[e.wl.name] = info
            if self.snap is not None:
                snap.add_workload(info)
            self.decision.admitted[e.wl.name] = {
                ps.name: {res: f for res, (f, _) in sorted(flv.items())}
                for ps, flv in zip(e.wl.podsets, e.assignment.podsets, strict=True)
            }
            if self.queues[e.cq].sticky == e.wl.name:
                self.queues[e.cq].sticky = None
        done = {e.wl.name for e in admitted}
        for e in entries:
            if e.wl.name not in done and self.queues[e.cq].requeue(e.wl, e.requeue):
                changed = True  # a BestEffortFIFO head set aside: the next one is tried next
        freed_roots: set[int] = set()
        for t in preempted.values():
            del self.admitted[t.info.name]
            if self.snap is not None:
                snap.remove_workload(t.info)
            self.decision.preempted.setdefault(t.info.name, t.reason)
            self.decision.admitted.pop(t.info.name, None)
            wl = t.info.wl
            self.queues[wl.queue].push(wl)
            freed_roots.add(id(snap.cq(wl.queue).root()))
        for name, q in self.queues.items():
            if id(snap.cq(name).root()) in freed_roots:
                q.requeue_inadmissible()
        return changed

    def _process(
        self,
        snap: Snap,
        preemptor: Preemptor,
        e: _Entry,
        preempted: dict[str, Target],
        admitted: list[_Entry],
    ) -> None:
        """``processEntry`` (without TAS, admission checks, workload slices)."""
        victims = [t.info for t in preempted.values()]
        usage = e.assignment.usage
        fits = snap.fits(e.cq, usage, victims + [t.info for t in e.targets])
        if any(t.info.name in preempted for t in e.targets):
            # RecomputeAssignmentUponPreemptionTargetsOverlap: with the other victims gone
            for info in victims:
                snap.remove_workload(info)
            fresh = self._assign(snap, preemptor, e.wl)
            for info in victims:
                snap.add_workload(info)
            if fresh.assignment.mode == MODE_FIT:
                fresh.assignment.mode = MODE_DEFERRED_FIT
            e.assignment, e.targets = fresh.assignment, fresh.targets
            usage = e.assignment.usage
            fits = snap.fits(e.cq, usage, victims + [t.info for t in e.targets])
        mode = e.assignment.mode
        if mode == MODE_NO_FIT:
            e.requeue = "NoFit"
            return
        if mode == MODE_PREEMPT and not e.targets:
            e.requeue = "PreemptionNoCandidates"
            spec = self.config.cluster_queues[e.cq]
            if spec.preemption.reclaim_within_cohort != "Any":
                self._reserve(snap, e.cq, _to_reserve(e.assignment, snap.cq(e.cq)))
            return
        if mode == MODE_DEFERRED_FIT:
            e.requeue = "PendingPreemption"
            self._reserve(snap, e.cq, usage)
            return
        if any(t.info.name in preempted for t in e.targets) or not fits:
            e.requeue = "Generic"
            return
        for t in e.targets:
            preempted[t.info.name] = t
        self._reserve(snap, e.cq, usage)
        if mode == MODE_PREEMPT:
            e.requeue = "PendingPreemption"
            return
        assert mode == MODE_FIT
        admitted.append(e)

    def _reserve(self, snap: Snap, cq: str, usage: dict[FR, int]) -> None:
        snap.add_usage(cq, usage)
        self._reserved.append((cq, dict(usage)))


def _to_reserve(a: Assignment, cq: Node) -> dict[FR, int]:
    """``quotaResourcesToReserve`` for a workload that needs preemption but found no victims:
    what it may still claim, so that later workloads of the cycle do not take it."""
    out = {}
    for fr, v in a.usage.items():
        q = cq.quotas.get(fr)
        nominal = q.nominal if q is not None else 0
        used = cq.usage.get(fr, 0)
        if a.borrowing > 0:
            if q is None or q.borrowing_limit is None:
                out[fr] = v
            else:
                out[fr] = min(v, nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(v, nominal - used))
    return out


def _tournament(
    cohort: Node,
    by_cq: dict[str, _Entry],
    drs: dict[tuple[int, str], DRS],
    requested: dict[str, dict[FR, int]],
) -> _Entry | None:
    """``runTournament``: the best entry of each child, then the best of those at this level."""
    candidates = []
    for child in cohort.child_cohorts:
        c = _tournament(child, by_cq, drs, requested)
        if c is not None:
            candidates.append(c)
    for q in cohort.child_cqs:
        if q.name in by_cq:
            candidates.append(by_cq[q.name])
    if not candidates:
        return None
    best = candidates[0]
    for cur in candidates[1:]:
        if _less(cur, best, cohort, drs, requested):
            best = cur
    return best


def _less(
    a: _Entry,
    b: _Entry,
    cohort: Node,
    drs: dict[tuple[int, str], DRS],
    requested: dict[str, dict[FR, int]],
) -> bool:
    """``entryComparer.less``: not borrowing on what it asks for first
    (FairSharingPrioritizeNonBorrowing, on by default), lower share, higher priority, older."""
    ad, bd = drs[(id(cohort), a.wl.name)], drs[(id(cohort), b.wl.name)]
    ab, bb = ad.borrowing_on(requested[a.wl.name]), bd.borrowing_on(requested[b.wl.name])
    if ab != bb:
        return not ab
    c = compare_drs(ad, bd)
    if c != 0:
        return c == -1
    if a.wl.priority != b.wl.priority:
        return a.wl.priority > b.wl.priority
    return (a.wl.created, a.wl.name) < (b.wl.created, b.wl.name)


#: most cycles ``until_stable`` runs: with reclaimWithinCohort Any and nothing finishing, victims
#: that borrow again can be reclaimed again without end (Kueue's requeue backoff is not modelled)
MAX_CYCLES = 1000
#: after this many cycles ``until_stable`` also watches for a state it has been in before (the
#: admitted workloads with their flavors, each queue's active and inadmissible workloads and
#: sticky head: all a cycle depends on): the cycles would repeat from there, so it stops
WATCH_AFTER = 8


def _until_stable(sched: Scheduler, changed: bool, max_cycles: int) -> None:
    """More cycles of ``sched`` until one changes nothing, the state repeats (an
    oscillation: ``stable = False``) or ``max_cycles`` ran (``stable = False``). The state is
    the scheduler's whole state (the quota usage follows from the admitted workloads), so a
    repeat is a true cycle of states, which no further cycle leaves."""
    decision = sched.decision
    seen: set[tuple] = set()
    while changed and decision.cycles < max_cycles:
        if decision.cycles >= WATCH_AFTER:
            state = (
                frozenset((name, frozenset(info.flavors)) for name, info in sched.admitted.items()),
                tuple(
                    (frozenset(q.active), frozenset(q.inadmissible), q.sticky)
                    for q in sched.queues.values()
                ),
            )
            if state in seen:
                decision.stable = False
                return
            seen.add(state)
        changed = sched.cycle()
    decision.stable = not changed


def decide(
    config: QueuesConfig,
    snapshot: Snapshot,
    *,
    until_stable: bool = False,
    max_cycles: int = MAX_CYCLES,
) -> Decision:
    """What one Kueue scheduling cycle (or, with ``until_stable``, repeated cycles with
    nothing finishing, until one changes nothing) does to ``snapshot``: the workloads it
    admits with their flavors, those it preempts with Kueue's reason, those left pending.

    Pure: reads its arguments only (the engine can call it with its own snapshot). A
    workload preempted and then admitted again in a later cycle is in both maps; ``cycles``
    says how many ran (at most ``max_cycles``)."""
    sched = Scheduler(config, snapshot)
    changed = sched.cycle()
    if until_stable:
        _until_stable(sched, changed, max_cycles)
    pending = [n for q in sched.queues.values() for n in q.names()]
    sched.decision.pending = sorted(pending)
    return sched.decision


class Session:
    """:func:`decide` kept between calls: the admitted workloads, the pending ones and the
    quota tree with its usage live on, updated as workloads arrive, finish and are admitted or
    preempted, so that one call costs what its cycles do, not a rebuild of the whole snapshot.

    ``run(until_stable)`` gives the decision ``decide`` would give on a snapshot of the same
    admitted and pending workloads (tests/test_tenancy_engine.py compares them run by run):
    every pending workload is active again at its start (no inadmissible set, no sticky
    head, as in a fresh ``Scheduler``), and the tree's usage does not depend on the order in
    which usage was added and removed (a node passes ``max(0, usage − local quota)`` up to its
    parent after every add or remove), so it is the usage a fresh snapshot would have."""

    def __init__(self, config: QueuesConfig) -> None:
        self.config = config
        self.sched = Scheduler(config, Snapshot())
        self.sched.snap = Snap(config, ())

    @property
    def snap(self) -> Snap:
        assert self.sched.snap is not None
        return self.sched.snap

    def add_pending(self, wl: Workload) -> None:
        self.sched.queues[wl.queue].push(wl)

    def remove_pending(self, wl: Workload) -> None:
        q = self.sched.queues[wl.queue]
        if q.active.pop(wl.name, None) is None:
            q.inadmissible.pop(wl.name, None)
        if q.sticky == wl.name:
            q.sticky = None

    def set_admitted(self, wl: Workload) -> None:
        """``wl`` (with its podsets' flavors and admission time) is admitted: as a snapshot's
        admitted workload (replaces the record of a workload the cycle admitted)."""
        old = self.sched.admitted.pop(wl.name, None)
        if old is not None:
            self.snap.remove_workload(old)
        info = admitted_info(wl, self.config.cluster_queues[wl.queue])
        self.sched.admitted[wl.name] = info
        self.snap.add_workload(info)

    def remove_admitted(self, name: str) -> None:
        info = self.sched.admitted.pop(name)
        self.snap.remove_workload(info)

    def pending(self) -> bool:
        return any(q.active or q.inadmissible for q in self.sched.queues.values())

    def run(self, *, until_stable: bool = False, max_cycles: int = MAX_CYCLES) -> Decision:
        """What :func:`decide` does on the admitted and pending workloads; the session keeps
        its outcome (admitted workloads carry no flavors or admission time until
        ``set_admitted``). ``pending`` is left empty: the caller knows it from the maps."""
        sched = self.sched
        for q in sched.queues.values():
            q.requeue_inadmissible()
            q.sticky = None
            if len(q.heap) > 2 * len(q.active) + 64:  # drop the entries of popped workloads
                q.heap = [(-w.priority, w.created, w.name) for w in q.active.values()]
                heapq.heapify(q.heap)
        sched.decision = Decision()
        sched.decision.cycles = 0
        changed = sched.cycle()
        if until_stable:
            _until_stable(sched, changed, max_cycles)
        return sched.decision


__all__ = ["decide", "Session", "MODE_FIT", "MODE_NO_FIT", "MODE_PREEMPT", "MODE_DEFERRED_FIT"]
