"""``ddlsched replay`` of live application-profile runs (``ddlsched.replay_profile``): each job
calibrated in its profile's units, replayed under any policy (pollux and the sharing ones too).
The live run directories here are written by the tests."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ddlsched.perf.builtin_apps import builtin_profiles

APP = builtin_profiles()["cifar10"]


def t_iter(gpus: int, batch: int) -> float:
    """The profile's seconds per step on ``gpus`` GPUs of one server with total ``batch``."""
    return APP.iteration_time((gpus,), APP.batch_config(gpus, batch))


def fake_app_live(tmp_path: Path, policy: str = "pollux", *, scale: float = 2.0) -> Path:
    """A live run of 3 cifar10 jobs (batch 128) on one server of 2 GPUs, written by hand, each
    step lasting ``scale`` × the profile's. Job 0: 1 GPU, stopped at step 40, resumed on 2 GPUs
    with batch 256 (a Pollux resize), 40 steps more; jobs 1 and 2: 1 GPU, 50 and 30 steps."""
    d = tmp_path / "live"
    d.mkdir()
    (tmp_path / "two.toml").write_text('name = "two"\n[[servers]]\nnum_gpus = 2\n')
    entries = []
    for i, arrival in enumerate((0.0, 1.0, 2.0)):
        entries.append(
            f'[[jobs]]\njob_id = {i}\narrival = {arrival}\ngpus = 1\napp = "cifar10"\n'
            f'batch_size = 128\ncommand = ["python3", "train.py"]\n'
        )
    (tmp_path / "jobs.toml").write_text("\n".join(entries))
    cfg = {
        "mode": "live",
        "jobs": str(tmp_path / "jobs.toml"),
        "cluster": str(tmp_path / "two.toml"),
        "policy": policy,
        "seed": 0,
        "time_scale": 1.0,
        "poll_interval": 0.2,
        "resolved": {"backend": "live-profile", "policy": policy},
        "settings": {"policy": {"interval": 2.0}},
    }
    (d / "config.json").write_text(json.dumps(cfg))
    summary = {"run_id": "00ff", "mean_startup_s": 0.5, "mean_stop_s": 0.3, "elastic": True}
    (d / "summary.json").write_text(json.dumps(summary))
    s1, s2 = scale * t_iter(1, 128), scale * t_iter(2, 256)
    # job 0: launched 0, first report at 0.6 with 1 step made (start-up 0.6 − s1)
    stop0 = 0.6 + 39 * s1  # stop asked at step 40 (reached at once)
    again = stop0 + 0.4  # its 0.4 s stop; restarted on 2 GPUs
    first1 = again + 1.0 + 2 * s2  # 2 steps made before the poll saw it: start-up 1.0
    done0 = first1 + 38 * s2
    events = [
        ("start", 0, 0.0, {"attempt": 0, "gpus": [0], "batch": "128"}),
        ("first_report", 0, 0.6, {"attempt": 0, "step": 1}),
        ("stop_requested", 0, stop0, {"attempt": 0, "reason": "resize"}),
        ("stopped", 0, stop0 + 0.4, {"step": 40}),
        ("start", 0, again, {"attempt": 1, "gpus": [0, 1], "batch": "256"}),
        ("first_report", 0, first1, {"attempt": 1, "step": 42}),
        ("finish", 0, done0, {"step": 80}),
        ("start", 1, done0, {"attempt": 0, "gpus": [0], "batch": "128"}),
        ("first_report", 1, done0 + 0.5, {"attempt": 0, "step": 0}),
        ("finish", 1, done0 + 0.5 + 50 * s1, {"step": 50}),
        ("start", 2, done0, {"attempt": 0, "gpus": [1], "batch": "128"}),
        ("first_report", 2, done0 + 0.3, {"attempt": 0, "step": 0}),
        ("finish", 2, done0 + 0.3 + 30 * s1, {"step": 30}),
    ]
    (d / "events.jsonl").write_text(
        "".join(json.dumps({"event": e, "job": j, "t": t, **x}) + "\n" for e, j, t, x in events)
    )
    ends = {0: done0, 1: done0 + 0.5 + 50 * s1, 2: done0 + 0.3 + 30 * s1}
    (d / "measured.csv").write_text(
        "arrival,num_gpus,duration,name\n"
        + "".join(f"{a},1,{ends[i] - a:.6f},live-{i}\n" for i, a in enumerate((0.0, 1.0, 2.0)))
    )
    return d


