"""Reading, validating and writing workload files (CSV and JSON); see ``docs/formats.md``.

Every problem with user input is reported as one :class:`~ddlsched.errors.InputError` that names
the file, the line and the field.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core.cluster import Cluster
from ..core.job import JobSpec, ModelProfile
from ..core.results import atomic_write_text, csv_text
from ..core.timing import MAX_SIZE_MB, time_problem
from ..errors import InputError, quote, suggest
from ..parsing import NumberError, csv_rows, describe, load_json, to_float, to_int
from ..paths import read_text  # noqa: F401  (trace readers import it from here too)
from ..perf.models import WANG20_MODELS, builtin_model
from .pollux import is_pollux_header, read_pollux_csv

#: Columns every job must give.
REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "arrival", "num_gpus", "iterations", "model")
#: Columns that define (unknown model) or override (built-in model) the model profile.
PROFILE_COLUMNS: tuple[str, ...] = (
    "size_mb",
    "memory_mb",
    "batch_size",
    "t_forward",
    "t_backward",
)
#: All columns, in the order :func:`write_workload_csv` writes them.
ALL_COLUMNS: tuple[str, ...] = REQUIRED_COLUMNS + PROFILE_COLUMNS

_INT_FIELDS = frozenset({"job_id", "num_gpus", "iterations", "batch_size"})


# --------------------------------------------------------------------------------------------
# helpers shared by the CSV and JSON readers
# --------------------------------------------------------------------------------------------


class _Where:
    """Where a record came from: source path, a line lookup per field, a message prefix, and
    whether its values are text to parse (CSV) or typed (JSON: a quoted number is an error)."""

    def __init__(
        self,
        source: str,
        line_of: Callable[[str | None], int | None],
        prefix: str = "",
        text: bool = True,
    ):
        self.source = source
        self.line_of = line_of
        self.prefix = prefix
        self.text = text

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(
            self.prefix + message, source=self.source, line=self.line_of(field), field=field
        )


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _describe(value: Any) -> str:
    """``parsing.describe`` in JSON's words (an object, not a table)."""
    return "an object" if isinstance(value, dict) else describe(value)


def _to_float(value: Any, field: str, where: _Where) -> float:
    try:
        return to_float(value, text=where.text)
    except NumberError as e:
        raise where.error(str(e), field) from None


def _to_int(value: Any, field: str, where: _Where) -> int:
    try:
        return to_int(value, text=where.text)
    except NumberError as e:
        raise where.error(str(e), field) from None


def _build_job(
    record: dict[str, Any], where: _Where, cache: dict[tuple[Any, ...], ModelProfile]
) -> JobSpec:
    """One validated JobSpec from a field -> raw value mapping (str from CSV, JSON scalars).

    ``cache`` shares one ModelProfile between rows with the same model and overrides.
    """
    for name in REQUIRED_COLUMNS:
        if _is_missing(record.get(name)):
            raise where.error("missing value for required field", name)

    job_id = _to_int(record["job_id"], "job_id", where)
    if job_id < 0:
        raise where.error(f"job_id must be >= 0, got {job_id}", "job_id")
    arrival = _to_float(record["arrival"], "arrival", where)
    if arrival < 0:
        raise where.error(f"arrival must be >= 0, got {arrival:g}", "arrival")
    if problem := time_problem(arrival):
        raise where.error(f"arrival {problem}", "arrival")
    num_gpus = _to_int(record["num_gpus"], "num_gpus", where)
    if num_gpus < 1:
        raise where.error(f"num_gpus must be >= 1, got {num_gpus}", "num_gpus")
    iterations = _to_int(record["iterations"], "iterations", where)
    if iterations < 1:
        raise where.error(f"iterations must be >= 1, got {iterations}", "iterations")

    model_raw = record["model"]
    if not isinstance(model_raw, str):
        raise where.error(f"expected a model name, got {_describe(model_raw)}", "model")
    model_name = model_raw.strip()

    overrides: dict[str, float | int] = {}
    for name in PROFILE_COLUMNS:
        raw = record.get(name)
        if _is_missing(raw):
            continue
        if name in _INT_FIELDS:
            value: float | int = _to_int(raw, name, where)
            if value < 1:
                raise where.error(f"{name} must be >= 1, got {value}", name)
        else:
            value = _to_float(raw, name, where)
            if value < 0:
                raise where.error(f"{name} must be >= 0, got {value:g}", name)
            if name == "size_mb" and value > MAX_SIZE_MB:
                raise where.error(f"size_mb must be <= 1e9 (1 PB), got {value:g}", name)
        overrides[name] = value

    key = (model_name, *sorted(overrides.items()))
    profile = cache.get(key)
    if profile is None:
        profile = _make_profile(model_name, overrides, where)
        cache[key] = profile
    return JobSpec(
        job_id=job_id, arrival=arrival, num_gpus=num_gpus, iterations=iterations, model=profile
    )


