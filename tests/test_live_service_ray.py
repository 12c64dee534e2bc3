"""``ddlsched serve`` on a private local Ray (issue #14): a worker's Ray actor killed mid-job
→ the job is requeued (its orphaned worker ended by id) and resumes from its checkpoint; the
service killed with ``kill -9`` → the next start ends what the crash left (workers and the
private Ray's agents, by pid and start time) and every job still ends exactly once. Afterwards
no Ray process started during the test and no job process is left."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from test_live_run import _ray_pids, _wait_gone
from test_live_service import _cmdlines, cli, home, job, serve, starting_steps  # noqa: F401

from ddlsched.live.service.server import HELPERS_FILE
from ddlsched.live.service.store import JobStore
from ddlsched.processes import marked

pytest.importorskip("ray")


def _ppid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def test_lost_actor_requeues_and_kill9_on_ray_ends_every_job_once(home) -> None:  # noqa: F811
    path, tag, _ = home
    before = _ray_pids()
    svc = serve(home, ray=True)
    ids = svc.submit(*[job(tag, steps=60) for _ in range(5)])
    deadline = time.monotonic() + 60
    while sum(j["state"] == "running" for j in svc.jobs().values()) < 4:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.8)
    with JobStore(path / "state") as store:
        (worker, _), _ = store.leftover_procs()[ids[0]]
    actor = _ppid(worker)
    assert "ray::WorkerHost" in _cmdlines()[actor]
    mark = json.loads((path / "state" / HELPERS_FILE).read_text())["mark"]
    helpers = {p for p, _ in marked(mark)}  # Ray's processes inherit the service's mark …
    assert actor in helpers and worker not in helpers  # … the jobs' workers do not
    os.kill(actor, signal.SIGKILL)  # the worker's host dies (a lost node, locally)
    deadline = time.monotonic() + 60
    while True:
        status, doc = svc.call("GET", f"/jobs/{ids[0]}")
        reasons = [e.get("reason") for e in doc["events"]]  # type: ignore[index]
        if "worker lost" in reasons:
            break
        assert time.monotonic() < deadline, doc
        time.sleep(0.2)
    time.sleep(1.0)
    svc.kill9()  # with jobs running on Ray
    again = serve(home, ray=True)
    log = again.log.read_text()
    assert "recovered: ended" in log and "helper process(es)" in log
    jobs = again.wait_ended(ids, timeout=120)
    assert again.drain(timeout=90) == 0
    assert all(jobs[i]["state"] == "finished" for i in ids)
    with JobStore(path / "state") as store:
        events = store.events()
    for i in ids:
        assert [e.event for e in events if e.job == i].count("finish") == 1
    assert starting_steps(path / "state", ids[0])[1] > 0  # resumed after the lost worker
    assert cli(path, "export", "--state", "state", "--out", "run").returncode == 0
    checked = cli(path, "check", "run")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    left = _wait_gone(lambda: _ray_pids() - before, timeout=30)
    assert left == [], {pid: _cmdlines().get(pid) for pid in left}


def test_the_api_answers_starting_before_ray_is_up(home) -> None:  # noqa: F811
    """The HTTP API listens from the first second: 503 "starting" (with Retry-After) while the
    private Ray and recovery come up, then the usual answers (issue #26: clients read "no
    ddlsched service answers" for 20–50 s)."""
    import json
    import subprocess
    import sys

    from test_live_service import SRC, Svc

    path, _tag, started = home
    svc = Svc(path, path / "state", ray=True)
    started.append(svc)
    env = dict(os.environ, PYTHONPATH=str(SRC))
    t0 = time.monotonic()
    with open(svc.log, "ab") as out:
        svc.proc = subprocess.Popen(
            [sys.executable, "-m", "ddlsched.cli", "serve", "--cluster", "tiny", "--state",
             str(svc.state), "--listen", "127.0.0.1:0", "--policy", "fifo"],
            cwd=path, env=env, stdout=out, stderr=out,
        )  # fmt: skip
    endpoint = svc.state / "endpoint.json"
    doc: dict = {}
    while time.monotonic() - t0 < 30:
        try:
            doc = json.loads(endpoint.read_text())
            if doc["pid"] == svc.proc.pid:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    listening = time.monotonic() - t0
    assert doc.get("pid") == svc.proc.pid, svc.log.read_text()
    svc.url = doc["url"]
    svc.token = (svc.state / "token").read_text().strip()  # made before the API listens
    if not doc["ready"]:
        status, body = svc.call("GET", "/jobs")
        if status == 503:  # still starting (Ray takes seconds): the answer says so
            assert "starting" in body["error"], body
    assert listening < 10, listening  # a Python start-up and the store: seconds, not Ray's
    deadline = time.monotonic() + 60
    while not json.loads(endpoint.read_text()).get("ready"):
        assert time.monotonic() < deadline, svc.log.read_text()
        time.sleep(0.1)
    status, body = svc.call("GET", "/jobs")
    assert status == 200, body
