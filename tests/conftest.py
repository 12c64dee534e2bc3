"""Test-wide set-up.

One BLAS thread: scipy's interpolators are slower, not faster, with threads on small CI
machines (measured: a 48-query lookup went from ~0.1 s to 15 s under contention).

Parallel runs (``make test`` runs ``pytest -n 3 --dist loadgroup -m "not solo"`` on 2 cores, with
pytest-xdist, then the ``solo`` tests — those that need the machine to themselves: real processes'
timings, machine-wide clean-ups — alone): the test files that start Ray run one after another on
one worker (tests/xdist_groups.py says why, and why with a scheduler of our own). Every other
test (live ones included: they tag their processes and check only their own) goes to any worker.
Tests marked ``long`` (20 s or more of one worker) are collected first, so that they start
early rather than run alone at the end.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from xdist_groups import RAY_FILES, long_first, pytest_xdist_make_scheduler  # noqa: F401


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The Ray files' tests carry the ``xdist_group("ray")`` mark too: it documents the group
    (``-m``) and is what xdist's own loadgroup reads where pytest still lets it."""
    for item in items:
        if item.path.name in RAY_FILES:
            item.add_marker(pytest.mark.xdist_group("ray"))
    items[:] = long_first(items)
