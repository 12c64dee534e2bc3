"""The backends, in the order they are tried: user backends (``register_backend``) first,
then the built-ins duration → profile → planned → model job level → model iteration level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.job import JobSpec
from .base import Backend
from .duration import DurationBackend
from .model import IterationBackend, JobLevelBackend
from .planned import PlannedBackend
from .profile import ProfileBackend

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Settings
    from ..policies.plugins import Registered

#: every backend, in the order ``pick_backend`` tries them
_BACKENDS: list[Backend] = []
_BUILTIN: list[Backend] = []


def register_backend(backend: Backend, *, builtin: bool = False) -> Backend:
    """Add ``backend``; a user backend is tried before the built-ins (after earlier user
    backends), so it may claim jobs a built-in would take. A name is registered once."""
    if any(b.name == backend.name for b in _BACKENDS):
        raise ValueError(f"backend {backend.name!r} is already registered")
    if builtin:
        _BACKENDS.append(backend)
        _BUILTIN.append(backend)
    else:
        _BACKENDS.insert(len(_BACKENDS) - len(_BUILTIN), backend)
    return backend


def unregister_backend(name: str) -> None:
    """Remove the user backend ``name`` (tests, notebooks); built-ins stay."""
    _BACKENDS[:] = [b for b in _BACKENDS if b.name != name or b in _BUILTIN]


def all_backends() -> list[Backend]:
    """The registered backends, in the order they are tried."""
    return list(_BACKENDS)


def pick_backend(jobs: Sequence[JobSpec], entry: Registered | None, settings: Settings) -> Backend:
    """The first backend that accepts ``jobs`` (``entry``: the run's built-in policy entry,
    None for any other policy): the one place that decides a run's kind of job."""
    for backend in _BACKENDS:
        if backend.accepts(jobs, entry, settings):
            return backend
    raise AssertionError("the model iteration backend accepts every job list")  # pragma: no cover


for _backend in (
    DurationBackend(),
    ProfileBackend(),
    PlannedBackend(),
    JobLevelBackend(),
    IterationBackend(),
):
    register_backend(_backend, builtin=True)
