"""``make test``'s two pytest commands (docs/performance.md, "Test suite"): one xdist worker
more than cores (3 to 4), byte-code written whatever the environment says, and the Ray group's
machine-wide checks (test_live_run.py) in the parallel phase rather than the solo one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from xdist_groups import RAY_FILES

ROOT = Path(__file__).resolve().parent.parent


def _dry_run() -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if " -m pytest" in line]


def test_the_parallel_phase_runs_one_worker_more_than_cores_and_writes_byte_code() -> None:
    parallel, solo = _dry_run()
    workers = min(max(len(os.sched_getaffinity(0)) + 1, 3), 4)
    assert f' -n {workers} --dist loadgroup -m "not solo"' in parallel, parallel
    assert solo.endswith("-m pytest -m solo"), solo
    for line in (parallel, solo):  # an empty value turns the environment's setting off
        assert "PYTHONDONTWRITEBYTECODE= " in line, line


def test_live_run_is_in_the_ray_group_and_not_solo() -> None:
    assert "test_live_run.py" in RAY_FILES
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=",
         "-m", "solo", "tests/test_live_run.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "::" not in done.stdout, done.stdout  # none of its tests is marked solo
    assert "deselected" in done.stdout, done.stdout + done.stderr
