"""GPU time sharing at iteration level, memory limits, and the exact splitting of shortcut tasks.

Expected values are computed by hand in the comments. Compute times use t_f = 1, t_b = 2 so one
iteration of a worker takes 3 s; there is no network traffic unless a test says so.
"""

from __future__ import annotations

import pytest

from ddlsched.api import simulate
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile

SETTINGS = {"a": 0.0, "b": 1e-9, "eta": 0.5e-9}


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def job(
    job_id: int,
    arrival: float,
    iterations: int,
    gpus: int = 1,
    memory: float = 1000.0,
    size_mb: float = 0.0,
) -> JobSpec:
    return JobSpec(
        job_id, arrival, gpus, iterations, ModelProfile("m", size_mb, memory, 1, 1.0, 2.0)
    )


def run(cluster: Cluster, jobs, policy="srsf", settings=None):
    res = simulate(cluster, jobs, policy, settings=dict(SETTINGS, **(settings or {})))
    return {r.job_id: r for r in res.jobs}, res


# ------------------------------------------------------------------------- 5. time sharing
def test_least_remaining_service_runs_first_on_a_shared_gpu():
    # One GPU. Job 0: 10 iterations (service 30); job 1: 2 iterations (service 6); both at 0.
    # Both fit (1000 MB each). The GPU always picks the ready task of the job with the least
    # remaining service: job 1 runs F,B,F,B in [0, 6]; job 0 then runs alone: 6 + 30 = 36.
    recs, res = run(Cluster.homogeneous(1, 1), [job(0, 0.0, 10), job(1, 0.0, 2)])
    assert recs[0].start == 0.0 and recs[1].start == 0.0  # both placed at once: no queueing
    assert recs[1].finish == approx(6.0)
    assert recs[0].finish == approx(36.0)
    assert res.summary["avg_queueing"] == 0.0
    # GPU always busy from 0 to 36
    assert res.summary["gpu_util"] == approx(1.0)


def test_memory_that_does_not_fit_makes_the_second_job_wait():
    # GPU memory 16384 MB; each job needs 10000 MB -> only one at a time.
    # Job 0 (service 30) starts at 0 and ends at 30. Job 1 (arrives at 1, service 6) waits
    # although it is shorter (non-preemptive): starts 30, ends 36, queueing 29.
    cluster = Cluster.homogeneous(1, 1, gpu_memory_mb=16384.0)
    recs, res = run(cluster, [job(0, 0.0, 10, memory=10000), job(1, 1.0, 2, memory=10000)])
    assert recs[0].finish == approx(30.0)
    assert recs[1].start == approx(30.0)
    assert recs[1].queueing == approx(29.0)
    assert recs[1].finish == approx(36.0)
    assert res.summary["avg_queueing"] == approx(14.5)


def test_sharing_degree_limit_makes_the_second_job_wait():
    # Memory fits but max_jobs_per_gpu = 1: same timeline as above.
    recs, _ = run(
        Cluster.homogeneous(1, 1),
        [job(0, 0.0, 10), job(1, 1.0, 2)],
        settings={"max_jobs_per_gpu": 1},
    )
    assert recs[1].start == approx(30.0)
    assert recs[1].finish == approx(36.0)


# ------------------------------------------------------------ 6. splitting the shortcut tasks
def test_macro_task_split_arrival_during_backward():
    # One GPU. Job 0 (10 iterations, alone) runs as one macro task [0, 30]: iteration i occupies
    # [3(i-1), 3i], forward first 1 s. Job 1 (2 iterations, service 6) arrives at 4.5: job 0 is in
    # iteration 2's backward [4, 6] -> the GPU is free for job 1 only at 6.
    # At 6 job 0 has 8 iterations left (service 24) > 6: job 1 runs [6, 12] (F,B,F,B) -> 12.
    # Job 0 resumes alone at 12: 8 x 3 = 24 -> 36.
    recs, res = run(Cluster.homogeneous(1, 1), [job(0, 0.0, 10), job(1, 4.5, 2)])
    assert recs[1].start == 4.5
    assert recs[1].finish == approx(12.0)
    assert recs[0].finish == approx(36.0)
    assert res.summary["gpu_util"] == approx(1.0)


def test_macro_task_split_arrival_during_forward():
    # Job 1 arrives at 3.5, during job 0's iteration-2 forward [3, 4]. At 4 job 0's backward is
    # ready (service 30 - 3 - 1 = 26) but job 1 (service 6) has less remaining service, so job 1
    # takes the GPU: F [4,5], B [5,7], F [7,8], B [8,10] -> finishes 10.
    # Job 0: backward of iteration 2 [10, 12], then 8 iterations alone [12, 36].
    recs, _ = run(Cluster.homogeneous(1, 1), [job(0, 0.0, 10), job(1, 3.5, 2)])
    assert recs[1].finish == approx(10.0)
    assert recs[0].finish == approx(36.0)


def test_macro_task_split_at_an_iteration_boundary():
    # Job 1 arrives at exactly 3.0 = end of job 0's first iteration. In the exact task sequence
    # (Wang Alg. 3: finished tasks leave, arrivals are placed, then idle GPUs pick) the GPU is
    # idle at 3 and picks job 1 (service 6 < 27): job 1 runs [3, 9]; job 0's 9 iterations [9, 36].
    recs, _ = run(Cluster.homogeneous(1, 1), [job(0, 0.0, 10), job(1, 3.0, 2)])
    assert recs[1].finish == approx(9.0)
    assert recs[0].finish == approx(36.0)


