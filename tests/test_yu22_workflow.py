"""yu22 generators, planner runs from the CLI, horizon extension and the yu22 experiments."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest

from ddlsched.api import simulate, simulate_named
from ddlsched.cli import main
from ddlsched.core.cluster_io import load_cluster
from ddlsched.errors import InputError
from ddlsched.experiments import EXPERIMENTS
from ddlsched.perf.rar import RarModel
from ddlsched.workloads.generators import WANG20_GPU_MIX
from ddlsched.workloads.presets import load_workload


def test_yu22_workload_follows_section7():
    jobs = load_workload("yu22", seed=3)
    assert Counter(j.num_gpus for j in jobs) == Counter(WANG20_GPU_MIX)
    assert all(j.arrival == 0.0 for j in jobs)
    cl = load_cluster("yu22", 3)
    model = RarModel()
    for j in jobs:
        assert 1000 <= j.iterations <= 6000
        assert 1.0 <= j.model.size_mb <= 5.0
        # τ of the job alone on one server is the drawn base time
        tau = model.time_for(cl, j, (0,), 1)
        assert 0.01 - 1e-12 <= tau <= 0.05 + 1e-12
        assert 50 - 1e-6 <= j.iterations * tau <= 300 + 1e-6
    assert load_workload("yu22", seed=3) == jobs  # seeded
    assert load_workload("yu22", seed=4) != jobs


def test_yu22_cluster_is_seeded_and_nested():
    a = load_cluster("yu22", 1)
    assert a.num_servers == 20
    assert {s.num_gpus for s in a.servers} <= {4, 8, 16, 32}
    assert load_cluster("yu22", 1) == a
    assert load_cluster("yu22", 2) != a
    small = load_cluster("yu22-12", 1)
    assert small.num_servers == 12
    assert [s.num_gpus for s in small.servers] == [s.num_gpus for s in a.servers[:12]]
    with pytest.raises(InputError):
        load_cluster("yu22-0", 1)


def test_sjf_bco_summary_reports_planned_and_executed():
    res = simulate_named("yu22", "yu22", "sjf-bco", seed=0)
    s = res.summary
    for key in ("planned_makespan", "makespan_lower_bound", "extra_share", "plan_theta"):
        assert key in s
    assert s["makespan"] >= s["makespan_lower_bound"] > 0
    assert 0 <= s["extra_share"] < 1
    assert 1 <= s["plan_theta"] <= 1200
    assert s["plan_extended"] == 0.0
    # exclusive GPUs, gang start: one segment per job
    assert len(res.segments) == len(res.jobs) == 160


def test_horizon_extension_and_its_switch():
    cl = load_cluster("yu22", 0)
    jobs = load_workload("yu22", seed=0)[:40]
    res = simulate(cl, jobs, "yu-ff", settings={"horizon": 20})
    s = res.summary
    assert s["plan_extended"] == 1.0
    assert s["plan_horizon"] > 20 and s["plan_horizon"] % 20 == 0
    with pytest.raises(InputError) as e:
        simulate(cl, jobs, "yu-ff", settings={"horizon": 20, "extend_horizon": False})
    assert e.value.field == "horizon"


def test_planners_execute_under_rar_or_wangs_iteration_level_only():
    """A plan is executed under Yu's RAR model or (model=wang) Wang's iteration-level model;
    any other model, or Wang's at job level, is one error naming the setting."""
    cl = load_cluster("yu22", 0)
    jobs = load_workload("yu22", seed=0)[:5]
    with pytest.raises(InputError) as e:
        simulate(cl, jobs, "sjf-bco", settings={"model": "no-such-model"})
    assert e.value.field == "model"
    with pytest.raises(InputError) as e:
        simulate(cl, jobs, "sjf-bco", settings={"model": "wang", "granularity": "job"})
    assert e.value.field == "granularity"
    res = simulate(cl, jobs, "sjf-bco", settings={"model": "wang"})
    assert res.resolved["model"] == "wang" and res.summary["num_jobs"] == 5


def test_cli_run_sjf_bco_and_list(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(
        [
            "run",
            "--cluster",
            "yu22",
            "--workload",
            "yu22",
            "--policy",
            "sjf-bco",
            "--seed",
            "2",
            "--set",
            "lam=2",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["planned_makespan"] > 0
    with open(out / "jobs.csv") as f:
        assert len(list(csv.DictReader(f))) == 160
    capsys.readouterr()
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    for name in ("sjf-bco", "yu-ff", "yu-ls", "yu-rand", "yu22-N", "yu22-fig4"):
        assert name in text
    assert (
        main(
            [
                "run",
                "--cluster",
                "yu22",
                "--workload",
                "yu22",
                "--policy",
                "sjf-bco",
                "--set",
                "lam=0.5",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )


def test_yu22_experiments_are_registered_with_the_issue_names():
    for name in ("yu22-fig4", "yu22-fig5", "yu22-fig6", "yu22-fig7"):
        assert name in EXPERIMENTS
    fig4 = EXPERIMENTS["yu22-fig4"]
    assert [r.name for r in fig4.rows] == ["FF", "LS", "RAND", "SJF-BCO"]
    assert {"makespan", "avg_jct"} <= set(fig4.metrics)
    assert [r.settings["bco_kappa"] for r in EXPERIMENTS["yu22-fig5"].rows] == list(range(1, 33))
    assert [r.settings["lam"] for r in EXPERIMENTS["yu22-fig7"].rows] == [1, 2, 4, 8]
    assert all(r.settings["bco_kappa"] == 1 for r in EXPERIMENTS["yu22-fig7"].rows)
    fig6 = EXPERIMENTS["yu22-fig6"]
    assert [v["cluster"] for v in fig6.variants.values()] == [f"yu22-{n}" for n in range(10, 21)]
    assert all(r.settings["horizon"] == 1500 for r in fig6.rows)


def test_reproduce_fig7_one_seed(tmp_path, capsys):
    out = tmp_path / "f7"
    assert (
        main(["reproduce", "yu22-fig7", "--seeds", "1", "--workers", "1", "--out", str(out)]) == 0
    )
    with open(out / "table.csv") as f:
        rows = list(csv.DictReader(f))
    mk = {r["row"]: float(r["ours_mean"]) for r in rows if r["metric"] == "makespan"}
    assert set(mk) == {"λ=1", "λ=2", "λ=4", "λ=8"}
    assert all(np.isfinite(v) and v > 0 for v in mk.values())
    assert (out / "yu22-fig7.png").stat().st_size > 0


def test_plots_for_series_and_suffixed_bars(tmp_path):
    from ddlsched.experiments.plots import bar_chart, series_chart
    from ddlsched.experiments.runner import Experiment, Row

    exp = Experiment(
        "demo", "", "tiny", "wang20", [Row("A", "fifo-ff"), Row("B", "srsf1")], ["makespan"]
    )
    table = [
        {
            "variant": v,
            "row": r,
            "metric": "makespan",
            "paper": float("nan"),
            "ours_mean": m,
            "ours_ci_low": m - 1,
            "ours_ci_high": m + 1,
        }
        for v, rows in (("n=1", {"A": 5.0, "B": 4.0}), ("n=2", {"A": 3.0, "B": 2.0}))
        for r, m in rows.items()
    ]
    p = series_chart(exp, table, tmp_path, "makespan", "n", ["1", "2"])
    assert p == tmp_path / "demo.png" and p.stat().st_size > 0
    q = bar_chart(exp, table, tmp_path, "makespan", suffix="mk")
    assert q == tmp_path / "demo-mk.png" and q.stat().st_size > 0
