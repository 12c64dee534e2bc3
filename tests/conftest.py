"""Test-wide set-up.

One BLAS thread: scipy's interpolators are slower, not faster, with threads on small CI
machines (measured: a 48-query lookup went from ~0.1 s to 15 s under contention).

Parallel runs (``make test`` runs ``pytest -n auto --dist loadgroup -m "not solo"`` with
pytest-xdist, then the ``solo`` tests — those that need the machine to themselves: real processes'
timings, machine-wide clean-ups — alone): the test
files that start a Ray instance run one after another on one worker (the ``ray`` group),
because some of them check that every Ray process that appeared during the test is gone at its
end — a Ray started by a test on another worker would look like a leftover. Every other test
(live ones included: they tag their processes and check only their own) goes to any worker.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in RAY_FILES:
            item.add_marker(pytest.mark.xdist_group("ray"))
