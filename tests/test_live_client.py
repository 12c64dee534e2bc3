"""The job-side client ``ddlsched.live``: progress reports, stop requests (stop file and a real
SIGTERM to a real process), the environment helpers and atomic checkpoints."""

from __future__ import annotations

import ast
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ddlsched.live as live
from ddlsched.parsing import load_json

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "src" / "ddlsched" / "live" / "__init__.py"
ENV_NAMES = (
    "DDLSCHED_JOB_ID",
    "DDLSCHED_ATTEMPT",
    "DDLSCHED_GPUS",
    "DDLSCHED_CHECKPOINT_DIR",
    "DDLSCHED_PROGRESS",
    "DDLSCHED_STOP",
    "DDLSCHED_BATCH_SIZE",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
)


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def read_lines(path: Path) -> list[dict]:
    """Every line of a progress file, read as strict JSON (as the scheduler reads it)."""
    return [load_json(line, str(path)) for line in path.read_text().splitlines()]


# ---------------------------------------------------------------------------------- report
def test_report_is_a_no_op_outside_ddlsched(clean_env, tmp_path):
    clean_env.chdir(tmp_path)
    live.report(step=1, samples=32, loss=0.5)
    assert list(tmp_path.iterdir()) == []
    assert not live.under_ddlsched()


def test_report_appends_one_json_line_per_call(clean_env, tmp_path):
    progress = tmp_path / "progress.jsonl"
    clean_env.setenv("DDLSCHED_PROGRESS", str(progress))
    before = time.time()
    live.report(step=1, samples=32, loss=0.75)
    live.report(step=np.int64(2), samples=np.int32(64), loss=np.float32(0.5), lr=np.float64(0.1))
    live.report()
    live.report(step=3, loss=float("nan"), note="warmup", shape=(2, 3))
    rows = read_lines(progress)
    assert len(rows) == 4
    assert rows[0] == {"time": rows[0]["time"], "step": 1, "samples": 32, "loss": 0.75}
    assert before <= rows[0]["time"] <= rows[1]["time"] <= time.time()
    assert rows[1]["step"] == 2 and rows[1]["samples"] == 64
    assert math.isclose(rows[1]["loss"], 0.5) and math.isclose(rows[1]["lr"], 0.1)
    assert rows[2] == {"time": rows[2]["time"], "step": None, "samples": None, "loss": None}
    # NaN is not JSON: it becomes null, the extras stay
    assert rows[3]["loss"] is None and rows[3]["note"] == "warmup" and rows[3]["shape"] == [2, 3]


