"""The live study's pieces that need no testbed (benchmarks/testbed_study.py, issue #30): its
live SRSF policies place jobs as the simulated presets do, and ``--sim-only`` writes the same
jobs both ways (queue key, bytes per link) and simulates them with a fit whose η < 0."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _placements(d: Path) -> dict[str, str]:
    with (d / "jobs.csv").open() as f:
        return {r["job_id"]: r["placement"] for r in csv.DictReader(f)}


@pytest.mark.parametrize(("factory", "placement"), [("srsf_ff", "ff"), ("srsf_lwf", "lwf")])
def test_live_study_policies_place_like_the_presets(tmp_path, factory, placement):
    cluster = tmp_path / "c.toml"
    cluster.write_text('name = "c"\n[[servers]]\nnum_gpus = 2\ncount = 4\n')
    trace = tmp_path / "trace.csv"  # trace jobs: what live jobs are to the engine
    trace.write_text("arrival,num_gpus,duration\n0,3,30\n0,3,48\n")
    model = tmp_path / "model.csv"
    model.write_text(
        "job_id,arrival,num_gpus,iterations,model,size_mb,memory_mb,batch_size,t_forward,"
        "t_backward\n0,0,3,25,m0,4,9000,1,0.4,0\n1,0,3,40,m1,1,9000,1,0.4,0\n"
    )
    res = _run("-m", "ddlsched", "run", "--cluster", str(cluster), "--workload", str(trace),
               "--policy", f"benchmarks/testbed_policies.py:{factory}", "--quiet",
               "--out", str(tmp_path / "live-like"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = _run("-m", "ddlsched", "run", "--cluster", str(cluster), "--workload", str(model),
               "--policy", "srsf1", "--placement", placement, "--quiet",
               "--out", str(tmp_path / "sim"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = _placements(tmp_path / "live-like")
    assert got == _placements(tmp_path / "sim")
    # FF shares server 1 between the two jobs, LWF-1 keeps them apart
    assert got["1"] == ("1:1;2:0;2:1" if placement == "ff" else "2:0;2:1;3:0")


def test_study_sim_only_writes_the_same_jobs_both_ways(tmp_path):
    fit = tmp_path / "summary.json"
    fit.write_text(json.dumps({"a": 0.0, "b": 1.85e-7, "eta": -1.4e-8}))
    out = tmp_path / "study"
    res = _run("benchmarks/testbed_study.py", "--sim-only", "--summary", str(fit),
               "--policies", "SRSF(1) (FF)", "--out", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr
    live = tomllib.loads((out / "jobs.toml").read_text())["jobs"]
    with (out / "jobs.csv").open() as f:
        sim = list(csv.DictReader(f))
    for lj, sj in zip(live, sim, strict=True):
        cmd = lj["command"]
        iters, comp = int(cmd[cmd.index("--iters") + 1]), float(cmd[cmd.index("--compute-s") + 1])
        mb, w = float(cmd[cmd.index("--mb") + 1]), lj["gpus"]
        assert "--ask-link-bytes" in cmd
        assert lj["duration"] == pytest.approx(iters * comp * w, abs=1e-3)  # SRSF: C_J · G
        assert float(sj["size_mb"]) == pytest.approx(mb * 2 * (w - 1) / w)  # bytes per uplink
        assert int(sj["num_gpus"]) == w and int(sj["iterations"]) == iters
    rows = json.loads((out / "study.json").read_text())["rows"]
    assert [r["policy"] for r in rows] == ["SRSF(1) (FF)"] and rows[0]["sim_avg_jct"] > 0
    config = json.loads((out / "sim-srsf1-ff" / "config.json").read_text())
    assert "-1.4e-08" in json.dumps(config)  # the negative η reached the simulation


def test_study_sim_only_plans_the_model_jobs_with_yus_fit(tmp_path):
    """The planner rows: the same jobs as live model jobs (M unscaled: Yu's model counts the
    ring itself), simulated under sjf-bco with the fit's ξ1, ξ2, α."""
    fit = tmp_path / "summary.json"
    yu = {"xi1": 1.25, "xi2": 0.001, "alpha": -0.05}
    fit.write_text(json.dumps({"a": 0.0, "b": 1.85e-7, "eta": 0.0, "yu": yu}))
    out = tmp_path / "study"
    res = _run("benchmarks/testbed_study.py", "--sim-only", "--summary", str(fit),
               "--policies", "SJF-BCO (plan)", "--out", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr
    live = tomllib.loads((out / "jobs-model.toml").read_text())["jobs"]
    with (out / "jobs-model.csv").open() as f:
        sim = list(csv.DictReader(f))
    for lj, sj in zip(live, sim, strict=True):
        cmd = lj["command"]
        assert lj["iterations"] == int(cmd[cmd.index("--iters") + 1]) == int(sj["iterations"])
        assert lj["size_mb"] == float(cmd[cmd.index("--mb") + 1]) == float(sj["size_mb"])
        assert lj["t_forward"] == float(cmd[cmd.index("--compute-s") + 1])
        assert "--ask-link-bytes" not in cmd  # no gate in a planner's run
    (row,) = json.loads((out / "study.json").read_text())["rows"]
    assert row["policy"] == "SJF-BCO (plan)" and row["planned_makespan"] > 0
    config = json.loads((out / "sim-sjf-bco" / "config.json").read_text())
    assert {k: config["settings"]["rar"][k] for k in yu} == yu
    # the same plan executed under Wang's model, each ring priced at 2(w−1)/w·M per uplink
    wang = json.loads((out / "sim-sjf-bco-wang" / "config.json").read_text())
    assert wang["resolved"]["model"] == "wang" and wang["settings"]["wang"]["ring_bytes"]
    assert {k: wang["settings"]["rar"][k] for k in yu} == yu
    assert row["wang_avg_jct"] > 0 and row["wang_avg_jct"] != row["sim_avg_jct"]
    with (out / "sim-sjf-bco" / "jobs.csv").open() as f, \
            (out / "sim-sjf-bco-wang" / "jobs.csv").open() as g:  # fmt: skip
        assert [r["placement"] for r in csv.DictReader(f)] == [
            r["placement"] for r in csv.DictReader(g)
        ]  # one plan, two clocks


def test_ring_benchmark_sim_only_prices_each_ring_by_hand(tmp_path):
    """benchmarks/testbed_ring.py --sim-only: b = 0.1 s/MB, a = η = 0, 12 iterations of 0.3 s
    compute and 4 MB: a 4-worker job across servers takes 12 × (0.3 + 0.4) = 8.4 s with M and
    12 × (0.3 + 1.5 × 0.4) = 10.8 s with ``ring_bytes``; a 2-worker job on one server 3.6 s."""
    fit = tmp_path / "summary.json"
    fit.write_text(json.dumps({"a": 0.0, "b": 1e-7, "eta": 0.0}))
    out = tmp_path / "ring"
    res = _run("benchmarks/testbed_ring.py", "--sim-only", "--summary", str(fit),
               "--out", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = {r["workers"]: r for r in json.loads((out / "ring.json").read_text())["rows"]}
    assert rows[2]["sim_m"] == pytest.approx(3.6) and rows[2]["sim_ring"] == pytest.approx(3.6)
    assert rows[4]["sim_m"] == pytest.approx(8.4) and rows[4]["sim_ring"] == pytest.approx(10.8)
    assert rows[8]["sim_ring"] == pytest.approx(12 * (0.3 + 1.75 * 0.4))
