"""Contained workers (issue #27): each worker process, and everything it forks, in a cgroup v2
of its own, ended with ``cgroup.kill`` — where the system offers one. Elsewhere (no cgroup v2,
not writable, kernel < 5.14 without ``cgroup.kill``, or ``DDLSCHED_CGROUPS=off``) the launchers
fall back to the worker token and the child subreaper (``base.sweep_strays``).

Layout: under the cgroup this process is in (``/proc/self/cgroup``'s ``0::`` line, found
under the cgroup2 mount named in ``/proc/self/mountinfo``) one directory per process that owns
workers, ``ddlsched-<pid namespace>-<pid>-<start time>``, holding one leaf per worker process,
``job-<job>-<attempt>-<rank>-<token>``. The owner's name says whether it still lives, so a
later process ends and removes what a dead one left (same pid namespace only: a pid of
another namespace says nothing here). Nothing here blocks: a leaf that is still populated after
``cgroup.kill`` is removed by a later ``sweep``.

A service's directories carry its store's identity, ``…-<start time>-<store id>`` (from
``$DDLSCHED_CGROUP_STORE``, which ``serve`` sets, so the private Ray it starts inherits it). A
dead service's workers are left to *that store's* next service, which first asks them to
checkpoint and stop (its recovery) and only then collects the directory. Another ddlsched
process on the machine, a second service or a batch run, leaves them alone: killing them there
would lose their checkpoints. A batch run's directories carry no store, and any later process
collects them.

A worker enters its leaf before it runs a line of its own: the launcher starts it as
``/bin/sh -c 'read -r _ || exit 125; exec "$@" </dev/null' sh COMMAND...``, writes its pid into
the leaf's ``cgroup.procs`` and only then lets it go on (one line on its stdin), so it cannot
fork outside. No ``preexec_fn`` (unsafe in a multi-threaded process) and no wait for the child.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ...processes import process_start_time

#: ``off`` (or ``0``, ``no``, ``false``): no cgroups, the token and subreaper fallback only;
#: anything else (or unset): cgroups where they work
ENV = "DDLSCHED_CGROUPS"
PREFIX = "ddlsched-"
#: a service's store identity: its owner directories carry it (see the module's docstring)
STORE_ENV = "DDLSCHED_CGROUP_STORE"
#: the wrapper a contained worker starts as (``$@``: its command)
GATE = 'read -r _ || exit 125; exec "$@" </dev/null'
#: after the last leaf went, zombies of our tree are looked for this long (reparented orphans)
REAP_WINDOW_S = 2.0


def _unescape(field: str) -> str:
    """A mountinfo path field (``\\040`` for a space, and so on)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and i + 4 <= len(field):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def locate(mountinfo: str, proc_cgroup: str) -> tuple[Path | None, str]:
    """The directory of this process's cgroup v2 from the texts of ``/proc/self/mountinfo``
    and ``/proc/self/cgroup``, or None with the reason."""
    path = next((line[3:] for line in proc_cgroup.splitlines() if line.startswith("0::")), None)
    if path is None:
        return None, "no cgroup v2 (no 0:: line in /proc/self/cgroup)"
    if not path.startswith("/") or path.endswith(" (deleted)"):
        return None, f"this process's cgroup {path!r} is not reachable"
    mounts = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if sep and right.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            mounts.append((_unescape(fields[3]), _unescape(fields[4])))
    if not mounts:
        return None, "no cgroup2 file system is mounted"
    for root, point in mounts:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            rel = path[len(root.rstrip("/")) :].lstrip("/")
            return Path(point, rel) if rel else Path(point), ""
    return None, f"this process's cgroup {path} is under no cgroup2 mount"


