"""Exactly-once outcomes of live jobs with real processes (issue #26, "What was seen"): each race
the issue names, on plain subprocesses (``ddlsched live --local`` and ``ddlsched serve
--local``), bounded in time, loopback only, and nothing left behind.

- a job whose work ends while the scheduler waits out another job's grace is finished, never
  "stopped" and run again (item 1, the issue's own scenario);
- a job that crashes while it stops is stopped (preempted), not counted as a failure;
- a job that reports ``done=True`` when asked to stop is finished, never restarted;
- a cancel of a job that finishes its work meanwhile records it finished and the service goes
  on (item 2: it used to exit with "cannot finish job 2: it is cancelled");
- a cancel during a launch (the process runs, its first report has not come) ends the process,
  records the job cancelled once, never starts it again, and its GPUs go to the next job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from _processes import tagged_left
from test_live_service import ENDED, home, serve  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

JOB = """\
import os, sys, time
import ddlsched.live as live

mode, steps, dt = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ck = os.path.join(live.checkpoint_dir(), "step")
raw = live.load_checkpoint(ck)
step = int(raw) if raw else 0
print(f"attempt {live.attempt()} starts at step {step}", flush=True)
if mode == "slow-start":  # a long start-up (imports, data): runs, reports nothing for a while
    time.sleep(steps * dt)
if mode == "ignore":  # reports once, then works without ever looking at should_stop
    live.report(step=step)
    time.sleep(steps * dt)
    print("finished", flush=True)
    raise SystemExit(0)
while step < steps:
    time.sleep(dt)
    step += 1
    live.report(step=step)
    if live.should_stop():
        live.save_checkpoint(ck, str(step))
        if mode == "crash-on-stop":
            raise SystemExit(3)
        if mode == "done-on-stop":  # its last step: the work is done, and it says so
            live.report(step=step, done=True)
            print("finished", flush=True)
        raise SystemExit(0)
print("finished", flush=True)
"""


def _live(tmp: Path, jobs: list[dict], *args: str, timeout: float = 120) -> Path:
    (tmp / "job.py").write_text(JOB)
    lines = ["arrival,gpus,command"]
    for j in jobs:
        lines.append(f'{j["arrival"]},{j["gpus"]},"{sys.executable} job.py {j["args"]}"')
    (tmp / "jobs.csv").write_text("\n".join(lines) + "\n")
    env = dict(os.environ, PYTHONPATH=str(SRC))
    out = tmp / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "live", "--local", "--workload", "jobs.csv",
         "--out", str(out), *args],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "check", str(out)],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    return out


def _events(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]


def _printed(out: Path, job: int, text: str) -> int:
    return sum(
        log.read_text().count(text) for log in (out / "jobs" / str(job)).glob("attempt-*/*.log")
    )


def _exactly_once(ev: list[dict], jobs: int) -> None:
    for j in range(jobs):
        mine = [e for e in ev if e.get("job") == j]
        finishes = [i for i, e in enumerate(mine) if e["event"] == "finish"]
        assert len(finishes) == 1, (j, mine)
        assert not any(e["event"] == "start" for e in mine[finishes[0] :]), (j, mine)


@pytest.fixture
def tag():
    """A tag on the jobs' command lines; afterwards none of them may be left running."""
    t = f"race{uuid.uuid4().hex[:8]}"
    yield t
    assert tagged_left(t) == [], "job processes left running"


def _cluster(tmp: Path, gpus: int) -> str:
    path = tmp / "cluster.toml"
    path.write_text(f'name = "one"\n[[servers]]\nnum_gpus = {gpus}\n')
    return str(path)


def test_a_job_that_finishes_during_another_jobs_grace_is_not_run_again(tmp_path, tag) -> None:
    """The issue's scenario: 1 server × 2 GPUs; A reports once then works 8 s ignoring stops,
    B has 8 steps of 0.5 s and honours stops, both at t=0; C and D (2 steps) at t=2; Tiresias
    demotes A and B after ≈ 1 s and preempts them for C and D. Before, the loop blocked in
    A's grace while B finished, then "stopped" B (exit 0, step 8) and ran it again."""
    jobs = [
        {"arrival": 0, "gpus": 1, "args": f"ignore 8 1.0 {tag}"},
        {"arrival": 0, "gpus": 1, "args": f"steps 8 0.5 {tag}"},
        {"arrival": 2, "gpus": 1, "args": f"steps 2 0.5 {tag}"},
        {"arrival": 2, "gpus": 1, "args": f"steps 2 0.5 {tag}"},
    ]
    out = _live(
        tmp_path, jobs, "--cluster", _cluster(tmp_path, 2), "--policy", "tiresias",
        "--set", "interval=1", "--set", "tiresias_thresholds=0.0003", "--grace", "4",
    )  # fmt: skip
    ev = _events(out)
    _exactly_once(ev, 4)
    for j in range(4):
        assert _printed(out, j, "finished") == 1, (j, [e for e in ev if e.get("job") == j])
    # B was asked to stop while it ran and resumed from its checkpoint, not from step 0
    starts = [e for e in ev if e.get("job") == 1 and e["event"] == "start"]
    assert len(starts) >= 2
    # C and D did not wait for A's grace period: they ran on B's GPU as soon as B stopped
    first_c = min(e["t"] for e in ev if e.get("job") in (2, 3) and e["event"] == "start")
    assert first_c < 2 + 4, first_c