def _make_profile(
    model_name: str, overrides: dict[str, float | int], where: _Where
) -> ModelProfile:
    base = builtin_model(model_name)
    if base is None:
        missing = [c for c in PROFILE_COLUMNS if c not in overrides]
        if missing:
            builtins = ", ".join(sorted(WANG20_MODELS))
            hint = suggest(model_name.lower(), WANG20_MODELS)
            raise where.error(
                f"model {quote(model_name)} is not built-in{hint}; a custom model needs all of "
                f"{', '.join(PROFILE_COLUMNS)} (missing: {', '.join(missing)}); "
                f"built-in models: {builtins}",
                missing[0],
            )
        profile = ModelProfile(name=model_name, **overrides)  # type: ignore[arg-type]
    elif overrides:
        profile = dataclasses.replace(base, **overrides)  # type: ignore[arg-type]
    else:
        profile = base
    if profile.t_forward + profile.t_backward <= 0:
        raise where.error("t_forward + t_backward must be > 0", "t_forward")
    return profile


def _check_duplicates(jobs: Sequence[JobSpec], wheres: Sequence[_Where]) -> None:
    seen: dict[int, int] = {}
    for i, job in enumerate(jobs):
        if job.job_id in seen:
            first = wheres[seen[job.job_id]].line_of("job_id")
            also = f" (first used on line {first})" if first is not None else ""
            raise wheres[i].error(f"duplicate job_id {job.job_id}{also}", "job_id")
        seen[job.job_id] = i


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------


def _read_csv(text: str, source: str) -> list[JobSpec]:
    header: list[str] | None = None
    header_line = 1
    jobs: list[JobSpec] = []
    wheres: list[_Where] = []
    cache: dict[tuple[Any, ...], ModelProfile] = {}
    for start, _end, row in csv_rows(text, source):
        if not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue  # blank or comment line
        if header is None:
            header, header_line = [c.strip() for c in row], start
            _check_header(header, source, header_line)
            continue
        line = start
        where = _Where(source, lambda _f, line=line: line)
        if len(row) != len(header):
            raise where.error(f"expected {len(header)} fields (as in the header), got {len(row)}")
        jobs.append(_build_job(dict(zip(header, row, strict=True)), where, cache))
        wheres.append(where)
    if header is None:
        raise InputError("file is empty; expected a CSV header row and jobs", source=source)
    if not jobs:
        raise InputError("no jobs: the file has a header but no job rows", source=source)
    _check_duplicates(jobs, wheres)
    return jobs


