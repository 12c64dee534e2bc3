"""A new policy in a single plugin file runs on every backend whose jobs it accepts (issue
#12, docs/design.md "Add a policy"): the same file, through ``--policy FILE.py:FACTORY``, on
model jobs at iteration level, at job level, under Yu's RAR model, on application-profile
jobs, on trace jobs and live (real processes). The planned backend is the planners' own
(they place jobs themselves; a policy object is never a planner). Each run passes
``ddlsched check`` and records which backend ran it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main

PLUGIN = '''
"""first-free: start waiting jobs in arrival order on the first idle GPUs that fit them."""


class FirstFree:
    name = "first-free"

    def attach(self, sim):
        pass

    def schedule(self, sim):
        for job in sorted(sim.queue, key=lambda j: (j.arrival, j.job_id)):
            free = [
                g for g in range(sim.cluster.num_gpus)
                if not sim.residents[g] and sim.fits(job, g)
            ]
            if len(free) >= job.num_gpus:
                sim.start(job, free[: job.num_gpus])


def factory():
    return FirstFree()
'''

MODEL_JOBS = "job_id,arrival,num_gpus,iterations,model\n0,0,2,50,resnet50\n1,1,4,30,vgg16\n2,2,8,20,lstm-ptb\n"
TRACE_JOBS = "arrival,num_gpus,duration\n0,4,30\n5,8,10\n6,2,20\n"
PROFILE_JOBS = (
    "name,time,application,num_replicas,batch_size\na,0,cifar10,2,128\nb,10,cifar10,1,256\n"
)


@pytest.fixture
def plugin(tmp_path: Path) -> str:
    p = tmp_path / "first_free.py"
    p.write_text(PLUGIN)
    return f"{p}:factory"


def _run(tmp_path: Path, name: str, plugin: str, workload: str, text: str, *extra: str) -> dict:
    w = tmp_path / f"{name}.csv"
    w.write_text(text)
    out = tmp_path / name
    args = ["run", "--cluster", "tiny", "--workload", str(w), "--policy", plugin, "--quiet"]
    assert main([*args, *extra, "--out", str(out)]) == 0, name
    assert main(["check", str(out)]) == 0, name
    return json.loads((out / "config.json").read_text())["resolved"]


@pytest.mark.parametrize(
    ("name", "text", "extra", "backend", "model"),
    [
        ("iteration", MODEL_JOBS, (), "model-iteration", "wang"),
        ("job-level", MODEL_JOBS, ("--set", "granularity=job"), "model-job-level", "wang"),
        ("rar", MODEL_JOBS, ("--set", "model=rar"), "model-job-level", "rar"),
        ("profile", PROFILE_JOBS, (), "profile", None),
        ("trace", TRACE_JOBS, (), "duration", None),
    ],
)
def test_one_plugin_file_runs_on_every_backend(
    plugin, tmp_path, name, text, extra, backend, model
) -> None:
    resolved = _run(tmp_path, name, plugin, name, text, *extra)
    assert resolved["backend"] == backend and resolved["policy"] == plugin
    assert resolved.get("model") == model


def test_and_live_on_real_processes(plugin, tmp_path) -> None:
    """The same file schedules real processes (``ddlsched live --local``: no Ray needed)."""
    train = Path(__file__).resolve().parent.parent / "examples" / "live" / "train.py"
    cmd = json.dumps([sys.executable, str(train), "--steps", "5", "--step-time", "0.02"])
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(
        "".join(
            f"[[jobs]]\narrival = {i}\ngpus = {g}\ncommand = {cmd}\n\n"
            for i, g in enumerate((2, 8, 1))
        )
    )
    out = tmp_path / "live"
    args = ["live", "--local", "--cluster", "tiny", "--workload", str(jobs), "--policy", plugin]
    assert main([*args, "--time-scale", "4", "--quiet", "--out", str(out)]) == 0
    assert main(["check", str(out)]) == 0
    resolved = json.loads((out / "config.json").read_text())["resolved"]
    assert resolved["backend"] == "live"
