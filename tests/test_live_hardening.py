"""No job takes the service down (issue #27, item 2 and item 10): what a job brings is checked
at submission with one-line 400s (a checkpoint directory under a file, a lone surrogate in
the command, an unbounded ``max_restarts``); a job that fails again and again backs off. Real
service processes (``--local``), bounded in time, nothing left behind (test_live_service's
fixture)."""

from __future__ import annotations

import json
import time

import pytest
from test_live_service import home, job, serve  # noqa: F401 - the fixture

from ddlsched.errors import InputError
from ddlsched.live.executor import BACKOFF_MAX, restart_backoff
from ddlsched.live.jobfile import MAX_RESTARTS, jobs_from_records


def test_what_a_job_brings_is_checked_at_submission(home, tmp_path) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home)
    (tmp_path / "afile").write_text("x")
    bad = [
        ({"checkpoint_dir": "/etc/passwd/x"}, "checkpoint_dir"),
        ({"checkpoint_dir": str(tmp_path / "afile")}, "not a directory"),
        ({"max_restarts": 2**63 - 1}, f"at most {MAX_RESTARTS}"),
    ]
    for extra, text in bad:
        code, doc = svc.call("POST", "/jobs", {"jobs": [job(tag, **extra)]})
        assert code == 400 and text in doc["error"], (extra, code, doc)
        assert "\n" not in doc["error"]
    # a lone surrogate (valid JSON, "\ud800") in the command: refused, not a crash at launch
    raw = b'{"jobs": [{"command": ["echo", "\\ud800"], "gpus": 1}]}'
    code, doc = svc.call("POST", "/jobs", raw=raw)
    assert code == 400 and "surrogate" in doc["error"], doc
    assert svc.jobs() == {}
    assert svc.call("GET", "/health")[0] == 200
    assert svc.proc is not None and svc.proc.poll() is None


def test_a_checkpoint_dir_that_cannot_be_made_fails_the_job_not_the_service(home) -> None:  # noqa: F811
    """Accepted at submission (its parent exists), not creatable at launch (no permission
    there is not testable as root: a path under a file created after the submission)."""
    path, tag, _ = home
    svc = serve(home)
    (path / "later").mkdir()
    (first,) = svc.submit(job(tag, steps=200))  # holds the GPUs while the file appears
    (victim,) = svc.submit(
        job(tag, steps=2, gpus=2, checkpoint_dir=str(path / "later" / "x" / "y"))
    )
    (path / "later" / "x").write_text("now a file")
    svc.call("DELETE", f"/jobs/{first}")
    jobs = svc.wait_ended([victim], timeout=30)
    assert jobs[victim]["state"] == "failed" and "cannot launch" in jobs[victim]["reason"]
    (after,) = svc.submit(job(tag, steps=2))
    assert svc.wait_ended([after], timeout=30)[after]["state"] == "finished"


def test_a_job_that_always_fails_backs_off(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home)
    (job_id,) = svc.submit(job(tag, mode="fail", max_restarts=3))
    jobs = svc.wait_ended([job_id], timeout=60)
    assert jobs[job_id]["state"] == "failed"
    _, doc = svc.call("GET", f"/jobs/{job_id}")
    starts = [e["t"] for e in doc["events"] if e["event"] == "start"]
    assert len(starts) == 4, doc["events"]
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    # 1 s, 2 s, 4 s of back-off (plus the time to see the exit)
    for gap, want in zip(gaps, (1.0, 2.0, 4.0), strict=True):
        assert want <= gap < want + 3.0, gaps
    events = [json.loads(x) for x in (path / "state" / "events.jsonl").read_text().splitlines()]
    assert [e["retry_in"] for e in events if e["event"] == "crashed"] == [1.0, 2.0, 4.0]