def _proc_text(name: str) -> str:
    try:
        with open(f"/proc/self/{name}", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _start_time(pid: int) -> int:
    return process_start_time(pid)


def _pid_ns() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "0"
    return "".join(c for c in link if c.isdigit()) or "0"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(fd, text.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def populated(path: Path) -> bool:
    """Whether the cgroup ``path`` (or one below it) still has a process (a gone one: no)."""
    return "populated 1" in _read(path / "cgroup.events")


def _remove(path: Path) -> bool:
    """rmdir the cgroup ``path`` and those below it (deepest first: a job may have made its
    own); whether it is gone."""
    try:
        subs = [Path(d) for d, _, _ in os.walk(path, topdown=False)]
    except OSError:
        subs = []
    for d in subs:
        try:
            d.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            return False
    return not path.exists()


class _State:
    """This process's cgroups: where they are (``top``), the leaves being ended, and why there
    are none (``why``)."""

    def __init__(self) -> None:
        self.checked = False
        self.top: Path | None = None
        self.rel = ""  # top as the cgroup path /proc/PID/cgroup shows
        self.why = ""
        self.ending: dict[Path, float] = {}
        self.reap_until = 0.0


_st = _State()


def _off() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("off", "0", "no", "false")


def _setup() -> None:
    """Find our cgroup, check that we can make our directory there and that it has
    ``cgroup.kill``, end and remove what dead owners left."""
    st = _st
    st.checked = True
    if not sys.platform.startswith("linux"):
        st.why = "not Linux"
        return
    ours, why = locate(_proc_text("mountinfo"), _proc_text("cgroup"))
    if ours is None:
        st.why = why
        return
    pid = os.getpid()
    store = store_tag()
    name = f"{PREFIX}{_pid_ns()}-{pid}-{_start_time(pid)}" + (f"-{store}" if store else "")
    top = ours / name
    try:
        top.mkdir(exist_ok=True)
    except OSError as e:
        st.why = f"cannot make a cgroup in {ours}: {e.strerror or e}"
        return
    kill = (top / "cgroup.kill").exists()
    if not populated(top):
        _remove(top)  # made again by the first leaf (a process that starts none leaves none)
    if not kill:
        st.why = "no cgroup.kill (Linux < 5.14)"
        return
    st.top = top
    cg = next(line[3:] for line in _proc_text("cgroup").splitlines() if line.startswith("0::"))
    st.rel = cg.rstrip("/") + "/" + name
    collect_leftovers(ours)


def available() -> tuple[bool, str]:
    """Whether workers started now get cgroups; else why not (``DDLSCHED_CGROUPS=off``, or
    what detection found)."""
    if _off():
        return False, f"{ENV}=off"
    if not _st.checked:
        _setup()
    return _st.top is not None, _st.why


def top() -> Path | None:
    """This process's cgroup directory (None: no cgroups)."""
    return _st.top if available()[0] else None


def disable(why: str) -> None:
    """No cgroups for workers started from now on (a placement failed: ``why``)."""
    if _st.top is not None:
        print(f"ddlsched: cgroups not used from now on: {why}", file=sys.stderr)
    _st.why = why
    if _st.top is not None and not _st.ending and not populated(_st.top):
        _remove(_st.top)
    _st.top = None


def store_tag() -> str:
    """This process's store identity for its directories' names (``$DDLSCHED_CGROUP_STORE``,
    kept to 32 lower-case hex digits; empty: none)."""
    raw = os.environ.get(STORE_ENV, "").strip().lower()
    return "".join(c for c in raw if c in "0123456789abcdef")[:32]


def _owner(name: str) -> tuple[int, int, str] | None:
    """(pid, start time, store) of ``ddlsched-<ns>-<pid>-<start>[-<store>]`` of our pid
    namespace; None when the name is not ours or names another pid namespace."""
    parts = name[len(PREFIX) :].split("-") if name.startswith(PREFIX) else []
    if len(parts) == 4 and parts[3] and all(c in "0123456789abcdef" for c in parts[3]):
        store = parts.pop()
    else:
        store = ""
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or parts[0] != _pid_ns():
        return None
    return int(parts[1]), int(parts[2]), store


def owner_alive(name: str) -> bool | None:
    """Whether the process that made ``ddlsched-<ns>-<pid>-<start>[-<store>]`` lives; None
    when the name is not ours or names another pid namespace (then it is not ours to judge)."""
    owner = _owner(name)
    if owner is None:
        return None
    return _start_time(owner[0]) == owner[1]


def collect_leftovers(parent: Path | None = None) -> int:
    """End (``cgroup.kill``) and queue for removal every ``ddlsched-*`` cgroup of a dead owner
    under ``parent`` (default: this process's cgroup) that carries no store or this process's
    store; how many were found. Another store's are left to that store's next service."""
    if parent is None:
        if not available()[0] or _st.top is None:
            return 0
        parent = _st.top.parent
    try:
        names = [e.name for e in os.scandir(parent) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    found = 0
    now = time.monotonic()
    mine = store_tag()
    for name in names:
        owner = _owner(name)  # parsed once: a living owner's start time still matches
        if owner is None or owner[2] not in ("", mine) or _start_time(owner[0]) == owner[1]:
            continue
        found += 1
        path = parent / name
        for d, _, _ in os.walk(path, topdown=False):
            _write(Path(d) / "cgroup.kill", "1")
        _st.ending[path] = now
    sweep()
    return found


class Leaf:
    """One worker's cgroup."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def make(cls, name: str) -> Leaf | None:
        """A new leaf in this process's cgroup directory (None: no cgroups, or it cannot be
        made — then cgroups are off for this process)."""
        where = top()
        if where is None:
            return None
        try:
            where.mkdir(exist_ok=True)  # removed by ``close`` when a launcher shut down
            (where / name).mkdir()
        except OSError as e:
            disable(f"cannot make {where / name}: {e.strerror or e}")
            return None
        return cls(where / name)

    def place(self, pid: int) -> bool:
        """Move process ``pid`` into the leaf; on failure the leaf is removed and cgroups are
        off for this process (the worker is then a fallback one)."""
        try:
            fd = os.open(self.path / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, str(pid).encode())
            finally:
                os.close(fd)
            return True
        except OSError as e:
            _remove(self.path)
            disable(f"cannot move a worker into {self.path}: {e.strerror or e}")
            return False

    def pids(self) -> list[int]:
        return [int(x) for x in _read(self.path / "cgroup.procs").split() if x.isdigit()]

    def kill(self) -> None:
        """SIGKILL every process in the leaf (``cgroup.kill``; returns at once)."""
        _write(self.path / "cgroup.kill", "1")

    def end(self) -> None:
        """Kill everything in the leaf and remove it (now if it is empty already, else by a
        later ``sweep``)."""
        self.kill()
        _st.ending[self.path] = time.monotonic()
        _try_remove(self.path)


def _try_remove(path: Path) -> bool:
    if path.exists() and populated(path):
        return False
    if _remove(path):
        _st.ending.pop(path, None)
        _st.reap_until = time.monotonic() + REAP_WINDOW_S
        return True
    return False


def sweep(keep: set[int] | frozenset[int] = frozenset()) -> int:
    """Remove the ended leaves that emptied (``cgroup.kill`` again for the others) and reap the
    zombies of our cgroups that were reparented to this process (pids in ``keep`` are this
    process's own workers, reaped by their ``Popen``); the number of leaves still ending.
    Reads nothing when no leaf ended in the last ``REAP_WINDOW_S``."""
    for path in list(_st.ending):
        if not _try_remove(path):
            for d, _, _ in os.walk(path, topdown=False):
                _write(Path(d) / "cgroup.kill", "1")
    if _st.ending or time.monotonic() < _st.reap_until:
        _reap(keep)
    return len(_st.ending)


def _reap(keep: set[int] | frozenset[int]) -> None:
    """waitpid the zombie children of this process that were in one of our cgroups (orphans
    of workers reparented to us, the subreaper); never another child (its ``Popen`` would lose
    its exit code)."""
    if not _st.rel:
        return
    me = os.getpid()
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return
    mine = _st.rel
    for pid in entries:
        if pid in keep or pid == me:
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            rest = stat[stat.rindex(")") + 2 :].split()
            if rest[0] != "Z" or int(rest[1]) != me:
                continue
            with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
                cg = next((ln[3:] for ln in f.read().splitlines() if ln.startswith("0::")), "")
        except (OSError, ValueError, IndexError):
            continue
        if cg.startswith(mine + "/"):  # " (deleted)" once its leaf was removed
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def close(timeout: float = 10.0) -> bool:
    """Wait (up to ``timeout`` s) until every ended leaf is removed, then remove this process's
    directory if nothing is left in it; whether all is gone. For a launcher's shutdown."""
    if _st.top is None and not _st.ending:
        return True
    deadline = time.monotonic() + timeout
    while sweep() and time.monotonic() < deadline:
        time.sleep(0.01)
    if _st.top is not None:
        try:
            leaves = [e for e in os.scandir(_st.top) if e.is_dir(follow_symlinks=False)]
        except OSError:
            leaves = []
        if not leaves:
            try:
                _st.top.rmdir()
            except OSError:
                pass
    return not _st.ending


def reset() -> None:
    """Forget what was detected (tests switch ``DDLSCHED_CGROUPS``); leaves being ended are
    kept."""
    ending, until = _st.ending, _st.reap_until
    _st.__init__()  # type: ignore[misc]
    _st.ending, _st.reap_until = ending, until


__all__ = [
    "ENV",
    "GATE",
    "STORE_ENV",
    "Leaf",
    "available",
    "close",
    "collect_leftovers",
    "locate",
    "owner_alive",
    "populated",
    "reset",
    "store_tag",
    "sweep",
    "top",
]
