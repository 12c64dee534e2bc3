"""Readers for other simulators' job traces: Philly job summaries, Gavel (10 and 7 columns) and
the Tiresias simulator's CSV; see ``docs/formats.md`` ("Job traces").

Each reader returns jobs in file order (``job_id`` = row index, arrivals as the file gives them;
Philly: in submission order, arrivals from the first);
:func:`ddlsched.workloads.traces.read_trace` sorts, renumbers and filters them.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..core.job import JobSpec, ModelProfile
from ..core.timing import MAX_TIME, MIN_DURATION, time_problem
from ..errors import InputError, quote, suggest
from ..parsing import (
    NumberError,
    check_float,
    check_width,
    csv_rows,
    load_json,
    parse_float,
    parse_int,
)
from .io import read_text
from .philly import PhillyTrace, read_philly

#: Gavel's current trace: tab-separated, no header (``scheduler/utils.py: parse_trace``).
GAVEL_COLUMNS: tuple[str, ...] = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)
#: Gavel's older trace of the Philly virtual clusters (``msr-seed0/<vc>.trace``).
GAVEL_PHILLY_COLUMNS: tuple[str, ...] = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time",
    "scale_factor",
)
#: The Tiresias simulator's CSV (``job_id,num_gpu,submit_time,iterations,model_name,duration,
#: interval``) needs these columns.
TIRESIAS_REQUIRED: tuple[str, ...] = ("num_gpu", "submit_time", "duration")
#: Model name of trace jobs whose format names none (Philly).
PLACEHOLDER_MODEL = "trace"

_BATCH_RE = re.compile(r"\(batch size ([0-9]+)\)")
_KEY_RE = re.compile(r"^\('(.*)', ([0-9]+)\)$")


def placeholder_model(name: str, batch_size: int = 0) -> ModelProfile:
    """The profile of a trace job: a name and batch size, no performance model (the job runs
    for its ``duration``)."""
    return ModelProfile(name or PLACEHOLDER_MODEL, 0.0, 0.0, batch_size, 0.0, 0.0)


def batch_from_name(name: str) -> int:
    """The batch size in a Gavel job type such as ``ResNet-50 (batch size 32)``, else 0."""
    m = _BATCH_RE.search(name)
    return int(m.group(1)) if m else 0


def parse_number(raw: str, source: str, line: int | None, field: str, *, positive: bool) -> float:
    """A finite number ``≥ 0`` (``> 0`` if ``positive``) or an ``InputError`` at file/line/field
    (the text grammar of ``ddlsched.parsing``)."""
    try:
        v = parse_float(raw)
    except NumberError as e:
        raise InputError(str(e), source=source, line=line, field=field) from None
    if v < 0 or (positive and v == 0):
        bound = "> 0" if positive else "≥ 0"
        raise InputError(
            f"must be {bound}, got {quote(raw.strip())}", source=source, line=line, field=field
        )
    return v


def _check_time(
    value: float, source: str, line: int | None, field: str, *, duration: bool = False
) -> None:
    """``InputError`` at file/line/field for a time outside the engine's range."""
    if problem := time_problem(value, duration=duration):
        raise InputError(problem, source=source, line=line, field=field)


def parse_count(raw: str, source: str, line: int | None, field: str) -> int:
    """A whole number ``≥ 1`` (``4`` or ``4.0``) or an ``InputError`` at file/line/field."""
    try:
        v = parse_int(raw)
    except NumberError as e:
        if "too large" in str(e):
            raise InputError(str(e), source=source, line=line, field=field) from None
        v = 0
    if v < 1:
        raise InputError(
            f"expected a whole number ≥ 1, got {quote(raw.strip())}",
            source=source,
            line=line,
            field=field,
        )
    return v


# --------------------------------------------------------------------------------------------
# Philly job summaries
# --------------------------------------------------------------------------------------------


