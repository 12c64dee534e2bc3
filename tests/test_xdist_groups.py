"""The Ray files' tests run on one pytest-xdist worker (tests/xdist_groups.py). xdist's own
``--dist loadgroup`` ignores its groups under pytest 9; this checks that ours hold, on a suite
of our own run by a real ``pytest -n 2``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from xdist_groups import scope_of

TESTS = Path(__file__).resolve().parent


def test_scope_is_the_ray_group_for_ray_files_and_the_test_itself_otherwise() -> None:
    assert scope_of("tests/test_sweep.py::test_x[ray-1]") == "ray"
    assert scope_of("tests/test_live_launch.py::TestA::test_b") == "ray"
    assert scope_of("tests/test_sweep.py::test_x[a@b]@ray") == "ray"  # xdist's own suffix
    assert scope_of("tests/test_cli.py::test_y[2]") == "tests/test_cli.py::test_y[2]"
    assert scope_of("tests/my_test_sweep.py::t") == "tests/my_test_sweep.py::t"


BODY = """import os, time
import pytest

@pytest.mark.parametrize("i", range(8))
def test_t(i):
    time.sleep(0.05)
    with open(os.environ["WHO_RAN"], "a") as f:
        f.write(f"{{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
"""


@pytest.mark.long
def test_ray_files_share_one_worker_under_dist_loadgroup(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from xdist_groups import pytest_xdist_make_scheduler  # noqa: F401\n"
    )
    for name in ("test_sweep.py", "test_signals.py", "test_other.py", "test_more.py"):
        (tmp_path / name).write_text(BODY.format())
    who = tmp_path / "who.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q",
         "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
        cwd=tmp_path, env={**os.environ, "WHO_RAN": str(who)}, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = [line.split() for line in who.read_text().splitlines()]
    assert len(ran) == 32
    ray_workers = {w for module, w in ran if module in ("test_sweep", "test_signals")}
    assert len(ray_workers) == 1, ran  # one worker ran every test of both Ray files
    assert {w for module, w in ran} == {"gw0", "gw1"}  # the others spread over both


def test_long_tests_are_collected_first() -> None:
    """tests/conftest.py puts the ``long`` tests first (so that xdist starts them early), the
    rest in file order: test_luo24_experiments.py's two long tests are its 2nd and 3rd."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=",
         "tests/test_luo24_experiments.py"],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    names = [line.split("::")[1] for line in done.stdout.splitlines() if "::" in line]
    assert names[:2] == [
        "test_table3_first_workload_in_hours",
        "test_without_data_the_builtins_run_and_say_so",
    ]
    assert names.index("test_fitted_ground_truth_and_builtin_profiles_run") > 1
    source = (TESTS / "test_luo24_experiments.py").read_text()
    in_file = [n for n in names if f"def {n}(" in source]
    in_file.sort(key=lambda n: source.index(f"def {n}("))
    assert in_file.index("test_table3_first_workload_in_hours") > 0  # not first in the file
