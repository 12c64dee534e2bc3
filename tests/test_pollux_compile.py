"""The Pollux search's kernel compiled beside the runs (policies/pollux_compile.py, issue #15):
a child process that is always ended by its pid, and Pollux runs that take the kernel once it
is cached, with the same results as without it."""

from __future__ import annotations

import os
import sys
import time

import pytest
from _processes import alive

from ddlsched.api import build_simulator
from ddlsched.core.cluster_io import load_cluster
from ddlsched.core.results import write_result_files
from ddlsched.policies import pollux as pollux_mod
from ddlsched.policies import pollux_compile
from ddlsched.policies.pollux import Pollux
from ddlsched.workloads.presets import load_workload


def _alive(pid: int) -> bool:
    return alive(pid)


@pytest.fixture
def not_cached(monkeypatch):
    """The kernel as if neither compiled nor cached; the child runs ``code`` instead of the
    compile (a real process, so that its start and end are what is tested)."""

    def use(code: str) -> None:
        monkeypatch.setattr(pollux_compile, "compiled_search_ready", lambda: False)
        monkeypatch.setattr(
            pollux_compile, "_compile_command", lambda: [sys.executable, "-c", code]
        )

    monkeypatch.delenv(pollux_compile.PENDING_ENV, raising=False)
    return use


def test_nothing_starts_where_no_pollux_run_needs_it(not_cached) -> None:
    not_cached("raise SystemExit(3)")
    with pollux_compile.compiling_in_background(False) as child:
        assert child is None and not pollux_compile.compile_pending()


def test_nothing_starts_where_the_kernel_is_cached(monkeypatch) -> None:
    monkeypatch.setattr(pollux_compile, "compiled_search_ready", lambda: True)
    with pollux_compile.compiling_in_background(True) as child:
        assert child is None and not pollux_compile.compile_pending()


def test_the_runs_see_a_pending_compile_and_the_end_waits_for_it(not_cached) -> None:
    not_cached("import time; time.sleep(0.5)")
    with pollux_compile.compiling_in_background(True) as child:
        assert child is not None and _alive(child.pid)
        assert pollux_compile.compile_pending()  # forked workers inherit it
        assert os.environ[pollux_compile.PENDING_ENV] == str(child.pid)
    assert child.returncode == 0  # waited for: the cache is complete for later runs
    assert not pollux_compile.compile_pending()


def test_a_failed_compile_is_said_in_one_line(not_cached, capsys) -> None:
    not_cached("raise SystemExit(3)")
    with pollux_compile.compiling_in_background(True) as child:
        pass
    assert child.returncode == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "failed (exit 3)" in err[0] and "Python search" in err[0]


def test_an_interrupted_body_stops_the_child_at_once(not_cached) -> None:
    not_cached("import time; time.sleep(60)")
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with pollux_compile.compiling_in_background(True) as child:
            pid = child.pid
            raise KeyboardInterrupt
    assert time.monotonic() - t < 10
    assert child.returncode is not None and not _alive(pid)
    assert not pollux_compile.compile_pending()


def test_a_compile_that_outlasts_the_wait_is_ended(not_cached, monkeypatch) -> None:
    not_cached("import time; time.sleep(60)")
    monkeypatch.setattr(pollux_compile, "FINISH_WAIT_S", 0.2)
    with pollux_compile.compiling_in_background(True) as child:
        pid = child.pid
    assert child.returncode is not None and not _alive(pid)


def _run(tmp_path, name: str):
    jobs = load_workload("luo24-30", seed=4)
    pol = Pollux()
    res = build_simulator(load_cluster("luo24"), jobs, pol, seed=4).run()
    out = tmp_path / name
    out.mkdir()
    write_result_files(res, out)
    return pol, {p.name: p.read_bytes() for p in out.iterdir() if p.name != "config.json"}


def test_a_run_switches_to_the_kernel_once_cached_with_the_same_results(
    tmp_path, monkeypatch
) -> None:
    """While a compile is pending the run keeps the Python search (not compiling itself, even
    when large); once the cache appears it takes the kernel; the files are the same bytes as
    a run on the Python search alone."""
    monkeypatch.setattr(pollux_mod, "COMPILE_AT_JOBS", 1)  # "large": it would compile itself
    used = []
    original = pollux_mod.search

    def spying_search(prob, **kw):
        used.append(kw["compiled"])
        return original(prob, **kw)

    monkeypatch.setattr(pollux_mod, "search", spying_search)
    monkeypatch.setattr(pollux_mod, "compiled_search_ready", lambda: False)
    monkeypatch.setenv(pollux_compile.PENDING_ENV, "1")
    python_pol, python_files = _run(tmp_path, "python")
    assert used and not any(used)  # never ready: the Python search throughout, no compile
    assert python_pol._await_kernel

    used.clear()
    asks = iter(range(10**6))
    monkeypatch.setattr(pollux_mod, "compiled_search_ready", lambda: next(asks) >= 6)
    switch_pol, switch_files = _run(tmp_path, "switch")
    first = used.index(True)
    assert first >= 5 and all(used[first:]) and not any(used[:first])
    assert not switch_pol._await_kernel
    assert switch_files == python_files

    monkeypatch.delenv(pollux_compile.PENDING_ENV)
    monkeypatch.setattr(pollux_mod, "compiled_search_ready", lambda: False)
    used.clear()
    _run(tmp_path, "large")  # no compile pending: a large run compiles in-process, as before
    assert used and all(used)


def _marker_code(path) -> str:
    """A stand-in compile (a real child process) that leaves a file behind when it runs."""
    return f"open({str(path)!r}, 'w').write('ran')"


@pytest.mark.parametrize("policy", ["pollux", "fifo"])
def test_reproduce_starts_the_compile_only_for_pollux_runs(tmp_path, not_cached, policy) -> None:
    from ddlsched.experiments.runner import Experiment, Row, run_experiment

    marker = tmp_path / "compiled"
    not_cached(_marker_code(marker))
    seen = []
    exp = Experiment(
        name="t",
        description="",
        cluster="luo24",
        workload="luo24-30",
        rows=[Row("P", policy)],
        metrics=["avg_jct"],
    )
    table = run_experiment(
        exp, 1, None, workers=1, progress=lambda d, n: seen.append(pollux_compile.compile_pending())
    )
    assert table and table[0]["ours_mean"] > 0
    assert marker.exists() == (policy == "pollux")  # started, and waited for at the end
    assert seen and all(seen) == (policy == "pollux")  # the runs saw it pending
    assert not pollux_compile.compile_pending()


def test_a_sweep_with_pollux_runs_starts_the_compile(tmp_path, not_cached) -> None:
    from ddlsched.sweep import load_sweep, run_sweep

    marker = tmp_path / "compiled"
    not_cached(_marker_code(marker))
    (tmp_path / "s.toml").write_text(
        'cluster = "luo24"\nworkload = "luo24-30"\n[sweep]\npolicies = ["pollux", "fifo"]\n'
        "seeds = 1\n"
    )
    run_sweep(load_sweep(tmp_path / "s.toml"), tmp_path / "sw", workers=1)
    assert marker.exists()
    assert not pollux_compile.compile_pending()
