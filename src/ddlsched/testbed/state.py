"""Where a testbed is recorded: one directory per testbed with ``state.json``, its cluster file
and the pid files of the processes it runs.

The directory is ``$DDLSCHED_RUNTIME_DIR/testbeds/NAME`` where that variable is set (the
project's runtime directory, docs/live.md), else ``/run/ddlsched/testbeds/NAME``. Not the
per-user ``$XDG_RUNTIME_DIR``: network namespaces are the machine's, made by root, and outlive a
login session; ``/run`` is cleared at boot exactly when they are. ``state.json`` is written
*before* the first namespace is made (status ``creating``) and again when the testbed is up, so
whatever an interrupted ``up`` made is on record for ``down`` or the next ``up`` to remove.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import InputError
from ..processes import process_start_time
from .spec import NAME_RE

STATE_FILE = "state.json"
CLUSTER_FILE = "cluster.toml"
PIDS_DIR = "pids"
#: state.json's format version
STATE_VERSION = 1


def testbeds_dir() -> Path:
    """The directory holding every testbed's directory (module docstring)."""
    explicit = os.environ.get("DDLSCHED_RUNTIME_DIR")
    return Path(explicit) / "testbeds" if explicit else Path("/run/ddlsched/testbeds")


def testbed_dir(name: str) -> Path:
    return testbeds_dir() / name


@dataclass
class TestbedState:
    """What ``state.json`` records: the spec, the names and addresses made, and who made them."""

    __test__ = False

    name: str
    servers: int
    gpus_per_server: int
    rate_bps: int
    delay_ms: float
    subnet: str  # e.g. 10.211.37.0/24
    switch_ns: str
    server_ns: list[str]
    addresses: list[str]  # server i's address, without prefix length
    status: str = "creating"  # creating → up
    creator_pid: int = 0
    creator_start: int = 0
    created_at: float = 0.0
    up_seconds: float = 0.0
    version: int = STATE_VERSION
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def namespaces(self) -> list[str]:
        """Every namespace of the testbed: the switch's first."""
        return [self.switch_ns, *self.server_ns]

    def creator_alive(self) -> bool:
        """Whether the process that wrote ``creating`` still runs (a concurrent ``up``)."""
        return bool(self.creator_pid) and process_start_time(self.creator_pid) == self.creator_start


def save_state(state: TestbedState) -> Path:
    """Write ``state.json`` atomically (a crash leaves the old or the new file, never half)."""
    d = testbed_dir(state.name)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = d / STATE_FILE
    tmp = d / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(asdict(state), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_state(name: str) -> TestbedState | None:
    """The recorded state of testbed ``name``; None where there is none. A state file that
    does not parse is an InputError naming it (remove the directory by hand)."""
    path = testbed_dir(name) / STATE_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        known = set(TestbedState.__dataclass_fields__)
        state = TestbedState(**{k: v for k, v in doc.items() if k in known})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as e:
        raise InputError(
            f"unreadable testbed state ({type(e).__name__}); remove {path.parent} by hand after "
            "checking `ip netns list`",
            source=str(path),
        ) from None
    if state.name != name:
        raise InputError(f"records testbed {state.name!r}, not {name!r}", source=str(path))
    return state


def recorded_names() -> list[str]:
    """The names of the testbeds with a directory under :func:`testbeds_dir`, sorted."""
    try:
        entries = sorted(testbeds_dir().iterdir())
    except FileNotFoundError:
        return []
    return [e.name for e in entries if e.is_dir() and NAME_RE.fullmatch(e.name)]


def remove_state(name: str) -> None:
    """Remove testbed ``name``'s directory (its state, cluster file and pid files)."""
    d = testbed_dir(name)
    if not d.exists():
        return
    for path in sorted(d.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()
    d.rmdir()


@contextmanager
def locked() -> Iterator[None]:
    """Hold the testbeds' lock (``flock`` on ``.lock``): one ``up``/``down`` changes the
    machine's testbeds at a time, so two ``up``s cannot pick the same subnet."""
    d = testbeds_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(d / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ pid files
def record_pids(name: str, tag: str, pids: list[int]) -> Path:
    """Record processes a testbed command started (``pids/TAG.json``: pid and start time),
    so that ``down`` ends them by pid even if that command was killed."""
    d = testbed_dir(name) / PIDS_DIR
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = d / f"{tag}.json"
    doc = [{"pid": p, "start": process_start_time(p)} for p in pids]
    tmp = d / f".{tag}.json.tmp"
    tmp.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def recorded_pids(name: str) -> list[tuple[int, int]]:
    """Every ``(pid, start time)`` in testbed ``name``'s pid files."""
    out: list[tuple[int, int]] = []
    d = testbed_dir(name) / PIDS_DIR
    for path in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            for entry in json.loads(path.read_text(encoding="utf-8")):
                out.append((int(entry["pid"]), int(entry["start"])))
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return out


def forget_pids(name: str, tag: str) -> None:
    (testbed_dir(name) / PIDS_DIR / f"{tag}.json").unlink(missing_ok=True)
