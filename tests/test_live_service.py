"""``ddlsched serve`` end to end (issue #14): a real service process on loopback, real job
processes (plain subprocesses, ``--local``), its HTTP API, the client commands, a ``kill -9``
of the service mid-run, worker crashes, hangs, cancellations, malformed requests and the
export that ``ddlsched check`` verifies.

Every test is bounded in time, binds 127.0.0.1 only, stops the services it started by their
pid, and checks that no job process of its own (tagged on the command line) is left."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from _processes import cmdlines

from ddlsched.live.service.store import ENDED, JobStore

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

JOB = """\
import os, sys, time
import ddlsched.live as live

steps, mode = int(sys.argv[1]), sys.argv[2]
ck = os.path.join(live.checkpoint_dir(), "step")
raw = live.load_checkpoint(ck)
step = int(raw) if raw else 0
print(f"attempt {live.attempt()} starts at step {step}", flush=True)
if mode == "fail":
    raise SystemExit(3)
while step < steps:
    time.sleep(0.05)
    step += 1
    live.report(step=step)
    if step % 5 == 0:
        live.save_checkpoint(ck, str(step))
    if mode == "crash-once" and live.attempt() == 0 and step == 12:
        os._exit(4)
    if mode == "hang-once" and live.attempt() == 0 and step == 8:
        time.sleep(3600)
    if live.should_stop():
        live.save_checkpoint(ck, str(step))
        raise SystemExit(0)
"""


_cmdlines = cmdlines


class Svc:
    """One ``ddlsched serve`` process of a test (ended by its pid in ``stop``)."""

    def __init__(self, home: Path, state: Path, *extra: str, token: str | None = None,
                 ray: bool = False) -> None:  # fmt: skip
        self.home, self.state, self.extra, self.token = home, state, extra, token
        self.ray = ray
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log = home / f"serve-{uuid.uuid4().hex[:6]}.log"

    def start(self, timeout: float = 60.0) -> Svc:
        env = dict(os.environ, PYTHONPATH=str(SRC))
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        args = [sys.executable, "-m", "ddlsched.cli", "serve", "--cluster", "tiny",
                "--state", str(self.state), "--listen", "127.0.0.1:0", "--grace", "2",
                "--policy", "fifo", *([] if self.ray else ["--local"]), *self.extra]  # fmt: skip
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(args, cwd=self.home, env=env, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        endpoint = self.state / "endpoint.json"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}: {self.log.read_text()}")
            try:
                doc = json.loads(endpoint.read_text())
                if doc["pid"] == self.proc.pid and doc.get("ready", True):
                    self.url = doc["url"]
                    if self.token is None and "--no-token" not in self.extra:
                        self.token = (self.state / "token").read_text().strip()  # its own
                    return self
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"serve did not come up: {self.log.read_text()}")

    def call(self, method: str, path: str, body: object = None, *, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, object]:  # fmt: skip
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        hdrs = dict(headers or {})
        if self.token and "Authorization" not in hdrs:
            hdrs["Authorization"] = f"Bearer {self.token}"
        if (body is not None or raw is not None) and "Content-Type" not in hdrs:
            hdrs["Content-Type"] = "application/json"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            text = resp.read().decode()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text

    def submit(self, *jobs: dict) -> list[int]:
        status, doc = self.call("POST", "/jobs", {"jobs": list(jobs)})
        assert status == 201, doc
        return doc["ids"]  # type: ignore[index]

    def jobs(self) -> dict[int, dict]:
        status, doc = self.call("GET", "/jobs")
        assert status == 200, doc
        return {j["id"]: j for j in doc["jobs"]}  # type: ignore[index]

    def wait_ended(self, ids: list[int], timeout: float = 60.0) -> dict[int, dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.jobs()
            if all(jobs[i]["state"] in ENDED for i in ids):
                return jobs
            time.sleep(0.2)
        raise AssertionError(f"jobs did not end: {self.jobs()}")

    def drain(self, timeout: float = 60.0) -> int:
        status, _ = self.call("POST", "/drain", {})
        assert status == 202
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A directory with the job script and the services' runtime files of its own;
    afterwards no process running it is left."""
    monkeypatch.setenv("DDLSCHED_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.delenv("DDLSCHED_TOKEN", raising=False)
    tag = f"tag{uuid.uuid4().hex[:10]}"
    (tmp_path / "job.py").write_text(JOB)
    started: list[Svc] = []
    yield tmp_path, tag, started
    for s in started:
        s.stop()
    deadline = time.monotonic() + 15
    left = [p for p, c in _cmdlines().items() if tag in c]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p, c in _cmdlines().items() if tag in c]
    assert not left, f"job processes left running: {left}"


