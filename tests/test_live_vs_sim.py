"""Policies decide alike live and simulated (issue #26, item 3): the same jobs run live (real
processes, ``ddlsched live --local``) and in the simulator (the job file's estimates as the
jobs' model), and the decisions of the first instant — which jobs start, on which GPUs, how
many, shared or not, with which batch — are equal, for fifo, sjf, tiresias, pollux, sjf-ffs
and sjf-bsbf.

Where the inputs are equal they must be: at t = 0 the live engine and the simulator see the
same queue, the same idle GPUs and the same estimates (the job file's ``duration``, or the
application profile). Later decisions differ for a reason each: a live job's real length is
not its estimate (it finishes when its process exits; a profile's cifar10 job lasts minutes,
these jobs seconds), and a preemption there costs a stop and a start-up (``ddlsched replay``
simulates those). Bounded in time, loopback only, nothing left behind.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from _processes import tagged_left

from ddlsched.api import build_simulator
from ddlsched.core.cluster_io import load_cluster
from ddlsched.live.jobfile import read_live_jobs
from ddlsched.live.profile import to_profile_specs
from ddlsched.live.run import to_specs
from ddlsched.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "examples" / "live" / "train.py"

# (gpus, estimated seconds) of five jobs arriving together on 4 GPUs
TRACE_JOBS = [(2, 6.0), (1, 2.0), (2, 4.0), (1, 1.0), (1, 3.0)]
# the same shape for the whole-run comparison, lengths 1 s apart (0.5 s per estimated second):
# with TRACE_JOBS' 0.5 s, under load a 1.5-s job once measured 2.62 s and a 2-s one 2.53 s,
# and the replay's SJF, which orders by the measured lengths, started the other first
REPLAY_JOBS = [(2, 9.0), (1, 3.0), (2, 7.0), (1, 1.0), (1, 5.0)]
# (gpus, batch) of six cifar10 jobs arriving together on 4 GPUs (more jobs than GPUs: Pollux
# gives four of them one GPU each, as live under the 8 jobs on 6 GPUs)
PROFILE_JOBS = [(1, 128), (2, 128), (1, 128), (2, 128), (1, 128), (1, 128)]


def _job_file(path: Path, tag: str, profile: bool, rows: list | None = None) -> None:
    text = ""
    rows = rows or (PROFILE_JOBS if profile else TRACE_JOBS)
    for i, (gpus, x) in enumerate(rows):
        cmd = [
            sys.executable,
            "-X",
            f"tag={tag}",
            str(TRAIN),
            "--steps",
            # trace jobs last what their estimate says, scaled (0.5 s per estimated 1 s): the
            # measured lengths order as the estimates do, far apart against the noise
            "20" if profile else str(int(10 * x)),
            "--step-time",
            "0.05",
        ]
        extra = f'app = "cifar10"\nbatch_size = {x}\n' if profile else f"duration = {x}\n"
        text += (
            f"[[jobs]]\njob_id = {i}\narrival = 0.0\ngpus = {gpus}\n"
            f"command = {json.dumps(cmd)}\n{extra}\n"
        )
    path.write_text(text)


def _live_first(out: Path) -> dict[int, tuple[tuple[int, ...], object]]:
    """Live decisions at the first instant: job → (GPUs, batch) of the starts at t ≈ 0."""
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    starts = [e for e in events if e["event"] == "start"]
    t0 = min(e["t"] for e in starts)
    return {
        e["job"]: (tuple(e["gpus"]), e.get("batch"))
        for e in starts
        if e["t"] <= t0 + 0.05 and e["attempt"] == 0
    }


def _sim_first(sim) -> dict[int, tuple[tuple[int, ...], object]]:  # noqa: ANN001
    res = sim.run()
    t0 = min(s.start for s in res.segments)
    out = {}
    for s in res.segments:
        if s.start == t0 and s.job_id not in out:
            job = next(j for j in sim.jobs if j.job_id == s.job_id)
            out[s.job_id] = (tuple(job.segments[0].gpus), None)
    return out


@pytest.fixture
def tag():
    """A tag on the jobs' command lines; afterwards none of them may be left running."""
    t = f"lvs{uuid.uuid4().hex[:8]}"
    yield t
    assert tagged_left(t) == [], "job processes left running"


