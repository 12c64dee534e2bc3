"""A minimal progress bar on stderr, shown only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """``bar(done, total)`` redraws one line; silent when the stream is not a TTY."""

    def __init__(
        self, label: str, stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._last = 0.0
        self._t0 = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
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
