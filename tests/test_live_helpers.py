"""The service's record of its helper processes (a private Ray's daemons, agents and worker
hosts), which a restarted service ends by pid after a crash: the service's own session only —
jobs' workers start sessions of their own and are stopped gracefully by recovery instead —
and looked at again while it runs, since Ray starts agents and worker hosts after its start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ddlsched.live.launchers.base import WorkerSpec, worker_env
from ddlsched.live.service.server import HELPERS_FILE, ServeConfig, Service
from ddlsched.processes import (
    HELPER_ENV,
    descendants,
    end_marked,
    is_running,
    marked,
    process_start_time,
)

SRC = Path(__file__).resolve().parents[1] / "src"

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]
#: a job-like worker: its own session, with a child of its own
JOB = [
    sys.executable,
    "-c",
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n",
]


def _children(pid: int) -> list[int]:
    return [p for p, _ in descendants(pid)]


def _end(*procs: subprocess.Popen) -> None:
    for p in procs:
        for child in _children(p.pid):
            try:
                os.kill(child, 9)
            except ProcessLookupError:
                pass
        p.kill()
        p.wait(timeout=10)


def test_helpers_are_the_services_session_and_are_looked_at_again(tmp_path) -> None:
    helper = subprocess.Popen(SLEEP)
    job = subprocess.Popen(JOB, start_new_session=True)
    later = None
    try:
        deadline = time.monotonic() + 20
        while not _children(job.pid):  # the job's own child is up
            assert time.monotonic() < deadline
            time.sleep(0.05)
        (grandchild,) = _children(job.pid)
        mine = {p for p, _ in descendants(os.getpid(), session=os.getsid(0))}
        assert helper.pid in mine and not {job.pid, grandchild} & mine
        everyone = {p for p, _ in descendants(os.getpid())}
        assert {helper.pid, job.pid, grandchild} <= everyone

        svc = Service(ServeConfig(state=str(tmp_path), policy="fifo", launcher="local"))
        svc._write_helpers()
        recorded = {p for p, _ in json.loads((tmp_path / HELPERS_FILE).read_text())["processes"]}
        assert helper.pid in recorded and not {job.pid, grandchild} & recorded

        later = subprocess.Popen(SLEEP)  # e.g. an agent Ray starts after the service's start
        svc._write_helpers()
        recorded = {p for p, _ in json.loads((tmp_path / HELPERS_FILE).read_text())["processes"]}
        assert later.pid in recorded
    finally:
        _end(helper, job, *([later] if later else []))
    assert not {helper.pid, job.pid, grandchild} & set(_children(os.getpid()))


# ------------------------------------------------------------------ the helper mark
#: a helper that detaches (new session, forks again, its parent exits): reparented, out of
#: the service's tree and session, as a Ray worker started just before a crash may be
DETACHED = [
    sys.executable,
    "-c",
    "import os, sys, time\n"
    "os.setsid()\n"
    "if os.fork():\n"
    "    print(os.getpid(), flush=True); time.sleep(60)\n"
    "else:\n"
    "    time.sleep(60)\n",
]


def _ready(state: Path) -> bool:
    try:
        return bool(json.loads((state / "endpoint.json").read_text()).get("ready"))
    except (OSError, ValueError):
        return False


def test_marked_processes_are_found_by_the_mark_even_detached_and_ended(tmp_path) -> None:
    mark = f"test.{os.getpid()}.{time.monotonic_ns()}"
    env = dict(os.environ, **{HELPER_ENV: mark})
    detached = subprocess.Popen(DETACHED, env=env, stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen(SLEEP, env=dict(env, **{HELPER_ENV: mark + "x"}))
    plain = subprocess.Popen(SLEEP)
    try:
        assert detached.stdout is not None
        int(detached.stdout.readline())  # the parent is up, so its forked child is too
        deadline = time.monotonic() + 20
        while len(marked(mark)) < 2:
            assert time.monotonic() < deadline, marked(mark)
            time.sleep(0.05)
        found = marked(mark)
        assert detached.pid in {p for p, _ in found}
        (child,) = [p for p in found if p[0] != detached.pid]
        assert end_marked(mark) == 2
        assert not is_running(*child) and marked(mark) == []
        assert other.poll() is None and plain.poll() is None  # another mark, no mark: kept
        assert end_marked(mark) == 0
    finally:
        for p in (detached, other, plain):
            p.kill()
            p.wait(timeout=10)


def test_a_job_worker_never_carries_the_mark() -> None:
    from ddlsched.live.launchers.cgroup import STORE_ENV

    spec = WorkerSpec(job_id=1, rank=0, world_size=1, local_rank=0, server=0, gpus=(0,),
                      command=("true",), env={HELPER_ENV: "forged", STORE_ENV: "ab"})  # fmt: skip
    env = worker_env(spec, "127.0.0.1", 1, {HELPER_ENV: "1.2", STORE_ENV: "cd", "KEEP": "1"})
    assert HELPER_ENV not in env and STORE_ENV not in env and env["KEEP"] == "1"


def test_the_record_holds_the_mark_and_a_restart_ends_marked_processes_it_never_recorded(
    tmp_path,
) -> None:
    """A crashed service's helper started after its last look (so not in the record) and
    detached: the next service finds it by the mark and ends it."""
    svc = Service(ServeConfig(state=str(tmp_path / "old"), policy="fifo", launcher="local"))
    (tmp_path / "old").mkdir()
    svc._write_helpers()
    doc = json.loads((tmp_path / "old" / HELPERS_FILE).read_text())
    assert doc["mark"] == svc.mark == f"{os.getpid()}.{process_start_time(os.getpid())}"

    state = tmp_path / "state"
    state.mkdir()
    crashed = "999999.12345"  # the dead service's mark
    (state / HELPERS_FILE).write_text(json.dumps({"pid": 999999, "mark": crashed,
                                                  "processes": []}))  # fmt: skip
    detached = subprocess.Popen(DETACHED, env=dict(os.environ, **{HELPER_ENV: crashed}),
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert detached.stdout is not None
        int(detached.stdout.readline())
        deadline = time.monotonic() + 20
        while len(marked(crashed)) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        left = marked(crashed)
        env = dict(os.environ, PYTHONPATH=str(SRC))
        args = [sys.executable, "-m", "ddlsched.cli", "serve", "--cluster", "tiny", "--local",
                "--state", str(state), "--listen", "127.0.0.1:0", "--policy", "fifo",
                "--no-token"]  # fmt: skip
        log = tmp_path / "serve.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, env=env, stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + 60
            while "ended 2 helper process(es)" not in log.read_text():
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            assert not any(is_running(*p) for p in left)
            # the new record is written just after that line: wait for it, not for luck
            mine = f"{proc.pid}.{process_start_time(proc.pid)}"
            while json.loads((state / HELPERS_FILE).read_text())["mark"] != mine:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            while not _ready(state):  # its SIGTERM handler is set once it is ready
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        assert proc.returncode == 0, log.read_text()
        assert not (state / "endpoint.json").exists()
    finally:
        detached.kill()
        detached.wait(timeout=10)