def _preempted_once(tmp_path: Path, tag: str, mode: str, steps: int) -> Path:
    """Job 0 (``mode``) alone on one GPU, demoted by Tiresias after ≈ 0.7 s and stopped for
    job 1 (2 short steps) arriving at 1.5 s."""
    jobs = [
        {"arrival": 0, "gpus": 1, "args": f"{mode} {steps} 0.25 {tag}"},
        {"arrival": 1.5, "gpus": 1, "args": f"steps 2 0.25 {tag}"},
    ]
    return _live(
        tmp_path, jobs, "--cluster", _cluster(tmp_path, 1), "--policy", "tiresias",
        "--set", "interval=0.5", "--set", "tiresias_thresholds=0.0002", "--grace", "4",
    )  # fmt: skip


def test_a_crash_while_stopping_is_a_preemption_not_a_failure(tmp_path, tag) -> None:
    out = _preempted_once(tmp_path, tag, "crash-on-stop", 12)
    ev = _events(out)
    _exactly_once(ev, 2)
    mine = [e for e in ev if e.get("job") == 0]
    stopped = [e for e in mine if e["event"] == "stopped"]
    assert stopped and stopped[0]["exit_codes"] == [3], mine
    assert not [e for e in mine if e["event"] in ("crashed", "failed")], mine
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed_jobs"] == 0 and summary["attempts_restarted"] >= 1


def test_a_job_done_when_asked_to_stop_is_finished_not_restarted(tmp_path, tag) -> None:
    out = _preempted_once(tmp_path, tag, "done-on-stop", 40)
    ev = _events(out)
    _exactly_once(ev, 2)
    mine = [e for e in ev if e.get("job") == 0]
    assert [e["event"] for e in mine].count("start") == 1, mine
    finish = next(e for e in mine if e["event"] == "finish")
    assert finish.get("during") == "preempt", finish
    assert _printed(out, 0, "finished") == 1
    rows = (out / "jobs.csv").read_text().splitlines()
    assert len(rows) == 3  # both jobs recorded, job 0 with no preemption left on its record


def test_a_cancel_that_meets_a_finished_job_records_it_finished_and_serves_on(home) -> None:  # noqa: F811
    path, tag, _ = home
    (path / "race.py").write_text(JOB)
    svc = serve(home)
    cmd = [sys.executable, "race.py", "done-on-stop", "400", "0.05", tag]
    (job_id,) = svc.submit({"command": cmd, "gpus": 1})
    deadline = time.monotonic() + 30
    while (
        svc.jobs()[job_id]["state"] != "running"
        or not (path / "state" / "jobs" / str(job_id) / "attempt-0" / "progress.0.jsonl").exists()
    ):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    status, doc = svc.call("DELETE", f"/jobs/{job_id}")
    assert status == 200, doc
    svc.wait_ended([job_id], timeout=30)
    # cancelled at once; finished once its processes show that the work was done
    deadline = time.monotonic() + 15
    while svc.jobs()[job_id]["state"] != "finished":
        assert time.monotonic() < deadline, svc.jobs()[job_id]
        time.sleep(0.1)
    events = [e["event"] for e in svc.call("GET", f"/jobs/{job_id}")[1]["events"]]
    assert events.count("finish") == 1 and "cancel" in events, events
    # the service is still there and still schedules
    (again,) = svc.submit({"command": [sys.executable, "race.py", "steps", "2", "0.05", tag],
                           "gpus": 1})  # fmt: skip
    assert svc.wait_ended([again], timeout=30)[again]["state"] == "finished"
    assert svc.proc is not None and svc.proc.poll() is None
    assert ENDED


def test_a_cancel_during_a_launch_ends_it_once_and_frees_its_gpus(home) -> None:  # noqa: F811
    path, tag, _ = home
    (path / "race.py").write_text(JOB)
    svc = serve(home)
    # its start-up takes 60 s: the cancel comes while the launch is under way
    (job_id,) = svc.submit(
        {"command": [sys.executable, "race.py", "slow-start", "1", "60", tag], "gpus": 1}
    )
    attempt = path / "state" / "jobs" / str(job_id) / "attempt-0"
    deadline = time.monotonic() + 30
    while "attempt 0 starts" not in "".join(p.read_text() for p in attempt.glob("*.log")):
        assert time.monotonic() < deadline, svc.jobs()[job_id]
        time.sleep(0.1)
    assert not list(attempt.glob("progress.*.jsonl"))  # not reported yet: still launching
    status, doc = svc.call("DELETE", f"/jobs/{job_id}")
    assert status == 200, doc
    assert svc.wait_ended([job_id], timeout=30)[job_id]["state"] == "cancelled"
    # the next job needs every GPU of the cluster, the cancelled job's one included
    whole = {"command": [sys.executable, "race.py", "steps", "2", "0.05", tag], "gpus": 8}
    (after,) = svc.submit(whole)
    assert svc.wait_ended([after], timeout=30)[after]["state"] == "finished"
    assert tagged_left(f"slow-start 1 60 {tag}", timeout=5) == []
    events = [e["event"] for e in svc.call("GET", f"/jobs/{job_id}")[1]["events"]]
    assert events.count("cancel") == 1 and "finish" not in events, events
    assert len(list(attempt.parent.glob("attempt-*"))) == 1, "started again after its cancel"
    assert svc.proc is not None and svc.proc.poll() is None
