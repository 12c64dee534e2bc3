"""AdaDUAL as written (Alg. 2): the reference task is the first busiest server's, so an
all-reduce starting on another server can change the answer; the engine must re-ask then."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ddlsched import Cluster, JobSpec, ModelProfile, Policy, Simulator
from ddlsched.core.taskexec import TaskExecutor
from ddlsched.perf.contention import LinearContention
from ddlsched.policies.gates import AdaDual
from ddlsched.policies.ordering import fifo


@dataclass(frozen=True)
class Fixed:
    """Test placement: job id → GPU ids."""

    where: dict
    name: str = "fixed"

    def select(self, job, sim):
        gpus = self.where[job.job_id]
        return gpus if all(sim.fits(job, g) for g in gpus) else None


def model(size_mb: float) -> ModelProfile:
    return ModelProfile(f"m{size_mb}", size_mb, 1000.0, 16, 0.001, 0.001)


def test_adadual_rechecks_when_a_start_changes_the_reference_task() -> None:
    # 4 servers × 1 GPU; b = 1 ns/B, η = 0.5 ns/B, a = 0 → threshold b/(2(b+η)) = 1/3
    cluster = Cluster.homogeneous(4, 1)
    jobs = [
        JobSpec(0, 0.00, 2, 1, model(300)),  # O on servers 1, 2
        JobSpec(1, 0.05, 2, 1, model(100)),  # w on servers 0, 1
        JobSpec(2, 0.10, 2, 1, model(400)),  # Q on servers 0, 3
    ]
    place = Fixed({0: (1, 2), 1: (0, 1), 2: (0, 3)})
    gate = AdaDual()
    policy = Policy("t", fifo, place, gate=gate)
    ex = TaskExecutor(LinearContention(a=0.0, b=1e-9, eta=0.5e-9), gate)
    res = Simulator(cluster, jobs, policy, ex).run()
    fin = {j.job_id: j.finish for j in res.jobs}
    # O's all-reduce starts at 0.002 alone (1 GB/s). w is ready at 0.052: first busiest server
    # is 1 (O, 250 MB left): 100/250 = 0.4 ≥ 1/3 → wait. Q starts at 0.102 on free servers
    # 0, 3; now w's first busiest server is 0 with Q (400 MB): 100/400 = 0.25 < 1/3 → w starts.
    # 0.102–0.352: all three at k = 2 (2.5 ns/B, 400 MB/s): w's 100 MB done at 0.352; O has
    # 200 − 100 = 100 MB left, Q 300 MB, both back to k = 1: O ends 0.452, Q ends 0.652.
    assert fin[1] == pytest.approx(0.352)
    assert fin[0] == pytest.approx(0.452)
    assert fin[2] == pytest.approx(0.652)
