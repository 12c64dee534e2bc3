"""The generic job-trace schema (CSV or Parquet): reading with file/line/field errors, and
writing any imported trace to it; see ``docs/formats.md`` ("Job traces")."""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..core.job import JobSpec, ModelProfile
from ..core.results import atomic_write_bytes, atomic_write_text, csv_text
from ..core.timing import time_problem
from ..errors import InputError, quote, suggest
from ..parsing import NumberError, csv_rows, to_float, to_int
from ..perf.models import builtin_model
from .io import read_text
from .pollux import SIA_CATEGORIES, is_pollux_header
from .trace_formats import PLACEHOLDER_MODEL, placeholder_model

#: Every column of the generic schema, in the order :func:`write_generic` writes them.
GENERIC_COLUMNS: tuple[str, ...] = (
    "arrival",
    "num_gpus",
    "duration",
    "iterations",
    "model",
    "application",
    "batch_size",
    "name",
    "user",
    "queue",
    "priority",
    "type_durations",
    "restart_delay",
    "stop_delay",
    "category",
)
#: written only when some job has a value (a per-type table, its own delays, Sia's job
#: category): files without them stay as they were
OPTIONAL_WRITTEN = ("priority", "type_durations", "restart_delay", "stop_delay", "category")
#: Columns every generic trace must have.
GENERIC_REQUIRED: tuple[str, ...] = ("arrival", "num_gpus")
#: First bytes of a Parquet file.
PARQUET_MAGIC = b"PAR1"

_Err = Callable[[str, "str | None"], InputError]


def is_parquet(path: Path) -> bool:
    """Whether ``path`` starts with the Parquet magic bytes."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def is_generic_header(header: list[str]) -> bool:
    """Whether a CSV header has the generic schema's required columns."""
    cols = {c.strip() for c in header}
    return all(c in cols for c in GENERIC_REQUIRED)


def read_generic(path: Path) -> list[JobSpec]:
    """Jobs of a generic trace (Parquet by its magic bytes, else CSV) in file order."""
    if is_parquet(path):
        return _read_parquet(path)
    return _read_csv(path)


def _check_header(header: list[str], err: Callable[[str, str | None], InputError]) -> None:
    seen: set[str] = set()
    for name in header:
        if name not in GENERIC_COLUMNS:
            raise err(
                f"unknown column {quote(name)}{suggest(name, GENERIC_COLUMNS)}; "
                f"valid columns: {', '.join(GENERIC_COLUMNS)}",
                name or None,
            )
        if name in seen:
            raise err(f"duplicate column {quote(name)}", name)
        seen.add(name)
    for name in GENERIC_REQUIRED:
        if name not in seen:
            raise err(f"missing required column {quote(name)}", name)


def _read_csv(path: Path) -> list[JobSpec]:
    source = str(path)
    header: list[str] | None = None
    jobs: list[JobSpec] = []
    cache: dict[tuple[Any, ...], ModelProfile] = {}
    for _start, line, row in csv_rows(read_text(path), source):
        if not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue

        def err(message: str, field: str | None, line: int = line) -> InputError:
            return InputError(message, source=source, line=line, field=field)

        if header is None:
            header = [c.strip() for c in row]
            _check_header(header, err)
            continue
        if len(row) != len(header):
            raise err(f"expected {len(header)} fields (as in the header), got {len(row)}", None)
        jobs.append(_build(dict(zip(header, row, strict=True)), len(jobs), err, cache))
    if header is None:
        raise InputError("file is empty; expected a header row and jobs", source=source)
    if not jobs:
        raise InputError("no jobs: the file has a header but no job rows", source=source)
    return jobs


def _read_parquet(path: Path) -> list[JobSpec]:
    source = str(path)
    pq = _pyarrow_parquet()
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises several types for corrupt files
        raise InputError(f"cannot read Parquet file: {_one_line(e)}", source=source) from None

    def file_err(message: str, field: str | None) -> InputError:
        return InputError(message, source=source, field=field)

    try:  # a corrupt schema may hold a column name that is not UTF-8
        names = list(table.column_names)
    except UnicodeDecodeError as e:
        raise InputError(f"cannot read Parquet file: {_one_line(e)}", source=source) from None
    _check_header(names, file_err)
    try:  # a corrupt file may decode only here (a string column that is not UTF-8)
        columns = table.to_pydict()
    except Exception as e:
        raise InputError(f"cannot read Parquet file: {_one_line(e)}", source=source) from None
    jobs: list[JobSpec] = []
    cache: dict[tuple[Any, ...], ModelProfile] = {}
    for i in range(table.num_rows):

        def err(message: str, field: str | None, row: int = i + 1) -> InputError:
            return InputError(f"row {row}: {message}", source=source, field=field)

        jobs.append(_build({c: columns[c][i] for c in names}, i, err, cache))
    if not jobs:
        raise InputError("no jobs: the Parquet file has no rows", source=source)
    return jobs


