"""Progress on stderr: a bar redrawn in place on a terminal; elsewhere (a log, CI) one plain
line every ``LOG_EVERY`` seconds once the work has run that long, so that long work shows it
is alive and short work stays silent."""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: seconds between two progress lines when stderr is not a terminal
LOG_EVERY = 10.0


class ProgressBar:
    """``bar(done, total)``: on a TTY redraws one line; otherwise logs a line per
    ``log_every`` seconds (and the last one, if any was logged); ``enabled=False``: silent."""

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        log_every: float = LOG_EVERY,
    ) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        tty = self.stream.isatty()
        self.enabled = True if enabled is None else enabled
        #: a bar (terminal, or asked for with ``enabled=True``) or log lines (``None`` off a TTY)
        self.bar = tty or enabled is True
        self.log_every = log_every
        self._last = 0.0
        self._t0 = time.monotonic()
        self._logged = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not self.bar:
            self._log(done, total, now)
            return
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / max(total, 1))
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} {now - self._t0:5.1f}s")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()

    def clear(self) -> None:
        """Blank the bar's line (a terminal bar), so that a table printed now starts clean;
        the next update redraws it."""
        if self.enabled and self.bar:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()

    def _log(self, done: int, total: int, now: float) -> None:
        finished = done >= total
        if finished and not self._logged:
            return  # short work: nothing to say
        if not finished and now - max(self._last, self._t0) < self.log_every:
            return
        self._last = now
        self._logged = True
        share = 100.0 * done / max(total, 1)
        self.stream.write(f"{self.label}: {done}/{total} ({share:.0f} %) {now - self._t0:.0f} s\n")
        self.stream.flush()