def read_philly_jobs(path: Path) -> list[JobSpec]:
    """Philly jobs in submission order: arrival = submission − the trace's first submission,
    the measured ``duration`` on ``num_gpus`` GPUs; no model; ``cluster`` (the virtual cluster)
    becomes the job's ``queue``."""
    trace = read_philly(path)
    bad = (trace.duration <= 0).nonzero()[0]
    if len(bad):
        raise InputError(
            "duration must be > 0 for a trace job",
            source=str(path),
            line=int(trace.line[bad[0]]),
            field="duration",
        )
    # Built in arrival order (ties: file order), so that sorting and numbering change nothing.
    order = np.argsort(trace.submit, kind="stable")
    profile = placeholder_model(PLACEHOLDER_MODEL)
    arrivals = (trace.submit[order] - trace.submit[order[0]]).tolist()
    _check_philly_times(trace, order, arrivals, str(path))
    gpus = trace.num_gpus[order].tolist()
    durations = trace.duration[order].tolist()
    vcs = [trace.cluster[k] for k in order.tolist()]
    return [
        JobSpec(
            job_id=i,
            arrival=arrivals[i],
            num_gpus=gpus[i],
            iterations=0,
            model=profile,
            duration=durations[i],
            queue=vcs[i],
        )
        for i in range(len(arrivals))
    ]


def _check_philly_times(
    trace: PhillyTrace, order: np.ndarray, arrivals: list[float], source: str
) -> None:
    """``InputError`` at the first row (file order) whose duration, or arrival counted from the
    first submission, the engine cannot represent (``core/timing.py``)."""
    arr = np.asarray(arrivals, dtype=float)
    dur = trace.duration[order]
    ok = (dur >= MIN_DURATION) & (dur <= MAX_TIME) & (arr <= MAX_TIME)
    if ok.all():
        return
    k = min(np.flatnonzero(~ok).tolist(), key=lambda i: int(trace.line[order[i]]))
    field, problem = "duration", time_problem(float(dur[k]), duration=True)
    if problem is None:
        field = "timestamp"
        problem = f"arrival (from the first submission) {time_problem(float(arr[k]))}"
    raise InputError(problem, source=source, line=int(trace.line[order[k]]), field=field)


# --------------------------------------------------------------------------------------------
# Gavel
# --------------------------------------------------------------------------------------------


