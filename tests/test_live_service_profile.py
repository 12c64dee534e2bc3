"""``ddlsched serve`` with a policy of application-profile jobs (live/service/profiles.py):
Sia moves a service's jobs across GPU types, every job finishes once, a restart resumes them;
submissions the profiles cannot run are refused with one line. Real processes on logical
GPUs (``--local``), loopback only; the ``home`` fixture checks that none is left."""

from __future__ import annotations

import atexit
import importlib.util
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from test_live_service import ROOT, _cmdlines, cli, home, serve  # noqa: F401 - the fixture

from ddlsched.live.service.store import JobStore

SIA = ROOT / "examples" / "live" / "sia"
# the example's made-up profiles, written by its own make_profiles.py (not kept in the
# repository) into a folder of this test module's, removed when the tests end
_spec = importlib.util.spec_from_file_location("sia_make_profiles", SIA / "make_profiles.py")
_make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_make)
_TMP = tempfile.mkdtemp(prefix="ddlsched-sia-profiles-")
atexit.register(shutil.rmtree, _TMP, True)
PROFILES = _make.write(Path(_TMP) / "profiles")
SIA_ARGS = ("--cluster", str(SIA / "cluster.toml"), "--policy", "sia",
            "--set", f"profiles={PROFILES}", "--set", "interval=2",
            "--set", "rescale_delay=1")  # fmt: skip


def train_job(path: Path, tag: str, steps: int = 40, **kw: object) -> dict:
    """The Sia example's job (examples/live/sia/jobs.toml) from a copy of train.py whose
    name carries the test's tag (so that leftovers are found by it)."""
    script = path / f"train_{tag}.py"
    if not script.exists():
        shutil.copy(ROOT / "examples" / "live" / "train.py", script)
    command = ["python3", str(script), "--steps", str(steps), "--checkpoint-every", "1",
               "--pace", "alpha", "--pace-profiles", str(PROFILES), "--pace-scale", "4"]  # fmt: skip
    return {"command": command, "gpus": 1, "app": "alpha", "batch_size": 32, **kw}


def gpu_types_started(state: Path, job_id: int) -> list[str]:
    """The GPU type of each start of a job (the example's cluster: GPUs 0–1 type a, 2–3 b)."""
    with JobStore(state) as store:
        starts = [e.detail["gpus"] for e in store.job_events(job_id) if e.event == "start"]
    return ["a" if max(g) < 2 else "b" if min(g) >= 2 else "a+b" for g in starts]


@pytest.mark.long
def test_sia_service_moves_jobs_across_gpu_types_and_each_finishes_once(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home, *SIA_ARGS)
    ids = svc.submit(*(train_job(path, tag) for _ in range(4)))
    jobs = svc.wait_ended(ids, timeout=120)
    assert all(jobs[i]["state"] == "finished" for i in ids), jobs
    types = {i: gpu_types_started(path / "state", i) for i in ids}
    assert all("a+b" not in t for t in types.values())  # a job runs on one type
    assert any(len(set(t)) > 1 for t in types.values()), types  # Sia moved one across types
    with JobStore(path / "state") as store:
        finishes = [e.job for e in store.events() if e.event == "finish"]
    assert sorted(finishes) == sorted(ids)  # each once
    assert svc.drain() == 0
    service = json.loads((path / "state" / "service.json").read_text())
    assert service["resolved"]["backend"] == "live-service-profile", service
    assert service["elastic"] is True
    out = cli(path, "export", "--state", str(path / "state"), "--out", str(path / "run"))
    assert out.returncode == 0, out.stderr
    assert json.loads((path / "run" / "summary.json").read_text())["elastic"] is True
    check = cli(path, "check", str(path / "run"))
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.solo  # a restart under time limits: alone on the machine
def test_sigterm_then_restart_resumes_the_profile_jobs(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home, *SIA_ARGS)
    ids = svc.submit(*(train_job(path, tag, steps=60) for _ in range(2)))
    deadline = time.monotonic() + 60
    while sum(j["state"] == "running" for j in svc.jobs().values()) < 2:
        assert time.monotonic() < deadline, svc.jobs()
        time.sleep(0.1)
    time.sleep(2.0)
    svc.stop()
    assert svc.proc is not None and svc.proc.returncode == 0
    assert not [p for p, c in _cmdlines().items() if tag in c]
    again = serve(home, *SIA_ARGS)
    jobs = again.wait_ended(ids, timeout=120)
    assert again.drain() == 0
    assert all(jobs[i]["state"] == "finished" for i in ids), jobs
    for i in ids:  # a later attempt resumed from its checkpoint, not from step 0
        logs = (path / "state" / "jobs" / str(i)).glob("attempt-*/rank-0.log")
        steps = [int(m) for p in logs for m in re.findall(r"starting at step (\d+)", p.read_text())]
        assert len(steps) >= 2 and max(steps) > 0, steps


