"""Result records and metrics (SPEC §4 "Metrics"), with atomic writers.

``summary.json`` keys, ``jobs.csv`` and ``segments.csv`` columns are a public contract;
``summary.json`` also holds ``run_id`` and ``files`` (digests), which are not metrics.
"""

from __future__ import annotations

import csv
import io
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cluster import Cluster
from .fairness import FAIRNESS_COLUMNS, fairness, type_held, union_length
from .state import JobState

JOB_COLUMNS = [
    "job_id",
    "arrival",
    "start",
    "finish",
    "jct",
    "queueing",
    "gpus",
    "placement",
    "preemptions",
]
SEGMENT_COLUMNS = ["job_id", "start", "end", "placement"]
SUMMARY_KEYS = [
    "avg_jct",
    "median_jct",
    "p95_jct",
    "p99_jct",
    "makespan",
    "avg_queueing",
    "gpu_util",
    "num_jobs",
]


#: ``queues.csv``: one row per ClusterQueue of a run with ``--queues`` (docs/formats.md)
QUEUE_COLUMNS = (
    "queue",
    "cohort",
    "nominal_gpus",
    "jobs",
    "avg_jct",
    "avg_queueing",
    "avg_admission_wait",
    "gpu_hours_used",
    "gpu_hours_admitted",
    "gpu_hours_nominal",
    "gpu_hours_borrowed",
    "preempted_InClusterQueue",
    "preempted_InCohortReclamation",
    "preempted_InCohortFairSharing",
    "preempted_InCohortReclaimWhileBorrowing",
    "policy_preemptions",
    "private_avg_queueing",
    "sharing_anomaly",
)


@dataclass(frozen=True)
class JobRecord:
    job_id: int
    arrival: float
    start: float
    finish: float
    gpus: int
    placement: str
    preemptions: int

    @property
    def jct(self) -> float:
        return self.finish - self.arrival

    @property
    def queueing(self) -> float:
        return self.start - self.arrival


@dataclass(frozen=True)
class SegmentRecord:
    job_id: int
    start: float
    end: float
    placement: str


@dataclass(frozen=True)
class SimResult:
    """Everything one run produced."""

    jobs: tuple[JobRecord, ...]
    segments: tuple[SegmentRecord, ...]
    summary: dict[str, float]
    #: what ran, as the backend resolved it (backend, job kind, performance model …; the
    #: ``resolved`` block of ``config.json``, ``api.resolve_run``)
    resolved: dict[str, object] = field(default_factory=dict)
    #: ``fairness.csv`` rows (job id, alone, contention, fair JCT, ρ; ``core.fairness``),
    #: empty when the executor does not know the jobs' alone times
    fairness: tuple[tuple[int, float, float, float, float], ...] = ()
    #: ``queues.csv`` rows (a run with ``--queues``; ``core.admission.QUEUE_COLUMNS``)
    queues: tuple[tuple[object, ...], ...] = ()


def summarize(jobs: Sequence[JobRecord], busy_gpu_seconds: float, num_gpus: int) -> dict:
    """Average/median/p95/p99 JCT, makespan, queueing and GPU utilisation (busy / (GPUs × span)).

    The utilisation is not clamped: an executor that counted a GPU twice would show above 1."""
    if not jobs:
        return {k: 0.0 for k in SUMMARY_KEYS} | {"num_jobs": 0}
    jct = np.array([j.jct for j in jobs])
    queue = np.array([j.queueing for j in jobs])
    first = min(j.arrival for j in jobs)
    makespan = max(j.finish for j in jobs) - first
    util = busy_gpu_seconds / (num_gpus * makespan) if makespan > 0 else 0.0
    large = [j.jct for j in jobs if j.gpus > 4]
    small = [j.jct for j in jobs if j.gpus <= 4]
    return {
        "avg_jct": float(jct.mean()),
        "median_jct": float(np.median(jct)),
        "p95_jct": float(np.percentile(jct, 95)),
        "p99_jct": float(np.percentile(jct, 99)),
        "makespan": float(makespan),
        "avg_queueing": float(queue.mean()),
        "gpu_util": float(util),
        "num_jobs": len(jobs),
        "avg_jct_large": float(np.mean(large)) if large else 0.0,
        "avg_jct_small": float(np.mean(small)) if small else 0.0,
    }


def gpu_held_seconds(segments: Iterable[SegmentRecord]) -> float:
    """Σ over GPUs of the length of the union of the intervals its segments cover: each GPU
    counts once while it holds at least one job, however many share it. Computed from the
    values ``segments.csv`` holds (GPUs named by their placement labels), so a checker reading
    that file gets the same float: GPUs in label order, intervals by (start, end)."""
    per_gpu: dict[str, list[tuple[float, float]]] = {}
    for s in segments:
        for label in s.placement.split(";"):
            per_gpu.setdefault(label, []).append((s.start, s.end))
    total = 0.0
    for label in sorted(per_gpu):
        total += union_length(per_gpu[label])
    return total


def job_gpu_seconds(segments: Iterable[SegmentRecord]) -> float:
    """Σ over segments of (end − start) × its GPUs: a GPU shared by two jobs counts twice."""
    return sum((s.end - s.start) * len(s.placement.split(";")) for s in segments)


def held_metrics(segments: Sequence[SegmentRecord], num_gpus: int, makespan: float) -> dict:
    """``gpu_held`` (a GPU counts once while it holds a job) and ``gpu_util_jobs`` (every job
    counts its GPUs: above ``gpu_held`` when GPUs are shared), both ÷ (GPUs × makespan)."""
    span = num_gpus * makespan
    if not span > 0:
        return {"gpu_held": 0.0, "gpu_util_jobs": 0.0}
    return {
        "gpu_held": gpu_held_seconds(segments) / span,
        "gpu_util_jobs": job_gpu_seconds(segments) / span,
    }


