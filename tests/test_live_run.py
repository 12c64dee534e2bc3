"""``ddlsched live`` end to end (issue #13): real training processes (examples/live/train.py)
scheduled by a built-in policy on a private local Ray with logical GPUs (2 servers × 2 GPUs).

Every test is bounded in time, talks only to loopback, and checks afterwards that no process
it caused is left: job processes carry a unique tag on their command line, and Ray's own
processes (raylet, gcs_server, workers) started during the test must be gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from _processes import cmdlines, run_cli

pytest.importorskip("ray")

# Its tests check that no Ray process other than their own appeared meanwhile: the file is in
# the ``ray`` group (tests/xdist_groups.py), so no other test that starts Ray runs beside it.

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "examples" / "live" / "train.py"

CLUSTER = """name = "live-2x2"
[[servers]]
num_gpus = 2
count = 2
"""


_cmdlines = cmdlines


def _ray_pids() -> set[int]:
    return {
        pid
        for pid, cmd in _cmdlines().items()
        if any(k in cmd for k in ("raylet", "gcs_server", "ray::", "default_worker.py"))
    }


def _tagged(tag: str) -> list[int]:
    return [pid for pid, cmd in _cmdlines().items() if tag in cmd and pid != os.getpid()]


def _wait_gone(pids_of, timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    left = pids_of()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = pids_of()
    return sorted(left)


def _job(jid: int, arrival: float, gpus: int, steps: int, tag: str, **extra: object) -> str:
    # ``-X tag=…`` marks the job's processes (Python ignores unknown -X options)
    cmd = [
        sys.executable,
        "-X",
        f"tag={tag}",
        str(TRAIN),
        "--steps",
        str(steps),
        "--step-time",
        "0.05",
        "--checkpoint-every",
        "5",
    ]
    lines = [
        "[[jobs]]",
        f"job_id = {jid}",
        f"arrival = {arrival}",
        f"gpus = {gpus}",
        f"command = {json.dumps(cmd)}",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n\n"


def _ddl(*args: str, timeout: float = 110.0, **kw):
    return run_cli(*args, timeout=timeout, **kw)


def _events(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, str]:
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    # a long 4-GPU job first; short jobs arrive while it runs: Tiresias demotes it after its
    # tiny threshold and preempts it for them; it resumes from its checkpoint afterwards
    text = _job(0, 0.0, 4, 160, tag, duration=8.0)
    for i, (arr, g, steps) in enumerate(
        [(2.0, 2, 30), (2.5, 1, 30), (3.0, 1, 20), (3.5, 2, 25), (4.0, 1, 20)], start=1
    ):
        text += _job(i, arr, g, steps, tag, duration=steps * 0.05)
    (tmp_path / "jobs.toml").write_text(text)
    return tmp_path / "cluster.toml", tmp_path / "jobs.toml", tag


def test_tiresias_runs_six_real_jobs_with_a_preemption_and_resume(inputs, tmp_path) -> None:
    cluster, jobs, tag = inputs
    before = _ray_pids()
    out = tmp_path / "out"
    t0 = time.monotonic()
    r = _ddl(
        "live",
        "--cluster",
        str(cluster),
        "--workload",
        str(jobs),
        "--policy",
        "tiresias",
        "--set",
        "interval=0.5",
        "--set",
        "tiresias_thresholds=0.0005",
        "--grace",
        "5",
        "--quiet",
        "--out",
        str(out),
    )
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    assert wall < 120, wall
    assert r.stdout.startswith("ran tiresias on backend live")
    ev = _events(out)
    finishes = [e["job"] for e in ev if e["event"] == "finish"]
    assert sorted(finishes) == list(range(6))  # every job completes exactly once
    stopped = [e for e in ev if e["event"] == "stopped"]
    assert stopped, "no preemption happened"
    # a preempted job resumes from its checkpoint, not from step 0
    job = stopped[0]["job"]
    firsts = [e["step"] for e in ev if e["event"] == "first_report" and e["job"] == job]
    assert len(firsts) >= 2 and firsts[1] is not None and firsts[1] > 1, firsts
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_jobs"] == 6 and summary["failed_jobs"] == 0
    assert not summary["interrupted"]
    check = _ddl("check", str(out), timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert _wait_gone(lambda: _tagged(tag)) == []
    assert _wait_gone(lambda: _ray_pids() - before) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("gpus = 4", "gpus = 5"), "asks for 5 GPUs, the cluster has 4"),
        (lambda t: t.replace(f'["{sys.executable}"', '["/no/such/python"', 1), "/no/such/python"),
        (lambda t: t.replace("command = ", "comand = ", 1), "command"),
    ],
)
def test_bad_job_files_are_one_line_and_start_nothing(inputs, tmp_path, edit, message) -> None:
    cluster, jobs, tag = inputs
    jobs.write_text(edit(jobs.read_text()))
    before = _ray_pids()
    out = tmp_path / "out"
    r = _ddl(
        "live",
        "--cluster",
        str(cluster),
        "--workload",
        str(jobs),
        "--policy",
        "fifo",
        "--quiet",
        "--out",
        str(out),
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert not out.exists()
    assert _tagged(tag) == [] and _ray_pids() - before == set()


def test_ctrl_c_stops_running_jobs_records_what_finished_and_leaves_nothing(
    inputs, tmp_path
) -> None:
    cluster, jobs, tag = inputs
    before = _ray_pids()
    out = tmp_path / "out"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddlsched.cli",
            "live",
            "--cluster",
            str(cluster),
            "--workload",
            str(jobs),
            "--policy",
            "fifo",
            "--grace",
            "5",
            "--quiet",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        # wait until a job has finished and another one has reported progress since
        while time.monotonic() < deadline:
            staging = list(tmp_path.glob(".out.*.tmp/events.jsonl"))
            events = staging[0].read_text() if staging else ""
            done = events.find('"event": "finish"')
            if done >= 0 and '"event": "first_report"' in events[done:]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no job finished within 60 s")
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and 1 <= summary["num_jobs"] < 6
    ev = _events(out)
    assert ev[-1]["event"] == "interrupted" and ev[-1]["stopped"]
    assert _wait_gone(lambda: _tagged(tag)) == []
    assert _wait_gone(lambda: _ray_pids() - before) == []


def test_time_scale_replays_arrivals_faster_with_plain_subprocesses(tmp_path: Path) -> None:
    """``--local`` (no Ray) and ``--time-scale 4``: arrivals at 0, 4 and 8 s happen at 0, 1
    and 2 s; times in jobs.csv are real seconds; measured.csv simulates back to the same jobs."""
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    text = "".join(_job(i, 4.0 * i, 1, 10, tag) for i in range(3))
    (tmp_path / "jobs.toml").write_text(text)
    out = tmp_path / "out"
    r = _ddl(
        "live",
        "--local",
        "--cluster",
        str(tmp_path / "cluster.toml"),
        "--workload",
        str(tmp_path / "jobs.toml"),
        "--policy",
        "fifo",
        "--time-scale",
        "4",
        "--quiet",
        "--out",
        str(out),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    import csv

    with open(out / "jobs.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(x["arrival"]) for x in rows] == [0.0, 1.0, 2.0]
    assert all(float(x["start"]) >= float(x["arrival"]) for x in rows)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["mode"] == "live" and cfg["time_scale"] == 4.0
    assert cfg["resolved"] == {
        "backend": "live",
        "jobs": "live jobs",
        "launcher": "local",
        "policy": "fifo",
    }
    sim = tmp_path / "sim"
    r = _ddl(
        "run",
        "--cluster",
        str(tmp_path / "cluster.toml"),
        "--workload",
        str(out / "measured.csv"),
        "--policy",
        "fifo",
        "--quiet",
        "--out",
        str(sim),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    c = _ddl("compare", str(out), str(sim), "--json", timeout=60)
    s = json.loads(c.stdout)
    # nobody waited: the simulated JCTs are the measured run times, within timing noise
    assert s["matched_jobs"] == 3 and s["max_abs_diff_s"] < 0.5, s
    assert _wait_gone(lambda: _tagged(tag)) == []


def _profile_jobs(tag: str) -> str:
    """Six real jobs naming an application profile (cifar10 stand-in) with their batch."""
    text = ""
    for i, (arr, g, steps) in enumerate(
        [(0, 1, 160), (2, 2, 80), (3, 1, 60), (5, 2, 60), (6, 1, 40), (7, 1, 40)]
    ):
        text += _job(i, float(arr), g, steps, tag, app="cifar10", batch_size=128)
    return text


def test_pollux_resizes_real_jobs_elastically(tmp_path: Path) -> None:
    """Pollux on application-profile live jobs: a job alone gets more GPUs and a larger batch
    (``DDLSCHED_BATCH_SIZE``), is shrunk again when others arrive, and resumes from its
    checkpoint each time; every job completes once and the run passes ``ddlsched check``."""
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    (tmp_path / "jobs.toml").write_text(_profile_jobs(tag))
    before = _ray_pids()
    out = tmp_path / "out"
    r = _ddl(
        "live",
        "--cluster",
        str(tmp_path / "cluster.toml"),
        "--workload",
        str(tmp_path / "jobs.toml"),
        "--policy",
        "pollux",
        "--set",
        "interval=1",
        "--set",
        "rescale_delay=1",
        "--grace",
        "5",
        "--quiet",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ran pollux on backend live-profile")
    ev = _events(out)
    assert sorted(e["job"] for e in ev if e["event"] == "finish") == list(range(6))
    starts = [e for e in ev if e["event"] == "start"]
    sizes: dict[int, set[int]] = {}
    for e in starts:
        sizes.setdefault(e["job"], set()).add(len(e["gpus"]))
    resized = [j for j, s in sizes.items() if len(s) > 1]
    assert resized, f"no job ran on two GPU counts: {sizes}"
    job = resized[0]
    batches = {e["batch"] for e in starts if e["job"] == job}
    assert len(batches) > 1  # the batch followed the allocation
    firsts = [e["step"] for e in ev if e["event"] == "first_report" and e["job"] == job]
    # each attempt resumes where the last one checkpointed (never from 0; the same step when
    # the job was stopped right after its last step and only has to finish)
    assert len(firsts) >= 2 and None not in firsts and firsts[-1] > 1, firsts
    assert all(later >= earlier for earlier, later in zip(firsts, firsts[1:], strict=False))
    # Pollux's goodput model is refit from what the jobs reported: seconds per iteration
    # measured (each step sleeps 0.05 s), not the cifar10 profile's; the model's step is the
    # iteration less its accumulation micro-steps (no longer than the iteration)
    # (upper bound 2 s, not 0.5: a loaded machine once measured an iteration above 0.5 s; that
    # the measured step, not the profile's, enters the model is checked below)
    measured = [e for e in ev if e["event"] == "measured"]
    outside = [(e["job"], e["iteration_s"]) for e in measured if not 0.05 <= e["iteration_s"] < 2]
    assert measured and not outside, f"iterations outside [0.05, 2) s: {outside}"
    assert all(0 < e["step_s"] <= e["iteration_s"] + 1e-9 for e in measured), measured
    assert any(abs(e["step_s"] - e["profile_step_s"]) > 0.005 for e in measured)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["elastic"] is True and summary["attempts_restarted"] >= 1
    check = _ddl("check", str(out), timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert _wait_gone(lambda: _tagged(tag)) == []
    assert _wait_gone(lambda: _ray_pids() - before) == []


def test_sharing_policy_puts_two_jobs_processes_on_one_gpu(tmp_path: Path) -> None:
    """sjf-bsbf on live jobs (plain subprocesses): some GPU holds two jobs at once."""
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    (tmp_path / "jobs.toml").write_text(_profile_jobs(tag))
    out = tmp_path / "out"
    r = _ddl(
        "live",
        "--local",
        "--cluster",
        str(tmp_path / "cluster.toml"),
        "--workload",
        str(tmp_path / "jobs.toml"),
        "--policy",
        "sjf-bsbf",
        "--quiet",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_jobs_per_gpu"] == 2
    import csv

    with open(out / "segments.csv") as f:
        segs = [
            (float(s["start"]), float(s["end"]), set(s["placement"].split(";")))
            for s in csv.DictReader(f)
        ]
    shared = any(
        a[2] & b[2] and a[0] < b[1] and b[0] < a[1]
        for i, a in enumerate(segs)
        for b in segs[i + 1 :]
    )
    assert shared, segs
    check = _ddl("check", str(out), timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert _wait_gone(lambda: _tagged(tag)) == []
