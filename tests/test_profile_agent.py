"""The elastic job agent hook of ProfileExecutor (Pollux's agent re-tunes the batch between
epochs and every step, without a restart; it sees every configuration the job runs)."""

from __future__ import annotations

import pytest
from _toys import toy_jobs

from ddlsched.core.cluster import Cluster
from ddlsched.core.profileexec import ProfileExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.perf.profiles import Application
from ddlsched.policies.luo import Exclusive


def app() -> Application:
    """The toy application (1 s per micro-step at every local batch ≤ 64, epochs end at
    progress 100/200/300, grad_sqr = grad_var = 1) validated at batches 32 and 64."""
    placements = [((n,), float(b), 1.0, 0.0) for n in range(1, 5) for b in (1, 64)]
    rows = [(100.0, 1.0, 1.0), (200.0, 1.0, 1.0), (300.0, 1.0, 1.0)]
    return Application("toy", placements, [], {32: rows, 64: rows}, max_epochs=3)


class DoubleAfterFirstEpoch:
    """Batch 64 from the first epoch boundary on: one replica accumulates 2 micro-steps of 32
    (2 s per iteration) at gain (1 + 1)/(1/2 + 1) = 4/3: progress 2/3 per second instead of 1."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def observe(self, run) -> None:
        self.seen.append((run.epoch, run.cfg.M))

    def rebatch(self, run) -> int | None:
        return 64 if run.epoch >= 1 else None


def _run(tmp_path, agent, semantics="events"):
    jobs = toy_jobs("a,0,toy,1,32\n", tmp_path)
    ex = ProfileExecutor({"toy": app()}, rescale_delay=0.0, semantics=semantics)
    ex.agent = agent
    sim = Simulator(
        Cluster.homogeneous(1, 1),
        jobs,
        Exclusive("fifo", order="fifo"),  # type: ignore[arg-type]
        ex,
        semantics=semantics,
        round_interval=60.0,
    )
    return sim.run()


def test_without_an_agent_the_batch_stays(tmp_path):
    # batch 32 = the initial batch: gain 1, 1 s per iteration → 300 s for 3 epochs of 100
    assert _run(tmp_path, None).jobs[0].finish == pytest.approx(300.0)
    assert _run(tmp_path, None, semantics="rounds").jobs[0].finish == pytest.approx(360.0)


def test_events_agent_rebatches_at_the_epoch_boundary_without_a_restart(tmp_path):
    agent = DoubleAfterFirstEpoch()
    res = _run(tmp_path, agent)
    # epoch 1 at batch 32 ends at 100; then batch 64: 200 more progress in 300 s
    assert res.jobs[0].finish == pytest.approx(400.0)
    assert len(res.segments) == 1 and res.jobs[0].preemptions == 0
    assert agent.seen == [(0, 32), (1, 64), (2, 64)]


def test_rounds_agent_sees_every_pass_and_rebatches(tmp_path):
    agent = DoubleAfterFirstEpoch()
    res = _run(tmp_path, agent, semantics="rounds")
    # rounds: the job starts at the round at 60; epoch 1 ends at 160, the rest takes 300 s
    assert res.jobs[0].finish == pytest.approx(460.0)
    assert len(res.segments) == 1
    # one observation per pass: steps from 60 and 120 in epoch 0, then the pass after the
    # crossing at 160 and one per step until the end, all at batch 64
    assert agent.seen[:3] == [(0, 32), (0, 32), (1, 64)]
    assert all(m == 64 for e, m in agent.seen if e >= 1) and len(agent.seen) == 9
