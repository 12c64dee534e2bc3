"""The service's tenants (issue #28; docs/live.md "Tenants"): Kueue's quota layer in the
running service (``ddlsched serve --queues Q.yaml``), a job's queue and priority checked at
submission, a token per LocalQueue, and why a job is pending (``ddlsched status --why``).

:class:`ServiceAdmission` is the engine's :class:`~ddlsched.core.admission.KueueAdmission`
for jobs that arrive while the engine runs: each job's workload is made when the job is
added (not at ``attach``), and after every cycle the layer keeps what it decided (the
admitted and the pending workloads, immutable) for :func:`explain` to read from the HTTP
threads without a lock."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.admission import GPU, KueueAdmission, cluster_queue_of, priority_of
from ...errors import InputError, quote
from ...tenancy import QueuesConfig, Snapshot, Workload, decide
from ...tenancy.model import PodSet
from ...tenancy.quota import build_tree
from ..jobfile import LiveJob

if TYPE_CHECKING:  # pragma: no cover
    from ...core.job import JobSpec
    from ...core.simulator import Simulator
    from ...core.state import JobState
    from .store import JobStore, StoredJob

__all__ = ["TENANT_TOKENS_FILE", "ServiceAdmission", "explain", "tenant_tokens"]

#: the file in the state directory with each LocalQueue's token (JSON, mode 0600)
TENANT_TOKENS_FILE = "tenant-tokens.json"


def _name(job_id: int) -> str:
    return f"job-{job_id:09d}"  # core.admission's workload names: job order breaks ties


class ServiceAdmission(KueueAdmission):
    """Kueue's quota layer for jobs submitted while the service runs."""

    def __init__(self, config: QueuesConfig) -> None:
        super().__init__(config)
        #: what the last cycle left: (engine time, admitted workloads, pending workloads)
        self.seen: tuple[float, tuple[Workload, ...], tuple[Workload, ...]] = (0.0, (), ())
        self._fits: dict[tuple[str, int], bool] = {}

    # -------------------------------------------------------------- submission (HTTP threads)
    def check(self, job: LiveJob, index: int) -> LiveJob:
        """``job`` with its queue checked (a LocalQueue or ClusterQueue of the queues; none:
        the only ClusterQueue when there is one), its priority (an integer or a
        WorkloadPriorityClass), and a size some quota can ever admit; an ``InputError``
        naming the field otherwise."""
        cq = cluster_queue_of(self.config, job.queue, index)
        priority_of(self.config, job.priority, index)
        key = (cq, job.gpus)
        if key not in self._fits:
            alone = Workload("probe", cq, (PodSet("main", job.gpus, {GPU: 1000}),))
            self._fits[key] = "probe" in decide(self.config, Snapshot(pending=(alone,))).admitted
        if not self._fits[key]:
            raise InputError(
                f"job {index} needs {job.gpus} GPU(s), more than ClusterQueue {quote(cq)} can "
                f"ever be given ({GPU}: its nominal quota and what its cohort can lend): it "
                "would wait forever",
                field="gpus",
            )
        return job

    # -------------------------------------------------------------- the engine's side
    def attach(self, sim: Simulator) -> None:
        super().attach(sim)  # the policy's checks; the service starts with no jobs

    def add(self, spec: JobSpec) -> None:
        """The workload of a job the engine was given (before it arrives)."""
        self.workloads[spec.job_id] = Workload(
            _name(spec.job_id),
            cluster_queue_of(self.config, spec.queue, spec.job_id),
            (PodSet("main", spec.num_gpus, {GPU: 1000}),),
            priority_of(self.config, spec.priority, spec.job_id),
            float(spec.arrival),
        )

    def forget(self, job_id: int) -> None:
        """A cancelled job: its workload goes (its admission at the next cycle)."""
        self.workloads.pop(job_id, None)

    def _evict(self, sim: Simulator, job: JobState, reason: str) -> None:
        """Kueue's preemption of a running job is recorded with Kueue's reason (the store's
        ``preempt`` event: "evicted by Kueue: InCohortReclamation")."""
        executor = sim.executor
        why = getattr(executor, "preempt_reason", None)
        if why is None:
            super()._evict(sim, job, reason)
            return
        executor.preempt_reason = f"evicted by Kueue: {reason}"  # type: ignore[attr-defined]
        try:
            super()._evict(sim, job, reason)
        finally:
            executor.preempt_reason = why  # type: ignore[attr-defined]

    def cycle(self, sim: Simulator) -> None:
        super().cycle(sim)
        self.seen = (
            sim.now,
            tuple(wl for _, wl in self.admitted.values()),
            tuple(self.workloads[j.job_id] for j in sim.held if j.job_id in self.workloads),
        )


