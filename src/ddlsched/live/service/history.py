"""What a live service's store says happened, in the shapes its readers need: each job's
segments on GPUs (from the event log), the run directory's job records (``ddlsched export``),
the status page's overview and the ``/metrics`` text. Times are seconds since the
service's origin: its first submission."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.cluster import Cluster
from ...core.job import JobSpec
from ...core.results import SimResult, build_result
from ...core.state import DONE, JobState, Segment
from .store import ENDED, Event, StoredJob

__all__ = [
    "METRICS_CONTENT_TYPE",
    "JobHistory",
    "exposition",
    "histories",
    "metric_families",
    "metrics_registry",
    "metrics_text",
    "origin_of",
    "overview",
    "run_result",
]

#: events that end a job's current segment on its GPUs (a crash restarts it in place)
_CLOSE = {"preempt", "finish", "fail", "cancel", "requeue"}
#: events that put a running job back in the queue: preemptions, in jobs.csv
_BREAKS = {"preempt", "requeue"}


@dataclass
class JobHistory:
    """One job's time on GPUs: ``(start, end or None, gpus)`` per segment, and its
    preemptions (by the policy, or a requeue after a lost worker or a service restart; a
    crash restarted in place on the same GPUs continues its segment)."""

    job: StoredJob
    segments: list[tuple[float, float | None, tuple[int, ...]]] = field(default_factory=list)
    preemptions: int = 0

    @property
    def start(self) -> float | None:
        return self.segments[0][0] if self.segments else None


def origin_of(jobs: Sequence[StoredJob]) -> float:
    """The service's time 0: the first submission (0.0 for an empty store)."""
    return min((j.submitted_at for j in jobs), default=0.0)


def histories(
    jobs: Sequence[StoredJob], events: Sequence[Event], origin: float
) -> dict[int, JobHistory]:
    """Each job's segments from the event log: a ``start``/``resize`` opens one (a resize
    closes the one before), a preempt, requeue or end closes it. A job that finished while
    its preemption's (or cancel's) stop was under way (``finish`` with ``was`` queued or
    cancelled) ran until it finished: its last segment ends there, and that stop is no
    preemption."""
    out = {j.id: JobHistory(j) for j in jobs}
    closed_by: dict[int, str] = {}  # the event that closed each job's last segment
    for e in events:
        h = out.get(e.job) if e.job is not None else None
        if h is None:
            continue
        t = e.t - origin
        open_ = bool(h.segments) and h.segments[-1][1] is None
        if (
            e.event == "finish"
            and not open_
            and h.segments
            and e.detail.get("was") in ("queued", "cancelled")
            and closed_by.get(h.job.id) in ("preempt", "cancel")
        ):
            s, _, g = h.segments[-1]
            h.segments[-1] = (s, t, g)
            if closed_by[h.job.id] in _BREAKS:
                h.preemptions -= 1
            closed_by[h.job.id] = "finish"
            continue
        if e.event in ("start", "resize"):
            gpus = tuple(e.detail.get("gpus", ()))
            if open_ and e.event == "start" and h.segments[-1][2] == gpus:
                continue  # restarted in place after a crash or a hang
            if open_:
                s, _, g = h.segments[-1]
                h.segments[-1] = (s, t, g)
            h.segments.append((t, None, gpus))
        elif e.event in _CLOSE and open_:
            s, _, g = h.segments[-1]
            h.segments[-1] = (s, t, g)
            closed_by[h.job.id] = e.event
            if e.event in _BREAKS:
                h.preemptions += 1
    return out


def arrival_of(job: StoredJob, origin: float) -> float:
    """When the job could first start: its submission plus its own ``arrival`` offset."""
    return job.submitted_at - origin + job.job.arrival