def test_report_is_flushed_at_once_and_follows_a_new_path(clean_env, tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    clean_env.setenv("DDLSCHED_PROGRESS", str(first))
    live.report(step=1)
    assert len(read_lines(first)) == 1  # visible to a reader before any close
    clean_env.setenv("DDLSCHED_PROGRESS", str(second))
    live.report(step=2)
    assert [r["step"] for r in read_lines(first)] == [1]
    assert [r["step"] for r in read_lines(second)] == [2]


def test_report_is_cheap_enough_for_every_step(clean_env, tmp_path):
    progress = tmp_path / "p.jsonl"
    clean_env.setenv("DDLSCHED_PROGRESS", str(progress))
    start = time.perf_counter()
    for step in range(2000):
        live.report(step=step, samples=step * 32, loss=1.0 / (step + 1))
    per_call = (time.perf_counter() - start) / 2000
    assert len(progress.read_text().splitlines()) == 2000
    assert per_call < 1e-3, f"{per_call * 1e6:.0f} µs per report"


# ---------------------------------------------------------------------------------- helpers
def test_helpers_outside_ddlsched(clean_env):
    assert live.rank() == 0 and live.world_size() == 1 and live.local_rank() == 0
    assert live.attempt() == 0 and live.job_id() is None
    assert live.checkpoint_dir() is None and live.gpus() == []
    assert live.batch_size() is None and live.batch_size(32) == 32


def test_helpers_read_the_contract_variables(clean_env, tmp_path):
    env = {
        "DDLSCHED_JOB_ID": "7",
        "DDLSCHED_ATTEMPT": "2",
        "DDLSCHED_GPUS": "4,5,6,7",
        "DDLSCHED_CHECKPOINT_DIR": str(tmp_path),
        "DDLSCHED_BATCH_SIZE": "256",
        "RANK": "3",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "1",
    }
    for k, v in env.items():
        clean_env.setenv(k, v)
    assert live.under_ddlsched() and live.job_id() == 7 and live.attempt() == 2
    assert live.gpus() == [4, 5, 6, 7] and live.checkpoint_dir() == str(tmp_path)
    assert live.batch_size(32) == 256
    assert (live.rank(), live.world_size(), live.local_rank()) == (3, 4, 1)


def test_helpers_never_fail_on_a_bad_environment(clean_env):
    clean_env.setenv("DDLSCHED_BATCH_SIZE", "lots")
    clean_env.setenv("RANK", "")
    clean_env.setenv("DDLSCHED_ATTEMPT", "x")
    assert live.batch_size(32) == 32 and live.rank() == 0 and live.attempt() == 0


# ---------------------------------------------------------------------------------- checkpoints
def test_save_checkpoint_replaces_atomically(tmp_path):
    path = tmp_path / "ckpt.bin"
    assert live.load_checkpoint(path) is None
    live.save_checkpoint(path, b"\x00first")
    live.save_checkpoint(str(path), "second")
    assert live.load_checkpoint(path) == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.bin"]  # no temporary left


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt.bin"
    live.save_checkpoint(path, b"good")
    with pytest.raises(TypeError):
        live.save_checkpoint(path, 12345)  # type: ignore[arg-type]
    with pytest.raises(OSError):
        live.save_checkpoint(tmp_path / "missing" / "ckpt.bin", b"x")
    assert live.load_checkpoint(path) == b"good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.bin"]


# ---------------------------------------------------------------------------------- stopping
_CHILD = r"""
import os, signal, sys, time
def own(signum, frame):
    print("own handler", flush=True)
when = os.environ.get("OWN_HANDLER", "")  # when the program installs its own SIGTERM handler
if when == "before-import":
    signal.signal(signal.SIGTERM, own)
import ddlsched.live as live
if when == "after-import":
    signal.signal(signal.SIGTERM, own)
poll = bool(os.environ.get("POLL"))
if poll:
    live.should_stop()  # the program polls from its start on
if when == "after-poll":
    signal.signal(signal.SIGTERM, own)
print("ready", flush=True)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if poll and live.should_stop():
        print("stopping", flush=True)
        sys.exit(0)
    if when == "after-poll" and signal.getsignal(signal.SIGTERM) is not own:
        print("the client replaced the program's handler", flush=True)
        sys.exit(4)
    time.sleep(0.01)
print("timed out", flush=True)
sys.exit(3)
"""