def _one_line(e: Exception) -> str:
    """pyarrow's message on one printable line (it spans lines and may quote raw bytes)."""
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, UnicodeDecodeError):
        text = f"a text column is not UTF-8 ({text})"
    if len(text) > 300:
        text = text[:297] + "..."
    return text if text.isprintable() else repr(text)[1:-1]


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a declared dependency
        raise InputError("reading or writing Parquet needs pyarrow (pip install pyarrow)") from None
    return pq


# --------------------------------------------------------------------------------------------
# one row
# --------------------------------------------------------------------------------------------


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def _number(v: Any, field: str, err: _Err) -> float:
    """A finite number: a CSV (or Parquet text) cell parsed strictly, a typed Parquet value
    checked (``ddlsched.parsing``)."""
    try:
        return to_float(v, text=True)
    except NumberError as e:
        raise err(str(e), field) from None


def _whole(v: Any, field: str, err: _Err) -> int:
    try:
        n = to_int(v, text=True)
    except NumberError as e:
        if "too large" in str(e):
            raise err(str(e), field) from None
        n = 0
    if n < 1:
        raise err(f"expected a whole number ≥ 1, got {quote(str(v).strip())}", field)
    return n


def _text(v: Any, field: str, err: _Err) -> str:
    if _missing(v):
        return ""
    if not isinstance(v, str):
        raise err(f"expected text, got {v!r}", field)
    return v.strip()


def _build(
    rec: dict[str, Any], index: int, err: _Err, cache: dict[tuple[Any, ...], ModelProfile]
) -> JobSpec:
    for name in GENERIC_REQUIRED:
        if _missing(rec.get(name)):
            raise err("missing value for required field", name)
    arrival = _number(rec["arrival"], "arrival", err)
    if arrival < 0:
        raise err(f"must be ≥ 0, got {arrival:g}", "arrival")
    if problem := time_problem(arrival):
        raise err(problem, "arrival")
    num_gpus = _whole(rec["num_gpus"], "num_gpus", err)
    duration = 0.0
    if not _missing(rec.get("duration")):
        duration = _number(rec["duration"], "duration", err)
        if duration <= 0:
            raise err(f"must be > 0, got {duration:g}", "duration")
        if problem := time_problem(duration, duration=True):
            raise err(problem, "duration")
    iterations = 0
    if not _missing(rec.get("iterations")):
        iterations = _whole(rec["iterations"], "iterations", err)
    batch = 0
    if not _missing(rec.get("batch_size")):
        batch = _whole(rec["batch_size"], "batch_size", err)
    model = _text(rec.get("model"), "model", err)
    application = _text(rec.get("application"), "application", err)
    name = _text(rec.get("name"), "name", err)
    user = _text(rec.get("user"), "user", err)
    queue = _text(rec.get("queue"), "queue", err)
    raw_priority = rec.get("priority")
    if isinstance(raw_priority, int) and not isinstance(raw_priority, bool):  # Parquet ints
        raw_priority = str(raw_priority)
    priority = _text(raw_priority, "priority", err)
    if not duration and not iterations and not application:
        raise err("a job needs a duration, iterations or an application", "duration")
    per_type = _type_durations(rec.get("type_durations"), err)
    if per_type and not duration:
        raise err("per-type durations need the job's duration too", "type_durations")
    restart_delay = _delay(rec.get("restart_delay"), "restart_delay", err)
    stop_delay = _delay(rec.get("stop_delay"), "stop_delay", err)
    category = _text(rec.get("category"), "category", err)
    if category and category not in SIA_CATEGORIES:
        raise err(
            f"unknown category {quote(category)}{suggest(category, SIA_CATEGORIES)}; expected "
            f"one of {', '.join(SIA_CATEGORIES)} (or empty)",
            "category",
        )
    key = (model, application, batch, bool(duration))
    profile = cache.get(key)
    if profile is None:
        profile = cache[key] = _profile(model, application, batch, bool(duration))
    return JobSpec(
        job_id=index,
        arrival=arrival,
        num_gpus=num_gpus,
        iterations=iterations,
        model=profile,
        application=application,
        batch_size=batch if application else 0,
        name=name,
        duration=duration,
        user=user,
        queue=queue,
        priority=priority,
        type_durations=per_type,
        restart_delay=restart_delay,
        stop_delay=stop_delay,
        category=category,
    )


def _delay(v: Any, field: str, err: _Err) -> float | None:
    """A job's own ``restart_delay`` / ``stop_delay`` cell: seconds ≥ 0; empty: None (the
    run's setting)."""
    if _missing(v):
        return None
    seconds = _number(v, field, err)
    if seconds < 0:
        raise err(f"must be ≥ 0 seconds, got {seconds:g}", field)
    if problem := time_problem(seconds):
        raise err(problem, field)
    return seconds


