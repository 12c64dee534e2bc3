"""``reproduce sia-table3`` / ``sia-table4`` (issue #29): names, the paper's numbers per trace,
``--data``, and a one-workload run on a small artifact-shaped folder of our own."""

from __future__ import annotations

import csv
import json
import math

import pytest
from test_sia_inputs import write_sia_profiles

from ddlsched.cli import main
from ddlsched.experiments import EXPERIMENTS
from ddlsched.experiments.sia import GPUS, gpu_hours_per_job


def test_registered_with_the_issues_names_rows_metrics_and_papers_numbers() -> None:
    t3, t4 = EXPERIMENTS["sia-table3"], EXPERIMENTS["sia-table4"]
    assert [r.policy for r in t3.rows] == ["sia", "pollux-unaware", "gavel-tunedjobs"]
    assert [r.policy for r in t4.rows] == ["sia", "pollux", "gavel-tunedjobs"]
    # the elastic rows fit throughput models as the artifact does; Gavel fits none
    for t in (t3, t4):
        assert [dict(r.settings) for r in t.rows] == [{"goodput_fit": "artifact"}] * 2 + [{}]
    assert list(t3.metrics) == ["avg_jct", "p99_jct", "makespan", "gpu_hours_per_job"]
    assert list(t3.variants) == ["philly", "helios", "newtrace"]
    assert t3.cluster == "sia-64" and t4.cluster == "sia-homo-64"
    sia, pollux, gavel = t3.rows
    # Table 3 differs by trace: the paper's value is the variant's
    assert t3.paper("philly", sia, "avg_jct") == 0.6
    assert t3.paper("newtrace", gavel, "avg_jct") == 11.3
    assert t3.paper("helios", pollux, "makespan") == 25.5
    assert t4.paper("philly", t4.rows[1], "gpu_hours_per_job") == 8.6


def test_gpu_hours_per_job_is_every_jobs_gpu_time_over_the_jobs() -> None:
    s = {"gpu_util_jobs": 0.5, "makespan": 7200.0, "num_jobs": 4}
    assert gpu_hours_per_job(s) == pytest.approx(0.5 * GPUS * 2 / 4)
    assert gpu_hours_per_job({**s, "num_jobs": 0}) == 0.0