def job(tag: str, steps: int = 30, mode: str = "ok", gpus: int = 2, **kw: object) -> dict:
    return {"command": ["python3", "job.py", str(steps), mode, tag], "gpus": gpus, **kw}


def serve(home_: tuple, *extra: str, token: str | None = None, state: str = "state",
          ray: bool = False) -> Svc:  # fmt: skip
    path, _tag, started = home_
    svc = Svc(path, path / state, *extra, token=token, ray=ray)
    started.append(svc)
    return svc.start()


def cli(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "ddlsched.cli", *args], cwd=home, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def starting_steps(state: Path, job_id: int) -> list[int]:
    """The step each attempt of a job started from, from its logs."""
    out = []
    for log in sorted((state / "jobs" / str(job_id)).glob("attempt-*/rank-0.log"),
                      key=lambda p: int(p.parent.name.split("-")[1])):  # fmt: skip
        for line in log.read_text().splitlines():
            if line.startswith("attempt "):
                out.append(int(line.rsplit(" ", 1)[1]))
    return out


# ------------------------------------------------------------------ crash safety
@pytest.mark.solo  # a concurrent service ends a killed service's cgroup leftovers first
def test_kill9_mid_run_then_restart_every_job_ends_exactly_once(home) -> None:
    path, tag, _ = home
    svc = serve(home)
    ids = svc.submit(*[job(tag, steps=30) for _ in range(10)])
    assert ids == list(range(1, 11))
    deadline = time.monotonic() + 30
    while sum(j["state"] == "running" for j in svc.jobs().values()) < 4:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.8)  # the first four have made progress (checkpoints every 5 steps)
    with JobStore(path / "state") as store:
        left = store.leftover_procs()
    assert len(left) == 4 and all(len(p) == 2 for p in left.values())
    svc.kill9()
    orphans = [p for p, c in _cmdlines().items() if tag in c]
    assert orphans, "the killed service's workers live on until the next start ends them"

    again = serve(home)  # same --state
    assert "recovered: ended 8 process(es)" in again.log.read_text()
    jobs = again.wait_ended(ids)
    assert again.drain() == 0
    assert all(jobs[i]["state"] == "finished" for i in ids)
    with JobStore(path / "state") as store:
        events = store.events()
    for i in ids:
        assert [e.event for e in events if e.job == i].count("finish") == 1
    requeued = sorted({e.job for e in events if e.event == "requeue"})
    assert requeued == sorted(left)
    for i in requeued:  # resumed from the checkpoint the stopped attempt wrote
        steps = starting_steps(path / "state", i)
        assert steps[0] == 0 and steps[-1] > 0
    out = cli(path, "export", "--state", "state", "--out", "run")
    assert out.returncode == 0, out.stderr
    checked = cli(path, "check", "run")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok: run (10 jobs" in checked.stdout
    assert sum(1 for _ in open(path / "run" / "jobs.csv")) == 11


def test_sigterm_stops_jobs_and_the_next_start_resumes_them(home) -> None:
    path, tag, _ = home
    svc = serve(home)
    ids = svc.submit(job(tag, steps=60), job(tag, steps=60))
    deadline = time.monotonic() + 30
    while not all(j["state"] == "running" for j in svc.jobs().values()):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.6)
    svc.stop()
    assert svc.proc is not None and svc.proc.returncode == 0
    assert not [p for p, c in _cmdlines().items() if tag in c]
    with JobStore(path / "state") as store:
        assert {j.state for j in store.jobs()} == {"queued"}
    again = serve(home)
    jobs = again.wait_ended(ids)
    assert again.drain() == 0
    assert all(jobs[i]["state"] == "finished" for i in ids)
    for i in ids:
        assert starting_steps(path / "state", i)[-1] > 0


