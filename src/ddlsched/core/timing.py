"""The time range the engine represents exactly, and the check that every job lies inside it.

The engine keeps times as floats rounded to :data:`RESOLUTION` (1 ns, ``TIME_DIGITS`` in
``core/simulator.py``). A float's spacing grows with its size: at 1e9 s (about 31.7 years) it is
1.2e-7 s, at 1e16 s it is 2 s, so an arrival of 1e16 would silently turn a 12.48 s job into a
12 s one. Times therefore stay within ``[0, MAX_TIME]``, where every time is exact to better
than 0.12 µs, and durations are at least :data:`MIN_DURATION` (1 µs = 1,000 × the resolution),
so rounding never turns one into 0. Values outside are input errors naming the limit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Protocol

from ..errors import InputError
from .job import JobSpec

#: The engine's time resolution in seconds (``10 ** -TIME_DIGITS`` of ``core/simulator.py``).
RESOLUTION = 1e-9
#: Latest time (arrival, arrival + duration, setting in seconds) the engine accepts: 1e9 s.
MAX_TIME = 1e9
#: Shortest positive duration or per-iteration compute time accepted: 1 µs.
MIN_DURATION = 1e-6
#: Largest model (gradient) size accepted, in MB: 1e9 MB = 1 PB keeps every all-reduce time
#: a finite float for any contention setting within its bounds (``api.Settings.check``).
MAX_SIZE_MB = 1e9
#: Largest per-byte all-reduce cost (``b``, ``eta``): 1 s per byte.
MAX_PER_BYTE = 1.0

_RANGE = "the engine's time range [0, 1e9] s (about 31.7 years; docs/models.md)"


def time_problem(value: float, *, duration: bool = False) -> str | None:
    """Why a time read from a file (an arrival, or a duration if ``duration``) lies outside
    what the engine represents, or None; readers raise it with their file, line and field."""
    if duration:
        if not (math.isfinite(value) and MIN_DURATION <= value <= MAX_TIME):
            return (
                f"duration {value:g} s is outside [1e-6, 1e9] s (durations of at least 1 µs "
                f"within {_RANGE})"
            )
    elif not (math.isfinite(value) and 0 <= value <= MAX_TIME):
        return f"{value:g} s is outside {_RANGE}"
    return None


def check_job_times(jobs: Iterable[JobSpec], source: str | None = None, note: str = "") -> None:
    """``InputError`` for the first job whose times the engine cannot represent: an arrival
    outside ``[0, MAX_TIME]``, a duration or per-iteration compute time below
    ``MIN_DURATION``, or an arrival plus its own least run time (its duration, or iterations ×
    compute time) beyond ``MAX_TIME``. ``note`` (e.g. "after --load-scale") ends the message."""
    tail = f" {note}" if note else ""
    for j in jobs:
        who = f"job {j.job_id}{f' {j.name!r}' if j.name else ''}"
        if not (math.isfinite(j.arrival) and 0 <= j.arrival <= MAX_TIME):
            raise InputError(
                f"{who}: arrival {j.arrival:g} s is outside {_RANGE}{tail}",
                source=source,
                field="arrival",
            )
        if j.duration:
            if not (math.isfinite(j.duration) and MIN_DURATION <= j.duration <= MAX_TIME):
                raise InputError(
                    f"{who}: duration {j.duration:g} s is outside [1e-6, 1e9] s (durations of "
                    f"at least 1 µs within {_RANGE}){tail}",
                    source=source,
                    field="duration",
                )
            end, what = j.arrival + j.duration, "arrival + duration"
        else:
            step = j.model.t_compute
            if j.iterations and step and not (math.isfinite(step) and step >= MIN_DURATION):
                raise InputError(
                    f"{who}: compute time per iteration {step:g} s (t_forward + t_backward) is "
                    f"below 1e-6 s (1 µs; the engine rounds times to 1 ns){tail}",
                    source=source,
                    field="t_forward",
                )
            end, what = j.arrival + j.iterations * step, "arrival + iterations × compute time"
        for name in ("restart_delay", "stop_delay"):
            own = getattr(j, name)
            if own is not None and not (math.isfinite(own) and 0 <= own <= MAX_TIME):
                raise InputError(
                    f"{who}: {name} {own:g} s is outside {_RANGE}{tail}",
                    source=source,
                    field=name,
                )
        if not end <= MAX_TIME:
            raise InputError(
                f"{who}: {what} is {end:g} s, beyond {_RANGE}{tail}",
                source=source,
                field="duration" if j.duration else "iterations",
            )


class _Finished(Protocol):
    job_id: int
    finish: float


def check_run_end(records: Iterable[_Finished]) -> None:
    """``InputError`` when a run ended beyond :data:`MAX_TIME` (queueing or slow settings
    pushed a finish there, where times are no longer exact): its results would be silently
    rounded, so none are returned."""
    late = next((r for r in records if not r.finish <= MAX_TIME), None)  # NaN included
    if late is not None:
        raise InputError(
            f"job {late.job_id} finishes at {late.finish:g} s, beyond {_RANGE}; lower the "
            "load or the settings that lengthen jobs"
        )