# ---------------------------------------------------------------------- why pending
def _gpus_now(stored: StoredJob, policy: str, free: tuple[int, int] | None) -> list[str]:
    """For a job that waits for the policy: whether enough GPUs are free for it now (it waits
    for GPUs) or the policy leaves it queued by its own order or rounds. Nothing when the
    service did not say (``free``: free GPUs, all GPUs)."""
    if free is None:
        return []
    idle, total = free
    asks = stored.job.gpus
    head = f"{idle} of {total} GPUs free now, it asks {asks}"
    if idle < asks:
        return [f"{head}: it waits for GPUs to free up"]
    return [
        f"{head}: the policy {policy} has not started it (its order puts other jobs first, "
        "its next round has not come, or the free GPUs do not make the placement it needs)"
    ]


def explain(
    admission: ServiceAdmission | None,
    stored: StoredJob,
    policy: str,
    free: tuple[int, int] | None = None,
) -> list[str]:
    """Why ``stored`` is where it is, one line per reason, from the admission layer's last
    cycle (Kueue's wording: "insufficient unused quota for nvidia.com/gpu in flavor F"); for
    a job that waits for the policy, whether it waits for GPUs (``free``: free GPUs, all)."""
    if stored.state == "running":
        return [f"running on GPU(s) {', '.join(map(str, stored.gpus_held))}: not pending"]
    if stored.state != "queued":
        return [f"{stored.state}: not pending" + (f" ({stored.reason})" if stored.reason else "")]
    if admission is None:
        return [f"queued: the service runs without --queues; waiting for the policy {policy} "
                "to start it", *_gpus_now(stored, policy, free)]  # fmt: skip
    _now, admitted, pending = admission.seen
    name = _name(stored.id)
    for wl in admitted:
        if wl.name == name:
            flavor = wl.podsets[0].flavors.get(GPU, "?")
            return [
                f"admitted by ClusterQueue {wl.queue} (flavor {flavor}, {wl.podsets[0].count} "
                f"{GPU}); waiting for the policy {policy} to start it",
                *_gpus_now(stored, policy, free),
            ]
    mine = next((wl for wl in pending if wl.name == name), None)
    if mine is None:
        return ["not yet seen by the admission cycle (it runs at the next scheduling point)"]
    config = admission.config
    nodes = build_tree(config)
    for wl in admitted:
        ps = wl.podsets[0]
        nodes[wl.queue].add_usage((ps.flavors[GPU], GPU), ps.count * 1000)
    node = nodes[mine.queue]
    cq = config.cluster_queues[mine.queue]
    need = mine.podsets[0].count * 1000
    group = cq.group_of(GPU)
    lines: list[str] = []
    fits = False
    for flavor in group.flavors if group is not None else ():
        fr = (flavor, GPU)
        most, free = node.potential_available(fr), node.available(fr)
        used, nominal = node.usage.get(fr, 0), node.nominal(fr)
        where = f"ClusterQueue {mine.queue}"
        if most < need:
            lines.append(
                f"{where}: insufficient quota for {GPU} in flavor {flavor}, request > maximum "
                f"capacity ({need // 1000} > {most // 1000})"
            )
        elif free < need:
            text = (
                f"{where}: insufficient unused quota for {GPU} in flavor {flavor}, "
                f"{(need - free) // 1000} more needed (its usage {used // 1000} of nominal "
                f"{nominal // 1000}"
            )
            if cq.cohort:
                text += (
                    f"; cohort {cq.cohort} can lend {max(free - max(nominal - used, 0), 0) // 1000}"
                )
            lines.append(text + ")")
        else:
            fits = True
    if fits or not lines:
        ahead = sorted(
            (wl for wl in pending if wl.queue == mine.queue and wl.name != name
             and (-wl.priority, wl.created, wl.name) < (-mine.priority, mine.created, mine.name)),
            key=lambda wl: (-wl.priority, wl.created, wl.name),
        )  # fmt: skip
        if ahead:
            ids = ", ".join(str(int(wl.name.split("-")[1])) for wl in ahead[:10])
            lines = [
                f"ClusterQueue {mine.queue}: behind {len(ahead)} pending job(s) of higher "
                f"priority or older ({ids}{', …' if len(ahead) > 10 else ''})"
            ]
        else:
            lines = [
                f"ClusterQueue {mine.queue}: quota is free now; waiting for the next admission "
                "cycle (or for the GPUs of jobs it preempted to be freed)"
            ]
    return lines