# ------------------------------------------------------------------ faults
def test_worker_crash_resumes_from_checkpoint_and_always_failing_job_fails(home) -> None:
    path, tag, _ = home
    svc = serve(home)
    crash, fail, fine = svc.submit(
        job(tag, steps=25, mode="crash-once"),
        job(tag, mode="fail", max_restarts=2),
        job(tag, steps=20),
    )
    jobs = svc.wait_ended([crash, fail, fine])
    assert jobs[crash]["state"] == "finished" and jobs[crash]["failures"] == 1
    assert starting_steps(path / "state", crash) == [0, 10]  # its last checkpoint
    assert jobs[fine]["state"] == "finished" and jobs[fine]["failures"] == 0
    assert jobs[fail]["state"] == "failed"
    assert jobs[fail]["failures"] == 3 and jobs[fail]["attempt"] == 2
    assert "failed 3 times, max_restarts 2" in jobs[fail]["reason"]
    assert svc.drain() == 0


def test_worker_killed_by_signal_resumes_from_its_checkpoint(home) -> None:
    path, tag, _ = home
    svc = serve(home)
    (victim,) = svc.submit(job(tag, steps=40))
    deadline = time.monotonic() + 30
    while True:
        progress = path / "state" / "jobs" / str(victim) / "attempt-0" / "progress.0.jsonl"
        lines = progress.read_text().splitlines() if progress.exists() else []
        if lines and json.loads(lines[-1])["step"] >= 12:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with JobStore(path / "state") as store:
        (pid, _start), _ = store.leftover_procs()[victim]
    os.kill(pid, signal.SIGKILL)  # the worker we started, by its id
    jobs = svc.wait_ended([victim])
    assert jobs[victim]["state"] == "finished" and jobs[victim]["failures"] == 1
    steps = starting_steps(path / "state", victim)
    assert steps[0] == 0 and steps[1] >= 10
    assert svc.drain() == 0


def test_hung_job_is_restarted(home) -> None:
    path, tag, _ = home
    svc = serve(home, "--hang-timeout", "1.5", "--grace", "0.5")
    (hung,) = svc.submit(job(tag, steps=20, mode="hang-once"))
    jobs = svc.wait_ended([hung], timeout=60)
    assert jobs[hung]["state"] == "finished" and jobs[hung]["failures"] == 1
    status, doc = svc.call("GET", f"/jobs/{hung}")
    crash = [e for e in doc["events"] if e["event"] == "crash"]  # type: ignore[index]
    assert len(crash) == 1 and crash[0]["reason"].startswith("hung: no progress report")
    assert starting_steps(path / "state", hung) == [0, 5]
    assert svc.drain() == 0