def read_gavel(
    path: Path,
    columns: tuple[str, ...] = GAVEL_COLUMNS,
    *,
    throughputs: str | Path | None = None,
    gpu_type: str = "v100",
) -> list[JobSpec]:
    """Jobs of a Gavel trace with ``columns`` (:data:`GAVEL_COLUMNS` or
    :data:`GAVEL_PHILLY_COLUMNS`): ``total_steps`` iterations on ``scale_factor`` GPUs arriving
    at ``arrival_time`` seconds; the model is the ``job_type``.

    With ``throughputs`` (Gavel's ``simulation_throughputs.json``) each job also gets
    ``duration = total_steps / throughput`` (steps/s of the job type alone on ``scale_factor``
    GPUs of ``gpu_type``). Scale factors the file does not measure are extrapolated linearly
    from the nearest measured one (below if any, else above): ``thr(k) · scale_factor / k``.
    Jobs then also carry the file's co-location pairs (``JobSpec.colocation``)."""
    source = str(path)
    table = gavel_throughputs(throughputs, gpu_type) if throughputs is not None else None
    types = gavel_types(throughputs) if throughputs is not None else {}
    zeros = gavel_zeros(throughputs) if throughputs is not None else frozenset()
    pairs = gavel_pairs(throughputs, gpu_type) if throughputs is not None else None
    idx = {c: i for i, c in enumerate(columns)}
    jobs: list[JobSpec] = []
    profiles: dict[str, ModelProfile] = {}
    for line, raw in enumerate(read_text(path).split("\n"), start=1):
        raw = raw.rstrip("\r")
        if not raw.strip():
            continue
        cells = raw.split("\t")
        if len(cells) != len(columns):
            raise InputError(
                f"expected {len(columns)} tab-separated fields ({', '.join(columns)}), "
                f"got {len(cells)}",
                source=source,
                line=line,
            )
        job_type = cells[idx["job_type"]].strip()
        if not job_type:
            raise InputError("empty job type", source=source, line=line, field="job_type")
        steps = parse_count(cells[idx["total_steps"]], source, line, "total_steps")
        gpus = parse_count(cells[idx["scale_factor"]], source, line, "scale_factor")
        arrival = parse_number(
            cells[idx["arrival_time"]], source, line, "arrival_time", positive=False
        )
        _check_time(arrival, source, line, "arrival_time")
        duration = 0.0
        per_type: tuple[tuple[str, float], ...] = ()
        if table is not None:
            duration = steps / scaled_throughput(table, job_type, gpus, throughputs, source, line)
            if problem := time_problem(duration, duration=True):
                raise InputError(
                    f"total_steps / throughput (steps/s alone on {gpus} GPU(s)): {problem}",
                    source=source,
                    line=line,
                    field="total_steps",
                )
            per_type = per_type_durations(types, job_type, gpus, steps, zeros)
        profile = profiles.get(job_type)
        if profile is None:
            profile = profiles[job_type] = placeholder_model(job_type, batch_from_name(job_type))
        jobs.append(
            JobSpec(
                job_id=len(jobs),
                arrival=arrival,
                num_gpus=gpus,
                iterations=steps,
                model=profile,
                duration=duration,
                type_durations=per_type,
                colocation=pairs,
            )
        )
    if not jobs:
        raise InputError("no jobs: the trace is empty", source=source)
    return jobs


def per_type_durations(
    types: dict[str, dict[str, dict[int, float]]],
    job_type: str,
    gpus: int,
    steps: int,
    zeros: frozenset[tuple[str, str, int]] = frozenset(),
) -> tuple[tuple[str, float], ...]:
    """The job's seconds alone on each GPU type of the throughputs file (its plain types,
    not the ``*_unconsolidated`` ones): ``steps`` ÷ the type's throughput, extrapolated as for
    ``duration``; ``inf`` (cannot run there) where the file gives 0 steps/s for exactly this
    job type and GPU count (``zeros``: Gavel's way of saying the configuration does not run,
    e.g. ResNet-50 at batch 128 on 2–8 K80s) or no non-zero throughput for the job type."""
    out = []
    for name, table in types.items():
        measured = table.get(job_type)
        if not measured or (name, job_type, gpus) in zeros:
            out.append((name, math.inf))
            continue
        if gpus in measured:
            thr = measured[gpus]
        else:
            below = [k for k in measured if k < gpus]
            k = max(below) if below else min(measured)
            thr = measured[k] * gpus / k
        out.append((name, steps / thr))
    return tuple(out)