def test_calibration_in_the_profiles_units(tmp_path: Path):
    from ddlsched.replay import read_live

    live = read_live(fake_app_live(tmp_path))
    assert live.profile is not None
    jobs = {j.job_id: j for j in live.profile}
    # work: samples over attempts (40 steps × 128, then 40 × 256 from the checkpoint at 40)
    assert jobs[0].work_samples == 40 * 128 + 40 * 256
    assert (jobs[1].work_samples, jobs[2].work_samples) == (50 * 128, 30 * 128)
    for j in jobs.values():  # measured ÷ profile step time, whatever the configuration
        assert j.scale == pytest.approx(2.0, rel=1e-4)
        assert (j.application, j.batch_size, j.num_gpus) == ("cifar10", 128, 1)
    # start-ups without the steps made before the poll; job 0's restart is its own, the
    # others get the run's mean restart (job 0's)
    assert jobs[0].first_startup == pytest.approx(0.6 - 2 * t_iter(1, 128), abs=1e-5)
    assert jobs[0].restart_delay == pytest.approx(1.0, abs=1e-5)
    assert jobs[1].restart_delay == pytest.approx(1.0, abs=1e-5)
    assert (jobs[1].first_startup, jobs[2].first_startup) == (0.5, 0.3)
    # stops: job 0's own; the run's mean_stop_s for the others
    assert jobs[0].stop_delay == pytest.approx(0.4) and jobs[1].stop_delay == 0.3
    assert live.restarts == {0: [pytest.approx(1.0, abs=1e-5)]}


def test_replay_under_fifo_runs_the_calibrated_work(tmp_path: Path):
    from ddlsched.cli import main

    live = fake_app_live(tmp_path, "fifo")
    out = tmp_path / "rp"
    assert main(["replay", str(live), "--policy", "fifo", "--out", str(out), "--quiet"]) == 0
    rows = {int(r["job_id"]): r for r in csv.DictReader(open(out / "jobs.csv"))}
    # fifo on 2 GPUs: job 0 on one GPU from 0 (start-up, then 40 × 128 + 40 × 256 samples at
    # one GPU's pace, 128 per step: 120 steps), job 1 on the other from 1 (50 steps)
    s1 = 2.0 * t_iter(1, 128)
    start0 = 0.6 - 2 * t_iter(1, 128)
    assert float(rows[0]["finish"]) == pytest.approx(start0 + 120 * s1, abs=0.11)
    assert float(rows[1]["finish"]) == pytest.approx(1.0 + 0.5 + 50 * s1, abs=0.11)
    assert float(rows[2]["start"]) == pytest.approx(float(rows[1]["finish"]), abs=1e-6)
    config = json.loads((out / "config.json").read_text())
    assert config["workload"] == "replay-jobs.csv" and config["poll_interval"] == 0.2
    assert (out / "replay-jobs.csv").read_text().startswith("job_id,name,arrival,num_gpus")


def test_a_job_on_more_gpus_or_a_larger_batch_runs_at_that_configurations_pace(tmp_path: Path):
    """The executor: the work's pace follows the configuration the policy starts a job with;
    a restart costs the job's restart start-up, not its first; sharing does not slow it."""
    from ddlsched.core.cluster import Cluster
    from ddlsched.core.protocols import JobConfig
    from ddlsched.core.simulator import Simulator
    from ddlsched.replay_profile import ProfileJob, ReplayProfileExecutor

    def pj(i: int) -> ProfileJob:
        return ProfileJob(i, 0.0, 1, "cifar10", 128, 256.0 * 100, 1.0, 0.5, 2.0, 0.0)

    class Plan:
        """Job 0 on GPUs 0, 1 with batch 256; job 1 shares GPU 1; job 0 moves at t = 1."""

        name = "plan"

        def attach(self, sim: Simulator) -> None:
            sim.at(1.0, self.move, sim)

        def move(self, sim: Simulator) -> None:
            sim.resize(sim.running[0], (0,), JobConfig(batch_size=128))

        def schedule(self, sim: Simulator) -> None:
            if sim.now == 0.0 and len(sim.queue) == 2:
                j0, j1 = sim.queue
                sim.resize(j0, (0, 1), JobConfig(batch_size=256))
                sim.start(j1, (1,))

    jobs = [pj(0), pj(1)]
    ex = ReplayProfileExecutor({"cifar10": APP}, {j.job_id: j for j in jobs})
    sim = Simulator(
        Cluster.homogeneous(1, 2), [j.spec() for j in jobs], Plan(), ex, max_jobs_per_gpu=2
    )
    sim.run()
    j0, j1 = sim.jobs
    # job 1 alone-paced (sharing GPU 1 does not slow it): 0.5 + 200 steps of 128
    assert j1.finish == pytest.approx(0.5 + 200 * t_iter(1, 128))
    # job 0: 0.5 s of 1 s on 2 GPUs at batch 256 → 0.5 / t(2, 256) steps of 256, then its
    # 2 s restart start-up and the rest at one GPU's pace
    done = 0.5 / t_iter(2, 256) * 256
    assert j0.finish == pytest.approx(1.0 + 2.0 + (25600 - done) / 128 * t_iter(1, 128))


