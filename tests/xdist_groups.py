"""Which tests may not share the machine with each other under pytest-xdist, and a scheduler
that keeps them on one worker.

The test files that start Ray run one after another on one worker (the ``ray`` group), because
some of them check that every Ray process that appeared during the test is gone at its end — a
Ray started by a test on another worker would look like a leftover.

Why our own scheduler: xdist's ``--dist loadgroup`` finds a test's group in a ``@group`` suffix
that its worker hook appends to ``item._nodeid``; from pytest 9 a node id is read from
``item._id``, so the suffix never appears and every group is silently ignored (xdist 3.8, the
newest release). This scheduler groups by file name instead, on the controller, from the node
ids alone: it needs no marker and no private attribute of pytest's items.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

#: the test files that start Ray (and so may not overlap each other under pytest-xdist)
RAY_FILES = frozenset(
    {
        "test_live_cgroup.py",
        "test_live_launch.py",
        "test_live_run.py",
        "test_live_service_ray.py",
        "test_signals.py",
        "test_sweep.py",
    }
)


def scope_of(nodeid: str) -> str:
    """The work unit a test belongs to: ``ray`` for a test of a Ray file, else the test itself
    (any worker; the scheduler's unit is then one test, as with ``--dist load``)."""
    path = nodeid.split("::", 1)[0]
    if PurePosixPath(path).name in RAY_FILES:
        return "ray"
    return nodeid


def long_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The tests marked ``long`` first, each group in its own order. xdist hands out the Ray
    group first (its scheduler orders scopes by size), then single tests in collection order:
    a long test collected late ran alone at the end (the Pollux validation, ≈ 4 min of one
    worker, finished last at 669 s of a 677-s run)."""
    return sorted(items, key=lambda item: item.get_closest_marker("long") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadgroup``: xdist's load-scope scheduler, its scopes from ``scope_of``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RayGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return RayGroupScheduling(config, log)
