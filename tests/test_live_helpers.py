"""The service's record of its helper processes (a private Ray's daemons, agents and worker
hosts), which a restarted service ends by pid after a crash: the service's own session only —
jobs' workers start sessions of their own and are stopped gracefully by recovery instead —
and looked at again while it runs, since Ray starts agents and worker hosts after its start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from ddlsched.live.service.server import HELPERS_FILE, ServeConfig, Service
from ddlsched.processes import descendants

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
