"""Live job files: the real commands ``ddlsched live`` schedules, with their GPU counts and
arrivals, read from TOML (``[[jobs]]`` tables) or CSV (docs/formats.md, "Live job files").

Every problem is one :class:`~ddlsched.errors.InputError` naming the file, the line and the
field, raised before anything is started.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.timing import time_problem
from ..errors import InputError, quote, suggest
from ..parsing import (
    NumberError,
    csv_rows,
    describe,
    load_toml,
    to_float,
    to_int,
)
from ..paths import read_text

__all__ = [
    "FIELDS",
    "MAX_RESTARTS",
    "MODEL_FIELDS",
    "REQUIRED_FIELDS",
    "LiveJob",
    "check_commands",
    "jobs_from_records",
    "read_live_jobs",
]


@dataclass(frozen=True)
class LiveJob:
    """One job of a live run: a command started on ``gpus`` GPUs ``arrival`` seconds after
    the run began, restarted from its checkpoint after a preemption or (up to
    ``max_restarts`` times) after a failure."""

    job_id: int
    arrival: float
    gpus: int
    command: tuple[str, ...]
    #: an application profile (a model name) for the policies that need estimates
    app: str | None = None
    max_restarts: int = 3
    #: where the job keeps its checkpoints; None: the scheduler picks one under the run dir
    checkpoint_dir: str | None = None
    #: an estimate of the job's run time in seconds for SJF-like policies when it has no app
    duration: float | None = None
    #: the job's total batch size (elastic policies start from it)
    batch_size: int | None = None
    #: a name to show (``ddlsched status``, the status page); jobs are still known by id
    name: str | None = None
    #: the LocalQueue (or ClusterQueue) of a run with queues (``serve --queues``); "": none
    queue: str = ""
    #: its priority there: an integer or a WorkloadPriorityClass's name, as text; "": 0
    priority: str = ""
    #: a model job (Yu's and Wang's models; the offline planners, e.g. sjf-bco, plan with
    #: them): iterations, the gradient MB each all-reduce exchanges, compute seconds per
    #: iteration (forward, backward); None: not a model job
    iterations: int | None = None
    size_mb: float | None = None
    t_forward: float | None = None
    t_backward: float | None = None
    #: the line of the job file the job was read from (for messages); not part of its identity
    line: int | None = dataclasses.field(default=None, compare=False, repr=False)


#: The most restarts after failures a job may ask for (each failed attempt waits longer,
#: ``live.executor.restart_backoff``): a job that always fails ends within hours, not never.
MAX_RESTARTS = 100
#: Fields every job must give (``job_id`` defaults to the job's position in the file, from 0).
REQUIRED_FIELDS: tuple[str, ...] = ("arrival", "gpus", "command")
#: Every field of a job, in the order of the CSV columns.
FIELDS: tuple[str, ...] = (
    "job_id",
    "arrival",
    "gpus",
    "command",
    "app",
    "max_restarts",
    "checkpoint_dir",
    "duration",
    "batch_size",
    "name",
    "queue",
    "priority",
    "iterations",
    "size_mb",
    "t_forward",
    "t_backward",
)
#: the fields of a model job: the first three are needed together, ``t_backward`` is optional
MODEL_FIELDS: tuple[str, ...] = ("iterations", "size_mb", "t_forward", "t_backward")
#: the longest job name, queue name or priority text (a Kubernetes name is at most 253)
MAX_NAME = 253


class _Where:
    """Where one job came from: the file, its index, a line per field, and whether its values
    are text to parse (CSV) or typed (TOML, where a quoted number is an error)."""

    def __init__(
        self,
        source: str,
        index: int,
        line_of: Callable[[str | None], int | None],
        text: bool,
    ) -> None:
        self.source = source
        self.index = index
        self.line_of = line_of
        self.text = text

    def field(self, name: str) -> str:
        return name if self.text else f"jobs[{self.index}].{name}"

    def error(self, message: str, name: str | None = None) -> InputError:
        return InputError(
            message,
            source=self.source,
            line=self.line_of(name),
            field=self.field(name) if name else None,
        )


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _int(record: dict[str, Any], name: str, where: _Where, least: int) -> int:
    try:
        value = to_int(record[name], text=where.text)
    except NumberError as e:
        raise where.error(str(e), name) from None
    if value < least:
        raise where.error(f"{name} must be >= {least}, got {value}", name)
    return value


def _float(record: dict[str, Any], name: str, where: _Where, *, duration: bool) -> float:
    try:
        value = to_float(record[name], text=where.text)
    except NumberError as e:
        raise where.error(str(e), name) from None
    if duration and value <= 0:
        raise where.error(f"{name} must be > 0 seconds, got {value:g}", name)
    if not duration and value < 0:
        raise where.error(f"{name} must be >= 0 seconds, got {value:g}", name)
    if problem := time_problem(value, duration=duration):
        raise where.error(f"{name} {problem}" if not duration else problem, name)
    return value


def _text(record: dict[str, Any], name: str, where: _Where) -> str:
    value = record[name]
    if not isinstance(value, str):
        raise where.error(f"expected text, got {describe(value)}", name)
    if not value.strip():
        raise where.error("is empty", name)
    if "\x00" in value:
        raise where.error("contains a NUL character", name)
    return value.strip() if name == "app" else value


def _command(value: Any, where: _Where) -> tuple[str, ...]:
    """The argument vector: CSV gives one shell-quoted string, TOML a list of strings."""
    if where.text:
        try:
            argv = shlex.split(value)
        except ValueError as e:
            raise where.error(f"cannot split the command like a shell: {e}", "command") from None
    else:
        if isinstance(value, str) and not value.strip():
            raise where.error("the command is empty", "command")
        if isinstance(value, str):
            raise where.error(
                'expected a list of strings such as ["python3", "train.py"], got text '
                f"{quote(value)}",
                "command",
            )
        if not isinstance(value, list):
            raise where.error(f"expected a list of strings, got {describe(value)}", "command")
        for i, arg in enumerate(value):
            if not isinstance(arg, str):
                raise where.error(
                    f"argument {i} is {describe(arg)}; every argument must be text", "command"
                )
        argv = list(value)
    if not argv:
        raise where.error("the command is empty", "command")
    if not argv[0].strip():
        raise where.error("the program name (first argument) is empty", "command")
    if any("\x00" in arg for arg in argv):
        raise where.error("contains a NUL character", "command")
    for i, arg in enumerate(argv):
        if not _utf8(arg):
            raise where.error(f"argument {i} is not valid text (a lone surrogate)", "command")
    return tuple(argv)


def _utf8(text: str) -> bool:
    """Whether ``text`` can be passed to a program (UTF-8 encodable: no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _checkpoint_dir(value: str, where: _Where) -> str:
    """A checkpoint directory a job may ask for: text without NUL, and a path whose existing
    part is directories (a file on the way, as ``/etc/passwd/x``, can never be created)."""
    if "\x00" in value or not _utf8(value):
        raise where.error("contains a NUL character or a lone surrogate", "checkpoint_dir")
    if not value.strip():
        raise where.error("is empty", "checkpoint_dir")
    path = Path(value)
    for part in (path, *path.parents):
        try:
            if part.exists():
                if not part.is_dir():
                    raise where.error(
                        f"{quote(str(part))} exists and is not a directory", "checkpoint_dir"
                    )
                break
        except OSError as e:  # too long, a loop …
            raise where.error(f"not a usable path: {e.strerror}", "checkpoint_dir") from None
    return value


def _build(record: dict[str, Any], where: _Where) -> LiveJob:
    """One validated job from a field -> raw value mapping (text from CSV, typed from TOML)."""
    for name in REQUIRED_FIELDS:
        if name not in record or (where.text and _missing(record[name])):
            if name == "command" and name in record:
                raise where.error("the command is empty", name)
            raise where.error(f"missing {name}", name)
    # an empty CSV cell leaves an optional field out; in TOML a key given is a value to check
    present = {k: v for k, v in record.items() if not (where.text and _missing(v))}
    job_id = _int(present, "job_id", where, 0) if "job_id" in present else where.index
    fields: dict[str, Any] = {
        "job_id": job_id,
        "arrival": _float(present, "arrival", where, duration=False),
        "gpus": _int(present, "gpus", where, 1),
        "command": _command(record["command"], where),
        "line": where.line_of(None),
    }
    if "app" in present:
        fields["app"] = _text(present, "app", where)
    if "max_restarts" in present:
        fields["max_restarts"] = _int(present, "max_restarts", where, 0)
        if fields["max_restarts"] > MAX_RESTARTS:
            raise where.error(
                f"must be at most {MAX_RESTARTS}, got {fields['max_restarts']}", "max_restarts"
            )
    if "checkpoint_dir" in present:
        fields["checkpoint_dir"] = _checkpoint_dir(_text(present, "checkpoint_dir", where), where)
    if "duration" in present:
        fields["duration"] = _float(present, "duration", where, duration=True)
    if "batch_size" in present:
        fields["batch_size"] = _int(present, "batch_size", where, 1)
    for name in ("name", "queue", "priority"):
        if name in present:
            fields[name] = _label(present, name, where)
    if any(name in present for name in MODEL_FIELDS):
        fields.update(_model_fields(present, where))
    return LiveJob(**fields)


def _model_fields(present: dict[str, Any], where: _Where) -> dict[str, Any]:
    """A model job's iterations, size_mb, t_forward (all three) and t_backward (optional)."""
    for name in MODEL_FIELDS[:3]:
        if name not in present:
            raise where.error(
                f"missing {name}: a model job gives iterations, size_mb and t_forward "
                "(t_backward is optional)",
                name,
            )
    if "app" in present:
        raise where.error(
            "a job has an application profile (app) or a model (iterations, size_mb, "
            "t_forward), not both",
            "app",
        )
    out: dict[str, Any] = {"iterations": _int(present, "iterations", where, 1)}
    for name, unit in (("size_mb", "MB"), ("t_forward", "seconds"), ("t_backward", "seconds")):
        if name not in present:
            continue
        try:
            value = to_float(present[name], text=where.text)
        except NumberError as e:
            raise where.error(str(e), name) from None
        if value < 0:
            raise where.error(f"{name} must be >= 0 {unit}, got {value:g}", name)
        out[name] = value
    if out["t_forward"] + out.get("t_backward", 0.0) <= 0:
        raise where.error("t_forward + t_backward must be > 0 seconds per iteration", "t_forward")
    return out


def _label(record: dict[str, Any], name: str, where: _Where) -> str:
    """A job's ``name``, ``queue`` or ``priority`` (an integer is taken as its text): one line
    of printable text, at most :data:`MAX_NAME` characters, surrounding spaces removed."""
    value = record[name]
    if name == "priority" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    value = _text(record | {name: value}, name, where).strip()
    if len(value) > MAX_NAME:
        raise where.error(f"is longer than {MAX_NAME} characters", name)
    if not value.isprintable() or not _utf8(value):
        raise where.error("contains a control character or a lone surrogate", name)
    return value


def _finish(jobs: list[LiveJob], wheres: list[_Where]) -> list[LiveJob]:
    """Refuse duplicate ids; the jobs sorted by (arrival, job_id)."""
    first: dict[int, _Where] = {}
    for job, where in zip(jobs, wheres, strict=True):
        if job.job_id in first:
            other = first[job.job_id]
            line = other.line_of(None)
            was = f"line {line}" if line is not None else f"jobs[{other.index}]"
            raise where.error(f"duplicate job_id {job.job_id} (also at {was})", "job_id")
        first[job.job_id] = where
    return sorted(jobs, key=lambda j: (j.arrival, j.job_id))


def _unknown(name: str, what: str) -> str:
    return f"unknown {what} {quote(name)}{suggest(name, FIELDS)}; valid: {', '.join(FIELDS)}"


# ---------------------------------------------------------------------------------- CSV
def _read_csv(text: str, source: str) -> list[LiveJob]:
    header: list[str] | None = None
    jobs: list[LiveJob] = []
    wheres: list[_Where] = []
    for start, _end, row in csv_rows(text, source):
        if not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue  # blank or comment line
        if header is None:
            header = [c.strip() for c in row]
            _check_header(header, source, start)
            continue
        where = _Where(source, len(jobs), lambda _f, line=start: line, text=True)
        if len(row) != len(header):
            raise where.error(f"expected {len(header)} fields (as in the header), got {len(row)}")
        jobs.append(_build(dict(zip(header, row, strict=True)), where))
        wheres.append(where)
    if header is None:
        raise InputError("file is empty; expected a CSV header row and jobs", source=source)
    if not jobs:
        raise InputError("no jobs: the file has a header but no job rows", source=source)
    return _finish(jobs, wheres)


def _check_header(header: list[str], source: str, line: int) -> None:
    seen: set[str] = set()
    for name in header:
        if name == "":
            raise InputError("empty column name in header", source=source, line=line)
        if name not in FIELDS:
            raise InputError(_unknown(name, "column"), source=source, line=line, field=name)
        if name in seen:
            raise InputError(
                f"duplicate column {quote(name)}", source=source, line=line, field=name
            )
        seen.add(name)
    for name in REQUIRED_FIELDS:
        if name not in seen:
            raise InputError(
                f"missing required column {quote(name)} in header",
                source=source,
                line=line,
                field=name,
            )


# ---------------------------------------------------------------------------------- TOML
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?")


def _toml_lines(text: str) -> list[tuple[int, dict[str, int]]]:
    """Per ``[[jobs]]`` table, in order: (its header's line, key -> line of the key inside it).
    Best effort (inline tables are not found): messages then give the field alone."""
    tables: list[tuple[int, dict[str, int]]] = []
    current: dict[str, int] | None = None
    key_re = re.compile(r"^\s*[\"']?([A-Za-z0-9_-]+)[\"']?\s*=")
    for i, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            current = None
            if line.lstrip().startswith("[[") and m.group(1) == "jobs":
                current = {}
                tables.append((i, current))
            continue
        k = key_re.match(line)
        if k and current is not None:
            current.setdefault(k.group(1), i)
    return tables


def _read_toml(text: str, source: str) -> list[LiveJob]:
    data = load_toml(text, source)
    for key in data:
        if key != "jobs":
            raise InputError(
                f"unknown top-level key {quote(key)}{suggest(key, ['jobs'])}; a live job file "
                "has only [[jobs]] tables",
                source=source,
                field=key,
            )
    entries = data.get("jobs")
    if entries is None:
        raise InputError("no jobs: expected one [[jobs]] table per job", source=source)
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(
            "'jobs' must be a list of tables (one [[jobs]] table per job)",
            source=source,
            field="jobs",
        )
    if not entries:
        raise InputError("no jobs: expected one [[jobs]] table per job", source=source)
    return _typed_jobs(entries, source, _toml_lines(text))


def _typed_jobs(
    entries: list[dict[str, Any]], source: str, lines: list[tuple[int, dict[str, int]]]
) -> list[LiveJob]:
    """Jobs from typed records (TOML tables, JSON objects): a quoted number is an error."""
    jobs: list[LiveJob] = []
    wheres: list[_Where] = []
    for index, entry in enumerate(entries):
        table_line, key_lines = lines[index] if index < len(lines) else (None, {})

        def line_of(name: str | None, t=table_line, k=key_lines) -> int | None:
            return k.get(name, t) if name else t

        where = _Where(source, index, line_of, text=False)
        for key in entry:
            if key not in FIELDS:
                raise InputError(
                    _unknown(key, "key"),
                    source=source,
                    line=line_of(key),
                    field=where.field(key),
                )
        jobs.append(_build(entry, where))
        wheres.append(where)
    return _finish(jobs, wheres)


# ---------------------------------------------------------------------------------- public
def jobs_from_records(records: Any, source: str) -> list[LiveJob]:
    """Validate jobs given as JSON-like records (the service's ``POST /jobs``): a list of
    objects with the fields of a job file's ``[[jobs]]`` tables, checked as a TOML file's are;
    errors name ``source`` and the field (``jobs[2].gpus``). Ids default to the position."""
    if isinstance(records, dict):
        records = [records]
    if not isinstance(records, list) or not all(isinstance(e, dict) for e in records):
        raise InputError("expected a job object or a list of job objects", source=source)
    if not records:
        raise InputError("no jobs: expected at least one job object", source=source)
    # a submitted job arrives when it is submitted unless it says how many seconds later
    return _typed_jobs([{"arrival": 0, **r} for r in records], source, [])


def read_live_jobs(path: str | os.PathLike[str]) -> list[LiveJob]:
    """Read and validate a live job file (``.toml`` or ``.csv``); the jobs sorted by
    (arrival, job_id). Raises :class:`InputError` naming the file, line and field."""
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".csv"):
        raise InputError(
            f"unknown live job file type {quote(path.suffix)}; expected .toml or .csv",
            source=source,
        )
    text = read_text(path)
    if not text.strip():
        raise InputError("file is empty; expected jobs", source=source)
    return _read_toml(text, source) if suffix == ".toml" else _read_csv(text, source)


