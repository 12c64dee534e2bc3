"""``python -m ddlsched.warmup`` (the last step of ``make run``'s set-up, issue #15): it fills
numba's cache with every entry point of the iteration-level kernel, split over two processes,
so that the first exact run compiles nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched.core.compiledtask import WARM_UP_PARTS, compiled_available

pytestmark = pytest.mark.skipif(not compiled_available(), reason="numba is not installed")

RUN = """
from ddlsched import build_simulator, load_cluster, load_workload
jobs = load_workload("wang20", seed=1)[:12]
sim = build_simulator(load_cluster("wang20"), jobs, "ada-srsf", seed=1)
assert type(sim.executor).__name__ == "CompiledTaskExecutor", type(sim.executor)
sim.run()
"""


def _cache(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.suffix in (".nbi", ".nbc")}


def test_the_two_halves_are_the_executors_entry_points() -> None:
    first, second = WARM_UP_PARTS
    assert not set(first) & set(second)
    assert set(first) | set(second) == {
        "start",
        "settle",
        "run",
        "events_at",
        "services",
        "set_scale",
    }


@pytest.mark.long
def test_warmup_compiles_all_a_run_needs(tmp_path: Path) -> None:
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "ddlsched.warmup"], env=env, timeout=300, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout == b""  # prints nothing
    after_warmup = _cache(cache)
    for name in (*WARM_UP_PARTS[0], *WARM_UP_PARTS[1]):
        assert any(f.startswith(f"taskkernel.{name}-") for f in after_warmup), name
    # an exact run afterwards loads everything from the cache: it writes no cache file
    run = subprocess.run([sys.executable, "-c", RUN], env=env, timeout=300, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert _cache(cache) == after_warmup


POLLUX = """
import sys
sys.path.insert(0, {tests!r})
from test_pollux_search import crowded_problem
from ddlsched.policies.pollux_search import SearchStats, compiled_search_ready, search
assert compiled_search_ready()
for seed in range(50):  # a round that needs the local search, not only the DP
    stats = SearchStats()
    search(crowded_problem(seed), stats, compiled=False)
    if not stats.exact:
        break
assert not stats.exact
search(crowded_problem(seed), compiled=True)
"""


@pytest.mark.long
def test_warmup_pollux_compiles_the_search_kernel(tmp_path: Path) -> None:
    """``python -m ddlsched.warmup --pollux`` (``make run``'s last step) leaves the Pollux
    search's kernel in numba's cache: a later search is ready and compiles nothing."""
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "ddlsched.warmup", "--pollux"],
        env=env,
        timeout=300,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    after = _cache(cache)
    assert any(f.startswith("pollux_kernel.local_search-") for f in after)
    code = POLLUX.format(tests=str(Path(__file__).parent))
    run = subprocess.run([sys.executable, "-c", code], env=env, timeout=300, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert _cache(cache) == after
