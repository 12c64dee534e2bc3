"""Adding a trace format and a performance model is one registration each (issue #12,
docs/design.md "Recipes"): a user format is detected and read by ``ddlsched run``; a user
model runs model jobs at job level with ``--set model=NAME`` and is recorded as what ran."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.core.job import JobSpec
from ddlsched.core.jobexec import WangJobLevel
from ddlsched.core.ratemodels import model_names, register_model, unregister_model
from ddlsched.errors import InputError
from ddlsched.settings import Settings
from ddlsched.workloads.trace_formats import placeholder_model
from ddlsched.workloads.traces import (
    TRACE_FORMATS,
    detect_format,
    read_trace,
    register_trace_format,
    unregister_trace_format,
)

MINE = "# my-scheduler export v1\nsubmit_s;gpus;runtime_s\n0;2;100\n30;1;50\n10;4;20\n"


def _read_mine(path: Path, options) -> list[JobSpec]:
    """A semicolon-separated export: submit time, GPUs, run time (a duration job each)."""
    rows = [r for r in path.read_text().splitlines()[2:] if r]
    jobs = []
    for i, row in enumerate(rows):
        t, g, d = row.split(";")
        jobs.append(JobSpec(i, float(t), int(g), 0, placeholder_model("mine"), duration=float(d)))
    return jobs


@pytest.fixture
def mine_format():
    register_trace_format(
        "mine",
        _read_mine,
        description="my scheduler's export (submit_s;gpus;runtime_s)",
        detect=lambda s: s.first_line.startswith("submit_s;gpus;"),
    )
    yield
    unregister_trace_format("mine")


def test_a_registered_trace_format_is_detected_read_and_listed(mine_format, tmp_path) -> None:
    p = tmp_path / "export.txt"
    p.write_text(MINE)  # detection skips the comment line and sees the header
    assert "mine" in TRACE_FORMATS and TRACE_FORMATS["mine"].startswith("my scheduler")
    assert list(TRACE_FORMATS)[-8:] == [
        "ddlsched",
        "pollux",
        "sia",
        "generic",
        "philly",
        "gavel",
        "gavel-philly",
        "tiresias",
    ]  # the built-ins keep their order; user formats come first
    assert detect_format(p) == "mine"
    jobs = read_trace(p)
    # a trace format: sorted by arrival and renumbered
    assert [(j.job_id, j.arrival, j.num_gpus, j.duration) for j in jobs] == [
        (0, 0.0, 2, 100.0),
        (1, 10.0, 4, 20.0),
        (2, 30.0, 1, 50.0),
    ]
    out = tmp_path / "o"
    args = ["run", "--cluster", "tiny", "--workload", str(p), "--policy", "fifo", "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    with open(out / "jobs.csv") as f:
        assert [float(r["jct"]) for r in csv.DictReader(f)] == [100.0, 20.0, 50.0]
    # by name too, for a file its detector would not recognise
    q = tmp_path / "q.txt"
    q.write_text(MINE.replace("# my-scheduler export v1\n", "header\n"))
    with pytest.raises(InputError, match="cannot tell the trace format"):
        detect_format(q)
    assert [j.duration for j in read_trace(q, "mine")] == [100.0, 20.0, 50.0]
    with pytest.raises(ValueError, match="already registered"):
        register_trace_format("generic", _read_mine, description="x")


def test_unknown_format_names_list_the_user_format(mine_format, tmp_path, capsys) -> None:
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    rc = main(
        [
            "run",
            "--cluster",
            "tiny",
            "--workload",
            str(p),
            "--policy",
            "fifo",
            "--workload-format",
            "mien",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "did you mean 'mine'" in err and err.count("\n") == 1


class HalfSpeedWang:
    """Wang's job-level model, twice as slow: a user performance model."""

    def __init__(self, settings: Settings) -> None:
        self.wang = WangJobLevel(settings.contention)

    def iteration_time(self, job, ex) -> float:
        return 2.0 * self.wang.iteration_time(job, ex)


@pytest.fixture
def half_speed():
    register_model("half-speed", HalfSpeedWang, description="Wang at half speed")
    yield
    unregister_model("half-speed")


def test_a_registered_performance_model_runs_and_is_recorded(half_speed, tmp_path) -> None:
    assert "half-speed" in model_names()
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,arrival,num_gpus,iterations,model\n0,0,2,200,resnet50\n")
    base = ["run", "--cluster", "tiny", "--workload", str(jobs), "--policy", "srsf1", "--quiet"]
    assert main([*base, "--set", "granularity=job", "--out", str(tmp_path / "w")]) == 0
    assert main([*base, "--set", "model=half-speed", "--out", str(tmp_path / "h")]) == 0
    jct = {}
    for name in ("w", "h"):
        with open(tmp_path / name / "jobs.csv") as f:
            jct[name] = float(next(csv.DictReader(f))["jct"])
    assert jct["h"] == pytest.approx(2 * jct["w"])
    resolved = json.loads((tmp_path / "h" / "config.json").read_text())["resolved"]
    assert resolved["model"] == "half-speed" and resolved["backend"] == "model-job-level"


def test_model_settings_follow_the_registered_model(half_speed, tmp_path, capsys) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,arrival,num_gpus,iterations,model\n0,0,2,200,resnet50\n")
    base = ["run", "--cluster", "tiny", "--workload", str(jobs), "--policy", "srsf1", "--quiet"]
    # Wang's a does not apply to a model that did not declare the [wang] section
    rc = main([*base, "--set", "model=half-speed", "--set", "a=0.1", "--out", str(tmp_path / "o")])
    assert rc == 2 and "'a'" in capsys.readouterr().err
    with pytest.raises(InputError, match="must be one of auto, rar, wang, half-speed"):
        Settings.from_mapping({"model": "half_speed"})
    # a planner still needs Yu's model
    rc = main(
        [
            "run",
            "--cluster",
            "tiny",
            "--workload",
            str(jobs),
            "--policy",
            "sjf-bco",
            "--quiet",
            "--set",
            "model=half-speed",
            "--out",
            str(tmp_path / "p"),
        ]
    )
    assert rc == 2 and "RAR model" in capsys.readouterr().err