# ---------------------------------------------------------------------- /metrics per queue
class QueueCollector:
    """``/metrics``' families per queue (a ``queue`` label: the LocalQueue or ClusterQueue a
    job names; "" for a job with none): jobs per state, GPUs held, and each ClusterQueue's
    nominal GPU quota."""

    def __init__(self, store: Callable[[], JobStore | None], config: QueuesConfig) -> None:
        self.store = store
        self.config = config

    def collect(self) -> list[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from .store import STATES

        store = self.store()
        if store is None:
            return []
        counts = store.queue_counts()
        names = sorted({*self.config.local_queues, *(q for q, _ in counts)})
        jobs = GaugeMetricFamily("ddlsched_queue_jobs", "Jobs per queue and state",
                                 labels=["queue", "state"])  # fmt: skip
        held = GaugeMetricFamily("ddlsched_queue_gpus_held", "GPUs held by a queue's jobs",
                                 labels=["queue"])  # fmt: skip
        for q in names:
            for state in STATES:
                jobs.add_metric([q, state], counts.get((q, state), (0, 0))[0])
            held.add_metric([q], counts.get((q, "running"), (0, 0))[1])
        nominal = GaugeMetricFamily(
            "ddlsched_cluster_queue_nominal_gpus",
            f"A ClusterQueue's nominal quota of {GPU}",
            labels=["cluster_queue"],
        )
        for name in sorted(self.config.cluster_queues):
            group = self.config.cluster_queues[name].group_of(GPU)
            total = 0
            for flavor in group.flavors if group is not None else ():
                total += group.quotas[(flavor, GPU)].nominal // 1000  # type: ignore[union-attr]
            nominal.add_metric([name], total)
        return [jobs, held, nominal]


# ---------------------------------------------------------------------- tokens
def tenant_tokens(state: Path, config: QueuesConfig, admin: str | None) -> dict[str, str]:
    """Each LocalQueue's token (LocalQueue → token), kept in ``state/tenant-tokens.json``
    (mode 0600): read when it exists (an operator may write or edit it: every token at least
    16 characters, no white space, all distinct and none the admin's), a new random one
    added for each LocalQueue it lacks; LocalQueues no longer in the queues are dropped."""
    path = state / TENANT_TOKENS_FILE
    tokens: dict[str, str] = {}
    if path.exists():
        try:
            mode = os.stat(path).st_mode
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise InputError(f"cannot read the tenants' tokens: {e}", source=str(path)) from None
        if mode & 0o077:
            raise InputError(f"the tenants' token file is readable by others (mode "
                             f"{mode & 0o777:o}): chmod 600 it", source=str(path))  # fmt: skip
        if not isinstance(doc, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in doc.items()
        ):
            raise InputError("expected a JSON object LocalQueue → token", source=str(path))
        tokens = dict(doc)
    kept = {lq: t for lq, t in tokens.items() if lq in config.local_queues}
    for lq in sorted(config.local_queues):
        kept.setdefault(lq, secrets.token_urlsafe(32))
    seen: set[str] = {admin} if admin else set()
    for lq, token in kept.items():
        if len(token) < 16 or any(c.isspace() for c in token):
            raise InputError(f"the token of LocalQueue {quote(lq)} must be at least 16 "
                             "characters, no white space", source=str(path))  # fmt: skip
        if token in seen:
            raise InputError(f"the token of LocalQueue {quote(lq)} is not unique (another "
                             "LocalQueue's or the admin's)", source=str(path))  # fmt: skip
        seen.add(token)
    if kept != tokens or not path.exists():
        data = (json.dumps(kept, indent=2, sort_keys=True) + "\n").encode("utf-8")
        tmp = path.with_suffix(".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            raise InputError(f"cannot write the tenants' tokens: {e.strerror}",
                             source=str(path)) from None  # fmt: skip
    return kept


def with_tenant_queue(job: LiveJob, tenant: str) -> LiveJob:
    """A tenant's job in its own LocalQueue (a job naming none goes there)."""
    return job if job.queue else replace(job, queue=tenant)
