"""Small public pieces: settings parsing, the by-name entry point, the progress bar."""

from __future__ import annotations

import io
import types

import pytest

from ddlsched import InputError, Settings, simulate, simulate_named
from ddlsched.core.cluster_io import load_cluster
from ddlsched.progress import ProgressBar
from ddlsched.workloads.presets import load_workload


def test_settings_parse_and_reject() -> None:
    s = Settings.from_mapping({"iterations_per_task": "1000", "shortcuts": "off", "eta": "0"})
    assert s.iterations_per_task == 1000 and s.shortcuts is False and s.eta == 0.0
    with pytest.raises(InputError, match="expected true or false"):  # plain words (#11)
        Settings.from_mapping({"shortcuts": "maybe"})
    with pytest.raises(InputError, match="must be 'iteration' or 'job'"):
        Settings.from_mapping({"granularity": "layer"})
    with pytest.raises(InputError, match="must be ≥ 0"):
        Settings.from_mapping({"a": "-1"})


def test_simulate_named_matches_simulate_and_checks_fit(tmp_path) -> None:
    by_name = simulate_named(
        "wang20", "wang20", "srsf1", seed=2, settings={"iterations_per_task": 1000}
    )
    direct = simulate(
        load_cluster("wang20"),
        load_workload("wang20", seed=2),
        "srsf1",
        seed=2,
        settings={"iterations_per_task": 1000},
    )
    assert by_name.summary == direct.summary
    big = tmp_path / "big.csv"
    big.write_text("job_id,arrival,num_gpus,iterations,model\n1,0,9,10,vgg16\n")
    with pytest.raises(InputError, match="num_gpus"):
        simulate_named("tiny", str(big), "srsf1")


def test_progress_bar_draws_only_when_enabled() -> None:
    buf = io.StringIO()
    bar = ProgressBar("x", stream=buf, enabled=True)
    bar(1, 4)
    bar(4, 4)
    text = buf.getvalue()
    assert "1/4" in text and "4/4" in text and text.endswith("\n")
    quiet = io.StringIO()
    ProgressBar("x", stream=quiet)(4, 4)  # StringIO is not a terminal: short work is silent
    assert quiet.getvalue() == ""
    off = io.StringIO()
    ProgressBar("x", stream=off, enabled=False)(1, 4)
    assert off.getvalue() == ""


def test_progress_off_a_terminal_logs_a_line_every_few_seconds(monkeypatch) -> None:
    # a clock the test moves: a loaded CI machine cannot stretch "within the interval"
    now = [100.0]
    monkeypatch.setattr("ddlsched.progress.time", types.SimpleNamespace(monotonic=lambda: now[0]))
    buf = io.StringIO()
    bar = ProgressBar("sweep", stream=buf, log_every=0.05)
    bar(1, 4)  # too soon: nothing yet
    assert buf.getvalue() == ""
    now[0] += 0.06
    bar(2, 4)
    bar(3, 4)  # within the interval again
    bar(4, 4)  # the end, once something was logged
    lines = buf.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == ["sweep: 2/4", "sweep: 4/4"]
    assert "\r" not in buf.getvalue() and lines[1].startswith("sweep: 4/4 (100 %)")


def test_import_limits_openblas_threads_unless_the_user_chose():
    import os
    import subprocess
    import sys

    code = "import ddlsched, os; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "1"
    env["OPENBLAS_NUM_THREADS"] = "3"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "3"