def test_pollux_service_grows_a_lone_job_on_the_built_in_profiles(home) -> None:  # noqa: F811
    """Pollux in the service, on the built-in profiles (no ``--set profiles``): a job
    submitted with ``submit --command … --app --batch-size`` and alone is resized to more GPUs
    (a stop and a start from its checkpoint), and finishes once."""
    path, tag, _ = home
    svc = serve(home, "--policy", "pollux", "--set", "interval=1", "--set", "rescale_delay=1")
    command = f"python3 job.py 100 ok {tag}"
    out = cli(path, "submit", "--command", command, "--app", "cifar10", "--batch-size", "128",
              "--server", svc.url)  # fmt: skip
    assert out.returncode == 0, out.stderr
    i = int(out.stdout)
    bad = cli(path, "submit", "--command", command, "--app", "cifar10", "--batch-size", "0",
              "--server", svc.url)  # fmt: skip
    assert bad.returncode == 2 and "field '--batch-size': must be ≥ 1" in bad.stderr
    assert svc.wait_ended([i], timeout=90)[i]["state"] == "finished"
    with JobStore(path / "state") as store:
        events = store.job_events(i)
    sizes = [len(e.detail["gpus"]) for e in events if e.event == "start"]
    assert len(sizes) >= 2 and max(sizes) > 1, sizes
    assert [e.event for e in events].count("finish") == 1
    assert svc.drain() == 0


def test_a_profile_service_refuses_what_its_profiles_cannot_run(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home, *SIA_ARGS)
    good = train_job(path, tag)
    cases = [
        ({k: v for k, v in good.items() if k != "app"}, "app", "give each job an 'app'"),
        ({**good, "app": "nosuch"}, "app", "has no profile in"),
        ({k: v for k, v in good.items() if k != "batch_size"}, "batch_size", "needs a batch_size"),
    ]
    for record, field, words in cases:
        status, doc = svc.call("POST", "/jobs", {"jobs": [record]})
        assert status == 400, doc
        assert f"field '{field}'" in doc["error"] and words in doc["error"], doc  # type: ignore[index]
        assert "\n" not in doc["error"]  # type: ignore[index]
    assert svc.jobs() == {}  # nothing stored
    assert svc.drain() == 0


def test_a_trace_service_refuses_profile_jobs_and_names_the_policies_that_take_them(home) -> None:  # noqa: F811
    path, tag, _ = home
    svc = serve(home)  # fifo: trace jobs
    status, doc = svc.call("POST", "/jobs", {"jobs": [train_job(path, tag)]})
    assert status == 400 and "field 'app'" in doc["error"], doc  # type: ignore[index]
    assert "serve pollux, sia" in doc["error"]  # type: ignore[index]
    assert svc.drain() == 0


def test_a_profile_service_with_queues_admits_its_jobs_by_their_queue(home) -> None:  # noqa: F811
    """``serve --queues`` with a policy of profile jobs: the engine's view of a job keeps its
    LocalQueue and priority (the quota layer admits by them), so a job within its queue's
    quota runs and the one beyond it waits until the first is done."""
    from test_live_tenants import _queues

    path, tag, _ = home
    svc = serve(home, "--policy", "sjf-bsbf", "--queues", _queues(path))
    cmd = ["python3", "job.py", "40", "ok", tag]
    rec = {"command": cmd, "gpus": 2, "app": "cifar10", "batch_size": 128, "queue": "team-a"}
    ids = svc.submit(dict(rec, priority="high"), rec)
    jobs = svc.wait_ended(ids, timeout=90)
    assert all(jobs[i]["state"] == "finished" for i in ids), jobs
    with JobStore(path / "state") as store:
        first_end = next(e.t for e in store.job_events(ids[0]) if e.event == "finish")
        second_start = next(e.t for e in store.job_events(ids[1]) if e.event == "start")
    assert second_start >= first_end - 0.5  # team-a's quota of 2 GPUs: one job at a time
    assert svc.drain() == 0


def test_a_store_of_trace_jobs_is_not_served_by_a_profile_policy(home) -> None:  # noqa: F811
    """A state directory whose queued jobs have no ``app`` (a fifo service's), restarted with
    ``--policy pollux``: one line naming the state directory and what to do, exit 2."""
    from ddlsched.live.jobfile import LiveJob

    path, tag, _ = home
    with JobStore(path / "state") as store:
        store.submit([LiveJob(job_id=0, arrival=0.0, gpus=1, command=("sleep", tag))], 1.0)
    out = cli(path, "serve", "--local", "--cluster", "tiny", "--policy", "pollux",
              "--state", str(path / "state"), "--listen", "127.0.0.1:0", timeout=60)  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    err = out.stderr.strip().splitlines()[-1]
    assert "job 1 in the state store has no 'app': pollux schedules" in err, out.stderr


def test_a_stored_job_whose_profile_is_gone_fails_with_the_reason(home) -> None:  # noqa: F811
    """Restarted with other profiles (``--set profiles``), a queued job whose application they
    lack is failed with the reason — one line in the log — and the service runs on."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_sia_inputs import write_sia_profiles

    from ddlsched.live.jobfile import LiveJob

    path, tag, _ = home
    beta = write_sia_profiles(path / "profiles", apps=("beta",))
    with JobStore(path / "state") as store:
        job = LiveJob(job_id=0, arrival=0.0, gpus=1, command=("sleep", tag), app="alpha",
                      batch_size=32)  # fmt: skip
        (i,) = store.submit([job], 1.0)
    svc = serve(home, "--cluster", "sia-64", "--policy", "sia", "--set", f"profiles={beta}")
    got = svc.jobs()[i]
    assert got["state"] == "failed", got
    assert "cannot run on this service's profiles" in got["reason"] and "alpha" in got["reason"]
    assert f"job {i} failed: cannot run" in svc.log.read_text()
    assert svc.drain() == 0