def build_result(
    cluster: Cluster,
    jobs: Sequence[JobState],
    busy: float,
    alone: Callable[[JobState], float] | None = None,
) -> SimResult:
    """The result of finished ``jobs``; with ``alone`` (the executor's ``alone_time``) also the
    fairness metrics (``core.fairness``), and on a cluster of declared GPU types (more than
    one) the per-type held shares ``gpu_held_<type>``."""
    recs = []
    segs = []
    for j in sorted(jobs, key=lambda j: j.job_id):
        assert j.start is not None and j.finish is not None
        recs.append(
            JobRecord(
                job_id=j.job_id,
                arrival=j.arrival,
                start=j.start,
                finish=j.finish,
                gpus=j.num_gpus,
                placement=cluster.placement_label(j.gpus),
                preemptions=j.preemptions,
            )
        )
        for s in j.segments:
            segs.append(SegmentRecord(j.job_id, s.start, s.end, cluster.placement_label(s.gpus)))
    segs.sort(key=lambda s: (s.start, s.job_id))
    summary = summarize(recs, busy, cluster.num_gpus)
    if recs:
        summary.update(held_metrics(segs, cluster.num_gpus, summary["makespan"]))
    else:
        summary.update(gpu_held=0.0, gpu_util_jobs=0.0)
    rows: list = []
    if alone is not None and recs:
        times = {j.job_id: alone(j) for j in jobs}
        rows, keys = fairness(recs, times, cluster.num_gpus)
        summary.update(keys)
    if cluster.typed and len(cluster.gpu_types) > 1 and recs:
        spans = [(s.start, s.end, s.gpus) for j in jobs for s in j.segments]
        kinds = [cluster.gpu_type(g) for g in range(cluster.num_gpus)]
        summary.update(type_held(spans, kinds, summary["makespan"]))
    return SimResult(tuple(recs), tuple(segs), summary, fairness=tuple(rows))


# ---------------------------------------------------------------------- writing
def _fmt(x: float) -> str:
    """Stable float formatting: repr round-trips and is identical across runs."""
    if isinstance(x, float) and math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x)) if isinstance(x, float) else str(x)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file + rename: never a half-written file. The file
    gets the user's umask; a full disk or a missing permission is a one-line ``InputError``
    naming ``path`` (the temp file is removed)."""
    from .rundir import WRITE_ERRNOS, file_mode, write_error

    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), file_mode())
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        if isinstance(e, OSError) and e.errno in WRITE_ERRNOS:
            raise write_error(path, e) from None
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8 (newlines as given)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def csv_text(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([_fmt(v) if isinstance(v, float) else v for v in r])
    return buf.getvalue()


def result_files(
    result: SimResult, extra: dict | None = None, config: dict | None = None
) -> dict[str, bytes]:
    """The files of a result directory as bytes, ``summary.json`` last: ``config.json`` (if
    given), ``jobs.csv``, ``segments.csv``, and ``summary.json`` with ``run_id`` (first 16 hex
    digits of the SHA-256 of config.json's bytes; without a config, of jobs.csv + segments.csv)
    and ``files`` (each other file's full SHA-256), so a reader can prove they belong together."""
    from .rundir import dumps_json, run_id_of, sha256_hex

    files: dict[str, bytes] = {}
    if config is not None:
        files["config.json"] = dumps_json(config, "config.json").encode("utf-8")
    jobs_rows = [
        (
            j.job_id,
            float(j.arrival),
            float(j.start),
            float(j.finish),
            float(j.jct),
            float(j.queueing),
            j.gpus,
            j.placement,
            j.preemptions,
        )
        for j in result.jobs
    ]
    seg_rows = [(s.job_id, float(s.start), float(s.end), s.placement) for s in result.segments]
    files["jobs.csv"] = csv_text(JOB_COLUMNS, jobs_rows).encode("utf-8")
    files["segments.csv"] = csv_text(SEGMENT_COLUMNS, seg_rows).encode("utf-8")
    if result.fairness:
        fair_rows = [(i, *(float(x) for x in rest)) for i, *rest in result.fairness]
        files["fairness.csv"] = csv_text(FAIRNESS_COLUMNS, fair_rows).encode("utf-8")
    if result.queues:
        files["queues.csv"] = csv_text(QUEUE_COLUMNS, result.queues).encode("utf-8")
    summary = dict(result.summary)
    if extra:
        summary.update(extra)
    if "config.json" in files:
        run_id = run_id_of(files["config.json"])
    else:
        run_id = run_id_of(files["jobs.csv"] + files["segments.csv"])
    summary["run_id"] = run_id
    summary["files"] = {name: sha256_hex(data) for name, data in files.items()}
    files["summary.json"] = dumps_json(summary, "summary.json").encode("utf-8")
    return files


def write_result_files(
    result: SimResult, directory: str | Path, extra: dict | None = None, config: dict | None = None
) -> None:
    """Write :func:`result_files` into ``directory`` (a fresh staging directory)."""
    from .rundir import write_file

    for name, data in result_files(result, extra, config).items():
        write_file(Path(directory) / name, data)


def write_result(
    result: SimResult, out_dir: str | Path, extra: dict | None = None, config: dict | None = None
) -> None:
    """Write the result directory ``out_dir`` all-or-nothing: ``config.json`` (if given),
    ``jobs.csv``, ``segments.csv`` and ``summary.json`` go into a staging directory that
    replaces ``out_dir`` in one rename (``core/rundir.py``)."""
    from .rundir import output_dir

    with output_dir(out_dir, overwrite=True) as staging:
        write_result_files(result, staging, extra, config)
