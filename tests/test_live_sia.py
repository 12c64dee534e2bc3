"""Sia live (issue #29, item 4): ``ddlsched live --policy sia`` on a cluster file with two GPU
types of logical GPUs. Each round Sia's ILP picks every job's GPU type and count; jobs are
stopped (they checkpoint) and restarted on the other type or count; each job learns its GPUs
and type (``DDLSCHED_GPUS``, ``DDLSCHED_GPU_TYPE``) and, with ``train.py --pace-profiles``,
runs at its type's profiled speed; Sia's per-type throughput models are refit from the
measured iteration times (``observe_measured``).

Profiles: small ones of our own in Sia's layout (tests/test_sia_inputs.py), type ``b`` three
times slower than ``a``. The live run uses plain subprocesses (``--local``), is bounded in
time, and checks that no process it started is left.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from _processes import cmdlines, run_cli, tagged_left
from test_sia_inputs import write_sia_profiles

from ddlsched.core.cluster_io import load_cluster
from ddlsched.live.executor import gpu_types_of
from ddlsched.perf.typed_profiles import load_sia_application
from ddlsched.policies.sia import Sia, restart_penalty

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "examples" / "live" / "train.py"

#: per type: (GPUs per node, nodes of a placement, nodes of a scalability row, step-time
#: factor, local batches) — ``b``'s steps take three times ``a``'s
TYPES = {"a": (2, 1, 1, 1.0, (8, 16, 32)), "b": (2, 1, 1, 3.0, (8, 16, 32))}

CLUSTER = """name = "live-ab"
[gpu_types.a]
speed = 1.0
[gpu_types.b]
speed = 1.0
[[servers]]
num_gpus = 2
gpu_type = "a"
[[servers]]
num_gpus = 2
gpu_type = "b"
"""


def _profiles(tmp: Path) -> Path:
    return write_sia_profiles(tmp / "prof", apps=("alpha",), types=TYPES)


def _jobs(tmp: Path, tag: str, profiles: Path, n: int = 4, steps: int = 80) -> Path:
    """``n`` jobs of application ``alpha``, paced by their type's table (× 4: 0.10 s a step
    on one ``a`` GPU at batch 32, 0.31 s on ``b``), checkpointing every step."""
    text = ""
    for i in range(n):
        cmd = [
            sys.executable,
            "-X",
            f"tag={tag}",
            str(TRAIN),
            *("--steps", str(steps), "--checkpoint-every", "1"),
            *("--pace", "alpha", "--pace-profiles", str(profiles), "--pace-scale", "4"),
        ]
        text += (
            f'[[jobs]]\njob_id = {i}\narrival = {0.5 * i}\ngpus = 1\napp = "alpha"\n'
            f"batch_size = 32\ncommand = {json.dumps(cmd)}\n\n"
        )
    (tmp / "jobs.toml").write_text(text)
    return tmp / "jobs.toml"


def _ddl(*args: str, timeout: float = 90.0, **kw):
    return run_cli(*args, timeout=timeout, **kw)


def _tagged(tag: str) -> list[int]:
    return [pid for pid, cmd in cmdlines().items() if tag in cmd and pid != os.getpid()]


def _attempt_logs(out: Path, job: int) -> list[tuple[int, int | None, int | None]]:
    """Per attempt of ``job`` (in order): the step it started at, the step it stopped at
    after checkpointing (None: it was not asked to stop after a step), the last step of a
    finished run (None: not finished) — from rank 0's log of ``train.py``."""
    out_rows = []
    attempts = sorted(
        (out / "jobs" / str(job)).glob("attempt-*"), key=lambda p: int(p.name.split("-")[1])
    )
    for a in attempts:
        text = (a / "rank-0.log").read_text()
        start = re.search(r"starting at step (\d+)", text)
        stop = re.search(r"stopped at step (\d+) \(checkpointed\)", text)
        done = re.search(r"done: steps (\d+)\.\.(\d+)", text)
        out_rows.append(
            (
                int(start.group(1)) if start else -1,
                int(stop.group(1)) if stop else None,
                int(done.group(2)) if done else None,
            )
        )
    return out_rows


# ---------------------------------------------------------------------- the pieces
def test_the_job_is_told_its_gpu_type() -> None:
    cl = load_cluster("sia-physical-44")  # 3 rtx × 8, 2 dgx-ext × 8, 1 quad × 4
    assert gpu_types_of(cl, [0, 1]) == "rtx"
    assert gpu_types_of(cl, [24, 25, 26]) == "dgx-ext"
    # a policy that mixes types (not Sia): the types in the order of the job's GPUs
    assert gpu_types_of(cl, [41, 3, 40]) == "rtx,quad"


