"""The Philly job-summary trace (``timestamp,duration,num_gpus,gpu_time,cluster``, as in the Pollux
artifact's ``traces/philly.csv``): one parser, shared by the ``luo24`` generator and the trace
importer."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..parsing import MAX_INT, NumberError, csv_rows, parse_float

_EPOCH = datetime(1970, 1, 1)
#: Characters of plain ASCII numbers (the fast path's pre-check; the row loop names the cell)
_PLAIN_NUMBERS = re.compile(r"[0-9eE+\-. \t]*")
_MICROSECOND = timedelta(microseconds=1)

#: Columns a Philly job-summary trace must have (``cluster``, the virtual cluster, is optional).
PHILLY_COLUMNS: tuple[str, ...] = ("timestamp", "duration", "num_gpus", "gpu_time")


@dataclass(frozen=True)
class PhillyTrace:
    """The trace's columns in file order (read-only arrays; ``submit`` in seconds since
    1970-01-01 on the timestamps' own wall clock, time zones ignored; ``line`` the file line of
    each row)."""

    submit: np.ndarray
    duration: np.ndarray
    num_gpus: np.ndarray
    gpu_time: np.ndarray
    cluster: tuple[str, ...]
    line: np.ndarray

    @property
    def time_of_day(self) -> np.ndarray:
        """Submission second of the day (0–86399), whole seconds."""
        return np.floor(self.submit).astype(np.int64) % 86400


def is_philly_header(header: list[str]) -> bool:
    """Whether a CSV header names the Philly job-summary columns."""
    cols = {c.strip() for c in header}
    return all(c in cols for c in PHILLY_COLUMNS)


def read_philly(path: str | Path) -> PhillyTrace:
    """Parse a Philly job-summary trace (cached per file version); one ``InputError`` naming
    file, line and field for the first bad value."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError as e:
        raise InputError(f"cannot read Philly trace: {e.strerror}", source=str(path)) from None
    if not path.is_file():
        raise InputError("is a directory, expected a file", source=str(path))
    return _read_cached(str(path.resolve()), str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4)
def _read_cached(path: str, source: str, _mtime_ns: int, _size: int) -> PhillyTrace:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read Philly trace: {e}", source=source) from None
    records = csv_rows(text, source)
    header = next(records, None)
    cols = [c.strip() for c in header[2]] if header else []
    missing = [c for c in PHILLY_COLUMNS if c not in cols]
    if missing:
        raise InputError(
            f"not a Philly trace: missing column(s) {', '.join(missing)}", source=source, line=1
        )
    idx = [cols.index(c) for c in PHILLY_COLUMNS]
    idx.append(cols.index("cluster") if "cluster" in cols else -1)
    rows: list[list[str]] = []
    lines: list[int] = []
    for _start, line, row in records:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(cols):
            raise InputError(
                f"expected {len(cols)} fields, got {len(row)}", source=source, line=line
            )
        rows.append(row)
        lines.append(line)
    if not rows:
        raise InputError("no jobs in the Philly trace", source=source)
    columns = _parse_fast(rows, idx)
    if columns is None:  # some value is bad (or unusual): the row loop finds and names it
        columns = _parse_rows(rows, lines, idx, source)
    arrays = (*columns, np.array(lines, dtype=np.int64))
    for a in arrays:
        a.setflags(write=False)
    return PhillyTrace(
        submit=arrays[0],
        duration=arrays[1],
        num_gpus=arrays[2],
        gpu_time=arrays[3],
        cluster=tuple(r[idx[4]].strip() if idx[4] >= 0 else "" for r in rows),
        line=arrays[4],
    )


_Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _parse_fast(rows: list[list[str]], idx: list[int]) -> _Columns | None:
    """Vectorised parse (numpy) of well-formed naive timestamps and valid numbers; None if any
    value would fail or needs the row loop (time zones; numbers numpy takes but the strict
    grammar of ``ddlsched.parsing`` does not, such as ``1_000`` or non-ASCII digits)."""
    for i in idx[1:4]:
        if not _PLAIN_NUMBERS.fullmatch("".join(r[i] for r in rows)):
            return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns on (and converts) time zones
            stamps = np.array([r[idx[0]].strip() for r in rows], dtype="datetime64[us]")
            numbers = [np.array([r[i] for r in rows], dtype=float) for i in idx[1:4]]
    except (ValueError, TypeError, Warning):
        return None
    if np.isnat(stamps).any():
        return None
    dur, gpus, gtime = numbers
    if not all(np.isfinite(a).all() and (a >= 0).all() for a in numbers):
        return None
    if not ((gpus >= 1) & (gpus == np.floor(gpus)) & (gpus <= MAX_INT // 2)).all():
        return None  # the row loop names a count beyond 64 bits
    submit = stamps.astype(np.int64) / 1e6
    return submit, dur, gpus.astype(np.int64), gtime


def _parse_rows(rows: list[list[str]], lines: list[int], idx: list[int], source: str) -> _Columns:
    """Row-by-row parse: the first bad value is reported with its line and field."""
    submit: list[float] = []
    dur: list[float] = []
    gpus: list[int] = []
    gtime: list[float] = []
    for row, line in zip(rows, lines, strict=True):
        ts = row[idx[0]].strip()
        try:
            t = datetime.fromisoformat(ts).replace(tzinfo=None)  # the wall clock as written
        except ValueError:
            raise InputError(
                f"expected a date-time, got '{ts}'", source=source, line=line, field="timestamp"
            ) from None
        d = _number(row[idx[1]], source, line, "duration")
        g = _number(row[idx[2]], source, line, "num_gpus")
        if not g.is_integer() or g < 1:
            raise InputError(
                f"expected a whole number ≥ 1, got '{row[idx[2]].strip()}'",
                source=source,
                line=line,
                field="num_gpus",
            )
        if g > MAX_INT:
            raise InputError(
                f"integer {row[idx[2]].strip()} is too large (the limit is 2^63 - 1)",
                source=source,
                line=line,
                field="num_gpus",
            )
        submit.append((t - _EPOCH) // _MICROSECOND / 1e6)
        dur.append(d)
        gpus.append(int(g))
        gtime.append(_number(row[idx[3]], source, line, "gpu_time"))
    return np.array(submit), np.array(dur), np.array(gpus, dtype=np.int64), np.array(gtime)


def _number(raw: str, source: str, line: int, field: str) -> float:
    try:
        v = parse_float(raw)
    except NumberError as e:
        raise InputError(str(e), source=source, line=line, field=field) from None
    if v < 0:
        raise InputError("must be a finite number ≥ 0", source=source, line=line, field=field)
    return v