def start_child(tmp_path: Path, **env: str) -> subprocess.Popen:
    full = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    full.update(env, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        env=full,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    """The child's exit status and the rest of its output; killed by its group if it hangs."""
    try:
        out, _ = proc.communicate(timeout=25)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
        pytest.fail("the child did not stop")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return proc.returncode, out


def test_sigterm_sets_the_stop_flag_of_a_job_under_ddlsched(tmp_path):
    proc = start_child(tmp_path, DDLSCHED_JOB_ID="1", POLL="1")
    os.kill(proc.pid, signal.SIGTERM)
    rc, out = finish(proc)
    assert (rc, out.split()) == (0, ["stopping"])


def test_sigterm_still_ends_a_program_outside_ddlsched_that_never_asks(tmp_path):
    proc = start_child(tmp_path)  # no DDLSCHED_JOB_ID, never calls should_stop()
    os.kill(proc.pid, signal.SIGTERM)
    rc, _ = finish(proc)
    assert rc == -signal.SIGTERM


def test_sigterm_ends_a_job_under_ddlsched_that_never_polls_at_once(tmp_path):
    """Importing the client does not make a job that never asks should_stop() deaf to SIGTERM
    (it would run on until the scheduler's grace period ends and it is killed)."""
    proc = start_child(tmp_path, DDLSCHED_JOB_ID="1")
    sent = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    rc, out = finish(proc)
    assert (rc, out) == (-signal.SIGTERM, "")
    assert time.monotonic() - sent < 5


@pytest.mark.parametrize("when", ["before-import", "after-import"])
def test_sigterm_also_runs_the_programs_own_handler(tmp_path, when):
    """The program's handler runs, whether installed before or after the import, and
    should_stop() still learns of the request."""
    proc = start_child(tmp_path, DDLSCHED_JOB_ID="1", POLL="1", OWN_HANDLER=when)
    os.kill(proc.pid, signal.SIGTERM)
    rc, out = finish(proc)
    assert (rc, out.splitlines()) == (0, ["own handler", "stopping"])


def test_a_handler_installed_after_the_first_poll_is_left_alone(tmp_path):
    stop = tmp_path / "STOP"
    proc = start_child(
        tmp_path, DDLSCHED_JOB_ID="1", DDLSCHED_STOP=str(stop), POLL="1", OWN_HANDLER="after-poll"
    )
    try:
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "own handler"
        time.sleep(0.3)  # a few more polls: the client does not put its handler back
        stop.touch()  # the stop file still reaches should_stop()
    finally:
        rc, out = finish(proc)
    assert (rc, out.split()) == (0, ["stopping"])


def test_the_stop_file_stops_a_job_within_the_check_interval(tmp_path):
    stop = tmp_path / "STOP"
    proc = start_child(tmp_path, DDLSCHED_JOB_ID="1", DDLSCHED_STOP=str(stop), POLL="1")
    time.sleep(0.3)
    assert proc.poll() is None  # no stop file yet: it keeps running
    stop.touch()
    asked = time.monotonic()
    rc, out = finish(proc)
    assert (rc, out.split()) == (0, ["stopping"])
    assert time.monotonic() - asked < 5


def test_should_stop_is_false_without_a_request_and_then_stays_true(clean_env, tmp_path):
    stop = tmp_path / "STOP"
    clean_env.setenv("DDLSCHED_STOP", str(stop))
    clean_env.setattr(live, "_stop_requested", False)
    clean_env.setattr(live, "_last_stop_check", -math.inf)
    clean_env.setattr(live, "_install_handler", lambda: None)  # keep pytest's own SIGTERM
    assert live.should_stop() is False
    stop.touch()
    clean_env.setattr(live, "_last_stop_check", -math.inf)
    assert live.should_stop() is True
    stop.unlink()
    assert live.should_stop() is True


# ---------------------------------------------------------------------------------- imports
def test_the_client_imports_only_the_standard_library():
    tree = ast.parse(CLIENT.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the client imports nothing of ddlsched"
            names.add((node.module or "").split(".")[0])
    assert names and names <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_progress_lines_are_plain_json(clean_env, tmp_path):
    """What the scheduler reads: one object per line, parseable by the standard json too."""
    progress = tmp_path / "p.jsonl"
    clean_env.setenv("DDLSCHED_PROGRESS", str(progress))
    live.report(step=5, samples=160, loss=float("inf"), tokens=10**6)
    (row,) = [json.loads(line) for line in progress.read_text().splitlines()]
    assert row["loss"] is None and row["tokens"] == 10**6


def test_the_progress_file_is_closed_at_exit(tmp_path):
    # kept open between reports, closed by an exit handler (no ResourceWarning at shutdown)
    import subprocess
    import sys

    env = dict(os.environ, DDLSCHED_PROGRESS=str(tmp_path / "p.jsonl"))
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    code = "import ddlsched.live as live\nlive.report(step=1)\nlive.report(step=2)\n"
    out = subprocess.run([sys.executable, "-X", "dev", "-c", code], env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0 and "ResourceWarning" not in out.stderr, out.stderr
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 2
