"""``iterations_per_task`` and the job-level executor, against hand arithmetic.

b = 1e-9 s/B (1000 MB/s alone), eta = 0.5e-9 s/B (k = 2: 2.5e-9 s/B, 400 MB/s each).
"""

from __future__ import annotations

import pytest

from ddlsched.api import Settings, build_simulator, simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile

B, ETA = 1e-9, 0.5e-9


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def finishes(cluster, jobs, policy, **settings) -> dict[int, float]:
    res = simulate(cluster, jobs, policy, settings={"b": B, "eta": ETA, **settings})
    return {r.job_id: r.finish for r in res.jobs}


# ------------------------------------------------------------------ 8. iterations_per_task
@pytest.mark.parametrize("ipt", [1, 3, 4, 10, 25])
def test_exclusive_cross_server_job_is_exact_for_any_ipt(ipt):
    # t_f = 0.01, t_b = 0.02, M = 50 MB, a = 0.001: one iteration = 0.03 + 0.001 + 0.05 = 0.081;
    # 10 iterations = 0.81 whatever the grouping (ipt = 4 -> tasks of 4, 4, 2 iterations;
    # ipt = 25 -> one task of 10), since the model is linear and nothing else runs.
    model = ModelProfile("m", 50.0, 1000.0, 1, 0.01, 0.02)
    fin = finishes(
        Cluster.homogeneous(2, 1),
        [JobSpec(0, 1.0, 2, 10, model)],
        "ada-srsf",
        a=0.001,
        iterations_per_task=ipt,
    )
    assert fin[0] == approx(1.81)


@pytest.mark.parametrize("ipt", [1, 3, 7])
def test_exclusive_single_server_job_is_exact_for_any_ipt(ipt):
    # 2 GPUs on one server, 7 iterations x 0.03 = 0.21.
    model = ModelProfile("m", 50.0, 1000.0, 1, 0.01, 0.02)
    fin = finishes(
        Cluster.homogeneous(1, 2), [JobSpec(0, 0.0, 2, 7, model)], "srsf1", iterations_per_task=ipt
    )
    assert fin[0] == approx(0.21)


def comm_job(job_id: int, size_mb: float, iterations: int) -> JobSpec:
    return JobSpec(job_id, 0.0, 2, iterations, ModelProfile("m", size_mb, 1000.0, 1, 0.0, 0.0))


def test_contention_differs_only_through_granularity():
    # Two 2-GPU cross-server jobs, zero compute, a = 0, SRSF(1), both at 0.
    # Job 0: 2 iterations of 100 MB (service 0.4); job 1: 2 iterations of 400 MB (service 1.6).
    jobs = [comm_job(0, 100, 2), comm_job(1, 400, 2)]
    cluster = Cluster.homogeneous(2, 1)
    # ipt = 1: job 0's first all-reduce [0, 0.1]; at 0.1 job 1's (waiting) goes first
    # [0.1, 0.5]; job 0's second [0.5, 0.6]; job 1's second [0.6, 1.0].
    fin1 = finishes(cluster, jobs, "srsf1", a=0.0, iterations_per_task=1)
    assert fin1[0] == approx(0.6)
    assert fin1[1] == approx(1.0)
    # ipt = 2: one all-reduce of 200 MB and one of 800 MB: [0, 0.2], [0.2, 1.0].
    fin2 = finishes(cluster, jobs, "srsf1", a=0.0, iterations_per_task=2)
    assert fin2[0] == approx(0.2)
    assert fin2[1] == approx(1.0)
    # ipt = 2 scales the latency too (a paid per real iteration): a = 0.01 ->
    # job 0: 2 x (0.01 + 0.1) = 0.22; job 1: 0.22 + 2 x (0.01 + 0.4) = 1.04.
    fin3 = finishes(cluster, jobs, "srsf1", a=0.01, iterations_per_task=2)
    assert fin3[0] == approx(0.22)
    assert fin3[1] == approx(1.04)


# -------------------------------------------------------------------- 9. job-level executor
def test_job_level_processor_sharing_on_one_gpu():
    # One GPU; t_iter = (t_f + t_b) x (jobs on the GPU). Job 0: 10 iterations of 1 s at 0;
    # job 1: 4 iterations of 1 s at 2. [0, 2]: job 0 alone, 2 iterations. From 2 both at
    # 2 s/iteration: job 1 needs 8 s -> 10; job 0 did 4 more (6 of 10), 4 left alone -> 14.
    m = ModelProfile("m", 0.0, 1000.0, 1, 0.4, 0.6)
    jobs = [JobSpec(0, 0.0, 1, 10, m), JobSpec(1, 2.0, 1, 4, m)]
    fin = finishes(Cluster.homogeneous(1, 1), jobs, "srsf", granularity="job")
    assert fin[1] == approx(10.0)
    assert fin[0] == approx(14.0)