def test_train_py_paces_each_type_by_its_own_table(tmp_path: Path) -> None:
    """``--pace-profiles DIR`` in Sia's layout: the step lasts the table of the job's GPU type
    (``DDLSCHED_GPU_TYPE``), so a logical GPU of a slower type runs the job slower."""
    prof = _profiles(tmp_path)
    spec = importlib.util.spec_from_file_location("train_example", TRAIN)
    assert spec is not None and spec.loader is not None
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    on = {t: train.pace_step_time("alpha", 4.0, [0], 2, 32, str(prof), t) for t in ("a", "b")}
    a = load_sia_application(prof / "alpha", "a")
    assert on["a"] == pytest.approx(4.0 * a.iteration_time((1,), a.batch_config(1, 32)))
    assert on["b"] == pytest.approx(3.0 * on["a"])  # b's factor 3 (sync 0 on one GPU)
    # two GPUs of b on one server, total batch 32: local 16 on placement (2,)
    b = load_sia_application(prof / "alpha", "b")
    two = train.pace_step_time("alpha", 1.0, [2, 3], 2, 32, str(prof), "b")
    assert two == pytest.approx(b.iteration_time((2,), b.batch_config(2, 32)))


def test_sia_refits_the_model_of_the_type_the_job_measured_on(tmp_path: Path) -> None:
    """``Sia.observe_measured``: a live measurement replaces the profile's (step, sync) in the
    job's model *of the GPU type it runs on* — scaled to one synchronising step, the sync share
    the type's profile's — and leaves its other types' models alone."""
    prof = _profiles(tmp_path)
    apps = {t: load_sia_application(prof / "alpha", t) for t in TYPES}
    cl = load_cluster(str(_cluster(tmp_path)))
    agent = Sia()
    agent.sim = SimpleNamespace(cluster=cl)  # type: ignore[assignment]
    agent.ex = SimpleNamespace(application_on=lambda job, t: (apps[t], 1.0))  # type: ignore[assignment]
    job = SimpleNamespace(job_id=7, gpus=[2, 3])  # both GPUs of the b server
    b = apps["b"]
    cfg = b.batch_config(2, 32)
    run = SimpleNamespace(app=apps["a"], cfg=cfg, placement=(2,), job=job)
    p_step, p_sync = b.step_time((2,), cfg.a)
    t_iter = b.iteration_time((2,), cfg)
    step, sync = agent.observe_measured(run, 2.0 * t_iter)  # twice the profile's pace
    assert step == pytest.approx(2.0 * p_step) and sync == pytest.approx(2.0 * p_sync)
    fits = agent._fits[7]
    assert set(fits) == {"b"}
    assert fits["b"].profile[(1, 2, cfg.a)] == pytest.approx((step, sync))
    assert fits["b"].params is not None  # refit from the measurement
    again, _ = agent.observe_measured(run, t_iter)  # a later measurement replaces it
    assert fits["b"].profile[(1, 2, cfg.a)][0] == pytest.approx(again) == pytest.approx(p_step)


def test_a_live_jobs_restart_penalty_is_its_applications() -> None:
    """Sia's penalty goes by the job's name (sia.py:23-35); a live job's name is its command
    line, so a name without Sia's keys takes its application's; the artifact's names
    (``<application>-<i>``) keep theirs."""
    assert restart_penalty("python3 examples/live/train.py --steps 80", "imagenet") == 250.0
    assert restart_penalty("python3 train_resnet.py", "bert") == 120.0
    assert restart_penalty("imagenet-3", "imagenet") == 250.0
    assert restart_penalty("cifar10-0", "imagenet") == 30.0  # the name wins, as in Sia
    assert restart_penalty("python3 train.py", "alpha") == 30.0


