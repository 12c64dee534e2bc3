"""Facts about a process of this machine, read from ``/proc`` (the launchers' and the
service's way to name a process for good: its pid and its start time)."""

from __future__ import annotations

__all__ = ["process_start_time"]


def process_start_time(pid: int) -> int:
    """When process ``pid`` of this machine started, in clock ticks since boot (Linux
    ``/proc/PID/stat`` field 22); 0 where unknown. With the pid it names one process for good:
    a pid reused by a later process has another start time."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return 0
