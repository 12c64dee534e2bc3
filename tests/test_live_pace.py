"""The live executor's measure of a job's pace (seconds per step, what Pollux and Sia refit
their models from): taken between reports made at the same point of the training loop, so a
job's start report, made before its first iteration, does not shorten it."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ddlsched.core.cluster import Cluster
from ddlsched.core.realtime import RealtimeSimulator
from ddlsched.live.executor import LiveExecutor
from ddlsched.live.jobfile import LiveJob
from ddlsched.live.run import to_specs

sys.path.insert(0, str(Path(__file__).parent))
from test_live_statemachine import FakeLauncher, GreedyFifo  # noqa: E402

STEP = 0.05  # seconds each iteration lasts, its sleep included
T0 = 1_000.0


def report(step: int) -> dict:
    """What examples/live/train.py writes: the start report at once, then one report after
    each iteration's work, which is followed by the iteration's sleep; so the first step's
    report comes a few ms after the start report, later ones ``STEP`` apart."""
    if step == 0:
        return {"time": T0, "step": 0, "event": "start"}
    return {"time": T0 + 0.006 + (step - 1) * STEP, "step": step}


def test_the_start_report_is_no_base_for_the_pace() -> None:
    clock = [0.0]
    launcher = FakeLauncher(Cluster.homogeneous(1, 1))
    job = LiveJob(job_id=0, arrival=0.0, gpus=1, command=("x",))
    ex = LiveExecutor(launcher, {0: job}, tempfile.mkdtemp(prefix="ddl-pace-"), grace=1.0)
    sim = RealtimeSimulator(
        launcher.cluster(),
        to_specs([job], 1.0),
        GreedyFifo(),
        ex,
        poll_interval=0.2,
        clock=lambda: clock[0],
        sleep=lambda s: None,
    )
    sim._t0 = 0.0
    sim.now = 0.0
    state = sim.jobs[0]
    sim._arrive(state)
    sim._policy_pass()
    assert launcher.launches == [(0, (0,))]
    seen = []
    # each poll sees the latest line of the progress file: the start report, then step 5, 10
    for step in (0, 5, 10):
        launcher.gangs[0].progress = report(step)
        clock[0] += 0.3
        ex.poll()
        seen.append(ex.step_time(state, least=5))
    # from the start report, (0.006 + 4 · 0.05) / 5 = 0.0412 s: shorter than any iteration
    assert seen[:2] == [None, None]
    assert abs(seen[2] - STEP) < 1e-9, seen