def _check_header(header: list[str], source: str, line: int) -> None:
    seen: set[str] = set()
    for name in header:
        if name == "":
            raise InputError("empty column name in header", source=source, line=line)
        if name not in ALL_COLUMNS:
            raise InputError(
                f"unknown column {quote(name)}{suggest(name, ALL_COLUMNS)}; "
                f"valid columns: {', '.join(ALL_COLUMNS)}",
                source=source,
                line=line,
                field=name,
            )
        if name in seen:
            raise InputError(
                f"duplicate column {quote(name)}", source=source, line=line, field=name
            )
        seen.add(name)
    for name in REQUIRED_COLUMNS:
        if name not in seen:
            raise InputError(
                f"missing required column '{name}' in header", source=source, line=line, field=name
            )


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def _job_object_spans(text: str, nested: bool) -> list[tuple[int, int]]:
    """(start, end) offsets of the objects that are elements of the jobs array.

    The jobs array is the top-level array (``nested=False``) or the array one level inside the
    top-level object (``nested=True``, ``{"jobs": [...]}``). A cheap bracket scan, no parsing.
    """
    want = ["{", "["] if nested else ["["]
    stack: list[str] = []
    spans: list[tuple[int, int]] = []
    start = -1
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in "[{":
            if ch == "{" and stack == want:
                start = i
            stack.append(ch)
        elif ch in "]}":
            if stack:
                stack.pop()
            if ch == "}" and stack == want and start >= 0:
                spans.append((start, i + 1))
                start = -1
        i += 1
    return spans


def _read_json(text: str, source: str) -> list[JobSpec]:
    if not text.strip():
        raise InputError("file is empty; expected a JSON list of jobs", source=source)
    data = load_json(text, source)
    nested = isinstance(data, dict)
    if nested:
        for key in data:
            if key != "jobs":
                raise InputError(
                    f"unknown top-level key {quote(key)}{suggest(key, ['jobs'])}; "
                    'expected a list of jobs or {"jobs": [...]}',
                    source=source,
                    line=_line_of_key(text, key, 0, len(text)),
                    field=key,
                )
        if "jobs" not in data:
            raise InputError("missing top-level key 'jobs'", source=source, field="jobs")
        items = data["jobs"]
    else:
        items = data
    if not isinstance(items, list):
        raise InputError(
            f"expected a list of jobs, got {_describe(items)}",
            source=source,
            line=1,
            field="jobs" if nested else None,
        )
    if not items:
        raise InputError("no jobs: the list of jobs is empty", source=source)

    spans = _job_object_spans(text, nested)
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(offset: int) -> int:
        return bisect.bisect_left(newlines, offset) + 1

    if len(spans) != len(items) or not all(isinstance(it, dict) for it in items):
        spans = []  # could not match objects to text; report "job N" without a line

    jobs: list[JobSpec] = []
    wheres: list[_Where] = []
    cache: dict[tuple[Any, ...], ModelProfile] = {}
    for k, item in enumerate(items):
        if spans:
            s, e = spans[k]

            def line_of(field: str | None, s: int = s, e: int = e) -> int:
                pos = _line_of_key(text, field, s, e) if field else None
                return pos if pos is not None else line_at(s)

            where = _Where(source, line_of, f"job {k + 1}: ", text=False)
        else:
            where = _Where(source, lambda _f: None, f"job {k + 1}: ", text=False)
        if not isinstance(item, dict):
            raise where.error(f"expected an object, got {_describe(item)}")
        for key in item:
            if key not in ALL_COLUMNS:
                raise where.error(
                    f"unknown field {quote(key)}{suggest(key, ALL_COLUMNS)}; "
                    f"valid fields: {', '.join(ALL_COLUMNS)}",
                    key,
                )
        jobs.append(_build_job(item, where, cache))
        wheres.append(where)
    _check_duplicates(jobs, wheres)
    return jobs


def _line_of_key(text: str, key: str, start: int, end: int) -> int | None:
    """Line of the first ``"key"`` between offsets ``start`` and ``end``, or None."""
    pos = text.find(json.dumps(key), start, end)
    return None if pos < 0 else text.count("\n", 0, pos) + 1


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