def test_backoff_doubles_and_is_capped() -> None:
    assert [restart_backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert restart_backoff(50) == BACKOFF_MAX
    with pytest.raises(InputError, match="at most"):
        jobs_from_records(
            [{"arrival": 0, "gpus": 1, "command": ["x"], "max_restarts": 101}], "test"
        )


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def test_connections_that_never_finish_are_bounded_and_cut_off(home, monkeypatch) -> None:  # noqa: F811
    """Issue #27 item 11: 1,500 connections that never finished their headers kept 1,462
    threads. Now at most MAX_CONNECTIONS are served at once (the rest get 503 and are closed)
    and each is cut off after REQUEST_TIMEOUT_S."""
    import socket

    from ddlsched.live.service.httpapi import MAX_CONNECTIONS

    timeout = 5.0  # the service's cut-off for this test (10 s by default)
    monkeypatch.setenv("DDLSCHED_HTTP_TIMEOUT_S", str(timeout))
    path, tag, _ = home
    svc = serve(home)
    assert svc.proc is not None
    host, port = svc.url.removeprefix("http://").rsplit(":", 1)
    before = _threads(svc.proc.pid)
    socks = []
    try:
        for _ in range(MAX_CONNECTIONS + 72):
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"GET /jobs HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\n")
            socks.append(s)
        time.sleep(1.0)
        assert _threads(svc.proc.pid) <= before + MAX_CONNECTIONS + 2
        # one over the limit is told so at once
        s = socket.create_connection((host, int(port)), timeout=5)
        assert s.recv(200).startswith(b"HTTP/1.1 503")
        s.close()
        time.sleep(timeout + 2.0)
        assert _threads(svc.proc.pid) <= before + 2  # the idle ones were cut off
        assert svc.call("GET", "/health")[0] == 200
    finally:
        for s in socks:
            s.close()


def test_status_shows_a_jobs_control_characters_escaped(home) -> None:  # noqa: F811
    from test_live_service import cli

    path, tag, _ = home
    svc = serve(home)
    forged = "true\r\n     9  finished    8 GPU  forged line\x1b[2J"
    (job_id,) = svc.submit({"command": ["true", forged, tag], "gpus": 1, "max_restarts": 0})
    svc.wait_ended([job_id], timeout=30)
    for args in (("status",), ("status", str(job_id))):
        out = cli(path, *args, "--server", svc.url)
        assert out.returncode == 0, out.stderr
        assert "\r" not in out.stdout and "\x1b" not in out.stdout, out.stdout
        assert "forged line" in out.stdout and "\\r\\n" in out.stdout
        assert not any(line.lstrip().startswith("9  finished") for line in out.stdout.splitlines())


DAEMON = """\
import os, sys, time
tag, mode = sys.argv[1], sys.argv[2]
if os.fork() == 0:  # the classic double fork: out of the worker's session and group
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", tag])
    os._exit(0)
time.sleep(0.5)
if mode == "wait":
    time.sleep(300)
"""


def _tagged(tag: str) -> list[int]:
    from _processes import cmdlines

    return [pid for pid, cmd in cmdlines().items() if tag in cmd and "sleep" in cmd]