def _program_problem(program: str, cwd: str | None) -> str | None:
    """Why ``program`` (a command's first argument) cannot be started, or None."""
    if os.sep in program or (os.altsep and os.altsep in program):
        full = program if cwd is None else os.path.join(cwd, program)
        if not os.path.exists(full):
            return f"program {quote(program)} does not exist"
        if os.path.isdir(full):
            return f"program {quote(program)} is a directory"
        if not os.access(full, os.X_OK):
            return f"program {quote(program)} is not executable (chmod +x, or run it with python3)"
        return None
    if shutil.which(program) is None:
        return f"program {quote(program)} not found on PATH"
    return None


def _script_problem(argv: Sequence[str], cwd: str | None) -> str | None:
    """For ``python… script.py``: why the script cannot be run (the commonest typo)."""
    if len(argv) < 2 or not os.path.basename(argv[0]).startswith("python"):
        return None
    script = argv[1]
    if script.startswith("-") or not script.endswith(".py"):
        return None
    full = script if cwd is None else os.path.join(cwd, script)
    if not os.path.isfile(full):
        return f"script {quote(script)} does not exist"
    return None


def check_commands(
    jobs: Sequence[LiveJob], source: str | None = None, cwd: str | None = None
) -> None:
    """:class:`InputError` for the first job whose program cannot be found: a name not on
    ``PATH``, a path that does not exist or is not executable, or the ``.py`` script of a
    ``python3 script.py`` command that does not exist. Relative paths are taken from ``cwd``
    (default: the current directory, where the scheduler starts the jobs)."""
    for job in jobs:
        problem = _program_problem(job.command[0], cwd) or _script_problem(job.command, cwd)
        if problem is not None:
            raise InputError(
                f"job {job.job_id}: {problem}", source=source, line=job.line, field="command"
            )
