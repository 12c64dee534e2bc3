"""Helpers of the live tests: what runs on this machine (read from /proc, never signalled)."""

from __future__ import annotations

import os
from pathlib import Path


def cmdlines() -> dict[int, str]:
    """Every process's command line, by pid."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            out[int(entry)] = raw.replace(b"\0", b" ").decode(errors="replace")
    return out