def run_result(
    cluster: Cluster, jobs: Sequence[StoredJob], events: Sequence[Event]
) -> tuple[SimResult, dict[str, object]]:
    """The run directory of the store's jobs that finished, as ``ddlsched live`` writes it
    (failed and cancelled jobs are named in the summary's own keys, never in its JCTs), and
    the summary's service keys."""
    origin = origin_of(jobs)
    hist = histories(jobs, events, origin)
    states = []
    for j in jobs:
        h = hist[j.id]
        if j.state != "finished" or h.start is None or j.finished_at is None:
            continue
        spec = JobSpec(
            job_id=j.id,
            arrival=arrival_of(j, origin),
            num_gpus=j.job.gpus,
            iterations=0,
            model=_placeholder(),
            duration=j.job.duration or 0.0,
            name=" ".join(j.job.command)[:80],
        )
        st = JobState(spec=spec, status=DONE, start=h.start, finish=j.finished_at - origin)
        st.preemptions = h.preemptions
        st.segments = [Segment(j.id, s, st.finish if e is None else e, g) for s, e, g in h.segments]
        st.gpus = st.segments[-1].gpus
        states.append(st)
    busy = sum((seg.end - seg.start) * len(seg.gpus) for st in states for seg in st.segments)
    res = build_result(cluster, states, busy)
    by_state = {s: sorted(j.id for j in jobs if j.state == s) for s in ("failed", "cancelled")}
    extra: dict[str, object] = {
        "failed_jobs": len(by_state["failed"]),
        "failed_job_ids": by_state["failed"],
        "cancelled_jobs": len(by_state["cancelled"]),
        "cancelled_job_ids": by_state["cancelled"],
        "submitted_jobs": len(jobs),
        "unfinished_job_ids": sorted(j.id for j in jobs if j.state not in ENDED),
        "attempts_restarted": sum(max(j.attempt, 0) for j in jobs),
        # a store with jobs still queued or running exports what has ended so far
        "interrupted": any(j.state not in ENDED for j in jobs),
        "max_jobs_per_gpu": 1,
        "elastic": any(e.event == "resize" for e in events),
    }
    return res, extra


def _placeholder():  # noqa: ANN202 - a ModelSpec
    from ...workloads.trace_formats import placeholder_model

    return placeholder_model("live")


def overview(
    jobs: Sequence[StoredJob],
    events: Sequence[Event],
    now: float,
    service: Mapping[str, object],
    progress: Mapping[int, object] | None = None,
    window: float = 3600.0,
) -> dict[str, object]:
    """The status page's data (``GET /api/overview``): queue, running jobs, ended jobs, the
    GPU segments of the last ``window`` seconds and busy-GPU fraction over time."""
    origin = origin_of(jobs)
    hist = histories(jobs, events, origin)
    t_now = max(now - origin, 0.0) if jobs else 0.0
    gpus = int(service.get("gpus", 0) or 0)  # type: ignore[call-overload]

    def cmd(j: StoredJob) -> str:
        return " ".join(j.job.command)

    queue, running, ended, segments = [], [], [], []
    for j in jobs:
        h = hist[j.id]
        if j.state == "queued":
            queue.append(
                {
                    "id": j.id,
                    "name": j.job.name,
                    "queue": j.job.queue or None,
                    "gpus": j.job.gpus,
                    "command": cmd(j),
                    "submitted": j.submitted_at - origin,
                    "failures": j.failures,
                }  # fmt: skip
            )
        elif j.state == "running":
            since = h.segments[-1][0] if h.segments else t_now
            step = (progress or {}).get(j.id)
            running.append(
                {
                    "id": j.id,
                    "name": j.job.name,
                    "queue": j.job.queue or None,
                    "gpus": j.job.gpus,
                    "gpus_held": sorted(j.gpus_held),
                    "since": since,
                    "attempt": j.attempt,
                    "command": cmd(j),
                    "step": step,
                }  # fmt: skip
            )
        else:
            end = (j.finished_at or now) - origin
            ended.append(
                {
                    "id": j.id,
                    "name": j.job.name,
                    "queue": j.job.queue or None,
                    "state": j.state,
                    "submitted": j.submitted_at - origin,
                    "ended": end,
                    "jct": end - arrival_of(j, origin),
                    "reason": j.reason,
                }  # fmt: skip
            )
        for s, e, g in h.segments:
            if e is None or e >= t_now - window:
                segments.append({"job": j.id, "gpus": list(g), "start": s, "end": e})
    return {
        "now": t_now,
        "origin": origin,
        "service": dict(service),
        "queue": queue,
        "running": running,
        "finished": ended,
        "segments": segments,
        "utilisation": utilisation(hist.values(), gpus, t_now),
    }