def gavel_throughputs(path: str | Path, gpu_type: str) -> dict[str, dict[int, float]]:
    """``job type → {scale factor: steps/s alone}`` on ``gpu_type`` from Gavel's throughputs
    JSON (keys ``"('<job type>', <scale factor>)"``, value ``{"null": steps/s, ...}``)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise InputError(f"cannot read throughputs file: {e.strerror}", source=str(p)) from None
    data = _load_throughputs(str(p.resolve()), str(p), st.st_mtime_ns, st.st_size)
    table = data.get(gpu_type)
    if table is None:
        raise InputError(
            f"no GPU type {quote(gpu_type)}{suggest(gpu_type, data)}; "
            f"the file has: {', '.join(sorted(data))}",
            source=str(p),
            field="gavel_gpu",
        )
    return table


def gavel_types(path: str | Path) -> dict[str, dict[str, dict[int, float]]]:
    """Every plain GPU type of Gavel's throughputs file (not ``*_unconsolidated``) →
    ``job type → {scale factor: steps/s alone}`` (a job's per-type table,
    ``JobSpec.type_durations``)."""
    p = Path(path)
    st = p.stat()
    data = _load_throughputs(str(p.resolve()), str(p), st.st_mtime_ns, st.st_size)
    return {k: v for k, v in data.items() if not k.endswith("_unconsolidated")}


def gavel_zeros(path: str | Path) -> frozenset[tuple[str, str, int]]:
    """(GPU type, job type, scale factor) that Gavel's throughputs file measures as 0 steps/s
    alone: configurations that do not run (the readers otherwise skip zeros as unmeasured)."""
    p = Path(path)
    st = p.stat()
    return _zeros(str(p.resolve()), str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4)
def _zeros(path: str, source: str, _mtime_ns: int, _size: int) -> frozenset[tuple[str, str, int]]:
    data = load_json(Path(path).read_text(encoding="utf-8"), source)
    out = set()
    for gpu, entries in data.items() if isinstance(data, dict) else ():
        for key, value in entries.items() if isinstance(entries, dict) else ():
            m = _KEY_RE.match(key)
            alone = value.get("null") if isinstance(value, dict) else None
            if m and alone == 0:
                try:
                    out.add((gpu, m.group(1), parse_int(m.group(2))))
                except NumberError:
                    continue
    return frozenset(out)


class GavelPairs:
    """Gavel's measured co-location throughputs (``simulation_throughputs.json``): per plain
    GPU type (not ``*_unconsolidated``) and job key ``(job type, scale factor)``, the job's
    steps/s alone (``"null"``) and, for each other key, ``[its steps/s, the other's steps/s]``
    while both share the GPUs (``[0.0, 0.0]``: they cannot share).

    ``slowdown`` gives ξ(a with b on type t) = a's steps/s alone ÷ a's steps/s next to b
    (docs/models.md "Co-location on shared GPUs"); ``inf`` where the pair cannot share on t: a
    zero or missing pair, or a key the file does not measure on t (scale factors are not
    extrapolated for pairs). ``default_type`` is the GPU type a run on a cluster of undeclared
    types uses (the type the trace's durations were read with, ``--gavel-gpu``). Held by a Gavel
    job's ``JobSpec.colocation``; one table per file and type, shared by its jobs."""

    __slots__ = ("_alone", "_pairs", "default_type", "_memo")

    def __init__(
        self,
        alone: dict[tuple[str, tuple[str, int]], float],
        pairs: dict[tuple[str, tuple[str, int], tuple[str, int]], tuple[float, float]],
        default_type: str,
    ) -> None:
        self._alone = alone
        self._pairs = pairs
        self.default_type = default_type
        #: (type, key, other key) → ξ: each lookup made once
        self._memo: dict[tuple[str, tuple[str, int], tuple[str, int]], float] = {}

    def __reduce__(self):  # pickled without the memo (sweep workers)
        return (GavelPairs, (self._alone, self._pairs, self.default_type))

    def slowdown(self, key: tuple[str, int], other: tuple[str, int], gpu_type: str) -> float:
        """ξ of a job with ``key`` = (job type, scale factor) next to a job with ``other`` on
        GPUs of ``gpu_type`` (case-insensitive); ``inf``: the pair cannot share there."""
        hit = self._memo.get((gpu_type, key, other))  # as asked: no casefold per lookup
        if hit is None:
            k = (gpu_type.casefold(), key, other)
            alone = self._alone.get((k[0], key), 0.0)
            pair = self._pairs.get(k)
            if alone > 0 and pair is not None and pair[0] > 0 and pair[1] > 0:
                hit = alone / pair[0]
            else:
                hit = math.inf
            self._memo[(gpu_type, key, other)] = hit
        return hit


def gavel_pairs(path: str | Path, gpu_type: str = "v100") -> GavelPairs:
    """The co-location table of Gavel's throughputs file (:class:`GavelPairs`), loaded once per
    file version (cached like the throughputs); ``gpu_type``: its ``default_type``."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise InputError(f"cannot read throughputs file: {e.strerror}", source=str(p)) from None
    return _pairs_table(str(p.resolve()), str(p), st.st_mtime_ns, st.st_size, gpu_type)


@lru_cache(maxsize=8)
def _pairs_table(path: str, source: str, _mtime_ns: int, _size: int, gpu_type: str) -> GavelPairs:
    alone, pairs = _load_pairs(path, source, _mtime_ns, _size)
    return GavelPairs(alone, pairs, gpu_type)


@lru_cache(maxsize=4)
def _load_pairs(path: str, source: str, _mtime_ns: int, _size: int):
    """(alone, pairs) of :class:`GavelPairs` from the file (plain GPU types only); a pair
    value that is not two numbers ≥ 0 is an ``InputError`` naming it."""
    data = _load_throughputs(path, source, _mtime_ns, _size)  # validates keys and "null"s
    raw = load_json(Path(path).read_text(encoding="utf-8"), source)
    alone: dict[tuple[str, tuple[str, int]], float] = {}
    pairs: dict[tuple[str, tuple[str, int], tuple[str, int]], tuple[float, float]] = {}
    for gpu in data:
        if gpu.endswith("_unconsolidated"):
            continue
        t = gpu.casefold()
        for key, value in raw[gpu].items():
            m = _KEY_RE.match(key)
            own = (m.group(1), parse_int(m.group(2)))  # type: ignore[union-attr]
            alone[(t, own)] = float(value["null"])
            for okey, pair in value.items():
                if okey == "null":
                    continue
                om = _KEY_RE.match(okey)
                where = f"{gpu}.{key}.{okey}"
                if om is None:
                    raise InputError(
                        "expected a co-located key \"('<job type>', <scale factor>)\"",
                        source=source,
                        field=where,
                    )
                try:
                    if not isinstance(pair, list) or len(pair) != 2:
                        raise NumberError("expected [steps/s, the other's steps/s]")
                    a, b = (check_float(x) for x in pair)
                    other = (om.group(1), parse_int(om.group(2)))
                except NumberError as e:
                    raise InputError(
                        f"co-located throughputs: {e}", source=source, field=where
                    ) from None
                if a < 0 or b < 0:
                    raise InputError(
                        "co-located throughputs (steps/s) must be ≥ 0", source=source, field=where
                    )
                pairs[(t, own, other)] = (a, b)
    return alone, pairs


@lru_cache(maxsize=4)
def _load_throughputs(
    path: str, source: str, _mtime_ns: int, _size: int
) -> dict[str, dict[str, dict[int, float]]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read throughputs file: {e}", source=source) from None
    data = load_json(text, source)  # NaN/Infinity are named with their line here
    if not isinstance(data, dict):
        raise InputError("expected an object keyed by GPU type", source=source)
    out: dict[str, dict[str, dict[int, float]]] = {}
    for gpu, entries in data.items():
        table: dict[str, dict[int, float]] = {}
        if not isinstance(entries, dict):
            raise InputError("expected an object of job types", source=source, field=gpu)
        for key, value in entries.items():
            m = _KEY_RE.match(key)
            alone = value.get("null") if isinstance(value, dict) else None
            if m is None or alone is None:
                raise InputError(
                    'expected key "(\'<job type>\', <scale factor>)" with a "null" throughput ≥ 0',
                    source=source,
                    field=f"{gpu}.{key}",
                )
            try:
                steps = check_float(alone)
            except NumberError as e:
                raise InputError(
                    f"throughput (steps/s): {e}", source=source, field=f"{gpu}.{key}.null"
                ) from None
            if steps < 0:
                raise InputError(
                    f"throughput (steps/s) must be ≥ 0, got {steps:g}",
                    source=source,
                    field=f"{gpu}.{key}.null",
                )
            try:
                scale = parse_int(m.group(2))
            except NumberError as e:
                raise InputError(
                    f"scale factor: {e}", source=source, field=f"{gpu}.{key}"
                ) from None
            if scale < 1:  # throughputs are extrapolated per GPU from it: 0 GPUs is no data
                raise InputError(
                    f"scale factor (GPUs) must be ≥ 1, got {scale}",
                    source=source,
                    field=f"{gpu}.{key}",
                )
            measured = table.setdefault(m.group(1), {})
            if steps > 0:  # 0: the configuration did not run (counts as not measured)
                measured[scale] = steps
        out[gpu] = table
    return out


def scaled_throughput(
    table: dict[str, dict[int, float]],
    job_type: str,
    gpus: int,
    throughputs: str | Path | None,
    source: str,
    line: int,
) -> float:
    measured = table.get(job_type)
    if measured is not None and not measured:
        raise InputError(
            f"job type {quote(job_type)} has only zero throughputs (not measured) in {throughputs}",
            source=source,
            line=line,
            field="job_type",
        )
    if not measured:
        raise InputError(
            f"job type {quote(job_type)} has no throughput in {throughputs}"
            f"{suggest(job_type, table)}",
            source=source,
            line=line,
            field="job_type",
        )
    if gpus in measured:
        return measured[gpus]
    below = [k for k in measured if k < gpus]
    k = max(below) if below else min(measured)
    return measured[k] * gpus / k


# --------------------------------------------------------------------------------------------
# Tiresias simulator CSV
# --------------------------------------------------------------------------------------------


def is_tiresias_header(header: list[str]) -> bool:
    """Whether a CSV header has the Tiresias simulator's required columns."""
    cols = {c.strip() for c in header}
    return all(c in cols for c in TIRESIAS_REQUIRED)


def read_tiresias(path: Path) -> list[JobSpec]:
    """Jobs of a Tiresias-simulator CSV: ``num_gpu`` GPUs for ``duration`` s arriving at
    ``submit_time`` s; ``iterations`` and ``model_name`` kept where given, ``job_id`` kept as the
    job's name; ``interval`` and other columns ignored."""
    source = str(path)
    header: list[str] | None = None
    jobs: list[JobSpec] = []
    profiles: dict[str, ModelProfile] = {}
    for _start, line, row in csv_rows(read_text(path), source):
        if not any(c.strip() for c in row):
            continue
        if header is None:
            header = [c.strip() for c in row]
            missing = [c for c in TIRESIAS_REQUIRED if c not in header]
            if missing:
                raise InputError(
                    f"not a Tiresias trace: missing column(s) {', '.join(missing)}",
                    source=source,
                    line=line,
                )
            continue
        check_width(row, len(header), source, line)
        rec = dict(zip(header, (c.strip() for c in row), strict=True))
        gpus = parse_count(rec["num_gpu"], source, line, "num_gpu")
        arrival = parse_number(rec["submit_time"], source, line, "submit_time", positive=False)
        duration = parse_number(rec["duration"], source, line, "duration", positive=True)
        _check_time(arrival, source, line, "submit_time")
        _check_time(duration, source, line, "duration", duration=True)
        iterations = 0
        if rec.get("iterations"):
            iterations = parse_count(rec["iterations"], source, line, "iterations")
        model = rec.get("model_name") or PLACEHOLDER_MODEL
        profile = profiles.get(model)
        if profile is None:
            profile = profiles[model] = placeholder_model(model, batch_from_name(model))
        jobs.append(
            JobSpec(
                job_id=len(jobs),
                arrival=arrival,
                num_gpus=gpus,
                iterations=iterations,
                model=profile,
                name=rec.get("job_id", ""),
                duration=duration,
            )
        )
    if not jobs:
        raise InputError("no jobs in the Tiresias trace", source=source)
    return jobs