def test_without_the_artifact_a_one_line_error_names_data(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DDLSCHED_SIA_DATA", raising=False)
    rc = main(["reproduce", "sia-table3", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "--data" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
    rc = main(["reproduce", "sia-table4", "--data", str(tmp_path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and str(tmp_path) in err and "traces/" in err


def test_data_is_refused_by_an_experiment_that_reads_none(tmp_path, capsys) -> None:
    rc = main(["reproduce", "wang20-table4", "--data", str(tmp_path), "--out", str(tmp_path / "o")])
    assert rc == 2 and "reads no data folder" in capsys.readouterr().err
    rc = main(["reproduce", "luo24-table3", "--data", str(tmp_path), "--out", str(tmp_path / "o")])
    assert rc == 2 and "no traces/" in capsys.readouterr().err


def _artifact(tmp_path):
    """A folder shaped as the artifact's sia-simulator/: our own profiles, one workload."""
    root = tmp_path / "artifacts" / "sia-simulator"
    write_sia_profiles(root / "traces", apps=("alpha", "beta"), epoch_progress=2e4)
    (root / "workloads" / "philly").mkdir(parents=True)
    (root / "workloads" / "philly" / "workload-1.csv").write_text(
        "name,time,application,num_replicas,batch_size\n"
        + "".join(
            f"{('alpha', 'beta')[i % 2]}-{i},{40 * i},{('alpha', 'beta')[i % 2]},{g},{b}\n"
            for i, (g, b) in enumerate([(1, 32), (2, 64), (4, 128), (8, 256)] * 2)
        )
    )
    return root


def test_one_workload_of_table3_beside_a_plain_run(tmp_path, capsys) -> None:
    root = _artifact(tmp_path)
    out = tmp_path / "t3"
    argv = ["reproduce", "sia-table3", "--variant", "philly", "--seeds", "1", "--workers", "1"]
    assert main([*argv, "--data", str(root.parent), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Beside the artifact's own simulator" in printed
    with open(out / "table.csv") as f:
        rows = {(r["row"], r["metric"]): r for r in csv.DictReader(f)}
    assert {r for r, _ in rows} == {"Sia", "Pollux", "Gavel+TJ"}
    assert rows[("Sia", "avg_jct")]["paper"] == "0.6"
    assert rows[("Sia", "avg_jct")]["unit"] == "h"
    # the table's numbers are those of `ddlsched run` on the same inputs, the elastic rows
    # with the artifact's throughput fit
    run = tmp_path / "run"
    sets = [f"profiles={root / 'traces'}", "calibration=sia", "semantics=rounds"]
    sets.append("goodput_fit=artifact")
    args = ["run", "--cluster", "sia-64", "--policy", "sia", "--quiet", "--out", str(run)]
    args += ["--workload", str(root / "workloads" / "philly" / "workload-1.csv")]
    assert main([*args, *[x for s in sets for x in ("--set", s)]]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert float(rows[("Sia", "avg_jct")]["ours_mean"]) == pytest.approx(
        summary["avg_jct"] / 3600, rel=1e-5
    )
    hours = float(rows[("Sia", "gpu_hours_per_job")]["ours_mean"])
    assert hours == pytest.approx(gpu_hours_per_job(summary), rel=1e-5) and hours > 0
    for (_, metric), r in rows.items():
        assert math.isfinite(float(r["ours_mean"])), metric
    # the data folder is part of the reproduction's identity
    assert json.loads((out / "reproduce.json").read_text())["run_id"]


def test_data_placeholder_builtin_stand_in_derived_metric_and_papers_by_variant(tmp_path) -> None:
    """The runner's parts the Sia tables use, on a tiny model-job experiment: ``{data}`` in a
    variant's workload is the resolved folder, without one the variant's built-in stand-in."""
    from pathlib import Path

    from ddlsched.experiments.runner import Experiment, Row, run_experiment

    tiny = Path(__file__).resolve().parents[1] / "examples" / "tiny-jobs.csv"
    (tmp_path / "jobs.csv").write_text(tiny.read_text())
    lines = tiny.read_text().splitlines(keepends=True)
    (tmp_path / "three.csv").write_text("".join(lines[:4]))

    def resolve(data):
        settings = {} if data is None else {"data": data}
        return "tiny", "", settings, "" if data is None else f"from {data}"

    exp = Experiment(
        "demo",
        "",
        "tiny",
        "",
        [Row("A", "fifo-ff")],
        ["avg_jct", "jobs_x2"],
        variants={
            "v": {"workload": "{data}/jobs.csv", "builtin_workload": str(tmp_path / "three.csv")}
        },
        resolve=resolve,
        derived={"jobs_x2": lambda s: 2.0 * s["num_jobs"]},
        paper_by_variant={"v": {"A": {"avg_jct": 7.0}}},
        default_seeds=1,
    )
    got = {t["metric"]: t for t in run_experiment(exp, workers=1, data=str(tmp_path))}
    assert got["jobs_x2"]["ours_mean"] == 2.0 * len(tiny.read_text().splitlines()[1:])
    assert got["avg_jct"]["paper"] == 7.0 and got["avg_jct"]["note"] == f"from {tmp_path}"
    builtin = {t["metric"]: t for t in run_experiment(exp, workers=1)}
    assert builtin["jobs_x2"]["ours_mean"] == 6.0  # the stand-in's three jobs


def test_gpu_hours_intervals_never_go_below_zero() -> None:
    from ddlsched.experiments.runner import mean_ci, metric_range

    lo, _ = metric_range("gpu_hours_per_job")
    assert lo == 0.0
    assert mean_ci([0.1, 0.2, 14.0], bounds=metric_range("gpu_hours_per_job"))[1] == 0.0


def test_the_artifact_section_sets_our_mean_beside_the_artifacts_over_the_same_workloads() -> None:
    """Each row: the mean of the artifact's workloads 1..n (n = the seeds we ran), in hours,
    and the difference; a row with fewer artifact runs than our seeds is left out; Table 4 has
    its own references (the homogeneous cluster), not Table 3's."""
    from ddlsched.experiments.sia import (
        ARTIFACT_AVG_JCT,
        ARTIFACT_AVG_JCT_HOMO,
        artifact_verdict_of,
    )

    t3, t4 = EXPERIMENTS["sia-table3"], EXPERIMENTS["sia-table4"]
    refs = {("philly", "sia"): (3600.0, 7200.0, 10800.0), ("philly", "pollux"): (3600.0,)}
    table = [
        {"metric": "avg_jct", "variant": "philly", "row": "Sia", "seeds": 2, "ours_mean": 1.65},
        {"metric": "p99_jct", "variant": "philly", "row": "Sia", "seeds": 2, "ours_mean": 9.0},
        {"metric": "avg_jct", "variant": "philly", "row": "Pollux", "seeds": 2, "ours_mean": 1.0},
    ]
    text = artifact_verdict_of(refs, " (note)")(t4, table)
    assert "machine (note)" in text
    assert "| philly | Sia | 1.650 | 1.500 | +10.0 % | 1–2 |" in text
    assert "Pollux" not in text  # one artifact run, two seeds of ours: no like-for-like mean
    assert "none of these runs" in artifact_verdict_of({})(t4, table)
    # each table closes with its own references
    assert t3.verdict is not None and t4.verdict is not None
    sia3 = {"metric": "avg_jct", "variant": "philly", "row": "Sia", "seeds": 1, "ours_mean": 0.5}
    assert f"{ARTIFACT_AVG_JCT[('philly', 'sia')][0] / 3600:.3f}" in t3.verdict(t3, [sia3])
    gavel = {**sia3, "row": "Gavel+TJ"}
    homo = ARTIFACT_AVG_JCT_HOMO[("philly", "gavel-tunedjobs")][0] / 3600
    hetero = ARTIFACT_AVG_JCT[("philly", "gavel-tunedjobs")][0] / 3600
    assert f"{homo:.3f}" in t4.verdict(t4, [gavel]) and f"{hetero:.3f}" in t3.verdict(t3, [gavel])
    # Sia on the homogeneous cluster, workloads 1-2: the artifact's mean beside ours
    sia2 = {**sia3, "seeds": 2, "ours_mean": 2.0}
    both = sum(ARTIFACT_AVG_JCT_HOMO[("philly", "sia")][:2]) / 2 / 3600
    assert f"| philly | Sia | 2.000 | {both:.3f} |" in t4.verdict(t4, [sia2])
