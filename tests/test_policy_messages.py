"""A built-in policy given a workload it cannot run says which job kinds it runs on and which
kind the workload has (issue #11 §4 "Messages"), and a Pollux-format batch the profiles cannot
run names the workload file, the job and the field."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from _toys import toy_jobs

from ddlsched.api import simulate, simulate_named
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.errors import InputError

MODEL_POLICIES = "ada-srsf, srsf1, srsf2, srsf3, srsf, fifo-ff, sjf-bco, yu-ff, yu-ls, yu-rand"


@pytest.mark.parametrize(
    ("policy", "runs_on"),
    [
        ("tiresias", "application-profile and trace (duration) jobs"),
        ("fifo", "application-profile and trace (duration) jobs"),
        ("sjf", "application-profile and trace (duration) jobs"),
        ("sjf-bsbf", "application-profile and trace (duration) jobs"),
        ("pollux", "application-profile jobs"),
    ],
)
def test_profile_policies_on_a_model_workload(policy, runs_on):
    with pytest.raises(InputError) as e:
        simulate_named("wang20", "wang20", policy)
    text = str(e.value)
    assert "unknown" not in text
    assert f"policy '{policy}' cannot run model jobs (Wang/Yu), which workload wang20 has" in text
    assert f"it runs on {runs_on}" in text
    assert f"policies for model jobs (Wang/Yu): {MODEL_POLICIES}" in text


@pytest.mark.parametrize("policy", ["sjf-bco", "ada-srsf"])
def test_model_policies_on_a_profile_workload(policy):
    with pytest.raises(InputError) as e:
        simulate_named("luo24", "luo24", policy)
    text = str(e.value)
    assert (
        f"policy '{policy}' cannot run application-profile jobs, which workload luo24 has" in text
    )
    assert "it runs on model (Wang/Yu) jobs" in text
    assert "tiresias, fifo, sjf, sjf-ffs, sjf-bsbf, pollux" in text


@pytest.mark.parametrize("policy", ["pollux", "yu-ff", "srsf2"])
def test_other_policies_on_a_trace_workload(policy):
    trace = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)
    jobs = [JobSpec(0, 0.0, 1, 0, trace, duration=10.0)]
    with pytest.raises(InputError) as e:
        simulate(Cluster.homogeneous(1, 2), jobs, policy)
    text = str(e.value)
    assert f"policy '{policy}' cannot run trace (duration) jobs, which this workload has" in text
    assert "policies for trace (duration) jobs: " in text
    assert text.endswith("tiresias, fifo, sjf, sjf-ffs, sjf-bsbf")
    assert "max-min-fairness-perf" in text


def test_an_unknown_name_is_still_unknown():
    with pytest.raises(InputError) as e:
        simulate_named("wang20", "wang20", "tiresas")
    text = str(e.value)
    assert "unknown policy 'tiresas' (did you mean 'tiresias'?)" in text
    assert "see `ddlsched list`" in text


def test_the_cli_says_it_in_one_line(tmp_path: Path):
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "run", "--cluster", "wang20", "--workload"]
        + ["wang20", "--policy", "tiresias", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "cannot run model jobs (Wang/Yu), which workload wang20 has" in r.stderr
    assert not out.exists()


# ------------------------------------------------------------------ Pollux-format batches
def _workload(tmp_path: Path, row: str) -> Path:
    p = tmp_path / "w.csv"
    p.write_text("name,time,application,num_replicas,batch_size\n" + row + "\n")
    return p


def test_a_batch_too_large_names_the_file_job_and_field(tmp_path):
    w = _workload(tmp_path, "big,0,cifar10,6,99999999")
    with pytest.raises(InputError) as e:
        simulate_named("luo24", str(w), "fifo")
    assert (e.value.source, e.value.field) == (str(w), "batch_size")
    assert "job 0 'big' (cifar10): batch 99999999 on 6 replicas leaves no samples" in str(e.value)


def test_pollux_ncf_batch_outside_the_profiles_is_a_setting_error(tmp_path):
    # NCF's fixed batch (the artifact's quirk) of 10^8 on one GPU leaves a micro-batch below
    # the measured range: one line naming the setting (a ValueError traceback before)
    w = _workload(tmp_path, "n,0,ncf,1,32768")
    with pytest.raises(InputError) as e:
        simulate_named("luo24", str(w), "pollux", settings={"pollux_ncf_batch": "100000000"})
    assert (e.value.source, e.value.field) == ("--set", "pollux_ncf_batch")
    assert "outside the range" in str(e.value)


def test_a_toy_profile_batch_too_large(tmp_path):
    from _toys import toy_app

    from ddlsched.api import _check_batches

    jobs = toy_jobs("j,0,toy,1,4096\n", tmp_path)
    with pytest.raises(InputError, match=r"job 0 'j' \(toy\): batch 4096 on 1 replicas"):
        _check_batches(jobs, {"toy": toy_app()}, "toys")


# ------------------------------------------------------------------ live: what live runs
TRACE_LIVE = (
    "gavel-fifo, gavel-fifo-perf, max-min-fairness, max-min-fairness-perf, "
    "finish-time-fairness, finish-time-fairness-perf, min-total-duration-perf, "
    "tiresias, fifo, sjf"
)


def _trace_jobs() -> list[JobSpec]:
    trace = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)
    return [JobSpec(0, 0.0, 1, 0, trace, duration=10.0)]


@pytest.mark.parametrize("service", [False, True])
@pytest.mark.parametrize(
    ("policy", "start"),
    [
        ("nosuch", "unknown policy 'nosuch'; policies for the trace (duration) jobs of this "
         "workload: "),
        ("pollux", "policy 'pollux' cannot run trace (duration) jobs, which this workload has: "
         "it runs on application-profile jobs; policies for trace (duration) jobs: "),
    ],
    ids=["unknown", "other-kind"],
)  # fmt: skip
def test_live_lists_only_the_policies_live_runs_for_trace_jobs(policy, start, service):
    """Live trace jobs (``ddlsched live``, ``ddlsched serve``) refuse the GPU-sharing
    policies, so the message does not offer them."""
    from ddlsched.api import build_simulator
    from ddlsched.live.backend import LiveBackend
    from ddlsched.live.service.engine import ServiceBackend

    backend = (ServiceBackend if service else LiveBackend)(None)  # type: ignore[arg-type]
    with pytest.raises(InputError) as e:
        build_simulator(Cluster.homogeneous(1, 2), _trace_jobs(), policy, backend=backend)
    text = str(e.value)
    assert text.startswith(f"field 'policy': {start}{TRACE_LIVE}"), text
    assert "sjf-ffs" not in text and "sjf-bsbf" not in text
    assert str(pickle.loads(pickle.dumps(e.value))) == text  # e.g. from a sweep's workers
    with pytest.raises(InputError, match="policy 'sjf-ffs' shares GPUs"):
        build_simulator(Cluster.homogeneous(1, 2), _trace_jobs(), "sjf-ffs", backend=backend)


def test_live_cli_says_it_in_one_line(tmp_path: Path, capsys):
    import json

    from ddlsched.cli import main

    (tmp_path / "c.toml").write_text('name = "one"\n[[servers]]\nnum_gpus = 1\n')
    cmd = json.dumps([sys.executable, "-c", "pass"])
    jobs = f"[[jobs]]\njob_id = 0\narrival = 0\ngpus = 1\ncommand = {cmd}\nduration = 1.0\n"
    (tmp_path / "j.toml").write_text(jobs)
    out = tmp_path / "out"
    args = ["live", "--local", "--cluster", str(tmp_path / "c.toml"), "--out", str(out)]
    assert main([*args, "--workload", str(tmp_path / "j.toml"), "--policy", "tiresas"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(did you mean 'tiresias'?)" in err
    assert err.endswith(f"{TRACE_LIVE}; see `ddlsched list`\n") and not out.exists()
