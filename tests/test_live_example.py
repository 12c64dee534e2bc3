"""examples/live/train.py as the scheduler runs it: a real process with the live-mode
environment that reports, checkpoints, stops on SIGTERM or the stop file after saving, and
resumes from its checkpoint (not from step 0) with the same result as an uninterrupted run."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ddlsched.parsing import load_json

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "live" / "train.py"
DDP = ROOT / "examples" / "live" / "ddp_train.py"
TIMEOUT = 30


def pythonpath() -> str:
    """This checkout's src first, then whatever the test run had (a torch installed aside)."""
    return os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)


class Job:
    """One attempt of a job: train.py started in its own process group with the variables
    ddlsched sets; ended by its group if a test leaves it running."""

    def __init__(self, tmp: Path, *args: str, attempt: int = 0, **env: str) -> None:
        self.progress = tmp / f"progress.{attempt}.{env.get('RANK', '0')}.jsonl"
        self.stop_file = tmp / "STOP"
        self.ckpt_dir = tmp / "ckpt"
        self.ckpt_dir.mkdir(exist_ok=True)
        full = {
            k: v for k, v in os.environ.items() if not k.startswith("DDLSCHED_") and k != "RANK"
        }
        full.update(
            PYTHONPATH=pythonpath(),
            DDLSCHED_JOB_ID="4",
            DDLSCHED_ATTEMPT=str(attempt),
            DDLSCHED_CHECKPOINT_DIR=str(self.ckpt_dir),
            DDLSCHED_PROGRESS=str(self.progress),
            DDLSCHED_STOP=str(self.stop_file),
            **env,
        )
        self.proc = subprocess.Popen(
            [sys.executable, str(TRAIN), *args],
            env=full,
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def reports(self) -> list[dict]:
        if not self.progress.exists():
            return []
        text = self.progress.read_text()
        lines = text.splitlines()[: text.count("\n")]  # complete lines only
        return [load_json(line, str(self.progress)) for line in lines]

    def wait_for_step(self, step: int) -> None:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            rows = self.reports()
            if rows and (rows[-1]["step"] or 0) >= step:
                return
            assert self.proc.poll() is None, "the job ended early"
            time.sleep(0.02)
        pytest.fail(f"no report of step {step} within {TIMEOUT} s")

    def finish(self) -> tuple[int, str]:
        try:
            out, _ = self.proc.communicate(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        assert self.proc.poll() is not None
        return self.proc.returncode, out


def checkpoint(job: Job) -> dict[str, np.ndarray]:
    data = (job.ckpt_dir / "train.npz").read_bytes()
    with np.load(io.BytesIO(data)) as f:
        return {k: f[k].copy() for k in f.files}


def test_it_trains_reports_every_step_and_checkpoints(tmp_path):
    job = Job(tmp_path, "--steps", "120", "--batch-size", "16", "--checkpoint-every", "50")
    rc, out = job.finish()
    assert rc == 0, out
    assert "done: steps 0..120" in out
    rows = job.reports()
    assert rows[0]["step"] == 0 and rows[0]["event"] == "start" and rows[0]["attempt"] == 0
    assert [r["step"] for r in rows] == list(range(121))
    assert [r["samples"] for r in rows[1:]] == [16 * s for s in range(1, 121)]
    times = [r["time"] for r in rows]
    assert times == sorted(times)
    losses = [r["loss"] for r in rows[1:]]
    assert all(np.isfinite(losses))
    assert np.mean(losses[-20:]) < 0.8 * np.mean(losses[:20]), "gradient descent learns"
    state = checkpoint(job)
    assert int(state["step"]) == 120 and int(state["samples"]) == 16 * 120
    assert sorted(p.name for p in job.ckpt_dir.iterdir()) == ["train.npz"]


def test_the_last_report_says_done_and_a_late_sigterm_cannot_kill_it(tmp_path):
    # a stop that crosses the exit is read as a finish when the last report says done and the
    # exit is 0 (docs/live.md); after its last step SIGTERM is ignored (it could otherwise kill
    # the interpreter while it shuts down: exit -15, and the job would be run again)
    job = Job(tmp_path, "--steps", "5", "--step-time", "1")
    job.wait_for_step(5)
    os.killpg(job.proc.pid, signal.SIGTERM)
    rc, out = job.finish()
    assert rc == 0 and "done: steps 0..5" in out, out
    assert [r.get("done") for r in job.reports()] == [None, False, False, False, False, True]


def test_sigterm_checkpoints_and_a_restart_resumes_from_that_step(tmp_path):
    args = ("--steps", "300", "--checkpoint-every", "1000")
    first = Job(tmp_path, *args, "--step-time", "0.02")
    first.wait_for_step(20)
    os.killpg(first.proc.pid, signal.SIGTERM)
    rc, out = first.finish()
    assert rc == 0, out
    assert "stopped at step" in out
    stopped_at = first.reports()[-1]["step"]
    assert 20 <= stopped_at < 300
    assert int(checkpoint(first)["step"]) == stopped_at  # saved on the stop request

    second = Job(tmp_path, *args, attempt=1)
    rc, out = second.finish()
    assert rc == 0, out
    rows = second.reports()
    assert rows[0]["step"] == stopped_at and rows[0]["attempt"] == 1  # not from 0
    assert rows[1]["step"] == stopped_at + 1 and rows[-1]["step"] == 300
    assert rows[1]["samples"] == (stopped_at + 1) * 32

    # weights and random state were checkpointed: the same result as one uninterrupted run
    other = tmp_path / "uninterrupted"
    other.mkdir()
    whole = Job(other, *args)
    assert whole.finish()[0] == 0
    resumed, straight = checkpoint(second), checkpoint(whole)
    for name in ("w1", "b1", "w2", "b2"):
        np.testing.assert_array_equal(resumed[name], straight[name])


def test_the_stop_file_stops_it_after_a_checkpoint(tmp_path):
    job = Job(tmp_path, "--steps", "1000", "--step-time", "0.02", "--checkpoint-every", "1000")
    job.wait_for_step(5)
    job.stop_file.touch()
    rc, out = job.finish()
    assert rc == 0 and "stopped at step" in out, out
    step = int(checkpoint(job)["step"])
    assert step == job.reports()[-1]["step"] and 5 <= step < 1000


def test_a_finished_job_started_again_exits_at_once(tmp_path):
    assert Job(tmp_path, "--steps", "30").finish()[0] == 0
    job = Job(tmp_path, "--steps", "30", attempt=1)
    rc, out = job.finish()
    assert rc == 0, out
    assert [r["step"] for r in job.reports()] == [30]


def test_the_scheduler_batch_size_and_ranks(tmp_path):
    job = Job(tmp_path, "--steps", "10", DDLSCHED_BATCH_SIZE="96")
    assert job.finish()[0] == 0
    assert job.reports()[-1]["samples"] == 960
    # rank 1 of 2 trains its shard but neither reports nor checkpoints (rank 0 does)
    other = tmp_path / "rank1"
    other.mkdir()
    job = Job(other, "--steps", "10", RANK="1", WORLD_SIZE="2")
    rc, out = job.finish()
    assert rc == 0, out
    assert job.reports() == [] and list(job.ckpt_dir.iterdir()) == []


def test_it_runs_by_hand_outside_ddlsched(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDLSCHED_")}
    env["PYTHONPATH"] = pythonpath()
    r = subprocess.run(
        [sys.executable, str(TRAIN), "--steps", "20"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 0, r.stderr
    assert "done: steps 0..20" in r.stdout
    assert list(tmp_path.iterdir()) == []  # no checkpoint dir given: nothing written


def test_bad_arguments_are_refused(tmp_path):
    r = subprocess.run(
        [sys.executable, str(TRAIN), "--checkpoint-every", "0"],
        env={**os.environ, "PYTHONPATH": pythonpath()},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert r.returncode == 2 and "--checkpoint-every" in r.stderr


def test_the_ddp_example_runs_when_torch_is_installed(tmp_path):
    pytest.importorskip("torch")  # not a dependency of ddlsched
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDLSCHED_")}
    progress = tmp_path / "p.jsonl"
    env.update(
        PYTHONPATH=pythonpath(),
        DDLSCHED_JOB_ID="1",
        DDLSCHED_PROGRESS=str(progress),
        DDLSCHED_CHECKPOINT_DIR=str(tmp_path),
        CUDA_VISIBLE_DEVICES="",
    )
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        env.pop(k, None)
    for steps, first in ((20, 0), (30, 20)):
        r = subprocess.run(
            [sys.executable, str(DDP), "--steps", str(steps), "--checkpoint-every", "10"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        rows = [json.loads(line) for line in progress.read_text().splitlines()]
        starts = [row for row in rows if row.get("event") == "start"]
        assert starts[-1]["step"] == first and rows[-1]["step"] == steps


def test_the_tiresias_example_settings_preempt_without_thrashing():
    """examples/live/sim_vs_live.sh's Tiresias settings (docs/live.md "Sim vs live"): a 4-GPU
    job runs at least 10 s before it is demoted, and the example's jobs, simulated on their
    estimates with a live-like restart start-up, are preempted a few times, each at most once
    (0.002 GPU-hours demoted a 4-GPU job after 1.8 s: 6 preemptions of 7 jobs)."""
    import re

    from ddlsched.api import simulate
    from ddlsched.core.cluster_io import load_cluster
    from ddlsched.live.jobfile import read_live_jobs
    from ddlsched.live.run import to_specs
    from ddlsched.settings import Settings

    script = (ROOT / "examples" / "live" / "sim_vs_live.sh").read_text()
    (line,) = [x for x in script.splitlines() if "tiresias_thresholds=" in x]
    interval = re.search(r"interval=([0-9.]+)", line).group(1)
    threshold = re.search(r"tiresias_thresholds=([0-9.]+)", line).group(1)
    assert f"`tiresias_thresholds={threshold}` GPU-hours" in (ROOT / "docs" / "live.md").read_text()
    jobs = read_live_jobs(ROOT / "examples" / "live" / "jobs.toml")
    widest = max(j.gpus for j in jobs)
    assert widest == 4 and float(threshold) * 3600 / widest >= 10.0

    settings = Settings.from_mapping(
        {"interval": interval, "tiresias_thresholds": threshold, "restart_delay": "2"}
    )
    cluster = load_cluster(str(ROOT / "examples" / "live" / "cluster-2x2.toml"))
    res = simulate(cluster, to_specs(jobs, 1.0), "tiresias", settings=settings)
    preempted = {j.job_id: j.preemptions for j in res.jobs}
    assert 1 <= sum(preempted.values()) <= 3 and max(preempted.values()) == 1, preempted
    assert preempted[next(j.job_id for j in jobs if j.gpus == widest)] == 1  # it is demoted


def test_pace_mode_steps_at_the_profiles_time_for_its_allocation_until_its_samples(
    tmp_path: Path,
):
    """``--pace APP``: each step lasts the profile's iteration time for the job's GPUs and
    batch (× --pace-scale), and the job ends once it has seen --samples samples."""
    from ddlsched.perf.builtin_apps import builtin_profiles

    app = builtin_profiles()["cifar10"]
    step = 0.5 * app.iteration_time((2,), app.batch_config(2, 256))  # ≈ 0.02 s
    job = Job(
        tmp_path,
        *("--pace", "cifar10", "--pace-scale", "0.5", "--samples", "5120"),
        WORLD_SIZE="2",
        RANK="0",
        DDLSCHED_GPUS="0,1",
        DDLSCHED_BATCH_SIZE="256",
    )
    out, _ = job.proc.communicate(timeout=TIMEOUT)
    assert job.proc.returncode == 0, out
    rows = [r for r in job.reports() if "loss" in r]
    assert rows[-1]["step"] == 20 and rows[-1]["samples"] == 5120  # 5120 / 256
    per_step = (rows[-1]["time"] - rows[0]["time"]) / (len(rows) - 1)
    assert step * 0.95 <= per_step <= step * 1.5, (per_step, step)
