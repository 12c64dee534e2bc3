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


def tagged_left(tag: str, timeout: float = 15.0) -> list[int]:
    """The pids whose command line holds ``tag`` once ``timeout`` s passed without them all
    going (the live tests' "nothing left behind"), [] when none is left."""
    import time

    deadline = time.monotonic() + timeout
    left = [p for p, c in cmdlines().items() if tag in c]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p, c in cmdlines().items() if tag in c]
    return left


def run_cli(*args: str, timeout: float = 110.0, **kw):
    """``python -m ddlsched.cli ARGS`` in the repository root, output captured (the live
    tests' way of running ddlsched as a user does)."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parent.parent,
        **kw,
    )


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0: nothing is sent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
