"""User-facing errors: one clear line that names the file, line and field."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class InputError(Exception):
    """Invalid user input (trace, cluster file, config, CLI value).

    The CLI prints ``str(err)`` on one line and exits with status 2; no traceback.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self.format())

    def format(self) -> str:
        where = []
        if self.source:
            source = str(self.source)
            where.append(source if source.isprintable() else quote(source))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field {quote(str(self.field))}")
        prefix = ", ".join(where)
        return one_line(f"{prefix}: {self.message}" if prefix else str(self.message))


def suggest(name: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest valid name, or ``""``."""
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


#: characters that ``str.splitlines`` breaks a line at
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_ESCAPE_BREAKS = str.maketrans(
    {c: c.encode("unicode_escape").decode("ascii") for c in _LINE_BREAKS}
)


def one_line(text: str) -> str:
    """``text`` with every line break escaped (``\\n``, ``\\u2028`` …): a backstop so that a
    user-given name embedded raw in a message cannot split the CLI's one error line."""
    return text.translate(_ESCAPE_BREAKS)


def quote(text: str) -> str:
    """``'text'`` for messages; escapes newlines and other control characters."""
    return f"'{text}'" if text.isprintable() else repr(text)


class JobFieldError(InputError):
    """A job's field (``field``: a ``queue`` or ``priority`` the queues do not know, an
    ``application`` without a profile) whose ``value`` the run cannot use, found after the
    workload was read; the run's caller adds the workload file and line
    (``api.naming_workload``)."""

    def __init__(self, message: str, field: str, value: str, job_id: int) -> None:
        super().__init__(message, field=field)
        self.value = value
        self.job_id = job_id

    def __reduce__(self) -> tuple:
        return (JobFieldError, (self.message, self.field, self.value, self.job_id))


class ScheduleError(InputError):
    """A schedule the engine rejects (``Simulator.start``/``preempt``): names the job and the
    rule it breaks (GPU busy, duplicate, out of range, wrong count, job not queued …)."""


class PolicyError(InputError):
    """A user policy (``FILE.py:FACTORY``, ``MODULE:FACTORY``, a registered name) failed: its
    file did not load, its factory or one of its hooks raised. The cause is chained."""
