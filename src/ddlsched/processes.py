"""This machine's processes, read from ``/proc``: a process named for good (its pid and its
start time), a process's descendants, and Ray's start inside a ddlsched process (the signals
stay ddlsched's; what an interrupted start leaves is ended). Bottom layer: imports nothing of
ddlsched; used by the sweep and the live launchers and service."""

from __future__ import annotations

import os
import signal
import time

__all__ = [
    "HELPER_ENV",
    "RAY_GONE_S",
    "descendants",
    "end_marked",
    "end_ray_started_since",
    "is_running",
    "keep_signals_through_ray_init",
    "marked",
    "process_start_time",
]

#: seconds Ray's processes get to go after ``ray.shutdown()`` before they are killed
RAY_GONE_S = 5.0
#: the environment variable that marks a process's helpers (a private Ray's daemons, agents
#: and workers inherit it): a value per process (its pid and start time), so what a crash left
#: is found by id even where it was started after the last look and reparented since
HELPER_ENV = "DDLSCHED_HELPER_OF"


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


def descendants(pid: int, session: int | None = None) -> list[tuple[int, int]]:
    """Every living descendant of process ``pid`` of this machine (children, their children …)
    as ``(pid, start time)``, from ``/proc``; [] where there is no ``/proc``. With ``session``,
    only those of that session (jobs' workers start sessions of their own)."""
    children: dict[int, list[int]] = {}
    sessions: dict[int, int] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            fields = stat[stat.rindex(")") + 2 :].split()
            parent, sessions[int(entry)] = int(fields[1]), int(fields[3])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    out, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        start = process_start_time(child)
        if start and (session is None or sessions.get(child) == session):
            out.append((child, start))
        todo.extend(children.get(child, []))
    return sorted(out)


def is_running(pid: int, start: int) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (a zombie — ended, not
    yet reaped by its parent — does not)."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        fields = stat[stat.rindex(")") + 2 :].split()
        return fields[0] != "Z" and int(fields[19]) == start
    except (OSError, ValueError, IndexError):
        return False


def marked(value: str) -> list[tuple[int, int]]:
    """Every process of this machine but this one whose environment sets :data:`HELPER_ENV`
    to ``value``, as ``(pid, start time)``; [] where there is no ``/proc``."""
    marker = f"{HELPER_ENV}={value}".encode()
    me = os.getpid()
    try:
        pids = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    out = []
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
        except OSError:  # gone, or another user's
            continue
        start = process_start_time(pid)
        if start:
            out.append((pid, start))
    return sorted(out)


def end_marked(value: str, grace: float = 0.0) -> int:
    """SIGKILL every process :func:`marked` ``value`` (by pid and start time) that is still
    there after ``grace`` seconds; the number killed. Cheap when there is none."""
    left = marked(value)
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [(pid, start) for pid, start in left if is_running(pid, start)]
    ended = 0
    for pid, start in left:
        if is_running(pid, start):
            try:
                os.kill(pid, signal.SIGKILL)
                ended += 1
            except (ProcessLookupError, PermissionError):
                pass
    for pid, start in left:  # gone before returning: the caller may check at once
        deadline = time.monotonic() + 5.0
        while is_running(pid, start) and time.monotonic() < deadline:
            time.sleep(0.05)
    return ended


def end_ray_started_since(before: set[tuple[int, int]]) -> None:
    """``ray.shutdown()``, then SIGKILL the descendants of this process (by pid and start
    time) that were not in ``before`` and are still there after :data:`RAY_GONE_S`."""
    try:
        import ray

        ray.shutdown()
    except Exception:  # noqa: BLE001 - a half-started Ray may not shut down cleanly
        pass
    left = [p for p in descendants(os.getpid()) if p not in before]
    deadline = time.monotonic() + RAY_GONE_S
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [(pid, start) for pid, start in left if process_start_time(pid) == start]
    for pid, start in left:
        if process_start_time(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class keep_signals_through_ray_init:
    """``with keep_signals_through_ray_init(): ray.init(...)``: this process's SIGINT and
    SIGTERM stay ddlsched's while Ray starts, so a signal then ends the run as at any other
    time (exit 143 / 130, one line). Left to itself, ``ray.init`` sets a Python SIGTERM
    handler of its own first thing (``sys.exit(15)``: exit 15, seconds before it returns) and,
    later, a C-level crash handler (absl's failure signal handler) that takes SIGTERM too and
    aborts the process with a stack dump (exit −6, seen in CI). Here the first is not set (Ray's
    ``set_sigterm_handler`` does nothing inside the block; the handlers are also put back on
    leaving it) and the second is switched off for this process
    (``RAY_DISABLE_FAILURE_SIGNAL_HANDLER``, read when Ray starts its core worker); Ray's own
    processes keep theirs. A signal inside the block raises in ``ray.init``, and when an
    exception leaves the block Ray is shut down and the processes it started from this one that are
    still there after :data:`RAY_GONE_S` are killed by pid and start time (agents of a raylet
    ended while starting outlived it: DashboardAgent, RuntimeEnvAgent). Both Ray names are
    private: where a release drops them, nothing changes here."""

    def __enter__(self) -> None:
        import threading

        self._patched = None
        try:
            from ray._private import ray_constants
            from ray._private import utils as ray_utils

            ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
            if hasattr(ray_utils, "set_sigterm_handler"):
                self._patched = (ray_utils, ray_utils.set_sigterm_handler)
                ray_utils.set_sigterm_handler = lambda handler: None
        except ImportError:
            pass
        self._before = set(descendants(os.getpid()))
        self._saved: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handler = signal.getsignal(sig)
                if handler is not None:
                    self._saved[sig] = handler

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:  # a signal or a failed start: nothing of this Ray may stay
            end_ray_started_since(self._before)
        if self._patched is not None:
            module, original = self._patched
            module.set_sigterm_handler = original
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