def test_job_level_cross_server_contention():
    # 2 servers x 1 GPU, two 2-GPU jobs (so both share both GPUs and both links).
    # t_c = 0.1, M = 100 MB, a = 0.01, 5 iterations each.
    # Alone: 0.1 + 0.01 + 0.1 = 0.21 per iteration.
    # Together: 2 x 0.1 + 0.01 + 100e6 x 2.5e-9 = 0.2 + 0.01 + 0.25 = 0.46 per iteration.
    m = ModelProfile("m", 100.0, 1000.0, 1, 0.04, 0.06)
    cluster = Cluster.homogeneous(2, 1)
    fin = finishes(cluster, [JobSpec(0, 0.0, 2, 5, m)], "srsf", granularity="job", a=0.01)
    assert fin[0] == approx(1.05)  # 5 x 0.21
    # Job 1 arrives at 0.42 (job 0 has done 2). Job 0 needs 3 x 0.46 = 1.38 -> 1.80; job 1 did
    # 3 meanwhile, then 2 alone x 0.21 = 0.42 -> 2.22.
    jobs = [JobSpec(0, 0.0, 2, 5, m), JobSpec(1, 0.42, 2, 5, m)]
    fin = finishes(cluster, jobs, "srsf", granularity="job", a=0.01)
    assert fin[0] == approx(1.80)
    assert fin[1] == approx(2.22)


def test_job_level_busy_time_counts_a_shared_gpu_once():
    # Same run. Busy GPU-seconds: [0, 0.42] job 0 alone on 2 GPUs = 0.84; [0.42, 1.80] both
    # jobs on the same 2 GPUs = 2 x 1.38 = 2.76 (a shared GPU is busy once, not twice);
    # [1.80, 2.22] job 1 alone = 0.84. Total 4.44 = 2 GPUs x 2.22 s -> utilisation exactly 1.
    # (Summing GPUs x (finish - start) per job would give 7.2 > 4.44.)
    m = ModelProfile("m", 100.0, 1000.0, 1, 0.04, 0.06)
    jobs = [JobSpec(0, 0.0, 2, 5, m), JobSpec(1, 0.42, 2, 5, m)]
    sim = build_simulator(
        Cluster.homogeneous(2, 1),
        jobs,
        "srsf",
        settings=Settings(granularity="job", a=0.01, b=B, eta=ETA),
    )
    res = sim.run()
    assert sim.executor.busy_gpu_seconds() == approx(4.44)
    assert res.summary["gpu_util"] == approx(1.0)


def test_job_level_busy_time_without_sharing():
    # 2 servers x 2 GPUs. Job 0 (2 GPUs, 1 s/iteration, 3 iterations) at 0 on server 0 (LWF-1:
    # both GPUs of the least-loaded server); job 1 (1 GPU, 1 s, 2 iterations) at 1 on the least
    # loaded GPU, 2 (server 1). Busy = 2 x 3 + 1 x 2 = 8 GPU-s; makespan 3; util 8 / 12.
    m = ModelProfile("m", 0.0, 1000.0, 1, 0.5, 0.5)
    jobs = [JobSpec(0, 0.0, 2, 3, m), JobSpec(1, 1.0, 1, 2, m)]
    sim = build_simulator(
        Cluster.homogeneous(2, 2), jobs, "ada-srsf", settings=Settings(granularity="job")
    )
    res = sim.run()
    assert [r.placement for r in res.jobs] == ["0:0;0:1", "1:0"]
    assert [r.finish for r in res.jobs] == [approx(3.0), approx(3.0)]
    assert sim.executor.busy_gpu_seconds() == approx(8.0)
    assert res.summary["gpu_util"] == approx(8.0 / 12.0)


def test_macro_split_with_iterations_per_task():
    # One GPU, ipt = 4, t_f = 1, t_b = 2. Job 0: 10 iterations -> tasks of 4, 4, 2 iterations
    # (12, 12, 6 s); alone it is one macro task [0, 30]. Job 1: 2 iterations = one task
    # (F 2 s, B 4 s; service 6), arrives at 13, in job 0's second task's forward [12, 16].
    # At 16 job 0's backward is ready (service 30 - 12 - 4 = 14) but job 1 (6) wins:
    # job 1 F [16, 18], B [18, 22] -> 22. Job 0: B [22, 30], last task (2 its) [30, 36].
    m = ModelProfile("m", 0.0, 1000.0, 1, 1.0, 2.0)
    jobs = [JobSpec(0, 0.0, 1, 10, m), JobSpec(1, 13.0, 1, 2, m)]
    fin = finishes(Cluster.homogeneous(1, 1), jobs, "srsf", iterations_per_task=4)
    assert fin[1] == approx(22.0)
    assert fin[0] == approx(36.0)