def _type_durations(v: Any, err: _Err) -> tuple[tuple[str, float], ...]:
    """``type_durations`` cell: ``TYPE=SECONDS`` pairs joined by ``;`` (``inf``: the job
    cannot run on that type), e.g. ``v100=120;k80=410.5``."""
    text = _text(v, "type_durations", err)
    if not text:
        return ()
    out: list[tuple[str, float]] = []
    for part in text.split(";"):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not name:
            raise err(
                f"expected TYPE=SECONDS pairs joined by ';', got {quote(part)}", "type_durations"
            )
        if any(name == n for n, _ in out):
            raise err(f"GPU type {quote(name)} given twice", "type_durations")
        if value.strip().lower() == "inf":
            seconds = math.inf
        else:
            try:
                seconds = to_float(value.strip(), text=True)
            except NumberError as e:
                raise err(f"{name}: {e}", "type_durations") from None
            if not seconds > 0:
                raise err(f"{name}: must be > 0 (or inf), got {value.strip()}", "type_durations")
            if problem := time_problem(seconds, duration=True):
                raise err(f"{name}: {problem}", "type_durations")
        out.append((name, seconds))
    return tuple(out)


def _cell_of(table: tuple[tuple[str, float], ...]) -> str | None:
    """The ``type_durations`` cell of a table (``repr``: reads back to the same floats)."""
    if not table:
        return None
    return ";".join(f"{n}={'inf' if math.isinf(x) else repr(float(x))}" for n, x in table)


def _profile(model: str, application: str, batch: int, has_duration: bool) -> ModelProfile:
    """A built-in model's profile for an iterations job naming one; otherwise a placeholder."""
    base = builtin_model(model) if model and not has_duration and not application else None
    if base is not None:
        return dataclasses.replace(base, batch_size=batch) if batch else base
    return placeholder_model(model or application, batch)


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _rows(jobs: Iterable[JobSpec]) -> list[list[Any]]:
    rows = []
    for j in sorted(jobs, key=lambda j: (j.arrival, j.job_id)):
        model = "" if j.model.name == PLACEHOLDER_MODEL else j.model.name
        batch = j.batch_size or j.model.batch_size
        rows.append(
            [
                float(j.arrival),
                j.num_gpus,
                float(j.duration) if j.duration > 0 else None,
                j.iterations or None,
                model,
                j.application or None,
                batch or None,
                j.name or None,
                j.user or None,
                j.queue or None,
                j.priority or None,
                _cell_of(j.type_durations),
                None if j.restart_delay is None else float(j.restart_delay),
                None if j.stop_delay is None else float(j.stop_delay),
                j.category or None,
            ]
        )
    return rows


def _columns(rows: list[list[Any]]) -> list[str]:
    """The columns to write: every one but the optional ones no row has a value for."""
    return [
        c
        for k, c in enumerate(GENERIC_COLUMNS)
        if c not in OPTIONAL_WRITTEN or any(r[k] is not None for r in rows)
    ]


def write_generic(jobs: Iterable[JobSpec], path: str | Path) -> None:
    """Write jobs in the generic schema, ``(arrival, job_id)`` order, atomically: Parquet for a
    ``.parquet``/``.pq`` path, else CSV. Reads back to the same jobs (ids renumbered 0..n-1)."""
    path = Path(path)
    rows = _rows(jobs)
    if not rows:
        raise InputError("no jobs to write", source=str(path))
    columns = _columns(rows)
    keep = [GENERIC_COLUMNS.index(c) for c in columns]
    rows = [[r[k] for k in keep] for r in rows]
    if path.suffix.lower() in (".parquet", ".pq"):
        _write_parquet(rows, path, columns)
    else:
        text_rows = [["" if v is None else v for v in r] for r in rows]
        atomic_write_text(path, csv_text(columns, text_rows))


def _write_parquet(rows: list[list[Any]], path: Path, columns: list[str]) -> None:
    pq = _pyarrow_parquet()
    import pyarrow as pa

    types = (
        pa.float64(),
        pa.int64(),
        pa.float64(),
        pa.int64(),
        pa.string(),
        pa.string(),
        pa.int64(),
        pa.string(),
        pa.string(),
        pa.string(),
        pa.string(),
        pa.string(),  # priority
        pa.float64(),
        pa.float64(),
        pa.string(),  # category
    )
    types = tuple(types[GENERIC_COLUMNS.index(c)] for c in columns)
    arrays = [pa.array([r[k] for r in rows], type=t) for k, t in enumerate(types)]
    table = pa.Table.from_arrays(arrays, names=columns)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    atomic_write_bytes(path, buf.getvalue())


def line_of_value(workload: str | Path, column: str, value: str) -> int | None:
    """The line of the first job of a generic CSV trace (or a Pollux/Sia workload) whose
    ``column`` holds ``value`` (an absent column holds ""), for errors found after reading (a
    ``queue`` no queue has, an ``application`` without a profile); None when ``workload`` is
    no such file or no row matches."""
    path = Path(workload)
    try:
        if not path.is_file() or is_parquet(path):
            return None
        text = read_text(path)
    except (OSError, InputError):
        return None
    header: list[str] | None = None
    try:
        for _start, line, row in csv_rows(text, str(path)):
            if not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
                continue
            if header is None:
                header = [c.strip() for c in row]
                if not (is_generic_header(header) or is_pollux_header(header)):
                    return None
                continue
            cells = dict(zip(header, row, strict=False))
            if cells.get(column, "").strip() == value:
                return line
    except InputError:
        return None
    return None