def _gone(tag: str, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    left = _tagged(tag)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _tagged(tag)
    return left


def test_a_jobs_daemon_ends_with_the_job(home) -> None:  # noqa: F811
    """Issue #27 item 5: a job that forks, setsids and forks again left a process running
    after it finished, was cancelled or the service drained (on a GPU node it would hold the
    GPU the scheduler hands to the next job). The service is the daemons' subreaper and ends
    what carries an ended worker's token."""
    import sys

    path, tag, _ = home
    (path / "daemon.py").write_text(DAEMON)
    svc = serve(home)
    # finished
    (a,) = svc.submit({"command": [sys.executable, "daemon.py", tag + "a", "exit"], "gpus": 1})
    assert svc.wait_ended([a], timeout=30)[a]["state"] == "finished"
    assert _gone(tag + "a") == [], "the finished job's daemon lives on"
    # cancelled
    (b,) = svc.submit({"command": [sys.executable, "daemon.py", tag + "b", "wait"], "gpus": 1})
    deadline = time.monotonic() + 30
    while not _tagged(tag + "b"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert svc.call("DELETE", f"/jobs/{b}")[0] == 200
    assert _gone(tag + "b") == [], "the cancelled job's daemon lives on"
    # drained
    (c,) = svc.submit({"command": [sys.executable, "daemon.py", tag + "c", "exit"], "gpus": 1})
    svc.wait_ended([c], timeout=30)
    assert svc.drain() == 0
    assert _gone(tag + "c", timeout=5) == []


def test_a_chatty_job_cannot_fill_the_disk_with_its_log(home, monkeypatch) -> None:  # noqa: F811
    """Issue #27 item 4: a job writing 1 GB to stdout left 1.1 GB in the state directory.
    The log is cut to its tail once past the cap (here 256 KB, through the service's
    environment; 64 MB by default)."""
    import sys

    path, tag, _ = home
    monkeypatch.setenv("DDLSCHED_LOG_CAP_BYTES", str(256 << 10))
    chatty = "import sys\nfor i in range(400000):\n    print('x' * 60, i)\n"
    (path / "chatty.py").write_text(chatty)
    svc = serve(home)
    (a,) = svc.submit({"command": [sys.executable, "chatty.py", tag], "gpus": 1})
    assert svc.wait_ended([a], timeout=60)[a]["state"] == "finished"
    log = path / "state" / "jobs" / str(a) / "attempt-0" / "rank-0.log"
    text = log.read_text()
    assert len(text) < 2 << 20, len(text)  # 400,000 lines ≈ 26 MB written
    assert "[ddlsched: log over" in text and text.rstrip().endswith("399999")


def test_the_service_keeps_a_disk_reserve(home) -> None:  # noqa: F811
    from test_live_service import cli

    path, tag, _ = home
    out = cli(path, "serve", "--cluster", "tiny", "--local", "--policy", "fifo", "--state",
              "s", "--min-free-mb", "1e12")  # fmt: skip
    assert out.returncode == 2 and "--min-free-mb" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_no_job_starts_while_the_disk_is_low(tmp_path) -> None:
    """The engine's gate (``ServiceSimulator.may_start``, fed by ``Service.disk_low``): while
    it says no, the policy is not called and nothing launches; then the queue moves."""
    from ddlsched.api import build_simulator
    from ddlsched.core.cluster import Cluster
    from ddlsched.live.jobfile import LiveJob
    from ddlsched.live.launchers.local import LocalLauncher
    from ddlsched.live.service.engine import ServiceBackend, ServiceExecutor
    from ddlsched.live.service.server import ServeConfig, Service
    from ddlsched.live.service.store import JobStore

    said: list[str] = []
    service = Service(
        ServeConfig(state=str(tmp_path / "s"), policy="fifo", min_free_mb=1e12), say=said.append
    )
    assert service.disk_low() and "no job starts" in said[-1]
    cluster = Cluster.homogeneous(1, 1)
    with JobStore(tmp_path / "s") as store, LocalLauncher(cluster) as launcher:
        ex = ServiceExecutor(launcher, store, tmp_path / "s", grace=1.0, hang_timeout=None)
        sim = build_simulator(cluster, [], "fifo", backend=ServiceBackend(ex))
        (jid,) = store.submit([LiveJob(job_id=0, arrival=0.0, gpus=1, command=("true",))], 0.0)
        stored = store.job(jid)
        ex.add(stored)
        from ddlsched.live.run import to_specs

        spec = to_specs([stored.job], 1.0)[0]
        from dataclasses import replace

        sim.add_job(replace(spec, job_id=jid))
        sim.may_start = lambda: False

        import heapq

        while sim._heap:  # the arrival
            _, _, handler, args = heapq.heappop(sim._heap)
            handler(*args)
        sim._policy_pass()
        assert not sim.running and store.job(jid).state == "queued"
        sim.may_start = lambda: True
        sim._policy_pass()
        assert jid in sim.running and store.job(jid).state == "running"
        deadline = time.monotonic() + 10
        while store.job(jid).state == "running":
            assert time.monotonic() < deadline
            ex.poll()
            time.sleep(0.05)
        assert store.job(jid).state == "finished"


def test_a_long_job_file_is_submitted_in_chunks_all_or_none(home, monkeypatch) -> None:  # noqa: F811
    """Issue #27 item 9: a job file of 30,000 jobs was refused (413). The client submits a
    long file in chunks; a chunk refused takes back the ones accepted before it."""
    from ddlsched.live.jobfile import LiveJob
    from ddlsched.live.service import remote
    from ddlsched.live.service.remote import ServiceClient

    path, tag, _ = home
    svc = serve(home, "--policy", "fifo")
    client = ServiceClient(svc.url)
    n = 15000  # ≈ 1.3 MB of JSON in one request: over the service's 1 MiB body limit
    many = [LiveJob(job_id=i, arrival=3600.0, gpus=1, command=("true", tag)) for i in range(n)]
    ids = client.submit(many)
    assert len(ids) == n and ids == sorted(ids) and len(set(ids)) == n
    assert len(svc.jobs()) == n
    # the third chunk holds a job the service refuses (more GPUs than the cluster has); small
    # chunks here: the take-back is one cancel per job, and three chunks show the rule
    chunk = 100
    monkeypatch.setattr(remote, "SUBMIT_CHUNK_JOBS", chunk)
    bad = [LiveJob(job_id=i, arrival=3600.0, gpus=1, command=("true", tag))
           for i in range(3 * chunk)]  # fmt: skip
    bad[2 * chunk + 5] = LiveJob(job_id=0, arrival=0.0, gpus=999, command=("true",))
    with pytest.raises(InputError, match=f"the {2 * chunk} submitted before them were cancelled"):
        client.submit(bad)
    states = [j["state"] for j in svc.jobs().values()]
    assert states.count("queued") == n  # the first two chunks' jobs were taken back
    assert states.count("cancelled") == 2 * chunk