def test_macro_task_split_at_a_forward_boundary():
    # Job 1 arrives at exactly 4.0 = end of job 0's iteration-2 forward [3, 4]. The GPU is free
    # at 4 and job 1 (6) beats job 0's backward (service 30 - 3 - 1 = 26): job 1 [4, 10];
    # job 0: B [10, 12], then 8 iterations [12, 36].
    recs, _ = run(Cluster.homogeneous(1, 1), [job(0, 0.0, 10), job(1, 4.0, 2)])
    assert recs[1].finish == approx(10.0)
    assert recs[0].finish == approx(36.0)


def test_macro_split_in_backward_keeps_remaining_service_exact():
    # Remaining service after a split must count the forward already done.
    # Job 0: t_f = 2, t_b = 1, 4 iterations (service 12), alone from 0: iteration 1 = F [0,2],
    # B [2,3]. Job 1: t_f = 2, t_b = 3, 2 iterations (service 10), arrives at 2.5 (job 0's B).
    # At 3 job 0 has 3 iterations left: service 9 < 10, so job 0 keeps the GPU; its service
    # only shrinks, so it runs to the end: 3 + 3 x 3 = 12. Job 1 then alone: 12 + 10 = 22.
    # (Forgetting the forward would give job 0 service 11 > 10 and the opposite order.)
    m0 = ModelProfile("m0", 0.0, 1000.0, 1, 2.0, 1.0)
    m1 = ModelProfile("m1", 0.0, 1000.0, 1, 2.0, 3.0)
    jobs = [JobSpec(0, 0.0, 1, 4, m0), JobSpec(1, 2.5, 1, 2, m1)]
    recs, _ = run(Cluster.homogeneous(1, 1), jobs)
    assert recs[0].finish == approx(12.0)
    assert recs[1].finish == approx(22.0)


def test_gang_task_split_arrival_during_backward():
    # 2 servers x 1 GPU. Job 0: 2 GPUs (cross-server), 4 iterations, message 0 bytes and a = 0
    # (the all-reduce takes no time), service 2 x 4 x 3 = 24; alone it runs one gang task per
    # iteration: [0,3], [3,6], ...
    # Job 1: 1 GPU, 2 iterations (service 6), arrives at 1.5 (in job 0's first backward) and is
    # placed on GPU 0 (LS: equal loads -> lowest index).
    # t=3: job 0's iteration 1 done (service 18). GPU 0: job 1 F [3,4]; GPU 1: job 0 F+B [3,6].
    # t=4: job 1 (5) < job 0 (18): job 1 B [4,6]. t=6: job 1 (3) again: F [6,7], B [7,9] -> 9.
    # GPU 0: job 0's F+B of iteration 2 [9,12]; barrier at 12, zero-time all-reduce.
    # Iterations 3, 4 as gang tasks [12,15], [15,18] -> job 0 finishes 18.
    recs, _ = run(Cluster.homogeneous(2, 1), [job(0, 0.0, 4, gpus=2), job(1, 1.5, 2)])
    assert recs[0].placement == "0:0;1:0"
    assert recs[1].placement == "0:0"
    assert recs[1].finish == approx(9.0)
    assert recs[0].finish == approx(18.0)


def test_gang_task_split_arrival_during_forward():
    # Same, job 1 arrives at 0.5 (in job 0's first forward [0,1]).
    # t=1: job 0's forward done on both GPUs (service 22). GPU 0: job 1 (6) wins: F [1,2];
    # GPU 1: job 0 B [1,3]. t=2: job 1 B [2,4]; t=4: F [4,5], B [5,7] -> job 1 finishes 7.
    # GPU 0: job 0 B [7,9]; barrier at 9; iterations 2..4 as gang tasks [9,18] -> 18.
    recs, _ = run(Cluster.homogeneous(2, 1), [job(0, 0.0, 4, gpus=2), job(1, 0.5, 2)])
    assert recs[1].finish == approx(7.0)
    assert recs[0].finish == approx(18.0)


def test_gang_task_split_at_the_forward_boundary():
    # Job 1 arrives at exactly 1.0, when job 0's forward ends on both GPUs: the GPUs are free at
    # this instant, so the timeline is the one of the previous test: 7 and 18.
    recs, _ = run(Cluster.homogeneous(2, 1), [job(0, 0.0, 4, gpus=2), job(1, 1.0, 2)])
    assert recs[1].finish == approx(7.0)
    assert recs[0].finish == approx(18.0)


def test_shortcuts_count_exactly_the_compute_as_busy_time():
    # Busy GPU-seconds = sum of compute work, independent of how the tasks were split:
    # job 0: 2 GPUs x 4 x 3 = 24, job 1: 1 x 2 x 3 = 6 -> 30 over 2 GPUs x 18 s = 36 -> 30/36.
    _, res = run(Cluster.homogeneous(2, 1), [job(0, 0.0, 4, gpus=2), job(1, 0.5, 2)])
    assert res.summary["gpu_util"] == approx(30.0 / 36.0)