def utilisation(hist: object, gpus: int, now: float, points: int = 200) -> list[list[float]]:
    """Busy-GPU fraction as a step function ``[[t, fraction], …]`` (at most ``points`` steps,
    the latest kept)."""
    deltas: dict[float, int] = {}
    for h in hist:  # type: ignore[attr-defined]
        for s, e, g in h.segments:
            deltas[s] = deltas.get(s, 0) + len(g)
            if e is not None:  # a running job holds its GPUs up to now
                deltas[e] = deltas.get(e, 0) - len(g)
    out, busy = [[0.0, 0.0]], 0
    for t in sorted(deltas):
        busy += deltas[t]
        frac = busy / gpus if gpus else 0.0
        out.append([t, round(min(max(frac, 0.0), 1.0), 6)])
    if out[-1][0] < now:
        out.append([now, out[-1][1]])
    return out[-points:]


#: the ``/metrics`` answer's type: the Prometheus text format 0.0.4 (``generate_latest``)
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: what the metrics are made of: the store's counts, the cluster's GPUs, the GPUs held by
#: running jobs, whether the service drains
MetricsSnapshot = tuple[Mapping[str, int], int, int, bool]


def metric_families(counts: Mapping[str, int], gpus: int, busy_gpus: int,
                    draining: bool) -> list[Any]:  # fmt: skip
    """The service's metrics as ``prometheus_client`` metric families (names, types, help
    and labels as the hand-written text before them had)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    ev = lambda k: counts.get(f"event:{k}", 0)  # noqa: E731
    gauge, counter = GaugeMetricFamily, CounterMetricFamily
    ended = counter("ddlsched_jobs_ended_total", "Jobs that ended, by final state.",
                    labels=["state"])  # fmt: skip
    for s in ENDED:
        ended.add_metric([s], counts.get(s, 0))
    return [
        gauge("ddlsched_queue_length", "Jobs waiting for GPUs.", value=counts.get("queued", 0)),
        gauge("ddlsched_running_jobs", "Jobs running.", value=counts.get("running", 0)),
        gauge("ddlsched_gpus", "GPUs the service schedules.", value=gpus),
        gauge("ddlsched_gpus_busy", "GPUs held by running jobs.", value=busy_gpus),
        gauge(
            "ddlsched_gpu_utilization",
            "Fraction of GPUs held by running jobs.",
            value=busy_gpus / gpus if gpus else 0.0,
        ),  # fmt: skip
        counter("ddlsched_submissions_total", "Jobs submitted.", value=ev("submit")),
        ended,
        counter(
            "ddlsched_job_completions_total", "Jobs finished.", value=counts.get("finished", 0)
        ),  # fmt: skip
        counter("ddlsched_preemptions_total", "Preemptions by the policy.", value=ev("preempt")),
        counter(
            "ddlsched_restarts_total",
            "Restarts after a crash, a hang or a service restart.",
            value=counts.get("restarts", 0),
        ),  # fmt: skip
        gauge("ddlsched_draining", "1 while the service drains.", value=int(draining)),
    ]


class _Collector:
    """A ``prometheus_client`` collector that reads the service at each scrape."""

    def __init__(self, snapshot: Callable[[], MetricsSnapshot]) -> None:
        self.snapshot = snapshot

    def collect(self) -> list[Any]:
        return metric_families(*self.snapshot())


def metrics_registry(snapshot: Callable[[], MetricsSnapshot]) -> Any:
    """A ``CollectorRegistry`` of its own (not the process-wide default) whose collector
    calls ``snapshot`` at each scrape; render it with ``prometheus_client.generate_latest``."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(snapshot))
    return registry


def exposition(registry: Any) -> bytes:
    """``registry`` in the Prometheus text format 0.0.4 (``generate_latest``), whole numbers
    written as before (``2``, not ``2.0``: the same number to every Prometheus parser)."""
    from prometheus_client import generate_latest

    return _WHOLE.sub(rb"\1", generate_latest(registry))


_WHOLE = re.compile(rb"^([^#\n][^\n]* -?[0-9]+)\.0$", re.MULTILINE)


def metrics_text(counts: Mapping[str, int], gpus: int, busy_gpus: int, draining: bool) -> str:
    """``GET /metrics``: the Prometheus text exposition format (version 0.0.4)."""
    registry = metrics_registry(lambda: (counts, gpus, busy_gpus, draining))
    return exposition(registry).decode("utf-8")