def test_a_job_restarted_after_its_model_ended_runs_on(tmp_path: Path) -> None:
    """A live (or replayed) job's model may run out of epochs before the real job ends; Sia
    then moves it, and the restart asked its rate at an epoch past the profile's last: "the
    profiles have no step time there (alpha: epoch 3 outside [0, 2])" ended the run. The
    model now stays at its end, in its last epoch (``ProfileExecutor._model_ended``). Here
    through the replay's executor (the live one shares the method): three calibrated jobs
    whose work outlasts their model by far, moved and resized by sia."""
    from ddlsched.api import build_simulator
    from ddlsched.replay_profile import ProfileJob, ReplayProfileBackend
    from ddlsched.settings import Settings

    prof = _profiles(tmp_path)
    cl = load_cluster(str(_cluster(tmp_path)))
    jobs = [ProfileJob(i, 0.5 * i, 1, "alpha", 32, 20_000.0, 4.0, 0.5, 0.5, 0.3) for i in range(3)]
    settings = Settings.from_mapping({"profiles": str(prof), "interval": 3, "rescale_delay": 1})
    sim = build_simulator(
        cl,
        [j.spec() for j in jobs],
        "sia",
        settings=settings,
        backend=ReplayProfileBackend(jobs, 0.2),
    )
    res = sim.run()
    assert sorted(j.job_id for j in res.jobs) == [0, 1, 2]
    assert sum(j.preemptions for j in res.jobs) >= 1
    ex = sim.executor
    for j in jobs:  # every model ended long before its work: still at its end, last epoch
        r = ex.runs[j.job_id]
        assert r.epoch == r.app.max_epochs - 1 and r.progress == r.app.progress_at(r.app.max_epochs)


def _cluster(tmp: Path) -> Path:
    (tmp / "cluster.toml").write_text(CLUSTER)
    return tmp / "cluster.toml"


