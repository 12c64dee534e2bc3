"""``backfill`` for the job-level ``fifo`` and ``sjf`` (issue #11 §3): by default a job that
does not fit is skipped and later jobs that fit start (today's behaviour); ``backfill=false``
is strict order — the first waiting job blocks the queue until it fits. Hand-worked."""

from __future__ import annotations

import pytest
from _toys import toy_app, toy_jobs

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.profileexec import ProfileExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.errors import InputError
from ddlsched.policies.luo import Exclusive

TRACE = ModelProfile("trace", 0.0, 0.0, 0, 0.0, 0.0)


def starts(policy: str, rows, **settings) -> dict[int, float]:
    """Start time by job of duration jobs (arrival, GPUs, duration) on 1 server × 2 GPUs."""
    jobs = [JobSpec(i, a, g, 0, TRACE, duration=d) for i, (a, g, d) in enumerate(rows)]
    res = simulate(Cluster.homogeneous(1, 2), jobs, policy, settings=settings)
    return {j.job_id: j.start for j in res.jobs}


# B (1 GPU, 100 s) runs from 0; A (2 GPUs, 50 s) arrives at 10 and cannot fit; C (1 GPU, 30 s)
# arrives at 20. With backfill C takes the free GPU at once (20–50) and A starts when B ends
# (100). Without, A blocks the queue: A starts at 100 on both GPUs, C after it at 150.
FIFO_ROWS = [(0.0, 1, 100.0), (10.0, 2, 50.0), (20.0, 1, 30.0)]


def test_fifo_backfills_by_default():
    assert starts("fifo", FIFO_ROWS) == {0: 0.0, 1: 100.0, 2: 20.0}
    assert starts("fifo", FIFO_ROWS, backfill="true") == {0: 0.0, 1: 100.0, 2: 20.0}


def test_fifo_without_backfill_keeps_strict_order():
    assert starts("fifo", FIFO_ROWS, backfill="false") == {0: 0.0, 1: 100.0, 2: 150.0}


# SJF: the 2-GPU job A is the shortest (20 s) so it heads the queue; C (1 GPU, 30 s) is
# longer. With backfill C starts at 20; without, C waits for A (100–120) → starts at 120.
SJF_ROWS = [(0.0, 1, 100.0), (10.0, 2, 20.0), (20.0, 1, 30.0)]


@pytest.mark.parametrize(
    ("backfill", "expected"),
    [("true", {0: 0.0, 1: 100.0, 2: 20.0}), ("false", {0: 0.0, 1: 100.0, 2: 120.0})],
)
def test_sjf_backfill(backfill, expected):
    assert starts("sjf", SJF_ROWS, backfill=backfill) == expected


def test_profile_fifo_without_backfill(tmp_path):
    # application-profile jobs on 2 GPUs (300 s alone each, no restart delay): b (1 GPU) from
    # 0, a (2 GPUs) at 10, c (1 GPU) at 20. Strict FIFO: a at 300 (b ends), c at 600 (a ends).
    # Backfill: c at 20 on the free GPU, so a waits for both b and c: 320.
    jobs = toy_jobs("b,0,toy,1,32\na,10,toy,2,32\nc,20,toy,1,32\n", tmp_path)
    for backfill, a_start, c_start in ((True, 320.0, 20.0), (False, 300.0, 600.0)):
        sim = Simulator(
            Cluster.homogeneous(1, 2),
            jobs,
            Exclusive("fifo", order="fifo", backfill=backfill),  # type: ignore[arg-type]
            ProfileExecutor({"toy": toy_app()}, rescale_delay=0.0),
            max_jobs_per_gpu=1,
        )
        got = {j.job_id: j.start for j in sim.run().jobs}
        assert got == {0: 0.0, 1: a_start, 2: c_start}


def test_backfill_must_be_a_boolean():
    with pytest.raises(InputError, match="backfill") as e:
        starts("fifo", FIFO_ROWS, backfill="maybe")
    assert "unknown setting" not in str(e.value)