@pytest.mark.parametrize("policy", ["pollux", "sjf-bsbf", "sjf-ffs", "fifo", "sjf", "tiresias"])
def test_every_policy_replays_an_elastic_live_run(tmp_path: Path, policy: str):
    from ddlsched.cli import main

    live = fake_app_live(tmp_path, "pollux")
    out = tmp_path / "rp"
    argv = ["replay", str(live), "--policy", policy, "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = list(csv.DictReader(open(out / "jobs.csv")))
    assert len(rows) == 3 and all(float(r["finish"]) > 0 for r in rows)
    assert json.loads((out / "config.json").read_text())["live_policy"] == "pollux"
    from ddlsched.check import check_paths

    (res,) = check_paths([out])  # checked against its replay-jobs.csv, not only a note
    assert res.ok and not res.notes, (res.violations, res.notes)


def test_a_missing_job_file_is_one_line_naming_config_json(tmp_path: Path, capsys):
    from ddlsched.cli import main

    live = fake_app_live(tmp_path)
    (tmp_path / "jobs.toml").unlink()
    out = tmp_path / "rp"
    assert main(["replay", str(live), "--policy", "fifo", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(live / "config.json") in err and "job file" in err


def test_train_py_paces_its_steps_by_the_profile():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "examples" / "live" / "train.py"
    spec = importlib.util.spec_from_file_location("train_example", path)
    assert spec is not None and spec.loader is not None
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    step = train.pace_step_time("cifar10", 0.5, [0, 1], 2, 256)
    assert step == pytest.approx(0.5 * t_iter(2, 256))
    # GPUs 1 and 2 on servers of 2: one on each (a slower placement than both on one)
    across = train.pace_step_time("cifar10", 1.0, [1, 2], 2, 256)
    assert across == pytest.approx(APP.iteration_time((1, 1), APP.batch_config(2, 256)))
    args = train.parse_args(["--pace", "cifar10", "--samples", "1000"])
    assert (args.pace, args.samples, args.pace_scale) == ("cifar10", 1000, 1.0)


def test_pollux_rounds_are_decided_a_loop_iteration_after_their_instant(tmp_path: Path):
    """Live, a round at a job's arrival instant is decided a little later: the job's age is
    > 0 and Pollux's restart factor gives it GPUs there. At age 0 (exactly at the instant) the
    factor is 0 and the job would wait a whole round."""
    from ddlsched.cli import main
    from ddlsched.replay_profile import ROUND_LAG

    live = fake_app_live(tmp_path, "pollux")
    out = tmp_path / "rp"
    assert main(["replay", str(live), "--policy", "pollux", "--out", str(out), "--quiet"]) == 0
    rows = {int(r["job_id"]): r for r in csv.DictReader(open(out / "jobs.csv"))}
    assert float(rows[0]["start"]) == pytest.approx(ROUND_LAG)  # arrived at 0, the first round
    assert float(rows[1]["start"]) == pytest.approx(2 + 2 * ROUND_LAG)  # the next round


def test_set_poll_interval_is_the_replays_engine_not_a_profile_setting(tmp_path: Path):
    from ddlsched.cli import main

    live = fake_app_live(tmp_path, "fifo")
    out = tmp_path / "rp"
    argv = ["replay", str(live), "--policy", "fifo", "--set", "poll_interval=0.5"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "config.json").read_text())["poll_interval"] == 0.5
    ends = [float(r["finish"]) for r in csv.DictReader(open(out / "jobs.csv"))]
    assert all(abs(e / 0.5 - round(e / 0.5)) < 1e-6 for e in ends)  # ends seen at its polls