# ---------------------------------------------------------------------- bad input
def test_a_type_without_a_profile_for_the_jobs_app_is_one_line_and_starts_nothing(
    tmp_path: Path,
) -> None:
    prof = _profiles(tmp_path)
    for f in ("placements-b.csv", "scalability-b.csv"):
        (prof / "alpha" / f).unlink()
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    jobs = _jobs(tmp_path, tag, prof, n=1)
    out = tmp_path / "out"
    r = _ddl(
        *("live", "--local", "--cluster", str(_cluster(tmp_path)), "--workload", str(jobs)),
        *("--policy", "sia", "--set", f"profiles={prof}", "--quiet", "--out", str(out)),
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == "", r.stderr
    assert r.stderr.startswith(f"ddlsched: error: {prof / 'alpha'}, field 'profiles': ")
    assert "no placements-b.csv" in r.stderr and "GPU type 'b' of cluster 'live-ab'" in r.stderr
    assert not out.exists() and _tagged(tag) == []


def test_a_cluster_files_type_profiles_without_the_app_is_one_line(tmp_path: Path) -> None:
    """The other way to give a type its tables: ``[gpu_types.b] profiles = "DIR"`` (Pollux's
    layout) — a DIR without the job's application names the cluster file and the field."""
    prof = _profiles(tmp_path)
    other = tmp_path / "b-tables" / "other"
    other.mkdir(parents=True)
    for f in (prof / "alpha").iterdir():  # a Pollux-layout application folder, 'other'
        name = f.name.replace("-b.csv", ".csv")
        if not f.name.endswith("-a.csv"):
            (other / name).write_text(f.read_text())
    cluster = _cluster(tmp_path)
    cluster.write_text(CLUSTER.replace("[gpu_types.b]\n", '[gpu_types.b]\nprofiles = "b-tables"\n'))
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    jobs = _jobs(tmp_path, tag, prof, n=1)
    r = _ddl(
        *("live", "--local", "--cluster", str(cluster), "--workload", str(jobs)),
        *("--policy", "sia", "--set", f"profiles={prof}", "--quiet"),
        *("--out", str(tmp_path / "out")),
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"ddlsched: error: {cluster}, line ")
    assert "field 'gpu_types.b.profiles'" in r.stderr and "alpha" in r.stderr
    assert _tagged(tag) == []


# ---------------------------------------------------------------------- the live run
@pytest.mark.long
def test_sia_moves_and_resizes_real_jobs_across_gpu_types(tmp_path: Path) -> None:
    """Four paced jobs on 2 ``a`` + 2 ``b`` logical GPUs under ``sia`` (a round every 3 s):
    every start names its GPU type; the jobs measure ``b`` three times slower than ``a`` and
    Sia's models learn it (``measured`` events); some job runs on both types or on two GPU
    counts (stopped, checkpointed, restarted); every attempt resumes at the step the last one
    checkpointed and every job ends at its last step (no step lost or repeated); the run
    passes ``ddlsched check`` and replays under sia, each attempt calibrated on its type's
    table; nothing is left running."""
    prof = _profiles(tmp_path)
    tag = f"ddltest-{uuid.uuid4().hex[:12]}"
    jobs = _jobs(tmp_path, tag, prof)
    out = tmp_path / "out"
    t0 = time.monotonic()
    try:
        r = _ddl(
            *("live", "--local", "--cluster", str(_cluster(tmp_path)), "--workload", str(jobs)),
            *("--policy", "sia", "--set", f"profiles={prof}", "--set", "interval=3"),
            *("--set", "rescale_delay=1", "--grace", "5", "--quiet", "--out", str(out)),
        )
    finally:
        assert tagged_left(tag) == []
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ran sia on backend live-profile")
    ev = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    assert sorted(e["job"] for e in ev if e["event"] == "finish") == [0, 1, 2, 3]
    starts = [e for e in ev if e["event"] == "start"]
    type_of = {0: "a", 1: "a", 2: "b", 3: "b"}
    for e in starts:  # the start names the type, one type per job, that of its GPUs
        assert e["gpu_type"] == type_of[e["gpus"][0]] and {type_of[g] for g in e["gpus"]} == {
            e["gpu_type"]
        }, e
    ran: dict[int, set[tuple[str, int]]] = {}
    for e in starts:
        ran.setdefault(e["job"], set()).add((e["gpu_type"], len(e["gpus"])))
    changed = {j: s for j, s in ran.items() if len(s) > 1}
    assert changed, f"no job was moved or resized: {ran}"
    moved = [j for j, s in ran.items() if len({t for t, _ in s}) > 1]
    # Sia's models are refit from the jobs' measurements, per type: b's iterations measured
    # about 3× a's (each job paced by its type's table, DDLSCHED_GPU_TYPE)
    measured = [e for e in ev if e["event"] == "measured"]
    one = {t: [e["iteration_s"] for e in measured if e["gpu_type"] == t and e["placement"] == [1]]
           for t in ("a", "b")}  # fmt: skip
    assert one["a"] and one["b"], measured
    ratio = min(one["b"]) / max(one["a"])
    assert 2.0 < ratio < 4.0, one
    assert all(
        e["step_s"] == pytest.approx(e["iteration_s"]) for e in measured if e["placement"] == [1]
    )
    # the model's configuration is the processes': a measurement is of the batch the attempt
    # was started with (DDLSCHED_BATCH_SIZE), never of a re-tune the processes did not see
    for m in measured:
        attempt = [e for e in starts if e["job"] == m["job"] and e["t"] <= m["t"]][-1]
        assert m["batch"] == int(attempt["batch"]), (m, attempt)
    # checkpointed progress intact: each attempt starts where the last one stopped
    for job in range(4):
        rows = _attempt_logs(out, job)
        assert rows and rows[0][0] == 0, (job, rows)
        for (start, stop, done), (nxt, _, _) in zip(rows, rows[1:], strict=False):
            assert done is None, (job, rows)  # only the last attempt finishes
            # stopped after a step: resumes there; stopped before its first step (SIGTERM
            # before the first should_stop): resumes where that attempt had started
            assert nxt == (stop if stop is not None else start), (job, rows)
        # the last attempt ends at step 80: finished, or asked to stop while it finished (a
        # stop request that meets the last step: checkpointed at 80, recorded as a finish)
        assert 80 in (rows[-1][2], rows[-1][1]), (job, rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attempts_restarted"] >= 1 and summary["failed_jobs"] == 0
    check = _ddl("check", str(out), timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    rep = _ddl("replay", str(out), "--policy", "sia", "--quiet", "--out", str(tmp_path / "rp"))
    assert rep.returncode == 0, rep.stderr
    assert json.loads((tmp_path / "rp" / "summary.json").read_text())["num_jobs"] == 4
    # each attempt calibrated on its own type's table: every job's measured steps are the
    # pace scale (4) × its profile's, the jobs that ran on b included. A loaded machine only
    # slows the steps (a bare CI clone under load measured 4.85), so the upper bound is loose;
    # a step calibrated on the other type's table would read 4 × 3 = 12 or 4 / 3 = 1.3
    with open(tmp_path / "rp" / "replay-jobs.csv") as f:
        scales = {int(row["job_id"]): float(row["scale"]) for row in csv.DictReader(f)}
    assert all(3.4 < x < 6.5 for x in scales.values()), scales
    print(f"sia live: wall {wall:.1f} s, jobs moved across types {moved}, ran {ran}")


# ---------------------------------------------------------------------- the example
def test_the_sia_live_example_is_consistent(tmp_path: Path) -> None:
    """examples/live/sia: make_profiles.py writes the profiles (our own numbers, not kept in
    the repository) and the scripts run it before they need them, the job file's commands
    exist from the repository root and pace by those profiles, the cluster has the two types,
    and moves.py counts moves and resizes."""
    from ddlsched.live.jobfile import check_commands, read_live_jobs

    ex = ROOT / "examples" / "live" / "sia"
    r = subprocess.run(
        [sys.executable, str(ex / "make_profiles.py"), str(tmp_path / "p")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    made = sorted(str(p.relative_to(tmp_path / "p")) for p in (tmp_path / "p").rglob("*.csv"))
    assert made == [f"alpha/{n}.csv" for n in (
        "placements-a", "placements-b", "scalability-a", "scalability-b",
        "validation-128", "validation-256", "validation-32", "validation-64")]  # fmt: skip
    # written on use, never committed
    assert "examples/live/sia/profiles/" in (ROOT / ".gitignore").read_text().splitlines()
    cl = load_cluster(str(ex / "cluster.toml"))
    assert cl.typed and cl.gpu_types == {"a": 2, "b": 2}
    jobs = read_live_jobs(ex / "jobs.toml")
    assert len(jobs) == 4 and all(j.app == "alpha" and j.batch_size for j in jobs)
    assert all("examples/live/sia/profiles" in j.command for j in jobs)
    check_commands(jobs, str(ex / "jobs.toml"), cwd=str(ROOT))
    text = (ex / "run.sh").read_text()
    assert "--policy sia" in text and "--set profiles=examples/live/sia/profiles" in text
    assert text.index("make_profiles.py") < text.index("ddlsched live")  # profiles first
    ray_text = (ex / "run_ray.py").read_text()
    assert ray_text.index('write(Path("examples/live/sia/profiles"))') < ray_text.index(
        '"ddlsched", "live"'
    )
    assert subprocess.run(["sh", "-n", str(ex / "run.sh")], timeout=30).returncode == 0
    run = tmp_path / "run"
    run.mkdir()
    events = [
        {"event": "start", "job": 0, "gpus": [0], "gpu_type": "a"},
        {"event": "start", "job": 1, "gpus": [2], "gpu_type": "b"},
        {"event": "start", "job": 1, "gpus": [2, 3], "gpu_type": "b"},
        {"event": "start", "job": 1, "gpus": [0], "gpu_type": "a"},
    ]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    out = subprocess.run(
        [sys.executable, str(ex / "moves.py"), str(run)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "job 0: ax1",
        "job 1: bx1 -> bx2 -> ax1",
        "moves across GPU types 1, resizes within a type 1",
    ]


def test_a_ray_clusters_accelerator_types_are_declared_gpu_types(tmp_path: Path) -> None:
    """``live --ray-address``: Ray nodes that name their accelerator (``accelerator_type:X``)
    make a cluster with declared GPU types, on which Sia's per-type profiles load (before, the
    types were undeclared and Sia refused: "run it on a cluster that declares its GPU types").
    The node records are ``ray.nodes()``'s shape; no Ray is started."""
    from ddlsched.backends.profile import load_job_applications
    from ddlsched.core.job import JobSpec
    from ddlsched.live.launchers.ray import nodes_cluster
    from ddlsched.settings import Settings
    from ddlsched.workloads.trace_formats import placeholder_model

    def node(ip: str, nid: str, gpus: float, kind: str | None, alive: bool = True) -> dict:
        res = {"CPU": 8.0, "GPU": gpus, **({f"accelerator_type:{kind}": 1.0} if kind else {})}
        return {"Alive": alive, "NodeManagerAddress": ip, "NodeID": nid, "Resources": res}

    nodes = [
        node("10.0.0.2", "n2", 2, "b"),
        node("10.0.0.1", "n1", 2, "a"),
        node("10.0.0.3", "n3", 0, None),  # the head, no GPU
        node("10.0.0.4", "n4", 4, "a", alive=False),
    ]
    found = nodes_cluster(nodes)
    assert found is not None
    cluster, ips = found
    assert ips == ["10.0.0.1", "10.0.0.2"]
    assert [(s.gpu_type, s.num_gpus) for s in cluster.servers] == [("a", 2), ("b", 2)]
    assert cluster.typed is True
    profiles = tmp_path / "profiles"
    write_sia_profiles(profiles, apps=("alpha",), types=TYPES)
    spec = JobSpec(0, 0.0, 1, 0, placeholder_model("alpha"), application="alpha", batch_size=32)
    settings = Settings(profiles=str(profiles))
    _, type_apps, _ = load_job_applications(cluster, [spec], settings)
    assert {t for t, apps in type_apps.items() if "alpha" in apps} == {"a", "b"}
    # nodes that name no accelerator: one untyped "GPU" type, as before
    plain, _ = nodes_cluster([node("10.0.0.1", "n1", 2, None)]) or (None, None)
    assert plain is not None and not plain.typed and plain.servers[0].gpu_type == "GPU"
    assert nodes_cluster([node("10.0.0.3", "n3", 0, None)]) is None
