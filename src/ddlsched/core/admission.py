"""The engine's quota layer: Kueue's admission (``ddlsched.tenancy``) composed with any policy.

The one module that maps engine state to a tenancy :class:`~ddlsched.tenancy.Snapshot` and a
:class:`~ddlsched.tenancy.Decision` back to engine actions. At every scheduling point (the end
of an instant with an arrival, a finish, a stop, or a policy round), before the policy, it
runs Kueue's cycle until stable on the jobs admitted (running, or waiting in ``sim.queue``) and
those held (``sim.held``): admitted jobs join ``sim.queue`` (``Simulator.admit``), Kueue's
victims are stopped and held again (``Simulator.evict``), their quota released. The policy
sees only admitted jobs. docs/tenancy.md "In the engine".

A job is one Kueue workload: one podset of ``num_gpus`` pods with one ``nvidia.com/gpu``
each, in the ClusterQueue (or LocalQueue) its ``queue`` names, with its ``priority``,
created at its arrival.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError, JobFieldError, quote, suggest
from ..tenancy import Decision, QueuesConfig, Snapshot, Workload, decide
from ..tenancy.cycle import Session
from ..tenancy.model import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    PodSet,
)
from .state import DONE, JobState

if TYPE_CHECKING:  # pragma: no cover
    from .job import JobSpec
    from .simulator import Simulator

#: the resource a job's pods request, one each (Kubernetes' device-plugin name)
GPU = "nvidia.com/gpu"
REASONS = (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAMATION,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
)


def cluster_queue_of(config: QueuesConfig, queue: str, job_id: int) -> str:
    """The ClusterQueue a job's ``queue`` names: a LocalQueue's, or a ClusterQueue itself; a
    job without one goes to the only ClusterQueue when there is one."""
    if queue in config.local_queues:
        return config.local_queues[queue]
    if queue in config.cluster_queues:
        return queue
    known = sorted({*config.cluster_queues, *config.local_queues})
    if not queue:
        if len(config.cluster_queues) == 1:
            return next(iter(config.cluster_queues))
        raise JobFieldError(
            f"job {job_id} names no queue, and the queues have {len(config.cluster_queues)} "
            f"ClusterQueues ({', '.join(known)}): give every job a queue",
            "queue",
            queue,
            job_id,
        )
    raise JobFieldError(
        f"job {job_id}: queue {quote(queue)} is no LocalQueue or ClusterQueue"
        f"{suggest(queue, known)} (queues: {', '.join(known)})",
        "queue",
        queue,
        job_id,
    )


def priority_of(config: QueuesConfig, text: str, job_id: int) -> int:
    """A job's ``priority``: an integer, or a WorkloadPriorityClass's value; "" is 0."""
    text = text.strip()
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        pass
    if text in config.priority_classes:
        return config.priority_classes[text]
    raise JobFieldError(
        f"job {job_id}: priority {quote(text)} is no integer or WorkloadPriorityClass"
        f"{suggest(text, config.priority_classes)}",
        "priority",
        text,
        job_id,
    )


def _name(job_id: int) -> str:
    return f"job-{job_id:09d}"  # Kueue's last tie-break is the name: job order


class KueueAdmission:
    """Kueue's quota layer for one run (``Simulator.set_admission``)."""

    def __init__(self, config: QueuesConfig, *, incremental: bool = True) -> None:
        self.config = config
        #: keep Kueue's state between scheduling points (``tenancy.cycle.Session``) and run the
        #: cycle only when its answer can have changed; False: ``decide`` on a whole snapshot of
        #: the admitted and held jobs at every point where one waits (the reference the tests
        #: compare with: the same runs, byte for byte)
        self.incremental = incremental
        self.session = Session(config)
        self.stale = False  # something changed since the last cycle that changed nothing
        self.seen_done = 0  # sim.completed[:seen_done] are accounted for
        self.seen_held = 0  # len(sim.held) after the last pass
        self.seq: dict[int, int] = {}  # job id → when it last entered sim.held (its order there)
        self.next_seq = 0
        self.by_id: dict[int, JobState] = {}
        self.workloads: dict[int, Workload] = {}  # job id → its pending workload
        self.admitted: dict[int, tuple[JobState, Workload]] = {}  # admitted, with flavors
        self.first_admitted: dict[int, float] = {}
        self.evictions: dict[str, dict[str, int]] = {}  # queue → reason → count
        self.evicted_running: dict[int, int] = {}  # job id → Kueue stops of it while it ran
        self.usage: dict[tuple[str, str], int] = {}  # (queue, flavor) → admitted GPUs
        self.used: dict[tuple[str, str], float] = {}  # (queue, flavor) → GPU-seconds admitted
        self.borrowed: dict[str, float] = {}  # queue → GPU-seconds admitted above nominal
        self.last = 0.0
        self.nominal: dict[tuple[str, str], int] = {}
        #: GPU flavor → the GPU type it holds its jobs to (``_flavor_types``)
        self.flavor_types: dict[str, str] = {}
        for name, cq in config.cluster_queues.items():
            rg = cq.group_of(GPU)
            for fl in rg.flavors if rg is not None else ():
                self.nominal[(name, fl)] = rg.quotas[(fl, GPU)].nominal // 1000  # type: ignore[union-attr]

    # -------------------------------------------------------------- set-up
    def attach(self, sim: Simulator) -> None:
        """Every job's workload; a job no quota could ever admit is an ``InputError``."""
        if getattr(sim.policy, "keeps_arrivals", False) and not hasattr(sim.policy, "on_evicted"):
            why = getattr(sim.policy, "queues_refusal", None) or (
                "keeps its own books of arrived jobs and does not take evictions (on_evicted)"
            )
            raise InputError(
                f"policy {sim.policy.name} does not run with --queues: {why}", field="queues"
            )
        if not any(self.config.cluster_queues[q].group_of(GPU) for q in self.config.cluster_queues):
            raise InputError(
                f"no ClusterQueue covers {GPU}: jobs could never be admitted", field="queues"
            )
        self.flavor_types = self._flavor_types(sim)
        fits: dict[tuple[str, int], bool] = {}
        self.by_id = {job.job_id: job for job in sim.jobs}
        for job in sim.jobs:
            spec = job.spec
            cq = cluster_queue_of(self.config, spec.queue, spec.job_id)
            wl = Workload(
                _name(spec.job_id),
                cq,
                (PodSet("main", spec.num_gpus, {GPU: 1000}),),
                priority_of(self.config, spec.priority, spec.job_id),
                float(spec.arrival),
            )
            self.workloads[spec.job_id] = wl
            key = (cq, spec.num_gpus)
            if key not in fits:
                alone = Workload(wl.name, cq, wl.podsets)
                fits[key] = wl.name in decide(self.config, Snapshot(pending=(alone,))).admitted
                if fits[key]:  # once per (queue, size), as the quota check
                    self._check_flavor_sizes(sim, cq, spec.job_id, spec.num_gpus)
            if self.flavor_types and spec.type_durations:
                self._check_flavor_tables(cq, spec)
            if not fits[key]:
                raise InputError(
                    f"job {spec.job_id} needs {spec.num_gpus} GPU(s), more than ClusterQueue "
                    f"{quote(cq)} can ever be given ({GPU}: its nominal quota and what its "
                    "cohort can lend): it would wait forever",
                    field="queues",
                )

    def _check_flavor_sizes(self, sim: Simulator, cq: str, job_id: int, gpus: int) -> None:
        """``InputError`` if ``cq`` may admit a job of ``gpus`` GPUs in a flavor that holds it
        to a GPU type with fewer GPUs (it could wait forever)."""
        rg = self.config.cluster_queues[cq].group_of(GPU)
        for fl in rg.flavors if rg is not None else ():
            t = self.flavor_types.get(fl)
            if t is not None and gpus > sim.cluster.gpu_types[t]:
                raise InputError(
                    f"job {job_id} needs {gpus} GPU(s); ClusterQueue "
                    f"{quote(cq)} may admit it in flavor {quote(fl)}, which holds it to "
                    f"GPU type {t}, of which the cluster has "
                    f"{sim.cluster.gpu_types[t]}: it could wait forever",
                    field="queues",
                )

    def _check_flavor_tables(self, cq: str, spec: JobSpec) -> None:
        """``InputError`` if ``cq`` may admit ``spec`` in a flavor that holds it to a GPU type
        its per-type table does not let it run on (no entry, or ``inf``): it could wait
        forever."""
        rg = self.config.cluster_queues[cq].group_of(GPU)
        for fl in rg.flavors if rg is not None else ():
            t = self.flavor_types.get(fl)
            if t is None:
                continue
            d = spec.duration_on(t)
            if d is None or not d < float("inf"):
                raise InputError(
                    f"job {spec.job_id} cannot run on GPU type {t} (its per-type durations "
                    f"{'mark it inf' if d is not None else 'have no entry for it'}); "
                    f"ClusterQueue {quote(cq)} may admit it in flavor {quote(fl)}, which "
                    "holds it to that type: it could wait forever",
                    field="queues",
                )

    def _flavor_types(self, sim: Simulator) -> dict[str, str]:
        """GPU flavor → the GPU type it holds its jobs to, on a cluster of several declared
        types: a flavor named after a type (case aside), as a Kueue ResourceFlavor's node labels
        select that type's nodes. A ClusterQueue with several GPU flavors must name a type
        with each (else its quota per flavor would not be the GPUs used), and the policy must
        place by the flavor (``holds_flavor_types``); either is an ``InputError``."""
        types = sim.cluster.gpu_types
        if not sim.cluster.typed or len(types) < 2:
            return {}
        by_name = {t.casefold(): t for t in types}
        held: dict[str, str] = {}
        for name, cq in sorted(self.config.cluster_queues.items()):
            rg = cq.group_of(GPU)
            if rg is None:
                continue
            named = {fl: by_name[fl.casefold()] for fl in rg.flavors if fl.casefold() in by_name}
            if len(rg.flavors) > 1 and len(named) < len(rg.flavors):
                other = [fl for fl in rg.flavors if fl not in named]
                raise InputError(
                    f"ClusterQueue {quote(name)} offers {GPU} in several flavors "
                    f"({', '.join(rg.flavors)}) on a cluster of several GPU types "
                    f"({', '.join(types)}), and {', '.join(map(quote, other))} names none of "
                    "them: name each GPU flavor after the GPU type it stands for (its jobs "
                    "then run on that type), or give the ClusterQueue one GPU flavor "
                    "(docs/tenancy.md)",
                    field="queues",
                )
            held.update(named)
        if held and not getattr(sim.policy, "holds_flavor_types", False):
            raise InputError(
                f"policy {sim.policy.name} does not hold its placements to a flavor's GPU type, "
                f"and the queues' GPU flavors {', '.join(sorted(map(quote, held)))} name GPU "
                "types of the cluster: use fifo, sjf, tiresias, sjf-ffs, sjf-bsbf, sia, "
                "gavel-tunedjobs or one of Gavel's policies, or flavors that name no GPU type "
                "(docs/tenancy.md)",
                field="queues",
            )
        return held

    # -------------------------------------------------------------- every scheduling point
    def _account(self, now: float) -> None:
        span = now - self.last
        if span > 0:
            borrowed = self.borrowed
            for (q, fl), n in self.usage.items():
                if n:
                    self.used[(q, fl)] = self.used.get((q, fl), 0.0) + n * span
                    over = n - self.nominal.get((q, fl), 0)
                    if over > 0:
                        borrowed[q] = borrowed.get(q, 0.0) + over * span
        self.last = now

    def _use(self, wl: Workload, sign: int) -> None:
        key = (wl.queue, wl.podsets[0].flavors[GPU])
        self.usage[key] = self.usage.get(key, 0) + sign * wl.podsets[0].count

    def cycle(self, sim: Simulator) -> None:
        """Kueue's cycle until stable on the engine's jobs; apply what it decided."""
        if not self.incremental:
            self._cycle_full(sim)
            return
        self._account(sim.now)
        session, admitted, workloads = self.session, self.admitted, self.workloads
        done = sim.completed
        removed_held = 0
        for job in done[self.seen_done :]:
            jid = job.job_id
            entry = admitted.pop(jid, None)
            if entry is not None:
                session.remove_admitted(entry[1].name)
                self._use(entry[1], -1)
                self.stale = True
            elif jid in self.seq:  # evicted, and finished its work while its stop was under way
                session.remove_pending(workloads[jid])
                del self.seq[jid]
                removed_held += 1
                self.stale = True
        self.seen_done = len(done)
        held = sim.held
        arrived = len(held) - (self.seen_held - removed_held)
        if arrived > 0:  # arrivals are appended to sim.held
            for job in held[len(held) - arrived :]:
                self.by_id[job.job_id] = job  # (a service's jobs come after attach)
                self.seq[job.job_id] = self.next_seq
                self.next_seq += 1
                session.add_pending(workloads[job.job_id])
            self.stale = True
        if held and self.stale:
            self._decide(sim)
        self.seen_held = len(sim.held)

    def _decide(self, sim: Simulator) -> None:
        session, admitted, workloads = self.session, self.admitted, self.workloads
        decision = session.run(until_stable=True)
        self.stale = bool(decision.admitted or decision.preempted)
        evicted = sorted(
            jid
            for jid in (int(name[4:]) for name in decision.preempted)
            if jid in admitted and _name(jid) not in session.sched.admitted
        )
        moved = self._moved(decision)
        for jid in evicted + moved:
            job, wl = admitted.pop(jid)
            reason = decision.preempted.get(wl.name, IN_CLUSTER_QUEUE)
            per = self.evictions.setdefault(wl.queue, {})
            per[reason] = per.get(reason, 0) + 1
            if sim.running.get(jid) is job:
                self.evicted_running[jid] = self.evicted_running.get(jid, 0) + 1
            self._use(wl, -1)
            if jid not in moved:  # back as a snapshot's pending workload
                session.remove_pending(workloads[jid])
                session.add_pending(workloads[jid])
            self._evict(sim, job, reason)
            self.seq[jid] = self.next_seq
            self.next_seq += 1
        seq = self.seq
        new_ids = [
            jid for jid in (int(name[4:]) for name in decision.admitted) if jid not in admitted
        ]
        new_ids.sort(key=seq.__getitem__)  # sim.held's order
        new = []
        for jid in new_ids:
            job = self.by_id[jid]
            wl = workloads[jid]
            flavors = decision.admitted[wl.name]["main"]
            ps = PodSet("main", wl.podsets[0].count, wl.podsets[0].requests, dict(flavors))
            awl = Workload(wl.name, wl.queue, (ps,), wl.priority, wl.created, sim.now)
            admitted[jid] = (job, awl)
            job.flavor_type = self.flavor_types.get(flavors[GPU])
            self._use(awl, +1)
            self.first_admitted.setdefault(jid, sim.now)
            del seq[jid]
            new.append(job)
        for name in decision.admitted:  # as a snapshot's admitted workloads
            session.set_admitted(admitted[int(name[4:])][1])
        sim.admit(new)

    def _moved(self, decision: Decision) -> list[int]:
        """Admitted jobs that one run of cycles preempted and admitted again in another
        flavor: Kueue evicts such a workload and admits it anew, so it stops and starts again
        in its new flavor (one preempted and re-admitted in the same flavor runs on, as if
        never stopped)."""
        admitted = self.admitted
        return sorted(
            jid
            for name, podsets in decision.admitted.items()
            if (jid := int(name[4:])) in admitted
            and podsets["main"][GPU] != admitted[jid][1].podsets[0].flavors[GPU]
        )

    def _evict(self, sim: Simulator, job: JobState, reason: str) -> None:
        """Take ``job``'s admission back for Kueue's ``reason`` (a hook: the service records
        the reason with the preemption)."""
        sim.evict(job)

    def _cycle_full(self, sim: Simulator) -> None:
        """``decide`` on a whole snapshot (``incremental=False``)."""
        self._account(sim.now)
        admitted = self.admitted
        for jid in [jid for jid, (job, _) in admitted.items() if job.status == DONE]:
            del admitted[jid]
        if sim.held:
            held = list(sim.held)
            snapshot = Snapshot(
                admitted=tuple(wl for _, wl in admitted.values()),
                pending=tuple(self.workloads[j.job_id] for j in held),
            )
            decision = decide(self.config, snapshot, until_stable=True)
            pending = set(decision.pending)
            moved = self._moved(decision)
            out = sorted(jid for jid, (_, wl) in admitted.items() if wl.name in pending)
            for jid in out + moved:
                job, wl = admitted.pop(jid)
                reason = decision.preempted.get(wl.name, IN_CLUSTER_QUEUE)
                per = self.evictions.setdefault(wl.queue, {})
                per[reason] = per.get(reason, 0) + 1
                if sim.running.get(jid) is job:
                    self.evicted_running[jid] = self.evicted_running.get(jid, 0) + 1
                self._evict(sim, job, reason)
            new = [j for j in held if self.workloads[j.job_id].name not in pending]
            new += [self.by_id[jid] for jid in moved]
            for job in new:
                wl = self.workloads[job.job_id]
                flavors = decision.admitted[wl.name]["main"]
                job.flavor_type = self.flavor_types.get(flavors[GPU])
                ps = PodSet("main", wl.podsets[0].count, wl.podsets[0].requests, dict(flavors))
                admitted[job.job_id] = (
                    job,
                    Workload(wl.name, wl.queue, (ps,), wl.priority, wl.created, sim.now),
                )
                self.first_admitted.setdefault(job.job_id, sim.now)
            sim.admit(new)
        usage: dict[tuple[str, str], int] = {}
        for _, wl in admitted.values():
            key = (wl.queue, wl.podsets[0].flavors[GPU])
            usage[key] = usage.get(key, 0) + wl.podsets[0].count
        self.usage = usage

    # -------------------------------------------------------------- the end
    def finish(self, sim: Simulator, summary: dict[str, Any]) -> tuple[tuple[object, ...], ...]:
        """Per-queue metrics: summary's ``queues`` (queue → metrics) and queues.csv rows."""
        self._account(sim.now)
        makespan = float(summary.get("makespan", 0.0))
        per: dict[str, list[JobState]] = {q: [] for q in sorted(self.config.cluster_queues)}
        for job in sorted(sim.jobs, key=lambda j: j.job_id):
            per[self.workloads[job.job_id].queue].append(job)
        table: dict[str, dict[str, object]] = {}
        rows = []
        for q, jobs in per.items():
            nominal = sum(n for (cq, _), n in self.nominal.items() if cq == q)
            n = len(jobs)
            jct = sum(j.finish - j.spec.arrival for j in jobs) / n if n else 0.0  # type: ignore[operator]
            wait = sum(j.start - j.spec.arrival for j in jobs) / n if n else 0.0  # type: ignore[operator]
            adm = (
                sum(self.first_admitted[j.job_id] - j.spec.arrival for j in jobs) / n if n else 0.0
            )
            used = sum((s.end - s.start) * len(s.gpus) for j in jobs for s in j.segments) / 3600
            admitted = sum(v for (cq, _), v in self.used.items() if cq == q) / 3600
            reasons = self.evictions.get(q, {})
            kueue_stops = sum(self.evicted_running.get(j.job_id, 0) for j in jobs)
            policy = sum(j.preemptions for j in jobs) - kueue_stops
            m: dict[str, object] = {
                "cohort": self.config.cluster_queues[q].cohort or "",
                "nominal_gpus": nominal,
                "jobs": n,
                "avg_jct": float(jct),
                "avg_queueing": float(wait),
                "avg_admission_wait": float(adm),
                "gpu_hours_used": float(used),
                "gpu_hours_admitted": float(admitted),
                "gpu_hours_nominal": float(nominal * makespan / 3600),
                "gpu_hours_borrowed": float(self.borrowed.get(q, 0.0) / 3600),
                "preemptions": {r: reasons.get(r, 0) for r in REASONS} | {"policy": policy},
                # with sharing_anomaly=true (api.add_sharing_anomaly), else None
                "private_avg_queueing": None,
                "sharing_anomaly": None,
            }
            table[q] = m
            rows.append(
                (
                    q,
                    m["cohort"],
                    nominal,
                    n,
                    *(m[k] for k in list(m)[3:10]),
                    *(reasons.get(r, 0) for r in REASONS),
                    policy,
                    "",
                    "",
                )
            )
        summary["queues"] = table
        return tuple(rows)
