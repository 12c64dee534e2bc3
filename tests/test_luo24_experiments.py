"""luo24 experiments: registered with the issue's names; a one-workload run in hours."""

from __future__ import annotations

import csv

import pytest

from ddlsched.cli import main
from ddlsched.experiments import EXPERIMENTS
from ddlsched.experiments.luo24 import pollux_data


def test_registered_with_the_issue_names_rows_and_metrics():
    for name in ("luo24-table2", "luo24-table3", "luo24-table4", "luo24-fig6a", "luo24-fig6b"):
        assert name in EXPERIMENTS
    t3 = EXPERIMENTS["luo24-table3"]
    names = ["FIFO", "SJF", "Tiresias", "Pollux", "SJF-FFS", "SJF-BSBF"]
    assert [r.name for r in t3.rows] == names
    assert [r.name for r in EXPERIMENTS["luo24-table4"].rows] == names
    assert [r.name for r in EXPERIMENTS["luo24-fig6a"].rows] == names
    assert t3.rows[3].paper["avg_jct_large"] == 1.96
    assert EXPERIMENTS["luo24-table4"].rows[3].paper["avg_jct"] == 4.69
    assert list(t3.metrics) == ["avg_jct", "avg_jct_large", "avg_jct_small", "avg_queueing"]
    assert t3.rows[2].paper["avg_jct"] == 1.51  # hours, as printed


@pytest.mark.long
def test_table3_first_workload_in_hours(tmp_path):
    root = pollux_data()
    if root is None:
        pytest.skip("Pollux artifact data not found (../shared/data/pollux)")
    out = tmp_path / "t3"
    rc = main(["reproduce", "luo24-table3", "--seeds", "1", "--workers", "1", "--out", str(out)])
    assert rc == 0
    with open(out / "table.csv") as f:
        rows = {(r["row"], r["metric"]): float(r["ours_mean"]) for r in csv.DictReader(f)}
    # Tiresias (event semantics) on workloads-1.5/workload-1.csv, converted to hours
    assert 0.2 < rows[("Tiresias", "avg_jct")] < 10
    assert rows[("SJF-BSBF", "avg_queueing")] < rows[("FIFO", "avg_queueing")]
    assert 0.2 < rows[("Pollux", "avg_jct")] < 10
    assert "Pollux artifact profiles" in (out / "table.md").read_text()


@pytest.mark.long
def test_without_data_the_builtins_run_and_say_so(tmp_path, monkeypatch):
    monkeypatch.setenv("DDLSCHED_POLLUX_DATA", str(tmp_path / "absent"))
    out = tmp_path / "t3"
    rc = main(["reproduce", "luo24-table3", "--seeds", "1", "--workers", "1", "--out", str(out)])
    assert rc == 0
    assert "BUILT-IN synthetic profiles" in (out / "table.md").read_text()
    with open(out / "table.csv") as f:
        vals = [float(r["ours_mean"]) for r in csv.DictReader(f)]
    assert len(vals) == 24 and all(v >= 0 for v in vals)


def test_fitted_ground_truth_and_builtin_profiles_run():
    from ddlsched.api import simulate_named

    a = simulate_named("luo24", "luo24-40", "sjf-bsbf", seed=2)
    b = simulate_named("luo24", "luo24-40", "sjf-bsbf", seed=2, settings={"ground_truth": "fitted"})
    assert a.summary["num_jobs"] == b.summary["num_jobs"] == 40
    assert a.summary["avg_jct"] > 0 and b.summary["avg_jct"] > 0
    assert a.summary["avg_jct"] != b.summary["avg_jct"]  # a different ground truth


def test_luo24_workload_from_a_philly_trace_via_settings(tmp_path):
    # a tiny Philly-format trace: 3 jobs inside the 02:00–10:00 window, all ≥ 60 s
    trace = tmp_path / "philly.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-03 02:10:00,600,1,600,a\n"
        "2017-10-03 03:00:00,7200,8,57600,a\n"
        "2017-10-03 05:30:00,100000,16,1600000,b\n"
    )
    from ddlsched.workloads.presets import load_workload

    jobs = load_workload("luo24-3", seed=1, philly=str(trace))
    assert len(jobs) == 3
    assert sorted(j.arrival for j in jobs) == [600.0, 3600.0, 12600.0]
