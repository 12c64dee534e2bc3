"""SJF-BCO's plan executed live (issue #30): a job file's model fields (iterations, size_mb,
t_forward, t_backward) make its jobs model jobs; the offline planners (sjf-bco, yu-ff, yu-ls,
yu-rand) plan them under Yu's RAR model exactly as ``ddlsched run`` does, and real processes
execute the plan — each job on its planned GPUs, never before a job planned ahead of it. Bad
model fields are one line naming the file, line and field. Bounded in time; the jobs'
processes are checked gone by the pids they wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _processes import alive

from ddlsched.api import build_simulator
from ddlsched.core.cluster import Cluster
from ddlsched.core.cluster_io import load_cluster
from ddlsched.errors import InputError
from ddlsched.live.jobfile import read_live_jobs
from ddlsched.live.planned import to_model_specs
from ddlsched.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
JOB = """\
import os, sys, time
with open(os.path.join(sys.argv[1], f"pid-{os.environ['DDLSCHED_JOB_ID']}-{os.environ['RANK']}"), "w") as f:
    f.write(str(os.getpid()))
time.sleep(float(sys.argv[2]))
"""
#: (job_id, gpus, iterations, size_mb, t_forward, seconds the process runs)
JOBS = [
    (0, 4, 400, 100.0, 0.05, 0.6),
    (1, 2, 100, 20.0, 0.02, 0.3),
    (2, 8, 50, 200.0, 0.05, 0.4),
    (3, 1, 300, 0.0, 0.01, 0.3),
    (4, 3, 200, 50.0, 0.03, 0.5),
    (5, 2, 80, 10.0, 0.02, 0.3),
]
CLUSTER = 'name = "two-by-four"\n[[servers]]\nnum_gpus = 4\ncount = 2\n'


def _write(tmp_path: Path) -> tuple[Path, Path, Path]:
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "job.py").write_text(JOB)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(CLUSTER)
    lines = []
    for jid, g, it, mb, tf, secs in JOBS:
        cmd = [sys.executable, str(tmp_path / "job.py"), str(marks), str(secs)]
        lines += ["[[jobs]]", f"job_id = {jid}", "arrival = 0.0", f"gpus = {g}",
                  f"command = {json.dumps(cmd)}", f"iterations = {it}", f"size_mb = {mb}",
                  f"t_forward = {tf}", "t_backward = 0.0", ""]  # fmt: skip
    jobs = tmp_path / "jobs.toml"
    jobs.write_text("\n".join(lines))
    return cluster, jobs, marks


def _live(tmp_path: Path, cluster: Path, jobs: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env["DDLSCHED_RUNTIME_DIR"] = str(tmp_path / "runtime")
    return subprocess.run(
        [sys.executable, "-m", "ddlsched", "live", "--quiet", "--local", "--cluster",
         str(cluster), "--workload", str(jobs), "--out", str(tmp_path / "run"), *extra],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_sjf_bco_plan_runs_live_in_its_order_on_its_gpus(tmp_path: Path) -> None:
    cluster, jobs, marks = _write(tmp_path)
    # the plan `ddlsched run` executes: same cluster, jobs, seed and settings
    specs = to_model_specs(read_live_jobs(str(jobs)), 1.0)
    settings = Settings.from_mapping({"xi2": 0.002})
    sim = build_simulator(load_cluster(str(cluster)), specs, "sjf-bco", settings=settings)
    plan = sim.policy.plan  # type: ignore[attr-defined]
    planned = [(e.job_id, sorted(e.gpus)) for e in plan.entries]
    assert len(planned) == len(JOBS)

    res = _live(tmp_path, cluster, jobs, "--policy", "sjf-bco", "--set", "xi2=0.002")
    assert res.returncode == 0, res.stderr + res.stdout
    out = tmp_path / "run"
    starts = [
        e
        for e in map(json.loads, (out / "events.jsonl").read_text().splitlines())
        if e["event"] == "start"
    ]
    assert [(e["job"], sorted(e["gpus"])) for e in starts] == planned  # order and GPUs
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_jobs"] == len(JOBS) and summary["failed_jobs"] == 0
    assert summary["planned_makespan"] == pytest.approx(plan.makespan)
    config = json.loads((out / "config.json").read_text())
    assert config["resolved"]["backend"] == "live-planned"
    assert config["resolved"]["model"] == "rar"
    pids = [int(p.read_text()) for p in marks.glob("pid-*")]
    assert len(pids) == sum(j[1] for j in JOBS) and not any(alive(p) for p in pids)


def test_live_model_jobs_run_only_the_planners_and_mixed_files_are_refused(tmp_path) -> None:
    cluster, jobs, marks = _write(tmp_path)
    res = _live(tmp_path, cluster, jobs, "--policy", "ada-srsf")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "sjf-bco" in res.stderr and "Traceback" not in res.stderr
    res = _live(tmp_path, cluster, jobs, "--policy", "sjf-bco", "--set", "model=wang")
    assert res.returncode == 2 and "real processes execute the plan" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    text = jobs.read_text().replace("iterations = 50\n", "", 1).replace("size_mb = 200.0\n", "")
    text = text.replace("t_forward = 0.05\nt_backward = 0.0\n\n[[jobs]]\njob_id = 3", "\n[[jobs]]\njob_id = 3")  # fmt: skip
    mixed = tmp_path / "mixed.toml"
    mixed.write_text(text)
    res = _live(tmp_path, cluster, mixed, "--policy", "sjf-bco")
    assert res.returncode == 2 and "job 2 has no model" in res.stderr, res.stderr
    assert not list(marks.iterdir())  # nothing started


@pytest.mark.parametrize(
    ("row", "field", "says"),
    [
        ("iterations = 10\nt_forward = 0.1", "size_mb", "missing size_mb"),
        ("iterations = 0\nsize_mb = 1.0\nt_forward = 0.1", "iterations", ">= 1"),
        ("iterations = 5\nsize_mb = -1.0\nt_forward = 0.1", "size_mb", ">= 0 MB"),
        ("iterations = 5\nsize_mb = 1.0\nt_forward = 0.0", "t_forward", "> 0 seconds"),
        ('iterations = 5\nsize_mb = 1.0\nt_forward = 0.1\napp = "cifar10"', "app", "not both"),
        ('iterations = 5\nsize_mb = "x"\nt_forward = 0.1', "size_mb", ""),
    ],
)
def test_bad_model_fields_name_file_line_and_field(tmp_path, row, field, says) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(f'[[jobs]]\narrival = 0\ngpus = 1\ncommand = ["true"]\n{row}\n')
    with pytest.raises(InputError) as e:
        read_live_jobs(str(path))
    assert e.value.field == f"jobs[0].{field}" and str(path) in str(e.value)
    assert e.value.line is not None and says in e.value.message


def test_model_columns_in_a_csv_job_file(tmp_path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,gpus,command,iterations,size_mb,t_forward\n0,2,true,7,3.5,0.25\n")
    (job,) = read_live_jobs(str(path))
    assert (job.iterations, job.size_mb, job.t_forward, job.t_backward) == (7, 3.5, 0.25, None)
    (spec,) = to_model_specs([job], 1.0)
    assert spec.iterations == 7 and spec.model.size_mb == 3.5
    assert spec.model.t_compute == 0.25


def test_the_example_plan_file_matches_its_commands_and_plans() -> None:
    """examples/testbed/jobs-plan.toml: every job's model fields are its command's own
    (--iters, --mb, --compute-s), and sjf-bco plans it on the testbed's 4 × 2 cluster."""
    jobs = read_live_jobs(str(ROOT / "examples/testbed/jobs-plan.toml"))
    assert len(jobs) == 4
    for j in jobs:
        arg = dict(zip(j.command[2::2], j.command[3::2], strict=False))
        assert j.iterations == int(arg["--iters"]) and j.size_mb == float(arg["--mb"])
        assert j.t_forward == float(arg["--compute-s"])
    cluster = Cluster.homogeneous(4, 2)
    sim = build_simulator(cluster, to_model_specs(jobs, 1.0), "sjf-bco")
    plan = sim.policy.plan  # type: ignore[attr-defined]
    assert sorted(e.job_id for e in plan.entries) == [0, 1, 2, 3]
    assert all(len(e.gpus) == j.gpus for e in plan.entries for j in jobs if j.job_id == e.job_id)