@pytest.mark.parametrize(
    ("policy", "profile", "sets"),
    [
        ("fifo", False, []),
        ("sjf", False, []),
        ("tiresias", False, ["interval=1"]),
        ("pollux", True, ["interval=1"]),
        ("sjf-ffs", True, []),
        ("sjf-bsbf", True, []),
    ],
)
def test_first_decisions_are_the_simulators(tmp_path, tag, policy, profile, sets) -> None:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('name = "four"\n[[servers]]\nnum_gpus = 2\ncount = 2\n')
    jobs = tmp_path / "jobs.toml"
    _job_file(jobs, tag, profile)
    out = tmp_path / "out"
    args = [a for s in sets for a in ("--set", s)]
    proc = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "live", "--local", "--cluster", str(cluster),
         "--workload", str(jobs), "--policy", policy, *args, "--quiet", "--out", str(out)],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    live = _live_first(out)

    specs_of = to_profile_specs if profile else to_specs
    settings = Settings.from_mapping(dict(s.split("=", 1) for s in sets))
    sim = build_simulator(
        load_cluster(str(cluster)), specs_of(read_live_jobs(str(jobs)), 1.0), policy,
        settings=settings,
    )  # fmt: skip
    simulated = _sim_first(sim)
    if policy == "pollux":
        # its first round with GPUs comes at t = 1 s (at t = 0 every restart factor is 0 and
        # it allocates nothing). All six jobs then tie (speedup 1 on one GPU, the same restart
        # factor), and the live round runs microseconds later, where that factor
        # (age − 30 s × restarts) / (age + 30 s) is another float for every job alike: the
        # search may break the tie for other jobs. What must be equal: how many jobs start,
        # on how many GPUs each, on which GPUs
        def shape(first: dict) -> tuple:
            gpus = [g for gs, _ in first.values() for g in gs]
            return sorted(len(g) for g, _ in first.values()), sorted(gpus)

        assert shape(live) == shape(simulated), (live, simulated)
    else:
        assert {j: g for j, (g, _) in live.items()} == {j: g for j, (g, _) in simulated.items()}, (
            live,
            simulated,
        )
    if policy == "pollux":  # Pollux's batch reaches the processes
        assert all(batch is not None for _, batch in live.values()), live
    with open(out / "jobs.csv") as f:
        assert len(list(csv.DictReader(f))) == len(PROFILE_JOBS if profile else TRACE_JOBS)


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_every_decision_is_the_replays(tmp_path, tag, policy) -> None:
    """Where the inputs are equal for the whole run — the replay simulates the jobs as the live
    run measured them, deciding at its polls, and the jobs' real lengths order as the job
    file's estimates that live SJF orders by — fifo and sjf make every decision alike: each
    job starts in the same order on the same GPUs. (Where lengths and estimates order jobs
    differently, live SJF and its replay differ by design: docs/live.md "Replay". So the
    lengths lie 1 s apart, wide against the start-up noise of a loaded machine.)"""
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('name = "four"\n[[servers]]\nnum_gpus = 2\ncount = 2\n')
    jobs = tmp_path / "jobs.toml"
    _job_file(jobs, tag, profile=False, rows=REPLAY_JOBS)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))

    def ddl(*args: str) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "ddlsched.cli", *args], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr

    ddl("live", "--local", "--cluster", str(cluster), "--workload", str(jobs), "--policy",
        policy, "--quiet", "--out", str(tmp_path / "live"))  # fmt: skip
    ddl("replay", str(tmp_path / "live"), "--policy", policy, "--out", str(tmp_path / "sim"))

    def starts(run: Path) -> list[tuple[int, str]]:
        with open(run / "segments.csv") as f:
            rows = sorted(csv.DictReader(f), key=lambda r: (float(r["start"]), r["job_id"]))
        return [(int(r["job_id"]), r["placement"]) for r in rows]

    live, replayed = starts(tmp_path / "live"), starts(tmp_path / "sim")
    assert live == replayed, (live, replayed)