def read_workload(path: str | Path) -> list[JobSpec]:
    """Read and validate a workload (CSV or JSON); jobs sorted by ``(arrival, job_id)``.

    The format comes from the extension (``.csv``, ``.json``); other extensions are sniffed from
    the content (a leading ``[`` or ``{`` means JSON). Raises :class:`InputError` on bad input.
    """
    path = Path(path)
    source = str(path)
    text = read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".json" or (suffix != ".csv" and text.lstrip()[:1] in ("[", "{")):
        jobs = _read_json(text, source)
    elif is_pollux_header(text.lstrip().splitlines()[0].split(",") if text.strip() else []):
        jobs = read_pollux_csv(text, source)
    else:
        jobs = _read_csv(text, source)
    return sorted(jobs, key=lambda j: (j.arrival, j.job_id))


def write_workload_csv(jobs: Iterable[JobSpec], path: str | Path) -> None:
    """Write jobs as a workload CSV with every column (round-trips through :func:`read_workload`).

    The file is replaced atomically: written to a temporary file in the same directory first.
    """
    rows = [
        [
            j.job_id,
            j.arrival,
            j.num_gpus,
            j.iterations,
            j.model.name,
            j.model.size_mb,
            j.model.memory_mb,
            j.model.batch_size,
            j.model.t_forward,
            j.model.t_backward,
        ]
        for j in jobs
    ]
    atomic_write_text(path, csv_text(ALL_COLUMNS, rows))


def validate_fits(jobs: Iterable[JobSpec], cluster: Cluster, source: str) -> None:
    """Raise :class:`InputError` for the first job that can never run on ``cluster``.

    A job never runs if it wants more GPUs than the cluster has, or if fewer than ``num_gpus``
    GPUs have at least the model's ``memory_mb`` (each worker needs its own GPU).
    """
    jobs = list(jobs)
    mems = sorted(cluster.gpu_memory(g) for g in range(cluster.num_gpus))
    total = len(mems)
    for job in jobs:
        if job.num_gpus > total:
            raise InputError(
                f"job {job.job_id} needs {job.num_gpus} GPUs but cluster '{cluster.name}' "
                f"has only {total}",
                source=source,
                field="num_gpus",
            )
        fitting = total - bisect.bisect_left(mems, job.memory_mb)
        if fitting == 0:
            raise InputError(
                f"job {job.job_id} (model '{job.model.name}') needs {job.memory_mb:g} MB per GPU "
                f"but the largest GPU in cluster '{cluster.name}' has {mems[-1]:g} MB",
                source=source,
                field="memory_mb",
            )
        if fitting < job.num_gpus:
            raise InputError(
                f"job {job.job_id} needs {job.num_gpus} GPUs with >= {job.memory_mb:g} MB but "
                f"cluster '{cluster.name}' has only {fitting}",
                source=source,
                field="memory_mb",
            )
    validate_types(jobs, cluster, source)


def validate_types(jobs: Iterable[JobSpec], cluster: Cluster, source: str) -> None:
    """On a cluster of several GPU types, every job with a per-type table
    (``JobSpec.type_durations``) must have an entry for each of the cluster's types (a
    missing throughput is an error, not a guess), and some type must run it."""
    types = cluster.gpu_types
    if len(types) < 2 or not cluster.typed:
        return  # one type, or undeclared types: a job runs at its ``duration`` (as before)
    for job in jobs:
        if not job.type_durations:
            continue
        runnable = 0
        for t in types:
            seconds = job.duration_on(t)
            if seconds is None:
                have = ", ".join(name for name, _ in job.type_durations)
                raise InputError(
                    f"job {job.job_id} (model {job.model.name!r}) has no throughput for GPU "
                    f"type {t!r} of cluster '{cluster.name}' (its table has: {have})",
                    source=source,
                    field="gpu_type",
                )
            if seconds < float("inf"):
                runnable += 1
        if not runnable:
            raise InputError(
                f"job {job.job_id} (model {job.model.name!r}, {job.num_gpus} GPUs) cannot run "
                f"on any GPU type of cluster '{cluster.name}' (no throughput on any)",
                source=source,
                field="gpu_type",
            )
