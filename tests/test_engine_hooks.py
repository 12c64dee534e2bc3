"""The hooks later policies build on: periodic rounds, preemption, restart delay (job level)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ddlsched import Cluster, JobSpec, ModelProfile, Policy, Simulator
from ddlsched.core.jobexec import JobExecutor
from ddlsched.policies.ordering import fifo
from ddlsched.policies.placement import FirstFit

M = ModelProfile("m", 100.0, 1000.0, 16, 0.4, 0.6)  # 1 s per iteration alone


@dataclass
class PreemptEveryRound(Policy):
    """Toy time-slicing policy: every round, stop all running jobs (they re-queue)."""

    def on_round(self, sim: Simulator) -> None:
        for job in list(sim.running.values()):
            sim.preempt(job)


def test_rounds_preempt_and_restart_delay() -> None:
    cluster = Cluster.homogeneous(1, 1)
    jobs = [JobSpec(0, 0.0, 1, 25, M)]
    policy = PreemptEveryRound("slicer", fifo, FirstFit(), interval=10.0)
    sim = Simulator(cluster, jobs, policy, JobExecutor(), restart_delay=2.0, max_jobs_per_gpu=1)
    res = sim.run()
    # rounds at t = 0, 10, 20, 30: the job runs [0,10) 10 its, is preempted at 10, restarts
    # at once but idles 2 s, runs [12,20) 8 its (18), preempted at 20, idles to 22, needs 7 more
    # → finishes at 29 (the round at 30 comes too late)
    (rec,) = res.jobs
    assert rec.finish == pytest.approx(29.0)
    assert rec.preemptions == 2
    assert [(s.start, s.end) for s in res.segments] == [(0, 10), (10, 20), (20, 29)]


def test_round_hook_called_periodically_until_done() -> None:
    calls: list[float] = []

    @dataclass
    class Recorder(Policy):
        def on_round(self, sim: Simulator) -> None:
            calls.append(sim.now)

    cluster = Cluster.homogeneous(1, 1)
    jobs = [JobSpec(0, 5.0, 1, 20, M)]
    sim = Simulator(cluster, jobs, Recorder("r", fifo, FirstFit(), interval=7.0), JobExecutor())
    res = sim.run()
    assert res.jobs[0].finish == pytest.approx(25.0)
    assert calls == [5.0, 12.0, 19.0]  # the first round at the first arrival


def test_job_level_zero_time_job_finishes_at_once() -> None:
    from ddlsched import simulate

    free = ModelProfile("free", 0.0, 1000.0, 16, 0.0, 0.0)
    res = simulate(
        Cluster.homogeneous(1, 2),
        [JobSpec(0, 3.0, 2, 10, free)],
        "srsf1",
        settings={"granularity": "job"},
    )
    assert res.jobs[0].finish == pytest.approx(3.0)