# ------------------------------------------------------------------ the API and the clients
@pytest.mark.long
def test_client_commands_submit_status_cancel_drain_and_partial_export(home) -> None:
    path, tag, _ = home
    svc = serve(home)
    jobfile = path / "jobs.toml"
    jobfile.write_text("".join(
        f'[[jobs]]\narrival = 0\ngpus = 4\ncommand = ["python3", "job.py", "4000", "ok", "{tag}"]\n'  # job 2 runs until cancelled
        for _ in range(3)
    ))  # fmt: skip
    out = cli(path, "submit", str(jobfile), "--server", svc.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "2", "3"]
    out = cli(path, "submit", "--command", f"python3 job.py 10 ok {tag}", "--gpus", "1",
              "--server", svc.url)  # fmt: skip
    assert out.stdout.split() == ["4"]
    deadline = time.monotonic() + 30
    while svc.jobs()[2]["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    status = cli(path, "status", "--server", svc.url)
    assert status.returncode == 0
    assert "2 running" in status.stdout.splitlines()[0]
    assert "GPUs 0,1,2,3" in status.stdout and "GPUs 4,5,6,7" in status.stdout
    assert cli(path, "cancel", "3", "--server", svc.url).stdout.strip() == "job 3: cancelled"
    assert cli(path, "cancel", "1", "--server", svc.url).stdout.strip() == "job 1: cancelled"
    again = cli(path, "cancel", "1", "--server", svc.url)
    assert again.returncode == 2 and "409: job 1 already ended (cancelled)" in again.stderr
    one = cli(path, "status", "1", "--server", svc.url)
    assert "job 1: cancelled" in one.stdout and " cancel " in one.stdout
    jobs = svc.wait_ended([4])
    assert jobs[4]["state"] == "finished"
    # an export while job 2 still runs: what has ended, valid
    assert cli(path, "export", "--state", "state", "--out", "mid").returncode == 0
    summary = json.loads((path / "mid" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["cancelled_job_ids"] == [1, 3]
    assert summary["unfinished_job_ids"] == [2]
    assert cli(path, "check", "mid").returncode == 0
    drained = cli(path, "drain", "--server", svc.url)
    assert drained.returncode == 0 and "1 running job(s) finish" in drained.stdout
    code, doc = svc.call("POST", "/jobs", {"jobs": [job(tag)]})
    assert code == 503 and "draining" in doc["error"]  # type: ignore[index]
    assert cli(path, "cancel", "2", "--server", svc.url).returncode == 0
    assert svc.proc is not None and svc.proc.wait(timeout=30) == 0
    gone = cli(path, "status", "--server", svc.url)
    assert gone.returncode == 2 and "no ddlsched service answers" in gone.stderr


def test_malformed_requests_get_one_line_errors_and_the_service_keeps_running(home) -> None:
    path, tag, _ = home
    token = "s3cret-token-0123456789"
    (path / "token").write_text(token + "\n")
    (path / "token").chmod(0o600)
    svc = serve(home, "--token-file", "token", token=token)
    cases = [
        ("POST", "/jobs", b"{not json", {}, 400, "not valid JSON"),
        ("POST", "/jobs", json.dumps({"jobs": [{"gpus": 1}]}).encode(), {}, 400, "missing command"),
        ("POST", "/jobs", json.dumps([{"command": ["python3", "job.py"], "gpus": "two"}]).encode(),
         {}, 400, "jobs[0].gpus"),
        ("POST", "/jobs", json.dumps({"command": ["python3", "job.py"], "gpus": 99}).encode(),
         {}, 400, "asks for 99 GPUs, the cluster has 8"),
        ("POST", "/jobs", json.dumps({"command": ["nope-no-such-program"], "gpus": 1}).encode(),
         {}, 400, "not found on PATH"),
        ("POST", "/jobs", json.dumps([]).encode(), {}, 400, "no jobs"),
        ("GET", "/jobs/999", None, {}, 404, "no job 999"),
        ("DELETE", "/jobs/abc", None, {}, 404, "job ids are positive integers"),
        ("GET", "/nowhere", None, {}, 404, "no such resource"),
        ("PUT", "/jobs", b"{}", {}, 405, "PUT is not allowed"),
        ("GET", "/jobs?state=bogus", None, {}, 400, "unknown state 'bogus'"),
        ("GET", "/jobs", None, {"Authorization": "Bearer wrong-token-000000000"}, 401, "token"),
        ("GET", "/metrics", None, {"Authorization": ""}, 401, "token"),
    ]  # fmt: skip
    for method, route, raw, headers, want, text in cases:
        code, doc = svc.call(method, route, raw=raw, headers=headers)
        assert code == want, (method, route, code, doc)
        assert isinstance(doc, dict) and text in doc["error"], (route, doc)
        assert "\n" not in doc["error"]
        assert svc.call("GET", "/health")[0] == 200  # still serving
    host, port = svc.url.removeprefix("http://").rsplit(":", 1)
    for length, want in ((None, 411), (str(2 << 30), 413)):  # no length; a huge body announced
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.putrequest("POST", "/jobs")
        conn.putheader("Authorization", f"Bearer {token}")
        conn.putheader("Content-Type", "application/json")
        if length is not None:
            conn.putheader("Content-Length", length)
        conn.endheaders()
        resp = conn.getresponse()
        doc = json.loads(resp.read())
        assert resp.status == want and "\n" not in doc["error"], doc
        conn.close()
    assert svc.call("GET", "/health")[0] == 200
    ids = svc.submit(job(tag, steps=5))
    status, page = svc.call("GET", f"/?token={token}", headers={"Authorization": ""})
    assert status == 200 and "<html" in str(page).lower()
    status, metrics = svc.call("GET", "/metrics")
    assert status == 200 and "ddlsched_submissions_total 1" in str(metrics)
    assert svc.wait_ended(ids)[ids[0]]["state"] == "finished"
    assert svc.drain() == 0
    with JobStore(path / "state") as store:
        assert len(store.jobs()) == 1  # no refused request stored anything


def test_metrics_are_prometheus_text(home) -> None:
    path, tag, _ = home
    svc = serve(home)
    ids = svc.submit(job(tag, steps=5), job(tag, mode="fail", max_restarts=1))
    svc.wait_ended(ids)
    status, text = svc.call("GET", "/metrics")
    assert status == 200
    samples = {}
    for line in str(text).splitlines():
        if line.startswith("#"):
            assert line.startswith(("# HELP ddlsched_", "# TYPE ddlsched_"))
            continue
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    assert samples["ddlsched_queue_length"] == 0 and samples["ddlsched_running_jobs"] == 0
    assert samples["ddlsched_gpus"] == 8 and samples["ddlsched_gpu_utilization"] == 0
    assert samples["ddlsched_job_completions_total"] == 1
    assert samples['ddlsched_jobs_ended_total{state="failed"}'] == 1
    assert samples["ddlsched_restarts_total"] == 1  # the failing job's one restart
    assert samples["ddlsched_submissions_total"] == 2
    assert svc.drain() == 0


def test_bad_starts_are_refused_with_one_line(home) -> None:
    path, tag, _ = home
    out = cli(path, "serve", "--cluster", "tiny", "--local", "--policy", "fifo", "--state", "s",
              "--listen", "0.0.0.0:0")  # fmt: skip
    assert out.returncode == 2 and "needs --token-file" in out.stderr
    (path / "short").write_text("abc")
    (path / "short").chmod(0o600)
    out = cli(path, "serve", "--cluster", "tiny", "--local", "--policy", "fifo", "--state", "s",
              "--token-file", "short")  # fmt: skip
    assert out.returncode == 2 and "at least 16 characters" in out.stderr
    (path / "open").write_text("a-long-enough-token-0123456789")
    (path / "open").chmod(0o644)  # issue #27: a token others can read is no secret
    out = cli(path, "serve", "--cluster", "tiny", "--local", "--policy", "fifo", "--state", "s",
              "--token-file", "open")  # fmt: skip
    assert out.returncode == 2 and "readable by others" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    svc = serve(home)
    second = cli(path, "serve", "--cluster", "tiny", "--local", "--policy", "fifo",
                 "--state", "state", "--listen", "127.0.0.1:0")  # fmt: skip
    assert second.returncode == 2 and "another ddlsched serve" in second.stderr
    assert svc.drain() == 0
    import sqlite3

    db = sqlite3.connect(path / "state" / "state.sqlite")
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    out = cli(path, "serve", "--cluster", "tiny", "--local", "--policy", "fifo", "--state",
              "state", "--listen", "127.0.0.1:0")  # fmt: skip
    assert out.returncode == 2 and "schema version 99" in out.stderr
    assert "Traceback" not in out.stderr


def test_tiresias_preempts_through_the_store_and_jobs_added_later_are_scheduled(home) -> None:
    path, tag, _ = home
    svc = serve(home, "--policy", "tiresias", "--set", "interval=0.5",
                "--set", "tiresias_thresholds=0.0005")  # fmt: skip
    (long,) = svc.submit(job(tag, steps=80, gpus=8, duration=8.0))
    deadline = time.monotonic() + 30
    while svc.jobs()[long]["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1.0)
    short = svc.submit(job(tag, steps=10, gpus=4, duration=0.5), job(tag, steps=10, gpus=4))
    jobs = svc.wait_ended([long, *short])
    assert all(jobs[i]["state"] == "finished" for i in (long, *short))
    status, doc = svc.call("GET", f"/jobs/{long}")
    kinds = [e["event"] for e in doc["events"]]  # type: ignore[index]
    assert "preempt" in kinds and kinds.count("start") >= 2 and kinds[-1] == "finish"
    assert starting_steps(path / "state", long)[-1] > 0  # resumed from its checkpoint
    assert svc.drain() == 0
    assert cli(path, "export", "--state", "state", "--out", "run").returncode == 0
    assert cli(path, "check", "run").returncode == 0
    rows = (path / "run" / "jobs.csv").read_text().splitlines()
    assert int(rows[1].rsplit(",", 1)[1]) >= 1  # job 1's preemptions


def test_status_page_in_chromium_shows_the_real_service(home) -> None:
    """The page the service serves, in headless Chromium: the embedded data and the refresh
    through ``api/overview`` with the token from the URL; a screenshot that is a picture."""
    from test_live_page import CHROMIUM, REQUIRED, chromium, rows

    if CHROMIUM is None and not REQUIRED:
        pytest.skip("Chromium not installed (see test_report_browser)")
    path, tag, _ = home
    token = "page-token-0123456789abcdef"
    (path / "token").write_text(token)
    (path / "token").chmod(0o600)
    svc = serve(home, "--token-file", "token", token=token)
    (failed,) = svc.submit(job(tag, mode="fail", max_restarts=0))
    svc.wait_ended([failed])
    (big,) = svc.submit(job(tag, steps=2000, gpus=8))
    deadline = time.monotonic() + 30
    while svc.jobs()[big]["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    (waiting,) = svc.submit(job(tag, gpus=2))
    code, doc = svc.call("GET", "/", headers={"Authorization": ""})
    assert code == 401  # the page too needs the token
    url = f"{svc.url}/?token={token}"
    dom = chromium(path / "profile", "--virtual-time-budget=4000", "--dump-dom", url)
    assert rows(dom, "queue") == [str(waiting)]
    assert rows(dom, "running") == [str(big)]
    assert rows(dom, "finished") == [str(failed)]
    gantt = re.findall(r'<rect[^>]*data-job="(\d+)"[^>]*data-gpu="(\d+)"', dom)
    assert {g for j, g in gantt if j == str(big)} == {str(g) for g in range(8)}
    assert re.search(r'id="conn"[^>]*hidden', dom)  # the refresh with the token worked
    shot = path / "shot.png"
    chromium(path / "profile2", "--virtual-time-budget=3000", f"--screenshot={shot}",
             "--window-size=1200,900", "--hide-scrollbars", url)  # fmt: skip
    import numpy as np
    from matplotlib.image import imread

    image = imread(shot)
    assert image.shape[:2] == (900, 1200)
    colours = np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 20
    assert svc.call("DELETE", f"/jobs/{big}")[0] == 200
    assert svc.drain() == 0


def test_the_status_page_link_printed_at_start_opens_in_chromium(home) -> None:
    """With the default token (generated into the state directory), the link ``serve``
    prints at start carries it, and that very link shows the page and its refresh in
    Chromium; the same address without the token is refused."""
    from test_live_page import CHROMIUM, REQUIRED, chromium, rows

    if CHROMIUM is None and not REQUIRED:
        pytest.skip("Chromium not installed (see test_report_browser)")
    path, tag, _ = home
    svc = serve(home)
    deadline = time.monotonic() + 10
    while not (links := re.findall(r"status page (\S+)", svc.log.read_text())):
        assert time.monotonic() < deadline, svc.log.read_text()
        time.sleep(0.1)
    (link,) = links
    assert link == f"{svc.url}/?token={svc.token}"
    (done,) = svc.submit(job(tag, steps=2, gpus=1))
    svc.wait_ended([done])
    dom = chromium(path / "profile", "--virtual-time-budget=4000", "--dump-dom", link)
    assert rows(dom, "finished") == [str(done)]
    assert re.search(r'id="conn"[^>]*hidden', dom)  # the refresh with the link's token worked
    refused = chromium(path / "profile2", "--virtual-time-budget=2000", "--dump-dom", svc.url + "/")
    assert 'id="finished"' not in refused and "missing or wrong token" in refused
